// sim/problem.hpp — what is being computed: attention over (B, H, N, d) tensors.
#pragma once
#include <cmath>
#include <cstdint>
#include <stdexcept>
#include <string>

#include "sim/dtype.hpp"

namespace sim {

// Every refusal in the simulator is a sim::Error whose message says what is wrong and how to fix it.
struct Error : std::runtime_error {
    using std::runtime_error::runtime_error;
};

struct Problem {
    int64_t batch = 1;          // B
    int64_t heads = 1;          // H
    int64_t seq = 0;            // N, tokens per sequence
    int64_t head_dim = 0;       // d
    DType dtype = DType::fp16;  // storage of Q, K, V, O, S, P in HBM; arithmetic is float32 (fp8: Q, K, V
                                // only; O is bf16, out_bytes)
    double scale = 0.0;         // softmax scale; 0 means the default 1/sqrt(d)
    bool causal = false;        // query n sees keys 0..n only
    int64_t window = 0;         // sliding window (keys n-window+1..n) when > 0; implies causal
    uint64_t seed = 42;         // input generator seed (sim/generator.hpp)
    int64_t pad_left = 0;       // the first pad_left keys are padding (a left-padded batch): no query sees
                                // them; with causal, queries n < pad_left see no key: fully masked rows (0)
    // Block-sparse attention (the paper's Section 3.3): the N x N scores cut into blocks of
    // mask_block_rows x mask_block_cols, each query block keeping a fraction block_density of the key
    // blocks (which ones: sim/mask.hpp, from the seed); the others are masked like the causal mask's
    // future. 1: dense. 0: every key masked (every output row 0). Blocks 0 x 0: the algorithm's tiles
    // B_r x B_c, which simulate() fills in (Result::problem holds them).
    double block_density = 1.0;
    int64_t mask_block_rows = 0, mask_block_cols = 0;

    double softmax_scale() const { return scale > 0.0 ? scale : 1.0 / std::sqrt(static_cast<double>(head_dim)); }
    int64_t heads_total() const { return batch * heads; }
    int64_t elem_bytes() const { return dtype_bytes(dtype); }
    // Bytes of an output element: the storage type's, except FP8's forward (FlashAttention-3's), which
    // reads e4m3 Q, K, V and writes a 16-bit O (bf16): e4m3's 3 mantissa bits are kept for the inputs
    // of the products, not for a result the next layer reads.
    int64_t out_bytes() const { return dtype == DType::fp8 ? 2 : elem_bytes(); }
    bool block_sparse() const { return block_density < 1.0; }
    // The mask's blocks are known (set, or filled in by simulate()); throws sim::Error otherwise.
    void require_mask_blocks() const;

    // Throws sim::Error naming the bad field; call before simulating.
    void validate() const;        // the shape, and sizes the walk's int64 counts and its schedule hold
    void validate_shape() const;  // the shape alone (closed forms in doubles, e.g. the footprint)
};

}  // namespace sim
