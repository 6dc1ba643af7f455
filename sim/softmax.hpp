// sim/softmax.hpp — the online (streamed) softmax of one row, block by block, beside the plain
// softmax over the whole row. This is the seeds' worked example: scores 1.4, 3.9, 0.7, 2.2 | 4.6,
// 1.1, 3.1, 0.3 in blocks of four.
#pragma once
#include <cstdint>
#include <optional>
#include <vector>

#include "sim/simulate.hpp"

namespace sim {

enum class Precision { fp32, fp64 };

struct StreamedSoftmax {
    SoftmaxRecord record;          // per-block state (accumulator = the output vector so far)
    std::vector<double> plain;     // plain softmax (or P V with values): max and sum over the whole row
    std::vector<double> streamed;  // the same from the streamed state: accumulator / running sum
    double max_abs_diff = 0;       // max |plain - streamed|
    int64_t max_ulp = 0;           // in the chosen precision
    Precision precision = Precision::fp32;
    bool with_values = false;  // false: outputs are the probabilities themselves
};

// `values`: one row of length dv per score (V, n x dv); empty: the outputs are the probabilities
// (the accumulator then carries one-hot rows). Throws sim::Error on empty scores, block < 1,
// non-finite scores or a values shape that does not match.
StreamedSoftmax stream_softmax(const std::vector<double>& scores, int64_t block,
                               const std::vector<std::vector<double>>& values, Precision precision);

}  // namespace sim
