// tests/cuda/test_trust.cpp — GPU tests of what a user relies on beyond speed (part of
// test_cuda_gpu; skipped without a device):
//   * the float64 reference run on the GPU (cuda/reference64.hpp, what the numerics study and the
//     scale checks compare with) equals the CPU's float64 references on small problems;
//   * the user's own tensors (fcuda::compute with Q, K, V, dO given) give the same bits as the
//     generator's path when they hold the generator's values;
//   * every forward is bit-identical run to run; the backward's dK and dV are too, and its dQ
//     (added up by atomics in the default mode) stays within the reference's tolerance;
//   * compute_rows (the scale check's sampled rows) returns the rows compute() returns;
//   * a problem that cannot fit says how many bytes it needs and how many are free, before
//     allocating anything; masks the kernels do not implement are refused, not ignored.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/same_bits.hpp"
#include "cuda/reference64.hpp"
#include "cuda/reference_bwd.hpp"
#include "sim/reference.hpp"

namespace {

sim::Problem shape(int64_t b, int64_t h, int64_t n, int64_t d, sim::DType dt, bool causal) {
    sim::Problem p;
    p.batch = b;
    p.heads = h;
    p.seq = n;
    p.head_dim = d;
    p.dtype = dt;
    p.causal = causal;
    p.seed = 7;
    return p;
}

// The variants this card runs; each one left out is recorded (and printed) as a part of the running
// case not run here, with the reason, never dropped in silence.
std::vector<std::string> available(std::initializer_list<const char*> names) {
    std::vector<std::string> v;
    for (const char* n : names) {
        std::string why;
        if (fcuda::variant_available(n, &why))
            v.push_back(n);
        else
            gpu_cases::not_run(n, why);
    }
    return v;
}

double max_rel(const std::vector<double>& a, const std::vector<double>& b) {
    double m = 0, scale = 1e-300;
    for (double x : b) scale = std::max(scale, std::abs(x));
    for (size_t k = 0; k < a.size(); ++k) m = std::max(m, std::abs(a[k] - b[k]));
    return m / scale;
}

}  // namespace

TEST_CASE("trust: the GPU's float64 reference equals the CPU's") {
    for (const sim::Problem& p :
         {shape(1, 2, 37, 64, sim::DType::bf16, true), shape(2, 1, 130, 128, sim::DType::fp16, false),
          shape(1, 1, 1, 64, sim::DType::bf16, false)}) {
        INFO("N=" << p.seq << " d=" << p.head_dim << (p.causal ? " causal" : ""));
        const sim::Inputs in = sim::generate_inputs(p);
        const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
        const sim::TensorD O = sim::attention_reference(p, in.Q, in.K, in.V);
        const std::vector<double> lse = sim::lse_reference(p, in.Q, in.K);
        const fcuda::GradsD g = fcuda::attention_backward_reference(p, in.Q, in.K, in.V, dO);
        const int64_t n = p.seq * p.head_dim;
        for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
            fcuda::HeadInputs64 h;
            h.N = p.seq;
            h.d = static_cast<int>(p.head_dim);
            h.scale = p.softmax_scale();
            h.causal = p.causal;
            auto slice = [&](const auto& t) {
                return std::vector<double>(t.data.begin() + bh * n, t.data.begin() + (bh + 1) * n);
            };
            h.Q = slice(in.Q);
            h.K = slice(in.K);
            h.V = slice(in.V);
            h.dO = slice(dO);
            std::vector<int64_t> rows;
            for (int64_t i = 0; i < p.seq; ++i) rows.push_back(i);
            const fcuda::Reference64 r = fcuda::reference64_head(h, rows, rows);
            CHECK(max_rel(r.O, slice(O)) < 1e-12);
            CHECK(max_rel(r.dQ, slice(g.dQ)) < 1e-10);
            CHECK(max_rel(r.dK, slice(g.dK)) < 1e-10);
            CHECK(max_rel(r.dV, slice(g.dV)) < 1e-10);
            const std::vector<double> lse_h(lse.begin() + bh * p.seq, lse.begin() + (bh + 1) * p.seq);
            CHECK(max_rel(r.LSE, lse_h) < 1e-12);
        }
    }
}

