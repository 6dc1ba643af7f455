// cuda/decode.cu — decoding attention with split-KV (Flash-Decoding), grouped-query heads.
//
// One new token per sequence (q_len = 1) attends to a KV cache of L keys. H_q query heads share
// H_kv key/value heads (G = H_q / H_kv per KV head; G = 1 is MHA, H_kv = 1 MQA). Two kernels:
//   decode_split: one thread block per (split s, KV head h, batch b); it loads the G query rows
//     of h once, then streams the split's keys tile by tile (64 keys a tile), each K/V row read
//     once for all G query heads (up to 4 in one block; a larger G runs in chunks of 4, 2 or 1,
//     each chunk re-reading the K/V of its head). Every thread owns 8 elements (16 bytes) of one
//     key row: d/8 threads a row, 256/(d/8) rows at once, 64/(256/(d/8)) rows per thread per
//     tile, all their K and V loads (16-byte ld.global.nc) issued before any use. Scores are
//     reduced across a row's d/8 threads with shuffles; each thread group keeps its own online
//     softmax (m, l, O slice) per query head in base 2; at the end the block's groups are combined
//     through shared memory. With one split it writes O (storage type) and LSE; otherwise a
//     partial O_s (fp32, normalised) and LSE_s = m_s + log l_s.
//   decode_merge: one block per (b, query head), d threads: LSE = log sum_s exp(LSE_s),
//     O = sum_s exp(LSE_s - LSE) O_s, written in the storage type.
// Split count: sim::choose_splits with this GPU's SM count (enough blocks for 2 per SM, splits of
// >= 4 tiles), the same rule `flashsim decode` prints with its reason.
//
// Launch shape: split kernel grid (splits, H_kv * chunks, B), 256 threads, at most 128 registers
//   (2 blocks per SM); merge grid (B * H_q), d threads.
// SRAM (static shared memory): the final combine only: (256 / (d/8)) x d fp32 = 8 KiB, plus 2 x
//   (256 / (d/8)) floats. K and V never pass through shared memory (each element is used by the
//   one thread that loaded it).
// HBM traffic (the simulator's sim::simulate_decode with the same splits):
//   read K, V once per KV head (2 B H_kv L d e; x chunks when G > 4), Q once per block
//   (B H_kv splits G d e); with splits > 1 write and re-read the partials (B H_q splits (4d + 4))
//   and write O (B H_q d e).
// Run/check: flashsim bench --decode ; test_cuda_gpu -tc='decode*'
#include <algorithm>
#include <cmath>

#include "cuda/variants.hpp"
#include "sim/decode.hpp"

namespace fcuda {
namespace {

constexpr int kThreads = 256;
constexpr int kTileKeys = 64;
constexpr float kLog2e = 1.4426950408889634f;
constexpr float kLn2 = 0.6931471805599453f;

__device__ inline void unpack8(const uint4& r, float (&f)[8], __half) {
    const __half2* h = reinterpret_cast<const __half2*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float2 x = __half22float2(h[k]);
        f[2 * k] = x.x;
        f[2 * k + 1] = x.y;
    }
}
__device__ inline void unpack8(const uint4& r, float (&f)[8], __nv_bfloat16) {
    const __nv_bfloat162* h = reinterpret_cast<const __nv_bfloat162*>(&r);
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        const float2 x = __bfloat1622float2(h[k]);
        f[2 * k] = x.x;
        f[2 * k + 1] = x.y;
    }
}

