// cuda/flash1.cu — FlashAttention (the paper's Algorithm 1) on tensor cores.
//
// Algorithm 1 walks key/value blocks j in the outer loop and query blocks i in the inner loop;
// after every inner step it writes O_i, l_i, m_i back to HBM and reads them again at the next j.
// Here the outer loop is on the host: one launch per j (T_c launches), and each launch runs the
// inner loop over i in parallel: thread block (g, bh) loads K_j, V_j once into shared memory and
// then walks query blocks i = g, g + G, g + 2G, ... of head bh. Query block i (B_r = 128 rows) is
// split into 8 strips of 16 rows, one a warp; a warp's step needs nothing from the other warps,
// so after K_j, V_j have arrived no block-wide barrier remains. Per inner step (i, j), per strip:
//   read m_i, l_i, O_i (fp32) from HBM into registers (issued first, used after the products);
//   S_ij = Q_i K_j^T (mma.sync m16n8k16, fp32 accumulate; S stays in registers);
//   m~ = rowmax(scale S_ij), P~ = exp(scale S_ij - m~) (fp32), l~ = rowsum(P~);
//   m_new = max(m_i, m~), l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~;
//   O_i <- alpha O_i + (beta P~) V_j, alpha = l_i e^(m_i - m_new) / l_new, beta = e^(m~ - m_new) / l_new
//     (the accumulator starts at alpha O_i; beta P~ is rounded to the storage type as the mma's
//     A operand, straight from the S registers);
//   write O_i (fp32), l_new, m_new back to HBM.
// Before the first launch O = 0, l = 0, m = -inf (the paper's line 2); after the last, O (fp32) is
// rounded into the output tensor. Causal: steps (i, j) with every key after every query of block
// i are skipped (they would change nothing); the others are masked element by element (a strip
// whose rows all precede the block skips its products but still rewrites O_i, l_i, m_i unchanged).
//
// Blocks: B_r = 128, B_c = 256 for d = 64 and 128. (B_c > d, so the per-step O_i round trip,
// 8 N d T_c bytes a head, is below standard's 8 N^2 of S and P.)
// Launch shape: T_c launches of grid (G, B*H), 256 threads (8 warps), G = max(1, min(query blocks
// of the launch, SMs / (B*H))): one block per SM (shared memory), one wave when B*H <= SMs.
// SRAM (dynamic shared memory, tiles XOR-swizzled as in flash2, no padding), e = 2 bytes:
//   K_j (B_c, d) e | V_j (B_c, d) e | Q_i: per warp 2 x (16, d) e (the warp's strip of the next
//   query block arrives by cp.async during this step)
//   d=128: 64 + 64 + 64 KiB = 192 KiB;  d=64: 32 + 32 + 32 KiB = 96 KiB.
//   Registers per warp: S_ij (16, B_c) fp32 and O_i (16, d) fp32, m_i, l_i.
// HBM traffic (per head, the simulator's flash1): K, V read once (2 N d e); per step (i, j):
//   Q_i read (B_r d e), O_i read + written (2 B_r d 4), l_i, m_i read + written (4 B_r 4);
//   so Q: T_c N d e, O: 8 T_c N d, l+m: 16 T_c N; plus O init (4 N d), l/m init (8 N) and the final
//   conversion (4 N d read, N d e written). K_j, V_j are re-read by each of the G blocks of a
//   launch (from L2: they are 2 B_c d e = 128 KiB per head at d = 128).
// The first version of this file (WMMA, S and P through shared memory, B_r = 32) is in git
// history (bb547bd); cuda/NOTES.md has both versions' times.
// Run/check: flashsim bench --variant flash1 --seq 1024 ; ctest -L gpu
#include "cuda/mma.cuh"
#include "cuda/numbers.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

constexpr int kWarps = 8, kThreads = 32 * kWarps;
constexpr int kBR = 16 * kWarps;  // B_r: one 16-row strip a warp
constexpr int kBC = 256;          // B_c

template <int D>
struct F1Layout {
    static constexpr int BR = kBR, BC = kBC;
    static constexpr int kv_bytes = BC * D * 2;      // K_j or V_j
    static constexpr int q_bytes = 2 * kBR * D * 2;  // every warp's two Q strips
    static constexpr int bytes = 2 * kv_bytes + q_bytes;
    // on-chip bytes besides shared memory: S_ij (B_r, B_c) and O_i (B_r, d) fp32, m_i, l_i
    static constexpr int reg_bytes = (BR * BC + BR * D + 2 * BR) * 4;
};

