// cuda/decode.cu — decoding attention with split-KV (Flash-Decoding), grouped-query heads.
//
// One new token per sequence (q_len = 1) attends to a KV cache of L keys. H_q query heads share
// H_kv key/value heads (G = H_q / H_kv per KV head; G = 1 is MHA, H_kv = 1 MQA).
//   decode_split: one thread block per (split s, KV head h, batch b); it carries the G query rows
//     of h (up to 8 in one block; a larger G runs in chunks of 8, 4, 2 or 1, each chunk re-reading
//     the K/V of its head) and streams the split's keys through a ring of shared-memory stages,
//     32 KiB of K and V a stage (64 keys at d = 128, 128 at d = 64), by cp.async (16 bytes a copy,
//     swizzled, zeros past the split's end): kStages - 1 stages are in flight while the block works
//     on the oldest one, so that HBM sees ~64 KiB outstanding per block, ~128 KiB per SM, whatever
//     the arithmetic is doing. One __syncthreads a stage both publishes the landed stage and frees
//     the one consumed before it. (FLASHSIM_DECODE_STAGE_KEYS=64 gives d = 64 six 64-key stages,
//     the first version.)
//     On sm_90 the stages arrive by TMA instead (the default there; FLASHSIM_DECODE_LOAD=cp.async|tma):
//     thread 0 asks for each stage as boxes of (stage keys, 64 columns) of K and V, 128-byte swizzled
//     (at d = 128 a stage is two 64-column panels), completing on the stage's mbarrier; the warps wait
//     on it, and the stage's barrier frees the one before for thread 0 to refill. 0.8-3.7% faster than the
//     copies on the recorded rows (cuda/NOTES.md), the same bits.
//     Both products run on tensor cores (mma.sync), each of the 8 warps taking 8 keys of a tile:
//     S = Q K_w^T (m16n8k16; the G query heads are rows of a 16-row A operand kept in registers,
//     K_w the B operand by ldmatrix), then O^T += V_w^T P^T (m16n8k8; V_w^T the A operand by
//     ldmatrix.trans, and S's accumulator pairs, exponentiated and packed, are P^T's B operand as
//     they stand: no shuffles, no shared-memory trip). Each warp keeps its own online softmax
//     (base 2) per query head and its O^T (D x 8) in fp32; at the end the warps are combined
//     through shared memory. With one split the block writes O (storage type) and LSE; otherwise a
//     partial O_s (fp32, normalised) and LSE_s = m_s + log l_s. P is rounded to the storage type
//     for the second product, as in the flash kernels.
//   Fused merge (splits <= 1024): each block then counts itself on an atomic counter per
//     (b, h, chunk); the last one reads every split's LSE_s and O_s back (from L2) and writes
//     LSE = log sum_s exp(LSE_s), O = sum_s exp(LSE_s - LSE) O_s, and resets the counter to 0 for
//     the next launch. One launch instead of two (at B = 1, L = 32k the whole decode is ~35 us).
//   decode_merge (more splits, or FLASHSIM_DECODE_MERGE=separate): the same merge as a second
//     kernel, one block per (b, query head), d threads.
//   Cluster merge (FLASHSIM_DECODE_MERGE=cluster, sm_90, opt-in): a head's splits (at most 16) are the
//     blocks of one thread-block cluster; each keeps its partial in its own shared memory and merges a
//     slice of the outputs from its peers' (cluster_merge). Measured on an H100 it ties or loses
//     (cuda/NOTES.md): a cluster ties its blocks to one GPC and to its slowest member.
// Split count: sim::choose_splits with this GPU's SM count (enough blocks for 2 per SM, splits of
// >= 256 keys), the same rule `flashsim decode` prints with its reason, cut in whole ring stages
// (128 keys at d = 64) so that no split reads keys past its end.
//
// Launch shape: split kernel grid (splits, H_kv * chunks, B), 256 threads, at most 128 registers,
//   96 KiB of dynamic shared memory (2 blocks per SM on the H200's 228 KiB); merge kernel, when
//   used, grid (B * H_q), d threads.
// SRAM per block: the ring, 96 KiB = kStages x (K_j + V_j) x stage keys x d x 2 B (3 stages at
//   either d; 6 at d = 64 with 64-key stages); the warps' combine (8 x G x d fp32, <= 32 KiB) and
//   the fused merge's weights (G x splits fp32) reuse the ring; 2 x 8 x 8 floats static.
// HBM traffic (the simulator's sim::simulate_decode with the same splits):
//   read K, V once per KV head (2 B H_kv L d e; x chunks when G > 8), Q once per block
//   (B H_kv splits G d e); with splits > 1 write and re-read the partials (B H_q splits (4d + 4)),
//   by the last block or by the merge kernel, and write O (B H_q d e).
// Trace (bench --decode --trace): with DecodeTensors::trace set, thread 0 of every block stamps the
//   global timer (ns) and its SM's clock at five points: start, first tile landed, last tile done,
//   partial written, merge done (the merging block only), and its SM id; run_decode summarises
//   where a call's time goes. Without it the stamps cost one uniform branch each.
// Run/check: flashsim bench --decode ; test_cuda_gpu -tc='decode*'
#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>

#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/tma.cuh"
#include "cuda/variants.hpp"
#include "sim/decode.hpp"

namespace fcuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileKeys = 64;
constexpr int kRingBytes = 96 * 1024;  // the K/V ring of one block (two blocks an SM on the H200)
// The cluster merge's block may hold an SM alone (so that a cluster of 16 cannot pack two of its
// blocks on one SM and leave others idle), keeping the same bytes in flight an SM with a ring twice as
// deep (FLASHSIM_DECODE_CLUSTER_RING=192), or run two an SM with the plain ring (=96)
constexpr int kClusterRingBytes = 2 * kRingBytes;
constexpr int kMaxClusterSplits = 16;  // the largest cluster the launch asks for (non-portable above 8)
constexpr int kMaxFusedSplits = 1024;  // the last block merges when splits <= this (weights fit the ring)
// How K and V reach the ring: 16-byte cp.async copies by every thread, or TMA boxes issued by one
// thread and completing on a per-stage mbarrier (sm_90; FLASHSIM_DECODE_LOAD=tma)
constexpr int kLoadCpAsync = 0, kLoadTma = 1;

// A split's weight in the merge, exp(LSE_s - ref) (natural-log LSEs, computed in base 2); a split
// that saw no key (LSE_s = -inf) weighs 0. Both merges (the last block's and the merge kernel) use it.
__device__ inline float split_weight(float lse_s, float ref) {
    return lse_s == -INFINITY ? 0.f : exp2f((lse_s - ref) * LOG2E);
}

