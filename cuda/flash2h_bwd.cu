// cuda/flash2h_bwd.cu — FlashAttention-2's backward on Hopper's own machinery (sm_90a only):
// the five products of the backward on wgmma, Q_i / dO_i streamed by TMA through an mbarrier ring
// by a producer warpgroup. The backward pass of variant flash2h (its forward gives O and LSE).
//
// Three launches:
//   1. pre: D_i = rowsum(dO_i o O_i) (fp32) and LSE_i log2(e), both padded to T_r B_r rows a head
//      (D = 0, LSE = +inf past N, so that padded query rows get P = 0), so the producer fetches
//      them as aligned 256-byte bulk copies; each warp also zeroes its row's share of the fp32 dQ
//      accumulator (so that the zeroing is a kernel the DRAM counters see, where a cudaMemsetAsync
//      was not, and one launch fewer); deterministic: the per-query-block counters zeroed.
//   2. main: one thread block per key/value block K_j, V_j (B_c = 128 rows) of one head.
//      * warpgroup 0 (the producer; one of its threads): K_j, V_j once by TMA, then for every query
//        block i the block visits (causal: only i whose rows reach key block j) Q_i, dO_i (TMA),
//        LSE_i, D_i (bulk copies) into a ring of 4 stages at d = 64 in the default schedule, else 2
//        (FLASHSIM_FLASH2H_BWD_STAGES=2|deep; deep: 4 at d = 64, 3 at d = 128); mbarriers say full / empty;
//      * warpgroups 1 and 2 (consumers) own 64 key rows each; per query block (B_r = 64 rows; 128 at
//        d = 64 by default, below):
//          S^T  = K_j Q_i^T   (64, B_r)  wgmma, both operands in shared memory
//          dP^T = V_j dO_i^T  (64, B_r)  wgmma, issued with S^T, finishing while P^T is computed
//          P^T  = exp2(S^T scale log2e - LSE_i log2e) (masked: keys >= N, causal key > query)
//          dS^T = P^T o (dP^T - D_i)   (exactly 0 in a query row with one key: N = 1, causal row 0)
//          dV_j += P^T dO_i   (64, d)    wgmma, P^T from registers (A), dO_i transposed from smem
//          dK_j += dS^T Q_i   (64, d)    wgmma, dS^T from registers, Q_i transposed
//        dS^T also goes to shared memory (storage type, 128-byte swizzle, double-buffered); then
//          dQ_i += dS K_j     (B_r, d)   wgmma, A = dS^T read transposed, B = K_j transposed;
//        at d = 128 warpgroup w takes columns 64w..64w+63 of dQ_i over all 128 keys (the two
//        warpgroups meet at a named barrier once both halves of dS^T are written); at d = 64 each
//        warpgroup takes all of d over its own 64 keys (no cross-warpgroup barrier, twice the
//        atomics). The partial dQ_i is added into the fp32 accumulator in HBM with float2
//        atomics (red.global.add.v2.f32).
//      At the end dK_j (times scale) and dV_j are written once.
//      Deterministic mode (FLASHSIM_FLASH2H_BWD=deterministic): each (head, query block) has a
//      counter in HBM; a warpgroup of block j adds its dQ_i part only once every part of blocks
//      0..j-1 (and, at d = 64, of warpgroup 0 of block j) has been added, then bumps the counter:
//      the float additions happen in one fixed order, so dQ, dK, dV are bit-identical run to run.
//      Schedules (FLASHSIM_FLASH2H_BWD_SCHEDULE; default bulk-sum at d = 64, bulk-pipelined at
//      d = 128, the fastest measured): "plain" issues dV += P^T dO and dK += dS^T Q
//      together once dS^T is computed; "pipelined" issues dV as soon as P^T is packed, so that it
//      runs while dS^T is computed and stored. (Adding step n-1's dQ part while step n's S^T runs
//      made ptxas serialize every wgmma, C7514: an accumulator read across the loop's back edge.)
//      In both, a ring stage is released once dV and dK are done, before dQ_i finishes, and every
//      consumer thread releases it itself (the empty barrier counts 256 arrivals).
//      "bulk" and "bulk-pipelined" (atomic mode only): the same two, but each consumer warpgroup
//      stores its dQ_i part (B_r x 64 fp32, 16 KiB) into its own shared-memory tile in fragment
//      order, fences (async proxy), meets its warpgroup at a named barrier, and one thread adds the
//      tile into HBM with one cp.reduce.async.bulk .add.f32; that thread waits for the reduction to
//      have read the tile before the next step's ds_sync. The accumulator is then tiled (per head
//      and query block, one tile per warpgroup; at d = 64 the two key halves' tiles are summed by
//      the post pass), and post reads it back to row-major dQ. SRAM + 32 KiB (d = 128: 194 KiB).
//      "bulk-keys" (plain + bulk): each warpgroup takes dQ_i over its own 64 keys and all of d, as
//      at d = 64 (at d = 128 two m64n64 products one after the other, one tile each, 4 tiles in
//      smem: 226 KiB), so no barrier joins the two warpgroups within a step; warpgroup 1 starts
//      once warpgroup 0 has its first P^T, so their exponentials are offset.
//      "bulk-sum" (d = 64 only, with the writers): bulk-keys' products, but the two warpgroups'
//      parts of dQ_i are summed in one shared-memory tile (a ring of 4, 64 KiB): warpgroup 0
//      stores its part, warpgroup 1 adds its own into the same places, and one writer warp adds the
//      sum into HBM: 16 KiB of bulk reduction a step instead of 32 (L2 was the d = 64 backward's
//      busiest unit, cuda/NOTES.md), one accumulator copy instead of two, at the price of warpgroup
//      1 waiting for warpgroup 0's part (warpgroup 0 runs ahead by the stagger anyway).
//      Writers (FLASHSIM_FLASH2H_BWD_FLUSH=writers, the bulk schedules): the consumer warpgroup
//      only stores its dQ_i tile; warp 1 + w of the producer warpgroup adds consumer warpgroup w's
//      tiles (named barriers 10 + w: tile written, 13 + w: tile read). The consumers hand a tile
//      over after the next step's dS^T fence, so none of them waits for its tile stores to land or
//      for the others of its warpgroup, and none waits for the reduction to read the tile.
//      Every step builds its wgmma descriptors from the stage's by adding offsets.
//      Query rows a step (FLASHSIM_FLASH2H_BWD_BR=64|128; 128 with bulk-sum only, and its default
//      there: 4-10% faster than 64 on every d = 64 row measured, cuda/NOTES.md): at 128, S^T and
//      dP^T are 64 x 128 a warpgroup, dV and dK take 8 k-steps of 16 queries (the same steps in the
//      same order as two steps of 64, so dK and dV keep their bits), dQ_i goes out in two 64-query
//      halves (two summed tiles a step; the second half issued once dV and dK are done, so that
//      P^T's and dS^T's registers are free), the ring has 2 stages of 128 rows and dS^T one buffer.
//   3. post: dQ = scale * accumulator, rounded to the storage type (bulk schedules: from the tiles).
//
// Launch shape: main grid (T_c = ceil(N / 128), B * H) (causal, FLASHSIM_FLASH2H_ORDER=heavy: taken
//   block-major, key block 0 of every head first, hopper.cuh's grid_place), 384 threads: warpgroup 0 produces (24
//   registers a thread after setmaxnreg), warpgroups 1-2 consume (240). One thread block per SM.
// SRAM (dynamic shared memory, 128-byte swizzled panels 64 elements wide), e = 2 bytes:
//   K_j, V_j (B_c, d), both              d=128: 64 KiB   d=64: 32 KiB
//   Q_i, dO_i 2 stages x (B_r, d), all   d=128: 64 KiB   d=64: 32 KiB
//   dS^T 2 buffers x (B_c, B_r)          32 KiB
//   LSE_i, D_i 2 stages x B_r fp32       1 KiB
//   total (+1 KiB alignment)             d=128: 162 KiB  d=64: 98 KiB
//   the defaults add: d = 128 (bulk-pipelined) two dQ tiles (B_r x 64 fp32), 32 KiB: 194 KiB;
//   d = 64 (bulk-sum, B_r = 128): Q_i, dO_i 2 stages x (128, 64) (64 KiB), dS^T one buffer
//   (128 x 128, 32 KiB), LSE_i, D_i 2 KiB and the ring of 4 summed 64-row dQ tiles (64 KiB): 194 KiB
//   (with B_r = 64: 4 ring stages and 2 dS^T buffers, 195 KiB)
//   Registers per consumer thread: dK_j, dV_j (d / 2 fp32 each), S^T, dP^T, dQ part (32 fp32
//   each), P^T and dS^T as 16-bit A fragments (16 x 32-bit each).
// HBM traffic (per head, e bytes an element): pre: read O, dO (2 N d e), write D, LSE (8 N) and
//   the zeroed accumulator (4 N d a copy, padded rows in the bulk schedules);
//   main: read K, V once (2 N d e), per visited query block Q_i, dO_i (2 B_r d e) and LSE_i, D_i
//   (8 B_r): T_c (2 N d e + 8 N) in all (causal about half); dQ accumulator: T_c N d 4 bytes of
//   atomic adds or bulk reductions (d = 64 bulk-keys: twice; bulk-sum: once), mostly absorbed by
//   L2; write dK, dV (2 N d e);
//   post: read 4 N d, write N d e. Measured on the H200 (N = 8192, B H = 32 or 64): ~1.03 GB of
//   DRAM traffic a run, arithmetic-bound (cuda/NOTES.md, flash2h backward).
// Run/check: flashsim bench --variant flash2h --pass backward --seq 4096 --head-dim 128 ;
//   ctest -L gpu (flash2h backward vs the float64 reference, deterministic mode bit for bit)
#include <cmath>
#include <cstdlib>
#include <string>

