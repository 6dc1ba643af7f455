// sim/dtype.hpp — storage types and their rounding. Arithmetic is always float32 (accumulation)
// or float64 (the reference); the dtype decides how many bytes an element takes in memory and how
// inputs and outputs are rounded when stored.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

#include "sim/enum_names.hpp"

namespace sim {

enum class DType { fp32, fp16, bf16 };
// Each type's name first; then the other spellings parse_dtype accepts.
template <>
struct EnumNames<DType> {
    static constexpr std::array<EnumName<DType>, 7> table{{{DType::fp32, "fp32"},
                                                           {DType::fp16, "fp16"},
                                                           {DType::bf16, "bf16"},
                                                           {DType::fp32, "float32"},
                                                           {DType::fp16, "float16"},
                                                           {DType::fp16, "half"},
                                                           {DType::bf16, "bfloat16"}}};
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

}  // namespace sim
