// cuda/flash1.cu — FlashAttention (the paper's Algorithm 1) written plainly.
//
// Algorithm 1 walks key/value blocks j in the outer loop and query blocks i in the inner loop;
// after every inner step it writes O_i, l_i, m_i back to HBM and reads them again at the next j.
// Here the outer loop is on the host: one launch per j (T_c launches), and each launch runs the
// inner loop over i in parallel: thread block (g, bh) loads K_j, V_j once into shared memory and
// then walks query blocks i = g, g + G, g + 2G, ... of head bh. Per inner step (i, j):
//   load Q_i, m_i, l_i;  S_ij = scale Q_i K_j^T (tensor cores, WMMA, fp32 accumulate);
//   m~ = rowmax(S_ij), P~ = exp(S_ij - m~) (fp32, then rounded to the storage type), l~ = rowsum;
//   m_new = max(m_i, m~), l_new = e^(m_i - m_new) l_i + e^(m~ - m_new) l~;
//   O_i <- (l_i e^(m_i - m_new) O_i + e^(m~ - m_new) P~ V_j) / l_new   (O_i fp32 read + written);
//   write l_new, m_new.
// Before the first launch O = 0, l = 0, m = -inf (the paper's line 2); after the last, O (fp32) is
// rounded into the output tensor. Causal: steps (i, j) with every key after every query are
// skipped (they would change nothing); crossing blocks are masked element by element.
//
// Blocks: d = 128: B_r = 32, B_c = 256;  d = 64: B_r = 64, B_c = 256. (B_c > d, so the per-step
// O_i round trip, 8 N d T_c bytes a head, is below standard's 8 N^2 of S and P.)
// Launch shape: T_c launches of grid (G, B*H), 256 threads, G = min(T_r, ceil(2 * SMs / (B*H))).
// SRAM (dynamic shared memory, rows padded by 8 halves / 4 floats against bank conflicts):
//   K_j (B_c, d+8) e | V_j (B_c, d+8) e | Q_i 2 x (B_r, d+8) e (the next Q_i arrives by cp.async
//   during this step) | S_ij (B_r, B_c+4) fp32 (reused for P~V) | P~_ij (B_r, B_c+8) e |
//   alpha, beta, m_i, l_i (4 B_r fp32). O_i (fp32) is read into registers at the start of the step.
//   d=128: 68 + 68 + 17 + 32.5 + 16.5 KiB + 512 B = 202.5 KiB;  d=64: 36 + 36 + 18 + 65 + 33 + 1 KiB = 189 KiB
// HBM traffic (per head, the simulator's flash1): K, V read once (2 N d e); per step (i, j):
//   Q_i read (B_r d e), O_i read + written (2 B_r d 4), l_i, m_i read + written (4 B_r 4);
//   so Q: T_c N d e, O: 8 T_c N d, l+m: 16 T_c N; plus O init (4 N d), l/m init (8 N) and the final
//   conversion (4 N d read, N d e written). K_j, V_j are re-read by each of the G blocks of a
//   launch (from L2: they are 2 B_c d e = 128 KiB per head).
// Run/check: flashsim bench --variant flash1 --seq 1024 ; ctest -L gpu
#include <mma.h>

#include "cuda/variants.hpp"