// One warp turns a head's split LSEs ws[0, splits) into the merge's weights w_s = exp(LSE_s - LSE), in
// place, and returns LSE = log sum_s exp(LSE_s). Each lane reads and writes only its own entries. The
// fused and the cluster merges both call it, so their LSEs agree to the bit.
__device__ inline float merge_weights(float* ws, int splits, int lane) {
    float M = -INFINITY;
    for (int s = lane; s < splits; s += 32) M = fmaxf(M, ws[s]);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) M = fmaxf(M, __shfl_xor_sync(0xffffffffu, M, off));
    float sum = 0.f;
    for (int s = lane; s < splits; s += 32) sum += split_weight(ws[s], M);
#pragma unroll
    for (int off = 16; off > 0; off /= 2) sum += __shfl_xor_sync(0xffffffffu, sum, off);
    const float lse = M + logf(sum);
    for (int s = lane; s < splits; s += 32) ws[s] = split_weight(ws[s], lse);
    return lse;
}

// Stamp k of this block's trace record (kDecodeTraceWords words: 5 x {global ns, SM clock}, SM id)
__device__ inline void trace_stamp(unsigned long long* rec, int k) {
    if (rec == nullptr || threadIdx.x != 0) return;
    unsigned long long ns;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(ns));
    rec[2 * k] = ns;
    rec[2 * k + 1] = static_cast<unsigned long long>(clock64());
    if (k == 0) {
        unsigned sm;
        asm volatile("mov.u32 %0, %%smid;" : "=r"(sm));
        rec[10] = sm;
    }
}

// A ring stage holds SUB tiles of 64 keys (SUB = 2 at d = 64, 1 at d = 128 or with
// FLASHSIM_DECODE_STAGE_KEYS=64), landed and published together by one wait and one barrier; the
// warps then work through its tiles in order, so the arithmetic (and every bit of the output) is
// the same at either stage size.
template <typename T, int D, int SUB, int RB = kRingBytes>
struct Ring {
    static constexpr int kTileElems = kTileKeys * D;  // one K (or V) tile, (64, D)
    static constexpr int kStageKeys = kTileKeys * SUB;
    static constexpr int kStageElems = kStageKeys * D;  // one K (or V) stage
    static constexpr int kStages =
        RB / (2 * kStageElems * int(sizeof(T)));  // 96 KiB: 3 at d = 128; d = 64: 6, or 3 of 128 keys
    static constexpr int kChunks = kStageElems * int(sizeof(T)) / 16 / kThreads;  // 16-byte copies a thread, a stage
    static_assert(kStages >= 2 && kChunks >= 1 && kChunks * 16 * kThreads == kStageElems * int(sizeof(T)), "ring");
};

// Where element (row, col) of a (ROWS, D) K or V stage sits in the ring. cp.async writes swz<D>: each
// row's 16-byte chunks XOR (row & 7). TMA's 128-byte swizzle writes boxes 64 columns (128 bytes) wide,
// so at d = 128 a stage is two (ROWS, 64) panels, each laid out as swz<64>; at d = 64 the two agree.
template <int D, int ROWS, int LOAD>
__device__ __forceinline__ int kv_off(int row, int col) {
    if constexpr (LOAD == kLoadTma && D > 64)
        return (col >> 6) * (ROWS * 64) + swz<64>(row, col & 63);
    else
        return swz<D>(row, col);
}

// Enqueue the copies of keys [key0, key0 + 64 SUB) of K and V into one ring stage (K_s, V_s:
// (64 SUB, D)); keys >= k_end become zeros. Every thread of the block copies kChunks 16-byte pieces of each.
template <typename T, int D, int SUB, int PF>
__device__ inline void load_tile(T* K_s, T* V_s, const T* Kh, const T* Vh, int64_t key0, int64_t k_end) {
#pragma unroll
    for (int c = 0; c < Ring<T, D, SUB>::kChunks; ++c) {
        const int idx = threadIdx.x + c * kThreads, row = idx / (D / 8), col = idx % (D / 8) * 8;
        const int64_t key = key0 + row;
        const bool valid = key < k_end;
        cp_async16_pf<PF>(K_s + swz<D>(row, col), valid ? Kh + key * D + col : Kh, valid);
        cp_async16_pf<PF>(V_s + swz<D>(row, col), valid ? Vh + key * D + col : Vh, valid);
    }
}

// TMA: thread 0 asks for keys [key0, key0 + 64 SUB) of K and V as boxes of (64 SUB keys, 64 columns),
// all completing on the stage's mbarrier. Keys past L arrive as zeros; keys past the split's end but
// inside the cache arrive as they are (the scores mask them, and P = 0 times a finite V adds zero).
template <typename T, int D, int SUB>
__device__ inline void load_tile_tma(T* K_s, T* V_s, const CUtensorMap* mapK, const CUtensorMap* mapV, uint64_t* bar,
                                     int64_t key0, int bh) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    using R = Ring<T, D, SUB>;
    const uint32_t b = hopper::smem_addr(bar);
    hopper::mbar_arrive_expect_tx(b, 2u * R::kStageElems * sizeof(T));
#pragma unroll
    for (int p = 0; p < D / 64; ++p) {
        hopper::tma_load_3d(hopper::smem_addr(K_s + p * R::kStageKeys * 64), mapK, b, 64 * p, static_cast<int>(key0),
                            bh);
        hopper::tma_load_3d(hopper::smem_addr(V_s + p * R::kStageKeys * 64), mapV, b, 64 * p, static_cast<int>(key0),
                            bh);
    }
#else
    (void)K_s, (void)V_s, (void)mapK, (void)mapV, (void)bar, (void)key0, (void)bh;
    __trap();  // the host launches the TMA kernels on sm_90 and later only
#endif
}

// The bytes at the start of the ring that the warps' combine takes: (8 warps, up to 8 heads, D) fp32
constexpr int kCombineBytes = 8 * 8 * 128 * 4;

