// cuda/standard.cu — standard attention, the fair baseline: every N x N intermediate in HBM.
//
//   forward:  S = Q K^T           cuBLAS strided-batched GEMM, fp16/bf16 in, fp32 compute, S in dtype
//             P = softmax(scale*S) one kernel, causal mask here, P in dtype          (B*H*N rows)
//             O = P V             cuBLAS strided-batched GEMM
//   backward: dV = P^T dO, dP = dO V^T (GEMMs); dS = P o (dP - rowsum(P o dP)) (kernel);
//             dQ = scale dS K, dK = scale dS^T Q (GEMMs).
//
// Launch shape: GEMMs as cuBLAS picks them (batch = B*H). Softmax, forward and backward: when
//   N % 8 == 0 (and N <= 32768 forward, 16384 backward) a group of tpr threads a row (a power of two,
//   8-512: 8 16-byte vectors a thread forward, 4 of P and 4 of dP backward), blocks of max(256, tpr),
//   the row held in registers: one DRAM read of S (P, dP) and one write of P (dS). Other N: one
//   block of 256 threads a row, grid (N, B*H), two passes (the second re-reads the row from L1/L2).
//   FLASHSIM_STANDARD_SOFTMAX=rows forces the two-pass kernels (for side-by-side timing).
// SRAM: cuBLAS's own tiles; the softmax kernels keep at most 16 floats of reduction scratch.
// HBM traffic (forward, e = bytes per element, the simulator's standard):
//   S = QK^T: read Q, K (2 N d e), write S (N^2 e); softmax: read S, write P (2 N^2 e);
//   O = PV: read P, V (N^2 e + N d e), write O (N d e)            -- per head, times B*H.
//   (The two-pass softmax reads S twice; the second read is of a row it just read, 2 N e bytes,
//   which stays in L1/L2.)
// Run/check: flashsim bench --variant standard --seq 1024 ; ctest -L gpu (tests/cuda)
#include <cublas_v2.h>

#include <cfloat>
#include <cmath>
#include <cstdlib>
#include <stdexcept>
#include <string>

#include "cuda/mma.cuh"
#include "cuda/standard_calls.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

