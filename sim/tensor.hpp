// sim/tensor.hpp — host tensors of shape (B, H, N, d), row-major float storage, and the inputs
// every path shares (from sim/generator.hpp, rounded to the problem's dtype).
#pragma once
#include <cstdint>
#include <vector>

#include "sim/generator.hpp"
#include "sim/problem.hpp"

namespace sim {

template <typename T>
struct HostTensor {
    int64_t batch = 0, heads = 0, rows = 0, cols = 0;  // (B, H, N, d)
    std::vector<T> data;

    HostTensor() = default;
    HostTensor(int64_t b, int64_t h, int64_t n, int64_t d)
        : batch(b), heads(h), rows(n), cols(d), data(static_cast<size_t>(b * h * n * d)) {}
    int64_t head_size() const { return rows * cols; }
    int64_t size() const { return static_cast<int64_t>(data.size()); }
    T* head(int64_t bh) { return data.data() + bh * head_size(); }
    const T* head(int64_t bh) const { return data.data() + bh * head_size(); }
    T& at(int64_t bh, int64_t n, int64_t k) { return data[static_cast<size_t>(bh * head_size() + n * cols + k)]; }
    const T& at(int64_t bh, int64_t n, int64_t k) const {
        return data[static_cast<size_t>(bh * head_size() + n * cols + k)];
    }
};

using TensorF = HostTensor<float>;
using TensorD = HostTensor<double>;

struct Inputs {
    TensorF Q, K, V;  // (B, H, N, d), values already rounded to the problem's dtype
    TensorF dO;       // upstream gradient for the backward pass (empty when not needed)
};

// One input tensor from the shared generator, rounded to p.dtype.
TensorF generate_input(const Problem& p, InputTensor which);
Inputs generate_inputs(const Problem& p);

}  // namespace sim
