// cuda/standard.cu — standard attention, the fair baseline: every N x N intermediate in HBM.
//
//   forward:  S = Q K^T           cuBLAS strided-batched GEMM, fp16/bf16 in, fp32 compute, S in dtype
//             P = softmax(scale*S) one kernel, causal mask here, P in dtype          (B*H*N rows)
//             O = P V             cuBLAS strided-batched GEMM
//   backward: dV = P^T dO, dP = dO V^T (GEMMs); dS = P o (dP - rowsum(P o dP)) (kernel);
//             dQ = scale dS K, dK = scale dS^T Q (GEMMs).
//
// Launch shape: GEMMs as cuBLAS picks them (batch = B*H); softmax: one block of 256 threads a row,
//   grid (N, B*H).
// SRAM: cuBLAS's own tiles; the softmax kernel keeps 2 x 8 floats of reduction scratch.
// HBM traffic (forward, e = bytes per element, the simulator's standard):
//   S = QK^T: read Q, K (2 N d e), write S (N^2 e); softmax: read S, write P (2 N^2 e);
//   O = PV: read P, V (N^2 e + N d e), write O (N d e)            -- per head, times B*H.
//   (The softmax pass may read S twice; the second read is of a row it just read, 2 N e bytes,
//   which stays in L1/L2.)
// Run/check: flashsim bench --variant standard --seq 1024 ; ctest -L gpu (tests/cuda)
#include <cublas_v2.h>

#include <cfloat>

#include "cuda/variants.hpp"

namespace fcuda {
namespace {

#define CUBLAS_CHECK(expr)                                                                                      \
    do {                                                                                                        \
        cublasStatus_t st_ = (expr);                                                                            \
        if (st_ != CUBLAS_STATUS_SUCCESS) ::fcuda::fail(#expr, __FILE__, __LINE__, cublasGetStatusString(st_)); \
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

}  // namespace

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
    return t;
}

void standard_forward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    const int N = static_cast<int>(p.seq), d = static_cast<int>(p.head_dim);
    const int BH = static_cast<int>(p.heads_total());
    const long long nd = static_cast<long long>(N) * d, nn = static_cast<long long>(N) * N;
    const size_t e = static_cast<size_t>(p.elem_bytes());
    ws.a.ensure(static_cast<size_t>(BH) * nn * e);  // S (B, H, N, N)
    ws.b.ensure(static_cast<size_t>(BH) * nn * e);  // P (B, H, N, N)
    // Row-major S (queries x keys) is column-major S^T = K Q^T.
    gemm(s, p.dtype, true, false, N, N, d, 1.0f, t.K, d, nd, t.Q, d, nd, ws.a.get(), N, nn, BH);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        softmax_rows<T><<<dim3(N, BH), kThreads, 0, s>>>(ws.a.as<T>(), ws.b.as<T>(), N,
                                                         static_cast<float>(p.softmax_scale()), p.causal);
        LAUNCH_CHECK();
    });
    // Row-major O (N x d) is column-major O^T = V^T P^T.
    gemm(s, p.dtype, false, false, d, N, N, 1.0f, t.V, d, nd, ws.b.get(), N, nn, t.O, d, nd, BH);
}

void standard_backward(const sim::Problem& p, const Tensors& t, Workspace& ws, cudaStream_t s) {
    const int N = static_cast<int>(p.seq), d = static_cast<int>(p.head_dim);
    const int BH = static_cast<int>(p.heads_total());
    const long long nd = static_cast<long long>(N) * d, nn = static_cast<long long>(N) * N;
    const size_t e = static_cast<size_t>(p.elem_bytes());
    if (ws.b.bytes() < static_cast<size_t>(BH) * nn * e)
        throw std::runtime_error("standard_backward: run standard_forward first (P missing)");
    ws.c.ensure(static_cast<size_t>(BH) * nn * e);  // dP
    ws.d.ensure(static_cast<size_t>(BH) * nn * e);  // dS
    const float scale = static_cast<float>(p.softmax_scale());
    // dV^T (d x N, col-major) = dO^T P
    gemm(s, p.dtype, false, true, d, N, N, 1.0f, t.dO, d, nd, ws.b.get(), N, nn, t.dV, d, nd, BH);
    // dP (row-major) = column-major dP^T = V dO^T
    gemm(s, p.dtype, true, false, N, N, d, 1.0f, t.V, d, nd, t.dO, d, nd, ws.c.get(), N, nn, BH);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        softmax_backward_rows<T><<<dim3(N, BH), kThreads, 0, s>>>(ws.b.as<T>(), ws.c.as<T>(), ws.d.as<T>(), N);
        LAUNCH_CHECK();
    });
    // dQ^T = scale K^T dS^T ; dK^T = scale Q^T dS
    gemm(s, p.dtype, false, false, d, N, N, scale, t.K, d, nd, ws.d.get(), N, nn, t.dQ, d, nd, BH);
    gemm(s, p.dtype, false, true, d, N, N, scale, t.Q, d, nd, ws.d.get(), N, nn, t.dK, d, nd, BH);
}

}  // namespace fcuda