// O = 0, l = 0, m = -inf  (Algorithm 1, line 2)
__global__ void flash1_init(float* O32, float* l, float* m, size_t od, size_t rows) {
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < od; k += gridDim.x * blockDim.x) {
        O32[k] = 0.0f;
        if (k < rows) {
            l[k] = 0.0f;
            m[k] = -INFINITY;
        }
    }
}

template <typename T>
__global__ void flash1_finish(const float* O32, T* O, size_t count) {
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += gridDim.x * blockDim.x)
        O[k] = StorageTraits<T>::from_float(O32[k]);
}

// One outer iteration j of Algorithm 1 for all heads: block (g, bh) runs inner steps
// i = i_first + g, i_first + g + G, ...; warp w takes rows [16 w, 16 w + 16) of each Q_i.
template <typename T, int D, bool CAUSAL>
__global__ void __launch_bounds__(kThreads, 1)
    flash1_step(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, float* __restrict__ O32,
                float* __restrict__ l, float* __restrict__ m, int N, int j, float scale, float scale_log2) {
    constexpr int BR = kBR, BC = kBC;
    constexpr int NB_S = BC / 8;  // 8-column blocks of S_ij per strip
    constexpr int NB_O = D / 8;   // 8-column blocks of O_i
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* sK = reinterpret_cast<T*>(smem_raw);  // (B_c, d)
    T* sV = sK + BC * D;                     // (B_c, d)
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const int g = lane / 4, t = lane % 4;
    T* sQw = sV + BC * D + warp * 2 * 16 * D;  // this warp's 2 x (16, d)

    const int bh = blockIdx.y;
    const size_t head = static_cast<size_t>(bh) * N * D;
    const int k0 = j * BC;
    const int T_r = (N + BR - 1) / BR;
    const T* Qh = Q + head;
    float* Oh = O32 + head;
    float* mh = m + static_cast<size_t>(bh) * N;
    float* lh = l + static_cast<size_t>(bh) * N;

    // this warp's 16 rows of Q_i, by cp.async (zero rows past N)
    auto fetch_q = [&](int i, T* dst) {
#pragma unroll
        for (int k = 0; k < 16 * D / 8 / 32; ++k) {
            const int c = lane + 32 * k;
            const int r = c / (D / 8), col = (c % (D / 8)) * 8;
            const int row = i * BR + warp * 16 + r;
            const bool valid = row < N;
            cp_async16(dst + swz<D>(r, col), valid ? Qh + static_cast<size_t>(row) * D + col : Qh, valid);
        }
        cp_async_commit();
    };

    load_tile_async<BC, D, kThreads>(sK, K + head, k0, N);  // K_j
    load_tile_async<BC, D, kThreads>(sV, V + head, k0, N);  // V_j
    cp_async_commit();
    const int i_first = CAUSAL ? k0 / BR : 0;  // earlier query blocks see none of these keys
    int i = i_first + static_cast<int>(blockIdx.x);
    if (i < T_r) fetch_q(i, sQw);
    cp_async_wait<0>();
    __syncthreads();  // K_j, V_j (and the first Q strips) are in shared memory

    for (int buf = 0; i < T_r; i += gridDim.x, buf ^= 1) {
        const int r0 = i * BR + warp * 16;  // first query row of this warp's strip
        const int ra = r0 + g, rb = r0 + g + 8;
        const bool va = ra < N, vb = rb < N;
        // m_i, l_i, O_i of rows ra, rb: requested now, used after the two products
        float mi[2], li[2];
        mi[0] = va ? mh[ra] : -INFINITY;
        mi[1] = vb ? mh[rb] : -INFINITY;
        li[0] = va ? lh[ra] : 0.0f;
        li[1] = vb ? lh[rb] : 0.0f;
        float o[NB_O][4];
#pragma unroll
        for (int nb = 0; nb < NB_O; ++nb) {
            const int col = nb * 8 + 2 * t;
            const float2 x =
                va ? *reinterpret_cast<const float2*>(Oh + static_cast<size_t>(ra) * D + col) : make_float2(0.f, 0.f);
            const float2 y =
                vb ? *reinterpret_cast<const float2*>(Oh + static_cast<size_t>(rb) * D + col) : make_float2(0.f, 0.f);
            o[nb][0] = x.x;
            o[nb][1] = x.y;
            o[nb][2] = y.x;
            o[nb][3] = y.y;
        }
        // the next query block's strip into the other buffer (read by this warp one step ago)
        __syncwarp();
        if (i + static_cast<int>(gridDim.x) < T_r) {
            fetch_q(i + gridDim.x, sQw + (buf ^ 1) * 16 * D);
            cp_async_wait<1>();
        } else {
            cp_async_wait<0>();
        }
        __syncwarp();
        const T* sQc = sQw + buf * 16 * D;

        // S_ij = Q_i K_j^T, (16, B_c) per warp
        const bool active = !CAUSAL || k0 <= r0 + 15;  // some key of the block is visible to the strip
        float s[NB_S][4];
#pragma unroll
        for (int nb = 0; nb < NB_S; ++nb) s[nb][0] = s[nb][1] = s[nb][2] = s[nb][3] = active ? 0.0f : -INFINITY;
        if (active) {
#pragma unroll
            for (int kk = 0; kk < D / 16; ++kk) {
                uint32_t qa[4];
                ldmatrix_x4(qa, sQc + swz<D>((lane % 8) + ((lane / 8) % 2) * 8, kk * 16 + (lane / 16) * 8));
#pragma unroll
                for (int nb2 = 0; nb2 < NB_S / 2; ++nb2) {
                    uint32_t b[4];
                    ldmatrix_x4(b,
                                sK + swz<D>(nb2 * 16 + (lane % 8) + (lane / 16) * 8, kk * 16 + ((lane / 8) % 2) * 8));
                    mma16816<T>(s[2 * nb2], qa, b[0], b[1]);
                    mma16816<T>(s[2 * nb2 + 1], qa, b[2], b[3]);
                }
            }
            // mask keys past N and, causal, keys after the query
            const bool tail = k0 + BC > N;
            const bool diag = CAUSAL && k0 + BC - 1 > r0;
            if (tail || diag) {
#pragma unroll
                for (int nb = 0; nb < NB_S; ++nb)
#pragma unroll
                    for (int e = 0; e < 4; ++e) {
                        const int col = k0 + nb * 8 + 2 * t + (e & 1);
                        const int row = r0 + g + (e >> 1) * 8;
                        if (col >= N || (CAUSAL && col > row)) s[nb][e] = -INFINITY;
                    }
            }
        }

        // statistics of the block and the update weights, rows ra (h = 0) and rb (h = 1)
        float beta[2];
#pragma unroll
        for (int h = 0; h < 2; ++h) {
            float mx = -INFINITY;  // max of raw scores
#pragma unroll
            for (int nb = 0; nb < NB_S; ++nb) mx = fmaxf(mx, fmaxf(s[nb][2 * h], s[nb][2 * h + 1]));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 1));
            mx = fmaxf(mx, __shfl_xor_sync(0xffffffffu, mx, 2));
            const float base = mx == -INFINITY ? 0.0f : mx * scale_log2;
            float lt = 0.0f;  // l~
#pragma unroll
            for (int nb = 0; nb < NB_S; ++nb) {
                s[nb][2 * h] = fast_exp2(fmaf(s[nb][2 * h], scale_log2, -base));
                s[nb][2 * h + 1] = fast_exp2(fmaf(s[nb][2 * h + 1], scale_log2, -base));
                lt += s[nb][2 * h] + s[nb][2 * h + 1];
            }
            lt += __shfl_xor_sync(0xffffffffu, lt, 1);
            lt += __shfl_xor_sync(0xffffffffu, lt, 2);
            const float mt = mx == -INFINITY ? -INFINITY : mx * scale;  // m~, in units of scale * S
            const float mn = fmaxf(mi[h], mt);
            const float ea = mi[h] == -INFINITY ? 0.0f : __expf(mi[h] - mn);
            const float eb = mt == -INFINITY ? 0.0f : __expf(mt - mn);
            const float ln = ea * li[h] + eb * lt;
            const float alpha = ln > 0.0f ? li[h] * ea / ln : 0.0f;
            beta[h] = ln > 0.0f ? eb / ln : 0.0f;
#pragma unroll
            for (int nb = 0; nb < NB_O; ++nb) {
                o[nb][2 * h] *= alpha;
                o[nb][2 * h + 1] *= alpha;
            }
            const int row = h == 0 ? ra : rb;
            if (t == 0 && row < N) {
                mh[row] = mn;
                lh[row] = ln;
            }
        }

        // P~ scaled by beta, rounded to the storage type: the A operands of P~ V_j (this frees S)
        uint32_t pa[BC / 16][4];
