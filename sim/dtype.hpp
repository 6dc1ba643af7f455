// sim/dtype.hpp — storage types and their rounding. Arithmetic is always float32 (accumulation)
// or float64 (the reference); the dtype decides how many bytes an element takes in memory and how
// inputs and outputs are rounded when stored.
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>

namespace sim {

enum class DType { fp32, fp16, bf16 };

int64_t dtype_bytes(DType t);
std::string_view dtype_name(DType t);
std::optional<DType> parse_dtype(std::string_view s);

// Round a float to the nearest value representable in `t` (round to nearest, ties to even),
// returned as float. fp32 is the identity.
float round_to(DType t, float x);

// Distance in units in the last place of `t` between two values of that type (both first rounded
// to `t`). 0 means bit-identical; NaN anywhere gives INT64_MAX.
int64_t ulp_distance(DType t, float a, float b);

}  // namespace sim
