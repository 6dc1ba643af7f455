// cuda/flash2h_fp8.cu — flash2h's forward in FP8 (e4m3) on Hopper (sm_90a only): the arithmetic of
// sim/fp8_attention.hpp's emulation (per-block scales, S in fp32, online softmax in fp32, P in e4m3
// with the fixed scale 2^8, O in fp32, stored bf16), on wgmma's e4m3 x e4m3 -> fp32 products.
//
// Two kernels, timed apart (as FlashAttention-3 measures its FP8 forward: inputs already in FP8):
//   * fp8_prepare_kernel: bf16 Q, K, V -> e4m3 with one scale s = amax / 448 for each block of 128
//     rows of a head (Q: the forward's query block B_r; K, V: its key block B_c); V written transposed,
//     (d, keys) per head with its key index padded to whole blocks, because FP8 wgmma reads both
//     operands K-major only (no transpose for 8-bit types), and the keys of each 32-key group in the
//     order of cuda/fp8_layout.hpp, so that P's accumulators feed O += P V where they sit.
//     Grid (T = ceil(N / 128), B*H, 3 tensors), 256 threads; one 128 x d tile each, 32 KiB (bf16).
//   * flash2h_fp8_fwd_kernel: flash2h's structure (cuda/flash2h.cu): warpgroup 0 produces (one thread
//     issues TMA copies of Q_i once and of K_j, V_j^T into a 2-stage ring), warpgroups 1 and 2
//     consume 64 query rows each (B_r = 128, B_c = 128, d = 128). Per key block: S = Q_i K_j^T
//     (wgmma m64n128k32 e4m3, both from shared memory, 4 k-steps), S x s_Q s_K_j scale log2(e), the
//     online softmax in base 2 with 8 added to every exponent (P x 256 for free), P packed to e4m3
//     in registers (cvt.rn.satfinite.e4m3x2.f32) and O += P V_j (wgmma m64n128k32, P from registers,
//     V_j^T from shared memory). S_{j+1} is issued with P_j V_j and its softmax runs while P_j V_j
//     finishes (flash2h's "overlapped" schedule). O is kept in units of the current block's s_V:
//     the rescale before block j+1's product multiplies by alpha x s_V,j / s_V,j+1, so the tensor
//     cores accumulate raw e4m3 products; the epilogue multiplies by s_V,last / l (l in units of
//     2^8, as P is: the two 2^8 cancel).
//     Grid (T_r, B*H), one tile a block, 384 threads (producer 24 registers, consumers 240).
//     FLASHSIM_FLASH2H_FP8_PINGPONG=on: the two consumer warpgroups take turns to issue their products
//     (flash2h's ping-pong); FLASHSIM_FLASH2H_FP8_STAGES=4: a 4-stage K/V ring (both off by default
//     until measured).
//     FLASHSIM_FLASH2H_FP8_EXP=poly: a quarter of the exponentials by poly_exp2 (cuda/mma.cuh) on the FMA
//     pipes, to unload the exponential unit (MUFU), with the default schedule only.
//     FLASHSIM_FLASH2H_FP8_SOFTMAX=tree: each row's maximum and sum as four partial ones (shorter
//     dependent chains), with the default schedule only.
//     FLASHSIM_FLASH2H_FP8_OVERLAP=on: a deeper overlap (off by default until measured). Above, block
//     j+1's softmax waits for S_{j+1} and runs under P_j V_j alone, half a block's products. With it,
//     S_{j+1} goes into a second accumulator and is issued before block j's softmax, which then runs
//     under S_{j+1} and P_{j-1} V_{j-1} (a whole block's products); P_j V_j is issued after it and
//     waited for only by block j+1's rescale. The same products, softmax and rescales in the same
//     order: O and LSE keep their bits. Not with the ping-pong turns (refused).
// SRAM (dynamic shared memory, 128-byte swizzled, one 128-byte panel a row at d = 128, e = 1 byte):
//   Q_i 128 x 128: 16 KiB; K_j 2 stages x 16 KiB; V_j^T 2 stages x 16 KiB; + 1 KiB alignment: 81 KiB
//   (4 stages: 145 KiB).
// HBM traffic per head: flash2's with B_r = B_c = 128 at one byte an element: Q once, K and V once a
//   query block (2 T_r N d), O written in bf16 (2 N d) and LSE (4 N); the preparation reads bf16 Q, K,
//   V (6 N d) and writes e4m3 (3 N d) and the scales.
// Non-causal only (the mask is refused by the host), d = 128 only.
// Run/check: flashsim bench --variant flash2h --dtype fp8 --seq 8192 --head-dim 128 ;
//            test_cuda_gpu -tc="flash2h fp8*"
#include <cuda_bf16.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <type_traits>

