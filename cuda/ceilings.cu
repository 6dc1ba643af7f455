// cuda/ceilings.cu — the GPU's own ceilings, measured by small microbenchmarks, for the timing
// model's `--ceilings measured` (issue: a timing model that knows the kernel).
//
// Each ceiling is one kernel that does nothing but the thing measured, over the whole GPU, long
// enough (tens of ms) that launch costs vanish: warm-up, then the median of 7 timed runs (CUDA
// events). Inputs are random (never zeros: the tensor cores draw less power on zeros and run
// faster). What each one counts:
//   hbm_copy       device-to-device copy of 1 GiB: (bytes read + bytes written) / time
//   hbm_read       1 GiB read by 16-byte loads, 4 in flight a thread: bytes read / time
//   hbm_write      1 GiB written by 16-byte stores: bytes written / time (a write stream alone, as
//                  a GEMM writing an N x N output is)
//   l2_read        every block re-reads a 24 MiB buffer (fits in the 60 MB L2) with 16-byte
//                  L2-only loads (ld.global.cg): bytes loaded / time
//   smem_read      16-byte shared-memory loads, conflict-free, every thread of every SM: bytes / time
//   mma_sync_bf16  mma.sync.m16n8k16 (bf16 in, fp32 accumulate), 4 independent accumulators a
//   mma_sync_fp16  warp, 8 warps a block, 4 blocks an SM: 4096 FLOP an instruction / time
//   wgmma_bf16     wgmma m64n128k16, both operands in shared memory (Hopper only; cuda/
//   wgmma_fp16     ceilings_sm90a.cu): 3 warpgroups a block, one block an SM: 262144 FLOP an
//                  instruction / time
//   ex2            ex2.approx.f32 (the special-function unit, MUFU), 8 independent chains a
//                  thread: exponentials / time
//   launch         back-to-back launches of an empty kernel: time per launch
//   hbm_rmw_f32_d64   flash1's per-step round trip of O_i (cuda/flash1.cu): one block of 8 warps
//   hbm_rmw_f32_d128  an SM walks 128-row fp32 tiles of a 1 GiB buffer (rows of d floats), each
//                  warp 16 rows read by float2 loads (all in flight), one added, written back by
//                  float2 stores: (bytes read + bytes written) / time
//   l2_red_f32x2   flash2's backward dQ accumulation (cuda/flash2_bwd.cu): float2 atomic adds
//                  (red.global.add.v2.f32) of 64 x 128 fp32 tiles, each warp a 16-row strip; the
//                  128 blocks of a head walk the same tiles in the same order (so they add into
//                  one tile at a time, as the kernel's key blocks do), 2 heads, 2 blocks an SM:
//                  bytes added / time
//   l2_red_f32x2_distinct  the same adds, each block into two tiles of its own (no two blocks on a line)
//   l2_red_fence   the deterministic backward's fence: rounds of a warpgroup's 16 KiB of float2 atomics,
//                  each fenced before the next, against the same rounds unfenced: seconds a fence adds
//   gemm_write_bf16_d64   cuBLAS writing a GEMM's N x N output, as cuda/standard.cu's S = Q K^T (and
//   gemm_write_bf16_d128  dP = dO V^T) calls it: cublasGemmStridedBatchedEx, op(K)^T op(Q), depth d,
//   gemm_write_fp16_d64   fp32 accumulate, N = 8192, the recorded rows' batch at N = 8192 (B N = 16384,
//   gemm_write_fp16_d128  H d = 2048: 64 heads at d = 64, 32 at d = 128; 8 and 4 GiB written), halved
//                  until it fits in free memory: bytes of the output / time. The library's own
//                  write rate, which the model charges for those two GEMMs' output
//   gemm_qk_*, gemm_pv_*, gemm_ptv_*, gemm_write_*_n<N>, softmax_rows_fwd_n<N>, softmax_rows_bwd_n<N>:
//                  standard's own calls alone at row lengths N that are not multiples of 8 and their
//                  aligned neighbours (cuda/ceilings_standard.cu says which and how)
// Run: flashsim bench --ceilings [--json results/h200/ceilings.json]
#include <algorithm>
#include <cmath>
#include <functional>
#include <string>
#include <vector>

#include "cuda/mma.cuh"
#include "cuda/standard_calls.hpp"
#include "cuda/variants.hpp"

