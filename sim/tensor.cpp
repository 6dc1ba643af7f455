#include "sim/tensor.hpp"

namespace sim {

TensorF generate_input(const Problem& p, InputTensor which) {
    TensorF t(p.batch, p.heads, p.seq, p.head_dim);
    const uint64_t n = static_cast<uint64_t>(t.size());
    for (uint64_t i = 0; i < n; ++i) t.data[i] = round_to(p.dtype, input_value(p.seed, which, i));
    return t;
}

Inputs generate_inputs(const Problem& p) {
    return {
        generate_input(p, InputTensor::Q), generate_input(p, InputTensor::K), generate_input(p, InputTensor::V), {}};
}

}  // namespace sim