TEST_CASE("trust: the user's tensors give the generator path's bits; forwards are deterministic") {
    for (const bool causal : {false, true})
        for (const int64_t d : {64, 128}) {
            const sim::Problem p = shape(1, 3, 333, d, sim::DType::bf16, causal);
            const sim::Inputs in = sim::generate_inputs(p);
            for (const std::string& v : available({"standard", "flash1", "flash2", "flash2h"})) {
                INFO(v << " d=" << d << (causal ? " causal" : ""));
                const fcuda::Outputs a = fcuda::compute(p, v, fcuda::Pass::forward);
                const fcuda::Outputs b = fcuda::compute(p, v, fcuda::Pass::forward, in.Q, in.K, in.V, nullptr);
                const fcuda::Outputs c = fcuda::compute(p, v, fcuda::Pass::forward, in.Q, in.K, in.V, nullptr);
                CHECK(same_bits(a.O.data, b.O.data));
                CHECK(same_bits(b.O.data, c.O.data));
                CHECK(same_bits(a.LSE, b.LSE));
            }
        }
}

TEST_CASE("trust: backward run to run — dK, dV bit-identical, dQ within the reference's tolerance") {
    const sim::Problem p = shape(2, 2, 515, 128, sim::DType::fp16, true);
    const sim::Inputs in = sim::generate_inputs(p);
    const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
    const fcuda::GradsD g = fcuda::attention_backward_reference(p, in.Q, in.K, in.V, dO);
    for (const std::string& v : available({"flash2", "flash2h"})) {
        INFO(v);
        const fcuda::Outputs first = fcuda::compute(p, v, fcuda::Pass::backward, in.Q, in.K, in.V, &dO);
        int dq_differs = 0;
        for (int r = 0; r < 5; ++r) {
            const fcuda::Outputs again = fcuda::compute(p, v, fcuda::Pass::backward, in.Q, in.K, in.V, &dO);
            CHECK(same_bits(first.dK.data, again.dK.data));
            CHECK(same_bits(first.dV.data, again.dV.data));
            dq_differs += same_bits(first.dQ.data, again.dQ.data) ? 0 : 1;
            const sim::ErrorStats e = sim::validate(again.dQ, g.dQ, p.dtype);
            CHECK(e.nonfinite == 0);
            CHECK(e.rel_frobenius < 8e-3);
        }
        MESSAGE(v << " backward (default mode): dQ differed from the first run in " << dq_differs
                  << " of 5 runs (atomic accumulation order)");
    }
}

// A query row with a single key (N = 1; or row 0 under the causal mask) has softmax P = 1 whatever
// its score, so the exact dS, and with it that row's dQ and that key's share of dK, is zero. The
// flash backwards form dP - D from two dot products summed in different orders; they must return
// the exact zero, not the residue of those two roundings (the numerics study found up to 2.8e-7).
TEST_CASE("trust: a query row with one key gets an exactly zero dQ (and dK at N = 1)") {
    for (const std::string& v : available({"flash2", "flash2h"}))
        for (const int64_t d : {int64_t{64}, int64_t{128}})
            for (const bool causal : {false, true})
                for (const int64_t n : {int64_t{1}, int64_t{77}}) {
                    if (n > 1 && !causal) continue;  // every row has n keys
                    const sim::Problem p = shape(2, 3, n, d, sim::DType::bf16, causal);
                    INFO(v << " d=" << d << " N=" << n << std::string(causal ? " causal" : ""));
                    const fcuda::Outputs out = fcuda::compute(p, v, fcuda::Pass::backward);
                    int nonzero_dq = 0, nonzero_dk = 0;
                    for (int64_t bh = 0; bh < p.heads_total(); ++bh)
                        for (int64_t k = 0; k < d; ++k) {
                            // row 0 of dQ in every head
                            nonzero_dq += out.dQ.data[static_cast<size_t>(bh * n * d + k)] != 0.0f ? 1 : 0;
                            if (n == 1) nonzero_dk += out.dK.data[static_cast<size_t>(bh * d + k)] != 0.0f ? 1 : 0;
                        }
                    CHECK(nonzero_dq == 0);
                    CHECK(nonzero_dk == 0);
                    // and the other rows still carry a gradient (the zero is not everywhere)
                    if (n > 1) {
                        double row1 = 0;
                        for (int64_t k = 0; k < d; ++k) row1 += std::abs(out.dQ.data[static_cast<size_t>(d + k)]);
                        CHECK(row1 > 0);
                    }
                }
}

