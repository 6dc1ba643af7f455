// cuda/variants.hpp — the entry points of the kernel files, as the harness (cuda/harness.cu) calls
// them. Each `*_forward` / `*_backward` only enqueues work on the stream; the harness allocates,
// poisons, times and checks. Internal to cuda/ (includes CUDA headers through common.cuh).
#pragma once
#include <cuda_runtime.h>

#include <functional>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "cuda/common.cuh"
#include "sim/kernel_geometry.hpp"
#include "sim/knobs.hpp"

namespace fcuda {

// harness.cu: the variant's forward / backward by name (what the harness and the ring call).
void forward_of(const std::string& variant, const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);
void backward_of(const std::string& variant, const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);

// The median of v (the mean of the middle two when even), 0 when empty (harness.cu).
double median_of(std::vector<double> v);

// standard.cu: S = Q K^T (cuBLAS), P = softmax(scale * S) (kernel), O = P V (cuBLAS).
TileConfig standard_tiles(const sim::Problem& p, Pass pass);
void standard_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);
// Uses the P that standard_forward left in the workspace (call forward first, same workspace).
void standard_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);
// The cuBLAS call that writes an N x N output, S = A B^T (A, B: heads x N x d, row-major; S: heads
// x N x N), fp32 accumulate: standard's S = Q K^T and dP = dO V^T, and the gemm_write ceilings.
void standard_scores(sim::DType dt, int N, int d, int heads, const void* A, const void* B, void* S, cudaStream_t s);

// flash1.cu: Algorithm 1, one launch per key/value block j.
TileConfig flash1_tiles(const sim::Problem& p);
void flash1_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);

// flash2.cu: FA2 forward on tensor cores (mma.sync), writes O and LSE.
TileConfig flash2_tiles(const sim::Problem& p);
void flash2_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);

// flash2_bwd.cu: FA2 backward (needs O and LSE of flash2_forward).
TileConfig flash2_bwd_tiles(const sim::Problem& p);
void flash2_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);

// flash2h.cu: the same FA2 forward on Hopper's wgmma + TMA (compiled for sm_90a only). Writes O
// and LSE. flash2h_available says why not when the device is not compute capability 9.0.
bool flash2h_available(std::string* why);
TileConfig flash2h_tiles(const sim::Problem& p);
void flash2h_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);

// flash2h_bwd.cu: FA2 backward on wgmma + TMA (sm_90a only; needs O and LSE of flash2h_forward).
// FLASHSIM_FLASH2H_BWD=deterministic adds dQ in a fixed order (bit-identical runs).
TileConfig flash2h_bwd_tiles(const sim::Problem& p);
void flash2h_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s);
// The device memory flash2h_backward's workspace takes for p (its schedule and mode as set now),
// and flash2h_forward's (the persistent grid's unit counter, 4 bytes, or none).
int64_t flash2h_bwd_workspace_bytes(const sim::Problem& p);
int64_t flash2h_fwd_workspace_bytes(const sim::Problem& p);

// flash2h_fp8.cu: the forward in FP8 (e4m3, sm_90a only, d = 128, no mask). A preparation step
// (timed apart) quantizes bf16 Q, K, V with one scale per 128-row block of each head and writes V
// transposed; the forward reads those and writes O (bf16) and LSE.
struct Fp8Layout {
    int64_t T = 0;            // 128-row blocks a head: ceil(N / 128)
    int64_t n_pad = 0;        // V^T's key index per head, padded to whole blocks (T x 128)
    int64_t qk_bytes = 0;     // Q8 and K8 each: (B*H, N, d) bytes
    int64_t vt_bytes = 0;     // Vt8: (B*H, d, n_pad) bytes
    int64_t scale_count = 0;  // floats: s_Q, s_K, s_V, each (B*H, T)
};
Fp8Layout fp8_layout(const sim::Problem& p);
struct Fp8Buffers {
    uint8_t *Q8 = nullptr, *K8 = nullptr, *Vt8 = nullptr;
    float* scales = nullptr;  // (3, B*H, T): s_Q, then s_K, then s_V
};
// Throws, in the user's words, for what the fp8 forward does not take (d != 128, causal).
void check_flash2h_fp8(const sim::Problem& p);
// Q, K, V: bf16 (B*H, N, d).
void flash2h_fp8_prepare(const sim::Problem& p, const void* Q, const void* K, const void* V, const Fp8Buffers& b,
                         cudaStream_t s);
