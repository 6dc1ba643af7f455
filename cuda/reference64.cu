// cuda/reference64.cu — attention in float64 on the GPU, for the numerics study and the scale
// checks (flashsim bench --study, --scale), where the CPU reference would take hours.
//
// The same definition as sim::attention_reference and fcuda::attention_backward_reference, row by
// row, with no tiling tricks: for each listed query row i, the scores s_ij = scale * q_i . k_j
// (j <= i when causal) are formed twice, once for the row maximum m_i and once for
// p_ij = exp(s_ij - m_i), l_i = sum_j p_ij, O_i = sum_j p_ij v_j / l_i, LSE_i = m_i + log l_i.
// The backward uses D_i = dO_i . O_i (this reference's O), dP_ij = dO_i . v_j,
// dS_ij = P_ij (dP_ij - D_i), dQ_i = scale sum_j dS_ij k_j, and for each listed key row j
// dK_j = scale sum_i dS_ij q_i, dV_j = sum_i P_ij dO_i. One thread block a row, 128 threads;
// dot products one warp a row (coalesced reads); everything in double, every offset in 64 bits. A test (tests/cuda) checks it against the CPU
// references on small problems.
#include <cuda_runtime.h>

#include <algorithm>
#include <cmath>
#include <stdexcept>
#include <vector>

#include "cuda/common.cuh"
#include "cuda/reference64.hpp"

