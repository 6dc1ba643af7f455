// tests/cuda/fp8_flips.hpp — which P the FP8 forward and its CPU emulation may round to different e4m3
// values, and what that may do to O: the allowance test_fp8.cpp adds to its 2-ulp bar (derivation below,
// docs/kernel-notes/fp8.md "A derived bar"); checked on a case worked by hand in test_fp8_flips.cpp.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "cuda/api.hpp"
#include "sim/dtype.hpp"
#include "sim/tensor.hpp"

namespace fp8_flips {

// What a P flip may do to O, derived before any run checks it. The kernel and the emulation both
// round 2^8 P to e4m3; each computes P from the same e4m3 bytes with its own fp32 errors, so they
// can round one P to adjacent e4m3 values where an e4m3 rounding boundary (a midpoint between two
// e4m3 values) lies between their two fp32 P. The 2-ulp bar does not allow for that (it was set for
// fp32 differences of about 1e-6 and one bf16 rounding apart). So, per query row a and key b:
//   * exactly, in float64: x = (sum_k q8_k k8_k) s_Q s_K / sqrt(d) (the products of e4m3 values and
//     their sum are exact in double), m_j the row's running max after key block j, p = exp(x - m_j);
//   * each side's exponent differs from x - m_j by at most rho = e_b + e_m + 8 u (|x| + |m_j| + 8)
//     + 2^-22 + 2^-23, where e_b = gamma_127 A s_Q s_K / sqrt(d) bounds a sum of 128 terms in any
//     order (Higham: |error| <= gamma_{n-1} sum |t|, gamma_n = n u' / (1 - n u'); u' = 2^-23, what
//     truncating adders give, twice the round-to-nearest 2^-24; A = sum_k |q8_k k8_k|), e_m is the
//     largest e_b + 8 u |x| over the row's keys so far (the running max is one of those scores),
//     8 u (...) the at most 6 fp32 roundings (8: with room) each side applies to the scores and the max (the
//     scales' products, log2(e) and its constant, the product or fma, the subtraction of the max and
//     of the 8 that makes 2^8 P), u = 2^-24, and the exponentials ex2.approx (2^-22, cuda/mma.cuh)
//     and expf (one ulp, 2^-23);
//   * both 2^8 P then lie in [v e^-rho, v e^rho], v = 256 p; they can round apart only if
//     e4m3(v e^-rho) != e4m3(v e^rho) (rounding is monotonic), and then by at most the difference
//     of those two e4m3 values, D (one e4m3 ulp at v's magnitude, 1/16 of P at its largest);
//   * l sums the fp32 P before they are rounded, and m does not see P: a flip changes only the one
//     product, O(a, c) by D / 256 x exp(m_j - m_last) / l x |V(b, c)| (the rescales after block j and
//     the final 1 / l; V dequantized, e4m3(V / s_V) s_V).
// F(a, c) sums that over the row's near keys; the bar at (a, c) is the 2-ulp bar plus F(a, c):
// |got - emu| <= |bf16 rounding of each| (1 ulp together) + the fp32 differences + F, within it. Rows
// with no near P keep the 2-ulp bar exactly. The one assumption: the tensor cores add their 128
// products no worse than fp32 adders in some order (a narrower accumulator would show as a miss).
struct FlipAllowance {
    Eigen::MatrixXd F;  // (N, d)
    int64_t near = 0;   // P values that may round apart
    int64_t rows = 0;   // rows with one or more
};
// kernel_exp: the relative error of the kernel's exponentials, ex2.approx's 2^-22 by default
// (FLASHSIM_FLASH2H_FP8_EXP=poly: poly_exp2's 6e-6 for a quarter of them, so 6e-6 bounds them all).
inline FlipAllowance p_flip_allowance(const fcuda::Fp8Outputs& out, const sim::Inputs& in, int64_t bh,
                                      double kernel_exp = 0x1p-22) {
    const int64_t n = in.Q.rows, d = in.Q.cols, T = out.T, BH = in.Q.batch * in.Q.heads;
    const double c = 1.0 / std::sqrt(double(d)), u = 0x1p-24, u_sum = 0x1p-23;
    const double gamma = 127 * u_sum / (1 - 127 * u_sum), e_exp = kernel_exp + 0x1p-23;
    auto scale = [&](int z, int64_t row) {
        return double(out.scales[static_cast<size_t>((z * BH + bh) * T + row / 128)]);
    };
    std::vector<double> q8(static_cast<size_t>(n * d)), k8(static_cast<size_t>(n * d));  // this head's bytes
    for (int64_t i = 0; i < n * d; ++i) {
        q8[static_cast<size_t>(i)] = sim::e4m3_decode(out.Q8[static_cast<size_t>(bh * n * d + i)]);
        k8[static_cast<size_t>(i)] = sim::e4m3_decode(out.K8[static_cast<size_t>(bh * n * d + i)]);
    }
    Eigen::MatrixXd Vdq(n, d);  // e4m3(V / s_V) s_V, what the kernel multiplies P by
    for (int64_t b = 0; b < n; ++b)
        for (int64_t k = 0; k < d; ++k) {
            const float sv = static_cast<float>(scale(2, b));
            Vdq(b, k) = double(sim::e4m3_decode(sim::e4m3_encode(in.V.at(bh, b, k) / sv))) * sv;
        }
    FlipAllowance fa{Eigen::MatrixXd::Zero(n, d), 0, 0};
    std::vector<double> x(static_cast<size_t>(n)), e(static_cast<size_t>(n)), m_blk(static_cast<size_t>(T)),
        em_blk(static_cast<size_t>(T));
    for (int64_t a = 0; a < n; ++a) {
        double m = -INFINITY, em = 0;
        for (int64_t b = 0; b < n; ++b) {
            double sum = 0, mag = 0;
            for (int64_t k = 0; k < d; ++k) {
                const double t = q8[static_cast<size_t>(a * d + k)] * k8[static_cast<size_t>(b * d + k)];
                sum += t;
                mag += std::abs(t);
            }
            const double f = scale(0, a) * scale(1, b) * c;
            x[static_cast<size_t>(b)] = sum * f;
            e[static_cast<size_t>(b)] = gamma * mag * f;
            m = std::max(m, x[static_cast<size_t>(b)]);
            em = std::max(em, e[static_cast<size_t>(b)] + 8 * u * std::abs(x[static_cast<size_t>(b)]));
            if (b % 128 == 127 || b + 1 == n) {
                m_blk[static_cast<size_t>(b / 128)] = m;
                em_blk[static_cast<size_t>(b / 128)] = em;
            }
        }
        double l = 0;
        for (int64_t b = 0; b < n; ++b) l += std::exp(x[static_cast<size_t>(b)] - m);
        bool any = false;
        for (int64_t b = 0; b < n; ++b) {
            const size_t j = static_cast<size_t>(b / 128);
            const double xb = x[static_cast<size_t>(b)], mj = m_blk[j];
            const double rho =
                e[static_cast<size_t>(b)] + em_blk[j] + 8 * u * (std::abs(xb) + std::abs(mj) + 8) + e_exp;
            const double v = 256 * std::exp(xb - mj);
            const uint8_t lo = sim::e4m3_encode(static_cast<float>(v * std::exp(-rho)));
            const uint8_t hi = sim::e4m3_encode(static_cast<float>(v * std::exp(rho)));
            if (lo == hi) continue;
            any = true;
            ++fa.near;
            const double D = double(sim::e4m3_decode(hi)) - double(sim::e4m3_decode(lo));
            fa.F.row(a) += (D / 256 * std::exp(mj - m) / l) * Vdq.row(b).cwiseAbs();
        }
        fa.rows += any;
    }
    return fa;
}

}  // namespace fp8_flips