namespace fcuda {
namespace {

using namespace nvcuda;

template <int D> struct F1;
template <> struct F1<128> { static constexpr int BR = 32, BC = 256; };
template <> struct F1<64> { static constexpr int BR = 64, BC = 256; };
constexpr int kThreads = 256, kWarps = kThreads / 32;

template <int D> struct F1Layout {
    static constexpr int BR = F1<D>::BR, BC = F1<D>::BC;
    static constexpr int ldQ = D + 8, ldS = BC + 4, ldP = BC + 8;
    static constexpr int q_bytes = BR * ldQ * 2, kv_bytes = BC * ldQ * 2;
    static constexpr int s_bytes = BR * ldS * 4, p_bytes = BR * ldP * 2;
    static constexpr int bytes = 2 * q_bytes + 2 * kv_bytes + s_bytes + p_bytes + 4 * BR * 4;
};

// Copy rows [row0, row0 + rows) of a (N, D) head into a padded tile (ld columns); rows >= N are 0.
template <int D, typename T>
__device__ void load_rows(T* tile, int ld, const T* head, int row0, int rows, int N) {
    for (int c = threadIdx.x; c < rows * D / 8; c += kThreads) {
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        uint4 v = make_uint4(0, 0, 0, 0);
        if (row0 + r < N) v = *reinterpret_cast<const uint4*>(head + static_cast<size_t>(row0 + r) * D + col);
        *reinterpret_cast<uint4*>(tile + r * ld + col) = v;
    }
}

// O = 0, l = 0, m = -inf  (Algorithm 1, line 2)
__global__ void flash1_init(float* O32, float* l, float* m, size_t od, size_t rows) {
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < od; k += gridDim.x * blockDim.x) {
        O32[k] = 0.0f;
        if (k < rows) { l[k] = 0.0f; m[k] = -INFINITY; }
    }
}

template <typename T>
__global__ void flash1_finish(const float* O32, T* O, size_t count) {
    for (size_t k = blockIdx.x * blockDim.x + threadIdx.x; k < count; k += gridDim.x * blockDim.x)
        O[k] = StorageTraits<T>::from_float(O32[k]);
}

// One outer iteration j of Algorithm 1 for all heads: block (g, bh) runs inner steps i = g, g+G, ...
template <typename T, int D, bool CAUSAL>
__global__ void __launch_bounds__(kThreads, 1)
    flash1_step(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, float* __restrict__ O32,
                float* __restrict__ l, float* __restrict__ m, int N, int j, float scale) {
    using L = F1Layout<D>;
    constexpr int BR = L::BR, BC = L::BC;
    extern __shared__ __align__(128) unsigned char smem_raw[];
    T* sK = reinterpret_cast<T*>(smem_raw);                              // (B_c, d)
    T* sV = reinterpret_cast<T*>(smem_raw + L::kv_bytes);                // (B_c, d)
    T* sQbuf = reinterpret_cast<T*>(smem_raw + 2 * L::kv_bytes);         // 2 x (B_r, d): Q_i and the next one
    float* sS = reinterpret_cast<float*>(smem_raw + 2 * L::kv_bytes + 2 * L::q_bytes);  // (B_r, B_c); later P~V (B_r, d)
    T* sP = reinterpret_cast<T*>(smem_raw + 2 * L::kv_bytes + 2 * L::q_bytes + L::s_bytes);  // (B_r, B_c)
    float* alpha = reinterpret_cast<float*>(smem_raw + 2 * L::kv_bytes + 2 * L::q_bytes + L::s_bytes + L::p_bytes);  // (B_r)
    float* beta = alpha + BR;  // (B_r)
    float* sm = beta + BR;     // m_i (B_r)
    float* sl = sm + BR;       // l_i (B_r)

    const int bh = blockIdx.y;
    const size_t head = static_cast<size_t>(bh) * N * D;
    const int k0 = j * BC;
    const int T_r = (N + BR - 1) / BR;
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    const T* Qh = Q + head;
    float* Oh = O32 + head;

    // Q_i arrives by cp.async one step ahead (zero rows past N)
    auto fetch_q = [&](int i, T* dst) {
        for (int c = threadIdx.x; c < BR * D / 8; c += kThreads) {
            const int r = c / (D / 8), col = (c % (D / 8)) * 8;
            const bool valid = i * BR + r < N;
            const T* src = valid ? Qh + static_cast<size_t>(i * BR + r) * D + col : Qh;
            const int bytes = valid ? 16 : 0;
            asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(static_cast<uint32_t>(__cvta_generic_to_shared(dst + r * L::ldQ + col))),
                         "l"(src), "r"(bytes));
        }
        asm volatile("cp.async.commit_group;\n" ::);
    };

    load_rows<D>(sK, L::ldQ, K + head, k0, BC, N);  // K_j
    load_rows<D>(sV, L::ldQ, V + head, k0, BC, N);  // V_j