namespace fcuda {

namespace {

constexpr int kThreads = 128;  // >= d (64 or 128); a thread owns one output column

__device__ double block_reduce(double v, bool take_max, double* scratch) {
    scratch[threadIdx.x] = v;
    __syncthreads();
    for (int w = kThreads / 2; w > 0; w /= 2) {
        if (threadIdx.x < w) {
            const double o = scratch[threadIdx.x + w];
            scratch[threadIdx.x] = take_max ? fmax(scratch[threadIdx.x], o) : scratch[threadIdx.x] + o;
        }
        __syncthreads();
    }
    const double r = scratch[0];
    __syncthreads();
    return r;
}

// out[k] = scale * (x . rows[first + k]) for k < kThreads and first + k < end (else 0): one warp a
// row at a time, its lanes reading the row's consecutive values (coalesced), then a warp sum.
// Ends with a barrier, so every thread may read out[] after it.
__device__ void chunk_dots(const double* x, const double* rows, int64_t first, int64_t end, int d, double scale,
                           double* out) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    for (int k = warp; k < kThreads; k += kThreads / 32) {
        double s = 0;
        if (first + k < end) {
            const double* r = rows + (first + k) * d;
            for (int c = lane; c < d; c += 32) s = fma(x[c], r[c], s);
        }
        for (int o = 16; o > 0; o >>= 1) s += __shfl_xor_sync(0xffffffffu, s, o);
        if (lane == 0) out[k] = s * scale;
    }
    __syncthreads();
}

// Forward of listed query rows: O (rows x d), LSE; D_i = dO_i . O_i when dO is given.
__global__ void ref64_forward(const double* Q, const double* K, const double* V, const double* dO, int64_t N, int d,
                              double scale, bool causal, const int64_t* rows, double* O, double* LSE, double* D) {
    __shared__ double q[kThreads], sc[kThreads], scratch[kThreads];
    const int64_t i = rows[blockIdx.x];
    const int t = threadIdx.x;
    if (t < d) q[t] = Q[i * d + t];
    __syncthreads();
    const int64_t keys = causal ? i + 1 : N;
    double m = -INFINITY;
    for (int64_t j0 = 0; j0 < keys; j0 += kThreads) {
        chunk_dots(q, K, j0, keys, d, scale, sc);
        if (j0 + t < keys) m = fmax(m, sc[t]);
        __syncthreads();
    }
    m = block_reduce(m, true, scratch);
    double acc = 0, l = 0;
    for (int64_t j0 = 0; j0 < keys; j0 += kThreads) {
        chunk_dots(q, K, j0, keys, d, scale, sc);
        const double p = j0 + t < keys ? exp(sc[t] - m) : 0.0;
        l += p;
        __syncthreads();
        sc[t] = p;
        __syncthreads();
        const int64_t n = keys - j0 < kThreads ? keys - j0 : int64_t(kThreads);
        if (t < d)
            for (int64_t k = 0; k < n; ++k) acc = fma(sc[k], V[(j0 + k) * d + t], acc);
        __syncthreads();
    }
    l = block_reduce(l, false, scratch);
    const double o = t < d ? acc / l : 0.0;
    if (t < d) O[int64_t(blockIdx.x) * d + t] = o;
    if (t == 0) LSE[blockIdx.x] = m + log(l);
    if (dO) {
        const double part = t < d ? o * dO[i * d + t] : 0.0;
        const double sum = block_reduce(part, false, scratch);
        if (t == 0) D[blockIdx.x] = sum;
    }
}

// dQ of listed query rows, given their LSE and D (indexed like rows).
__global__ void ref64_dq(const double* Q, const double* K, const double* V, const double* dO, int64_t N, int d,
                         double scale, bool causal, const int64_t* rows, const double* LSE, const double* D,
                         double* dQ) {
    __shared__ double q[kThreads], g[kThreads], s[kThreads], dp[kThreads];
    const int64_t i = rows[blockIdx.x];
    const int t = threadIdx.x;
    if (t < d) {
        q[t] = Q[i * d + t];
        g[t] = dO[i * d + t];
    }
    __syncthreads();
    const int64_t keys = causal ? i + 1 : N;
    const double lse = LSE[blockIdx.x], Di = D[blockIdx.x];
    double acc = 0;
    for (int64_t j0 = 0; j0 < keys; j0 += kThreads) {
        chunk_dots(q, K, j0, keys, d, scale, s);
        chunk_dots(g, V, j0, keys, d, 1.0, dp);
        const double ds = j0 + t < keys ? exp(s[t] - lse) * (dp[t] - Di) : 0.0;
        __syncthreads();
        s[t] = ds;
        __syncthreads();
        const int64_t n = keys - j0 < kThreads ? keys - j0 : int64_t(kThreads);
        if (t < d)
            for (int64_t k = 0; k < n; ++k) acc = fma(s[k], K[(j0 + k) * d + t], acc);
        __syncthreads();
    }
    if (t < d) dQ[int64_t(blockIdx.x) * d + t] = scale * acc;
}

// dK, dV of listed key rows; LSE_all and D_all hold every query row that sees them (index i).
__global__ void ref64_dkdv(const double* Q, const double* K, const double* V, const double* dO, int64_t N, int d,
                           double scale, bool causal, const int64_t* rows, const double* LSE_all, const double* D_all,
                           double* dK, double* dV) {
    __shared__ double k[kThreads], v[kThreads], s[kThreads], dp[kThreads];
    const int64_t j = rows[blockIdx.x];
    const int t = threadIdx.x;
    if (t < d) {
        k[t] = K[j * d + t];
        v[t] = V[j * d + t];
    }
    __syncthreads();
    const int64_t first = causal ? j : 0;
    double acc_k = 0, acc_v = 0;
    for (int64_t i0 = first; i0 < N; i0 += kThreads) {
        chunk_dots(k, Q, i0, N, d, scale, s);
        chunk_dots(v, dO, i0, N, d, 1.0, dp);
        const int64_t i = i0 + t;
        double p = 0, ds = 0;
        if (i < N) {
            p = exp(s[t] - LSE_all[i]);
            ds = p * (dp[t] - D_all[i]);
        }
        __syncthreads();
        s[t] = p;
        dp[t] = ds;
        __syncthreads();
        const int64_t n = N - i0 < kThreads ? N - i0 : int64_t(kThreads);
        if (t < d)
            for (int64_t r = 0; r < n; ++r) {
                acc_v = fma(s[r], dO[(i0 + r) * d + t], acc_v);
                acc_k = fma(dp[r], Q[(i0 + r) * d + t], acc_k);
            }
        __syncthreads();
    }
    if (t < d) {
        dK[int64_t(blockIdx.x) * d + t] = scale * acc_k;
        dV[int64_t(blockIdx.x) * d + t] = acc_v;
    }
}

template <typename T>
DeviceBuffer upload(const std::vector<T>& v) {
    DeviceBuffer b(std::max<size_t>(1, v.size()) * sizeof(T));
    if (!v.empty()) CUDA_CHECK(cudaMemcpy(b.get(), v.data(), v.size() * sizeof(T), cudaMemcpyHostToDevice));
    return b;
}
std::vector<double> download(const DeviceBuffer& b, size_t count) {
    std::vector<double> v(count);
    if (count) CUDA_CHECK(cudaMemcpy(v.data(), b.get(), count * sizeof(double), cudaMemcpyDeviceToHost));
    return v;
}

}  // namespace