namespace fcuda {
namespace {

__global__ void fill_random(uint32_t* x, size_t n, uint32_t seed) {
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n; i += size_t(gridDim.x) * blockDim.x) {
        uint32_t h = static_cast<uint32_t>(i) * 2654435761u ^ seed;
        h ^= h >> 15;
        h *= 2246822519u;
        h ^= h >> 13;
        // two 16-bit values in [-1, 1) whatever the type (bf16 and fp16 both read 0x3Cxx / 0xBCxx as ~±1)
        x[i] = (h & 0x80008000u) | 0x3C003C00u | (h & 0x00FF00FFu);
    }
}

}  // namespace

void fill_random_bits(void* buf, size_t bytes, uint32_t seed, int sms) {
    fill_random<<<4 * sms, 256>>>(static_cast<uint32_t*>(buf), bytes / 4, seed);
    LAUNCH_CHECK();
}

double ceiling_median_ms(const std::function<void()>& f) {
    constexpr int runs = 7;
    f();
    CUDA_CHECK(cudaDeviceSynchronize());
    cudaEvent_t a, b;
    CUDA_CHECK(cudaEventCreate(&a));
    CUDA_CHECK(cudaEventCreate(&b));
    std::vector<float> ms;
    for (int r = 0; r < runs; ++r) {
        CUDA_CHECK(cudaEventRecord(a));
        f();
        CUDA_CHECK(cudaEventRecord(b));
        CUDA_CHECK(cudaEventSynchronize(b));
        float t = 0;
        CUDA_CHECK(cudaEventElapsedTime(&t, a, b));
        ms.push_back(t);
    }
    CUDA_CHECK(cudaEventDestroy(a));
    CUDA_CHECK(cudaEventDestroy(b));
    std::sort(ms.begin(), ms.end());
    return ms[ms.size() / 2];
}

namespace {

// HBM streams one way: every thread 4 independent 16-byte loads (or stores) in flight a turn,
// grid-stride over the buffer (1 GiB, 16x the L2), 4 blocks of 512 threads an SM.
__global__ void hbm_read_kernel(const uint4* __restrict__ buf, size_t n16, float* sink) {
    uint32_t acc = 0;
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += 4 * stride) {
        uint4 v[4];
#pragma unroll
        for (int k = 0; k < 4; ++k) v[k] = i + k * stride < n16 ? __ldcs(buf + i + k * stride) : make_uint4(0, 0, 0, 0);
#pragma unroll
        for (int k = 0; k < 4; ++k) acc ^= v[k].x ^ v[k].y ^ v[k].z ^ v[k].w;
    }
    if (acc == 0x12345678u) *sink = float(acc);  // keeps the loads
}
__global__ void hbm_write_kernel(uint4* __restrict__ buf, size_t n16, uint32_t seed) {
    const size_t stride = size_t(gridDim.x) * blockDim.x;
    for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n16; i += 4 * stride)
#pragma unroll
        for (int k = 0; k < 4; ++k)
            if (i + k * stride < n16) {
                const uint32_t h = static_cast<uint32_t>(i + k * stride) * 2654435761u ^ seed;
                __stcs(buf + i + k * stride, make_uint4(h, h ^ 0x9E3779B9u, h + 0x7F4A7C15u, ~h));
            }
}

__global__ void l2_read_kernel(const float4* __restrict__ buf, size_t n4, int passes, float* sink) {
    float acc = 0;
    for (int p = 0; p < passes; ++p)
        for (size_t i = blockIdx.x * size_t(blockDim.x) + threadIdx.x; i < n4; i += size_t(gridDim.x) * blockDim.x) {
            const float4 v = __ldcg(buf + ((i + size_t(p) * 4099) % n4));
            acc += v.x + v.y + v.z + v.w;
        }
    if (acc == 12345.678f) *sink = acc;  // never true for these inputs; keeps the loads alive
}

constexpr int kSmemIters = 4096;
__global__ void smem_read_kernel(float* sink) {
    __shared__ float4 tile[1024];
    tile[threadIdx.x] = make_float4(threadIdx.x, 1, 2, 3);
    __syncthreads();
    float4 acc = make_float4(0, 0, 0, 0);
    unsigned idx = threadIdx.x;
#pragma unroll 16
    for (int i = 0; i < kSmemIters; ++i) {
        const float4 v = tile[idx];
        acc.x += v.x;
        acc.y += v.y;
        acc.z += v.z;
        acc.w += v.w;
        idx = (idx + 32) & 1023u;  // consecutive threads, consecutive 16 bytes: no bank conflicts
    }
    if (acc.x + acc.y + acc.z + acc.w == -1.0f) *sink = acc.x;
}