#include "cuda/fp8_layout.hpp"
#include "cuda/hopper.cuh"
#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

using namespace hopper;

constexpr int D = 128, BR = 128, BC = 128, PRODUCER_REGS = 24, CONSUMER_REGS = 240;
constexpr int THREADS = 384, TILE_BYTES = 128 * 128;  // every tile 128 rows x 128 one-byte values
// Q_i, then STAGES stages of K_j and of V_j^T; + 1 KiB to align to the 1024-byte swizzle atoms
constexpr int smem_bytes(int stages) { return TILE_BYTES * (1 + 2 * stages) + 1024; }
constexpr float kE4m3Max = 448.0f;

// Four floats to four e4m3 bytes, x0 in the lowest (round to nearest even, saturating at +-448):
// cvt.rn.satfinite.e4m3x2.f32 d, a, b puts a in the upper byte of d and b in the lower.
__device__ __forceinline__ uint32_t e4m3x4(float x0, float x1, float x2, float x3) {
    uint16_t lo, hi;
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(lo) : "f"(x1), "f"(x0));
    asm("cvt.rn.satfinite.e4m3x2.f32 %0, %1, %2;" : "=h"(hi) : "f"(x3), "f"(x2));
    return static_cast<uint32_t>(lo) | (static_cast<uint32_t>(hi) << 16);
}

// ---- the preparation --------------------------------------------------------------------------
// Block (i, bh, z): rows 128 i .. of head bh of tensor z (0 Q, 1 K, 2 V). amax over the tile (rows
// past N are zeros), s = amax / 448 (1 for a tile of zeros), x / s rounded to e4m3 (IEEE division,
// as the emulation's). Q, K: (BH, N, d); V: V^T (BH, d, n_pad), key 128 i + 32 q + key_of_slot(k)
// at position 128 i + 32 q + k, zeros for keys past N.
__global__ void __launch_bounds__(256)
    fp8_prepare_kernel(const __nv_bfloat16* __restrict__ Q, const __nv_bfloat16* __restrict__ K,
                       const __nv_bfloat16* __restrict__ V, uint8_t* __restrict__ Q8, uint8_t* __restrict__ K8,
                       uint8_t* __restrict__ Vt8, float* __restrict__ scales, int N, int T, int n_pad) {
    __shared__ __align__(16) __nv_bfloat16 tile[BR][D + 8];  // + 8: the transpose's column reads spread over banks
    __shared__ float warp_max[8];
    const int i = blockIdx.x, bh = blockIdx.y, z = blockIdx.z, r0 = i * BR;
    const __nv_bfloat16* src = (z == 0 ? Q : z == 1 ? K : V) + (static_cast<size_t>(bh) * N + r0) * D;
    const int rows = min(BR, N - r0);
    float amax = 0.0f;
    for (int e = threadIdx.x * 8; e < BR * D; e += 256 * 8) {  // 8 bf16 (16 bytes) a load
        const int r = e / D, c = e % D;
        uint4 w = make_uint4(0, 0, 0, 0);
        if (r < rows) w = *reinterpret_cast<const uint4*>(src + static_cast<size_t>(r) * D + c);
        *reinterpret_cast<uint4*>(&tile[r][c]) = w;
        const __nv_bfloat16* h = reinterpret_cast<const __nv_bfloat16*>(&w);
#pragma unroll
        for (int k = 0; k < 8; ++k) amax = fmaxf(amax, fabsf(__bfloat162float(h[k])));
    }
    for (int o = 16; o > 0; o >>= 1) amax = fmaxf(amax, __shfl_xor_sync(0xffffffffu, amax, o));
    if (threadIdx.x % 32 == 0) warp_max[threadIdx.x / 32] = amax;
    __syncthreads();
    amax = warp_max[0];
    for (int w = 1; w < 8; ++w) amax = fmaxf(amax, warp_max[w]);
    const float s = amax > 0.0f ? __fdiv_rn(amax, kE4m3Max) : 1.0f;
    if (threadIdx.x == 0) scales[(static_cast<size_t>(z) * gridDim.y + bh) * T + i] = s;
    auto q = [&](int r, int c) { return __fdiv_rn(__bfloat162float(tile[r][c]), s); };
    if (z < 2) {  // row-major e4m3, 4 bytes a store, rows past N not written
        uint8_t* dst = (z == 0 ? Q8 : K8) + (static_cast<size_t>(bh) * N + r0) * D;
        for (int e = threadIdx.x * 4; e < rows * D; e += 256 * 4) {
            const int r = e / D, c = e % D;
            *reinterpret_cast<uint32_t*>(dst + static_cast<size_t>(r) * D + c) =
                e4m3x4(q(r, c), q(r, c + 1), q(r, c + 2), q(r, c + 3));
        }
    } else {  // V^T: row n (a channel), positions p .. p + 3 of this block's 128 keys
        uint8_t* dst = Vt8 + static_cast<size_t>(bh) * D * n_pad + r0;
        for (int e = threadIdx.x * 4; e < D * BR; e += 256 * 4) {
            const int n = e / BR, p = e % BR;
            float x[4];
#pragma unroll
            for (int k = 0; k < 4; ++k) {
                const int key = (p + k) / fp8::kGroup * fp8::kGroup + fp8::key_of_slot((p + k) % fp8::kGroup);
                x[k] = q(key, n);  // keys past N: the tile's zero rows
            }
            *reinterpret_cast<uint32_t*>(dst + static_cast<size_t>(n) * n_pad + p) = e4m3x4(x[0], x[1], x[2], x[3]);
        }
    }
}

