// cuda/flash2.cu — FlashAttention-2 forward on tensor cores (mma.sync m16n8k16, fp32 accumulate).
//
// Loop order (FA2): one thread block per query block Q_i (B_r rows) of one head; it streams
// K_j, V_j (B_c rows each) through shared memory with a 2-stage cp.async pipeline, keeps
// S_ij = Q_i K_j^T, the running max m_i, the running sum l_i and the unnormalised O_i in
// registers, and writes O_i = O_i / l_i and LSE_i = m_i + log l_i once at the end.
// Each warp owns 16 query rows: B_r = 16 * warps.
//   d = 128: B_r = 128 (8 warps), B_c = 64;  d = 64: B_r = 128 (8 warps), B_c = 128.
// Softmax in base 2: scores are multiplied by scale * log2(e) inside the exponent (one FFMA + EX2
// per score); rescale of O_i by 2^(m_old - m_new) once per K/V block; one division at the end.
// Causal: key blocks entirely above the diagonal are not visited; blocks that cross it are
// masked element by element; a warp whose 16 rows all precede a block skips its arithmetic.
//
// Launch shape: grid (T_r = ceil(N / B_r), B * H), block 32 * warps threads; heavy causal blocks
//   (large i) are launched first.
// SRAM (dynamic shared memory), e = 2 bytes:
//   Q_i  (B_r, d)            B_r d e      d=128: 32 KiB   d=64: 16 KiB
//   K_j  2 stages x (B_c, d) 2 B_c d e    d=128: 32 KiB   d=64: 32 KiB
//   V_j  2 stages x (B_c, d) 2 B_c d e    d=128: 32 KiB   d=64: 32 KiB
//   total                                 d=128: 96 KiB   d=64: 80 KiB   (O_i staged in Q_i's space)
// HBM traffic (per head; the simulator's flash2 with the same B_r):
//   read Q once (N d e), read K, V once per query block (2 T_r N d e; causal about half),
//   write O once (N d e) and LSE (4 N bytes).
// Run/check: flashsim bench --variant flash2 --seq 4096 --head-dim 128 ; ctest -L gpu
#include "cuda/mma.cuh"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

template <int D> struct Fwd;
template <> struct Fwd<128> { static constexpr int BR = 128, BC = 64, WARPS = 8; };
template <> struct Fwd<64> { static constexpr int BR = 128, BC = 128, WARPS = 8; };

template <int D>
constexpr int fwd_smem_bytes() {
    return (Fwd<D>::BR * D + 4 * Fwd<D>::BC * D) * 2;
}

