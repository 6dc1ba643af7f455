// cuda/ceilings_sm90a.cu — the wgmma ceiling (Hopper only, compiled for sm_90a with flash2h):
// wgmma.m64n128k16 with both operands in shared memory, issued back to back by 3 warpgroups a
// block, one block an SM, 4 instructions (one 64-wide K panel) between commits, at most one
// group in flight behind the one being issued. Operands are random 16-bit values in a 128-byte
// swizzled layout (the same descriptors as flash2h); the result is only kept alive, not used.
// Part of `flashsim bench --ceilings` (cuda/ceilings.cu).
#include <string>
#include <vector>

#include "cuda/hopper.cuh"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

using namespace hopper;

constexpr int kWarpgroups = 3, kIters = 2048;
constexpr uint32_t kABytes = 64 * 128, kBBytes = 128 * 128;  // A (64, 64) and B (128, 64), 16-bit

template <bool BF16>
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
            if constexpr (BF16)
                wgmma_ss_m64n128k16_bf16(d, da + 2 * k, db + 2 * k, 1);
            else
                wgmma_ss_m64n128k16_f16(d, da + 2 * k, db + 2 * k, 1);
        }
        wgmma_commit();
        wgmma_wait<1>();
    }
    wgmma_wait<0>();
    fence_regs(d);
    float s = 0;
#pragma unroll
    for (int k = 0; k < 64; ++k) s += d[k];
    if (s == 12345.678f) *sink = s;
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
    CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel<true>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    CUDA_CHECK(cudaFuncSetAttribute(wgmma_kernel<false>, cudaFuncAttributeMaxDynamicSharedMemorySize, smem));
    const double flops = 2.0 * 64 * 128 * 16 * 4 * kIters * kWarpgroups * sms;
    for (int t = 0; t < 2; ++t) {
        const double ms = ceiling_median_ms([&] {
            if (t == 0)
                wgmma_kernel<true><<<sms, 128 * kWarpgroups, smem>>>(in.as<uint32_t>(), sink.as<float>());
            else
                wgmma_kernel<false><<<sms, 128 * kWarpgroups, smem>>>(in.as<uint32_t>(), sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({t == 0 ? "wgmma_bf16" : "wgmma_fp16", flops / (ms * 1e-3), "FLOP/s",
                       "wgmma.m64n128k16, A and B in shared memory, fp32 accumulate, 3 warpgroups a block, one "
                       "block an SM"});
    }
    return out;
}

}  // namespace fcuda