#include "cuda/hopper.cuh"
#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

using namespace hopper;

constexpr int BR = 64;
// NWG consumer warpgroups of 64 key rows each: B_c = 64 NWG key rows a block. Two get 240
// registers a thread; three would get 160 (24 x 128 + 160 x 384 = 64,512 of the SM's 65,536) and
// measured 4-11% slower at d = 64 (cuda/NOTES.md), so the kernel is written for two.
constexpr int NWG = 2;
struct Warps {
    static constexpr int BC = 64 * NWG, CONSUMERS = 128 * NWG, THREADS = 128 * (NWG + 1);
    static constexpr int REGS = 240;
};
// Q_i / dO_i ring stages: 2, or (FLASHSIM_FLASH2H_BWD_STAGES=deep, the default schedules only) as
// many as shared memory allows beside the default schedule's tiles: 4 at d = 64, 3 at d = 128.
// Default: deep at d = 64 (bulk-keys or bulk-sum, not deterministic), 2 otherwise (measured, cuda/NOTES.md)
template <int D>
constexpr int deep_stages() {
    return D == 64 ? 4 : 3;
}
constexpr int PRODUCER_REGS = 24;
constexpr int SUM_BUFFERS = 4;  // bulk-sum's ring of summed dQ tiles (below)

// QB: query rows a step (B_r): 64, or 128 (FLASHSIM_FLASH2H_BWD_BR=128, bulk-sum at d = 64 only)
template <int D, int STAGES = 2, int QB = BR>
struct BwdSizes {
    static constexpr int BC = Warps::BC;
    static constexpr int PANELS = D / 64;
    static constexpr int KV_BYTES = BC * D * 2;   // K_j or V_j (B_c, d)
    static constexpr int QI_BYTES = QB * D * 2;   // Q_i or dO_i (B_r, d)
    static constexpr int DS_BYTES = BC * QB * 2;  // dS^T (B_c, B_r)
    static constexpr int ROW_BYTES = QB * 4;      // LSE_i or D_i (B_r) fp32
    // dS^T buffers: two by step parity; one at B_r = 128 (bulk-sum: a warpgroup reads back only its
    // own key rows, in its own dQ products, which it waits for before the next step's stores)
    static constexpr int DS_BUFS = QB == BR ? 2 : 1;
    // offsets from the 1024-aligned base (every swizzled tile starts on 1024 bytes)
    static constexpr int OFF_K = 0, OFF_V = KV_BYTES, OFF_Q = 2 * KV_BYTES, OFF_DO = OFF_Q + STAGES * QI_BYTES;
    static constexpr int OFF_DS = OFF_DO + STAGES * QI_BYTES, OFF_L = OFF_DS + DS_BUFS * DS_BYTES;
    static constexpr int OFF_D = OFF_L + STAGES * ROW_BYTES;
    static constexpr int SMEM = OFF_D + STAGES * ROW_BYTES + 1024;  // + room to align to 1024
    // schedules "bulk*": each consumer warpgroup's dQ_i part (B_r x 64 fp32) in fragment order
    static constexpr int DQ_BYTES = BR * 64 * 4;
    static constexpr int OFF_DQ = OFF_D + STAGES * ROW_BYTES;
    static constexpr int SMEM_BULK = OFF_DQ + 2 * DQ_BYTES + 1024;
    // "bulk-keys": each warpgroup its own keys' dQ_i part over all of d, one tile a 64-column panel
    static constexpr int SMEM_KEYS = OFF_DQ + NWG * PANELS * DQ_BYTES + 1024;
    // "bulk-sum" (d = 64): a ring of summed tiles
    static constexpr int SMEM_SUM = OFF_DQ + SUM_BUFFERS * DQ_BYTES + 1024;
};

// dQ additions: float2 atomics, bulk reduction of column halves (d = 128) / key halves (d = 64),
// bulk reduction of each warpgroup's own keys (both d; no cross-warpgroup barrier), or (d = 64)
// each warpgroup's own keys with the two parts summed in shared memory before one bulk reduction
enum DqMode { DQ_ATOMIC = 0, DQ_BULK = 1, DQ_KEYS = 2, DQ_SUM = 3 };
// tiles a (head, query block) in the tiled accumulator: key parts (one a consumer warpgroup, or
// one in all for bulk at d = 128) x column panels
template <int D, int M>
constexpr int key_parts() {
    return (D == 128 && M == DQ_BULK) || M == DQ_SUM ? 1 : NWG;
}

// bulk-sum's ring of summed dQ tiles in shared memory: step n uses buffer n % SUM_BUFFERS (with 2,
// warpgroup 0 waited for the writer two steps back and ran 3-7% slower than bulk-keys unmasked,
// cuda/NOTES.md). Its named barriers, one of each a buffer b: warpgroup 0 wrote its part (it
// arrives, warpgroup 1 waits: 256 threads); warpgroup 1 added its part (it arrives, the writer warp
// waits: 160); the writer has read the tile (it arrives, warpgroup 0 waits before writing the tile
// again: 160). A barrier is used again SUM_BUFFERS steps later only after the other two barriers of
// its buffer have been passed, so no thread arrives twice at a barrier still waiting for others.
// Ids: every one the other barriers of this schedule (0, 2, 3, 8) leave.
static_assert(SUM_BUFFERS == 4, "bulk-sum's barrier ids are laid out for 4 buffers");
__device__ __forceinline__ int bar_part_written(int b) {
    return b == 0 ? 1 : 3 + b;  // 1, 4, 5, 6
}
__device__ __forceinline__ int bar_summed(int b) {
    return b == 0 ? 7 : 8 + b;  // 7, 9, 10, 11
}
__device__ __forceinline__ int bar_tile_free(int b) { return 12 + b; }

// The bulk schedules' dQ accumulator: per head, per query block i, per consumer warpgroup w one
// tile of B_r x 64 fp32 in the warpgroup's fragment order (float4 k of thread x at k * 128 + x):
// the smem tile goes out as one contiguous bulk reduction. At d = 128 tile w holds columns
// 64w..64w+63; at d = 64 tile w holds the part of keys 64w..64w+63 (summed by post); bulk-keys at
// d = 128: tile 2w + p the part of warpgroup w's keys in column panel p.
constexpr int DQ_TILE = BR * 64;  // floats a tile

// ---- pre and post passes -------------------------------------------------------------------------

// D/8 lanes a padded row r of a head (T_r B_r rows; 16 bytes of O and of dO a lane, so a warp takes
// 4 rows at d = 64 and 2 at d = 128): D = sum_c dO[c] O[c] and LSE log2(e); past N D = 0 and LSE =
// +inf (P = 0 for those rows). The lanes zero the row's share of the dQ accumulator: tiled (bulk
// schedules), floats [r, r + 1) x KH d of the flat array (a query block's tiles are its B_r padded
// rows' shares, in order); row-major (atomics), row bh N + q when q < N. (The first version took a
// warp a row, 2-byte loads: at d = 64, twice the rows of d = 128 for the same bytes, it took 101 us
// where d = 128 took 72, cuda/NOTES.md.)
template <typename T, int D, int KH>
__global__ void flash2h_bwd_pre(const T* __restrict__ O, const T* __restrict__ dO, const float* __restrict__ LSE,
                                float* __restrict__ Dp, float* __restrict__ Lp, float4* __restrict__ dq_acc, int tiled,
                                int N, int Tpad, int heads) {
    constexpr int LPR = D / 8, RPW = 32 / LPR;  // lanes a row, rows a warp
    static_assert(LPR >= 1 && LPR <= 32 && 32 % LPR == 0, "pre: whole rows a warp");
    const int lane = threadIdx.x % 32, sub = lane % LPR;
    const int r = (blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32) * RPW + lane / LPR;
    const bool in = r < Tpad * heads;  // (no early return: the row's lanes meet in the shuffles below)
    const int bh = in ? r / Tpad : 0, q = in ? r % Tpad : 0;
    if (in) {
        constexpr int ROW4 = KH * D / 4;  // float4s of a padded row's share (tiled)
        const float4 zero = make_float4(0.f, 0.f, 0.f, 0.f);
        if (tiled) {
#pragma unroll
            for (int k = sub; k < ROW4; k += LPR) dq_acc[static_cast<size_t>(r) * ROW4 + k] = zero;
        } else if (q < N) {
#pragma unroll
            for (int k = sub; k < D / 4; k += LPR) dq_acc[(static_cast<size_t>(bh) * N + q) * (D / 4) + k] = zero;
        }
    }
    const bool live = in && q < N;
    const size_t row = static_cast<size_t>(bh) * N + q;
    float acc = 0.0f;
    if (live) {
        const uint4 ov = *reinterpret_cast<const uint4*>(O + row * D + sub * 8);
        const uint4 gv = *reinterpret_cast<const uint4*>(dO + row * D + sub * 8);
        const T* oe = reinterpret_cast<const T*>(&ov);
        const T* ge = reinterpret_cast<const T*>(&gv);
#pragma unroll
        for (int c = 0; c < 8; ++c) acc += StorageTraits<T>::to_float(oe[c]) * StorageTraits<T>::to_float(ge[c]);
    }
#pragma unroll
    for (int off = LPR / 2; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (in && sub == 0) {
        Dp[r] = live ? acc : 0.0f;
        Lp[r] = live ? LSE[row] * LOG2E : INFINITY;
    }
}

template <typename T>
__global__ void flash2h_bwd_post(const float4* __restrict__ acc, T* __restrict__ dQ, size_t count4, float scale) {
    for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < count4; k += size_t(gridDim.x) * blockDim.x) {
        const float4 a = acc[k];
        uint2 v;
        v.x = pack2<T>(a.x * scale, a.y * scale);
        v.y = pack2<T>(a.z * scale, a.w * scale);
        reinterpret_cast<uint2*>(dQ)[k] = v;
    }
}

