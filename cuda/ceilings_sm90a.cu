// cuda/ceilings_sm90a.cu — the wgmma ceiling (Hopper only, compiled for sm_90a with flash2h):
// wgmma.m64n128k16 with both operands in shared memory, issued back to back by 3 warpgroups a
// block, one block an SM, 4 instructions (one 64-wide K panel) between commits, at most one
// group in flight behind the one being issued. Operands are random 16-bit values in a 128-byte
// swizzled layout (the same descriptors as flash2h); the result is only kept alive, not used.
// Part of `flashsim bench --ceilings` (cuda/ceilings.cu).
// Also the shapes the backward (flash2h_bwd.cu) issues, with its two consumer warpgroups a block:
// wgmma m64n64k16 and m64n128k16, A from shared memory (ss) or from registers (rs), and the
// bulk reduction that adds its fp32 dQ_i tiles into global memory (cp.reduce.async.bulk .add.f32,
// 16 KiB tiles, two issuing threads a block; "shared": 64 blocks add into the same tiles, in the
// same order, as one head's 64 key blocks do at N = 8192; "distinct": each block its own tiles),
// and the latency of a wgmma group that a warpgroup waits on at once; and FP8 (e4m3) products at the
// same tile, the rate an FP8 attention's two products run at.
#include <algorithm>
#include <string>
#include <vector>

#include "cuda/hopper.cuh"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

using namespace hopper;

constexpr int kWarpgroups = 3, kIters = 2048;

// The accumulators, kept: summed and stored only if the sum is a value it never takes, so the
// compiler cannot drop the products that made them.
template <int R>
__device__ __forceinline__ void keep(float (&d)[R], float* sink) {
    fence_regs(d);
    float s = 0;
#pragma unroll
    for (int k = 0; k < R; ++k) s += d[k];
    if (s == 12345.678f) *sink = s;
}
constexpr uint32_t kABytes = 64 * 128, kBBytes = 128 * 128;  // A (64, 64) and B (128, 64), 16-bit

// FP8 (e4m3) products: wgmma.m64n128k32 with both operands in shared memory, K-major (the only
// layout FP8 wgmma reads), the same 128-byte swizzled panels as above: a panel row holds 128 one-byte
// values, so a 32-deep K step advances 32 bytes, as a 16-deep bf16 step does. No transpose immediates
// (FP8 has none). wgmma_kernel<kE4m3> issues it as the 16-bit kernels issue theirs.
__device__ __forceinline__ void wgmma_e4m3_m64n128k32(float (&d)[64], uint64_t da, uint64_t db) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, 1, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n128k32.f32.e4m3.e4m3 {" FCUDA_D64 "}, %64, %65, p, 1, 1;\n}\n"
        : FCUDA_ACC64
        : "l"(da), "l"(db));
}

enum Operands { kBf16, kFp16, kE4m3 };
template <int OPS>
__global__ void __launch_bounds__(128 * kWarpgroups, 1) wgmma_kernel(const uint32_t* __restrict__ in, float* sink) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    uint32_t* words = reinterpret_cast<uint32_t*>(smem_raw + (base - smem_addr(smem_raw)));
    for (uint32_t i = threadIdx.x; i < (kABytes + kBBytes) / 4; i += blockDim.x) words[i] = in[i % 4096];
    fence_proxy_async();
    __syncthreads();
    float d[64];
#pragma unroll
    for (int k = 0; k < 64; ++k) d[k] = 0;
    const uint64_t da = desc_sw128(base, 0), db = desc_sw128(base + kABytes, 0);
    for (int it = 0; it < kIters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) {  // the 4 K-steps of a 64-wide panel: 32 bytes each
            if constexpr (OPS == kBf16)
                wgmma_ss<__nv_bfloat16, 128>(d, da + 2 * k, db + 2 * k, 1);
            else if constexpr (OPS == kFp16)
                wgmma_ss<__half, 128>(d, da + 2 * k, db + 2 * k, 1);
            else  // e4m3: a 32-deep K step is 32 bytes, as a 16-deep 16-bit one
                wgmma_e4m3_m64n128k32(d, da + 2 * k, db + 2 * k);
        }
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    keep(d, sink);
}

