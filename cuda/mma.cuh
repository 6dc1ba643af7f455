// cuda/mma.cuh — the tensor-core building blocks shared by flash1.cu, flash2.cu, flash2_bwd.cu, flash2h.cu and decode.cu:
// cp.async (16-byte global -> shared copies, zero-filled past the end), ldmatrix (.trans),
// mma.sync m16n8k16 and m16n8k8 (fp16/bf16 in, fp32 accumulate), the XOR swizzle of shared tiles, exp2.
//
// Fragment layouts of mma.m16n8k16 (g = lane / 4, t = lane % 4):
//   A (16 x 16, row-major): a0 (g, 2t..2t+1)  a1 (g+8, 2t..)  a2 (g, 2t+8..)  a3 (g+8, 2t+8..)
//   B (16 x 8, "col"):      b0 (k = 2t..2t+1, n = g)          b1 (k = 2t+8.., n = g)
//   C (16 x 8, fp32):       c0 c1 (g, 2t..2t+1)               c2 c3 (g+8, 2t..2t+1)
// ldmatrix.x4 takes 4 8x8 matrices, lanes 8i..8i+7 giving the row addresses of matrix i; each
// lane gets from matrix i the pair (row lane/4, cols 2(lane%4)..+1) — or, .trans, the transposed.
#pragma once
#include <cuda_bf16.h>
#include <cuda_fp16.h>

#include <cstdint>