// The tiled accumulator (bulk schedules) back to row-major dQ: one thread a float4 of a column
// panel's tile (KH > 1: plus the same float4 of the other key parts' tiles), i.e. two adjacent
// columns of two rows.
template <typename T, int D, int KH>
__global__ void flash2h_bwd_post_tiled(const float4* __restrict__ acc, T* __restrict__ dQ, int N, int T_r, int heads,
                                       float scale) {
    constexpr int TILES_OUT = D / 64;                        // column panels
    const size_t per_block4 = KH * TILES_OUT * DQ_TILE / 4;  // float4s a (head, query block)
    const size_t total = static_cast<size_t>(heads) * T_r * (TILES_OUT * DQ_TILE / 4);
    for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < total; k += size_t(gridDim.x) * blockDim.x) {
        const int f = static_cast<int>(k % (DQ_TILE / 4));  // float4 within the tile
        const size_t rest = k / (DQ_TILE / 4);
        const int w = static_cast<int>(rest % TILES_OUT);
        const size_t hb = rest / TILES_OUT;  // head * T_r + i
        const int i = static_cast<int>(hb % T_r);
        const size_t bh = hb / T_r;
        const float4* src = acc + hb * per_block4 + w * (DQ_TILE / 4) + f;
        float4 a = src[0];
#pragma unroll
        for (int kh = 1; kh < KH; ++kh) {  // the other key parts' tiles of this panel
            const float4 b = src[kh * TILES_OUT * DQ_TILE / 4];
            a.x += b.x;
            a.y += b.y;
            a.z += b.z;
            a.w += b.w;
        }
        const int x = f % 128, nb = f / 128;  // thread x of the warpgroup, its float4 nb
        const int wq = x / 32, g = (x % 32) / 4, t = x % 4;
        const int r0 = i * BR + wq * 16 + g, col = w * 64 + nb * 8 + 2 * t;
        T* base = dQ + bh * static_cast<size_t>(N) * D + col;
        if (r0 < N)
            *reinterpret_cast<uint32_t*>(base + static_cast<size_t>(r0) * D) = pack2<T>(a.x * scale, a.y * scale);
        if (r0 + 8 < N)
            *reinterpret_cast<uint32_t*>(base + static_cast<size_t>(r0 + 8) * D) = pack2<T>(a.z * scale, a.w * scale);
    }
}

// The same conversion staged through shared memory, one block a 64 x 64 tile (its KH key parts summed):
// the float4s read as above (coalesced), packed to the storage type into a padded (64, 64) tile (a
// row of 32 words plus 4, so a warp's pairs, 8 rows x 4 columns, fall in 32 distinct banks), then
// written out as whole 128-byte rows, 16 bytes a thread. The per-thread stores above write 4 bytes
// into each of 16 rows a warp instruction, and measured 1.8 TB/s (cuda/NOTES.md); the arithmetic and
// so the bits are the same.
template <typename T, int D, int KH>
__global__ void __launch_bounds__(256) flash2h_bwd_post_staged(const float4* __restrict__ acc, T* __restrict__ dQ,
                                                               int N, int T_r, int heads, float scale) {
    constexpr int TILES_OUT = D / 64;
    constexpr int F4 = DQ_TILE / 4;  // float4s a tile (1024)
    constexpr int STRIDE = 36;       // words a staged row: 32 + 4 of padding
    static_assert(BR == 64 && F4 % 256 == 0, "post: a 64-row tile, whole float4s a thread");
    __shared__ __align__(16) uint32_t tile[64 * STRIDE];
    const size_t per_block4 = KH * TILES_OUT * F4;
    const size_t tiles = static_cast<size_t>(heads) * T_r * TILES_OUT;
    for (size_t tl = blockIdx.x; tl < tiles; tl += gridDim.x) {
        const int w = static_cast<int>(tl % TILES_OUT);
        const size_t hb = tl / TILES_OUT;  // head * T_r + i
        const int i = static_cast<int>(hb % T_r);
        const size_t bh = hb / T_r;
        const float4* src = acc + hb * per_block4 + w * F4;
#pragma unroll
        for (int j = 0; j < F4 / 256; ++j) {
            const int f = threadIdx.x + 256 * j;
            float4 a = src[f];
#pragma unroll
            for (int kh = 1; kh < KH; ++kh) {
                const float4 b = src[kh * TILES_OUT * F4 + f];
                a.x += b.x;
                a.y += b.y;
                a.z += b.z;
                a.w += b.w;
            }
            const int x = f % 128, nb = f / 128;
            const int wq = x / 32, g = (x % 32) / 4, t = x % 4;
            const int lr = wq * 16 + g, lw = nb * 4 + t;  // local row, word (column pair) of the tile
            tile[lr * STRIDE + lw] = pack2<T>(a.x * scale, a.y * scale);
            tile[(lr + 8) * STRIDE + lw] = pack2<T>(a.z * scale, a.w * scale);
        }
        __syncthreads();
#pragma unroll
        for (int j = 0; j < 2; ++j) {  // 64 rows x 8 chunks of 16 bytes
            const int q = threadIdx.x + 256 * j, row = q / 8, c = q % 8;
            const int r = i * BR + row;
            if (r < N) {
                const uint4 v = *reinterpret_cast<const uint4*>(&tile[row * STRIDE + 4 * c]);
                *reinterpret_cast<uint4*>(dQ + (bh * static_cast<size_t>(N) + r) * D + w * 64 + c * 8) = v;
            }
        }
        __syncthreads();  // the tile is read before the next one overwrites it
    }
}

// A wgmma descriptor of a swizzled tile, and of the tile moved by `off` bytes: the tile's plus
// off >> 4 (the start address field holds (address & 0x3FFFF) >> 4 and no tile crosses 256 KiB,
// so this is the same as encoding the moved address, in one add instead of a mask, a shift and a
// conversion to a uniform register each time; measured 2-6% faster, cuda/NOTES.md)
struct Desc {
    uint64_t d;
    __device__ __forceinline__ Desc(uint32_t addr, uint32_t leading_bytes) : d(desc_sw128(addr, leading_bytes)) {}
    __device__ __forceinline__ uint64_t at(uint32_t off) const { return d + (off >> 4); }
};

__device__ __forceinline__ int load_acquire(const int* p) {
    int v;
    asm volatile("ld.acquire.gpu.global.s32 %0, [%1];" : "=r"(v) : "l"(p) : "memory");
    return v;
}

// The mbarriers of a block: K_j and V_j's (loaded once), and per ring stage the full and empty
// barriers of Q_i, dO_i, LSE_i, D_i (empty once every consumer thread has read the stage)
template <int STAGES>
struct BwdBars {
    uint64_t* bars;
    __device__ __forceinline__ uint32_t kv() const { return smem_addr(&bars[0]); }
    __device__ __forceinline__ uint32_t full(int s) const { return smem_addr(&bars[1 + s]); }
    __device__ __forceinline__ uint32_t empty(int s) const { return smem_addr(&bars[1 + STAGES + s]); }
};

// ---- the producer warpgroup's parts ----------------------------------------------------------------

// The producer thread: K_j and V_j once, then each step's Q_i, dO_i (TMA) and LSE_i, D_i (bulk
// copies) into the ring as its stages free.
template <class Z, int STAGES, int QB>
__device__ __forceinline__ void bwd_load(const CUtensorMap* tmQ, const CUtensorMap* tmK, const CUtensorMap* tmV,
                                         const CUtensorMap* tmdO, const float* __restrict__ Lp,
                                         const float* __restrict__ Dp, uint32_t base, const BwdBars<STAGES>& bb,
                                         int kv0, int bh, int Tpad, int i_first, int steps) {
    constexpr int BC = Z::BC;
    const uint32_t sK = base + Z::OFF_K, sV = base + Z::OFF_V, sQ = base + Z::OFF_Q, sdO = base + Z::OFF_DO;
    const uint32_t sL = base + Z::OFF_L, sD = base + Z::OFF_D;
    tma_prefetch_map(tmQ);
    tma_prefetch_map(tmdO);
    mbar_arrive_expect_tx(bb.kv(), 2 * Z::KV_BYTES);
    for (int p = 0; p < Z::PANELS; ++p) {
        tma_load_3d(sK + p * BC * 128, tmK, bb.kv(), 64 * p, kv0, bh);
        tma_load_3d(sV + p * BC * 128, tmV, bb.kv(), 64 * p, kv0, bh);
    }
    const float* Lh = Lp + static_cast<size_t>(bh) * Tpad;
    const float* Dh = Dp + static_cast<size_t>(bh) * Tpad;
    for (int n = 0; n < steps; ++n) {
        const int i = i_first + n, s = n % STAGES;
        if (n >= STAGES) mbar_wait(bb.empty(s), ((n / STAGES) & 1) ^ 1);
        mbar_arrive_expect_tx(bb.full(s), 2 * Z::QI_BYTES + 2 * Z::ROW_BYTES);
        for (int p = 0; p < Z::PANELS; ++p) {
            tma_load_3d(sQ + s * Z::QI_BYTES + p * QB * 128, tmQ, bb.full(s), 64 * p, i * QB, bh);
            tma_load_3d(sdO + s * Z::QI_BYTES + p * QB * 128, tmdO, bb.full(s), 64 * p, i * QB, bh);
        }
        bulk_load(sL + s * Z::ROW_BYTES, Lh + i * QB, Z::ROW_BYTES, bb.full(s));
        bulk_load(sD + s * Z::ROW_BYTES, Dh + i * QB, Z::ROW_BYTES, bb.full(s));
    }
}

