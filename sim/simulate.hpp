// sim/simulate.hpp — run one attention algorithm tile by tile over the memory hierarchy.
//
//   sim::Problem + sim::Machine + sim::Config ──► sim::simulate(...) ──► sim::Result
//
// Every algorithm is an explicit loop over tiles. Each trip through the loop emits the events it
// causes (load, store, compute, rescale) and adds their bytes and FLOPs to the totals: traffic is
// counted by walking the loops, never from a formula. With numerics on, the same loops also do the
// real arithmetic on the tiles (Eigen, float32 accumulate), so the output is computed the way it
// is tiled. Heads are independent and walk identical loops: the walker walks one head's loops and
// multiplies by B*H (numerics, when on, run every head).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/tensor.hpp"
#include "sim/trace.hpp"

namespace sim {

enum class Algo { standard, flash1, flash2 };
std::string_view algo_name(Algo a);
std::optional<Algo> parse_algo(std::string_view s);

enum class Numerics { automatic, on, off };

struct Config {
    Algo algo = Algo::flash2;
    int64_t block_rows = 0;   // B_r; 0: the algorithm's rule
    int64_t block_cols = 0;   // B_c; 0: the algorithm's rule
    int64_t sram_bytes = 0;   // SRAM budget M in bytes; 0: the machine's
    Numerics numerics = Numerics::automatic;  // automatic: on when B*H*N*N*d <= numerics_auto_limit
    int64_t numerics_auto_limit = int64_t{1} << 28;
    int64_t record_row = 0;   // query row (of head 0) whose online-softmax state is recorded; -1: none
    int64_t event_cap = int64_t{1} << 16;  // events kept in the trace (totals always complete)
};

// One buffer the algorithm keeps in SRAM, with its size at the chosen block sizes.
struct SramBuffer {
    std::string name;   // e.g. "K_j (B_c x d, fp16)"
    int64_t bytes = 0;
};

// The state of one query row's online softmax at one key block (what the app animates).
struct SoftmaxBlockState {
    int64_t block = 0;                 // key block index j
    int64_t first_key = 0;             // column of the block's first key
    std::vector<double> scores;        // the row's scaled scores in this block (masked: -inf)
    double block_max = 0;              // max of this block's scores
    double running_max_before = 0;     // m before the block (-inf at the first)
    double running_max_after = 0;      // m after
    double rescale = 1;                // e^(m_before - m_after), applied to the carried sum and output
    double running_sum_before = 0;     // l before
    double running_sum_after = 0;      // l after (= rescale * l_before + sum e^(s - m_after))
    std::vector<double> acc_before;    // output accumulator (length d) before this block
    std::vector<double> acc_rescaled;  // after multiplying by `rescale`
    std::vector<double> acc_after;     // after adding this block's P V contribution
};

struct SoftmaxRecord {
    int64_t row = 0;
    std::vector<SoftmaxBlockState> blocks;
    std::vector<double> output;        // the row's final output (accumulator / l), length d
};

struct Result {
    Problem problem;
    Machine machine;
    Algo algo = Algo::flash2;
    int64_t block_rows = 0, block_cols = 0;    // as used
    int64_t tiles_rows = 0, tiles_cols = 0;    // T_r = ceil(N / B_r), T_c = ceil(N / B_c)
    int64_t sram_bytes = 0;                    // budget M
    std::vector<SramBuffer> sram_buffers;      // what the chosen blocks need
    int64_t sram_peak_bytes = 0;               // largest SRAM footprint any step used
    std::string block_note;                    // how the block sizes were chosen
    Trace trace;                               // events of head 0 (bounded)
    Totals totals;                             // all heads, all steps
    std::optional<TensorF> output;             // O (B, H, N, d), rounded to the dtype; numerics only
    std::optional<SoftmaxRecord> record;       // flash only, numerics only
    bool numerics = false;
};

// Throws sim::Error when the problem is invalid or the tiles do not fit the SRAM budget (the
// message lists each buffer's bytes against the budget).
Result simulate(const Problem& p, const Machine& m, const Config& c);
// Same, with caller-supplied inputs (e.g. from .npy files); shapes must match p.
Result simulate(const Problem& p, const Machine& m, const Config& c, const Inputs& inputs);

// The block sizes the algorithm's rule picks and the buffers they need (no simulation).
struct BlockChoice {
    int64_t block_rows = 0, block_cols = 0;
    std::vector<SramBuffer> buffers;
    int64_t bytes = 0;
    std::string note;
};
BlockChoice choose_blocks(const Problem& p, Algo a, int64_t sram_bytes, int64_t block_rows, int64_t block_cols);

}  // namespace sim
