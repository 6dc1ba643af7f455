// cuda/numbers.hpp — the mathematical constants the kernels and their launchers share, named once
// (host and device code; no nvcc needed). The kernels take exponentials and logarithms in base 2,
// the exponential unit's own: exp(x) = exp2(x log2 e), ln(x) = log2(x) ln 2.
#pragma once
#include <numbers>

namespace fcuda {

inline constexpr float LOG2E = std::numbers::log2e_v<float>;  // log2(e), to the nearest float
inline constexpr float LN2 = std::numbers::ln2_v<float>;      // ln(2), to the nearest float

}  // namespace fcuda
