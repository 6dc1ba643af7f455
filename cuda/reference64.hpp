// cuda/reference64.hpp — the float64 attention reference run on the GPU (cuda/reference64.cu), one
// head at a time, for listed rows: what the numerics study and the scale checks compare the
// kernels with when the CPU reference (sim/reference.hpp, cuda/reference_bwd.hpp) would be too
// slow. Plain C++: no CUDA headers.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/tensor.hpp"

namespace fcuda {

// The bars that compare kernels with float64 (the numerics study, the ring): one unit in the last
// place of the storage type at magnitude x, and the largest magnitude of a reference tensor.
inline double ulp_at(sim::DType dt, double x) {
    const int mant = dt == sim::DType::bf16 ? 7 : dt == sim::DType::fp16 ? 10 : dt == sim::DType::fp8 ? 3 : 23;
    return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::max(std::abs(x), 1e-30)))) - mant);
}
inline double max_abs_of(const sim::TensorD& t) {
    double m = 0;
    for (double v : t.data) m = std::max(m, std::abs(v));
    return m;
}

// One head's inputs in double, row-major (N, d). dO empty: forward only.
struct HeadInputs64 {
    int64_t N = 0;
    int d = 0;
    double scale = 0;
    bool causal = false;
    std::vector<double> Q, K, V, dO;
};

// Per listed query row: O (d values), LSE; with dO also dQ. Per listed key row: dK, dV (with dO).
struct Reference64 {
    std::vector<int64_t> q_rows, k_rows;
    std::vector<double> O, LSE, dQ;  // q_rows.size() x d (LSE: x 1)
    std::vector<double> dK, dV;      // k_rows.size() x d
};

// Throws std::runtime_error on inconsistent sizes, rows out of range or a CUDA failure.
Reference64 reference64_head(const HeadInputs64& in, const std::vector<int64_t>& q_rows,
                             const std::vector<int64_t>& k_rows);

}  // namespace fcuda
