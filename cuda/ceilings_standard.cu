// cuda/ceilings_standard.cu — standard attention's own calls timed alone at ragged row lengths, for
// the kernel model of `standard` at an N that is not a multiple of 8 (part of bench --ceilings).
//
// At such an N every row of S and P (leading dimension N, 2-byte elements) starts off a 16-byte
// boundary, so cuBLAS leaves its aligned kernels, and the softmax runs the two-pass row kernels. The
// aligned ceilings (gemm_write_*, the copy) do not hold there; these measure what does. Each call is
// the one cuda/standard.cu makes (standard_scores, standard_apply, the two-pass kernels), timed
// alone as the other ceilings are (warm-up, the median of 7 runs), over many heads so that it fills
// the GPU many times over (the throughput, not the tail of a wave). Points, bf16:
//   gemm_qk_bf16_d<d>_n<N>    S = Q K^T (and dP = dO V^T): 2 N^2 d FLOPs a head / time
//   gemm_write_bf16_d<d>_n<N> the same run, bytes of S written / time
//   gemm_pv_bf16_d<d>_n<N>    O = P V (and dQ = dS K): 2 N^2 d FLOPs a head / time
//   gemm_ptv_bf16_d<d>_n<N>   dV = P^T dO (and dK = dS^T Q): 2 N^2 d FLOPs a head / time
//   softmax_rows_fwd_n<N>     the two-pass forward: S read once, P written (2 N^2 e a head) / time
//   softmax_rows_bwd_n<N>     the two-pass backward: P and dP read, dS written (3 N^2 e a head) / time
// at d = 64 and 128 and N = L + o for L in 1000, 2000, 4000, 8000, 16000 (multiples of 8) and o in
// 0 (the aligned neighbour), 1, 2 and 4 (rows 2-, 4- and 8-byte aligned: cuBLAS picks its kernels
// by that alignment, so each class has points of its own); the softmax at the ragged N only (the
// aligned N run the one-pass kernels). None of these N is one of tools/offgrid/shapes.json's.
#include <algorithm>
#include <cstdint>
#include <string>
#include <vector>

#include "cuda/standard_calls.hpp"
#include "sim/kernel_model.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

constexpr int kLevels[] = {1000, 2000, 4000, 8000, 16000};
constexpr int kOffsets[] = {0, 1, 2, 4};
constexpr size_t kElem = 2;  // bf16

// Heads a call runs over at row length N: an N x N matrix of about `budget` bytes, at least `min_heads`.
int probe_heads(int N, size_t budget, int min_heads) {
    const size_t per = size_t(N) * N * kElem;
    return std::max(min_heads, static_cast<int>(budget / per));
}

}  // namespace

std::vector<Ceiling> measure_standard_ceilings(int sms) {
    std::vector<Ceiling> out;
    std::vector<int> ns;
    for (const int l : kLevels)
        for (const int o : kOffsets) ns.push_back(l + o);
    // An N x N matrix of about 2 GiB a call, at least 8 heads (so that the N x d outputs of pv and ptv
    // span many waves at N = 16000); both halved until three such matrices and two N x d tensors fit.
    size_t budget = size_t{2} << 30;
    int min_heads = 8;
    size_t free_b = 0, total_b = 0;
    CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
    size_t nn_max = 0, nd_max = 0;
    for (;;) {
        nn_max = nd_max = 0;
        for (const int N : ns) {
            const size_t h = size_t(probe_heads(N, budget, min_heads));
            nn_max = std::max(nn_max, size_t(N) * N * kElem * h);
            nd_max = std::max(nd_max, size_t(N) * 128 * kElem * h);
        }
        if (3 * nn_max + 2 * nd_max + (size_t{512} << 20) <= free_b || budget < (size_t{64} << 20)) break;
        budget /= 2;
        min_heads = std::max(1, min_heads / 2);
    }
    DeviceBuffer a(nn_max), b(nn_max), c(nn_max), x(nd_max), y(nd_max);
    uint32_t seed = 11;
    for (DeviceBuffer* buf : {&a, &b, &c, &x, &y}) fill_random_bits(buf->get(), buf->bytes(), seed++, sms);
    const sim::DType dt = sim::DType::bf16;
    for (const int N : ns) {
        const int heads = probe_heads(N, budget, min_heads);
        const double nn = double(N) * N * heads;
        const std::string shape = "N = " + std::to_string(N) + " (rows " +
                                  std::to_string(2 * sim::standard_row_alignment(N)) + "-byte aligned), ";
        for (const int d : {64, 128}) {
            const std::string tag = "_bf16_d" + std::to_string(d) + "_n" + std::to_string(N);
            const std::string where = shape + "depth " + std::to_string(d) + ", " + std::to_string(heads) + " heads";
            const double flops = 2.0 * nn * d;
            const double ms_qk =
                ceiling_median_ms([&] { standard_scores(dt, N, d, heads, x.get(), y.get(), a.get(), 0); });
            out.push_back({"gemm_qk" + tag, flops / (ms_qk * 1e-3), "FLOP/s",
                           "cuBLAS S = Q K^T as cuda/standard.cu calls it (also dP = dO V^T), " + where +
                               "; 2 N^2 d FLOPs a head over the median time"});
            out.push_back({"gemm_write" + tag, nn * kElem / (ms_qk * 1e-3), "B/s",
                           "the same run as gemm_qk" + tag + "; bytes of S written over the median time"});
            for (const bool t : {false, true}) {
                const double ms =
                    ceiling_median_ms([&] { standard_apply(dt, N, d, heads, 1.0f, a.get(), t, x.get(), y.get(), 0); });
                out.push_back({std::string(t ? "gemm_ptv" : "gemm_pv") + tag, flops / (ms * 1e-3), "FLOP/s",
                               std::string(t ? "cuBLAS dV = P^T dO as cuda/standard.cu calls it (also dK = dS^T Q), "
                                             : "cuBLAS O = P V as cuda/standard.cu calls it (also dQ = dS K), ") +
                                   where + "; 2 N^2 d FLOPs a head over the median time"});
            }
        }
        if (N % 8 == 0) continue;  // the one-pass softmax kernels run at these N
        const double ms_f =
            ceiling_median_ms([&] { standard_softmax_two_pass(dt, N, heads, 0.125f, a.get(), b.get(), 0); });
        out.push_back({"softmax_rows_fwd_n" + std::to_string(N), 2.0 * nn * kElem / (ms_f * 1e-3), "B/s",
                       "cuda/standard.cu's two-pass row softmax (one block of 256 threads a row), no mask, " + shape +
                           std::to_string(heads) + " heads; S read once and P written, bytes over the median time"});
        const double ms_b =
            ceiling_median_ms([&] { standard_softmax_bwd_two_pass(dt, N, heads, a.get(), b.get(), c.get(), 0); });
        out.push_back({"softmax_rows_bwd_n" + std::to_string(N), 3.0 * nn * kElem / (ms_b * 1e-3), "B/s",
                       "cuda/standard.cu's two-pass row softmax backward (one block of 256 threads a row), " + shape +
                           std::to_string(heads) + " heads; P and dP read, dS written, bytes over the median time"});
    }
    return out;
}

}  // namespace fcuda