namespace fcuda {

// Tiles in shared memory are (rows, D) with D a multiple of 64 elements (8 chunks of 16 bytes):
// chunk c of row r is stored at chunk c ^ (r & 7). Eight consecutive rows read at one logical
// chunk (what ldmatrix does) then hit eight different 16-byte bank groups: no bank conflicts.
template <int D>
__device__ __forceinline__ int swz(int row, int col) {
    return row * D + ((((col >> 3) ^ (row & 7))) << 3) + (col & 7);
}

__device__ __forceinline__ uint32_t smem_u32(const void* p) {
    return static_cast<uint32_t>(__cvta_generic_to_shared(p));
}

// 16 bytes global -> shared, asynchronous. When !valid the 16 bytes are filled with zeros
// (src-size 0; the source address must still be a valid pointer, so callers pass the base).
__device__ __forceinline__ void cp_async16(void* smem, const void* gmem, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    asm volatile("cp.async.cg.shared.global [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem), "r"(src_bytes));
}
// The same copy with an L2 prefetch-size hint: on a miss, L2 fetches PF bytes (64, 128 or 256)
// around the line instead of the sectors asked for. PF = 0 is the plain copy above.
template <int PF>
__device__ __forceinline__ void cp_async16_pf(void* smem, const void* gmem, bool valid) {
    const int src_bytes = valid ? 16 : 0;
    if constexpr (PF == 0) {
        cp_async16(smem, gmem, valid);
    } else if constexpr (PF == 64) {
        asm volatile("cp.async.cg.shared.global.L2::64B [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                     "r"(src_bytes));
    } else if constexpr (PF == 128) {
        asm volatile("cp.async.cg.shared.global.L2::128B [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                     "r"(src_bytes));
    } else {
        static_assert(PF == 256, "L2 prefetch size: 0, 64, 128 or 256 bytes");
        asm volatile("cp.async.cg.shared.global.L2::256B [%0], [%1], 16, %2;\n" ::"r"(smem_u32(smem)), "l"(gmem),
                     "r"(src_bytes));
    }
}
__device__ __forceinline__ void cp_async_commit() { asm volatile("cp.async.commit_group;\n" ::); }
template <int N>
__device__ __forceinline__ void cp_async_wait() {
    asm volatile("cp.async.wait_group %0;\n" ::"n"(N));
}

// Copy rows [row0, row0 + ROWS) of a (N, D) head into a swizzled (ROWS, D) tile; rows >= N
// become zeros. All THREADS threads of the block take part.
template <int ROWS, int D, int THREADS, typename T>
__device__ __forceinline__ void load_tile_async(T* tile, const T* head, int row0, int N) {
    constexpr int kChunks = ROWS * D / 8;  // 16-byte chunks
    static_assert(kChunks % THREADS == 0, "tile chunks must divide among threads");
#pragma unroll
    for (int k = 0; k < kChunks / THREADS; ++k) {
        const int c = threadIdx.x + k * THREADS;
        const int r = c / (D / 8), col = (c % (D / 8)) * 8;
        const bool valid = row0 + r < N;
        const T* src = valid ? head + static_cast<size_t>(row0 + r) * D + col : head;
        cp_async16(tile + swz<D>(r, col), src, valid);
    }
}

__device__ __forceinline__ void ldmatrix_x4(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}
__device__ __forceinline__ void ldmatrix_x4_trans(uint32_t (&r)[4], const void* p) {
    asm volatile("ldmatrix.sync.aligned.m8n8.x4.trans.shared.b16 {%0,%1,%2,%3}, [%4];\n"
                 : "=r"(r[0]), "=r"(r[1]), "=r"(r[2]), "=r"(r[3])
                 : "r"(smem_u32(p)));
}

template <typename T>
__device__ __forceinline__ void mma16816(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1);

template <>
__device__ __forceinline__ void mma16816<__half>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0, uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}
template <>
__device__ __forceinline__ void mma16816<__nv_bfloat16>(float (&c)[4], const uint32_t (&a)[4], uint32_t b0,
                                                        uint32_t b1) {
    asm volatile(
        "mma.sync.aligned.m16n8k16.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5,%6,%7}, {%8,%9}, {%0,%1,%2,%3};\n"
        : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "r"(b0), "r"(b1));
}

// mma.sync m16n8k8 (decode.cu's O^T += V^T P^T): A (16 x 8) a0 (g, 2t..2t+1) a1 (g+8, 2t..);
// B (8 x 8, "col") b0 (k = 2t..2t+1, n = g); C as m16n8k16's.
template <typename T>
__device__ __forceinline__ void mma1688(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0);
template <>
__device__ __forceinline__ void mma1688<__half>(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.f16.f16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
}
template <>
__device__ __forceinline__ void mma1688<__nv_bfloat16>(float (&c)[4], uint32_t a0, uint32_t a1, uint32_t b0) {
    asm volatile("mma.sync.aligned.m16n8k8.row.col.f32.bf16.bf16.f32 {%0,%1,%2,%3}, {%4,%5}, {%6}, {%0,%1,%2,%3};\n"
                 : "+f"(c[0]), "+f"(c[1]), "+f"(c[2]), "+f"(c[3])
                 : "r"(a0), "r"(a1), "r"(b0));
}

// Two floats -> one 32-bit register of two fp16/bf16 (round to nearest even), low half first.
template <typename T>
__device__ __forceinline__ uint32_t pack2(float lo, float hi);
template <>
__device__ __forceinline__ uint32_t pack2<__half>(float lo, float hi) {
    __half2 h = __floats2half2_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}
template <>
__device__ __forceinline__ uint32_t pack2<__nv_bfloat16>(float lo, float hi) {
    __nv_bfloat162 h = __floats2bfloat162_rn(lo, hi);
    return *reinterpret_cast<uint32_t*>(&h);
}

// 2^x with the hardware approximation (ex2.approx; relative error ~2^-22, exp2(-inf) = 0).
__device__ __forceinline__ float fast_exp2(float x) {
    float y;
    asm("ex2.approx.ftz.f32 %0, %1;\n" : "=f"(y) : "f"(x));
    return y;
}

// 2^x on the FMA and integer units, not the exponential unit (MUFU), for x <= 0 and small positive x
// (the FP8 forward's 2^8-scaled P: x <= 8; j + 127 must stay below 255): x = j + f with j the nearest
// integer (the 1.5 * 2^23 trick puts j in the low mantissa bits of t) and f in [-0.5, 0.5]; 2^f by a
// degree-4 polynomial (coefficients: a minimax fit of the relative error on [-0.5, 0.5] with the
// constant term 1; relative error under 6e-6, about 50 fp32 ulps); j added to the exponent field.
// x <= -127 (and -inf) gives exactly +0 (clamped to -127: f = 0, p = 1, exponent field 0). Costs 4
// FADD/FMNMX, 4 FFMA and one integer shift-add instead of one MUFU.EX2: where the exponentials, not
// the tensor cores, bound a kernel, some of them move here.
__device__ __forceinline__ float poly_exp2(float x) {
    constexpr float ROUND = 12582912.0f;  // 1.5 * 2^23: x + ROUND rounds x to an integer
    const float xc = fmaxf(x, -127.0f);
    const float t = xc + ROUND;
    const float f = xc - (t - ROUND);  // in [-0.5, 0.5]
    float p = fmaf(0.00958285388f, f, 0.0559064262f);
    p = fmaf(p, f, 0.240240991f);
    p = fmaf(p, f, 0.693124175f);
    p = fmaf(p, f, 1.0f);
    return __int_as_float(__float_as_int(p) + (__float_as_int(t) << 23));
}

}  // namespace fcuda