// The cluster merge (CL): the splits of one (b, KV head, chunk) are the blocks of one cluster, each
// holding its partial (O_s (G, D) normalised, then LSE_s (G), fp32) in its own shared memory at
// ring + kCombineBytes. After a cluster barrier every block reads the G x splits LSE_s from its peers,
// computes the weights w_s = exp(LSE_s - LSE), and merges its own slice of the G x D outputs from the
// peers' partials (distributed shared memory: no global partials, fence or counter). A second barrier
// keeps every block's shared memory alive until its peers have read it. q0: b H_q + the first head.
template <typename T, int D, int G>
__device__ inline void cluster_merge(unsigned char* ring_raw, T* __restrict__ O, float* __restrict__ LSE, int64_t q0,
                                     int splits, unsigned long long* rec) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
    using namespace hopper;
    const float* part = reinterpret_cast<const float*>(ring_raw + kCombineBytes);
    float* w = reinterpret_cast<float*>(ring_raw + kCombineBytes) + G * D + G;  // (G, splits), this block's own
    __shared__ float lse_all[G];
    const uint32_t part_a = smem_addr(part);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    // every split's partial is in its block's shared memory
    cluster_sync();
    for (int k = threadIdx.x; k < G * splits; k += kThreads) {  // w[h][s] = LSE_s of head h, from block s
        const int s = k / G, h = k % G;
        w[h * splits + s] = ld_peer_f32(peer_addr(part_a + 4u * (G * D + h), static_cast<uint32_t>(s)));
    }
    __syncthreads();
    if (warp < G) {  // one warp per query head: LSE = log sum_s exp(LSE_s), then the weights
        const float lse = merge_weights(w + warp * splits, splits, lane);
        if (lane == 0) lse_all[warp] = lse;
    }
    __syncthreads();
    // this block's slice of the G x D outputs, each summed over the splits in split order
    const int rank = static_cast<int>(cluster_rank());
    const int per = (G * D + splits - 1) / splits, lo = rank * per, hi = min(G * D, lo + per);
    for (int e = lo + static_cast<int>(threadIdx.x); e < hi; e += kThreads) {
        const int h = e / D;
        const uint32_t a = part_a + 4u * e;
        float o = 0.f;
        for (int s = 0; s < splits; ++s) o = fmaf(w[h * splits + s], ld_peer_f32(peer_addr(a, s)), o);
        O[(q0 + h) * D + e % D] = StorageTraits<T>::from_float(o);
    }
    if (rank == 0 && threadIdx.x < G && LSE) LSE[q0 + threadIdx.x] = lse_all[threadIdx.x];
    trace_stamp(rec, 4);
    cluster_sync();  // no block leaves (its shared memory gone) while a peer may still read it
#else
    (void)ring_raw, (void)O, (void)LSE, (void)q0, (void)splits, (void)rec;
    __trap();  // the host launches the cluster merge on sm_90 and later only
#endif
}

