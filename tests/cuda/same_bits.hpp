// tests/cuda/same_bits.hpp — two runs' outputs hold the same bits (same length, every float identical).
#pragma once
#include <cstring>
#include <vector>

inline bool same_bits(const std::vector<float>& a, const std::vector<float>& b) {
    return a.size() == b.size() && std::memcmp(a.data(), b.data(), a.size() * sizeof(float)) == 0;
}