Reference64 reference64_head(const HeadInputs64& in, const std::vector<int64_t>& q_rows,
                             const std::vector<int64_t>& k_rows) {
    const int64_t N = in.N;
    const int d = in.d;
    if (d <= 0 || d > kThreads) throw std::runtime_error("reference64_head: d must be 1.." + std::to_string(kThreads));
    const size_t elems = static_cast<size_t>(N) * d;
    if (in.Q.size() != elems || in.K.size() != elems || in.V.size() != elems ||
        (!in.dO.empty() && in.dO.size() != elems))
        throw std::runtime_error("reference64_head: tensors must hold N*d values");
    for (const auto* rows : {&q_rows, &k_rows})
        for (int64_t r : *rows)
            if (r < 0 || r >= N) throw std::runtime_error("reference64_head: row out of range");
    const bool backward = !in.dO.empty();
    if (!backward && !k_rows.empty()) throw std::runtime_error("reference64_head: key rows need dO");

    const DeviceBuffer Q = upload(in.Q), K = upload(in.K), V = upload(in.V);
    const DeviceBuffer dO = backward ? upload(in.dO) : DeviceBuffer();
    const double* dOp = backward ? dO.as<double>() : nullptr;

    // The query rows whose statistics are needed: the listed ones, and for listed key rows every
    // query row that sees them.
    std::vector<int64_t> stat_rows = q_rows;
    if (!k_rows.empty()) {
        const int64_t from = in.causal ? *std::min_element(k_rows.begin(), k_rows.end()) : 0;
        for (int64_t i = from; i < N; ++i) stat_rows.push_back(i);
    }
    std::sort(stat_rows.begin(), stat_rows.end());
    stat_rows.erase(std::unique(stat_rows.begin(), stat_rows.end()), stat_rows.end());

    Reference64 r;
    r.q_rows = q_rows;
    r.k_rows = k_rows;
    std::vector<double> lse_s, d_s, o_s;
    if (!stat_rows.empty()) {
        const DeviceBuffer rows = upload(stat_rows);
        const size_t n = stat_rows.size();
        DeviceBuffer O(n * d * sizeof(double)), LSE(n * sizeof(double)), D(n * sizeof(double));
        ref64_forward<<<static_cast<unsigned>(n), kThreads>>>(Q.as<double>(), K.as<double>(), V.as<double>(), dOp, N, d,
                                                              in.scale, in.causal, rows.as<int64_t>(), O.as<double>(),
                                                              LSE.as<double>(), D.as<double>());
        LAUNCH_CHECK();
        o_s = download(O, n * d);
        lse_s = download(LSE, n);
        if (backward) d_s = download(D, n);
    }
    auto at = [&](int64_t row) {
        return static_cast<size_t>(std::lower_bound(stat_rows.begin(), stat_rows.end(), row) - stat_rows.begin());
    };
    r.O.resize(q_rows.size() * d);
    r.LSE.resize(q_rows.size());
    std::vector<double> lse_q(q_rows.size()), d_q(q_rows.size());
    for (size_t k = 0; k < q_rows.size(); ++k) {
        const size_t s = at(q_rows[k]);
        std::copy_n(o_s.begin() + static_cast<std::ptrdiff_t>(s * d), d,
                    r.O.begin() + static_cast<std::ptrdiff_t>(k * d));
        r.LSE[k] = lse_s[s];
        lse_q[k] = lse_s[s];
        if (backward) d_q[k] = d_s[s];
    }
    if (!backward) return r;

    if (!q_rows.empty()) {
        const DeviceBuffer rows = upload(q_rows), LSE = upload(lse_q), D = upload(d_q);
        DeviceBuffer dQ(q_rows.size() * d * sizeof(double));
        ref64_dq<<<static_cast<unsigned>(q_rows.size()), kThreads>>>(Q.as<double>(), K.as<double>(), V.as<double>(),
                                                                     dOp, N, d, in.scale, in.causal, rows.as<int64_t>(),
                                                                     LSE.as<double>(), D.as<double>(), dQ.as<double>());
        LAUNCH_CHECK();
        r.dQ = download(dQ, q_rows.size() * d);
    }
    if (!k_rows.empty()) {
        // Full-length LSE and D (rows nobody reads stay 0).
        std::vector<double> lse_all(static_cast<size_t>(N), 0.0), d_all(static_cast<size_t>(N), 0.0);
        for (size_t s = 0; s < stat_rows.size(); ++s) {
            lse_all[static_cast<size_t>(stat_rows[s])] = lse_s[s];
            d_all[static_cast<size_t>(stat_rows[s])] = d_s[s];
        }
        const DeviceBuffer rows = upload(k_rows), LSE = upload(lse_all), D = upload(d_all);
        DeviceBuffer dK(k_rows.size() * d * sizeof(double)), dV(k_rows.size() * d * sizeof(double));
        ref64_dkdv<<<static_cast<unsigned>(k_rows.size()), kThreads>>>(
            Q.as<double>(), K.as<double>(), V.as<double>(), dOp, N, d, in.scale, in.causal, rows.as<int64_t>(),
            LSE.as<double>(), D.as<double>(), dK.as<double>(), dV.as<double>());
        LAUNCH_CHECK();
        r.dK = download(dK, k_rows.size() * d);
        r.dV = download(dV, k_rows.size() * d);
    }
    CUDA_CHECK(cudaDeviceSynchronize());
    return r;
}

}  // namespace fcuda