// Q (B, H_q, 1, D), K and V (B, H_kv, L, D), O (B, H_q, 1, D), LSE (B, H_q); partials
// O_part (B, H_q, splits, D) and LSE_part (B, H_q, splits), fp32; counters (B, H_kv * chunks).
// CL: 0 the fused or separate merge; 1 the cluster merge, two blocks an SM; 2 the cluster merge, one
// block an SM with the 192 KiB ring
template <typename T, int D, int G, int SUB, int PF, int LOAD, int CL>
__global__ void __launch_bounds__(kThreads, CL == 2 ? 1 : 2)
    decode_split(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
                 float* __restrict__ LSE, float* __restrict__ O_part, float* __restrict__ LSE_part,
                 unsigned* __restrict__ counters, int H_q, int H_kv, int group, int64_t L, int64_t keys_per_split,
                 int splits, int fused, float scale_log2, unsigned long long* __restrict__ trace,
                 const __grid_constant__ CUtensorMap mapK, const __grid_constant__ CUtensorMap mapV) {
    using R = Ring<T, D, SUB, CL == 2 ? kClusterRingBytes : kRingBytes>;
    unsigned long long* rec =
        trace ? trace + kDecodeTraceWords * (blockIdx.x + gridDim.x * (blockIdx.y + size_t(gridDim.y) * blockIdx.z))
              : nullptr;
    trace_stamp(rec, 0);
    constexpr int kWarps = kThreads / 32;
    constexpr int KD = D / 16;  // k-steps of S = Q K^T; also the 16-row d tiles of O^T
    static_assert(kWarps * 8 == kTileKeys && G <= 8, "one warp takes 8 keys of a tile; up to 8 query heads");
    static_assert(kWarps * G * D * 4 <= kCombineBytes, "the warps' combine fits its part of the ring");
    static_assert(!CL || kCombineBytes + (G * D + G + G * kMaxClusterSplits) * 4 <= kRingBytes,
                  "the cluster merge's partial and weights fit the ring");
    extern __shared__ __align__(16) unsigned char ring_dyn[];  // kStages x {K_j (64, D), V_j (64, D)}, swizzled
    // TMA's 128-byte swizzle repeats every 1024 bytes and is taken from the shared address: the ring
    // starts on a 1024-byte boundary (the launch gives it 1 KiB more)
    unsigned char* ring_raw =
        LOAD == kLoadTma
            ? reinterpret_cast<unsigned char*>((reinterpret_cast<uintptr_t>(ring_dyn) + 1023) & ~uintptr_t(1023))
            : ring_dyn;
    T* ring = reinterpret_cast<T*>(ring_raw);
    __shared__ __align__(8) uint64_t stage_bar[LOAD == kLoadTma ? R::kStages : 1];  // TMA: a stage's bytes landed
    const int split = blockIdx.x, chunks = group / G;
    const int h_kv = blockIdx.y / chunks, chunk = blockIdx.y % chunks;
    const int64_t b = blockIdx.z;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;      // fragment row (query head in S) and column pair
    const int qh0 = h_kv * group + chunk * G;  // first query head of this block
    const T* Kh = K + (b * H_kv + h_kv) * L * D;
    const T* Vh = V + (b * H_kv + h_kv) * L * D;
    const int64_t k_begin = int64_t(split) * keys_per_split, k_end = min(L, k_begin + keys_per_split);
    // ring stages of this split (64 SUB keys each; the last one's keys past k_end are zeros)
    const int tiles = k_end > k_begin ? static_cast<int>((k_end - k_begin + R::kStageKeys - 1) / R::kStageKeys) : 0;

    // fill all stages but one before anything else, so the first bytes are on their way
    const int bh = static_cast<int>(b * H_kv + h_kv);  // TMA: the (B H_kv) coordinate of K and V
    if constexpr (LOAD == kLoadTma) {
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
        if (threadIdx.x == 0) {
            for (int st = 0; st < R::kStages; ++st) hopper::mbar_init(hopper::smem_addr(&stage_bar[st]), 1);
            hopper::mbar_fence_init();
        }
        __syncthreads();
        if (threadIdx.x == 0)
            for (int st = 0; st < R::kStages - 1 && st < tiles; ++st)
                load_tile_tma<T, D, SUB>(ring + (2 * st) * R::kStageElems, ring + (2 * st + 1) * R::kStageElems, &mapK,
                                         &mapV, &stage_bar[st], k_begin + int64_t(st) * R::kStageKeys, bh);
#endif
    } else {
#pragma unroll
        for (int st = 0; st < R::kStages - 1; ++st) {
            if (st < tiles)
                load_tile<T, D, SUB, PF>(ring + (2 * st) * R::kStageElems, ring + (2 * st + 1) * R::kStageElems, Kh, Vh,
                                         k_begin + int64_t(st) * R::kStageKeys, k_end);
            cp_async_commit();
        }
    }

    // Q as the A operand of S = Q K^T (16 rows: the G query heads, zeros below): a0 and a2 of each
    // k-step; a1 and a3 (rows 8-15) are always zero.
    uint32_t qa[KD][2];
    {
        const T* qrow = Q + (b * H_q + qh0 + (g < G ? g : 0)) * D;
#pragma unroll
        for (int kk = 0; kk < KD; ++kk) {
            qa[kk][0] = g < G ? *reinterpret_cast<const uint32_t*>(qrow + 16 * kk + 2 * t) : 0u;
            qa[kk][1] = g < G ? *reinterpret_cast<const uint32_t*>(qrow + 16 * kk + 8 + 2 * t) : 0u;
        }
    }
    // This warp's online softmax over its 8 keys of every tile, for head g (the 4 lanes of a quad agree
    // on m; l is this lane's part, summed over the quad at the end), and its O^T (D, 8 heads) in fp32:
    // acc[i] holds rows d = 16i + g and 16i + 8 + g, columns (heads) 2t and 2t + 1.
    float m = -INFINITY, l = 0.f;
    float acc[KD][4];
#pragma unroll
    for (int i = 0; i < KD; ++i) acc[i][0] = acc[i][1] = acc[i][2] = acc[i][3] = 0.f;
    // ldmatrix row addresses: lanes 8j..8j+7 give rows (keys) 8 warp + 0..7 of the matrix at d = 32c + 8j
    const int lrow = warp * 8 + (lane & 7), lcol = 8 * (lane >> 3);
    int stage = 0, next = R::kStages - 1;             // the ring stage t sits in; the one stage t + kStages - 1 goes to
    for (int tile_i = 0; tile_i < tiles; ++tile_i) {  // tile_i: a ring stage of 64 SUB keys
        if constexpr (LOAD == kLoadTma) {
            __syncthreads();  // everyone is done with tile t - 1's stage: thread 0 refills it at once
            if (threadIdx.x == 0 && tile_i + R::kStages - 1 < tiles)
                load_tile_tma<T, D, SUB>(ring + (2 * next) * R::kStageElems, ring + (2 * next + 1) * R::kStageElems,
                                         &mapK, &mapV, &stage_bar[next],
                                         k_begin + int64_t(tile_i + R::kStages - 1) * R::kStageKeys, bh);
#if defined(__CUDA_ARCH__) && __CUDA_ARCH__ >= 900
            // stage t's bytes have landed: its (tile_i / kStages)-th use completes that phase
            hopper::mbar_wait(hopper::smem_addr(&stage_bar[stage]), static_cast<uint32_t>(tile_i / R::kStages) & 1u);
#endif
            if (tile_i == 0) trace_stamp(rec, 1);
        } else {
            cp_async_wait<R::kStages - 2>();  // this thread's copies of stage t have landed
            __syncthreads();                  // everyone's have; and everyone is done with tile t - 1's stage
            if (tile_i == 0) trace_stamp(rec, 1);
            if (tile_i + R::kStages - 1 < tiles)
                load_tile<T, D, SUB, PF>(ring + (2 * next) * R::kStageElems, ring + (2 * next + 1) * R::kStageElems, Kh,
                                         Vh, k_begin + int64_t(tile_i + R::kStages - 1) * R::kStageKeys, k_end);
            cp_async_commit();  // (an empty group near the end keeps the wait count right)
        }
        next = next + 1 == R::kStages ? 0 : next + 1;
        const T* K_st = ring + (2 * stage) * R::kStageElems;  // (64 SUB, D)
        const T* V_st = K_st + R::kStageElems;                // (64 SUB, D)
        stage = stage + 1 == R::kStages ? 0 : stage + 1;
#pragma unroll
        for (int sub = 0; sub < SUB; ++sub) {
            const T* K_j = K_st + sub * R::kTileElems;  // (64, D): rows 64 sub.. keep their swizzle (row & 7)
            const T* V_j = V_st + sub * R::kTileElems;
            // S (16 heads x 8 keys) = Q K_w^T on tensor cores; K_w as the "col" B operand straight from ldmatrix
            float s[4] = {0.f, 0.f, 0.f, 0.f};
#pragma unroll
            for (int c = 0; c < D / 32; ++c) {
                uint32_t kb[4];
                ldmatrix_x4(kb, K_j + kv_off<D, R::kStageKeys, LOAD>(lrow, 32 * c + lcol));
                const uint32_t a0[4] = {qa[2 * c][0], 0u, qa[2 * c][1], 0u};
                const uint32_t a1[4] = {qa[2 * c + 1][0], 0u, qa[2 * c + 1][1], 0u};
                mma16816<T>(s, a0, kb[0], kb[1]);
                mma16816<T>(s, a1, kb[2], kb[3]);
            }
            // online softmax in base 2 for head g over keys 2t, 2t + 1 of this warp's eight
            const int64_t key = k_begin + int64_t(tile_i) * R::kStageKeys + sub * kTileKeys + warp * 8 + 2 * t;
            const float s0 = key < k_end ? s[0] * scale_log2 : -INFINITY;
            const float s1 = key + 1 < k_end ? s[1] * scale_log2 : -INFINITY;
            float mx = fmaxf(s0, s1);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m, mx);
            const float m_use = m_new == -INFINITY ? 0.f : m_new;  // no key yet: keep everything at 0, not NaN
            const float alpha = fast_exp2(m - m_use);              // m = -inf: 0
            const float p0 = fast_exp2(s0 - m_use), p1 = fast_exp2(s1 - m_use);
            l = l * alpha + p0 + p1;
            m = m_new;
            // P^T as the B operand of O^T += V_w^T P^T (m16n8k8): (keys 2t, 2t + 1; head g) is this lane's pair already
            const uint32_t pb = pack2<T>(p0, p1);
            // rescale O^T: its columns are heads 2t and 2t + 1, whose alpha live in lanes 8t and 8t + 4
            const float a_lo = __shfl_sync(0xffffffffu, alpha, 8 * t),
                        a_hi = __shfl_sync(0xffffffffu, alpha, 8 * t + 4);
#pragma unroll
            for (int i = 0; i < KD; ++i) {
                acc[i][0] *= a_lo;
                acc[i][1] *= a_hi;
                acc[i][2] *= a_lo;
                acc[i][3] *= a_hi;
            }
#pragma unroll
            for (int c = 0; c < D / 32; ++c) {
                uint32_t va[4];  // V_w^T (d x keys) by ldmatrix.trans: a0, a1 of d tile 2c, then of 2c + 1
                ldmatrix_x4_trans(va, V_j + kv_off<D, R::kStageKeys, LOAD>(lrow, 32 * c + lcol));
                mma1688<T>(acc[2 * c], va[0], va[1], pb);
                mma1688<T>(acc[2 * c + 1], va[2], va[3], pb);
            }
        }
    }
    if constexpr (LOAD == kLoadCpAsync)
        cp_async_wait<0>();  // only empty groups remain (TMA: every stage was waited on)
    __syncthreads();         // every warp is done with the ring: it holds the combine from here on
    trace_stamp(rec, 2);

    // combine the 8 warps: each one's (m, l, O^T) per head, rescaled to the block's maximum
    __shared__ float sm_m[kWarps][8], sm_l[kWarps][8];
    float* sm_acc = reinterpret_cast<float*>(ring_raw);  // (warps, G, D)
    l += __shfl_xor_sync(0xffffffffu, l, 1);
    l += __shfl_xor_sync(0xffffffffu, l, 2);
    if (t == 0) {
        sm_m[warp][g] = m;
        sm_l[warp][g] = l;
    }
    __syncthreads();