// ---- the forward ------------------------------------------------------------------------------

// wgmma m64n128k32, e4m3 x e4m3 -> fp32: A and B from shared memory (K-major both), and A from
// registers (4 x 4 bytes a thread, cuda/fp8_layout.hpp). scale_d = 0: D = A B; 1: D += A B.
__device__ __forceinline__ void wgmma_e4m3_ss(float (&d)[64], uint64_t da, uint64_t db, int scale_d) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %66, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" FCUDA_D64 "}, %64, %65, p, 1, 1;\n}\n"
        : FCUDA_ACC64
        : "l"(da), "l"(db), "r"(scale_d));
}
__device__ __forceinline__ void wgmma_e4m3_rs(float (&d)[64], const uint32_t (&a)[4], uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" FCUDA_D64
        "}, {%64, %65, %66, %67}, %68, p, 1, 1;\n}\n"
        : FCUDA_ACC64
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db));
}

template <int STAGES>
struct Ring {
    uint32_t sQ, sK, sV;
    uint64_t* bars;  // Q full, then per stage: K full, V full, K empty, V empty
    __device__ __forceinline__ uint32_t barQ() const { return smem_addr(&bars[0]); }
    __device__ __forceinline__ uint32_t fullK(int s) const { return smem_addr(&bars[1 + s]); }
    __device__ __forceinline__ uint32_t fullV(int s) const { return smem_addr(&bars[1 + STAGES + s]); }
    __device__ __forceinline__ uint32_t emptyK(int s) const { return smem_addr(&bars[1 + 2 * STAGES + s]); }
    __device__ __forceinline__ uint32_t emptyV(int s) const { return smem_addr(&bars[1 + 3 * STAGES + s]); }
};

// The producer thread: Q_i once, then K_j and V_j^T into the ring as its stages free.
template <int STAGES>
__device__ __forceinline__ void produce(const CUtensorMap* tmQ, const CUtensorMap* tmK, const CUtensorMap* tmV,
                                        const Ring<STAGES>& rg, int i, int bh, int T_c) {
    mbar_arrive_expect_tx(rg.barQ(), TILE_BYTES);
    tma_load_3d(rg.sQ, tmQ, rg.barQ(), 0, i * BR, bh);
    for (int j = 0; j < T_c; ++j) {
        const int s = j % STAGES;
        const uint32_t ph = (j / STAGES) & 1;
        if (j >= STAGES) mbar_wait(rg.emptyK(s), ph ^ 1);
        mbar_arrive_expect_tx(rg.fullK(s), TILE_BYTES);
        tma_load_3d(rg.sK + s * TILE_BYTES, tmK, rg.fullK(s), 0, j * BC, bh);
        if (j >= STAGES) mbar_wait(rg.emptyV(s), ph ^ 1);
        mbar_arrive_expect_tx(rg.fullV(s), TILE_BYTES);
        tma_load_3d(rg.sV + s * TILE_BYTES, tmV, rg.fullV(s), j * BC, 0, bh);
    }
}

