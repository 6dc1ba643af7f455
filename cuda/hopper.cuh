// cuda/hopper.cuh — the Hopper (sm_90a) instructions flash2h.cu and flash2h_bwd.cu use, as thin inline-PTX wrappers:
//   * mbarrier and TMA's cp.async.bulk.tensor: cuda/tma.cuh (sm_90, shared with the decode kernel);
//   * 1-D bulk copies and bulk reductions, named barriers, register budgets;
//   * wgmma: warpgroup (128-thread) matrix multiply-accumulate, fp32 accumulators in registers,
//     operands from shared memory via 64-bit descriptors (or A from registers), plus its fence,
//     commit and wait.
// Only included by files compiled for sm_90a (-gencode=arch=compute_90a,code=sm_90a).
//
// Shared-memory descriptors (PTX ISA, "matrix descriptor"): bits 0-13 start address >> 4,
// 16-29 leading byte offset >> 4, 32-45 stride byte offset >> 4, 62-63 layout (1 = 128-byte
// swizzle). With the 128-byte swizzle, a tile is stored as panels 64 elements (128 bytes) wide;
// each row of a panel is 128 bytes and every 8 rows (1024 bytes) form one swizzle atom, which is
// exactly what TMA writes with CU_TENSOR_MAP_SWIZZLE_128B and a box 64 elements wide.
//   K-major operand (the reduction index runs along the 128-byte rows: Q and K for S = Q K^T):
//     stride byte offset = 1024 (next 8 rows), leading byte offset unused (1); step k by 16
//     elements = +32 bytes on the start address inside a panel, the next panel after 64.
//   MN-major operand (V for O = P V: the reduction index runs down the rows): leading byte
//     offset = bytes from one 64-column panel to the next, stride byte offset = 1024 (next 8
//     reduction rows); step k by 16 = +2048 bytes. wgmma is told to transpose B (imm-trans-b 1).
#pragma once
#include <cuda.h>
#include <cudaTypedefs.h>
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>
#include <cstdlib>
#include <stdexcept>
#include <string>
#include <type_traits>

#include "cuda/common.cuh"
#include "cuda/tma.cuh"
#include "sim/knobs.hpp"

namespace fcuda::hopper {

// ---- register budget of a warpgroup (all its threads execute it) ---------------------------------
template <int R>
__device__ __forceinline__ void setmaxnreg_inc() {
    asm volatile("setmaxnreg.inc.sync.aligned.u32 %0;" ::"n"(R));
}
template <int R>
__device__ __forceinline__ void setmaxnreg_dec() {
    asm volatile("setmaxnreg.dec.sync.aligned.u32 %0;" ::"n"(R));
}

// 1-D bulk copy (no tensor map): `bytes` (a multiple of 16, both addresses 16-byte aligned) from
// global memory into shared memory, completing on bar's transaction count.
__device__ __forceinline__ void bulk_load(uint32_t dst, const void* src, uint32_t bytes, uint32_t bar) {
    asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];" ::"r"(dst),
                 "l"(reinterpret_cast<uint64_t>(src)), "r"(bytes), "r"(bar)
                 : "memory");
}
// Shared memory written by ordinary stores and read next by wgmma (the async proxy): each writing
// thread fences before the barrier that orders the two.
__device__ __forceinline__ void fence_proxy_async() { asm volatile("fence.proxy.async.shared::cta;" ::: "memory"); }
// Named barrier `id` (1-15; 0 is __syncthreads) among `threads` threads (a multiple of 32).
__device__ __forceinline__ void named_sync(int id, int threads) {
    asm volatile("bar.sync %0, %1;" ::"r"(id), "r"(threads) : "memory");
}
// Arrive at named barrier `id` without waiting: the other side of a named_sync among `threads`
// (every thread of the arriving warp arrives; the warp must not be diverged).
__device__ __forceinline__ void named_arrive(int id, int threads) {
    asm volatile("bar.arrive %0, %1;" ::"r"(id), "r"(threads) : "memory");
}

