// sim/fp8_attention.hpp — the FP8 (e4m3) attention forward emulated on the CPU, as FlashAttention-3's
// FP8 kernel computes it, and its error against a float64 reference beside bf16's on the same inputs.
//
//   Fp8Options ──► fp8_inputs (Gaussian Q, K, V; optional outlier channels of Q and K)
//              ──► fp8_forward (per-tensor or per-block scales, optional incoherent processing)
//              ──► fp8_study: max abs and RMS error of FP8 and of bf16 against float64
//
// One forward, tile by tile (B_r query rows, B_c keys):
//   1. Q, K, V quantized to e4m3 with a scale each: x_q = e4m3(x / s), s = amax / 448 over the scale's
//      group: one for the whole tensor (Fp8Scales::tensor, the baseline) or one for each tile of B_r
//      rows of Q and each tile of B_c rows of K and V (Fp8Scales::block).
//   2. S_ij = (Q_q K_q^T accumulated in float32) x s_Q,i x s_K,j x softmax scale; the products of two
//      e4m3 values are exact in float32, so the rounding is the inputs' and the sums'.
//   3. Online softmax in float32: m, l and the rescale as the bf16 kernel's; l sums the float32
//      exponentials before P is converted (the kernel sums them in registers first).
//   4. P quantized to e4m3 with the fixed scale 2^8: P is in [0, 1], so P x 256 is in [0, 256], under
//      448, and the row's largest (1) is exact; a power of two is exact and free (it adds 8 to the
//      exponent of exp2's argument). Values of P below 2^-17 (2^-9 / 256) round to 0.
//   5. O_i += (P_q V_q accumulated in float32) x s_V,j / 256; O = O_i / l stored as bf16 (FA3's FP8
//      forward writes a 16-bit O).
// Incoherent processing: Q and K are multiplied along d by M = D H / sqrt(d), H the Sylvester
// Hadamard matrix of order d (a power of two) and D a diagonal of random signs: M is orthogonal, so
// (Q M)(K M)^T = Q K^T in exact arithmetic, and a channel of large values is spread over all d
// channels at 1/sqrt(d) of its size. e4m3 rounds relative to each value, so what this buys is in the
// products: a score's rounding error grows with sum_c (q_c k_c)^2, which a channel large in both Q
// and K dominates (F^4 for a factor F); spread, that sum is about |q|^2 |k|^2 / d.
// bf16 (the baseline, DType::bf16): the same tiles with plain rounding (no scales, P in bf16).
#pragma once
#include <Eigen/Core>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/enum_names.hpp"

namespace sim {

enum class Fp8Scales { tensor, block };
template <>
struct EnumNames<Fp8Scales> {
    static constexpr std::array<EnumName<Fp8Scales>, 3> table{
        {{Fp8Scales::tensor, "tensor"}, {Fp8Scales::block, "block"}, {Fp8Scales::tensor, "per-tensor"}}};
};

struct Fp8Options {
    int64_t seq = 1024;        // N
    int64_t head_dim = 128;    // d
    int64_t block_rows = 128;  // B_r: FlashAttention-3's FP8 forward tile at d = 128
    int64_t block_cols = 128;  // B_c
    Fp8Scales scales = Fp8Scales::block;
    bool incoherent = false;
    // Outliers: this many channels (the seed picks which) of both Q and K multiplied by outlier_scale in
    // every token, as trained models' queries and keys carry a few large channels in common (their
    // products make the large scores); V stays N(0, 1). The score's part from such a channel is
    // outlier_scale^2 times the others'.
    int64_t outliers = 0;
    double outlier_scale = 10.0;
    uint64_t seed = 42;
    // Throws sim::Error in the user's words (N <= 0, d not a power of two with the transform, ...).
    void validate() const;
};

// Inputs, (N, d) each, in float32 values held as doubles.
struct Fp8Inputs {
    Eigen::MatrixXd Q, K, V;
    std::vector<int64_t> outlier_channels;
};
// Q, K, V ~ N(0, 1) (Box-Muller on the counter-based hash of sim/generator.hpp, rounded to float32),
// the outlier channels of Q and K scaled.
Fp8Inputs fp8_inputs(const Fp8Options& o);

// M = D H / sqrt(d): d a power of two; the signs from the seed. Throws sim::Error otherwise.
Eigen::MatrixXd hadamard_rotation(int64_t d, uint64_t seed);

// softmax(Q K^T / sqrt(d)) V in float64.
Eigen::MatrixXd attention_reference64(const Eigen::MatrixXd& Q, const Eigen::MatrixXd& K, const Eigen::MatrixXd& V);

// The tiled forward with e4m3 (DType::fp8: scales and the transform as o says) or bf16/fp16
// storage (plain rounding, o's scales and transform ignored). Returns O as stored (bf16 values for
// fp8 and bf16, fp16 values for fp16).
Eigen::MatrixXd lowp_forward(const Fp8Inputs& in, DType storage, const Fp8Options& o);

struct Fp8Error {
    double max_abs = 0;  // max |O - O_ref|
    double rms = 0;      // sqrt(mean (O - O_ref)^2)
    double rel_rms = 0;  // rms / rms(O_ref)
};
Fp8Error fp8_error(const Eigen::MatrixXd& O, const Eigen::MatrixXd& ref);

struct Fp8Study {
    Fp8Options options;
    std::vector<int64_t> outlier_channels;
    double amax_q = 0, amax_k = 0, amax_v = 0;  // the inputs' largest magnitudes, after the transform if on
    Fp8Error fp8, bf16;
};
Fp8Study fp8_study(const Fp8Options& o);

}  // namespace sim