// scales: (3, BH, T): s_Q, s_K, s_V per 128-row block of each head. scale_log2 = softmax scale x log2(e).
// PP: the two consumer warpgroups take turns to issue their products (named barriers 1 and 2, as
// flash2h's ping-pong), so that one's softmax runs while the other's products do. OV: S_{j+1} issued
// into a second accumulator before block j's softmax (header; not with PP).
template <int STAGES, bool PP, bool OV, bool POLY, bool TREE>
__global__ void __launch_bounds__(THREADS, 1)
    flash2h_fp8_fwd_kernel(const __grid_constant__ CUtensorMap tmQ, const __grid_constant__ CUtensorMap tmK,
                           const __grid_constant__ CUtensorMap tmV, const float* __restrict__ scales,
                           __nv_bfloat16* __restrict__ O, float* __restrict__ LSE, int N, int T, float scale_log2) {
    extern __shared__ unsigned char smem_raw[];
    __shared__ __align__(8) uint64_t bars[1 + 4 * STAGES];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    const Ring<STAGES> rg{base, base + TILE_BYTES, base + (1 + STAGES) * TILE_BYTES, bars};
    const int i = static_cast<int>(blockIdx.x), bh = static_cast<int>(blockIdx.y), BH = static_cast<int>(gridDim.y);
    const int T_c = (N + BC - 1) / BC;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (threadIdx.x == 0) {
        mbar_init(rg.barQ(), 1);
        for (int s = 0; s < STAGES; ++s) {
            mbar_init(rg.fullK(s), 1);
            mbar_init(rg.fullV(s), 1);
            mbar_init(rg.emptyK(s), 8);  // every consumer warp
            mbar_init(rg.emptyV(s), 8);
        }
        mbar_fence_init();
    }
    __syncthreads();
    if (warp < 4) {
        setmaxnreg_dec<PRODUCER_REGS>();
        if (warp == 0 && lane == 0) produce(&tmQ, &tmK, &tmV, rg, i, bh, T_c);
        return;
    }
    setmaxnreg_inc<CONSUMER_REGS>();
    const int wg = warp / 4 - 1, g = lane / 4, t = lane % 4;
    const int r0 = i * BR + wg * 64 + (warp % 4) * 16 + g;  // this thread's rows r0, r0 + 8
    const float* sK = scales + (static_cast<size_t>(BH) + bh) * T;
    const float* sV = scales + (2 * static_cast<size_t>(BH) + bh) * T;
    const float sq_log2 = scales[static_cast<size_t>(bh) * T + i] * scale_log2;
    static_assert(!(PP && OV), "the deeper overlap runs without the ping-pong turns");
    // s_nxt: the deeper overlap's second S accumulator (unused, and so not allocated, without it)
    float o[64], s_acc[64], s_nxt[64], m[2] = {-INFINITY, -INFINITY}, l[2] = {0.0f, 0.0f};
    uint32_t pa[4][4];
#pragma unroll
    for (int k = 0; k < 64; ++k) o[k] = s_acc[k] = s_nxt[k] = 0.0f;

    auto issue_s = [&](float(&acc)[64], int s) {
#pragma unroll
        for (int kk = 0; kk < D / 32; ++kk)
            wgmma_e4m3_ss(acc, desc_sw128(rg.sQ + wg * 64 * 128 + kk * 32, 16),
                          desc_sw128(rg.sK + s * TILE_BYTES + kk * 32, 16), kk > 0 ? 1 : 0);
        wgmma_commit();
    };
    auto issue_pv = [&](int s) {
#pragma unroll
        for (int kk = 0; kk < BC / 32; ++kk) wgmma_e4m3_rs(o, pa[kk], desc_sw128(rg.sV + s * TILE_BYTES + kk * 32, 16));
        wgmma_commit();
    };
    // block j's scores (raw e4m3 sums, in sa) -> 2^8 P in place; returns O's factor alpha for each row
    auto softmax = [&](int j, float(&sa)[64], float(&alpha)[2]) {
        const float f = sq_log2 * sK[j];  // base-2 exponent a unit of the raw sum
        if ((j + 1) * BC > N) {
#pragma unroll
            for (int a = 0; a < 64; ++a)
                if (j * BC + (a / 4) * 8 + 2 * t + (a & 1) >= N) sa[a] = -INFINITY;
        }
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            // TREE: four partial maxima and sums (chains of 4 and 8 instead of 16 and 32); the maximum is
            // exact in any order, the sum rounds in another order
            constexpr int W = TREE ? 4 : 1;
            float mxw[W], sw[W];
#pragma unroll
            for (int w = 0; w < W; ++w) mxw[w] = -INFINITY, sw[w] = 0.0f;
#pragma unroll
            for (int nb = 0; nb < 16; ++nb)
                mxw[nb % W] = fmaxf(mxw[nb % W], fmaxf(sa[nb * 4 + 2 * h], sa[nb * 4 + 2 * h + 1]));
            float mx = mxw[0];
#pragma unroll
            for (int w = 1; w < W; ++w) mx = fmaxf(mx, mxw[w]);
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float m_new = fmaxf(m[h], mx * f);
            const float top = m_new == -INFINITY ? 0.0f : m_new;  // a row with no key yet
            alpha[h] = fast_exp2(m[h] - top);
            m[h] = m_new;
            const float shift = top - 8.0f;  // 2^(x - m + 8) = 2^8 P
#pragma unroll
            for (int nb = 0; nb < 16; ++nb)
#pragma unroll
                for (int e = 0; e < 2; ++e) {
                    const float x = fmaf(sa[nb * 4 + 2 * h + e], f, -shift);
                    const float p = POLY && nb % 4 == 3 ? poly_exp2(x) : fast_exp2(x);  // a quarter on the FMA pipes
                    sa[nb * 4 + 2 * h + e] = p;
                    sw[nb % W] += p;
                }
            float sum = sw[0];
#pragma unroll
            for (int w = 1; w < W; ++w) sum += sw[w];
            l[h] = l[h] * alpha[h] + sum;
        }
    };
    auto to_p = [&](const float(&sa)[64]) {  // 2^8 P in e4m3, packed where the A fragment wants it (fp8_layout.hpp)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
#pragma unroll
            for (int r = 0; r < 4; ++r)
                pa[kk][r] = e4m3x4(sa[16 * kk + fp8::pack_source(r, 0)], sa[16 * kk + fp8::pack_source(r, 1)],
                                   sa[16 * kk + fp8::pack_source(r, 2)], sa[16 * kk + fp8::pack_source(r, 3)]);
    };
    auto rescale_o = [&](float a0, float a1) {
#pragma unroll
        for (int nb = 0; nb < 16; ++nb) {
            o[nb * 4 + 0] *= a0;
            o[nb * 4 + 1] *= a0;
            o[nb * 4 + 2] *= a1;
            o[nb * 4 + 3] *= a1;
        }
    };
    auto release = [&](uint32_t bar) {
        __syncwarp();
        if (lane == 0) mbar_arrive(bar);
    };
    // turns: warpgroup wg waits at barrier 1 + wg for the other to have issued, issues, then opens the
    // other's turn; warpgroup 1 opens the first turn, warpgroup 0 takes its last opening at the end
    auto turn_wait = [&]() {
        if constexpr (PP) named_sync(1 + wg, 256);
    };
    auto turn_pass = [&]() {
        if constexpr (PP) named_arrive(1 + (wg + 1) % 2, 256);
    };
    if constexpr (PP) {
        if (wg == 1) named_arrive(1, 256);
    }

    mbar_wait(rg.barQ(), 0);
    {  // block 0's S to completion
        mbar_wait(rg.fullK(0), 0);
        fence_regs(s_acc);
        wgmma_fence();
        turn_wait();
        issue_s(s_acc, 0);
        turn_pass();
        wgmma_wait<0>();
        fence_regs(s_acc);
        release(rg.emptyK(0));
    }
    if constexpr (!OV) {
        {
            float alpha[2];
            softmax(0, s_acc, alpha);
            to_p(s_acc);
        }
        for (int j = 0; j + 1 < T_c; ++j) {  // S_{j+1} and P_j V_j together; softmax j+1 while P_j V_j runs
            const int s = j % STAGES, s1 = (j + 1) % STAGES;
            mbar_wait(rg.fullK(s1), ((j + 1) / STAGES) & 1);
            mbar_wait(rg.fullV(s), (j / STAGES) & 1);
            fence_regs(s_acc);
            fence_regs(o);
            wgmma_fence();
            turn_wait();
            issue_s(s_acc, s1);
            issue_pv(s);
            turn_pass();
            wgmma_wait<1>();
            fence_regs(s_acc);
            release(rg.emptyK(s1));
            float alpha[2];
            softmax(j + 1, s_acc, alpha);
            wgmma_wait<0>();
            fence_regs(o);
            release(rg.emptyV(s));
            const float v_ratio = __fdividef(sV[j], sV[j + 1]);  // O from s_V,j units to s_V,j+1's
            rescale_o(alpha[0] * v_ratio, alpha[1] * v_ratio);
            to_p(s_acc);
        }
        {  // the last block: O += P V
            const int j = T_c - 1, s = j % STAGES;
            mbar_wait(rg.fullV(s), (j / STAGES) & 1);
            fence_regs(o);
            wgmma_fence();
            turn_wait();
            issue_pv(s);
            turn_pass();
            wgmma_wait<0>();
            fence_regs(o);
            release(rg.emptyV(s));
        }
    } else {
        // Block j, S_j complete in cur, P_{j-1} V_{j-1} in flight (j > 0): issue S_{j+1} into nxt (MORE: a
        // block j+1 exists), block j's softmax under both, then P_{j-1} V_{j-1} waited for (with MORE the
        // older group: wait<1> leaves S_{j+1}; at j = 0 nothing to wait for), O rescaled (at j = 0 a zero
        // times alpha = 0, as the plain schedule's untouched zero), P_j packed (pa is free once P_{j-1}
        // V_{j-1} is done) and P_j V_j issued; S_{j+1} waited for last (the older group again). Every
        // issue and wait unconditional within a step, so that ptxas can match each wgmma to its wait
        // and does not serialize them.
        auto step = [&](auto more_c, int j, float(&cur)[64], float(&nxt)[64]) {
            constexpr bool MORE = decltype(more_c)::value;
            const int s = j % STAGES, s1 = (j + 1) % STAGES;
            if constexpr (MORE) {
                mbar_wait(rg.fullK(s1), ((j + 1) / STAGES) & 1);
                fence_regs(nxt);
                wgmma_fence();
                issue_s(nxt, s1);
            }
            float alpha[2];
            softmax(j, cur, alpha);
            if constexpr (MORE)
                wgmma_wait<1>();
            else
                wgmma_wait<0>();
            fence_regs(o);
            if (j > 0) release(rg.emptyV((j - 1) % STAGES));
            const float v_ratio = j > 0 ? __fdividef(sV[j - 1], sV[j]) : 1.0f;  // O from s_V,j-1 units to s_V,j's
            rescale_o(alpha[0] * v_ratio, alpha[1] * v_ratio);
            to_p(cur);
            mbar_wait(rg.fullV(s), (j / STAGES) & 1);
            fence_regs(o);
            wgmma_fence();
            issue_pv(s);
            if constexpr (MORE) {
                wgmma_wait<1>();
                fence_regs(nxt);
                release(rg.emptyK(s1));
            }
        };
        constexpr std::true_type more{};
        constexpr std::false_type last{};
        int j = 0;
        for (; j + 2 < T_c; j += 2) {  // two blocks a trip, the accumulators trading places
            step(more, j, s_acc, s_nxt);
            step(more, j + 1, s_nxt, s_acc);
        }
        if (j + 1 < T_c) {  // two blocks left, or one
            step(more, j, s_acc, s_nxt);
            step(last, j + 1, s_nxt, s_acc);
        } else {
            step(last, j, s_acc, s_nxt);
        }
        wgmma_wait<0>();  // the last P V
        fence_regs(o);
        release(rg.emptyV((T_c - 1) % STAGES));
    }
    if constexpr (PP) {
        if (wg == 0) named_sync(1, 256);  // warpgroup 1's last opening
    }
    // epilogue: l over the quad, O = o s_V,last / l (both in units of 2^8), LSE = ln 2 (m - 8) + ln l
    const float sv_last = sV[T_c - 1];
    __nv_bfloat16* Oh = O + static_cast<size_t>(bh) * N * D;
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
        const float f = l[h] > 0.0f ? sv_last / l[h] : 0.0f;
        const int row = r0 + 8 * h;
        if (row < N) {
            __nv_bfloat16* orow = Oh + static_cast<size_t>(row) * D;
#pragma unroll
            for (int nb = 0; nb < 16; ++nb)
                *reinterpret_cast<uint32_t*>(orow + nb * 8 + 2 * t) =
                    pack2<__nv_bfloat16>(o[nb * 4 + 2 * h] * f, o[nb * 4 + 2 * h + 1] * f);
            if (LSE != nullptr && t == 0)
                LSE[static_cast<size_t>(bh) * N + row] = (m[h] - 8.0f) * 0.693147182f + logf(l[h]);
        }
    }
}

