// cuda/flash2.cu — FlashAttention-2 forward on tensor cores (mma.sync m16n8k16, fp32 accumulate).
//
// Loop order (FA2): one thread block per query block Q_i (B_r rows) of one head; it streams
// K_j, V_j (B_c rows each) through shared memory with a 2-stage cp.async pipeline, keeps
// S_ij = Q_i K_j^T, the running max m_i, the running sum l_i and the unnormalised O_i in
// registers, and writes O_i = O_i / l_i and LSE_i = m_i + log l_i once at the end.
// Warps own strips of 16 query rows (B_r = 16 * strips per warp * warps). Tilings (Tiling<>):
//   default, d = 64 and 128: B_r = 128, B_c = 64, 4 warps x 2 strips (Q fragments reloaded
//     from shared memory each k-step, every K/V fragment feeds both strips);
//   FLASHSIM_FLASH2_FWD=bc32 (d = 128): the same with B_c = 32 (what the H200 run used; it ties
//     with the default, see cuda/NOTES.md);
//   FLASHSIM_FLASH2_FWD=16rows: B_r = 128, 8 warps x 1 strip, Q in registers, B_c = 64 (d=128)
//     or 128 (d=64): the first version, 8-9% slower.
//   (FLASHSIM_FLASH2_FWD_D128 / _D64 set it per head dim.)
// Softmax in base 2: scores are multiplied by scale * log2(e) inside the exponent (one FFMA + EX2
// per score); rescale of O_i by 2^(m_old - m_new) once per K/V block; one division at the end.
// Causal: key blocks entirely above the diagonal are not visited; blocks that cross it are
// masked element by element; a warp whose rows all precede a block skips its arithmetic.
//
// Launch shape: grid (T_r = ceil(N / B_r), B * H), block 32 * warps threads; heavy causal blocks
//   (large i) are launched first.
// SRAM (dynamic shared memory), e = 2 bytes, default tiling:
//   Q_i  (B_r, d)            B_r d e      d=128: 32 KiB   d=64: 16 KiB
//   K_j  2 stages x (B_c, d) 2 B_c d e    d=128: 32 KiB   d=64: 16 KiB
//   V_j  2 stages x (B_c, d) 2 B_c d e    d=128: 32 KiB   d=64: 16 KiB
//   total                                 d=128: 96 KiB   d=64: 48 KiB   (O_i staged in Q_i's space)
//   Registers per warp hold O_i (32 rows x d fp32) and S_ij (32 x B_c fp32): 255 a thread at d=128.
// HBM traffic (per head; the simulator's flash2 with the same B_r, B_c):
//   read Q once (N d e), read K, V once per query block (2 T_r N d e; causal about half),
//   write O once (N d e) and LSE (4 N bytes). On the H200 nearly all K/V re-reads hit L2.
// Run/check: flashsim bench --variant flash2 --seq 4096 --head-dim 128 ; ctest -L gpu
#include <cstdlib>
#include <string>

#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

// A tiling: B_r query rows per block, B_c key rows per K/V tile, WARPS warps, each owning
// MT consecutive 16-row strips (B_r = 16 MT WARPS). MT = 1 keeps Q_i's fragments in registers;
// MT = 2 reloads them from shared memory at each k-step but reuses every K/V fragment for two
// strips, halving shared-memory reads per tensor-core instruction (FA2's arrangement).
template <int BR_, int BC_, int WARPS_>
struct Tiling {
    static constexpr int BR = BR_, BC = BC_, WARPS = WARPS_, MT = BR_ / (16 * WARPS_);
    static_assert(MT == 1 || MT == 2, "one or two 16-row strips per warp");
    template <int D>
    static constexpr int smem_bytes() {
        return (BR * D + 4 * BC * D) * 2;
    }
};
// The default tilings (the first of each pair); the alternative is picked with
// FLASHSIM_FLASH2_FWD=16rows (MT = 1) for side-by-side measurement.
using Fwd128 = Tiling<128, 64, 4>;   // d = 128: 2 strips a warp
using Fwd64 = Tiling<128, 64, 4>;    // d = 64
using Fwd128b = Tiling<128, 64, 8>;  // 1 strip a warp, 8 warps
using Fwd64b = Tiling<128, 128, 8>;
using Fwd128c = Tiling<128, 32, 4>;  // FLASHSIM_FLASH2_FWD=bc32: 2 strips a warp, B_c = 32