// bulk-sum's writer warp: tile f (step f / HALVES, its 64-row half f % HALVES; buffer
// f % SUM_BUFFERS) into its 64-row block's one accumulator tile; every buffer starts free
template <class Z, int HALVES>
__device__ __forceinline__ void bwd_sum_writer(float* __restrict__ dQacc, uint32_t base, int lane, int bh, int T_r,
                                               int i_first, int steps) {
    const int tiles = steps * HALVES;
    for (int b = 0; b < SUM_BUFFERS && b < tiles; ++b) named_arrive(bar_tile_free(b), 160);
    for (int f = 0; f < tiles; ++f) {
        const int b = f % SUM_BUFFERS;
        named_sync(bar_summed(b), 160);
        if (lane == 0) {
            float* dst = dQacc + (static_cast<size_t>(bh) * T_r * HALVES + i_first * HALVES + f) * DQ_TILE;
            bulk_reduce_add_f32(dst, base + Z::OFF_DQ + b * Z::DQ_BYTES, Z::DQ_BYTES);
            bulk_commit();
            bulk_wait_read_all();
        }
        __syncwarp();
        if (f + SUM_BUFFERS < tiles) named_arrive(bar_tile_free(b), 160);
    }
    if (lane == 0) bulk_wait_all();  // the additions done before the block ends
}

// dQ writer of consumer warpgroup w: once the warpgroup has written (and fenced) a dQ_i tile it
// arrives at named barrier 10 + w; this warp's lane 0 adds the tile into HBM with one bulk
// reduction, waits until the reduction has read it, and the warp arrives at 13 + w (the tile is
// free again), where the warpgroup waits before writing its next tile
template <class Z, bool KEYS, int KH, int FLUSHES>
__device__ __forceinline__ void bwd_dq_writer(float* __restrict__ dQacc, uint32_t base, int w, int lane, int bh,
                                              int T_r, int i_first, int steps) {
    constexpr int NT = KH * Z::PANELS;
    named_arrive(13 + w, 160);
    for (int n = 0; n < steps; ++n)
        for (int f = 0; f < FLUSHES; ++f) {
            named_sync(10 + w, 160);
            if (lane == 0) {
                const int i = i_first + n, tl = KH > 1 ? w * Z::PANELS + f : w;
                float* dst = dQacc + ((static_cast<size_t>(bh) * T_r + i) * NT + tl) * DQ_TILE;
                bulk_reduce_add_f32(dst, base + Z::OFF_DQ + (KEYS ? tl : w) * Z::DQ_BYTES, Z::DQ_BYTES);
                bulk_commit();
                bulk_wait_read_all();
            }
            __syncwarp();
            if (n + 1 < steps || f + 1 < FLUSHES) named_arrive(13 + w, 160);
        }
    if (lane == 0) bulk_wait_all();  // the additions done before the block ends
}

// ---- the consumers' parts ------------------------------------------------------------------------

// One product group, issued and committed: acc (64 key rows, B_r) = rows (this warpgroup's 64 rows
// of K_j or V_j, K-major A) times the stage's Q_i or dO_i (K-major B, B_r rows) transposed; kk
// steps 16 of d. The first wgmma ignores acc's old contents.
template <typename T, int D, int QB, int BC>
__device__ __forceinline__ void bwd_issue_rows_by_q(float (&acc)[QB / 2], const Desc& rows, uint32_t stage) {
    const Desc b(stage, 16);
#pragma unroll
    for (int kk = 0; kk < D / 16; ++kk) {
        const uint64_t da = rows.at((kk / 4) * BC * 128 + (kk % 4) * 32),
                       db = b.at((kk / 4) * QB * 128 + (kk % 4) * 32);
        wgmma_ss<T, QB>(acc, da, db, kk > 0 ? 1 : 0);
    }
    wgmma_commit();
}

// P^T from S^T in place (accumulator element nb*4+e: key row kr + 8 (e>>1), query column
// nb*8 + 2t + (e&1)): exp2(S^T scale log2e - LSE_i log2e), 0 for keys >= N and causal key > query
// (masked only where the block of keys from kv0 reaches past N or past query q0)
template <bool CAUSAL, int NQ, int BC>
__device__ __forceinline__ void bwd_p_of_s(float (&st)[4 * NQ], const float* Ls, float scale_log2, int kv0, int kr,
                                           int q0, int t, int N) {
    const bool need_mask = kv0 + BC > N || (CAUSAL && kv0 + BC - 1 > q0);
#pragma unroll
    for (int nb = 0; nb < NQ; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const int qc = nb * 8 + 2 * t + (e & 1);
            float p = fast_exp2(fmaf(st[nb * 4 + e], scale_log2, -Ls[qc]));
            if (need_mask) {
                const int key = kr + (e >> 1) * 8;
                if (key >= N || (CAUSAL && key > q0 + qc)) p = 0.0f;
            }
            st[nb * 4 + e] = p;
        }
}

// dS^T as 16-bit A fragments (da), and into shared memory at dsb, swizzled as wgmma reads it
template <typename T, int KQ, int BC>
__device__ __forceinline__ void bwd_store_ds(uint32_t (&da)[KQ][4], const float (&dpt)[8 * KQ], unsigned char* dsb,
                                             int kr_local, int t) {
#pragma unroll
    for (int kk = 0; kk < KQ; ++kk) {
#pragma unroll
        for (int q = 0; q < 4; ++q) da[kk][q] = pack2<T>(dpt[8 * kk + 2 * q], dpt[8 * kk + 2 * q + 1]);
            // da[kk][q]: column block nb = 2 kk + (q >> 1), row half h = q & 1; panel nb / 8
#pragma unroll
        for (int q = 0; q < 4; ++q) {
            const int nb = 2 * kk + (q >> 1), r = kr_local + (q & 1) * 8;
            *reinterpret_cast<uint32_t*>(dsb + (nb >> 3) * BC * 128 + r * 128 + (((nb & 7) ^ (r & 7)) << 4) + 4 * t) =
                da[kk][q];
        }
    }
}

// dQ_i's part (B_r, 64) into the fp32 accumulator with float2 atomics (deterministic: in block
// order, each block waiting for its turn on the query block's counter)
template <int D, bool DETERMINISTIC>
__device__ __forceinline__ void bwd_flush_dq_atomic(float* dQh, int* __restrict__ counters, const float (&dq)[32],
                                                    int i, int j, int wg, int wq, int g, int t, int bh, int T_r, int N,
                                                    int dq_col0) {
    int* counter = DETERMINISTIC ? counters + static_cast<size_t>(bh) * T_r + i : nullptr;
    if constexpr (DETERMINISTIC) {
        const int turn = D == 128 ? 2 * j : 2 * j + wg;
        if (threadIdx.x % 128 == 0)
            while (load_acquire(counter) < turn) {}
        named_sync(5 + wg, 128);
    }
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = i * BR + wq * 16 + g + 8 * h;
        if (row < N) {
            float* dst = dQh + static_cast<size_t>(row) * D + dq_col0 + 2 * t;
#pragma unroll
            for (int nb = 0; nb < 8; ++nb)
                atomicAdd(reinterpret_cast<float2*>(dst + nb * 8),
                          make_float2(dq[nb * 4 + 2 * h], dq[nb * 4 + 2 * h + 1]));
        }
    }
    if constexpr (DETERMINISTIC) {
        __threadfence();
        named_sync(5 + wg, 128);
        if (threadIdx.x % 128 == 0) atomicAdd(counter, 1);
    }
}

// bulk schedules: the part into this warpgroup's smem tile (fragment order, conflict-free float4
// stores), then one thread adds the tile into HBM with one bulk reduction; it waits for the
// reduction to have read the tile before the next step's ds_sync (so before any thread writes the
// tile again). Accumulator tile tl (KH = 2: key half wg, column panel p; KH = 1: column panel wg).
template <class Z, bool WRITER, bool KEYS, int KH, int FLUSHES>
__device__ __forceinline__ void bwd_flush_dq_bulk(float* __restrict__ dQacc, unsigned char* gbase, uint32_t base,
                                                  const float (&dq)[32], int i, int p, int wg, int wtid, int bh,
                                                  int T_r) {
    constexpr int NT = KH * Z::PANELS;
    const int tl = KH > 1 ? wg * Z::PANELS + p : wg;
    const int st_tile = KEYS ? tl : wg;  // its shared-memory tile
    float4* tile = reinterpret_cast<float4*>(gbase + Z::OFF_DQ + st_tile * Z::DQ_BYTES);
    if constexpr (WRITER) named_sync(13 + wg, 160);  // the writer has read the last tile
#pragma unroll
    for (int k = 0; k < 8; ++k)
        tile[k * 128 + wtid] = make_float4(dq[4 * k], dq[4 * k + 1], dq[4 * k + 2], dq[4 * k + 3]);
    if constexpr (WRITER) {
        // the step's last tile is handed over after the next step's dS^T fence (which orders
        // these stores too), so that no thread waits here for its stores to land; another at once
        if (p + 1 < FLUSHES) {
            fence_proxy_async();
            named_arrive(10 + wg, 160);
        }
        return;
    }
    fence_proxy_async();  // the generic stores, before the bulk copy (async proxy) reads them
    named_sync(5 + wg, 128);
    if (wtid == 0) {
        float* dst = dQacc + ((static_cast<size_t>(bh) * T_r + i) * NT + tl) * DQ_TILE;
        bulk_reduce_add_f32(dst, base + Z::OFF_DQ + st_tile * Z::DQ_BYTES, Z::DQ_BYTES);
        bulk_commit();
    }
}

