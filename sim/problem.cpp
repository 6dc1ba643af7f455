#include "sim/problem.hpp"

#include <string>

namespace sim {

void Problem::validate() const {
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
    if (window < 0) throw Error("--window must be 0 (off) or a positive number of keys");
    if (pad_left < 0 || pad_left > seq)
        throw Error("--pad-left must be between 0 and N = " + std::to_string(seq) + ", got " +
                    std::to_string(pad_left));
}

}  // namespace sim