template <typename T, int D, typename Tl, bool CAUSAL>
__global__ void __launch_bounds__(Tl::WARPS * 32, 1)
    flash2_fwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
                      float* __restrict__ LSE, int N, float scale, float scale_log2) {
    constexpr int BR = Tl::BR, BC = Tl::BC, THREADS = Tl::WARPS * 32, MT = Tl::MT;
    constexpr int NB_S = BC / 8;  // 8-column blocks of S_ij per strip
    constexpr int NB_O = D / 8;   // 8-column blocks of O_i
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* sQ = reinterpret_cast<T*>(smem_raw);  // (B_r, d)
    T* sK = sQ + BR * D;                     // 2 x (B_c, d)
    T* sV = sK + 2 * BC * D;                 // 2 x (B_c, d)

    const int T_r = gridDim.x;
    const int i = T_r - 1 - static_cast<int>(blockIdx.x);  // heavy causal blocks first
    const size_t head = static_cast<size_t>(blockIdx.y) * N * D;
    const T* Qh = Q + head;
    const T* Kh = K + head;
    const T* Vh = V + head;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    const int q0 = i * BR;           // first query row of the block
    const int wr0 = warp * 16 * MT;  // first row of this warp within the block
    const int wq0 = q0 + wr0;        // ... as a query index

    int T_c = (N + BC - 1) / BC;
    if (CAUSAL) T_c = min(T_c, (min(q0 + BR, N) - 1) / BC + 1);

    load_tile_async<BR, D, THREADS>(sQ, Qh, q0, N);
    load_tile_async<BC, D, THREADS>(sK, Kh, 0, N);
    load_tile_async<BC, D, THREADS>(sV, Vh, 0, N);
    cp_async_commit();

    constexpr int QREG = MT == 1 ? D / 16 : 1;
    uint32_t qf[QREG][4];      // MT = 1: Q_i rows of this warp as A fragments, (16, d)
    float o[MT][NB_O][4];      // O_i accumulator, (16 MT, d) per warp
    float m[MT][2], l[MT][2];  // running max (raw score units) and sum of rows g, g+8 of each strip
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
        m[mt][0] = m[mt][1] = -INFINITY;
        l[mt][0] = l[mt][1] = 0.0f;
#pragma unroll
        for (int nb = 0; nb < NB_O; ++nb) o[mt][nb][0] = o[mt][nb][1] = o[mt][nb][2] = o[mt][nb][3] = 0.0f;
    }

    for (int j = 0; j < T_c; ++j) {
        const int stage = j & 1;
        if (j + 1 < T_c) {
            load_tile_async<BC, D, THREADS>(sK + (stage ^ 1) * BC * D, Kh, (j + 1) * BC, N);
            load_tile_async<BC, D, THREADS>(sV + (stage ^ 1) * BC * D, Vh, (j + 1) * BC, N);
            cp_async_commit();
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncthreads();
        if (MT == 1 && j == 0) {
#pragma unroll
            for (int kk = 0; kk < QREG; ++kk)
                ldmatrix_x4(qf[kk], sQ + swz<D>(wr0 + (lane % 8) + ((lane / 8) % 2) * 8, kk * 16 + (lane / 16) * 8));
        }
        const int k0 = j * BC;  // first key of the block
        const bool warp_active = !CAUSAL || k0 <= wq0 + 16 * MT - 1;
        if (warp_active) {
            const T* sKj = sK + stage * BC * D;
            const T* sVj = sV + stage * BC * D;
            // S_ij = Q_i K_j^T  (16 MT, B_c) per warp
            float s[MT][NB_S][4];
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int nb = 0; nb < NB_S; ++nb) s[mt][nb][0] = s[mt][nb][1] = s[mt][nb][2] = s[mt][nb][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t qa[MT][4];
                if constexpr (MT == 1) {
#pragma unroll
                    for (int e = 0; e < 4; ++e) qa[0][e] = qf[MT == 1 ? kk : 0][e];
                } else {
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt)
                        ldmatrix_x4(qa[mt], sQ + swz<D>(wr0 + mt * 16 + (lane % 8) + ((lane / 8) % 2) * 8,
                                                        kk * 16 + (lane / 16) * 8));
                }
#pragma unroll
                for (int nb2 = 0; nb2 < NB_S / 2; ++nb2) {
                    uint32_t b[4];
                    ldmatrix_x4(b,
                                sKj + swz<D>(nb2 * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(s[mt][2 * nb2], qa[mt], b[0], b[1]);
                        mma16816<T>(s[mt][2 * nb2 + 1], qa[mt], b[2], b[3]);
                    }
                }
            }
            // mask keys past N and, causal, keys after the query
            const bool tail = k0 + BC > N;
            const bool diag = CAUSAL && k0 + BC - 1 > wq0;
            if (tail || diag) {
#pragma unroll
                for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                    for (int nb = 0; nb < NB_S; ++nb)
#pragma unroll
                        for (int e = 0; e < 4; ++e) {
                            const int col = k0 + nb * 8 + 2 * t + (e & 1);
                            const int row = wq0 + mt * 16 + g + (e >> 1) * 8;
                            if (col >= N || (CAUSAL && col > row)) s[mt][nb][e] = -INFINITY;
                        }
            }
            // online softmax, rows g (h = 0) and g + 8 (h = 1) of each strip
#pragma unroll
            for (int mt = 0; mt < MT; ++mt)
#pragma unroll
                for (int h = 0; h < 2; ++h) {
                    float mx = m[mt][h];
#pragma unroll
                    for (int nb = 0; nb < NB_S; ++nb) mx = fmaxf(mx, fmaxf(s[mt][nb][2 * h], s[mt][nb][2 * h + 1]));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                    mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                    const float base = mx == -INFINITY ? 0.0f : mx * scale_log2;
                    const float corr = fast_exp2(m[mt][h] * scale_log2 - base);  // 0 at the first block
                    m[mt][h] = mx;
                    float sum = 0.0f;
#pragma unroll
                    for (int nb = 0; nb < NB_S; ++nb) {
                        s[mt][nb][2 * h] = fast_exp2(fmaf(s[mt][nb][2 * h], scale_log2, -base));
                        s[mt][nb][2 * h + 1] = fast_exp2(fmaf(s[mt][nb][2 * h + 1], scale_log2, -base));
                        sum += s[mt][nb][2 * h] + s[mt][nb][2 * h + 1];
                    }
                    l[mt][h] = l[mt][h] * corr + sum;
#pragma unroll
                    for (int nb = 0; nb < NB_O; ++nb) {
                        o[mt][nb][2 * h] *= corr;
                        o[mt][nb][2 * h + 1] *= corr;
                    }
                }
                // O_i += P_ij V_j, P_ij rounded to the storage type as the A operand
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk) {
                uint32_t a[MT][4];
#pragma unroll
                for (int mt = 0; mt < MT; ++mt) {
                    a[mt][0] = pack2<T>(s[mt][2 * kk][0], s[mt][2 * kk][1]);
                    a[mt][1] = pack2<T>(s[mt][2 * kk][2], s[mt][2 * kk][3]);
                    a[mt][2] = pack2<T>(s[mt][2 * kk + 1][0], s[mt][2 * kk + 1][1]);
                    a[mt][3] = pack2<T>(s[mt][2 * kk + 1][2], s[mt][2 * kk + 1][3]);
                }
#pragma unroll
                for (int nd2 = 0; nd2 < NB_O / 2; ++nd2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(
                        b, sVj + swz<D>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, nd2 * 16 + (lane / 16) * 8));
#pragma unroll
                    for (int mt = 0; mt < MT; ++mt) {
                        mma16816<T>(o[mt][2 * nd2], a[mt], b[0], b[1]);
                        mma16816<T>(o[mt][2 * nd2 + 1], a[mt], b[2], b[3]);
                    }
                }
            }
        }
        __syncthreads();  // stage is overwritten by the prefetch of iteration j + 1
    }

    // finish: l over the quad, O_i / l_i, LSE_i = scale m_i + ln l_i; O_i staged in this warp's
    // own rows of sQ (only this warp ever reads them), then written with 16-byte stores
    T* sO = sQ;