constexpr int kMmaIters = 4096;
template <typename T>
__global__ void mma_sync_kernel(const uint32_t* __restrict__ in, float* sink) {
    uint32_t a[4], b[2];
    const int lane = threadIdx.x % 32;
    for (int k = 0; k < 4; ++k) a[k] = in[lane * 4 + k];
    b[0] = in[128 + lane];
    b[1] = in[160 + lane];
    float c[4][4] = {};
    for (int i = 0; i < kMmaIters; ++i) {
#pragma unroll
        for (int k = 0; k < 4; ++k) mma16816<T>(c[k], a, b[0], b[1]);
    }
    float s = 0;
    for (int k = 0; k < 4; ++k) s += c[k][0] + c[k][1] + c[k][2] + c[k][3];
    if (s == 12345.678f) *sink = s;
}

constexpr int kExpIters = 4096;
__global__ void ex2_kernel(float* sink) {
    float x[8];
    for (int k = 0; k < 8; ++k) x[k] = -0.001f * (threadIdx.x + k);
    for (int i = 0; i < kExpIters; ++i) {
#pragma unroll
        for (int k = 0; k < 8; ++k) {
            float e;
            asm volatile("ex2.approx.ftz.f32 %0, %1;" : "=f"(e) : "f"(x[k]));
            x[k] = -0.9f * e;  // stays in (-0.9, 0): no overflow, no denormals
        }
    }
    float s = 0;
    for (int k = 0; k < 8; ++k) s += x[k];
    if (s == 12345.678f) *sink = s;
}

__global__ void empty_kernel() {}

// flash1's step without its products: the O_i tile's fp32 round trip, in the kernel's own access
// pattern (lane g, t of a warp: rows g and g + 8 of its 16-row strip, columns 8 nb + 2 t).
constexpr int kRmwRows = 128, kRmwThreads = 256;
template <int D>
__global__ void __launch_bounds__(kRmwThreads, 1) hbm_rmw_kernel(float* __restrict__ buf, size_t tiles) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    for (size_t tile = blockIdx.x; tile < tiles; tile += gridDim.x) {
        float* ra = buf + (tile * kRmwRows + warp * 16 + g) * D;
        float* rb = ra + 8 * D;
        float2 o[D / 8][2];
#pragma unroll
        for (int nb = 0; nb < D / 8; ++nb) {
            o[nb][0] = *reinterpret_cast<const float2*>(ra + nb * 8 + 2 * t);
            o[nb][1] = *reinterpret_cast<const float2*>(rb + nb * 8 + 2 * t);
        }
#pragma unroll
        for (int nb = 0; nb < D / 8; ++nb) {
            *reinterpret_cast<float2*>(ra + nb * 8 + 2 * t) = make_float2(o[nb][0].x + 1.0f, o[nb][0].y);
            *reinterpret_cast<float2*>(rb + nb * 8 + 2 * t) = make_float2(o[nb][1].x + 1.0f, o[nb][1].y);
        }
    }
}

// flash2's backward dQ phase without its products: 4 warps (B_c = 64 key rows at d = 128), warp w
// adds rows 16 w .. 16 w + 15 of a 64 x 128 fp32 tile by float2 atomics; block (j, h) walks the
// tiles i = 0 .. steps - 1 of head h (shared: all j add into the same tile i) or two of its own in turn.
constexpr int kRedD = 128, kRedRows = 64, kRedThreads = 128;
__global__ void __launch_bounds__(kRedThreads) l2_red_kernel(float* __restrict__ acc, int steps, bool distinct) {
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32, g = lane / 4, t = lane % 4;
    // shared: head h's steps tiles; distinct: the block's own two tiles, used in turn (16 MiB in all)
    const size_t region = distinct ? size_t(blockIdx.y) * gridDim.x + blockIdx.x : blockIdx.y;
    float* base = acc + region * size_t(distinct ? 2 : steps) * kRedRows * kRedD;
    const float a = 1e-3f * (lane + 1), b = 2e-3f * (warp + 1);
    for (int i = 0; i < steps; ++i) {
        float* ra = base + (size_t(distinct ? i % 2 : i) * kRedRows + warp * 16 + g) * kRedD;
        float* rb = ra + 8 * kRedD;
#pragma unroll
        for (int nb = 0; nb < kRedD / 8; ++nb) {
            atomic_add2(ra + nb * 8 + 2 * t, a, b);
            atomic_add2(rb + nb * 8 + 2 * t, b, a);
        }
    }
}