// bulk-sum: warpgroup 0 stores its part into buffer n % SUM_BUFFERS once the writer has read
// that buffer's last tile; warpgroup 1 adds its part into the same float4s (same fragment order, so each
// thread reads back what its twin of warpgroup 0 wrote) and hands the tile to the writer after
// the next step's dS^T fence (which orders these stores before the bulk reduction reads them)
template <class Z>
__device__ __forceinline__ void bwd_flush_dq_sum(unsigned char* gbase, const float (&part)[32], int n, int wg,
                                                 int wtid) {
    const int b = n % SUM_BUFFERS;
    float4* tile = reinterpret_cast<float4*>(gbase + Z::OFF_DQ + b * Z::DQ_BYTES);
    if (wg == 0) {
        named_sync(bar_tile_free(b), 160);
#pragma unroll
        for (int k = 0; k < 8; ++k)
            tile[k * 128 + wtid] = make_float4(part[4 * k], part[4 * k + 1], part[4 * k + 2], part[4 * k + 3]);
        named_arrive(bar_part_written(b), 256);
    } else {
        named_sync(bar_part_written(b), 256);
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float4 v = tile[k * 128 + wtid];
            v.x += part[4 * k];
            v.y += part[4 * k + 1];
            v.z += part[4 * k + 2];
            v.w += part[4 * k + 3];
            tile[k * 128 + wtid] = v;
        }
    }
}

// dK_j = scale * sum dS^T Q, dV_j = sum P^T dO: this thread's rows kr, kr + 8, written once
template <typename T, int D>
__device__ __forceinline__ void bwd_store_dkdv(T* __restrict__ dK, T* __restrict__ dV, const float (&dk)[D / 2],
                                               const float (&dv)[D / 2], int kr, int t, int bh, int N, float scale) {
    const size_t head = static_cast<size_t>(bh) * N * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        const int row = kr + 8 * h;
        if (row < N) {
            T* dkr = dK + head + static_cast<size_t>(row) * D + 2 * t;
            T* dvr = dV + head + static_cast<size_t>(row) * D + 2 * t;
#pragma unroll
            for (int nb = 0; nb < D / 8; ++nb) {
                *reinterpret_cast<uint32_t*>(dkr + nb * 8) =
                    pack2<T>(dk[nb * 4 + 2 * h] * scale, dk[nb * 4 + 2 * h + 1] * scale);
                *reinterpret_cast<uint32_t*>(dvr + nb * 8) = pack2<T>(dv[nb * 4 + 2 * h], dv[nb * 4 + 2 * h + 1]);
            }
        }
    }
}

// ---- the main kernel -----------------------------------------------------------------------------