// ---- host side ---------------------------------------------------------------------------------

// A (heads, rows, inner) one-byte tensor read in boxes of 128 x 128, 128-byte swizzled.
CUtensorMap map_u8(const void* ptr, int64_t inner, int64_t rows, int64_t heads) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(rows),
                                static_cast<cuuint64_t>(heads)};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(inner), static_cast<cuuint64_t>(inner * rows)};
    const cuuint32_t box[3] = {128, 128, 1}, elem_strides[3] = {1, 1, 1};
    const CUresult r = encode_fn()(&map, CU_TENSOR_MAP_DATA_TYPE_UINT8, 3, const_cast<void*>(ptr), dims, strides, box,
                                   elem_strides, CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("flash2h fp8: cuTensorMapEncodeTiled failed (CUresult " +
                                 std::to_string(static_cast<int>(r)) + ") for a (" + std::to_string(heads) + ", " +
                                 std::to_string(rows) + ", " + std::to_string(inner) + ") tensor");
    return map;
}

template <int STAGES, bool PP, bool OV = false, bool POLY = false, bool TREE = false>
void launch_fwd(const sim::Problem& p, const Fp8Buffers& b, void* O, float* LSE, cudaStream_t s) {
    const Fp8Layout z = fp8_layout(p);
    const int64_t BH = p.heads_total();
    constexpr int smem = smem_bytes(STAGES);
    auto kernel = flash2h_fp8_fwd_kernel<STAGES, PP, OV, POLY, TREE>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const CUtensorMap mq = map_u8(b.Q8, D, p.seq, BH), mk = map_u8(b.K8, D, p.seq, BH),
                      mv = map_u8(b.Vt8, z.n_pad, D, BH);
    const float scale_log2 = static_cast<float>(p.softmax_scale()) * LOG2E;
    kernel<<<dim3(static_cast<unsigned>(z.T), static_cast<unsigned>(BH)), THREADS, smem, s>>>(
        mq, mk, mv, b.scales, static_cast<__nv_bfloat16*>(O), LSE, static_cast<int>(p.seq), static_cast<int>(z.T),
        scale_log2);
    LAUNCH_CHECK();
}

