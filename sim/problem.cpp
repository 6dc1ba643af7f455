#include "sim/problem.hpp"

#include <cstdio>
#include <limits>
#include <string>

namespace sim {

void Problem::validate() const {
    validate_shape();
    // Sizes the counts can hold: B H heads at most 2^24 (each is walked or scheduled), and the
    // largest tensor counted, B H N^2 fp32 scores, under 2^60 bytes (int64 byte counts, with room
    // for the sums of several such tensors).
    constexpr int64_t kMaxHeads = int64_t{1} << 24;
    if (batch > kMaxHeads || heads > kMaxHeads || batch * heads > kMaxHeads)
        throw Error("batch B x heads H = " + std::to_string(batch) + " x " + std::to_string(heads) +
                    " is above the supported 16,777,216 heads in one problem; every head does the same work, so "
                    "simulate fewer (the bytes and time scale with B H)");
    if (static_cast<double>(batch * heads) * static_cast<double>(seq) * static_cast<double>(seq) * 4.0 >
        static_cast<double>(int64_t{1} << 60))
        throw Error("B H N^2 = " + std::to_string(batch * heads) + " x " + std::to_string(seq) + "^2 scores is above " +
                    "what flashsim counts (2^58 scores, 1 EiB of fp32); lower --batch, --heads or --seq");
    // The FLOPs (4 B H N^2 d a forward, 2.5x that a backward) and flash1's O traffic (up to 8 B H N^2 d
    // bytes with one key a block) must fit int64 with room for their sums: B H N^2 d at most 2^56.
    const double work = static_cast<double>(batch * heads) * static_cast<double>(seq) * static_cast<double>(seq) *
                        static_cast<double>(head_dim);
    if (work > static_cast<double>(int64_t{1} << 56)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", work);
        throw Error(std::string("B H N^2 d = ") + buf +
                    " is above what flashsim counts (2^56 = 7.2e16: its FLOPs, 4 B H N^2 d a pass, and its bytes must "
                    "fit 64-bit counts); lower --batch, --heads, --seq or --head-dim");
    }
}

void Problem::validate_shape() const {
    auto need_positive = [](int64_t v, const char* what, const char* flag) {
        if (v <= 0)
            throw Error(std::string(what) + " must be a positive integer, got " + std::to_string(v) + " (set it with " +
                        flag + ")");
    };
    need_positive(seq, "sequence length N", "--seq");
    need_positive(head_dim, "head dimension d", "--head-dim");
    need_positive(batch, "batch B", "--batch");
    need_positive(heads, "heads H", "--heads");
    if (seq > (int64_t{1} << 24))
        throw Error("sequence length N = " + std::to_string(seq) + " is above the supported 16,777,216");
    if (head_dim > 1024) throw Error("head dimension d = " + std::to_string(head_dim) + " is above the supported 1024");
    if (!(scale >= 0.0) || std::isinf(scale))
        throw Error("softmax scale must be a finite positive number (or 0 for 1/sqrt(d))");
    if (scale > std::numeric_limits<float>::max()) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3g", scale);
        throw Error(std::string("softmax scale ") + buf +
                    " is beyond float32's range (3.4e38), where the kernels compute the scores; use a smaller --scale");
    }
    if (window < 0) throw Error("--window must be 0 (off) or a positive number of keys");
    if (!(block_density >= 0.0 && block_density <= 1.0)) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%g", block_density);
        throw Error(std::string("block density ") + buf +
                    " is not a fraction of the key blocks; give a number from 0 to 1 (1: dense)");
    }
    if (mask_block_rows < 0 || mask_block_cols < 0)
        throw Error("the block mask's blocks must be positive sizes (or 0 x 0: the algorithm's tiles), got " +
                    std::to_string(mask_block_rows) + " x " + std::to_string(mask_block_cols));
    if (pad_left < 0 || pad_left > seq)
        throw Error("--pad-left must be between 0 and N = " + std::to_string(seq) + ", got " +
                    std::to_string(pad_left));
}

void Problem::require_mask_blocks() const {
    if (block_sparse() && (mask_block_rows <= 0 || mask_block_cols <= 0))
        throw Error(
            "a block-sparse problem needs its mask's block size; simulate() sets it to its tiles: use the "
            "Result's problem (or set mask_block_rows and mask_block_cols)");
}

}  // namespace sim