template <typename T, int D, bool CAUSAL, bool DETERMINISTIC, bool PIPE, int DQM, int STAGES, bool WRITER, int QB>
__global__ void __launch_bounds__(Warps::THREADS, 1)
    flash2h_bwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                       const __grid_constant__ CUtensorMap tmV, const __grid_constant__ CUtensorMap tmdO,
                       const float* __restrict__ Lp, const float* __restrict__ Dp, float* __restrict__ dQacc,
                       int* __restrict__ counters, T* __restrict__ dK, T* __restrict__ dV, int N, int Tpad, float scale,
                       float scale_log2, int row0_alone, int heavy) {
    using Z = BwdSizes<D, STAGES, QB>;
    constexpr int BC = Z::BC;
    // query rows a step in 64-row halves: the summed dQ tiles (and the accumulator's tiles) stay
    // 64 rows, so a step of B_r = 128 hands two tiles to the writer
    constexpr int HALVES = QB / BR;
    static_assert(QB == BR || (QB == 2 * BR && DQM == DQ_SUM && !DETERMINISTIC && !PIPE),
                  "B_r = 128 is written for bulk-sum (d = 64) only");
    // SUM: bulk-keys' products, the two warpgroups' dQ_i parts summed in a shared tile (a ring of them)
    constexpr bool BULK = DQM != DQ_ATOMIC, SUM = DQM == DQ_SUM, KEYS = DQM == DQ_KEYS || SUM;
    constexpr int SMEM_USED = SUM ? Z::SMEM_SUM : KEYS ? Z::SMEM_KEYS : DQM == DQ_BULK ? Z::SMEM_BULK : Z::SMEM;
    static_assert(SMEM_USED + 64 <= sim::geometry::kMaxSmemPerBlock,
                  "more shared memory than a block may have (227 KiB)");
    static_assert(!WRITER || BULK, "the dQ writers add the bulk schedules' tiles");
    static_assert(!SUM || (D == 64 && WRITER && NWG == 2 && Z::SMEM_SUM >= Z::OFF_DQ + SUM_BUFFERS * Z::DQ_BYTES),
                  "bulk-sum: d = 64, two consumer warpgroups, a writer warp, its ring of tiles");
    // dQ tiles a consumer warpgroup adds a step (bulk-keys at d = 128: one a column panel)
    constexpr int FLUSHES = KEYS && D == 128 ? 2 : 1;
    constexpr int KH = key_parts<D, DQM>(), NT = KH * Z::PANELS;  // accumulator tiles a query block
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[1 + 2 * STAGES];
    const uint32_t raw = smem_addr(smem_raw);
    const uint32_t base = (raw + 1023u) & ~1023u;    // swizzle atoms need 1024-byte alignment
    unsigned char* gbase = smem_raw + (base - raw);  // the same place, as a generic pointer
    const uint32_t sK = base + Z::OFF_K, sV = base + Z::OFF_V, sQ = base + Z::OFF_Q, sdO = base + Z::OFF_DO;
    const uint32_t sdS = base + Z::OFF_DS;
    const BwdBars<STAGES> bb{bars};
    const uint32_t barKV = bb.kv();

    const GridPlace place = grid_place(heavy);  // key block 0 is a causal head's heaviest
    const int j = place.block, bh = place.head;
    const int kv0 = j * BC;
    const int T_r = (N + QB - 1) / QB;
    const int i_first = CAUSAL ? kv0 / QB : 0;  // the first query block with a row >= kv0
    const int steps = T_r - i_first;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;

    if (threadIdx.x == 0) {
        mbar_init(barKV, 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(bb.full(s), 1);
            mbar_init(bb.empty(s), Warps::CONSUMERS);  // every consumer thread releases its own reads
        }
        mbar_fence_init();
    }
    __syncthreads();

    if (warp < 4) {  // ---- producer warpgroup: one thread issues every copy
        setmaxnreg_dec<PRODUCER_REGS>();
        if (warp == 0 && lane == 0)
            bwd_load<Z, STAGES, QB>(&tmQ, &tmK, &tmV, &tmdO, Lp, Dp, base, bb, kv0, bh, Tpad, i_first, steps);
        else if (SUM && warp == 1)
            bwd_sum_writer<Z, HALVES>(dQacc, base, lane, bh, T_r, i_first, steps);
        else if (WRITER && !SUM && warp >= 1 && warp <= NWG)
            bwd_dq_writer<Z, KEYS, KH, FLUSHES>(dQacc, base, warp - 1, lane, bh, T_r, i_first, steps);
        return;
    }

    // ---- consumers: warpgroup wg owns key rows kv0 + 64 wg .. + 63; this thread rows kr, kr + 8
    setmaxnreg_inc<Warps::REGS>();
    const int wg = warp / 4 - 1, wq = warp % 4;
    const int g = lane / 4, t = lane % 4;
    const int kr_local = wg * 64 + wq * 16 + g;  // within the block's B_c rows
    const int kr = kv0 + kr_local;
    constexpr int NA = D / 2;  // dK_j / dV_j accumulator registers a thread: (64, d) over 128 threads
    float dk[NA], dv[NA];
#pragma unroll
    for (int k = 0; k < NA; ++k) dk[k] = dv[k] = 0.0f;
    constexpr int KQ = QB / 16, NQ = QB / 8;  // 16-query k steps, 8-query accumulator column blocks
    uint32_t pa[KQ][4], da[KQ][4];            // P^T and dS^T as A fragments, 16 query columns each

    // K-major A: this warpgroup's 64 rows of K_j (V_j); step kk = 16 of d
    const Desc ka_k(sK + wg * 64 * 128, 16), ka_v(sV + wg * 64 * 128, 16);
    // MN-major B: Q_i (dO_i) read transposed, the reduction over its 64 rows (stage: Desc(stage
    // start, B_r 128)); kk = 16 rows
    auto descQt = [&](const Desc& stage, int kk) { return stage.at(kk * 16 * 128); };
    // MN-major A: dS^T (B_c, B_r) of buffer b read transposed (M = 64 queries = panel h); kk = 16 keys
    auto descdS = [&](int b, int kk, int h = 0) {
        return Desc(sdS + b * Z::DS_BYTES + h * BC * 128, BC * 128).at(kk * 16 * 128);
    };
    // MN-major B: K_j read transposed, panel p (64 columns of d); kk = 16 keys
    auto descKt = [&](int p, int kk) { return desc_sw128(sK + p * BC * 128 + kk * 16 * 128, BC * 128); };

    // the two consumer warpgroups (d = 128), or this one alone (d = 64), after dS^T is in smem
    auto ds_sync = [&]() {
        if constexpr (D == 128 && !KEYS)
            named_sync(1, 256);
        else
            named_sync(2 + wg, 128);
    };

    float* dQh = dQacc + static_cast<size_t>(bh) * N * D;
    const int dq_col0 = D == 128 ? wg * 64 : 0;
    float dq[32];  // this warpgroup's part of dQ_i (B_r, 64)
    // dQ_i's part into the fp32 accumulator: atomics, a bulk reduction of a tile, or bulk-sum's ring
    auto flush_dq = [&](int i) {
        bwd_flush_dq_atomic<D, DETERMINISTIC>(dQh, counters, dq, i, j, wg, wq, g, t, bh, T_r, N, dq_col0);
    };
    const int wtid = threadIdx.x % 128;
    auto flush_dq_bulk = [&](int i, int p) {
        bwd_flush_dq_bulk<Z, WRITER, KEYS, KH, FLUSHES>(dQacc, gbase, base, dq, i, p, wg, wtid, bh, T_r);
    };
    auto flush_dq_sum = [&](int n, const float(&part)[32]) { bwd_flush_dq_sum<Z>(gbase, part, n, wg, wtid); };
    auto issue_dv = [&](const Desc& dot) {
#pragma unroll
        for (int kk = 0; kk < KQ; ++kk) wgmma_rs<T, D>(dv, pa[kk], descQt(dot, kk), 1);
    };

    mbar_wait(barKV, 0);
    // bulk-keys: no barrier joins the warpgroups in a step; warpgroup w > 0 starts once warpgroup
    // w - 1 has its first P^T (named barrier 7 + w), so that their exponentials are offset and one's
    // could run under the others' products. Measured on the H200 (bulk-sum, d = 64) they do not:
    // the tensor pipe is busy 50.8% of the cycles, the products' share of the step's parts summed
    // (cuda/NOTES.md, "flash2h backward at d = 64: the step is the sum of its parts")
    if constexpr (KEYS)
        if (wg > 0) named_sync(7 + wg, 256);
    for (int n = 0; n < steps; ++n) {
        const int i = i_first + n, s = n % STAGES, q0 = i * QB;
        mbar_wait(bb.full(s), (n / STAGES) & 1);
        const uint32_t qs = sQ + s * Z::QI_BYTES, dos = sdO + s * Z::QI_BYTES;
        const Desc dot(dos, QB * 128), qt(qs, QB * 128);

        // S^T = K_j Q_i^T and dP^T = V_j dO_i^T, two groups in flight. The accumulators are
        // fresh each step (the first wgmma ignores them): declared here, so that they are not
        // kept alive across steps.
        float st[4 * NQ], dpt[4 * NQ];
        wgmma_fence();
        bwd_issue_rows_by_q<T, D, QB, BC>(st, ka_k, qs);
        bwd_issue_rows_by_q<T, D, QB, BC>(dpt, ka_v, dos);
        // LSE_i and D_i are read from shared memory where they are used (reading them into 32
        // registers while S^T runs was measured 2-4% slower, cuda/NOTES.md)
        const float* Ls = reinterpret_cast<const float*>(gbase + Z::OFF_L + s * Z::ROW_BYTES);
        const float* Ds = reinterpret_cast<const float*>(gbase + Z::OFF_D + s * Z::ROW_BYTES);
        wgmma_wait<1>();
        fence_regs(st);

        // P^T (accumulator element nb*4+e: key row kr + 8 (e>>1), query column nb*8 + 2t + (e&1))
        bwd_p_of_s<CAUSAL, NQ, BC>(st, Ls, scale_log2, kv0, kr, q0, t, N);
        // P^T as 16-bit A fragments (same places as the accumulators); at B_r = 128 after dS^T,
        // so that P^T's fp32 and 16-bit copies are not both held beside S^T and dP^T
        auto pack_p = [&]() {
#pragma unroll
            for (int kk = 0; kk < KQ; ++kk)
#pragma unroll
                for (int q = 0; q < 4; ++q) pa[kk][q] = pack2<T>(st[8 * kk + 2 * q], st[8 * kk + 2 * q + 1]);
            if constexpr (KEYS)
                if (wg < NWG - 1 && n == 0) named_arrive(8 + wg, 256);
        };
        if constexpr (QB == BR) pack_p();
        if constexpr (PIPE) {  // dV_j += P^T dO_i runs while dS^T is computed
            fence_regs(dv);
            wgmma_fence();
            issue_dv(dot);
            wgmma_commit();
            wgmma_wait<1>();  // dP^T done; dV may run on
        } else {
            wgmma_wait<0>();
        }
        fence_regs(dpt);
#pragma unroll
        for (int nb = 0; nb < NQ; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e)
                dpt[nb * 4 + e] = st[nb * 4 + e] * (dpt[nb * 4 + e] - Ds[nb * 8 + 2 * t + (e & 1)]);
        if constexpr (QB != BR) pack_p();
        // Query row 0 has one key when N = 1 or under the causal mask: its softmax is the constant 1,
        // so its dS is exactly 0 (dP - D would leave the rounding of two sums taken in other orders).
        // Row 0 is query column 0 of block 0: elements e = 0, 2 of nb = 0 in the threads with t = 0.
        // row0_alone is 0 when the row attends keys outside this call too (ring attention's blocks).
        if (q0 == 0 && row0_alone && t == 0) {
            dpt[0] = 0.0f;
            dpt[2] = 0.0f;
        }
        // dS^T as A fragments, and into shared memory
        const int dsbuf = Z::DS_BUFS == 2 ? (n & 1) : 0;
        bwd_store_ds<T, KQ, BC>(da, dpt, gbase + Z::OFF_DS + dsbuf * Z::DS_BYTES, kr_local, t);
        fence_proxy_async();
        // (writers) this fence also ordered the last step's dQ tile stores: hand that tile over
        if constexpr (SUM) {
            if (n > 0 && wg == 1)
#pragma unroll
                for (int h = 0; h < HALVES; ++h) named_arrive(bar_summed(((n - 1) * HALVES + h) % SUM_BUFFERS), 160);
        } else if constexpr (WRITER) {
            if (n > 0) named_arrive(10 + wg, 160);
        }

        // (dV_j += P^T dO_i,) dK_j += dS^T Q_i
        if constexpr (!PIPE) fence_regs(dv);
        fence_regs(dk);
        wgmma_fence();
        if constexpr (!PIPE) issue_dv(dot);
#pragma unroll
        for (int kk = 0; kk < KQ; ++kk) wgmma_rs<T, D>(dk, da[kk], descQt(qt, kk), 1);
        wgmma_commit();

        // dQ_i (part) = dS K_j
        if constexpr (BULK && !WRITER)
            if (wtid == 0) bulk_wait_read_all();  // the last step's tile is free again
        ds_sync();
        wgmma_fence();
        if constexpr (D == 128 && !KEYS) {
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk)
                wgmma_ss<T, 64, 1, 1>(dq, descdS(dsbuf, kk), descKt(wg, kk), kk > 0 ? 1 : 0);
        } else {  // over this warpgroup's keys (B_r = 128: the first 64-query half)
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma_ss<T, 64, 1, 1>(dq, descdS(dsbuf, wg * 4 + kk), descKt(0, wg * 4 + kk), kk > 0 ? 1 : 0);
        }
        wgmma_commit();
        wgmma_wait<1>();  // dV and dK done (dQ may run on)
        fence_regs(dv);
        fence_regs(dk);
#pragma unroll
        for (int kk = 0; kk < KQ; ++kk) {
            fence_regs(pa[kk]);
            fence_regs(da[kk]);
        }
        mbar_arrive(bb.empty(s));  // this thread has read Q_i, dO_i, LSE_i, D_i of this stage
        if constexpr (HALVES == 2) {
            // bulk-sum at B_r = 128: the second 64-query half, issued only now that dV and dK are done
            // (P^T's and dS^T's registers free; issued beside them, ptxas serialized every wgmma,
            // C7512), runs while the first half is summed and handed over as its own tile
            float dq2[32];
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma_ss<T, 64, 1, 1>(dq2, descdS(dsbuf, wg * 4 + kk, 1), descKt(0, wg * 4 + kk), kk > 0 ? 1 : 0);
            wgmma_commit();
            wgmma_wait<1>();
            fence_regs(dq);
            flush_dq_sum(n * HALVES, dq);
            wgmma_wait<0>();
            fence_regs(dq2);
            flush_dq_sum(n * HALVES + 1, dq2);
        } else {
            wgmma_wait<0>();
            fence_regs(dq);
            if constexpr (SUM)
                flush_dq_sum(n, dq);
            else if constexpr (BULK)
                flush_dq_bulk(i, 0);
            else
                flush_dq(i);
        }
        if constexpr (KEYS && D == 128) {  // this warpgroup's keys, columns 64..127
            wgmma_fence();
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma_ss<T, 64, 1, 1>(dq, descdS(dsbuf, wg * 4 + kk), descKt(1, wg * 4 + kk), kk > 0 ? 1 : 0);
            wgmma_commit();
            wgmma_wait<0>();
            fence_regs(dq);
            flush_dq_bulk(i, 1);
        }
    }
    if constexpr (SUM) {  // the last step's tiles
        if (wg == 1) {
            fence_proxy_async();
#pragma unroll
            for (int h = 0; h < HALVES; ++h) named_arrive(bar_summed(((steps - 1) * HALVES + h) % SUM_BUFFERS), 160);
        }
    } else if constexpr (WRITER) {  // the last step's tile
        fence_proxy_async();
        named_arrive(10 + wg, 160);
    } else if constexpr (BULK) {
        if (wtid == 0) bulk_wait_all();  // the tile is read (and added) before the block ends
    }

    bwd_store_dkdv<T, D>(dK, dV, dk, dv, kr, t, bh, N, scale);
}

// ---- host side ---------------------------------------------------------------------------------

// FLASHSIM_FLASH2H_BWD=deterministic: dQ added in a fixed order (bit-identical runs).
bool deterministic() {
    const char* e = sim::knob("FLASHSIM_FLASH2H_BWD");
    return e != nullptr && std::string(e) == "deterministic";
}