// FLASHSIM_FLASH2H_FP8_PINGPONG=on|off (default off) and FLASHSIM_FLASH2H_FP8_STAGES=2|4 (default 2)
bool fp8_pingpong() {
    const char* e = sim::knob("FLASHSIM_FLASH2H_FP8_PINGPONG");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "off" || v == "default") return false;
    if (v == "on") return true;
    throw std::runtime_error("FLASHSIM_FLASH2H_FP8_PINGPONG must be on or off (got '" + v + "')");
}
int fp8_stages() {
    const char* e = sim::knob("FLASHSIM_FLASH2H_FP8_STAGES");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "2" || v == "default") return 2;
    if (v == "4") return 4;
    throw std::runtime_error("FLASHSIM_FLASH2H_FP8_STAGES must be 2 or 4 (got '" + v + "')");
}
// FLASHSIM_FLASH2H_FP8_OVERLAP=on|off (default off): S_{j+1} issued before block j's softmax, into a
// second accumulator; without the ping-pong turns (the two would each decide when products are issued)
bool fp8_overlap() {
    const char* e = sim::knob("FLASHSIM_FLASH2H_FP8_OVERLAP");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "off" || v == "default") return false;
    if (v != "on") throw std::runtime_error("FLASHSIM_FLASH2H_FP8_OVERLAP must be on or off (got '" + v + "')");
    if (fp8_pingpong())
        throw std::runtime_error(
            "FLASHSIM_FLASH2H_FP8_OVERLAP=on runs without the ping-pong turns; unset FLASHSIM_FLASH2H_FP8_PINGPONG "
            "(or set it to off)");
    return true;
}
// A two-valued knob (off, on; unset or "default": off) that runs with the default FP8 schedule only
// (2 stages, no turns, no deeper overlap): refused beside the others, with the fix.
bool fp8_default_schedule_knob(const char* name, const char* off, const char* on) {
    const char* e = sim::knob(name);
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == off || v == "default") return false;
    if (v != on) throw std::runtime_error(std::string(name) + " must be " + off + " or " + on + " (got '" + v + "')");
    if (fp8_pingpong() || fp8_overlap() || fp8_stages() != 2)
        throw std::runtime_error(std::string(name) + "=" + on +
                                 " runs with the default schedule only; unset FLASHSIM_FLASH2H_FP8_PINGPONG, "
                                 "FLASHSIM_FLASH2H_FP8_OVERLAP and FLASHSIM_FLASH2H_FP8_STAGES");
    return true;
}
// FLASHSIM_FLASH2H_FP8_EXP=mufu|poly (default mufu): poly computes a quarter of the softmax's exponentials
// (every fourth group of 8 key columns) by poly_exp2 on the FMA pipes instead of MUFU.EX2, as
// FLASHSIM_FLASH2H_EXP=poly does in bf16
bool fp8_poly() { return fp8_default_schedule_knob("FLASHSIM_FLASH2H_FP8_EXP", "mufu", "poly"); }
// FLASHSIM_FLASH2H_FP8_SOFTMAX=chain|tree (default chain): tree takes each row's maximum and sum over
// the thread's 32 scores as four partial ones, to shorten the dependent chains the profile shows the
// warps waiting on
bool fp8_tree() { return fp8_default_schedule_knob("FLASHSIM_FLASH2H_FP8_SOFTMAX", "chain", "tree"); }

}  // namespace