// Q (B, H_q, 1, D), K and V (B, H_kv, L, D), O (B, H_q, 1, D), LSE (B, H_q); partials
// O_part (B, H_q, splits, D) and LSE_part (B, H_q, splits), fp32.
template <typename T, int D, int G>
__global__ void __launch_bounds__(kThreads, 2)
    decode_split(const T* __restrict__ Q, const T* __restrict__ K, const T* __restrict__ V, T* __restrict__ O,
                 float* __restrict__ LSE, float* __restrict__ O_part, float* __restrict__ LSE_part, int H_q, int H_kv,
                 int group, int64_t L, int64_t keys_per_split, int splits, float scale_log2) {
    constexpr int TPK = D / 8;          // threads per key row (16 bytes each)
    constexpr int NG = kThreads / TPK;  // key rows loaded at once
    constexpr int U = kTileKeys / NG;   // rows per thread per tile
    static_assert(U >= 1 && NG * U == kTileKeys, "tile shape");
    const int split = blockIdx.x, chunks = group / G;
    const int h_kv = blockIdx.y / chunks, chunk = blockIdx.y % chunks;
    const int64_t b = blockIdx.z;
    const int gi = threadIdx.x / TPK, li = threadIdx.x % TPK;
    const int qh0 = h_kv * group + chunk * G;  // first query head of this block
    const T* Kh = K + (b * H_kv + h_kv) * L * D + li * 8;
    const T* Vh = V + (b * H_kv + h_kv) * L * D + li * 8;

    float q[G][8];  // (G, 8): this thread's slice of the G query rows, times scale * log2(e)
#pragma unroll
    for (int g = 0; g < G; ++g) {
        const uint4 r = __ldg(reinterpret_cast<const uint4*>(Q + ((b * H_q + qh0 + g) * D) + li * 8));
        unpack8(r, q[g], T{});
#pragma unroll
        for (int x = 0; x < 8; ++x) q[g][x] *= scale_log2;
    }
    float m[G], l[G], acc[G][8];  // per query head: running max (base 2), running sum, O slice
#pragma unroll
    for (int g = 0; g < G; ++g) {
        m[g] = -INFINITY;
        l[g] = 0.f;
#pragma unroll
        for (int x = 0; x < 8; ++x) acc[g][x] = 0.f;
    }
    const int64_t k_begin = int64_t(split) * keys_per_split, k_end = min(L, k_begin + keys_per_split);
    for (int64_t tile = k_begin; tile < k_end; tile += kTileKeys) {
        uint4 kr[U], vr[U];  // all loads of the tile in flight before any use
#pragma unroll
        for (int u = 0; u < U; ++u) {
            const int64_t row = tile + u * NG + gi;
            if (row < k_end) {
                kr[u] = __ldg(reinterpret_cast<const uint4*>(Kh + row * D));
                vr[u] = __ldg(reinterpret_cast<const uint4*>(Vh + row * D));
            } else {
                kr[u] = vr[u] = make_uint4(0, 0, 0, 0);
            }
        }
        float s[G][U];
#pragma unroll
        for (int u = 0; u < U; ++u) {
            float kf[8];
            unpack8(kr[u], kf, T{});
#pragma unroll
            for (int g = 0; g < G; ++g) {
                float d = 0.f;
#pragma unroll
                for (int x = 0; x < 8; ++x) d = fmaf(q[g][x], kf[x], d);
#pragma unroll
                for (int off = TPK / 2; off > 0; off /= 2) d += __shfl_xor_sync(0xffffffffu, d, off);
                s[g][u] = tile + u * NG + gi < k_end ? d : -INFINITY;
            }
        }
#pragma unroll
        for (int g = 0; g < G; ++g) {
            float mx = m[g];
#pragma unroll
            for (int u = 0; u < U; ++u) mx = fmaxf(mx, s[g][u]);
            if (mx == -INFINITY) continue;         // no valid key yet for this group
            const float alpha = exp2f(m[g] - mx);  // m = -inf: 0
            l[g] *= alpha;
#pragma unroll
            for (int x = 0; x < 8; ++x) acc[g][x] *= alpha;
            m[g] = mx;
#pragma unroll
            for (int u = 0; u < U; ++u) {
                const float pk = exp2f(s[g][u] - mx);
                l[g] += pk;
                float vf[8];
                unpack8(vr[u], vf, T{});
#pragma unroll
                for (int x = 0; x < 8; ++x) acc[g][x] = fmaf(pk, vf[x], acc[g][x]);
            }
        }
    }
    // combine the NG groups of the block, one query head at a time
    __shared__ float sm_m[NG], sm_l[NG];
    __shared__ float sm_acc[NG][D];  // (NG, D)
#pragma unroll
    for (int g = 0; g < G; ++g) {
        if (li == 0) sm_m[gi] = m[g];
        __syncthreads();
        float M = -INFINITY;
        for (int k = 0; k < NG; ++k) M = fmaxf(M, sm_m[k]);
        const float f = m[g] == -INFINITY ? 0.f : exp2f(m[g] - M);
#pragma unroll
        for (int x = 0; x < 8; ++x) sm_acc[gi][li * 8 + x] = acc[g][x] * f;
        if (li == 0) sm_l[gi] = l[g] * f;
        __syncthreads();
        if (threadIdx.x < D) {
            float o = 0.f, lsum = 0.f;
            for (int k = 0; k < NG; ++k) {
                o += sm_acc[k][threadIdx.x];
                lsum += sm_l[k];
            }
            const int64_t qh = b * H_q + qh0 + g;
            const float lse = lsum > 0.f ? (M + log2f(lsum)) * kLn2 : -INFINITY;
            const float out = lsum > 0.f ? o / lsum : 0.f;
            if (splits == 1) {
                O[qh * D + threadIdx.x] = StorageTraits<T>::from_float(out);
                if (threadIdx.x == 0 && LSE) LSE[qh] = lse;
            } else {
                O_part[(qh * splits + split) * D + threadIdx.x] = out;
                if (threadIdx.x == 0) LSE_part[qh * splits + split] = lse;
            }
        }
        __syncthreads();
    }
}