// Bulk reduction (TMA unit): `bytes` of fp32 in shared memory added element-wise into global
// memory; completion tracked by the issuing thread's bulk groups.
__device__ __forceinline__ void bulk_reduce_add_f32(float* dst, uint32_t src, uint32_t bytes) {
    asm volatile("cp.reduce.async.bulk.global.shared::cta.bulk_group.add.f32 [%0], [%1], %2;" ::"l"(
                     reinterpret_cast<uint64_t>(dst)),
                 "r"(src), "r"(bytes)
                 : "memory");
}
__device__ __forceinline__ void bulk_commit() { asm volatile("cp.async.bulk.commit_group;" ::: "memory"); }
// every committed bulk group of this thread has finished reading its shared memory
__device__ __forceinline__ void bulk_wait_read_all() { asm volatile("cp.async.bulk.wait_group.read 0;" ::: "memory"); }
// all but the newest N committed bulk groups of this thread have finished reading shared memory
template <int N>
__device__ __forceinline__ void bulk_wait_read() {
    asm volatile("cp.async.bulk.wait_group.read %0;" ::"n"(N) : "memory");
}
// ... and finished altogether (its global writes done)
__device__ __forceinline__ void bulk_wait_all() { asm volatile("cp.async.bulk.wait_group 0;" ::: "memory"); }

// ---- grid order ----------------------------------------------------------------------------------
// A flash2h grid is (blocks of a head, heads), and under the causal mask its blocks differ in work.
// The scheduler starts thread blocks in linear grid order. heavy == 0: that order (a head's blocks,
// then the next head's); heavy != 0: block-major (block 0 of every head, then block 1 of every
// head), so with block 0 the heaviest, the light blocks of all heads fill the last wave.
struct GridPlace {
    int block, head;
};
__device__ __forceinline__ GridPlace grid_place(int heavy) {
    if (heavy == 0) return {static_cast<int>(blockIdx.x), static_cast<int>(blockIdx.y)};
    const int linear = static_cast<int>(blockIdx.x + blockIdx.y * gridDim.x), heads = static_cast<int>(gridDim.y);
    return {linear / heads, linear % heads};
}
// FLASHSIM_FLASH2H_ORDER=heads|heavy (default: heads); only causal grids are reordered.
inline int heavy_first(bool causal) {
    if (!causal) return 0;
    const char* e = sim::knob("FLASHSIM_FLASH2H_ORDER");
    const std::string v = e != nullptr ? e : "";
    if (v.empty() || v == "default" || v == "heads") return 0;
    if (v == "heavy") return 1;
    throw std::runtime_error("FLASHSIM_FLASH2H_ORDER must be heads or heavy (got '" + v + "')");
}