// FLASHSIM_FLASH2H_BWD_POST=staged|plain: how the bulk schedules' tiled fp32 dQ becomes dQ: through
// a shared-memory tile written out as whole rows (staged, the default) or by each thread's own
// 4-byte stores (plain, the first version). Same bits either way.
bool post_staged() {
    const char* e = sim::knob("FLASHSIM_FLASH2H_BWD_POST");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "staged") return true;
    if (v == "plain") return false;
    throw std::runtime_error("FLASHSIM_FLASH2H_BWD_POST must be staged or plain (got '" + v +
                             "'): how flash2h's backward converts its tiled dQ accumulator; unset it for staged");
}

// FLASHSIM_FLASH2H_BWD_SCHEDULE=plain|pipelined|bulk|bulk-pipelined: "pipelined" issues
// dV += P^T dO before dS^T is computed; "plain" (v1) issues it with dK. "bulk" and
// "bulk-pipelined" are these two with dQ_i's parts added into HBM by one bulk reduction a
// warpgroup (cp.reduce.async.bulk from a shared-memory tile) instead of every consumer thread's
// float2 atomics; "bulk-keys" is "bulk" with each warpgroup's dQ over its own keys and the two
// warpgroups offset; "bulk-sum" (d = 64, with the writers) is bulk-keys with the two warpgroups'
// parts summed in a shared-memory tile, so that one bulk reduction of 16 KiB a step goes to L2
// instead of two. Deterministic mode keeps its ordered atomics (bulk* there = plain / pipelined).
// Default (unset or "default"): the fastest measured on the H200 (cuda/NOTES.md): bulk-sum at
// d = 64 (1-5% faster than bulk-keys on all six rows N = 4096-16384), bulk-pipelined at d = 128.
struct Schedule {
    bool pipe = false, bulk = false, keys = false;
    bool sum = false;      // bulk-sum: keys, the two parts summed in shared memory (d = 64)
    bool deep = false;     // FLASHSIM_FLASH2H_BWD_STAGES=deep: deep_stages<D>() ring stages, else 2
    bool writers = false;  // FLASHSIM_FLASH2H_BWD_FLUSH=writers: dQ tiles added by producer warps
    int qb = BR;           // FLASHSIM_FLASH2H_BWD_BR=64|128: query rows a step (128: bulk-sum only, the default there)
};
// Whether the bulk schedules hand their dQ tiles to writer warps unless told (cuda/NOTES.md)
constexpr bool kWritersByDefault = true;
Schedule schedule(int64_t head_dim) {
    const char* e = sim::knob("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "default") v = head_dim == 64 ? "bulk-sum" : "bulk-pipelined";
    Schedule c;
    c.pipe = v == "pipelined" || v == "bulk-pipelined";
    c.bulk = v == "bulk" || v == "bulk-pipelined" || v == "bulk-keys" || v == "bulk-sum";
    c.keys = v == "bulk-keys" || v == "bulk-sum";
    c.sum = v == "bulk-sum";
    if (!c.pipe && !c.bulk && v != "plain")
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_BWD_SCHEDULE must be default, plain, pipelined, bulk, bulk-pipelined, "
            "bulk-keys or bulk-sum (got '" +
            v + "')");
    if (c.sum && head_dim != 64)
        throw std::runtime_error("FLASHSIM_FLASH2H_BWD_SCHEDULE=bulk-sum is written for d = 64 (got d = " +
                                 std::to_string(head_dim) + "); use bulk-keys or the default at d = 128");
    const char* st = sim::knob("FLASHSIM_FLASH2H_BWD_STAGES");
    const std::string sv = st != nullptr ? st : "";
    if (sv == "deep") {
        // shared memory holds the deeper ring beside the default schedule's tiles only
        const bool is_default = head_dim == 64 ? c.keys : v == "bulk-pipelined";
        if (!is_default || deterministic())
            throw std::runtime_error(
                "FLASHSIM_FLASH2H_BWD_STAGES=deep needs the default schedule (bulk-keys or bulk-sum at d = 64, "
                "bulk-pipelined at d = 128) and not deterministic mode; unset FLASHSIM_FLASH2H_BWD_SCHEDULE / "
                "FLASHSIM_FLASH2H_BWD");
        c.deep = true;
    } else if (sv.empty() || sv == "default") {
        // measured (cuda/NOTES.md, "a deeper ring in the backward"): 4 stages 1-8% faster at d = 64,
        // 3 stages 1-10% slower at d = 128
        c.deep = head_dim == 64 && c.keys && !deterministic();
    } else if (sv != "2") {
        throw std::runtime_error("FLASHSIM_FLASH2H_BWD_STAGES must be 2 or deep (got '" + sv + "')");
    }
    const char* f = sim::knob("FLASHSIM_FLASH2H_BWD_FLUSH");
    const std::string fv = f != nullptr ? f : "";
    const bool bulk_atomic = c.bulk && !deterministic();  // where dQ goes out as bulk reductions
    if (fv == "writers") {
        if (!bulk_atomic)
            throw std::runtime_error(
                "FLASHSIM_FLASH2H_BWD_FLUSH=writers needs a bulk schedule (bulk, bulk-pipelined, bulk-keys, bulk-sum; "
                "the "
                "defaults) and not deterministic mode; unset it or set consumers");
        c.writers = true;
    } else if (fv.empty() || fv == "default") {
        c.writers = bulk_atomic && kWritersByDefault;
    } else if (fv != "consumers") {
        throw std::runtime_error("FLASHSIM_FLASH2H_BWD_FLUSH must be consumers or writers (got '" + fv + "')");
    }
    if (c.sum && !c.writers && !deterministic())
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_BWD_SCHEDULE=bulk-sum hands its summed tiles to a writer warp: unset "
            "FLASHSIM_FLASH2H_BWD_FLUSH or set it to writers");
    const char* b = sim::knob("FLASHSIM_FLASH2H_BWD_BR");
    const std::string bv = b != nullptr ? b : "";
    // default: 128 where it runs (bulk-sum, not deterministic) unless the deep ring of 64-row stages
    // was asked for; measured 4-10% faster than 64 on all ten d = 64 rows (cuda/NOTES.md)
    const bool br128_default = (bv.empty() || bv == "default") && c.sum && !deterministic() && sv != "deep";
    if (bv == "128" || br128_default) {
        // two query halves a step: written for bulk-sum's summed tiles, with 2 ring stages of 128 rows
        if (!c.sum || deterministic() || sv == "deep")
            throw std::runtime_error(
                "FLASHSIM_FLASH2H_BWD_BR=128 is written for d = 64's default schedule (bulk-sum, 2 ring stages of 128 "
                "query rows) and not deterministic mode; unset FLASHSIM_FLASH2H_BWD_SCHEDULE, "
                "FLASHSIM_FLASH2H_BWD_STAGES and FLASHSIM_FLASH2H_BWD, or set FLASHSIM_FLASH2H_BWD_BR=64");
        c.qb = 128;
        c.deep = false;  // 2 stages of 128 rows: the bytes of 4 stages of 64
    } else if (!bv.empty() && bv != "64" && bv != "default") {
        throw std::runtime_error("FLASHSIM_FLASH2H_BWD_BR must be 64 or 128 (got '" + bv + "')");
    }
    return c;
}

// The workspace launch_bwd holds for problem p in the schedule and mode it will run: the fp32 dQ
// accumulator (row-major, or the bulk schedules' tiles: B_r x 64 per key half and column panel),
// D and LSE log2(e) over padded rows, the deterministic mode's counters. Read by the harness's
// memory probe (bench --fit), which allocates it without running the kernel.
// The fp32 dQ accumulator copies the schedule keeps (the host's key_parts<D, DQM>()): the bulk
// schedules one a key part (two warpgroups' own keys, or d = 64's key halves) unless the parts are
// column halves (d = 128 bulk*) or summed in shared memory (bulk-sum); atomics and deterministic
// mode one row-major accumulator.
int64_t dq_copies(int64_t head_dim, bool det, const Schedule& sc) {
    const bool bulk = sc.bulk && !det;
    return bulk && !sc.sum && (sc.keys || head_dim == 64) ? 2 : 1;
}

int64_t workspace_bytes(const sim::Problem& p, bool det, const Schedule& sc) {
    const int64_t N = p.seq, D = p.head_dim, BH = p.heads_total();
    const int64_t T_r = (N + sc.qb - 1) / sc.qb, padded = BH * T_r * sc.qb;
    const bool bulk = !det && sc.bulk;
    const int64_t acc = bulk ? padded * dq_copies(D, det, sc) * D * 4 : BH * N * D * 4;
    return acc + padded * 8 + BH * T_r * 4 + 4;
}

template <typename T, int D, bool CAUSAL, bool DET, bool PIPE, int DQM, int STAGES = 2, bool WRITER = false,
          int QB = BR>
