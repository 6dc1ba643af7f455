// sim/npy.hpp — NumPy .npy files (format 1.0–3.0, little-endian float16/float32/float64, C order),
// shapes (N, d) or (B, H, N, d), for `flashsim attend`.
#pragma once
#include <string>

#include "sim/tensor.hpp"

namespace sim {

struct NpyArray {
    TensorF tensor;       // (B, H, N, d); a 2-D file gives B = H = 1
    std::string descr;    // "<f2", "<f4" or "<f8"
    bool four_d = false;  // the file's shape was (B, H, N, d)
};

// Throws sim::Error naming the file and what is wrong (missing, bad magic, bad header,
// unsupported dtype or order, truncated data).
NpyArray read_npy(const std::string& path);
// The same from the file's bytes in memory; `name` is what the messages call it.
NpyArray parse_npy(const std::string& bytes, const std::string& name);
// Writes `t` with the given descr ("<f2", "<f4" or "<f8"), as (N, d) when !four_d and B = H = 1.
void write_npy(const std::string& path, const TensorF& t, const std::string& descr, bool four_d);

}  // namespace sim