TEST_CASE("trust: compute_rows returns compute()'s rows") {
    const sim::Problem p = shape(1, 2, 300, 64, sim::DType::bf16, false);
    const std::vector<int64_t> rows{0, 1, 299, 300, 599};
    for (const std::string& v : available({"flash1", "flash2", "flash2h"})) {
        INFO(v);
        const fcuda::Outputs full = fcuda::compute(p, v, fcuda::Pass::forward);
        const fcuda::SampledRows s = fcuda::compute_rows(p, v, fcuda::Pass::forward, rows);
        CHECK(s.nonfinite == 0);
        REQUIRE(s.O.size() == rows.size() * 64);
        for (size_t k = 0; k < rows.size(); ++k)
            CHECK(std::memcmp(s.O.data() + k * 64, full.O.data.data() + rows[k] * 64, 64 * sizeof(float)) == 0);
        if (!full.LSE.empty()) {
            REQUIRE(s.LSE.size() == rows.size());
            for (size_t k = 0; k < rows.size(); ++k) CHECK(s.LSE[k] == full.LSE[static_cast<size_t>(rows[k])]);
        }
    }
    CHECK_THROWS(fcuda::compute_rows(p, "flash2", fcuda::Pass::forward, {600}));
}

TEST_CASE("trust: too large for the GPU is said before allocating; unimplemented masks are refused") {
    const sim::Problem p = shape(1, 64, 131072, 64, sim::DType::bf16, false);
    // standard's S and P alone: 2 * 64 * 131072^2 * 2 bytes = 4.4 TB
    const int64_t need = fcuda::device_bytes_needed(p, "standard", fcuda::Pass::forward);
    CHECK(need > int64_t{4} * 1000 * 1000 * 1000 * 1000);
    sim::TensorF wrong(p.batch, p.heads, 1, 64);
    CHECK_THROWS_WITH_AS(fcuda::compute(p, "standard", fcuda::Pass::forward, wrong, wrong, wrong, nullptr),
                         doctest::Contains("shape"), std::runtime_error);
    const sim::TensorF zeros(p.batch, p.heads, p.seq, p.head_dim);  // 2 GiB of host memory, never uploaded
    try {
        (void)fcuda::compute(p, "standard", fcuda::Pass::forward, zeros, zeros, zeros, nullptr);
        CHECK_MESSAGE(false, "a 4.4 TB problem was accepted");
    } catch (const fcuda::OutOfDeviceMemory& e) {
        CHECK(e.needed == need);
        CHECK(e.free_bytes > 0);
        CHECK(e.free_bytes < double(need));
        CHECK(std::string(e.what()).find(std::to_string(need)) != std::string::npos);
        CHECK(std::string(e.what()).find("free") != std::string::npos);
    }
    sim::Problem padded = shape(1, 1, 128, 64, sim::DType::bf16, false);
    padded.pad_left = 3;
    CHECK_THROWS_WITH_AS(fcuda::tile_config("flash2", padded), doctest::Contains("padding"), std::runtime_error);
}