// ---- wgmma ---------------------------------------------------------------------------------------
__device__ __forceinline__ uint64_t desc_sw128(uint32_t saddr, uint32_t leading_bytes) {
    return static_cast<uint64_t>((saddr & 0x3FFFF) >> 4) | (static_cast<uint64_t>(leading_bytes >> 4) << 16) |
           (static_cast<uint64_t>(1024 >> 4) << 32) | (uint64_t{1} << 62);
}
__device__ __forceinline__ void wgmma_fence() { asm volatile("wgmma.fence.sync.aligned;" ::: "memory"); }
__device__ __forceinline__ void wgmma_commit() { asm volatile("wgmma.commit_group.sync.aligned;" ::: "memory"); }
template <int N>
__device__ __forceinline__ void wgmma_wait() {
    asm volatile("wgmma.wait_group.sync.aligned %0;" ::"n"(N) : "memory");
}
// Keeps the compiler from moving accumulator registers across an asynchronous wgmma.
template <int R>
__device__ __forceinline__ void fence_regs(float (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+f"(r[i])::"memory");
}
template <int R>
__device__ __forceinline__ void fence_regs(uint32_t (&r)[R]) {
#pragma unroll
    for (int i = 0; i < R; ++i) asm volatile("" : "+r"(r[i])::"memory");
}

// The instructions themselves: one template a form, for both 16-bit types and every width the
// kernels use. wgmma_ss: A and B from shared memory (TA / TB = 1 reads A / B transposed, MN-major:
// the reduction index runs down the rows; 0 K-major). wgmma_rs: A from registers (4 x 32 bits a
// thread), B transposed. N columns, N / 2 fp32 accumulators a thread. scale_d = 0 ignores the
// accumulator's old contents (D = A B), 1 accumulates (D += A B).
//
// Inline asm takes no arrays, so every accumulator is an operand of its own: %0 .. %(N/2 - 1),
// then the descriptors (or A's registers), scale_d and the transposes. FCUDA_ACC<n> names the n
// accumulator operands once, FCUDA_D<n> their places in the instruction text, and FCUDA_WGMMA
// writes the instruction for a type (picked by T), a shape and those lists.
#define FCUDA_ACC8(i)                                                                                           \
    "+f"(d[i]), "+f"(d[i + 1]), "+f"(d[i + 2]), "+f"(d[i + 3]), "+f"(d[i + 4]), "+f"(d[i + 5]), "+f"(d[i + 6]), \
        "+f"(d[i + 7])
#define FCUDA_ACC32 FCUDA_ACC8(0), FCUDA_ACC8(8), FCUDA_ACC8(16), FCUDA_ACC8(24)
#define FCUDA_ACC64 FCUDA_ACC32, FCUDA_ACC8(32), FCUDA_ACC8(40), FCUDA_ACC8(48), FCUDA_ACC8(56)
#define FCUDA_ACC88 FCUDA_ACC64, FCUDA_ACC8(64), FCUDA_ACC8(72), FCUDA_ACC8(80)
#define FCUDA_D32                                                            \
    "%0, %1, %2, %3, %4, %5, %6, %7, %8, %9, %10, %11, %12, %13, %14, %15, " \
    "%16, %17, %18, %19, %20, %21, %22, %23, %24, %25, %26, %27, %28, %29, %30, %31"
#define FCUDA_D64                                                                        \
    FCUDA_D32                                                                            \
    ", %32, %33, %34, %35, %36, %37, %38, %39, %40, %41, %42, %43, %44, %45, %46, %47, " \
    "%48, %49, %50, %51, %52, %53, %54, %55, %56, %57, %58, %59, %60, %61, %62, %63"
#define FCUDA_D88                                                    \
    FCUDA_D64                                                        \
    ", %64, %65, %66, %67, %68, %69, %70, %71, %72, %73, %74, %75, " \
    "%76, %77, %78, %79, %80, %81, %82, %83, %84, %85, %86, %87"
#define FCUDA_EXPAND(...) __VA_ARGS__
// TYPE: "bf16" or "f16"; SHAPE: "m64n128k16"; D: the accumulators' places; P: scale_d's place;
// REST: the instruction's operands after the accumulators; ACC and IN: the operand lists, each in
// parentheses
#define FCUDA_WGMMA_AS(TYPE, SHAPE, D, P, REST, ACC, IN)                                                \
    asm volatile("{\n.reg .pred p;\nsetp.ne.b32 p, " P                                                  \
                 ", 0;\n"                                                                               \
                 "wgmma.mma_async.sync.aligned." SHAPE ".f32." TYPE "." TYPE " {" D "}, " REST ";\n}\n" \
                 : FCUDA_EXPAND ACC                                                                     \
                 : FCUDA_EXPAND IN)
#define FCUDA_WGMMA(T, SHAPE, D, P, REST, ACC, IN)              \
    do {                                                        \
        if constexpr (std::is_same_v<T, __nv_bfloat16>)         \
            FCUDA_WGMMA_AS("bf16", SHAPE, D, P, REST, ACC, IN); \
        else                                                    \
            FCUDA_WGMMA_AS("f16", SHAPE, D, P, REST, ACC, IN);  \
    } while (0)

template <typename T, int N, int TA = 0, int TB = 0>
__device__ __forceinline__ void wgmma_ss(float (&d)[N / 2], uint64_t da, uint64_t db, int scale_d) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "wgmma: bf16 or fp16 operands");
    static_assert(N == 64 || N == 128 || N == 176, "wgmma_ss: N = 64, 128 or 176");
    if constexpr (N == 64)
        FCUDA_WGMMA(T, "m64n64k16", FCUDA_D32, "%34", "%32, %33, p, 1, 1, %35, %36", (FCUDA_ACC32),
                    ("l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)));
    else if constexpr (N == 128)
        FCUDA_WGMMA(T, "m64n128k16", FCUDA_D64, "%66", "%64, %65, p, 1, 1, %67, %68", (FCUDA_ACC64),
                    ("l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)));
    else
        FCUDA_WGMMA(T, "m64n176k16", FCUDA_D88, "%90", "%88, %89, p, 1, 1, %91, %92", (FCUDA_ACC88),
                    ("l"(da), "l"(db), "r"(scale_d), "n"(TA), "n"(TB)));
}

template <typename T, int N>
__device__ __forceinline__ void wgmma_rs(float (&d)[N / 2], const uint32_t (&a)[4], uint64_t db, int scale_d) {
    static_assert(std::is_same_v<T, __nv_bfloat16> || std::is_same_v<T, __half>, "wgmma: bf16 or fp16 operands");
    static_assert(N == 64 || N == 128, "wgmma_rs: N = 64 or 128");
    if constexpr (N == 64)
        FCUDA_WGMMA(T, "m64n64k16", FCUDA_D32, "%37", "{%32, %33, %34, %35}, %36, p, 1, 1, 1", (FCUDA_ACC32),
                    ("r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)));
    else
        FCUDA_WGMMA(T, "m64n128k16", FCUDA_D64, "%69", "{%64, %65, %66, %67}, %68, p, 1, 1, 1", (FCUDA_ACC64),
                    ("r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(db), "r"(scale_d)));
}

// ---- host side: tensor maps -----------------------------------------------------------------------

// A (B*H, N, d) tensor read in boxes of `rows` rows x 64 columns, 128-byte swizzled.
template <typename T>
inline CUtensorMap make_map(const void* ptr, const sim::Problem& p, int rows) {
    CUtensorMap map{};
    const cuuint64_t dims[3] = {static_cast<cuuint64_t>(p.head_dim), static_cast<cuuint64_t>(p.seq),
                                static_cast<cuuint64_t>(p.heads_total())};
    const cuuint64_t strides[2] = {static_cast<cuuint64_t>(p.head_dim) * 2,
                                   static_cast<cuuint64_t>(p.seq) * static_cast<cuuint64_t>(p.head_dim) * 2};
    const cuuint32_t box[3] = {64, static_cast<cuuint32_t>(rows), 1};
    const cuuint32_t elem_strides[3] = {1, 1, 1};
    const CUtensorMapDataType dt = StorageTraits<T>::dtype == sim::DType::bf16 ? CU_TENSOR_MAP_DATA_TYPE_BFLOAT16
                                                                               : CU_TENSOR_MAP_DATA_TYPE_FLOAT16;
    const CUresult r = encode_fn()(&map, dt, 3, const_cast<void*>(ptr), dims, strides, box, elem_strides,
                                   CU_TENSOR_MAP_INTERLEAVE_NONE, CU_TENSOR_MAP_SWIZZLE_128B,
                                   CU_TENSOR_MAP_L2_PROMOTION_L2_256B, CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE);
    if (r != CUDA_SUCCESS)
        throw std::runtime_error("flash2h: cuTensorMapEncodeTiled failed (CUresult " +
                                 std::to_string(static_cast<int>(r)) + ") for a (" + std::to_string(p.heads_total()) +
                                 ", " + std::to_string(p.seq) + ", " + std::to_string(p.head_dim) + ") tensor");
    return map;
}

}  // namespace fcuda::hopper