#define CUBLAS_CHECK(expr)                                                                                    \
    do {                                                                                                      \
        cublasStatus_t st_ = (expr);                                                                          \
        if (st_ != CUBLAS_STATUS_SUCCESS) {                                                                   \
            (void)cudaGetLastError();                                                                         \
            throw std::runtime_error(std::string("cuBLAS refused " #expr ": ") + cublasGetStatusString(st_)); \
        }                                                                                                     \
    } while (0)

cublasHandle_t handle() {
    static cublasHandle_t h = [] {
        cublasHandle_t x;
        CUBLAS_CHECK(cublasCreate(&x));
        return x;
    }();
    return h;
}

cudaDataType_t cuda_type(sim::DType dt) { return dt == sim::DType::bf16 ? CUDA_R_16BF : CUDA_R_16F; }

// C (m x n, column-major, ldc) = alpha op(A) op(B) for `batch` matrices, fp32 accumulate.
void gemm(cudaStream_t s, sim::DType dt, bool ta, bool tb, int m, int n, int k, float alpha, const void* A, int lda,
          long long sA, const void* B, int ldb, long long sB, void* C, int ldc, long long sC, int batch) {
    const float beta = 0.0f;
    CUBLAS_CHECK(cublasSetStream(handle(), s));
    const cudaDataType_t t = cuda_type(dt);
    CUBLAS_CHECK(cublasGemmStridedBatchedEx(handle(), ta ? CUBLAS_OP_T : CUBLAS_OP_N, tb ? CUBLAS_OP_T : CUBLAS_OP_N, m,
                                            n, k, &alpha, A, t, lda, sA, B, t, ldb, sB, &beta, C, t, ldc, sC, batch,
                                            CUBLAS_COMPUTE_32F, CUBLAS_GEMM_DEFAULT));
}

constexpr int kThreads = 256;

// Merges the (max, sum-of-exp) pair of the lane `off` away into this lane's: the online softmax's
// combine step, m = max(m, m2), l = l e^(m_old - m) + l2 e^(m2 - m).
__device__ __forceinline__ void merge_max_sum(float& m, float& l, int off) {
    const float m2 = __shfl_xor_sync(0xffffffffu, m, off);
    const float l2 = __shfl_xor_sync(0xffffffffu, l, off);
    const float mn = fmaxf(m, m2);
    l = (mn == -INFINITY) ? 0.0f : l * __expf(m - mn) + l2 * __expf(m2 - mn);
    m = mn;
}

// Block-wide reduction of a running (max, sum-of-exp) pair; every thread gets the result.
__device__ void block_reduce_max_sum(float& m, float& l, float* scratch /* 2 * 8 floats */) {
    for (int off = 16; off > 0; off >>= 1) merge_max_sum(m, l, off);
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    if (lane == 0) {
        scratch[warp] = m;
        scratch[8 + warp] = l;
    }
    __syncthreads();
    if (warp == 0) {
        m = lane < kThreads / 32 ? scratch[lane] : -INFINITY;
        l = lane < kThreads / 32 ? scratch[8 + lane] : 0.0f;
        for (int off = 4; off > 0; off >>= 1) merge_max_sum(m, l, off);
        if (lane == 0) {
            scratch[0] = m;
            scratch[8] = l;
        }
    }
    __syncthreads();
    m = scratch[0];
    l = scratch[8];
}

// One row of S -> one row of P. Row `n` of head blockIdx.y; keys > n masked when causal.
// First pass: each thread keeps an online (max, sum) over its columns; second pass writes P.
template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_rows(const T* __restrict__ S, T* __restrict__ P, int N, float scale, bool causal) {
    __shared__ float scratch[16];
    const int n = blockIdx.x;
    const size_t row = (static_cast<size_t>(blockIdx.y) * N + n) * N;
    const T* s = S + row;
    T* p = P + row;
    const int visible = causal ? n + 1 : N;  // columns [0, visible) take part
    float m = -INFINITY, l = 0.0f;
    for (int c = threadIdx.x; c < visible; c += kThreads) {
        const float x = StorageTraits<T>::to_float(s[c]) * scale;
        const float mn = fmaxf(m, x);
        l = l * __expf(m - mn) + __expf(x - mn);
        m = mn;
    }
    block_reduce_max_sum(m, l, scratch);
    const float inv_l = 1.0f / l;
    for (int c = threadIdx.x; c < N; c += kThreads) {
        const float v = c < visible ? __expf(StorageTraits<T>::to_float(s[c]) * scale - m) * inv_l : 0.0f;
        p[c] = StorageTraits<T>::from_float(v);
    }
}

// dS = P o (dP - D), D = sum_c P[c] dP[c] over the row (equal to rowsum(dO o O)).
template <typename T>
__global__ void __launch_bounds__(kThreads)
    softmax_backward_rows(const T* __restrict__ P, const T* __restrict__ dP, T* __restrict__ dS, int N) {
    __shared__ float scratch[8];
    const size_t row = (static_cast<size_t>(blockIdx.y) * N + blockIdx.x) * N;
    float acc = 0.0f;
    for (int c = threadIdx.x; c < N; c += kThreads)
        acc += StorageTraits<T>::to_float(P[row + c]) * StorageTraits<T>::to_float(dP[row + c]);
    for (int off = 16; off > 0; off >>= 1) acc += __shfl_xor_sync(0xffffffffu, acc, off);
    if (threadIdx.x % 32 == 0) scratch[threadIdx.x / 32] = acc;
    __syncthreads();
    float D = 0.0f;
    for (int w = 0; w < kThreads / 32; ++w) D += scratch[w];
    for (int c = threadIdx.x; c < N; c += kThreads) {
        const float pv = StorageTraits<T>::to_float(P[row + c]);
        dS[row + c] = StorageTraits<T>::from_float(pv * (StorageTraits<T>::to_float(dP[row + c]) - D));
    }
}

// ---- the vector path: one DRAM pass, a row held in registers ------------------------------------
// Rows of N % 8 == 0 columns (so every row starts on a 16-byte boundary), N <= kVecMaxCols: a group
// of `tpr` threads (a power of two, 8 to 512) takes a row, each thread 8 vectors of 8 elements
// (16-byte loads and stores), thread t vectors t, t + tpr, ... (a group's loads are contiguous).
// The row stays in registers between the reductions, so S (or P and dP) is read from DRAM once and
// P (or dS) written once: the bytes the simulator's standard counts. Blocks of max(256, tpr) threads.
constexpr int kVecFwd = 8;       // 16-byte vectors a thread, forward (S: 32 registers as loaded)
constexpr int kVecBwd = 4;       // backward: 4 of P and 4 of dP (8 vectors held: more spill at 128 registers)
constexpr int kVecElems = 8;     // 2-byte elements a vector
constexpr int kVecMaxTpr = 512;  // threads a row at most

// Threads a row: the smallest power of two >= 8 that covers N with `per_thread` vectors a thread.
int vec_threads_per_row(int N, int per_thread) {
    int tpr = 8;
    while (tpr * per_thread * kVecElems < N) tpr *= 2;
    return tpr;
}
// FLASHSIM_STANDARD_SOFTMAX: "vec" (default) or "rows" (the two-pass kernels everywhere, for a
// side-by-side timing); anything else is refused.
bool softmax_rows_forced() {
    const char* e = sim::knob("FLASHSIM_STANDARD_SOFTMAX");
    if (e == nullptr || std::string(e) == "vec") return false;
    if (std::string(e) == "rows") return true;
    throw std::runtime_error(std::string("FLASHSIM_STANDARD_SOFTMAX=") + e +
                             ": unknown softmax kernel for standard; use vec (one DRAM pass, the default) or rows "
                             "(two passes, one block a row), or unset it");
}
// Forward N <= 32768, backward N <= 16384; longer or ragged rows take the two-pass kernels.
bool vec_path(int N, int per_thread) {
    return N % kVecElems == 0 && N <= kVecMaxTpr * per_thread * kVecElems && !softmax_rows_forced();
}

__device__ __forceinline__ float2 unpack2(uint32_t w, __nv_bfloat16) {
    return __bfloat1622float2(__halves2bfloat162(__ushort_as_bfloat16(static_cast<unsigned short>(w & 0xffffu)),
                                                 __ushort_as_bfloat16(static_cast<unsigned short>(w >> 16))));
}
__device__ __forceinline__ float2 unpack2(uint32_t w, __half) {
    return __half22float2(__halves2half2(__ushort_as_half(static_cast<unsigned short>(w & 0xffffu)),
                                         __ushort_as_half(static_cast<unsigned short>(w >> 16))));
}
template <typename T>
__device__ __forceinline__ void unpack8(const uint4& raw, float (&x)[kVecElems]) {
    const float2 a = unpack2(raw.x, T{}), b = unpack2(raw.y, T{}), c = unpack2(raw.z, T{}), d = unpack2(raw.w, T{});
    x[0] = a.x, x[1] = a.y, x[2] = b.x, x[3] = b.y, x[4] = c.x, x[5] = c.y, x[6] = d.x, x[7] = d.y;
}
template <typename T>
__device__ __forceinline__ uint4 pack8(const float (&x)[kVecElems]) {
    return make_uint4(pack2<T>(x[0], x[1]), pack2<T>(x[2], x[3]), pack2<T>(x[4], x[5]), pack2<T>(x[6], x[7]));
}

// Reduces v over the `tpr` threads of this thread's row group (max when kMax, else sum); every
// thread of the group gets the result. All threads of the block must call it (it may synchronise).
template <bool kMax>
__device__ __forceinline__ float group_reduce(float v, int tpr, float* scratch /* 16 floats */) {
    const int width = tpr < 32 ? tpr : 32;
    for (int off = width / 2; off > 0; off >>= 1) {
        const float o = __shfl_xor_sync(0xffffffffu, v, off);
        v = kMax ? fmaxf(v, o) : v + o;
    }
    if (tpr <= 32) return v;
    const int warp = threadIdx.x / 32, per = tpr / 32, first = warp / per * per;
    __syncthreads();  // scratch free (an earlier reduction's readers are done)
    if (threadIdx.x % 32 == 0) scratch[warp] = v;
    __syncthreads();
    v = scratch[first];
    for (int w = 1; w < per; ++w) v = kMax ? fmaxf(v, scratch[first + w]) : v + scratch[first + w];
    return v;
}

// P = softmax(scale S) row by row, keys > n masked (P = 0 there) when causal. The row stays in
// registers as loaded (2-byte values, 32 registers); every load is issued before the first is used
// (a use between two loads would make each wait for the one before), and the exponential is taken
// twice (for the sum, then for P) rather than kept as 64 floats: fewer registers, more blocks an SM,
// more bytes in flight.
template <typename T, int kVecPerThread>
__global__ void __launch_bounds__(kVecMaxTpr) softmax_rows_vec(const T* __restrict__ S, T* __restrict__ P, int N,
                                                               long long rows, int tpr, float scale_log2, bool causal) {
    __shared__ float scratch[16];
    const int t = threadIdx.x % tpr;
    const long long r = static_cast<long long>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool live = r < rows;
    const int n = live ? static_cast<int>(r % N) : 0;
    const int visible = causal ? n + 1 : N;  // columns [0, visible) take part
    const int nvec = N / kVecElems;
    const uint4* s = reinterpret_cast<const uint4*>(S + (live ? r : 0) * N);
    uint4* p = reinterpret_cast<uint4*>(P + (live ? r : 0) * N);
    uint4 raw[kVecPerThread];
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int v = t + i * tpr;
        raw[i] = live && v < nvec && v * kVecElems < visible ? __ldcs(s + v) : make_uint4(0, 0, 0, 0);
    }
    // Vectors wholly inside [0, visible) take the plain path; the one the diagonal cuts masks its
    // columns >= visible; vectors wholly past it (causal) skip the arithmetic and write zeros.
    // The scale is positive, so the row maximum is taken on the raw scores and scaled once.
    float mraw = -INFINITY;
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int c0 = (t + i * tpr) * kVecElems;
        if (c0 < visible) {
            float x[kVecElems];
            unpack8<T>(raw[i], x);
            const bool cut = c0 + kVecElems > visible;
#pragma unroll
            for (int k = 0; k < kVecElems; ++k) mraw = fmaxf(mraw, cut && c0 + k >= visible ? -INFINITY : x[k]);
        }
    }
    const float m = group_reduce<true>(mraw, tpr, scratch) * scale_log2;
    // 2^(x scale_log2 - m) of vector i (0 for a masked column), one FFMA and one ex2 an element
    auto exps = [&](int i, int c0, float(&x)[kVecElems]) {
        unpack8<T>(raw[i], x);
        const bool cut = c0 + kVecElems > visible;
#pragma unroll
        for (int k = 0; k < kVecElems; ++k) {
            const float e = fast_exp2(fmaf(x[k], scale_log2, -m));
            x[k] = cut && c0 + k >= visible ? 0.0f : e;
        }
    };
    float l = 0.0f;
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int c0 = (t + i * tpr) * kVecElems;
        if (c0 < visible) {
            float x[kVecElems];
            exps(i, c0, x);
#pragma unroll
            for (int k = 0; k < kVecElems; ++k) l += x[k];
        }
    }
    l = group_reduce<false>(l, tpr, scratch);
    const float inv_l = 1.0f / l;
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int v = t + i * tpr, c0 = v * kVecElems;
        if (live && v < nvec) {
            float x[kVecElems];
            if (c0 < visible) {
                exps(i, c0, x);
#pragma unroll
                for (int k = 0; k < kVecElems; ++k) x[k] *= inv_l;
            } else {
#pragma unroll
                for (int k = 0; k < kVecElems; ++k) x[k] = 0.0f;
            }
            p[v] = pack8<T>(x);
        }
    }
}

