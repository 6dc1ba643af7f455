// sim/kernel_geometry.hpp — numbers that both the CUDA kernels (cuda/) and the kernel model
// (sim/kernel_model.cpp) need, written once. Plain constexpr: nvcc and the host compiler both read it.
//
//   kMaxSmemPerBlock            the shared memory one thread block may opt into on sm_90 (227 KiB)
//   kFlash2hStaticCausalMaxTr*  flash2h forward's default grid under the causal mask: the static
//                               order while T_r = ceil(N / B_r) is at most this, launch order above
#pragma once
#include <cstdint>

namespace sim::geometry {

// 227 KiB: cudaDevAttrMaxSharedMemoryPerBlockOptin on H100 and H200 (228 KiB an SM less 1 KiB the
// hardware keeps per block).
inline constexpr int64_t kMaxSmemPerBlock = 227 * 1024;

// flash2h forward, d = 128 (B_r = 128): T_r up to 95, N <= 95 * 128 = 12,160. Measured on the H200:
// the static order gained 2.4% at N = 8,192 causal and lost 3.3% at 16,384 (docs: the static order).
inline constexpr int64_t kFlash2hStaticCausalMaxTr = 95;
// flash2h forward, d = 64 with three consumer warpgroups (B_r = 192): T_r up to 22, N <= 22 * 192 = 4,224.
inline constexpr int64_t kFlash2hStaticCausalMaxTr64 = 22;

}  // namespace sim::geometry