    const int i_first = CAUSAL ? k0 / BR : 0;  // earlier query blocks see none of these keys
    int buf = 0;
    if (i_first + static_cast<int>(blockIdx.x) < T_r) fetch_q(i_first + blockIdx.x, sQbuf);
    for (int i = i_first + static_cast<int>(blockIdx.x); i < T_r; i += gridDim.x, buf ^= 1) {
        const int q0 = i * BR;
        T* sQ = sQbuf + buf * BR * L::ldQ;
        // O_i, m_i, l_i requested now, used after the two matrix products
        constexpr int kOVec = BR * D / 4 / kThreads;  // float4 of O_i per thread
        float4 o_old[kOVec];
#pragma unroll
        for (int k = 0; k < kOVec; ++k) {
            const int c = threadIdx.x + k * kThreads;
            const int r = c / (D / 4), col = (c % (D / 4)) * 4;
            o_old[k] = q0 + r < N ? *reinterpret_cast<const float4*>(Oh + static_cast<size_t>(q0 + r) * D + col)
                                  : make_float4(0.f, 0.f, 0.f, 0.f);
        }
        for (int r = threadIdx.x; r < BR; r += kThreads) {
            const size_t at = static_cast<size_t>(bh) * N + q0 + r;
            sm[r] = q0 + r < N ? m[at] : -INFINITY;
            sl[r] = q0 + r < N ? l[at] : 0.0f;
        }
        if (i + static_cast<int>(gridDim.x) < T_r) {
            fetch_q(i + gridDim.x, sQbuf + (buf ^ 1) * BR * L::ldQ);
            asm volatile("cp.async.wait_group 1;\n" ::);
        } else {
            asm volatile("cp.async.wait_group 0;\n" ::);
        }
        __syncthreads();

        // S_ij = Q_i K_j^T in 16x16 tiles: warp w takes every row tile and the column tiles
        // [w CT, w CT + CT), so each loaded fragment of Q_i serves CT products and each of K_j RT.
        {
            constexpr int RT = BR / 16, CT = BC / 16 / kWarps;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[RT][CT];
#pragma unroll
            for (int r = 0; r < RT; ++r)
#pragma unroll
                for (int c = 0; c < CT; ++c) wmma::fill_fragment(acc[r][c], 0.0f);
            for (int kk = 0; kk < D / 16; ++kk) {
                wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a[RT];
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::col_major> b[CT];  // K_j^T
#pragma unroll
                for (int r = 0; r < RT; ++r) wmma::load_matrix_sync(a[r], sQ + r * 16 * L::ldQ + kk * 16, L::ldQ);
#pragma unroll
                for (int c = 0; c < CT; ++c) wmma::load_matrix_sync(b[c], sK + (warp * CT + c) * 16 * L::ldQ + kk * 16, L::ldQ);
#pragma unroll
                for (int r = 0; r < RT; ++r)
#pragma unroll
                    for (int c = 0; c < CT; ++c) wmma::mma_sync(acc[r][c], a[r], b[c], acc[r][c]);
            }
#pragma unroll
            for (int r = 0; r < RT; ++r)
#pragma unroll
                for (int c = 0; c < CT; ++c)
                    wmma::store_matrix_sync(sS + r * 16 * L::ldS + (warp * CT + c) * 16, acc[r][c], L::ldS, wmma::mem_row_major);
        }
        __syncthreads();

        // softmax statistics of the block, one warp a row; lanes stride the B_c columns
        for (int r = warp; r < BR; r += kWarps) {
            const int row = q0 + r;
            float x[BC / 32];
            float mt = -INFINITY;  // m~
#pragma unroll
            for (int k = 0; k < BC / 32; ++k) {
                const int col = k0 + lane + 32 * k;
                const bool visible = col < N && (!CAUSAL || col <= row);
                x[k] = visible ? sS[r * L::ldS + lane + 32 * k] * scale : -INFINITY;
                mt = fmaxf(mt, x[k]);
            }
            for (int off = 16; off > 0; off >>= 1) mt = fmaxf(mt, __shfl_xor_sync(0xffffffffu, mt, off));
            float lt = 0.0f;  // l~
#pragma unroll
            for (int k = 0; k < BC / 32; ++k) {
                const float p = mt == -INFINITY ? 0.0f : __expf(x[k] - mt);
                const T pr = StorageTraits<T>::from_float(p);
                sP[r * L::ldP + lane + 32 * k] = pr;
                lt += StorageTraits<T>::to_float(pr);  // the sum of what P~ V will use
            }
            for (int off = 16; off > 0; off >>= 1) lt += __shfl_xor_sync(0xffffffffu, lt, off);
            if (lane == 0) {
                const size_t at = static_cast<size_t>(bh) * N + row;
                const float mi = sm[r], li = sl[r];
                const float mn = fmaxf(mi, mt);
                const float ea = mi == -INFINITY ? 0.0f : __expf(mi - mn);
                const float eb = mt == -INFINITY ? 0.0f : __expf(mt - mn);
                const float ln = ea * li + eb * lt;
                alpha[r] = ln > 0.0f ? li * ea / ln : 0.0f;
                beta[r] = ln > 0.0f ? eb / ln : 0.0f;
                if (row < N) { m[at] = mn; l[at] = ln; }
            }
        }
        __syncthreads();

        // P~_ij V_j in 16x16 tiles, into sS's space as (B_r, d+4) floats: warp w takes column
        // tile w mod (d/16) and PR consecutive row tiles, reusing each V_j fragment PR times.
        constexpr int ldPV = D + 4;
        {
            constexpr int PR = (BR / 16) * (D / 16) / kWarps;
            const int tc = warp % (D / 16), tr0 = (warp / (D / 16)) * PR;
            wmma::fragment<wmma::accumulator, 16, 16, 16, float> acc[PR];
#pragma unroll
            for (int r = 0; r < PR; ++r) wmma::fill_fragment(acc[r], 0.0f);
            for (int kk = 0; kk < BC / 16; ++kk) {
                wmma::fragment<wmma::matrix_b, 16, 16, 16, T, wmma::row_major> b;
                wmma::load_matrix_sync(b, sV + kk * 16 * L::ldQ + tc * 16, L::ldQ);
#pragma unroll
                for (int r = 0; r < PR; ++r) {
                    wmma::fragment<wmma::matrix_a, 16, 16, 16, T, wmma::row_major> a;
                    wmma::load_matrix_sync(a, sP + (tr0 + r) * 16 * L::ldP + kk * 16, L::ldP);
                    wmma::mma_sync(acc[r], a, b, acc[r]);
                }
            }
#pragma unroll
            for (int r = 0; r < PR; ++r)
                wmma::store_matrix_sync(sS + (tr0 + r) * 16 * ldPV + tc * 16, acc[r], ldPV, wmma::mem_row_major);
        }
        __syncthreads();

        // O_i <- alpha O_i + beta P~V   (O_i read from and written back to HBM, fp32)
#pragma unroll
        for (int k = 0; k < kOVec; ++k) {
            const int c = threadIdx.x + k * kThreads;
            const int r = c / (D / 4), col = (c % (D / 4)) * 4;
            if (q0 + r >= N) continue;
            const float* pv = sS + r * ldPV + col;
            const float a = alpha[r], b = beta[r];
            float4 o = o_old[k];
            o.x = a * o.x + b * pv[0];
            o.y = a * o.y + b * pv[1];
            o.z = a * o.z + b * pv[2];
            o.w = a * o.w + b * pv[3];
            *reinterpret_cast<float4*>(Oh + static_cast<size_t>(q0 + r) * D + col) = o;
        }
        __syncthreads();
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
    int sms = 0, dev = 0;
    CUDA_CHECK(cudaGetDevice(&dev));
    CUDA_CHECK(cudaDeviceGetAttribute(&sms, cudaDevAttrMultiProcessorCount, dev));
    flash1_init<<<1024, 256, 0, s>>>(O32, l, m, od, rows);
    LAUNCH_CHECK();
    auto kernel = flash1_step<T, D, CAUSAL>;
    CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, L::bytes));
    const int T_r = (N + L::BR - 1) / L::BR, T_c = (N + L::BC - 1) / L::BC;
    const int G = std::max(1, std::min(T_r, (2 * sms + BH - 1) / BH));
    const float scale = static_cast<float>(p.softmax_scale());
    for (int j = 0; j < T_c; ++j) {  // Algorithm 1, line 5: for 1 <= j <= T_c
        kernel<<<dim3(G, BH), kThreads, L::bytes, s>>>(static_cast<const T*>(t.Q), static_cast<const T*>(t.K),
                                                       static_cast<const T*>(t.V), O32, l, m, N, j, scale);
        LAUNCH_CHECK();
    }
    flash1_finish<T><<<1024, 256, 0, s>>>(O32, static_cast<T*>(t.O), od);
    LAUNCH_CHECK();
}

}  // namespace