// dS = P o (dP - D), D = sum_c P[c] dP[c], row by row; P and dP read once.
template <typename T, int kVecPerThread>
__global__ void __launch_bounds__(kVecMaxTpr)
    softmax_backward_rows_vec(const T* __restrict__ P, const T* __restrict__ dP, T* __restrict__ dS, int N,
                              long long rows, int tpr) {
    __shared__ float scratch[16];
    const int t = threadIdx.x % tpr;
    const long long r = static_cast<long long>(blockIdx.x) * (blockDim.x / tpr) + threadIdx.x / tpr;
    const bool live = r < rows;
    const int nvec = N / kVecElems;
    const size_t base = static_cast<size_t>(live ? r : 0) * N;
    const uint4* pp = reinterpret_cast<const uint4*>(P + base);
    const uint4* dpp = reinterpret_cast<const uint4*>(dP + base);
    uint4* ds = reinterpret_cast<uint4*>(dS + base);
    uint4 praw[kVecPerThread], dpraw[kVecPerThread];
    float acc = 0.0f;
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int v = t + i * tpr;
        const bool in = live && v < nvec;
        praw[i] = in ? __ldcs(pp + v) : make_uint4(0, 0, 0, 0);
        dpraw[i] = in ? __ldcs(dpp + v) : make_uint4(0, 0, 0, 0);
    }
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        float a[kVecElems], b[kVecElems];
        unpack8<T>(praw[i], a);
        unpack8<T>(dpraw[i], b);