// The backward's shapes: WG warpgroups issue m64nNk16 back to back, 4 between commits (one 64-deep
// K panel), one group in flight behind the one being issued; A (64, 64) from shared memory (K-major)
// or, RS, from registers; B (N, 64) from shared memory, K-major (ss) or MN-major (rs), as flash2h_bwd.
template <int WG, int N, bool RS>
__global__ void __launch_bounds__(128 * WG, 1) wgmma_shape_kernel(const uint32_t* __restrict__ in, float* sink) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    uint32_t* words = reinterpret_cast<uint32_t*>(smem_raw + (base - smem_addr(smem_raw)));
    for (uint32_t i = threadIdx.x; i < (kABytes + N * 128) / 4; i += blockDim.x) words[i] = in[i % 4096];
    fence_proxy_async();
    __syncthreads();
    uint32_t a[4][4];
#pragma unroll
    for (int k = 0; k < 4; ++k)
#pragma unroll
        for (int q = 0; q < 4; ++q) a[k][q] = in[(threadIdx.x * 16 + k * 4 + q) % 4096];
    float d[N / 2];
#pragma unroll
    for (int k = 0; k < N / 2; ++k) d[k] = 0;
    const uint32_t b = base + kABytes;
    for (int it = 0; it < kIters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if constexpr (RS) {
                if constexpr (N == 128)
                    wgmma_rs<__nv_bfloat16, 128>(d, a[k], desc_sw128(b + k * 16 * 128, 64 * 128), 1);
                else
                    wgmma_rs<__nv_bfloat16, 64>(d, a[k], desc_sw128(b + k * 16 * 128, 64 * 128), 1);
            } else {
                if constexpr (N == 128)
                    wgmma_ss<__nv_bfloat16, 128>(d, desc_sw128(base, 0) + 2 * k, desc_sw128(b, 0) + 2 * k, 1);
                else
                    wgmma_ss<__nv_bfloat16, 64, 0, 0>(d, desc_sw128(base, 0) + 2 * k, desc_sw128(b, 0) + 2 * k, 1);
            }
        }
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    keep(d, sink);
}

// A wgmma group's latency: one warpgroup, K m64n64k16 (both operands in shared memory) a group,
// each group waited on at once (wait_group 0) before the next is issued.
template <int K>
__global__ void __launch_bounds__(128, 1) wgmma_wait_kernel(const uint32_t* __restrict__ in, float* sink) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    uint32_t* words = reinterpret_cast<uint32_t*>(smem_raw + (base - smem_addr(smem_raw)));
    for (uint32_t i = threadIdx.x; i < 2 * kABytes / 4; i += blockDim.x) words[i] = in[i % 4096];
    fence_proxy_async();
    __syncthreads();
    float d[32];
#pragma unroll
    for (int k = 0; k < 32; ++k) d[k] = 0;
    for (int it = 0; it < kIters; ++it) {
        wgmma_fence();
#pragma unroll
        for (int k = 0; k < K; ++k)
            wgmma_ss<__nv_bfloat16, 64, 0, 0>(d, desc_sw128(base, 0) + 2 * (k % 4),
                                              desc_sw128(base + kABytes, 0) + 2 * (k % 4), 1);
        wgmma_commit();
        wgmma_wait<0>();
    }
    keep(d, sink);
}

