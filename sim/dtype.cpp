#include "sim/dtype.hpp"

#include <Eigen/Core>
#include <bit>
#include <cmath>
#include <limits>

namespace sim {

int64_t dtype_bytes(DType t) {
    switch (t) {
        case DType::fp32:
            return 4;
        case DType::fp16:
            return 2;
        case DType::bf16:
            return 2;
    }
    return 4;
}

float round_to(DType t, float x) {
    switch (t) {
        case DType::fp32:
            return x;
        case DType::fp16:
            return static_cast<float>(Eigen::half(x));
        case DType::bf16:
            return static_cast<float>(Eigen::bfloat16(x));
    }
    return x;
}

namespace {
// Map a float's bit pattern to an integer line on which adjacent floats differ by 1.
int64_t ordered(uint32_t bits) {
    return (bits & 0x80000000u) ? -static_cast<int64_t>(bits & 0x7fffffffu) : static_cast<int64_t>(bits);
}
int64_t ordered16(uint16_t bits) {
    return (bits & 0x8000u) ? -static_cast<int64_t>(bits & 0x7fffu) : static_cast<int64_t>(bits);
}
}  // namespace

int64_t ulp_distance(DType t, float a, float b) {
    if (std::isnan(a) || std::isnan(b)) return std::numeric_limits<int64_t>::max();
    switch (t) {
        case DType::fp32: {
            const int64_t d = ordered(std::bit_cast<uint32_t>(a)) - ordered(std::bit_cast<uint32_t>(b));
            return d < 0 ? -d : d;
        }
        case DType::fp16: {
            const int64_t d = ordered16(Eigen::numext::bit_cast<uint16_t>(Eigen::half(a))) -
                              ordered16(Eigen::numext::bit_cast<uint16_t>(Eigen::half(b)));
            return d < 0 ? -d : d;
        }
        case DType::bf16: {
            const int64_t d = ordered16(Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(a))) -
                              ordered16(Eigen::numext::bit_cast<uint16_t>(Eigen::bfloat16(b)));
            return d < 0 ? -d : d;
        }
    }
    return 0;
}

}  // namespace sim