#pragma unroll
    for (int mt = 0; mt < MT; ++mt) {
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            l[mt][h] += __shfl_xor_sync(0xffffffffu, l[mt][h], 1);
            l[mt][h] += __shfl_xor_sync(0xffffffffu, l[mt][h], 2);
        }
        const float inv0 = l[mt][0] > 0.0f ? 1.0f / l[mt][0] : 0.0f;
        const float inv1 = l[mt][1] > 0.0f ? 1.0f / l[mt][1] : 0.0f;
        const int r = wr0 + mt * 16 + g;
#pragma unroll
        for (int nb = 0; nb < NB_O; ++nb) {
            const int col = nb * 8 + 2 * t;
            *reinterpret_cast<uint32_t*>(sO + swz<D>(r, col)) = pack2<T>(o[mt][nb][0] * inv0, o[mt][nb][1] * inv0);
            *reinterpret_cast<uint32_t*>(sO + swz<D>(r + 8, col)) = pack2<T>(o[mt][nb][2] * inv1, o[mt][nb][3] * inv1);
        }
        if (LSE != nullptr && t == 0) {
            float* lse = LSE + static_cast<size_t>(blockIdx.y) * N;
            if (q0 + r < N) lse[q0 + r] = m[mt][0] * scale + logf(l[mt][0]);
            if (q0 + r + 8 < N) lse[q0 + r + 8] = m[mt][1] * scale + logf(l[mt][1]);
        }
    }
    __syncwarp();
    T* Oh = O + head;