// The bulk reduction: thread 0 of each of a block's two warpgroups adds its 16 KiB shared-memory
// tile into tile (group, it % span, w) of the accumulator, group = block / share, kRedIters times,
// at most 2 reductions a thread still reading shared memory.
constexpr int kRedTileBytes = 16384, kRedIters = 2048;
__global__ void __launch_bounds__(256, 1) bulk_reduce_kernel(float* acc, int share, int span) {
    extern __shared__ unsigned char smem_raw[];
    const uint32_t base = (smem_addr(smem_raw) + 127u) & ~127u;
    float* tile = reinterpret_cast<float*>(smem_raw + (base - smem_addr(smem_raw)));
    for (int i = threadIdx.x; i < 2 * kRedTileBytes / 4; i += blockDim.x)
        tile[i] = 1e-3f * static_cast<float>(i % 13 - 6);
    fence_proxy_async();
    __syncthreads();
    const int w = threadIdx.x / 128;
    if (threadIdx.x % 128 == 0) {
        const size_t group = blockIdx.x / share;
        for (int it = 0; it < kRedIters; ++it) {
            float* dst = acc + ((group * span + it % span) * 2 + w) * (kRedTileBytes / 4);
            bulk_reduce_add_f32(dst, base + w * kRedTileBytes, kRedTileBytes);
            bulk_commit();
            bulk_wait_read<1>();
        }
        bulk_wait_all();
    }
}

}  // namespace

