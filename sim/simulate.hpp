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
//
// Each algorithm is a list of kernels (standard: five for the backward; flash2: one forward, three
// backward), each a grid of thread blocks per head, each block a sequence of steps. Besides the
// counts, a simulation gives (docs/simulator.md has the assumptions):
//   - an L2 view: the blocks replayed in launch order, as many at once as the GPU holds, through an
//     LRU cache of the preset's L2 capacity: HBM traffic with L2 and the hit rate (Result::l2);
//   - a timing model: each step's copy time vs its matmul and scalar arithmetic time, summed per
//     block (serial or overlapped), blocks scheduled over the SMs: predicted time (Result::timing).
#pragma once
#include <cstdint>
#include <array>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/enum_names.hpp"
#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/tensor.hpp"
#include "sim/trace.hpp"

namespace sim {

enum class Algo { standard, flash1, flash2 };
template <>
struct EnumNames<Algo> {
    static constexpr std::array<EnumName<Algo>, 3> table{
        {{Algo::standard, "standard"}, {Algo::flash1, "flash1"}, {Algo::flash2, "flash2"}}};
};
inline std::string_view algo_name(Algo a) { return name_of(a); }
inline std::optional<Algo> parse_algo(std::string_view s) { return parse_enum<Algo>(s); }

enum class Numerics { automatic, on, off };

// Which pass to simulate. backward assumes the forward's outputs are already in HBM (standard: P;
// flash2: O and LSE; flash1: O, l, m); both = forward then backward, totals summed.
enum class Pass { forward, backward, both };
template <>
struct EnumNames<Pass> {
    static constexpr std::array<EnumName<Pass>, 3> table{
        {{Pass::forward, "forward"}, {Pass::backward, "backward"}, {Pass::both, "both"}}};
};
inline std::string_view pass_name(Pass p) { return name_of(p); }
inline std::optional<Pass> parse_pass(std::string_view s) { return parse_enum<Pass>(s); }

// L2 model: automatic = on for presets with an L2 while the walk stays within Config::l2_budget
// lookups (beyond it: a sample of the heads, or off when one head alone exceeds it); on = always,
// every head; off = never.
enum class L2Mode { automatic, on, off };
// Which arithmetic and bandwidth ceilings the timing model uses.
enum class Ceilings { datasheet, measured };

// How flash2's forward hands its query blocks to the SMs (the L2 walk and the schedule follow it).
//   launch: one thread block a query block; a slot that frees takes the next block in launch order
//     (the hardware's block scheduler, or a persistent grid taking units from a counter);
//   static_units: a persistent grid of G = min(slots, units) blocks, block s taking units s, s + G,
//     s + 2G, ... in turn, however long each runs; a unit is one query block, or under the causal
//     mask a head's p-th heaviest block with its p-th lightest, and at odd T_r two heads' middle
//     blocks (Config::lone_middles: each head's alone). cuda/flash2h.cu's static order.
enum class GridOrder { launch, static_units };
template <>
struct EnumNames<GridOrder> {
    static constexpr std::array<EnumName<GridOrder>, 2> table{
        {{GridOrder::launch, "launch"}, {GridOrder::static_units, "static"}}};
};

struct Config {
    Algo algo = Algo::flash2;
    int64_t block_rows = 0;                   // B_r; 0: the algorithm's rule
    int64_t block_cols = 0;                   // B_c; 0: the algorithm's rule
    int64_t sram_bytes = 0;                   // SRAM budget M in bytes; 0: the machine's
    Numerics numerics = Numerics::automatic;  // automatic: on when B*H*N*N*d <= numerics_auto_limit
    int64_t numerics_auto_limit = int64_t{1} << 28;
    int64_t record_row = 0;                // query row (of head 0) whose online-softmax state is recorded; -1: none
    int64_t event_cap = int64_t{1} << 16;  // events kept in the trace (totals always complete)
    Pass pass = Pass::forward;
    int64_t bwd_block_rows = 0;  // backward B_r; 0: the forward's, halved until the backward's buffers fit
    int64_t bwd_block_cols = 0;  // backward B_c; same rule
    // flash2 backward: copies of the fp32 dQ accumulator (>= 1). A kernel whose warpgroups each add
    // their keys' part of dQ_i into a copy of their own (flash2h at d = 64) zeroes, adds into and
    // reads back every copy; the walk counts each at its own place.
    int64_t dq_copies = 1;
    // flash2 backward: the key blocks add into each dQ_i one after another, in block order (a
    // deterministic mode, as flash2h's FLASHSIM_FLASH2H_BWD=deterministic runs it): in the L2 walk a
    // block's step at query block i waits until the block before it has added its part there.
    bool dq_in_block_order = false;
    // flash1: walk it as cuda/flash1.cu launches it (after a launch that initialises O, l, m, one
    // kernel per K/V block j over every head's query blocks, then O converted from fp32), so that
    // the L2 model sees O_i, l_i, m_i leave and come back between launches; false: as FA1 and the
    // paper run Algorithm 1, one thread block per head walking the whole loop.
    bool launch_per_kv_block = false;
    // flash2 forward: how its query blocks go to the SMs (other algorithms and passes: launch order)
    GridOrder grid_order = GridOrder::launch;
    // the static order under the causal mask at odd T_r: each head's middle block a unit alone
    // (flash2h until 2026-12-05) instead of two heads' middle blocks as one unit
    bool lone_middles = false;
    // Thread blocks an SM holds at once in the forward's and the backward's kernels (a kernel's own
    // occupancy, as cuda/'s kernels record it: flash2's forward holds two); 0: the machine's
    // blocks_per_sm. The L2 walk runs that many blocks side by side, and the schedule places them.
    int fwd_blocks_per_sm = 0;
    int bwd_blocks_per_sm = 0;
    L2Mode l2 = L2Mode::automatic;
    int64_t l2_budget = int64_t{1} << 20;  // L2 lookups the automatic mode may spend (the CLI allows 2^22)
    Ceilings ceilings = Ceilings::datasheet;
    bool timing = true;       // run the timing model
    bool memo_blocks = true;  // once the trace is full, walk each distinct block once (identical blocks
                              // walk identical loops, as heads do) and add its counts for the others
    int timeline_sms = 4;     // per-SM timeline: this many SMs ...
    int timeline_steps = 24;  // ... and this many steps each
};

// One buffer the algorithm keeps in SRAM, with its size at the chosen block sizes.
struct SramBuffer {
    std::string name;  // e.g. "K_j (B_c x d, fp16)"
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
    std::vector<double> output;  // the row's final output (accumulator / l), length d
};

// A kernel of the simulated algorithm, in launch order.
struct KernelInfo {
    std::string name;             // e.g. "flash2 backward: dK, dV (K/V blocks outer), dQ accumulated in HBM"
    int pass = 0;                 // 0 forward, 1 backward
    int64_t blocks_per_head = 0;  // thread blocks per (batch, head)
    std::string grid;             // launch order, e.g. "(T_r, B*H), row block fastest"
    // A short pass before or after the pass's main kernel (flash2's D pre-pass, its dQ conversion):
    // the timeline shows the first kernel that is not one.
    bool helper = false;
    // Config::grid_order = static_units on a kernel whose block b of a head is query block b: a
    // persistent grid walking units in turn; unit_pairs: a unit is a heavy and a light block (causal);
    // lone_middles: as Config::lone_middles
    bool static_units = false;
    bool unit_pairs = false;
    bool lone_middles = false;
    // Config::dq_in_block_order on the backward's main kernel: its blocks of a head add into dQ_i in
    // turn (block b's step waits for block b - 1's at the same dQ_i)
    bool dq_in_order = false;
};

// HBM traffic as an L2 of the preset's capacity filters it (Config::l2).
struct L2Stats {
    bool simulated = false;
    bool exact = true;  // every head walked (false: a sample, scaled to B*H)
    int64_t heads_walked = 0;
    double capacity_bytes = 0;
    int64_t concurrent_blocks = 0;            // blocks resident at once: SMs x blocks per SM
    int64_t lookups = 0, hits = 0;            // tile (or row-segment) lookups by loads and stores
    int64_t load_bytes = 0, hit_bytes = 0;    // bytes loaded through L2, and those found there
    double hit_rate = 0;                      // hit_bytes / load_bytes
    std::array<Traffic, kTensorCount> hbm{};  // per tensor: misses (read) and write-backs (write), all heads
    // Of those writes, the dirty bytes still in L2 when the last kernel ends, written back by the walk's
    // final flush (all heads; a sampled walk's dirty share of its cache times the whole L2). A GPU's
    // counters read over the kernel's range do not see these: they reach DRAM after it.
    double end_dirty_bytes = 0;
    double seconds = 0;  // wall time the L2 walk cost
    std::string policy;  // the replacement and write policy, in words
    std::string note;    // why it was not simulated, or how it was sampled
    Traffic hbm_total() const {
        Traffic t;
        for (const auto& x : hbm) t += x;
        return t;
    }
};

// A stretch of one SM's time spent on one kind of work (for the app's timeline).
struct TimelineSegment {
    enum class Kind : uint8_t { copy, matmul, scalar };
    int32_t sm = 0;
    double start = 0, end = 0;  // seconds from the kernel's start
    Kind kind = Kind::copy;
    int32_t step = 0;         // step within the block
    bool overlapped = false;  // false: the serial schedule; true: the overlapped one
};
template <>
struct EnumNames<TimelineSegment::Kind> {
    static constexpr std::array<EnumName<TimelineSegment::Kind>, 3> table{{{TimelineSegment::Kind::copy, "copy"},
                                                                           {TimelineSegment::Kind::matmul, "matmul"},
                                                                           {TimelineSegment::Kind::scalar, "scalar"}}};
};
inline std::string_view segment_kind_name(TimelineSegment::Kind k) { return name_of(k); }

struct KernelTime {
    std::string name;
    int64_t blocks = 0;  // all heads
    double serial_s = 0, overlapped_s = 0;
};

// The timing model: per step, copy time at the level's bandwidth vs arithmetic time (matmul at the
// tensor rate, exp and the rest at the scalar rate); a block is its steps in sequence (serial) or
// with each copy hidden behind the previous step's arithmetic (overlapped); blocks are scheduled on
// SMs x blocks-per-SM slots in launch order, each slot getting an equal share of every rate.
struct Timing {
    bool computed = false;
    std::string ceilings;  // "datasheet" or "measured"
    std::string ceilings_note;
    double hbm_bandwidth = 0, l2_bandwidth = 0, matmul_flops = 0, scalar_flops = 0;  // whole GPU, as used
    int64_t slots = 0;
    bool with_l2 = false;  // copy times split into L2 hits and HBM misses
    double serial_s = 0, overlapped_s = 0;
    double predicted_ms = 0;      // the overlapped schedule
    double predicted_tflops = 0;  // all FLOPs / predicted time
    std::vector<KernelTime> kernels;
    std::vector<TimelineSegment> timeline;  // first SMs, first steps of timeline_kernel (bounded)
    std::string timeline_kernel;            // the first counted kernel that is not a helper
};

struct Result {
    Problem problem;
    Machine machine;
    Algo algo = Algo::flash2;
    int64_t block_rows = 0, block_cols = 0;  // as used
    int64_t T_r = 0, T_c = 0;                // tiles: T_r = ceil(N / B_r), T_c = ceil(N / B_c)
    int64_t sram_bytes = 0;                  // budget M
    std::vector<SramBuffer> sram_buffers;    // what the chosen blocks need
    int64_t sram_peak_bytes = 0;             // largest SRAM footprint any step used
    std::string block_note;                  // how the block sizes were chosen
    Trace trace;                             // events of head 0 (bounded)
    Totals totals;                           // all heads, all steps
    std::optional<TensorF> output;           // O (B, H, N, d), rounded to the dtype; numerics only
    std::optional<SoftmaxRecord> record;     // flash only, numerics only
    bool numerics = false;
    // Issue 3: backward pass, kernels, L2, timing.
    Pass pass = Pass::forward;
    int64_t bwd_block_rows = 0, bwd_block_cols = 0;  // backward blocks, as used (0 when forward only)
    int64_t bwd_T_r = 0, bwd_T_c = 0;                // the backward's tiles (0 when forward only)
    std::vector<SramBuffer> bwd_sram_buffers;
    std::string bwd_block_note;
    Totals forward_totals, backward_totals;  // totals = forward_totals + backward_totals (of the pass run)
    std::vector<KernelInfo> kernels;         // the kernels counted, in launch order
    std::optional<TensorF> dQ, dK, dV;       // gradients (B, H, N, d); numerics with a backward pass
    L2Stats l2;
    Timing timing;
};

// Throws sim::Error when the problem is invalid or the tiles do not fit the SRAM budget (the
// message lists each buffer's bytes against the budget).
Result simulate(const Problem& p, const Machine& m, const Config& cfg);
// Same, with caller-supplied inputs (e.g. from .npy files); shapes must match p.
Result simulate(const Problem& p, const Machine& m, const Config& cfg, const Inputs& inputs);

// The block sizes the algorithm's rule picks and the buffers they need (no simulation).
struct BlockChoice {
    int64_t block_rows = 0, block_cols = 0;
    std::vector<SramBuffer> buffers;
    int64_t bytes = 0;
    std::string note;
};
BlockChoice choose_blocks(const Problem& p, Algo a, int64_t sram_bytes, int64_t block_rows, int64_t block_cols);
// The backward's blocks: the requested ones (refused when they do not fit), else the forward's
// halved until the backward's buffers fit.
BlockChoice choose_backward_blocks(const Problem& p, Algo a, int64_t sram_bytes, int64_t fwd_rows, int64_t fwd_cols,
                                   int64_t block_rows, int64_t block_cols);
// Whether standard attention's row kernels hold whole rows of N float32 values a thread block
// (the forward's softmax: 1 float an element; the backward's dS from dP and P: 2) in `sram_bytes`;
// when not, they take one row a block in two passes over it, reading the N x N matrix twice.
bool standard_rows_fit(int64_t n, int64_t sram_bytes, int64_t floats_per_elem);

}  // namespace sim