#pragma unroll
        for (int kk = 0; kk < BC / 16; ++kk) {
            pa[kk][0] = pack2<T>(s[2 * kk][0] * beta[0], s[2 * kk][1] * beta[0]);
            pa[kk][1] = pack2<T>(s[2 * kk][2] * beta[1], s[2 * kk][3] * beta[1]);
            pa[kk][2] = pack2<T>(s[2 * kk + 1][0] * beta[0], s[2 * kk + 1][1] * beta[0]);
            pa[kk][3] = pack2<T>(s[2 * kk + 1][2] * beta[1], s[2 * kk + 1][3] * beta[1]);
        }
        // O_i += (beta P~_ij) V_j
        if (active) {
#pragma unroll
            for (int kk = 0; kk < BC / 16; ++kk) {
#pragma unroll
                for (int nd2 = 0; nd2 < NB_O / 2; ++nd2) {
                    uint32_t b[4];
                    ldmatrix_x4_trans(
                        b, sV + swz<D>(kk * 16 + (lane % 8) + ((lane / 8) % 2) * 8, nd2 * 16 + (lane / 16) * 8));
                    mma16816<T>(o[2 * nd2], pa[kk], b[0], b[1]);
                    mma16816<T>(o[2 * nd2 + 1], pa[kk], b[2], b[3]);
                }
            }
        }

        // O_i back to HBM (fp32)