#pragma unroll
        for (int k = 0; k < kVecElems; ++k) acc += a[k] * b[k];
    }
    const float D = group_reduce<false>(acc, tpr, scratch);
#pragma unroll
    for (int i = 0; i < kVecPerThread; ++i) {
        const int v = t + i * tpr;
        if (live && v < nvec) {
            float a[kVecElems], b[kVecElems];
            unpack8<T>(praw[i], a);
            unpack8<T>(dpraw[i], b);
#pragma unroll
            for (int k = 0; k < kVecElems; ++k) a[k] *= b[k] - D;
            ds[v] = pack8<T>(a);
        }
    }
}

// Grid of the vector path: blocks of max(256, tpr) threads, 256 / tpr rows a block when tpr < 256.
struct VecLaunch {
    int tpr, threads;
    unsigned blocks;
};
VecLaunch vec_launch(int N, long long rows, int per_thread) {
    const int tpr = vec_threads_per_row(N, per_thread);
    const int threads = tpr < kThreads ? kThreads : tpr;
    const long long per_block = threads / tpr;
    return {tpr, threads, static_cast<unsigned>((rows + per_block - 1) / per_block)};
}

}  // namespace

void standard_scores(sim::DType dt, int N, int d, int heads, const void* A, const void* B, void* S, cudaStream_t s) {
    // Row-major S = A B^T (queries x keys) is column-major S^T = B A^T.
    const long long nd = static_cast<long long>(N) * d, nn = static_cast<long long>(N) * N;
    gemm(s, dt, true, false, N, N, d, 1.0f, B, d, nd, A, d, nd, S, N, nn, heads);
}