// The deterministic backward's fence (cuda/flash2h_bwd.cu, flush_dq): one warpgroup a block, one
// block an SM, each round adds a 64 x 64 fp32 part (16 KiB: 16 float2 atomics a thread) into the
// block's own tile and, with `fence`, waits for them (__threadfence, then the warpgroup's barrier)
// before the next round. The time a round takes with the fence beyond the same rounds without it
// is what the fence exposes: the atomics' round trip through L2.
constexpr int kFenceThreads = 128, kFenceRounds = 2000;
__global__ void __launch_bounds__(kFenceThreads) red_fence_kernel(float* __restrict__ acc, bool fence) {
    float* tile = acc + size_t(blockIdx.x) * 64 * 64;
    const float a = 1e-3f * (threadIdx.x + 1), b = 2e-3f;
    for (int r = 0; r < kFenceRounds; ++r) {
#pragma unroll
        for (int nb = 0; nb < 16; ++nb) atomic_add2(tile + (nb * kFenceThreads + threadIdx.x) * 2, a, b);
        if (fence) {
            __threadfence();
            __syncthreads();
        }
    }
}

}  // namespace

std::vector<Ceiling> measure_ceilings() {
    const int sms = sm_count();
    std::vector<Ceiling> out;
    DeviceBuffer sink(64);

    {  // HBM: a 1 GiB device-to-device copy
        const size_t bytes = size_t{1} << 30;
        DeviceBuffer a(bytes), b(bytes);
        fill_random<<<4 * sms, 256>>>(a.as<uint32_t>(), bytes / 4, 1);
        LAUNCH_CHECK();
        const double ms =
            ceiling_median_ms([&] { CUDA_CHECK(cudaMemcpyAsync(b.get(), a.get(), bytes, cudaMemcpyDeviceToDevice)); });
        out.push_back({"hbm_copy", 2.0 * bytes / (ms * 1e-3), "B/s",
                       "cudaMemcpyAsync device to device, 1 GiB; bytes read + bytes written over the median time"});
    }
    {  // HBM one way: a 1 GiB read stream and a 1 GiB write stream
        const size_t bytes = size_t{1} << 30, n16 = bytes / 16;
        DeviceBuffer a(bytes);
        fill_random<<<4 * sms, 256>>>(a.as<uint32_t>(), bytes / 4, 3);
        LAUNCH_CHECK();
        const double ms_read = ceiling_median_ms([&] {
            hbm_read_kernel<<<4 * sms, 512>>>(a.as<uint4>(), n16, sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({"hbm_read", double(bytes) / (ms_read * 1e-3), "B/s",
                       "16-byte loads (ld.global.cs, 4 in flight a thread) of 1 GiB, 4 blocks of 512 threads an SM; "
                       "bytes read over the median time"});
        const double ms_write = ceiling_median_ms([&] {
            hbm_write_kernel<<<4 * sms, 512>>>(a.as<uint4>(), n16, 4);
            LAUNCH_CHECK();
        });
        out.push_back({"hbm_write", double(bytes) / (ms_write * 1e-3), "B/s",
                       "16-byte stores (st.global.cs, 4 a thread a turn) of 1 GiB, 4 blocks of 512 threads an SM; "
                       "bytes written over the median time"});
    }
    {  // L2: re-reading 24 MiB
        const size_t bytes = size_t{24} << 20, n4 = bytes / 16;
        DeviceBuffer a(bytes);
        fill_random<<<4 * sms, 256>>>(a.as<uint32_t>(), bytes / 4, 2);
        LAUNCH_CHECK();
        const int passes = 40, blocks = 4 * sms;
        const double ms = ceiling_median_ms([&] {
            l2_read_kernel<<<blocks, 512>>>(a.as<float4>(), n4, passes, sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back(
            {"l2_read", double(bytes) * passes / (ms * 1e-3), "B/s",
             "16-byte ld.global.cg loads re-reading a 24 MiB buffer 40 times, 4 blocks of 512 threads an SM"});
    }
    {  // shared memory
        const int blocks = 2 * sms, threads = 1024;
        const double ms = ceiling_median_ms([&] {
            smem_read_kernel<<<blocks, threads>>>(sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({"smem_read", 16.0 * blocks * threads * double(kSmemIters) / (ms * 1e-3), "B/s",
                       "16-byte conflict-free ld.shared, 2 blocks of 1024 threads an SM"});
    }
    {  // mma.sync
        DeviceBuffer in(4096);
        fill_random<<<1, 256>>>(in.as<uint32_t>(), 1024, 3);
        LAUNCH_CHECK();
        const int blocks = 4 * sms, threads = 256;
        const double flops = 4096.0 * 4 * kMmaIters * (blocks * threads / 32);
        for (int t = 0; t < 2; ++t) {
            const double ms = ceiling_median_ms([&] {
                if (t == 0)
                    mma_sync_kernel<__nv_bfloat16><<<blocks, threads>>>(in.as<uint32_t>(), sink.as<float>());
                else
                    mma_sync_kernel<__half><<<blocks, threads>>>(in.as<uint32_t>(), sink.as<float>());
                LAUNCH_CHECK();
            });
            out.push_back({t == 0 ? "mma_sync_bf16" : "mma_sync_fp16", flops / (ms * 1e-3), "FLOP/s",
                           "mma.sync.m16n8k16, fp32 accumulate, 4 independent accumulators a warp, 8 warps a block, "
                           "4 blocks an SM"});
        }
    }
    {  // the exponential unit
        const int blocks = 4 * sms, threads = 512;
        const double ms = ceiling_median_ms([&] {
            ex2_kernel<<<blocks, threads>>>(sink.as<float>());
            LAUNCH_CHECK();
        });
        out.push_back({"ex2", 8.0 * kExpIters * blocks * threads / (ms * 1e-3), "op/s",
                       "ex2.approx.ftz.f32, 8 independent chains a thread, 4 blocks of 512 threads an SM"});
    }
    {  // a launch
        const int n = 2000;
        const double ms = ceiling_median_ms([&] {
            for (int i = 0; i < n; ++i) empty_kernel<<<1, 32>>>();
            LAUNCH_CHECK();
        });
        out.push_back({"launch", ms * 1e-3 / n, "s", "2000 back-to-back launches of an empty kernel; time per launch"});
    }
    {  // flash1's O_i round trip: one block of 8 warps an SM, 1 GiB of fp32 rows
        const size_t bytes = size_t{1} << 30;
        DeviceBuffer a(bytes);
        fill_random<<<4 * sms, 256>>>(a.as<uint32_t>(), bytes / 4, 5);
        LAUNCH_CHECK();
        for (int t = 0; t < 2; ++t) {
            const int d = t == 0 ? 64 : 128;
            const size_t tiles = bytes / (size_t(kRmwRows) * d * 4);
            const double ms = ceiling_median_ms([&] {
                if (t == 0)
                    hbm_rmw_kernel<64><<<sms, kRmwThreads>>>(a.as<float>(), tiles);
                else
                    hbm_rmw_kernel<128><<<sms, kRmwThreads>>>(a.as<float>(), tiles);
                LAUNCH_CHECK();
            });
            out.push_back({t == 0 ? "hbm_rmw_f32_d64" : "hbm_rmw_f32_d128", 2.0 * bytes / (ms * 1e-3), "B/s",
                           "flash1's O_i round trip: one block of 8 warps an SM walks 128 x " + std::to_string(d) +
                               " fp32 tiles of 1 GiB, each warp 16 rows read by float2 loads (all in flight) and "
                               "written back by float2 stores; bytes read + written over the median time"});
        }
    }
    {  // flash2 backward's dQ atomics: float2 adds of 64 x 128 fp32 tiles, 2 heads x 128 blocks
        const int heads = 2, blocks = 128, steps = 128;
        const double added = double(heads) * blocks * steps * kRedRows * kRedD * 4;
        DeviceBuffer acc(size_t(heads) * std::max(steps, 2 * blocks) * kRedRows * kRedD * 4);
        CUDA_CHECK(cudaMemset(acc.get(), 0, acc.bytes()));
        for (int t = 0; t < 2; ++t) {
            const double ms = ceiling_median_ms([&] {
                l2_red_kernel<<<dim3(blocks, heads), kRedThreads>>>(acc.as<float>(), steps, t == 1);
                LAUNCH_CHECK();
            });
            out.push_back({t == 0 ? "l2_red_f32x2" : "l2_red_f32x2_distinct", added / (ms * 1e-3), "B/s",
                           t == 0 ? "float2 atomic adds (red.global.add.v2.f32) of 64 x 128 fp32 tiles, a warp a "
                                    "16-row strip, 4 warps a block; the 128 blocks of each of 2 heads add into the "
                                    "same tile at a time, 128 tiles in order (4 MiB a head, in L2); bytes added / time"
                                  : "float2 atomic adds of 64 x 128 fp32 tiles as l2_red_f32x2, each of the 256 "
                                    "blocks into two tiles of its own in turn (16 MiB, in L2); bytes added / time"});
        }
    }
    {  // the fence after a warpgroup's dQ atomics (the deterministic backward's turn)
        DeviceBuffer acc(size_t(sms) * 64 * 64 * 4);
        CUDA_CHECK(cudaMemset(acc.get(), 0, acc.bytes()));
        double ms[2];
        for (int f = 0; f < 2; ++f)
            ms[f] = ceiling_median_ms([&] {
                red_fence_kernel<<<sms, kFenceThreads>>>(acc.as<float>(), f == 1);
                LAUNCH_CHECK();
            });
        out.push_back({"l2_red_fence", std::max(0.0, ms[1] - ms[0]) * 1e-3 / kFenceRounds, "s",
                       "one warpgroup a block, one block an SM: rounds of 16 KiB of float2 atomics into the block's "
                       "own 64 x 64 fp32 tile, each round fenced (__threadfence, barrier) before the next; the time "
                       "a round takes beyond the same rounds unfenced (" +
                           std::to_string(ms[0] * 1e3 / kFenceRounds) + " us a round unfenced)"});
    }
    {  // cuBLAS writing S = Q K^T (standard's own call): N = 8192, depth d, the rows' batch (halved until it fits)
        const int N = 8192;
        for (const int d : {64, 128})
            for (const sim::DType dt : {sim::DType::bf16, sim::DType::fp16}) {
                const size_t nn = size_t(N) * N, nd = size_t(N) * d;
                int batch = 4096 / d;  // B N = 16384, H d = 2048 at N = 8192
                size_t free_b = 0, total_b = 0;
                CUDA_CHECK(cudaMemGetInfo(&free_b, &total_b));
                while (batch > 1 && (nn + 2 * nd) * 2 * size_t(batch) + (size_t{256} << 20) > free_b) batch /= 2;
                DeviceBuffer qk(2 * nd * 2 * size_t(batch)), out_s(nn * 2 * size_t(batch));
                fill_random<<<4 * sms, 256>>>(qk.as<uint32_t>(), qk.bytes() / 4, 7 + d);
                LAUNCH_CHECK();
                const char* Q = static_cast<const char*>(qk.get());
                const char* K = Q + nd * 2 * size_t(batch);
                const double ms = ceiling_median_ms([&] { standard_scores(dt, N, d, batch, Q, K, out_s.get(), 0); });
                out.push_back({std::string("gemm_write_") + std::string(sim::dtype_name(dt)) + "_d" + std::to_string(d),
                               double(nn) * 2 * batch / (ms * 1e-3), "B/s",
                               "cuBLAS S = Q K^T as cuda/standard.cu calls it (cublasGemmStridedBatchedEx, fp32 "
                               "accumulate), N = 8192, depth " +
                                   std::to_string(d) + ", " + std::to_string(batch) +
                                   " heads; bytes of S written over the median time"});
            }
    }
    for (const Ceiling& c : measure_standard_ceilings(sms)) out.push_back(c);
    std::string why;
    if (flash2h_available(&why)) {
        for (const Ceiling& c : measure_wgmma_ceilings(sms)) out.push_back(c);
    } else {
        out.push_back({"wgmma_bf16", 0, "FLOP/s", "not measured: " + why});
    }
    return out;
}

}  // namespace fcuda