#pragma unroll
    for (int hh = 0; hh < 2; ++hh) {
        const int h = 2 * t + hh;
        if (h >= G) continue;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm_m[w][h]);
        const float mw = sm_m[warp][h];
        const float f = mw == -INFINITY ? 0.f : exp2f(mw - M);
        float* dst = sm_acc + (warp * G + h) * D;
#pragma unroll
        for (int i = 0; i < KD; ++i) {
            dst[16 * i + g] = acc[i][hh] * f;
            dst[16 * i + 8 + g] = acc[i][2 + hh] * f;
        }
    }
    __syncthreads();
    for (int idx = threadIdx.x; idx < G * D; idx += kThreads) {
        const int h = idx / D, x = idx % D;
        float M = -INFINITY;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) M = fmaxf(M, sm_m[w][h]);
        float o = 0.f, lsum = 0.f;
#pragma unroll
        for (int w = 0; w < kWarps; ++w) {
            o += sm_acc[(w * G + h) * D + x];
            lsum += sm_m[w][h] == -INFINITY ? 0.f : sm_l[w][h] * exp2f(sm_m[w][h] - M);
        }
        const int64_t qh = b * H_q + qh0 + h;
        const float lse = lsum > 0.f ? (M + log2f(lsum)) * LN2 : -INFINITY;
        const float out = lsum > 0.f ? o / lsum : 0.f;
        if (splits == 1) {
            O[qh * D + x] = StorageTraits<T>::from_float(out);
            if (x == 0 && LSE) LSE[qh] = lse;
        } else if constexpr (CL) {  // the partial stays in this block's shared memory, past the combine
            float* part = reinterpret_cast<float*>(ring_raw + kCombineBytes);  // (G, D) then LSE_s (G)
            part[idx] = out;
            if (x == 0) part[G * D + h] = lse;
        } else {
            O_part[(qh * splits + split) * D + x] = out;
            if (x == 0) LSE_part[qh * splits + split] = lse;
        }
    }
    __syncthreads();  // the ring's combine is read: the fused merge may reuse it
    trace_stamp(rec, 3);
    if constexpr (CL) {
        if (splits > 1) cluster_merge<T, D, G>(ring_raw, O, LSE, b * H_q + qh0, splits, rec);
        return;
    }
    if (splits == 1 || !fused) return;

    // Fused merge: the last block of this (b, KV head, chunk) to finish merges every split's partial.
    __shared__ unsigned sm_last;
    __shared__ float sm_lse[G];
    __threadfence();  // this block's partials are visible device-wide before it is counted
    __syncthreads();
    unsigned* counter = counters + blockIdx.z * gridDim.y + blockIdx.y;
    if (threadIdx.x == 0) sm_last = atomicAdd(counter, 1u) == unsigned(splits - 1);
    __syncthreads();
    if (!sm_last) return;
    __threadfence();
    float* w = reinterpret_cast<float*>(ring_raw);  // (G, splits): LSE_s, then w_s = exp(LSE_s - LSE); in the ring
    for (int k = threadIdx.x; k < G * splits; k += kThreads)  // all at once: one trip to L2
        w[k] = __ldcg(LSE_part + (b * H_q + qh0) * splits + k);
    __syncthreads();
    if (warp < G) {  // one warp per query head: LSE = log sum_s exp(LSE_s), then the weights
        const float lse = merge_weights(w + warp * splits, splits, lane);
        if (lane == 0) sm_lse[warp] = lse;
    }
    __syncthreads();
    // O = sum_s w_s O_s: the G x D outputs as float4 slots, RS adjacent threads a slot sharing the splits
    constexpr int SLOTS = G * D / 4, RS = kThreads / SLOTS;
    static_assert(RS >= 1 && RS <= 32 && SLOTS * RS == kThreads, "merge shape");
    const int slot = threadIdx.x / RS, r = threadIdx.x % RS;
    const int gm = slot / (D / 4), x4 = slot % (D / 4);
    const int64_t qh = b * H_q + qh0 + gm;
    const float4* op = reinterpret_cast<const float4*>(O_part + qh * splits * D) + x4;
    float4 o = make_float4(0.f, 0.f, 0.f, 0.f);
#pragma unroll 8
    for (int s = r; s < splits; s += RS) {
        const float ws = w[gm * splits + s];
        const float4 v = __ldcg(op + int64_t(s) * (D / 4));
        o.x = fmaf(ws, v.x, o.x);
        o.y = fmaf(ws, v.y, o.y);
        o.z = fmaf(ws, v.z, o.z);
        o.w = fmaf(ws, v.w, o.w);
    }