void check_flash2h_fp8(const sim::Problem& p) {
    if (p.head_dim != D)
        throw std::runtime_error("flash2h's fp8 forward is written for d = 128 (got d = " + std::to_string(p.head_dim) +
                                 "); use --head-dim 128, or bf16 at d = 64");
    if (p.causal)
        throw std::runtime_error(
            "flash2h's fp8 forward has no causal mask yet; drop --causal, or use bf16 for causal attention");
}

Fp8Layout fp8_layout(const sim::Problem& p) {
    Fp8Layout z;
    z.T = (p.seq + BR - 1) / BR;
    z.n_pad = z.T * BR;
    const int64_t BH = p.heads_total();
    z.qk_bytes = BH * p.seq * p.head_dim;
    z.vt_bytes = BH * p.head_dim * z.n_pad;
    z.scale_count = 3 * BH * z.T;
    return z;
}

void flash2h_fp8_prepare(const sim::Problem& p, const void* Q, const void* K, const void* V, const Fp8Buffers& b,
                         cudaStream_t s) {
    check_flash2h_fp8(p);
    const Fp8Layout z = fp8_layout(p);
    const dim3 grid(static_cast<unsigned>(z.T), static_cast<unsigned>(p.heads_total()), 3);
    fp8_prepare_kernel<<<grid, 256, 0, s>>>(static_cast<const __nv_bfloat16*>(Q), static_cast<const __nv_bfloat16*>(K),
                                            static_cast<const __nv_bfloat16*>(V), b.Q8, b.K8, b.Vt8, b.scales,
                                            static_cast<int>(p.seq), static_cast<int>(z.T), static_cast<int>(z.n_pad));
    LAUNCH_CHECK();
}

