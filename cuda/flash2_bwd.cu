// cuda/flash2_bwd.cu — FlashAttention-2 backward on tensor cores (mma.sync m16n8k16, fp32 accumulate).
//
// Three launches:
//   1. preprocess: D_i = rowsum(dO_i o O_i) (fp32), dQ accumulator zeroed.
//   2. main: one thread block per key/value block K_j, V_j (B_c rows) of one head. K_j, V_j stay
//      in shared memory; the block walks the query blocks i (B_r rows; causal: only i with a query
//      at or after the block's first key), double-buffering Q_i, dO_i, LSE_i, D_i with cp.async.
//      Each warp owns 16 key rows and computes, per step, in registers:
//        S^T = K_j Q_i^T (16, B_r);  P^T = exp2(S^T scale log2e - LSE_i log2e)  (recomputed from LSE);
//        dV_j += P^T dO_i;  dP^T = V_j dO_i^T;  dS^T = P^T o (dP^T - D_i);  dK_j += dS^T Q_i.
//      dS^T goes to shared memory (storage type); then warp w takes query rows 16w..16w+15 of
//      dQ_i += dS K_j and adds them into the fp32 dQ accumulator in HBM with float2 atomics.
//      At the end dK_j (times scale) and dV_j are written once.
//   3. postprocess: dQ = scale * accumulator, rounded to the storage type.
// B_r = 64 query rows; B_c = 128 key rows (8 warps) at both head dims (FLASHSIM_FLASH2_BWD_BC=64
// picks the first version's 64 key rows, 4 warps: 2-10% slower at d = 128, 4-11% at d = 64).
//
// Launch shape: main grid (T_c = ceil(N / B_c), B * H), 32 B_c / 16 threads (128 or 256).
// SRAM (dynamic shared memory, e = 2 bytes):          d=128, B_c=64   d=64, B_c=128   d=128, B_c=128
//   K_j, V_j (B_c, d) each         2 B_c d e          32 KiB          32 KiB          64 KiB
//   Q_i, dO_i 2 stages x (B_r, d)  4 B_r d e          64 KiB          32 KiB          64 KiB
//   dS^T (B_c, B_r)                B_c B_r e          8 KiB           16 KiB          16 KiB
//   LSE_i, D_i 2 stages x B_r fp32 16 B_r             1 KiB           1 KiB           1 KiB
//   total                                             105 KiB         81 KiB          145 KiB
// (two blocks an SM at B_c = 64; one at B_c = 128, held by registers at d = 64: 8 warps an SM either way)
// HBM traffic (per head, e = bytes per element): pre: read O, dO (2 N d e), write D (4 N);
//   main: read K, V once (2 N d e); per step read Q_i, dO_i (2 B_r d e), LSE_i, D_i (8 B_r), so
//   T_c (2 N d e + 8 N) in all (causal about half); dQ accumulator: T_c N d 4 bytes of atomic
//   adds (mostly absorbed by L2); write dK, dV (2 N d e); post: read 4 N d, write N d e.
// Run/check: flashsim bench --variant flash2 --pass backward --seq 4096 ; ctest -L gpu
#include <cstdlib>
#include <string>

#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

// B_r = 64 query rows a step; B_c = 16 key rows a warp x WARPS. In the dQ phase the B_r / 16
// row strips of dQ_i are shared among the warps, each strip split by columns of d when there
// are more warps than strips (B_c = 128: 8 warps, 4 strips, half of d each).
constexpr int BR = 64;
template <int BC_, int D_>
struct BwdTiling {
    static constexpr int BC = BC_, D = D_, WARPS = BC / 16, THREADS = WARPS * 32;
    static constexpr int STRIPS = BR / 16, SPLIT = WARPS / STRIPS;  // warps a dQ strip
    static_assert(WARPS % STRIPS == 0 && (D / 8) % (2 * SPLIT) == 0, "dQ strips must divide among warps");
    static constexpr int smem_bytes() { return (2 * BC * D + 4 * BR * D + BC * BR) * 2 + 4 * BR * 4; }
};
// B_c = 128 (half the K/V blocks of B_c = 64, so half the dQ atomics and Q_i / dO_i loads a key);
// FLASHSIM_FLASH2_BWD_BC=64|128 picks either, for comparison.