#pragma unroll
    for (int off = RS / 2; off > 0; off /= 2) {
        o.x += __shfl_xor_sync(0xffffffffu, o.x, off);
        o.y += __shfl_xor_sync(0xffffffffu, o.y, off);
        o.z += __shfl_xor_sync(0xffffffffu, o.z, off);
        o.w += __shfl_xor_sync(0xffffffffu, o.w, off);
    }
    if (r == 0) {
        T* out = O + qh * D + x4 * 4;
        out[0] = StorageTraits<T>::from_float(o.x);
        out[1] = StorageTraits<T>::from_float(o.y);
        out[2] = StorageTraits<T>::from_float(o.z);
        out[3] = StorageTraits<T>::from_float(o.w);
    }
    if (threadIdx.x < G && LSE) LSE[b * H_q + qh0 + threadIdx.x] = sm_lse[threadIdx.x];
    if (threadIdx.x == 0) *counter = 0;  // ready for the next launch
    trace_stamp(rec, 4);
}

template <typename T, int D>
__global__ void decode_merge(const float* __restrict__ O_part, const float* __restrict__ LSE_part, T* __restrict__ O,
                             float* __restrict__ LSE, int splits) {
    const int64_t qh = blockIdx.x;  // b * H_q + head
    const float* lp = LSE_part + qh * splits;
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, lp[s]);
    float sum = 0.f;
    for (int s = 0; s < splits; ++s) sum += split_weight(lp[s], M);
    const float lse = M + logf(sum);
    float o = 0.f;
    for (int s = 0; s < splits; ++s)
        if (lp[s] != -INFINITY) o = fmaf(split_weight(lp[s], lse), O_part[(qh * splits + s) * D + threadIdx.x], o);
    O[qh * D + threadIdx.x] = StorageTraits<T>::from_float(o);
    if (threadIdx.x == 0 && LSE) LSE[qh] = lse;
}

// The TMA maps of K and V, (B H_kv, L, D) read in boxes of (stage keys, 64 columns), 128-byte swizzled,
// L2 told to fetch 128 bytes a miss (256 made the cp.async copies 8-10% slower, cuda/NOTES.md). The last
// pair is kept: encoding takes host time that a timed launch would otherwise pay on every call.
template <typename T>
void kv_maps(const sim::DecodeProblem& p, const DecodeTensors& t, int stage_keys, CUtensorMap& mk, CUtensorMap& mv) {
    struct Key {
        const void *K = nullptr, *V = nullptr;
        int64_t L = 0, bh = 0, d = 0;
        int rows = 0, dt = 0;
        bool operator==(const Key&) const = default;
    };
    static thread_local Key last;
    static thread_local CUtensorMap last_k{}, last_v{};
    const Key key{t.K, t.V, p.kv_len, p.batch * p.kv_heads, p.head_dim, stage_keys, static_cast<int>(p.dtype)};
    if (!(key == last)) {
        auto encode = [&](const void* ptr, CUtensorMap& map) {
            const cuuint64_t dims[3] = {static_cast<cuuint64_t>(p.head_dim), static_cast<cuuint64_t>(p.kv_len),
                                        static_cast<cuuint64_t>(p.batch * p.kv_heads)};
            const cuuint64_t strides[2] = {static_cast<cuuint64_t>(p.head_dim) * sizeof(T),
                                           static_cast<cuuint64_t>(p.kv_len * p.head_dim) * sizeof(T)};
            const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(stage_keys), 1};
            const cuuint32_t elem_strides[3] = {1, 1, 1};
            const CUtensorMapDataType dt = StorageTraits<T>::dtype == sim::DType::bf16
                                               ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
            const CUresult r = hopper::encode_fn()(
                &map, dt, 3, const_cast<void*>(ptr), dims, strides, box, elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE,
                CU_TENSOR_MAP_SWIZZLE_128B, CU_TENSOR_MAP_L2_PROMOTION_L2_128B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
            if (r != CUDA_SUCCESS)
                throw std::runtime_error("decode: cuTensorMapEncodeTiled failed (CUresult " +
                                         std::to_string(static_cast<int>(r)) + ") for a (" +
                                         std::to_string(p.batch * p.kv_heads) + ", " + std::to_string(p.kv_len) + ", " +
                                         std::to_string(p.head_dim) + ") cache; unset FLASHSIM_DECODE_LOAD");
        };
        encode(t.K, last_k);
        encode(t.V, last_v);
        last = key;
    }
    mk = last_k;
    mv = last_v;
}

// The split kernel's dynamic shared memory: its ring, and 1 KiB to align it for TMA
template <int LOAD, int CL>
constexpr int split_smem_bytes() {
    return (CL == 2 ? kClusterRingBytes : kRingBytes) + (LOAD == kLoadTma ? 1024 : 0);
}

template <typename T, int D, int G, int SUB, int PF, int LOAD, int CL>
void launch_split(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    auto kernel = decode_split<T, D, G, SUB, PF, LOAD, CL>;
    constexpr int smem = split_smem_bytes<LOAD, CL>();
    static const bool configured = [&] {  // the ring is dynamic shared memory above the 48 KiB default
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributePreferredSharedMemoryCarveout,
                                        cudaSharedmemCarveoutMaxShared));
        if (CL) CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeNonPortableClusterSizeAllowed, 1));
        return true;
    }();
    (void)configured;
    if (plan.merge == "fused" && !t.counters)
        throw std::runtime_error("decode: the fused merge needs its counters (DecodeTensors::counters)");
    const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(p.kv_heads * (p.group() / G)),
                    static_cast<unsigned>(p.batch));
    const float scale_log2 = static_cast<float>(p.softmax_scale()) * LOG2E;
    CUtensorMap mk{}, mv{};
    if constexpr (LOAD == kLoadTma) kv_maps<T>(p, t, Ring<T, D, SUB>::kStageKeys, mk, mv);
    const T* q = static_cast<const T*>(t.Q);
    const T* k = static_cast<const T*>(t.K);
    const T* v = static_cast<const T*>(t.V);
    T* o = static_cast<T*>(t.O);
    const int hq = static_cast<int>(p.q_heads), hkv = static_cast<int>(p.kv_heads), grp = static_cast<int>(p.group());
    const int splits = static_cast<int>(plan.splits), fused = plan.merge == "fused" ? 1 : 0;
    if constexpr (CL) {  // the splits of a head are one cluster's blocks
        hopper::launch_in_clusters(kernel, grid, dim3(kThreads), smem, s, grid.x, q, k, v, o, t.LSE, t.O_part,
                                   t.LSE_part, t.counters, hq, hkv, grp, p.kv_len, plan.keys_per_split, splits, fused,
                                   scale_log2, t.trace, mk, mv);
    } else {
        kernel<<<grid, kThreads, smem, s>>>(q, k, v, o, t.LSE, t.O_part, t.LSE_part, t.counters, hq, hkv, grp, p.kv_len,
                                            plan.keys_per_split, splits, fused, scale_log2, t.trace, mk, mv);
    }
    LAUNCH_CHECK();
    if (plan.merge == "separate") {
        decode_merge<T, D><<<static_cast<unsigned>(p.batch * p.q_heads), D, 0, s>>>(
            t.O_part, t.LSE_part, static_cast<T*>(t.O), t.LSE, static_cast<int>(plan.splits));
        LAUNCH_CHECK();
    }
}