template <typename T, int D, bool CAUSAL>
__global__ void __launch_bounds__(Fwd<D>::WARPS * 32, 1)
    flash2_fwd_kernel(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
                      float* __restrict__ LSE, int N, float scale, float scale_log2) {
    constexpr int BR = Fwd<D>::BR, BC = Fwd<D>::BC, THREADS = Fwd<D>::WARPS * 32;
    constexpr int NB_S = BC / 8;   // 8-column blocks of S_ij per warp row strip
    constexpr int NB_O = D / 8;    // 8-column blocks of O_i
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
    const int q0 = i * BR;                 // first query row of the block
    const int wq0 = q0 + warp * 16;        // first query row of this warp

    int T_c = (N + BC - 1) / BC;
    if (CAUSAL) T_c = min(T_c, (min(q0 + BR, N) - 1) / BC + 1);

    load_tile_async<BR, D, THREADS>(sQ, Qh, q0, N);
    load_tile_async<BC, D, THREADS>(sK, Kh, 0, N);
    load_tile_async<BC, D, THREADS>(sV, Vh, 0, N);
    cp_async_commit();

    uint32_t qf[D / 16][4];       // Q_i rows of this warp as A fragments, (16, d)
    float o[NB_O][4];             // O_i accumulator, (16, d) per warp
    float m[2] = {-INFINITY, -INFINITY};  // running max of rows g and g+8 (raw score units)
    float l[2] = {0.0f, 0.0f};            // running sum (this thread's columns only until the end)
#pragma unroll
    for (int nb = 0; nb < NB_O; ++nb) o[nb][0] = o[nb][1] = o[nb][2] = o[nb][3] = 0.0f;

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
        if (j == 0) {
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk)
                ldmatrix_x4(qf[kk], sQ + swz<D>(warp * 16 + (lane % 8) + ((lane / 8) % 2) * 8, kk * 16 + (lane / 16) * 8));
        }
        const int k0 = j * BC;  // first key of the block
        const bool warp_active = !CAUSAL || k0 <= wq0 + 15;
        if (warp_active) {
            const T* sKj = sK + stage * BC * D;
            const T* sVj = sV + stage * BC * D;
            // S_ij = Q_i K_j^T  (16, B_c) per warp
            float s[NB_S][4];
#pragma unroll
            for (int nb = 0; nb < NB_S; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = 0.0f;
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
#pragma unroll
                for (int nb2 = 0; nb2 < NB_S / 2; ++nb2) {
                    uint32_t b[4];
                    ldmatrix_x4(b, sKj + swz<D>(nb2 * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8));
                    mma16816<T>(s[2 * nb2], qf[kk], b[0], b[1]);
                    mma16816<T>(s[2 * nb2 + 1], qf[kk], b[2], b[3]);
                }
            }
            // mask keys past N and, causal, keys after the query
            const bool tail = k0 + BC > N;
            const bool diag = CAUSAL && k0 + BC - 1 > wq0;
            if (tail || diag) {
#pragma unroll
                for (int nb = 0; nb < NB_S; ++nb)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int col = k0 + nb * 8 + 2 * t + (e & 1);
                        const int row = wq0 + g + (e >> 1) * 8;
                        if (col >= N || (CAUSAL && col > row)) s[nb][e] = -INFINITY;
                    }
            }
            // online softmax, rows g (h = 0) and g + 8 (h = 1)
#pragma unroll
            for (int h = 0; h < 2; ++h) {
                float mx = m[h];
#pragma unroll
                for (int nb = 0; nb < NB_S; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * h], s[nb][2 * h + 1]));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
                mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
                const float base = mx == -INFINITY ? 0.0f : mx * scale_log2;
                const float corr = fast_exp2(m[h] * scale_log2 - base);  // 0 at the first block
                m[h] = mx;
                float sum = 0.0f;
#pragma unroll
                for (int nb = 0; nb < NB_S; ++nb) {
                    s[nb][2 * h] = fast_exp2(fmaf(s[nb][2 * h], scale_log2, -base));
                    s[nb][2 * h + 1] = fast_exp2(fmaf(s[nb][2 * h + 1], scale_log2, -base));
                    sum += s[nb][2 * h] + s[nb][2 * h + 1];
                }
                l[h] = l[h] * corr + sum;
#pragma unroll
                for (int nb = 0; nb < NB_O; ++nb) { o[nb][2 * h] *= corr; o[nb][2 * h + 1] *= corr; }
            }
            // O_i += P_ij V_j, P_ij rounded to the storage type as the A operand
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk) {
                uint32_t a[4];
                a[0] = pack2<T>(s[2 * kk][0], s[2 * kk][1]);
                a[1] = pack2<T>(s[2 * kk][2], s[2 * kk][3]);
                a[2] = pack2<T>(s[2 * kk + 1][0], s[2 * kk + 1][1]);
                a[3] = pack2<T>(s[2 * kk + 1][2], s[2 * kk + 1][3]);
#pragma unroll
                for (int nd2 = 0; nd2 < NB_O / 2; ++nd2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(b, sVj + swz<D>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, nd2 * 16 + (lane / 16) * 8));
                    mma16816<T>(o[2 * nd2], a, b[0], b[1]);
                    mma16816<T>(o[2 * nd2 + 1], a, b[2], b[3]);
                }
            }
        }
        __syncthreads();  // stage is overwritten by the prefetch of iteration j + 1
    }

    // finish: l over the quad, O_i / l_i, LSE_i = scale m_i + ln l_i