void standard_apply(sim::DType dt, int N, int d, int heads, float alpha, const void* P, bool transposed, const void* X,
                    void* out, cudaStream_t s) {
    // Row-major out (N x d) is column-major out^T = X^T op(P)^T: X^T is X as stored (d x N, ld d), P^T is
    // row-major P read column-major (ld N), P itself that read transposed.
    const long long nd = static_cast<long long>(N) * d, nn = static_cast<long long>(N) * N;
    gemm(s, dt, false, transposed, d, N, N, alpha, X, d, nd, P, N, nn, out, d, nd, heads);
}

void standard_softmax_two_pass(sim::DType dt, int N, int heads, float scale, const void* S, void* P, cudaStream_t s) {
    dispatch_dtype(dt, [&]<typename T>() {
        softmax_rows<T>
            <<<dim3(N, heads), kThreads, 0, s>>>(static_cast<const T*>(S), static_cast<T*>(P), N, scale, false);
        LAUNCH_CHECK();
    });
}

void standard_softmax_bwd_two_pass(sim::DType dt, int N, int heads, const void* P, const void* dP, void* dS,
                                   cudaStream_t s) {
    dispatch_dtype(dt, [&]<typename T>() {
        softmax_backward_rows<T><<<dim3(N, heads), kThreads, 0, s>>>(static_cast<const T*>(P),
                                                                     static_cast<const T*>(dP), static_cast<T*>(dS), N);
        LAUNCH_CHECK();
    });
}

