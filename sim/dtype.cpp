#include "sim/dtype.hpp"

#include <Eigen/Core>
#include <algorithm>
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
        case DType::fp8:
            return 1;
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
        case DType::fp8:
            return e4m3_decode(e4m3_encode(x));
    }
    return x;
}

uint8_t e4m3_encode(float x) {
    if (std::isnan(x)) return 0x7f;
    const uint8_t sign = std::signbit(x) ? 0x80 : 0x00;
    const double a = std::fabs(static_cast<double>(x));
    if (a >= kE4m3Max) return sign | 0x7e;  // saturate: 448 and past it (infinity included)
    // Below the smallest normal 2^-6 the grid is m x 2^-9; q = 8 lands on 2^-6 itself (E = 1, M = 0).
    if (a < 0x1p-6) return sign | static_cast<uint8_t>(std::nearbyint(a * 0x1p9));  // ties to even
    int k = 0;
    std::frexp(a, &k);                                      // a = f 2^k, f in [0.5, 1): the unbiased exponent is k - 1
    const int e = k - 1;                                    // -6 .. 8
    const double q = std::nearbyint(std::ldexp(a, 3 - e));  // 8 .. 16 steps of 2^(e-3); exact scaling
    // q = 16 carries into the next exponent by the addition; past 448 (0x7e) saturates
    const int bits = ((e + 7) << 3) + static_cast<int>(q) - 8;
    return sign | static_cast<uint8_t>(std::min(bits, 0x7e));
}

float e4m3_decode(uint8_t bits) {
    const int E = (bits >> 3) & 0xf, M = bits & 0x7;
    const float sign = (bits & 0x80) ? -1.0f : 1.0f;
    if (E == 0xf && M == 0x7) return std::numeric_limits<float>::quiet_NaN();
    if (E == 0) return sign * std::ldexp(static_cast<float>(M), -9);
    return sign * std::ldexp(1.0f + static_cast<float>(M) / 8.0f, E - 7);
}

namespace {
// Map a float's bit pattern to an integer line on which adjacent floats differ by 1.
int64_t ordered(uint32_t bits) {
    return (bits & 0x80000000u) ? -static_cast<int64_t>(bits & 0x7fffffffu) : static_cast<int64_t>(bits);
}
int64_t ordered16(uint16_t bits) {
    return (bits & 0x8000u) ? -static_cast<int64_t>(bits & 0x7fffu) : static_cast<int64_t>(bits);
}
int64_t ordered8(uint8_t bits) {
    return (bits & 0x80u) ? -static_cast<int64_t>(bits & 0x7fu) : static_cast<int64_t>(bits);
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
        case DType::fp8: {
            const int64_t d = ordered8(e4m3_encode(a)) - ordered8(e4m3_encode(b));
            return d < 0 ? -d : d;
        }
    }
    return 0;
}

}  // namespace sim