void flash2h_fp8_forward(const sim::Problem& p, const Fp8Buffers& b, void* O, float* LSE, cudaStream_t s) {
    check_flash2h_fp8(p);
    std::string why;
    if (!flash2h_available(&why)) throw std::runtime_error(why);
    const bool pp = fp8_pingpong(), ov = fp8_overlap();
    const bool poly = fp8_poly(), tree = fp8_tree();  // each the default schedule only
    if (poly && tree)
        launch_fwd<2, false, false, true, true>(p, b, O, LSE, s);
    else if (poly)
        launch_fwd<2, false, false, true>(p, b, O, LSE, s);
    else if (tree)
        launch_fwd<2, false, false, false, true>(p, b, O, LSE, s);
    else if (ov)
        fp8_stages() == 4 ? launch_fwd<4, false, true>(p, b, O, LSE, s) : launch_fwd<2, false, true>(p, b, O, LSE, s);
    else if (fp8_stages() == 4)
        pp ? launch_fwd<4, true>(p, b, O, LSE, s) : launch_fwd<4, false>(p, b, O, LSE, s);
    else
        pp ? launch_fwd<2, true>(p, b, O, LSE, s) : launch_fwd<2, false>(p, b, O, LSE, s);
}

TileConfig flash2h_fp8_tiles(const sim::Problem& p) {
    check_flash2h_fp8(p);
    TileConfig c;
    c.variant = "flash2h";
    c.algo = "flash2";
    c.loop_order = "q_outer";
    c.stages = fp8_stages();
    c.block_rows = BR;
    c.block_cols = BC;
    c.threads = THREADS;
    c.grid = sim::KernelGrid::tiles;
    c.layout = std::string(
                   "fp8 (e4m3): 2 consumer warpgroups x 64 query rows (wgmma e4m3), 1 TMA producer warpgroup; "
                   "S_{j+1} overlaps P_j V_j; inputs quantized and V transposed beforehand (timed apart)") +
               (fp8_pingpong() ? "; warpgroups take turns to issue their products (ping-pong)" : "") +
               (fp8_overlap() ? "; S_{j+1} issued before block j's softmax (second S accumulator)" : "") +
               (fp8_poly() ? "; a quarter of the exponentials by a polynomial on the FMA pipes" : "") +
               (fp8_tree() ? "; each row's maximum and sum as four partial ones" : "");
    c.smem_bytes = smem_bytes(c.stages);
    c.sram_bytes = c.smem_bytes + (BR * D + BR * BC + 2 * BR) * 4;
    return c;
}

}  // namespace fcuda