template <typename T, int D, int SUB, int PF, int LOAD, int CL = 0>
void launch_g(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    switch (plan.group_chunk) {
        case 8:
            return launch_split<T, D, 8, SUB, PF, LOAD, CL>(p, plan, t, s);
        case 4:
            return launch_split<T, D, 4, SUB, PF, LOAD, CL>(p, plan, t, s);
        case 2:
            return launch_split<T, D, 2, SUB, PF, LOAD, CL>(p, plan, t, s);
        default:
            return launch_split<T, D, 1, SUB, PF, LOAD, CL>(p, plan, t, s);
    }
}

template <typename T, int D, int SUB>
void launch_d(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    if (plan.merge == "cluster")  // with the TMA loads only (the plan refuses the copies)
        return plan.cluster_ring_kib == 192 ? launch_g<T, D, SUB, 0, kLoadTma, 2>(p, plan, t, s)
                                            : launch_g<T, D, SUB, 0, kLoadTma, 1>(p, plan, t, s);
    if (plan.kv_load == "tma")
        return launch_g<T, D, SUB, 0, kLoadTma>(p, plan, t, s);  // (no prefetch hint: the map says)
    switch (plan.l2_prefetch) {
        case 128:
            return launch_g<T, D, SUB, 128, kLoadCpAsync>(p, plan, t, s);
        case 256:
            return launch_g<T, D, SUB, 256, kLoadCpAsync>(p, plan, t, s);
        default:
            return launch_g<T, D, SUB, 0, kLoadCpAsync>(p, plan, t, s);
    }
}

}  // namespace

sim::DecodeConfig decode_kernel_config() {
    sim::DecodeConfig c;
    c.tile_keys = kTileKeys;
    c.min_tiles_per_split = 4;
    c.blocks_per_sm = 2;
    c.fused_merge_max_splits = kMaxFusedSplits;
    return c;
}

void check_decode(const sim::DecodeProblem& p) {
    p.validate();
    if (p.q_len != 1) throw std::runtime_error("the decode kernel takes one new token (q_len = 1)");
    if (p.head_dim != 64 && p.head_dim != 128)
        throw std::runtime_error("the decode kernel supports head_dim 64 or 128 (got " + std::to_string(p.head_dim) +
                                 ")");
    if (p.dtype != sim::DType::fp16 && p.dtype != sim::DType::bf16)
        throw std::runtime_error("the decode kernel stores fp16 or bf16 (got " + std::string(sim::dtype_name(p.dtype)) +
                                 ")");
    if (p.batch > 65535) throw std::runtime_error("the decode kernel takes a batch of at most 65535");
}

// Keys a ring stage holds: FLASHSIM_DECODE_STAGE_KEYS=64|128, else 128 at d = 64 (1-3% faster on
// the four rows, cuda/NOTES.md) and 64 at d = 128. 128 only at d = 64 (a 128-key stage of K and V is
// 32 KiB there, three in the ring; at d = 128 it would be 64 KiB, one).
int decode_stage_keys(int64_t head_dim) {
    const char* e = sim::knob("FLASHSIM_DECODE_STAGE_KEYS");
    if (e == nullptr || *e == 0) return head_dim == 64 ? 2 * kTileKeys : kTileKeys;
    const std::string v = e;
    if (v == "64") return kTileKeys;
    if (v == "128") {
        if (head_dim != 64)
            throw std::runtime_error("FLASHSIM_DECODE_STAGE_KEYS=128 needs head_dim 64 (got " +
                                     std::to_string(head_dim) +
                                     "): at d = 128 a 128-key stage is 64 KiB and the 96 KiB ring holds one; unset it");
        return 2 * kTileKeys;
    }
    throw std::runtime_error("FLASHSIM_DECODE_STAGE_KEYS must be 64 or 128 (got '" + v +
                             "'): the keys a ring stage of the decode kernel holds; unset it for the default "
                             "(128 at d = 64, 64 at d = 128)");
}

// L2 prefetch size of the K/V copies: FLASHSIM_DECODE_PREFETCH=0|128|256 (bytes), else 0 (no hint).
int decode_l2_prefetch() {
    const char* e = sim::knob("FLASHSIM_DECODE_PREFETCH");
    if (e == nullptr || *e == 0) return 0;
    const std::string v = e;
    if (v == "0") return 0;
    if (v == "128") return 128;
    if (v == "256") return 256;
    throw std::runtime_error("FLASHSIM_DECODE_PREFETCH must be 0, 128 or 256 (got '" + v +
                             "'): the L2 prefetch size, in bytes, of the decode kernel's K/V copies; unset it for "
                             "the default (0, no hint)");
}

// How K and V reach the ring: FLASHSIM_DECODE_LOAD=cp.async|tma, else tma where the GPU has it (and no
// cp.async prefetch hint is asked for), cp.async before sm_90.
std::string decode_kv_load(bool tma_default) {
    const char* e = sim::knob("FLASHSIM_DECODE_LOAD");
    if (e == nullptr || *e == 0) return tma_default ? "tma" : "cp.async";
    const std::string v = e;
    if (v == "cp.async" || v == "tma") return v;
    throw std::runtime_error("FLASHSIM_DECODE_LOAD must be cp.async or tma (got '" + v +
                             "'): how the decode kernel's K/V tiles reach shared memory; unset it for the default "
                             "(tma on sm_90 and later, cp.async before)");
}