#pragma unroll
    for (int h = 0; h < 2; ++h) {
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 1);
        l[h] += __shfl_xor_sync(0xffffffffu, l[h], 2);
    }
    const float inv_l[2] = {l[0] > 0.0f ? 1.0f / l[0] : 0.0f, l[1] > 0.0f ? 1.0f / l[1] : 0.0f};
    // stage O_i in this warp's rows of sQ (no other warp reads them), then 16-byte stores
    T* sO = sQ;
#pragma unroll
    for (int nb = 0; nb < NB_O; ++nb) {
        const int col = nb * 8 + 2 * t;
        *reinterpret_cast<uint32_t*>(sO + swz<D>(warp * 16 + g, col)) = pack2<T>(o[nb][0] * inv_l[0], o[nb][1] * inv_l[0]);
        *reinterpret_cast<uint32_t*>(sO + swz<D>(warp * 16 + g + 8, col)) = pack2<T>(o[nb][2] * inv_l[1], o[nb][3] * inv_l[1]);
    }
    if (LSE != nullptr && t == 0) {
        float* lse = LSE + static_cast<size_t>(blockIdx.y) * N;
        if (wq0 + g < N) lse[wq0 + g] = m[0] * scale + logf(l[0]);
        if (wq0 + g + 8 < N) lse[wq0 + g + 8] = m[1] * scale + logf(l[1]);
    }
    __syncwarp();
    T* Oh = O + head;
#pragma unroll
    for (int k = 0; k < 16 * D / 8 / 32; ++k) {
        const int c = lane + 32 * k;
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        if (wq0 + r < N)
            *reinterpret_cast<uint4*>(Oh + static_cast<size_t>(wq0 + r) * D + col) =
                *reinterpret_cast<const uint4*>(sO + swz<D>(warp * 16 + r, col));
    }
}

template <typename T, int D, bool CAUSAL>
void launch_fwd(const sim::Problem& p, const Tensors& t, cudaStream_t s) {
    const int N = static_cast<int>(p.seq);
    constexpr int smem = fwd_smem_bytes<D>();
    auto kernel = flash2_fwd_kernel<T, D, CAUSAL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const dim3 grid((N + Fwd<D>::BR - 1) / Fwd<D>::BR, static_cast<unsigned>(p.heads_total()));
    const float scale = static_cast<float>(p.softmax_scale());
    kernel<<<grid, Fwd<D>::WARPS * 32, smem, s>>>(static_cast<const T*>(t.Q), static_cast<const T*>(t.K),
                                                  static_cast<const T*>(t.V), static_cast<T*>(t.O), t.LSE, N, scale,
                                                  scale * 1.4426950408889634f);
    LAUNCH_CHECK();
}

}  // namespace

TileConfig flash2_tiles(const sim::Problem& p) {
    TileConfig c;
    c.variant = "flash2";
    c.loop_order = "q_outer";
    c.stages = 2;
    if (p.head_dim == 128) {
        c.block_rows = Fwd<128>::BR; c.block_cols = Fwd<128>::BC; c.smem_bytes = fwd_smem_bytes<128>(); c.threads = Fwd<128>::WARPS * 32;
    } else if (p.head_dim == 64) {
        c.block_rows = Fwd<64>::BR; c.block_cols = Fwd<64>::BC; c.smem_bytes = fwd_smem_bytes<64>(); c.threads = Fwd<64>::WARPS * 32;
    } else {
        throw std::runtime_error("flash2: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) + ")");
    }
    // registers hold O_i (B_r, d) and S_ij / P_ij (B_r, B_c) in fp32, and m_i, l_i
    c.sram_bytes = c.smem_bytes + (c.block_rows * static_cast<int>(p.head_dim) + c.block_rows * c.block_cols + 2 * c.block_rows) * 4;
    return c;
}

void flash2_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    (void)ws;
    (void)flash2_tiles(p);  // validates d
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128) {
            if (p.causal) launch_fwd<T, 128, true>(p, t, s); else launch_fwd<T, 128, false>(p, t, s);
        } else {
            if (p.causal) launch_fwd<T, 64, true>(p, t, s); else launch_fwd<T, 64, false>(p, t, s);
        }
    });
}

}  // namespace fcuda