void flash2h_fp8_forward(const sim::Problem& p, const Fp8Buffers& b, void* O, float* LSE, cudaStream_t s);
TileConfig flash2h_fp8_tiles(const sim::Problem& p);
// fp8_harness.cu: fcuda::run for p.dtype == fp8 (the harness calls it).
Measurement run_fp8(const sim::Problem& p, const std::string& variant, const RunOptions& opt);

// ceilings.cu, ceilings_sm90a.cu: `flashsim bench --ceilings`. The median of 7 timed runs of f
// (after one warm-up), in ms; and the wgmma ceilings (Hopper only).
double ceiling_median_ms(const std::function<void()>& f);
// Fills `bytes` of device memory with hashed, never-zero 16-bit values near +-1 (either 2-byte type),
// for the ceilings' inputs (tensor cores run faster on zeros).
void fill_random_bits(void* buf, size_t bytes, uint32_t seed, int sms);
std::vector<Ceiling> measure_wgmma_ceilings(int sms);

// decode.cu: one new token against a KV cache, split-KV with grouped-query heads, then a merge
// (by the split kernel's last block, or a second kernel).
struct DecodePlan {
    int64_t splits = 1, keys_per_split = 0;
    int group_chunk = 1;  // query heads one block carries (8, 4, 2 or 1; a larger group runs in chunks)
    int stage_keys = 64;  // keys a ring stage holds: 64 at d = 128, 128 at d = 64 (FLASHSIM_DECODE_STAGE_KEYS)
    int l2_prefetch = 0;  // L2 prefetch size (bytes) hinted on the K/V copies, 0: none (FLASHSIM_DECODE_PREFETCH)
    std::string kv_load = "cp.async";  // how K and V reach shared memory: cp.async or tma (FLASHSIM_DECODE_LOAD)
    // who merges the splits (FLASHSIM_DECODE_MERGE): none (one split), fused (the split kernel's last
    // block of a head, no second launch), separate (a second kernel) or cluster (a head's splits are one
    // cluster, merged in shared memory)
    std::string merge = "none";
    int cluster_ring_kib = 0;  // the cluster merge's ring: 192 (one block an SM) or 96 (two)
    std::string why;           // why this split count (sim::choose_splits)
};
struct DecodeTensors {
    const void* Q = nullptr;  // (B, H_q, 1, d)
    const void* K = nullptr;  // (B, H_kv, L, d)
    const void* V = nullptr;
    void* O = nullptr;                    // (B, H_q, 1, d)
    float* LSE = nullptr;                 // (B, H_q), natural log; may be null
    float* O_part = nullptr;              // (B, H_q, splits, d) fp32, when splits > 1
    float* LSE_part = nullptr;            // (B, H_q, splits)
    unsigned* counters = nullptr;         // (B, H_q) zeros, when splits > 1: the fused merge's; left at zero
    unsigned long long* trace = nullptr;  // null, or kDecodeTraceWords a block of the split kernel's grid
};
// a block's trace record: {global timer ns, SM clock} at start, first tile landed, last tile done,
// partial written, merge done (0 where the block did not merge), then its SM id, one spare word
constexpr int kDecodeTraceWords = 12;
void check_decode(const sim::DecodeProblem& p);  // throws on what the kernel does not take
sim::DecodeConfig decode_kernel_config();        // its tile (64 keys), minimum split, blocks per SM
// splits = 0: sim::choose_splits for sm_count SMs; otherwise that many (capped at one per tile).
DecodePlan decode_plan(const sim::DecodeProblem& p, int sm_count, int64_t splits);
void decode_forward(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s);

}  // namespace fcuda