void launch_bwd(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    constexpr int BC = Warps::BC;
    const int N = static_cast<int>(p.seq);
    const int BH = static_cast<int>(p.heads_total());
    // T_r query blocks of QB rows; the padded rows (LSE_i, D_i, the tiled accumulator) a multiple of QB
    const int T_r = (N + QB - 1) / QB, T_c = (N + BC - 1) / BC, Tpad = T_r * QB;
    const size_t elems = static_cast<size_t>(BH) * N * D, padded = static_cast<size_t>(BH) * Tpad;
    // dQ accumulator (fp32): row-major, or (bulk) two B_r x 64 tiles a (head, query block)
    constexpr bool BULK = DQM != DQ_ATOMIC;
    constexpr int KH = key_parts<D, DQM>();
    const bool staged = post_staged();  // (read before any launch: a bad value stops the call here)
    const size_t acc_bytes = BULK ? padded * KH * D * 4 : elems * 4;
    ws.a.ensure(acc_bytes);
    ws.b.ensure(padded * 8);                             // D, then LSE log2(e), padded rows
    ws.c.ensure(static_cast<size_t>(BH) * T_r * 4 + 4);  // deterministic: counters
    float* Dp = ws.b.as<float>();
    float* Lp = Dp + padded;
    if (DET) CUDA_CHECK(cudaMemsetAsync(ws.c.get(), 0, static_cast<size_t>(BH) * T_r * 4, s));
    constexpr int kPreRows = 8 * (32 / (D / 8));  // rows a block of 8 warps (pre pass)
    flash2h_bwd_pre<T, D, KH><<<static_cast<unsigned>((padded + kPreRows - 1) / kPreRows), 256, 0, s>>>(
        static_cast<const T*>(t.O), static_cast<const T*>(t.dO), t.LSE, Dp, Lp, ws.a.as<float4>(), BULK ? 1 : 0, N,
        Tpad, BH);
    LAUNCH_CHECK();

    using Z = BwdSizes<D, STAGES, QB>;
    constexpr int smem = DQM == DQ_SUM ? Z::SMEM_SUM : DQM == DQ_KEYS ? Z::SMEM_KEYS : BULK ? Z::SMEM_BULK : Z::SMEM;
    auto kernel = flash2h_bwd_kernel<T, D, CAUSAL, DET, PIPE, DQM, STAGES, WRITER, QB>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const CUtensorMap mq = make_map<T>(t.Q, p, QB), mk = make_map<T>(t.K, p, BC), mv = make_map<T>(t.V, p, BC),
                      mdo = make_map<T>(t.dO, p, QB);
    const float scale = static_cast<float>(p.softmax_scale());
    kernel<<<dim3(T_c, BH), Warps::THREADS, smem, s>>>(
        mq, mk, mv, mdo, Lp, Dp, ws.a.as<float>(), ws.c.as<int>(), static_cast<T*>(t.dK), static_cast<T*>(t.dV), N,
        Tpad, scale, scale * LOG2E, (p.causal || N == 1) && !t.keys_elsewhere ? 1 : 0, heavy_first(CAUSAL));
    LAUNCH_CHECK();
    if constexpr (BULK) {
        if (staged)  // a grid that fills every SM once (2048 threads an SM on Hopper), striding over the tiles
            flash2h_bwd_post_staged<T, D, KH><<<sm_count() * (2048 / 256), 256, 0, s>>>(
                reinterpret_cast<const float4*>(ws.a.get()), static_cast<T*>(t.dQ), N, Tpad / BR, BH, scale);
        else
            flash2h_bwd_post_tiled<T, D, KH><<<2048, 256, 0, s>>>(reinterpret_cast<const float4*>(ws.a.get()),
                                                                  static_cast<T*>(t.dQ), N, Tpad / BR, BH, scale);
    } else
        flash2h_bwd_post<T>
            <<<2048, 256, 0, s>>>(reinterpret_cast<const float4*>(ws.a.get()), static_cast<T*>(t.dQ), elems / 4, scale);
    LAUNCH_CHECK();
}

// the bulk schedules with the dQ writers or without
template <typename T, int D, bool CAUSAL, bool PIPE, int DQM, int STAGES = 2>
void launch_w(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s, bool writers) {
    if (writers)
        launch_bwd<T, D, CAUSAL, false, PIPE, DQM, STAGES, true>(p, t, ws, s);
    else
        launch_bwd<T, D, CAUSAL, false, PIPE, DQM, STAGES, false>(p, t, ws, s);
}

template <typename T, int D, bool CAUSAL>
void launch_c(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    const bool det = deterministic();
    const Schedule sc = schedule(D);
    const bool w = sc.writers;
    if (det && sc.pipe)
        launch_bwd<T, D, CAUSAL, true, true, DQ_ATOMIC>(p, t, ws, s);
    else if (det)
        launch_bwd<T, D, CAUSAL, true, false, DQ_ATOMIC>(p, t, ws, s);
    else if (sc.deep) {  // the default schedule with the deeper ring
        if constexpr (D == 64) {
            if (sc.sum)
                launch_bwd<T, D, CAUSAL, false, false, DQ_SUM, deep_stages<D>(), true>(p, t, ws, s);
            else
                launch_w<T, D, CAUSAL, false, DQ_KEYS, deep_stages<D>()>(p, t, ws, s, w);
        } else {
            launch_w<T, D, CAUSAL, true, DQ_BULK, deep_stages<D>()>(p, t, ws, s, w);
        }
    } else if (sc.sum) {
        if constexpr (D == 64) {
            if (sc.qb == 128)
                launch_bwd<T, D, CAUSAL, false, false, DQ_SUM, 2, true, 128>(p, t, ws, s);
            else
                launch_bwd<T, D, CAUSAL, false, false, DQ_SUM, 2, true>(p, t, ws, s);
        }
    } else if (sc.keys)
        launch_w<T, D, CAUSAL, false, DQ_KEYS>(p, t, ws, s, w);
    else if (sc.bulk && sc.pipe)
        launch_w<T, D, CAUSAL, true, DQ_BULK>(p, t, ws, s, w);
    else if (sc.bulk)
        launch_w<T, D, CAUSAL, false, DQ_BULK>(p, t, ws, s, w);
    else if (sc.pipe)
        launch_bwd<T, D, CAUSAL, false, true, DQ_ATOMIC>(p, t, ws, s);
    else
        launch_bwd<T, D, CAUSAL, false, false, DQ_ATOMIC>(p, t, ws, s);
}

template <typename T, int D>
void launch_d(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    if (p.causal)
        launch_c<T, D, true>(p, t, ws, s);
    else
        launch_c<T, D, false>(p, t, ws, s);
}

}  // namespace

TileConfig flash2h_bwd_tiles(const sim::Problem& p) {
    if (p.head_dim != 64 && p.head_dim != 128)
        throw std::runtime_error("flash2h backward: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) +
                                 ")");
    TileConfig c;
    c.variant = "flash2h";
    c.algo = "flash2";
    c.loop_order = "kv_outer";
    const bool det = deterministic();
    const Schedule sc = schedule(p.head_dim);
    (void)post_staged();  // a bad FLASHSIM_FLASH2H_BWD_POST is refused here, before anything runs
    c.stages = sc.deep ? (p.head_dim == 64 ? deep_stages<64>() : deep_stages<128>()) : 2;
    c.block_rows = sc.qb;
    c.block_cols = Warps::BC;
    c.threads = Warps::THREADS;
    static const char* const layouts[8] = {
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; dQ in block order",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; pipelined",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; pipelined, dQ in block order",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; dQ by bulk reduction",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; pipelined, dQ by bulk reduction",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; dQ over own keys by bulk reduction, "
        "staggered",
        "2 consumer warpgroups x 64 key rows (wgmma), 1 TMA producer warpgroup; dQ over own keys, the two parts "
        "summed in shared memory, one bulk reduction, staggered"};
    const bool bulk = sc.bulk && !det;
    const bool keys = bulk && sc.keys;
    const bool sum = keys && sc.sum;
    c.layout = layouts[sum ? 7 : keys ? 6 : bulk ? 4 + (sc.pipe ? 1 : 0) : (det ? 1 : 0) + (sc.pipe ? 2 : 0)];
    c.dq = bulk ? sim::DqSchedule::bulk_reduction : det ? sim::DqSchedule::block_order : sim::DqSchedule::atomics;
    // the tiled accumulator's key parts (key_parts): each a whole fp32 copy of dQ, summed by post
    c.dq_copies = static_cast<int>(dq_copies(p.head_dim, det, sc));
    if (sc.deep)  // the default schedules only (schedule() refuses the others)
        c.smem_bytes = p.head_dim == 128 ? BwdSizes<128, deep_stages<128>()>::SMEM_BULK
                       : sum             ? BwdSizes<64, deep_stages<64>()>::SMEM_SUM
                                         : BwdSizes<64, deep_stages<64>()>::SMEM_KEYS;
    else if (p.head_dim == 128)
        c.smem_bytes = keys ? BwdSizes<128>::SMEM_KEYS : bulk ? BwdSizes<128>::SMEM_BULK : BwdSizes<128>::SMEM;
    else if (sc.qb == 128)
        c.smem_bytes = BwdSizes<64, 2, 128>::SMEM_SUM;
    else
        c.smem_bytes = sum    ? BwdSizes<64>::SMEM_SUM
                       : keys ? BwdSizes<64>::SMEM_KEYS
                       : bulk ? BwdSizes<64>::SMEM_BULK
                              : BwdSizes<64>::SMEM;
    const int d = static_cast<int>(p.head_dim), bc = c.block_cols;
    // registers hold dK_j, dV_j (B_c, d) and S^T, dP^T (B_c, B_r) in fp32, and the dQ_i part (B_r, d)
    c.sram_bytes = c.smem_bytes + (2 * bc * d + 2 * bc * sc.qb + sc.qb * d) * 4;
    return c;
}

int64_t flash2h_bwd_workspace_bytes(const sim::Problem& p) {
    return workspace_bytes(p, deterministic(), schedule(p.head_dim));
}

void flash2h_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    if (t.LSE == nullptr) throw std::runtime_error("flash2h backward needs the LSE of flash2h's forward");
    (void)flash2h_bwd_tiles(p);
    std::string why;
    if (!flash2h_available(&why)) throw std::runtime_error(why);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128)
            launch_d<T, 128>(p, t, ws, s);
        else
            launch_d<T, 64>(p, t, ws, s);
    });
}

}  // namespace fcuda