TileConfig standard_tiles(const sim::Problem& p, Pass pass) {
    (void)p;
    TileConfig t;
    t.variant = "standard";
    t.algo = "standard";
    t.block_rows = 0;  // cuBLAS picks its own GEMM tiles; the simulator's standard rule applies
    t.block_cols = 0;
    t.loop_order = pass == Pass::forward ? "gemm-softmax-gemm" : "gemm-gemm-softmaxbwd-gemm-gemm";
    t.stages = 0;
    t.sram_bytes = 0;
    t.threads = kThreads;
    if (softmax_rows_forced())
        t.layout = "softmax: two passes, one block of 256 threads a row (FLASHSIM_STANDARD_SOFTMAX=rows)";
    return t;
}

void standard_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    const int N = static_cast<int>(p.seq), d = static_cast<int>(p.head_dim);
    const int BH = static_cast<int>(p.heads_total());
    const long long nn = static_cast<long long>(N) * N;
    const size_t e = static_cast<size_t>(p.elem_bytes());
    ws.a.ensure(static_cast<size_t>(BH) * nn * e);                // S (B, H, N, N)
    ws.b.ensure(static_cast<size_t>(BH) * nn * e);                // P (B, H, N, N)
    standard_scores(p.dtype, N, d, BH, t.Q, t.K, ws.a.get(), s);  // S = Q K^T
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (vec_path(N, kVecFwd)) {
            const long long rows = static_cast<long long>(BH) * N;
            const VecLaunch g = vec_launch(N, rows, kVecFwd);
            softmax_rows_vec<T, kVecFwd><<<g.blocks, g.threads, 0, s>>>(
                ws.a.as<T>(), ws.b.as<T>(), N, rows, g.tpr, static_cast<float>(p.softmax_scale() * M_LOG2E), p.causal);
        } else {
            softmax_rows<T><<<dim3(N, BH), kThreads, 0, s>>>(ws.a.as<T>(), ws.b.as<T>(), N,
                                                             static_cast<float>(p.softmax_scale()), p.causal);
        }
        LAUNCH_CHECK();
    });
    standard_apply(p.dtype, N, d, BH, 1.0f, ws.b.get(), false, t.V, t.O, s);  // O = P V
}

void standard_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    const int N = static_cast<int>(p.seq), d = static_cast<int>(p.head_dim);
    const int BH = static_cast<int>(p.heads_total());
    const long long nn = static_cast<long long>(N) * N;
    const size_t e = static_cast<size_t>(p.elem_bytes());
    if (ws.b.bytes() < static_cast<size_t>(BH) * nn * e)
        throw std::runtime_error("standard_backward: run standard_forward first (P missing)");
    ws.c.ensure(static_cast<size_t>(BH) * nn * e);  // dP
    ws.d.ensure(static_cast<size_t>(BH) * nn * e);  // dS
    const float scale = static_cast<float>(p.softmax_scale());
    standard_apply(p.dtype, N, d, BH, 1.0f, ws.b.get(), true, t.dO, t.dV, s);  // dV = P^T dO
    standard_scores(p.dtype, N, d, BH, t.dO, t.V, ws.c.get(), s);              // dP = dO V^T, the same call as S
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (vec_path(N, kVecBwd)) {
            const long long rows = static_cast<long long>(BH) * N;
            const VecLaunch g = vec_launch(N, rows, kVecBwd);
            softmax_backward_rows_vec<T, kVecBwd>
                <<<g.blocks, g.threads, 0, s>>>(ws.b.as<T>(), ws.c.as<T>(), ws.d.as<T>(), N, rows, g.tpr);
        } else {
            softmax_backward_rows<T><<<dim3(N, BH), kThreads, 0, s>>>(ws.b.as<T>(), ws.c.as<T>(), ws.d.as<T>(), N);
        }
        LAUNCH_CHECK();
    });
    standard_apply(p.dtype, N, d, BH, scale, ws.d.get(), false, t.K, t.dQ, s);  // dQ = scale dS K
    standard_apply(p.dtype, N, d, BH, scale, ws.d.get(), true, t.Q, t.dK, s);   // dK = scale dS^T Q
}

}  // namespace fcuda
