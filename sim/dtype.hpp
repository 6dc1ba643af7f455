// sim/dtype.hpp — storage types and their rounding. Arithmetic is always float32 (accumulation)
// or float64 (the reference); the dtype decides how many bytes an element takes in memory and how
// inputs and outputs are rounded when stored.
//
// fp8 is OCP FP8 E4M3 ("e4m3fn"): 1 sign bit, 4 exponent bits (bias 7), 3 mantissa bits; no
// infinities, one NaN pattern a sign (S.1111.111); largest finite 448 = 1.75 x 2^8; smallest normal
// 2^-6; subnormals m x 2^-9 (m = 1..7). Rounding is to nearest, ties to even, and saturating: a
// finite value past 448, and an infinity, become +-448 (what the kernels' cvt.rn.satfinite gives);
// NaN stays NaN. FP8 needs a scale to use its range (sim/fp8_attention.hpp): round_to(fp8, x) rounds
// x itself, unscaled.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/enum_names.hpp"

namespace sim {

enum class DType { fp32, fp16, bf16, fp8 };
// Each type's name first; then the other spellings parse_dtype accepts.
template <>
struct EnumNames<DType> {
    static constexpr std::array<EnumName<DType>, 10> table{{{DType::fp32, "fp32"},
                                                            {DType::fp16, "fp16"},
                                                            {DType::bf16, "bf16"},
                                                            {DType::fp8, "fp8"},
                                                            {DType::fp32, "float32"},
                                                            {DType::fp16, "float16"},
                                                            {DType::fp16, "half"},
                                                            {DType::bf16, "bfloat16"},
                                                            {DType::fp8, "e4m3"},
                                                            {DType::fp8, "float8_e4m3fn"}}};
};

int64_t dtype_bytes(DType t);
inline std::string_view dtype_name(DType t) { return name_of(t); }
inline std::optional<DType> parse_dtype(std::string_view s) { return parse_enum<DType>(s); }

// Round a float to the nearest value representable in `t` (round to nearest, ties to even),
// returned as float. fp32 is the identity.
float round_to(DType t, float x);

// Distance in units in the last place of `t` between two values of that type (both first rounded
// to `t`). 0 means bit-identical; NaN anywhere gives INT64_MAX.
int64_t ulp_distance(DType t, float a, float b);

// E4M3 bit patterns. e4m3_encode rounds as round_to(DType::fp8, .) does (nearest even, saturating
// at +-448, NaN to 0x7f); e4m3_decode gives the exact value of any of the 256 patterns (NaN for
// 0x7f and 0xff).
uint8_t e4m3_encode(float x);
float e4m3_decode(uint8_t bits);
inline constexpr float kE4m3Max = 448.0f;  // 1.75 x 2^8

}  // namespace sim