#pragma unroll
    for (int k = 0; k < 16 * MT * D / 8 / 32; ++k) {
        const int c = lane + 32 * k;
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        if (wq0 + r < N)
            *reinterpret_cast<uint4*>(Oh + static_cast<size_t>(wq0 + r) * D + col) =
                *reinterpret_cast<const uint4*>(sO + swz<D>(wr0 + r, col));
    }
}

template <typename T, int D, typename Tl, bool CAUSAL>
void launch_fwd(const sim::Problem& p, const Tensors& t, cudaStream_t s) {
    const int N = static_cast<int>(p.seq);
    constexpr int smem = Tl::template smem_bytes<D>();
    auto kernel = flash2_fwd_kernel<T, D, Tl, CAUSAL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid((N + Tl::BR - 1) / Tl::BR, static_cast<unsigned>(p.heads_total()));
    const float scale = static_cast<float>(p.softmax_scale());
    kernel<<<grid, Tl::WARPS * 32, smem, s>>>(static_cast<const T*>(t.Q), static_cast<const T*>(t.K),
                                              static_cast<const T*>(t.V), static_cast<T*>(t.O), t.LSE, N, scale,
                                              scale * LOG2E);
    LAUNCH_CHECK();
}

// FLASHSIM_FLASH2_FWD_D128 / FLASHSIM_FLASH2_FWD_D64 (else FLASHSIM_FLASH2_FWD) pick a tiling:
// "default" (2 strips a warp), "16rows" (1 strip a warp, 8 warps), "bc32" (d = 128: B_c = 32).
std::string tiling_choice(int64_t d) {
    const char* e = sim::knob(d == 128 ? "FLASHSIM_FLASH2_FWD_D128" : "FLASHSIM_FLASH2_FWD_D64");
    if (e == nullptr) e = sim::knob("FLASHSIM_FLASH2_FWD");
    return e == nullptr ? std::string("default") : std::string(e);
}
bool alternative_tiling(int64_t d) { return tiling_choice(d) == "16rows"; }
bool bc32_tiling(int64_t d) { return d == 128 && tiling_choice(d) == "bc32"; }

template <typename Tl>
TileConfig tiles_of(int d) {
    TileConfig c;
    c.variant = "flash2";
    c.algo = "flash2";
    c.loop_order = "q_outer";
    c.stages = 2;
    c.block_rows = Tl::BR;
    c.block_cols = Tl::BC;
    c.threads = Tl::WARPS * 32;
    c.layout = Tl::MT == 2 ? "each warp owns 2 strips of 16 query rows (Q fragments reloaded from shared memory)"
                           : "each warp owns 1 strip of 16 query rows (Q fragments in registers)";
    c.smem_bytes = d == 128 ? Tl::template smem_bytes<128>() : Tl::template smem_bytes<64>();
    // registers hold O_i (B_r, d) and S_ij / P_ij (B_r, B_c) in fp32, and m_i, l_i
    c.sram_bytes = c.smem_bytes + (Tl::BR * d + Tl::BR * Tl::BC + 2 * Tl::BR) * 4;
    return c;
}

}  // namespace

TileConfig flash2_tiles(const sim::Problem& p) {
    const bool alt = alternative_tiling(p.head_dim);
    if (p.head_dim == 128)
        return alt ? tiles_of<Fwd128b>(128) : bc32_tiling(p.head_dim) ? tiles_of<Fwd128c>(128) : tiles_of<Fwd128>(128);
    if (p.head_dim == 64) return alt ? tiles_of<Fwd64b>(64) : tiles_of<Fwd64>(64);
    throw std::runtime_error("flash2: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) + ")");
}

void flash2_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    (void)ws;
    (void)flash2_tiles(p);  // validates d
    const bool alt = alternative_tiling(p.head_dim);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128) {
            if (alt) {
                if (p.causal)
                    launch_fwd<T, 128, Fwd128b, true>(p, t, s);
                else
                    launch_fwd<T, 128, Fwd128b, false>(p, t, s);
            } else if (bc32_tiling(p.head_dim)) {
                if (p.causal)
                    launch_fwd<T, 128, Fwd128c, true>(p, t, s);
                else
                    launch_fwd<T, 128, Fwd128c, false>(p, t, s);
            } else {
                if (p.causal)
                    launch_fwd<T, 128, Fwd128, true>(p, t, s);
                else
                    launch_fwd<T, 128, Fwd128, false>(p, t, s);
            }
        } else {
            if (alt) {
                if (p.causal)
                    launch_fwd<T, 64, Fwd64b, true>(p, t, s);
                else
                    launch_fwd<T, 64, Fwd64b, false>(p, t, s);
            } else {
                if (p.causal)
                    launch_fwd<T, 64, Fwd64, true>(p, t, s);
                else
                    launch_fwd<T, 64, Fwd64, false>(p, t, s);
            }
        }
    });
}

}  // namespace fcuda