TileConfig flash1_tiles(const sim::Problem& p) {
    TileConfig c;
    c.variant = "flash1";
    c.loop_order = "kv_outer";
    c.stages = 1;
    c.threads = kThreads;
    c.layout = "8 warps; WMMA 16x16 tiles, each warp a 2-row-tile band of S";
    if (p.head_dim == 128) {
        c.block_rows = F1<128>::BR; c.block_cols = F1<128>::BC; c.sram_bytes = F1Layout<128>::bytes;
    } else if (p.head_dim == 64) {
        c.block_rows = F1<64>::BR; c.block_cols = F1<64>::BC; c.sram_bytes = F1Layout<64>::bytes;
    } else {
        throw std::runtime_error("flash1: head_dim must be 64 or 128 (got " + std::to_string(p.head_dim) + ")");
    }
    c.smem_bytes = c.sram_bytes;  // every tile is in shared memory
    return c;
}

void flash1_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    (void)flash1_tiles(p);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 128) {
            if (p.causal) launch_all<T, 128, true>(p, t, ws, s); else launch_all<T, 128, false>(p, t, ws, s);
        } else {
            if (p.causal) launch_all<T, 64, true>(p, t, ws, s); else launch_all<T, 64, false>(p, t, ws, s);
        }
    });
}

}  // namespace fcuda