#pragma unroll
        for (int nb = 0; nb < NB_O; ++nb) {
            const int col = nb * 8 + 2 * t;
            if (va)
                *reinterpret_cast<float2*>(Oh + static_cast<size_t>(ra) * D + col) = make_float2(o[nb][0], o[nb][1]);
            if (vb)
                *reinterpret_cast<float2*>(Oh + static_cast<size_t>(rb) * D + col) = make_float2(o[nb][2], o[nb][3]);
        }
    }
}

template <typename T, int D, bool CAUSAL>
void launch_all(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    using L = F1Layout<D>;
    const int N = static_cast<int>(p.seq);
    const int BH = static_cast<int>(p.heads_total());
    const size_t od = static_cast<size_t>(BH) * N * D, rows = static_cast<size_t>(BH) * N;
    ws.a.ensure(od * 4);    // O (fp32)
    ws.b.ensure(rows * 4);  // l
    ws.c.ensure(rows * 4);  // m
    float* O32 = ws.a.as<float>();
    float* l = ws.b.as<float>();
    float* m = ws.c.as<float>();
    const int sms = sm_count();
    flash1_init<<<1024, 256, 0, s>>>(O32, l, m, od, rows);
    LAUNCH_CHECK();
    auto kernel = flash1_step<T, D, CAUSAL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::bytes));
    const int T_r = (N + L::BR - 1) / L::BR, T_c = (N + L::BC - 1) / L::BC;
    const float scale = static_cast<float>(p.softmax_scale());
    for (int j = 0; j < T_c; ++j) {                                   // Algorithm 1, line 5: for 1 <= j <= T_c
        const int blocks_i = T_r - (CAUSAL ? j * L::BC / L::BR : 0);  // query blocks this launch visits
        const int G = std::max(1, std::min(blocks_i, sms / BH));
        kernel<<<dim3(G, BH), kThreads, L::bytes, s>>>(static_cast<const T*>(t.Q), static_cast<const T*>(t.K),
                                                       static_cast<const T*>(t.V), O32, l, m, N, j, scale,
                                                       scale * LOG2E);
        LAUNCH_CHECK();
    }
    flash1_finish<T><<<1024, 256, 0, s>>>(O32, static_cast<T*>(t.O), od);
    LAUNCH_CHECK();
}

template <int D>
TileConfig tiles_of() {
    using L = F1Layout<D>;
    TileConfig c;
    c.variant = "flash1";
    c.algo = "flash1";
    c.loop_order = "kv_outer";
    c.launch_per_kv_block = true;  // one launch per K/V block j
    c.stages = 1;
    c.threads = kThreads;
    c.layout = "8 warps, each owning a 16-row strip of Q_i; S_ij and O_i in registers (mma.sync)";
    c.block_rows = L::BR;
    c.block_cols = L::BC;
    c.smem_bytes = L::bytes;
    c.sram_bytes = L::bytes + L::reg_bytes;  // shared memory plus the tiles held in registers
    return c;
}

}  // namespace

TileConfig flash1_tiles(const sim::Problem& p) {
    if (p.head_dim == 128) return tiles_of<128>();
    if (p.head_dim == 64) return tiles_of<64>();
    throw std::runtime_error("flash1: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) + ")");
}

void flash1_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    (void)flash1_tiles(p);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128) {
            if (p.causal)
                launch_all<T, 128, true>(p, t, ws, s);
            else
                launch_all<T, 128, false>(p, t, ws, s);
        } else {
            if (p.causal)
                launch_all<T, 64, true>(p, t, ws, s);
            else
                launch_all<T, 64, false>(p, t, ws, s);
        }
    });
}

}  // namespace fcuda