template <typename T>
__global__ void flash2_bwd_pre(const T* __restrict__ O, const T* __restrict__ dO, float* __restrict__ Dsum,
                               float* __restrict__ dq_acc, int rows, int d) {
    // one warp a row: D = sum_c dO[c] O[c], and the row of the fp32 dQ accumulator set to zero (a
    // kernel the DRAM counters see, where a cudaMemsetAsync was not; one launch fewer)
    const int row = blockIdx.x * (blockDim.x / 32) + threadIdx.x / 32, lane = threadIdx.x % 32;
    if (row >= rows) return;
    const T* o = O + static_cast<size_t>(row) * d;
    const T* g = dO + static_cast<size_t>(row) * d;
    float* z = dq_acc + static_cast<size_t>(row) * d;
    float acc = 0.0f;
    for (int c = lane; c < d; c += 32) {
        acc += StorageTraits<T>::to_float(o[c]) * StorageTraits<T>::to_float(g[c]);
        z[c] = 0.0f;
    }
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (lane == 0) Dsum[row] = acc;
}

template <typename T>
__global__ void flash2_bwd_post(const float* __restrict__ acc, T* __restrict__ dQ, size_t count, float scale) {
    for (size_t k = blockIdx.x * size_t(blockDim.x) + threadIdx.x; k < count; k += size_t(gridDim.x) * blockDim.x)
        dQ[k] = StorageTraits<T>::from_float(acc[k] * scale);
}

