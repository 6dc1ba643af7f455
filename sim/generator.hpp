// sim/generator.hpp — the counter-based input generator shared by host and device code.
//
// value = f(seed, tensor, index): no state, no files. The CPU simulator and the CUDA kernels call
// the same function, so for one (seed, shape) they see bit-identical Q, K, V (and dO).
// Values are uniform on [-1, 1) with 24 random bits, exactly representable in float32; rounding to
// fp16/bf16 (round to nearest even) happens afterwards, in sim/dtype.hpp or the device's intrinsics.
//
// Layout: a tensor of shape (B, H, N, d) is row-major; index = ((b * H + h) * N + n) * d + k.
#pragma once
#include <cstdint>

#if defined(__CUDACC__)
#define SIM_HD __host__ __device__
#else
#define SIM_HD
#endif

namespace sim {

// Which tensor a value belongs to; part of the hash input so Q, K and V differ.
enum class InputTensor : uint32_t { Q = 1, K = 2, V = 3, dO = 4 };

// SplitMix64's finaliser: a bijection on 64-bit integers with good avalanche.
SIM_HD inline uint64_t mix64(uint64_t x) {
    x ^= x >> 30;
    x *= 0xbf58476d1ce4e5b9ULL;
    x ^= x >> 27;
    x *= 0x94d049bb133111ebULL;
    x ^= x >> 31;
    return x;
}

// Uniform on [-1, 1): the top 24 bits of the hash, centred, times 2^-23 (exact in float32).
SIM_HD inline float input_value(uint64_t seed, InputTensor tensor, uint64_t index) {
    const uint64_t h = mix64(mix64(seed + 0x9e3779b97f4a7c15ULL * static_cast<uint64_t>(tensor)) ^ index);
    const int32_t centred = static_cast<int32_t>(h >> 40) - (1 << 23);
    return static_cast<float>(centred) * (1.0f / 8388608.0f);
}

}  // namespace sim