template <typename T, int D>
__global__ void decode_merge(const float* __restrict__ O_part, const float* __restrict__ LSE_part, T* __restrict__ O,
                             float* __restrict__ LSE, int splits) {
    const int64_t qh = blockIdx.x;  // b * H_q + head
    const float* lp = LSE_part + qh * splits;
    float M = -INFINITY;
    for (int s = 0; s < splits; ++s) M = fmaxf(M, lp[s]);
    float sum = 0.f;
    for (int s = 0; s < splits; ++s) sum += lp[s] == -INFINITY ? 0.f : exp2f((lp[s] - M) * kLog2e);
    const float lse = M + logf(sum);
    float o = 0.f;
    for (int s = 0; s < splits; ++s)
        if (lp[s] != -INFINITY) o = fmaf(exp2f((lp[s] - lse) * kLog2e), O_part[(qh * splits + s) * D + threadIdx.x], o);
    O[qh * D + threadIdx.x] = StorageTraits<T>::from_float(o);
    if (threadIdx.x == 0 && LSE) LSE[qh] = lse;
}

template <typename T, int D, int G>
void launch_split(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    const dim3 grid(static_cast<unsigned>(plan.splits), static_cast<unsigned>(p.kv_heads * (p.group() / G)),
                    static_cast<unsigned>(p.batch));
    const float scale_log2 = static_cast<float>(p.softmax_scale()) * kLog2e;
    decode_split<T, D, G><<<grid, kThreads, 0, s>>>(
        static_cast<const T*>(t.Q), static_cast<const T*>(t.K), static_cast<const T*>(t.V), static_cast<T*>(t.O), t.LSE,
        t.O_part, t.LSE_part, static_cast<int>(p.q_heads), static_cast<int>(p.kv_heads), static_cast<int>(p.group()),
        p.kv_len, plan.keys_per_split, static_cast<int>(plan.splits), scale_log2);
    LAUNCH_CHECK();
    if (plan.splits > 1) {
        decode_merge<T, D><<<static_cast<unsigned>(p.batch * p.q_heads), D, 0, s>>>(
            t.O_part, t.LSE_part, static_cast<T*>(t.O), t.LSE, static_cast<int>(plan.splits));
        LAUNCH_CHECK();
    }
}

template <typename T, int D>
void launch_d(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    switch (plan.group_chunk) {
        case 4:
            return launch_split<T, D, 4>(p, plan, t, s);
        case 2:
            return launch_split<T, D, 2>(p, plan, t, s);
        default:
            return launch_split<T, D, 1>(p, plan, t, s);
    }
}

}  // namespace

sim::DecodeConfig decode_kernel_config() {
    sim::DecodeConfig c;
    c.tile_keys = kTileKeys;
    c.min_tiles_per_split = 4;
    c.blocks_per_sm = 2;
    return c;
}

void check_decode(const sim::DecodeProblem& p) {
    p.validate();
    if (p.q_len != 1) throw std::runtime_error("the decode kernel takes one new token (q_len = 1)");
    if (p.head_dim != 64 && p.head_dim != 128)
        throw std::runtime_error("the decode kernel supports head_dim 64 or 128 (got " + std::to_string(p.head_dim) +
                                 ")");
    if (p.dtype != sim::DType::fp16 && p.dtype != sim::DType::bf16)
        throw std::runtime_error("the decode kernel stores fp16 or bf16 (got " + std::string(sim::dtype_name(p.dtype)) +
                                 ")");
    if (p.batch > 65535) throw std::runtime_error("the decode kernel takes a batch of at most 65535");
}

DecodePlan decode_plan(const sim::DecodeProblem& p, int sm_count, int64_t splits) {
    check_decode(p);
    sim::Machine m;
    m.sm_count = sm_count;
    sim::DecodeConfig c = decode_kernel_config();
    c.splits = splits;
    const sim::DecodeSplit sp = sim::choose_splits(p, m, c);
    DecodePlan plan;
    plan.splits = sp.splits;
    plan.keys_per_split = sp.keys_per_split;
    plan.why = sp.why;
    const int64_t g = p.group();
    plan.group_chunk = g % 4 == 0 ? 4 : g % 2 == 0 ? 2 : 1;
    return plan;
}

void decode_forward(const sim::DecodeProblem& p, const DecodePlan& plan, const DecodeTensors& t, cudaStream_t s) {
    check_decode(p);
    dispatch_dtype(p.dtype, [&]<typename T>() {
        if (p.head_dim == 64)
            launch_d<T, 64>(p, plan, t, s);
        else
            launch_d<T, 128>(p, plan, t, s);
    });
}

}  // namespace fcuda