template <typename T, typename Tl, bool CAUSAL>
__global__ void __launch_bounds__(Tl::THREADS)
    flash2_bwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V,
                      const T* __restrict__ dO, const float* __restrict__ LSE, const float* __restrict__ Dsum,
                      float* __restrict__ dQacc, T* __restrict__ dK, T* __restrict__ dV, int N, float scale,
                      float scale_log2, int row0_alone, int staggered) {
    constexpr int BC = Tl::BC, D = Tl::D, THREADS = Tl::THREADS;
    constexpr int NB_Q = BR / 8;  // 8-column blocks of S^T (queries)
    constexpr int NB_D = D / 8;   // 8-column blocks of dK, dV, dQ
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* sK = reinterpret_cast<T*>(smem_raw);               // (B_c, d)
    T* sV = sK + BC * D;                                  // (B_c, d)
    T* sQ = sV + BC * D;                                  // 2 x (B_r, d)
    T* sdO = sQ + 2 * BR * D;                             // 2 x (B_r, d)
    T* sdS = sdO + 2 * BR * D;                            // (B_c, B_r): dS^T, row = key
    float* sL = reinterpret_cast<float*>(sdS + BC * BR);  // 2 x B_r: LSE_i * log2(e) (+inf past N)
    float* sD = sL + 2 * BR;                              // 2 x B_r: D_i

    const int j = blockIdx.x, kv0 = j * BC;
    const size_t head = static_cast<size_t>(blockIdx.y) * N * D;
    const size_t head_rows = static_cast<size_t>(blockIdx.y) * N;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int T_r = (N + BR - 1) / BR;
    const int i_first = CAUSAL ? kv0 / BR : 0;
    // The walk over the query blocks i_first .. T_r - 1: in step (every key block from i_first up) or,
    // without the mask, staggered (key block j starts where a causal walk would, at kv0 / B_r, and
    // wraps), so that the blocks resident at once read Q_i, dO_i and add into dQ_i on different rows.
    const int walk = T_r - i_first;
    const int walk0 = !CAUSAL && staggered && walk > 0 ? (kv0 / BR) % walk : 0;
    auto query_block = [&](int w) { return i_first + (w + walk0) % walk; };

    auto prefetch = [&](int i, int stage) {
        load_tile_async<BR, D, THREADS>(sQ + stage * BR * D, Q + head, i * BR, N);
        load_tile_async<BR, D, THREADS>(sdO + stage * BR * D, dO + head, i * BR, N);
        for (int r = threadIdx.x; r < BR; r += THREADS) {
            const int q = i * BR + r;
            sL[stage * BR + r] = q < N ? LSE[head_rows + q] * LOG2E : INFINITY;
            sD[stage * BR + r] = q < N ? Dsum[head_rows + q] : 0.0f;
        }
    };

    load_tile_async<BC, D, THREADS>(sK, K + head, kv0, N);
    load_tile_async<BC, D, THREADS>(sV, V + head, kv0, N);
    if (walk > 0) prefetch(query_block(0), 0);
    cp_async_commit();

    float dk[NB_D][4], dv[NB_D][4];  // dK_j, dV_j rows of this warp, (16, d)
#pragma unroll
    for (int nb = 0; nb < NB_D; ++nb)
#pragma unroll
        for (int e = 0; e < 4; ++e) dk[nb][e] = dv[nb][e] = 0.0f;

    const int wk0 = kv0 + warp * 16;  // first key row of this warp
    for (int w = 0; w < walk; ++w) {
        const int i = query_block(w);
        const int stage = w & 1;
        if (w + 1 < walk) {
            prefetch(query_block(w + 1), stage ^ 1);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        const T* sQi = sQ + stage * BR * D;
        const T* sdOi = sdO + stage * BR * D;
        const float* sLi = sL + stage * BR;
        const float* sDi = sD + stage * BR;
        const int q0 = i * BR;

        // S^T = K_j Q_i^T and dP^T = V_j dO_i^T, (16, B_r) per warp
        float s[NB_Q][4], dp[NB_Q][4];
#pragma unroll
        for (int nb = 0; nb < NB_Q; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) s[nb][e] = dp[nb][e] = 0.0f;
#pragma unroll
        for (int kk = 0; kk < D / 16; ++kk) {
            uint32_t ak[4], av[4];
            ldmatrix_x4(ak, sK + swz<D>(warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8, kk * 16 + (lane / 16) * 8));
            ldmatrix_x4(av, sV + swz<D>(warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8, kk * 16 + (lane / 16) * 8));
#pragma unroll
            for (int qp = 0; qp < NB_Q / 2; ++qp) {
                uint32_t b[4];
                ldmatrix_x4(b, sQi + swz<D>(qp * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8));
                mma16816<T>(s[2 * qp], ak, b[0], b[1]);
                mma16816<T>(s[2 * qp + 1], ak, b[2], b[3]);
                ldmatrix_x4(b, sdOi + swz<D>(qp * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8));
                mma16816<T>(dp[2 * qp], av, b[0], b[1]);
                mma16816<T>(dp[2 * qp + 1], av, b[2], b[3]);
            }
        }
        // P^T from the stored LSE; masked entries 0. dS^T = P^T o (dP^T - D_i).
#pragma unroll
        for (int nb = 0; nb < NB_Q; ++nb)
#pragma unroll
            for (int e = 0; e < 4; ++e) {
                const int qc = nb * 8 + 2 * t + (e & 1);  // query column within the block
                const int key = wk0 + g + (e >> 1) * 8;
                const bool masked = key >= N || (CAUSAL && key > q0 + qc);
                const float p = masked ? 0.0f : fast_exp2(fmaf(s[nb][e], scale_log2, -sLi[qc]));
                s[nb][e] = p;
                dp[nb][e] = p * (dp[nb][e] - sDi[qc]);
            }
        // Query row 0 has one key when N = 1 or under the causal mask: its softmax is the constant 1,
        // so its dS is exactly 0 (dP - D would leave the rounding of two sums taken in other orders).
        // Row 0 is query column 0 of block 0: elements e = 0, 2 of nb = 0 in the threads with t = 0.
        // row0_alone is 0 when the row attends keys outside this call too (ring attention's blocks).
        if (q0 == 0 && row0_alone && t == 0) {
            dp[0][0] = 0.0f;
            dp[0][2] = 0.0f;
        }
        // dV_j += P^T dO_i and dK_j += dS^T Q_i (A operands from registers, B = dO_i, Q_i transposed)
#pragma unroll
        for (int kq = 0; kq < BR / 16; ++kq) {
            uint32_t ap[4], ads[4];
            ap[0] = pack2<T>(s[2 * kq][0], s[2 * kq][1]);
            ap[1] = pack2<T>(s[2 * kq][2], s[2 * kq][3]);
            ap[2] = pack2<T>(s[2 * kq + 1][0], s[2 * kq + 1][1]);
            ap[3] = pack2<T>(s[2 * kq + 1][2], s[2 * kq + 1][3]);
            ads[0] = pack2<T>(dp[2 * kq][0], dp[2 * kq][1]);
            ads[1] = pack2<T>(dp[2 * kq][2], dp[2 * kq][3]);
            ads[2] = pack2<T>(dp[2 * kq + 1][0], dp[2 * kq + 1][1]);
            ads[3] = pack2<T>(dp[2 * kq + 1][2], dp[2 * kq + 1][3]);
            // dS^T to shared memory for the dQ phase: rows = keys of this warp, cols = queries
            *reinterpret_cast<uint32_t*>(sdS + swz<BR>(warp * 16 + g, kq * 16 + 2 * t)) = ads[0];
            *reinterpret_cast<uint32_t*>(sdS + swz<BR>(warp * 16 + g + 8, kq * 16 + 2 * t)) = ads[1];
            *reinterpret_cast<uint32_t*>(sdS + swz<BR>(warp * 16 + g, kq * 16 + 8 + 2 * t)) = ads[2];
            *reinterpret_cast<uint32_t*>(sdS + swz<BR>(warp * 16 + g + 8, kq * 16 + 8 + 2 * t)) = ads[3];
#pragma unroll
            for (int dp2 = 0; dp2 < NB_D / 2; ++dp2) {
                uint32_t b[4];
                ldmatrix_x4_trans(
                    b, sdOi + swz<D>(kq * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp2 * 16 + (lane / 16) * 8));
                mma16816<T>(dv[2 * dp2], ap, b[0], b[1]);
                mma16816<T>(dv[2 * dp2 + 1], ap, b[2], b[3]);
                ldmatrix_x4_trans(
                    b, sQi + swz<D>(kq * 16 + (lane % 8) + ((lane / 8) % 2) * 8, dp2 * 16 + (lane / 16) * 8));
                mma16816<T>(dk[2 * dp2], ads, b[0], b[1]);
                mma16816<T>(dk[2 * dp2 + 1], ads, b[2], b[3]);
            }
        }
        __syncthreads();  // dS^T complete

        // dQ_i += dS K_j: warp w owns query rows 16 (w % STRIPS) .. + 15 of the block, columns
        // part w / STRIPS of SPLIT parts of d
        {
            constexpr int NB_W = NB_D / Tl::SPLIT;  // 8-column blocks of dQ this warp adds
            const int strip = warp % Tl::STRIPS, cb0 = (warp / Tl::STRIPS) * NB_W;
            float dq[NB_W][4];
#pragma unroll
            for (int nb = 0; nb < NB_W; ++nb) dq[nb][0] = dq[nb][1] = dq[nb][2] = dq[nb][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk) {
                uint32_t a[4];
                ldmatrix_x4_trans(
                    a, sdS + swz<BR>(kk * 16 + (lane % 8) + (lane / 16) * 8, strip * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
                for (int dp2 = 0; dp2 < NB_W / 2; ++dp2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, sK + swz<D>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8,
                                                     (cb0 + 2 * dp2) * 8 + (lane / 16) * 8));
                    mma16816<T>(dq[2 * dp2], a, b[0], b[1]);
                    mma16816<T>(dq[2 * dp2 + 1], a, b[2], b[3]);
                }
            }
            const int qr = q0 + strip * 16 + g;
            float* base = dQacc + head;
#pragma unroll
            for (int nb = 0; nb < NB_W; ++nb) {
                const int col = (cb0 + nb) * 8 + 2 * t;
                if (qr < N) atomic_add2(base + static_cast<size_t>(qr) * D + col, dq[nb][0], dq[nb][1]);
                if (qr + 8 < N) atomic_add2(base + static_cast<size_t>(qr + 8) * D + col, dq[nb][2], dq[nb][3]);
            }
        }
        __syncthreads();  // stage and dS^T are overwritten next iteration
    }

    // dK_j = scale * sum dS^T Q, dV_j: written once
    const int kr = wk0 + g;
#pragma unroll
    for (int nb = 0; nb < NB_D; ++nb) {
        const int col = nb * 8 + 2 * t;
        if (kr < N) {
            *reinterpret_cast<uint32_t*>(dK + head + static_cast<size_t>(kr) * D + col) =
                pack2<T>(dk[nb][0] * scale, dk[nb][1] * scale);
            *reinterpret_cast<uint32_t*>(dV + head + static_cast<size_t>(kr) * D + col) =
                pack2<T>(dv[nb][0], dv[nb][1]);
        }
        if (kr + 8 < N) {
            *reinterpret_cast<uint32_t*>(dK + head + static_cast<size_t>(kr + 8) * D + col) =
                pack2<T>(dk[nb][2] * scale, dk[nb][3] * scale);
            *reinterpret_cast<uint32_t*>(dV + head + static_cast<size_t>(kr + 8) * D + col) =
                pack2<T>(dv[nb][2], dv[nb][3]);
        }
    }
}

// The key blocks' walk over the query blocks without a mask: FLASHSIM_FLASH2_BWD_WALK=in-step|staggered,
// else in-step. (Under the causal mask each key block starts at its diagonal, staggered already.)
bool staggered_walk() {
    const char* e = sim::knob("FLASHSIM_FLASH2_BWD_WALK");
    if (e == nullptr || *e == 0) return false;
    const std::string v = e;
    if (v == "in-step") return false;
    if (v == "staggered") return true;
    throw std::runtime_error("FLASHSIM_FLASH2_BWD_WALK must be in-step or staggered (got '" + v +
                             "'): where flash2's backward key blocks start their walk over the query blocks; unset "
                             "it for the default, in-step");
}

template <typename T, typename Tl, bool CAUSAL>
void launch_bwd(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    constexpr int D = Tl::D;
    const int N = static_cast<int>(p.seq);
    const int BH = static_cast<int>(p.heads_total());
    const size_t rows = static_cast<size_t>(BH) * N, elems = rows * D;
    const int staggered = staggered_walk() ? 1 : 0;  // a bad value refused before anything is launched
    ws.a.ensure(elems * 4);                          // dQ accumulator (fp32)
    ws.b.ensure(rows * 4);                           // D
    flash2_bwd_pre<T><<<static_cast<unsigned>((rows + 7) / 8), 256, 0, s>>>(
        static_cast<const T*>(t.O), static_cast<const T*>(t.dO), ws.b.as<float>(), ws.a.as<float>(),
        static_cast<int>(rows), D);
    LAUNCH_CHECK();
    constexpr int smem = Tl::smem_bytes();
    auto kernel = flash2_bwd_kernel<T, Tl, CAUSAL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const float scale = static_cast<float>(p.softmax_scale());
    kernel<<<dim3((N + Tl::BC - 1) / Tl::BC, BH), Tl::THREADS, smem, s>>>(
        static_cast<const T*>(t.Q), static_cast<const T*>(t.K), static_cast<const T*>(t.V), static_cast<const T*>(t.dO),
        t.LSE, ws.b.as<float>(), ws.a.as<float>(), static_cast<T*>(t.dK), static_cast<T*>(t.dV), N, scale,
        scale * LOG2E, (p.causal || N == 1) && !t.keys_elsewhere ? 1 : 0, staggered);
    LAUNCH_CHECK();
    flash2_bwd_post<T><<<2048, 256, 0, s>>>(ws.a.as<float>(), static_cast<T*>(t.dQ), elems, scale);
    LAUNCH_CHECK();
}

// The keys a block (B_c): FLASHSIM_FLASH2_BWD_BC=64|128, else 128.
int block_cols() {
    const char* e = sim::knob("FLASHSIM_FLASH2_BWD_BC");
    if (e == nullptr || *e == 0) return 128;
    const std::string v = e;
    if (v == "64") return 64;
    if (v == "128") return 128;
    throw std::runtime_error("FLASHSIM_FLASH2_BWD_BC must be 64 or 128 (got '" + v +
                             "'): the keys a block of flash2's backward; unset it for the default, 128");
}

template <typename Tl>
TileConfig bwd_tiles_of() {
    TileConfig c;
    c.variant = "flash2";
    c.algo = "flash2";
    c.loop_order = "kv_outer";
    c.dq = sim::DqSchedule::atomics;
    c.block_rows = BR;
    c.block_cols = Tl::BC;
    c.stages = 2;
    c.threads = Tl::THREADS;
    c.layout = Tl::SPLIT == 1 ? "each warp owns 16 key rows; for dQ, 16 query rows"
                              : "each warp owns 16 key rows; for dQ, 16 query rows x half of d";
    c.smem_bytes = Tl::smem_bytes();
    // on chip besides shared memory: dK_j, dV_j accumulators and S^T, dP^T of each warp (fp32 registers)
    c.sram_bytes = c.smem_bytes + (2 * Tl::BC * Tl::D + 2 * Tl::BC * BR) * 4;
    return c;
}

using Bwd128 = BwdTiling<64, 128>;    // d = 128, B_c = 64
using Bwd128w = BwdTiling<128, 128>;  // d = 128, B_c = 128
using Bwd64 = BwdTiling<128, 64>;     // d = 64, B_c = 128
using Bwd64n = BwdTiling<64, 64>;     // d = 64, B_c = 64

}  // namespace