std::vector<Ceiling> measure_wgmma_ceilings(int sms) {
    std::vector<Ceiling> out;
    DeviceBuffer in(4096 * 4), sink(64);
    std::vector<uint32_t> host(4096);
    uint32_t h = 12345;
    for (auto& w : host) {  // random 16-bit pairs of magnitude about 1 (fp16) or 2^-7 (bf16), never zero
        h = h * 1664525u + 1013904223u;
        w = (h & 0x80008000u) | 0x3C003C00u | ((h >> 8) & 0x00FF00FFu);
    }
    CUDA_CHECK(cudaMemcpy(in.get(), host.data(), 4096 * 4, cudaMemcpyHostToDevice));
    const int smem = kABytes + kBBytes + 1024;
    CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel<kBf16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel<kFp16>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const double flops = 2.0 * 64 * 128 * 16 * 4 * kIters * kWarpgroups * sms;
    for (int t = 0; t < 2; ++t) {
        const double ms = ceiling_median_ms([&] {
            if (t == 0)
                wgmma_kernel<kBf16><<<sms, 128 * kWarpgroups, smem>>>(in.as<uint32_t>(), sink.as<float>());
            else
                wgmma_kernel<kFp16><<<sms, 128 * kWarpgroups, smem>>>(in.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({t == 0 ? "wgmma_bf16" : "wgmma_fp16", flops / (ms * 1e-3), "FLOP/s",
                       "wgmma.m64n128k16, A and B in shared memory, fp32 accumulate, 3 warpgroups a block, one "
                       "block an SM"});
    }
    {  // FP8: the same panels hold 128 e4m3 values a row (A 64 x 128, B 128 x 128), twice the K of bf16
        std::vector<uint32_t> bytes(4096);
        for (auto& w : bytes) {  // random e4m3 bytes of magnitude 2^-7 to 2: the top exponent bit clear, never NaN
            h = h * 1664525u + 1013904223u;
            w = h & 0xBFBFBFBFu;
        }
        DeviceBuffer in8(4096 * 4);
        CUDA_CHECK(cudaMemcpy(in8.get(), bytes.data(), 4096 * 4, cudaMemcpyHostToDevice));
        CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel<kE4m3>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
        const double ms = ceiling_median_ms([&] {
            wgmma_kernel<kE4m3><<<sms, 128 * kWarpgroups, smem>>>(in8.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({"wgmma_e4m3", 2.0 * 64 * 128 * 32 * 4 * kIters * kWarpgroups * sms / (ms * 1e-3), "FLOP/s",
                       "wgmma.m64n128k32 e4m3 x e4m3, A and B in shared memory (K-major), fp32 accumulate, 3 "
                       "warpgroups a block, one block an SM"});
    }
    // the backward's shapes, two warpgroups a block (bf16)
    auto shape = [&](auto kernel, int wg, int n, const char* name, const char* how) {
        const int sm = kABytes + n * 128 + 1024;
        CUDA_CHECK(cudaFuncSetAttribute(kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        const double ms = ceiling_median_ms([&] {
            kernel<<<sms, 128 * wg, sm>>>(in.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({name, 2.0 * 64 * n * 16 * 4 * kIters * wg * sms / (ms * 1e-3), "FLOP/s",
                       std::string("wgmma.m64n") + std::to_string(n) + "k16 bf16, " + how + ", fp32 accumulate, " +
                           std::to_string(wg) + " warpgroups a block, one block an SM"});
    };
    shape(wgmma_shape_kernel<2, 64, false>, 2, 64, "wgmma_bf16_ss_m64n64_2wg", "A and B in shared memory");
    shape(wgmma_shape_kernel<2, 64, true>, 2, 64, "wgmma_bf16_rs_m64n64_2wg", "A in registers, B in shared memory");
    shape(wgmma_shape_kernel<2, 128, false>, 2, 128, "wgmma_bf16_ss_m64n128_2wg", "A and B in shared memory");
    shape(wgmma_shape_kernel<2, 128, true>, 2, 128, "wgmma_bf16_rs_m64n128_2wg", "A in registers, B in shared memory");
    shape(wgmma_shape_kernel<3, 64, false>, 3, 64, "wgmma_bf16_ss_m64n64_3wg", "A and B in shared memory");
    {  // a wgmma group waited on at once: its time beyond K instructions at the back-to-back rate
        const int sm = 2 * kABytes + 1024;
        CUDA_CHECK(cudaFuncSetAttribute(wgmma_wait_kernel<1>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        CUDA_CHECK(cudaFuncSetAttribute(wgmma_wait_kernel<8>, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        const double ms1 = ceiling_median_ms([&] {
            wgmma_wait_kernel<1><<<sms, 128, sm>>>(in.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        const double ms8 = ceiling_median_ms([&] {
            wgmma_wait_kernel<8><<<sms, 128, sm>>>(in.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        const double g1 = ms1 * 1e-3 / kIters, g8 = ms8 * 1e-3 / kIters;  // seconds a group
        out.push_back({"wgmma_wait", g1 - (g8 - g1) / 7, "s",
                       "one warpgroup a block, one block an SM: a group of k wgmma.m64n64k16 (bf16, both operands "
                       "in shared memory) waited on at once, k = 1 and 8; the time a group takes beyond k "
                       "instructions at the back-to-back rate"});
    }
    {  // the bulk reduction into an fp32 accumulator that L2 holds
        const int sm = 2 * kRedTileBytes + 128;
        CUDA_CHECK(cudaFuncSetAttribute(bulk_reduce_kernel, cudaFuncAttributeMaxDynamicSharedMemorySize, sm));
        const int groups_shared = (sms + 63) / 64, span_shared = 128, span_distinct = 4;
        const size_t floats =
            static_cast<size_t>(std::max(groups_shared * span_shared, sms * span_distinct)) * 2 * (kRedTileBytes / 4);
        DeviceBuffer acc(floats * 4);
        CUDA_CHECK(cudaMemset(acc.get(), 0, floats * 4));
        const double bytes = 2.0 * kRedTileBytes * kRedIters * sms;
        for (int t = 0; t < 2; ++t) {
            const double ms = ceiling_median_ms([&] {
                bulk_reduce_kernel<<<sms, 256, sm>>>(acc.as<float>(), t == 0 ? 64 : 1,
                                                     t == 0 ? span_shared : span_distinct);
                LAUNCH_CHECK();
            });
            out.push_back({t == 0 ? "l2_bulk_reduce_f32" : "l2_bulk_reduce_f32_distinct", bytes / (ms * 1e-3), "B/s",
                           t == 0 ? "cp.reduce.async.bulk .add.f32 of 16 KiB shared-memory tiles, 2 issuing threads a "
                                    "block, one block an SM; 64 blocks add into the same 128 x 2 tiles in the same "
                                    "order (one head's key blocks at N = 8192); bytes added / time"
                                  : "cp.reduce.async.bulk .add.f32 of 16 KiB shared-memory tiles, 2 issuing threads a "
                                    "block, one block an SM; each block its own 4 x 2 tiles; bytes added / time"});
        }
    }
    return out;
}

}  // namespace fcuda