// The cluster merge's ring: FLASHSIM_DECODE_CLUSTER_RING=96|192 (KiB), else 192 (one block an SM).
int decode_cluster_ring_kib() {
    const char* e = sim::knob("FLASHSIM_DECODE_CLUSTER_RING");
    if (!e || !*e) return 192;
    const std::string v = e;
    if (v == "96" || v == "192") return std::stoi(v);
    throw std::runtime_error("FLASHSIM_DECODE_CLUSTER_RING must be 96 or 192 (got '" + v +
                             "'): the KiB of K/V ring a block of the cluster merge holds (96: two blocks an SM, 192: "
                             "one); unset it for the default (192)");
}

// Who merges the splits: FLASHSIM_DECODE_MERGE=fused|separate|cluster, else fused (the last block of a head).
std::string decode_merge_mode() {
    const char* e = sim::knob("FLASHSIM_DECODE_MERGE");
    if (!e || !*e) return "fused";
    const std::string v = e;
    if (v == "fused" || v == "separate" || v == "cluster") return v;
    throw std::runtime_error("FLASHSIM_DECODE_MERGE must be fused, separate or cluster (got '" + v +
                             "'): whether the last block of a head merges the splits, a second kernel does, or the "
                             "blocks of a cluster do through shared memory; unset it for the default (fused)");
}

namespace {

// The current device's compute capability (major): the decode plan picks TMA by it, and the launch refuses
// TMA below 9 for plans made elsewhere.
int device_cc_major() {
    int dev = 0, major = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&major, cudaDevAttrComputeCapabilityMajor, dev));
    return major;
}

}  // namespace

DecodePlan decode_plan(const sim::DecodeProblem& p, int sm_count, int64_t splits) {
    check_decode(p);
    sim::Machine m;
    m.sm_count = sm_count;
    sim::DecodeConfig c = decode_kernel_config();
    c.splits = splits;
    DecodePlan plan;
    plan.stage_keys = decode_stage_keys(p.head_dim);
    // The kernel loads whole ring stages, so a split is cut in whole stages: a split ending inside a
    // stage would still read that stage's keys past its end (they belong to the next split, read again
    // there). At d = 64 with 128-key stages and L = 131,072 the 64-key rule gave 33 splits of 4,032 keys,
    // each reading 64 keys more than it owns (1.6% more bytes); cut in stages it is 32 splits of 4,096.
    // The minimum a split holds stays 4 x 64 keys.
    const int64_t tile_keys = c.tile_keys;
    c.tile_keys = plan.stage_keys;
    c.min_tiles_per_split = std::max<int64_t>(1, c.min_tiles_per_split * tile_keys / plan.stage_keys);
    const std::string merge = decode_merge_mode();
    const bool cluster = merge == "cluster";
    if (cluster) {
        // a head's splits in one cluster of at most 16; one block an SM with the deep ring, or two
        if (splits > kMaxClusterSplits)
            throw std::runtime_error(
                "FLASHSIM_DECODE_MERGE=cluster merges the splits of a head in one cluster of at "
                "most " +
                std::to_string(kMaxClusterSplits) + " blocks (got --splits " + std::to_string(splits) +
                "); ask for 16 splits or fewer, or unset it");
        plan.cluster_ring_kib = decode_cluster_ring_kib();
        c.blocks_per_sm = plan.cluster_ring_kib == 192 ? 1 : 2;
    }
    sim::DecodeSplit sp = sim::choose_splits(p, m, c);
    if (cluster && sp.splits > kMaxClusterSplits) {
        c.splits = kMaxClusterSplits;
        sp = sim::choose_splits(p, m, c);
        sp.why = std::to_string(kMaxClusterSplits) + " splits, the largest cluster (the rule would take more)";
    }
    plan.splits = sp.splits;
    plan.keys_per_split = sp.keys_per_split;
    plan.why = sp.why + (plan.stage_keys != tile_keys
                             ? "; splits cut in whole ring stages of " + std::to_string(plan.stage_keys) + " keys"
                             : std::string());
    const int64_t g = p.group();
    plan.group_chunk = g % 8 == 0 ? 8 : g % 4 == 0 ? 4 : g % 2 == 0 ? 2 : 1;
    plan.l2_prefetch = decode_l2_prefetch();
    // TMA by default on sm_90 (faster on all eight recorded rows, cuda/NOTES.md), unless a cp.async hint is asked for
    plan.kv_load = decode_kv_load(device_cc_major() >= 9 && plan.l2_prefetch == 0);
    if (plan.kv_load == "tma" && plan.l2_prefetch != 0)
        throw std::runtime_error(
            "FLASHSIM_DECODE_PREFETCH applies to the cp.async copies, not to FLASHSIM_DECODE_LOAD=tma "
            "(its tensor map asks L2 for 128 bytes a miss); unset one of them");
    // more splits than the fused merge takes: the merge kernel
    plan.merge = plan.splits == 1                                              ? "none"
                 : cluster                                                     ? "cluster"
                 : merge == "fused" && plan.splits <= c.fused_merge_max_splits ? "fused"
                                                                               : "separate";
    if (plan.merge == "cluster") {
        if (plan.kv_load != "tma")
            throw std::runtime_error(
                "FLASHSIM_DECODE_MERGE=cluster runs with the TMA loads on a GPU of compute capability 9.0 or later "
                "(this plan has " +
                plan.kv_load + "); unset FLASHSIM_DECODE_LOAD and FLASHSIM_DECODE_PREFETCH, or the merge");
        plan.why += "; merged in clusters of " + std::to_string(plan.splits) +
                    " blocks through distributed shared memory, " +
                    (plan.cluster_ring_kib == 192 ? "one block an SM (a 192 KiB ring)" : "two blocks an SM");
    }
    return plan;
}

void decode_forward(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    check_decode(p);
    if (plan.kv_load == "tma") {
        const int major = device_cc_major();
        if (major < 9)
            throw std::runtime_error(
                "FLASHSIM_DECODE_LOAD=tma needs a GPU of compute capability 9.0 or later (this one is " +
                std::to_string(major) + ".x); unset it for the cp.async copies");
        if (p.batch * p.kv_heads > INT32_MAX || p.kv_len > INT32_MAX)
            throw std::runtime_error(
                "FLASHSIM_DECODE_LOAD=tma: TMA coordinates are 32-bit; this cache is too large, "
                "unset it");
    }
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 64 && plan.stage_keys == 2 * kTileKeys)
            launch_d<T, 64, 2>(p, plan, t, s);
        else if (p.head_dim == 64)
            launch_d<T, 64, 1>(p, plan, t, s);
        else
            launch_d<T, 128, 1>(p, plan, t, s);
    });
}

}  // namespace fcuda