TileConfig flash2_bwd_tiles(const sim::Problem& p) {
    if (p.head_dim != 64 && p.head_dim != 128) throw std::runtime_error("flash2 backward: head_dim must be 64 or 128");
    const bool wide = block_cols() == 128;
    if (p.head_dim == 128) return wide ? bwd_tiles_of<Bwd128w>() : bwd_tiles_of<Bwd128>();
    return wide ? bwd_tiles_of<Bwd64>() : bwd_tiles_of<Bwd64n>();
}

void flash2_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    if (t.LSE == nullptr) throw std::runtime_error("flash2 backward needs the LSE of flash2's forward");
    const bool wide = flash2_bwd_tiles(p).block_cols == 128;
    dispatch_dtype(p.dtype, [&]<typename T>() {
        auto go = [&]<typename Tl>() {
            if (p.causal)
                launch_bwd<T, Tl, true>(p, t, ws, s);
            else
                launch_bwd<T, Tl, false>(p, t, ws, s);
        };
        if (p.head_dim == 128) {
            if (wide)
                go.template operator()<Bwd128w>();
            else
                go.template operator()<Bwd128>();
        } else {
            if (wide)
                go.template operator()<Bwd64>();
            else
                go.template operator()<Bwd64n>();
        }
    });
}

}  // namespace fcuda
