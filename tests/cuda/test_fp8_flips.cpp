// tests/cuda/test_fp8_flips.cpp — the P-flip allowance of tests/cuda/fp8_flips.hpp on the CPU (no GPU
// needed; in test_cuda_reference).
#include <doctest/doctest.h>

#include <cmath>

#include "tests/cuda/fp8_flips.hpp"

using fp8_flips::FlipAllowance;
using fp8_flips::p_flip_allowance;

// The allowance itself, on the CPU (no GPU needed), on a case worked by hand: query 0 meets key 0
// with a raw score of 1 and key 1 with 0.5 (e4m3 bytes of 1 and 0.5 in channel 0), s_Q = 1 and s_K
// chosen so that the scaled scores differ by ln(31/32): 2^8 P of key 1 is 248, the midpoint between
// the e4m3 values 240 and 256, so the two sides may round it apart by D = 16, and O(0, c) may move by
// 16 / 256 / l x |V(1, c)|, l = 1 + 31/32 (key 0's P is 1, exact). With ln(61/64) instead, 2^8 P = 244
// sits 1.6% from the nearest boundary, far outside rho (about 1e-6 here): nothing is allowed. Query 1
// (all zeros) scores 0 with both keys: 2^8 P = 256 exactly, never near.
TEST_CASE("fp8 P-flip allowance: a case worked by hand") {
    const int64_t n = 2, d = 128;
    sim::Inputs in;
    in.Q = sim::TensorF(1, 1, n, d);
    in.K = sim::TensorF(1, 1, n, d);
    in.V = sim::TensorF(1, 1, n, d);
    for (int64_t c = 0; c < d; ++c) {
        in.V.at(0, 0, c) = 0.25f;
        in.V.at(0, 1, c) = c % 2 == 0 ? 1.0f : -0.5f;  // e4m3 values: dequantized exactly with s_V = 1
    }
    fcuda::Fp8Outputs out;
    out.T = 1;
    out.n_pad = 128;
    out.Q8.assign(static_cast<size_t>(n * d), sim::e4m3_encode(0.0f));
    out.K8 = out.Q8;
    out.Q8[0] = sim::e4m3_encode(1.0f);  // query 0, channel 0
    out.K8[0] = sim::e4m3_encode(1.0f);  // key 0
    out.K8[d] = sim::e4m3_encode(0.5f);  // key 1
    for (const double ratio : {31.0 / 32.0, 61.0 / 64.0}) {
        CAPTURE(ratio);
        // scores s_K / sqrt(d) x (1, 0.5): their difference 0.5 s_K / sqrt(d) = -ln(ratio)
        const float s_k = static_cast<float>(-2.0 * std::log(ratio) * std::sqrt(double(d)));
        out.scales = {1.0f, s_k, 1.0f};  // s_Q, s_K, s_V of the one block
        const FlipAllowance fa = p_flip_allowance(out, in, 0);
        if (ratio == 31.0 / 32.0) {
            CHECK(fa.near == 1);
            CHECK(fa.rows == 1);
            const double l = 1 + 31.0 / 32.0;
            for (int64_t c = 0; c < d; ++c) {
                CAPTURE(c);
                CHECK(fa.F(0, c) == doctest::Approx(16.0 / 256.0 / l * std::abs(in.V.at(0, 1, c))).epsilon(1e-6));
                CHECK(fa.F(1, c) == 0.0);
            }
        } else {
            CHECK(fa.near == 0);
            CHECK(fa.F.cwiseAbs().maxCoeff() == 0.0);
        }
    }
}
