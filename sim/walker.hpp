// sim/walker.hpp — internal to the simulator (not part of its public API): the walker that the
// tile loops report to, the per-step cost accounting of the timing model, and the access log the
// L2 model replays. Included through sim/program.hpp by the simulator's own .cpp files only.
//
// An algorithm is a list of kernels; a kernel is a grid of thread blocks per head; a block is a
// sequence of steps; a step is a few loads, stores and computes. The walker sees them in that order.
#pragma once
#include <Eigen/Core>
#include <algorithm>
#include <cstdint>
#include <limits>
#include <string>
#include <unordered_map>
#include <vector>

#include "sim/simulate.hpp"

namespace sim::detail {

constexpr int64_t kF32 = 4;  // accumulators, scores and statistics live in SRAM as float32

inline int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecF = Eigen::VectorXf;
using MapF = Eigen::Map<const MatF>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// e^(s - shift) element-wise, exactly 0 where s is -inf (a masked score). Eigen's vectorised exp
// clamps its argument, so exp(-inf) would come out as a denormal instead of 0.
inline Eigen::RowVectorXf masked_exp(const Eigen::Ref<const Eigen::RowVectorXf>& s, float shift) {
    return (s.array() == kNegInf).select(0.0f, (s.array() - shift).exp()).matrix();
}

// Tensors of N x N elements (standard attention's scratch): the L2 model keys them by row segments.
inline bool square_tensor(Tensor t) { return t == Tensor::S || t == Tensor::P || t == Tensor::dS || t == Tensor::dP; }

// Seconds per unit at one block slot (one SM's share of the GPU, divided by blocks per SM).
struct SlotRates {
    double s_per_hbm_byte = 0, s_per_l2_byte = 0, s_per_matmul = 0, s_per_scalar = 0;
};

// The cost of one step, in seconds at one slot.
struct StepCost {
    double copy = 0, matmul = 0, scalar = 0;
};

// One block's duration under the two schedules: serial (load, then compute) and overlapped (the
// next step's copy runs while this step computes: each step costs max(copy_next, compute)).
struct BlockTime {
    double serial = 0, overlapped = 0;
};

struct BlockTimer {
    BlockTime t;
    double prev_compute = 0;
    bool keep = false;  // record the steps (for the timeline)
    std::vector<StepCost>* kept = nullptr;
    size_t keep_max = 0;
    void step(const StepCost& c) {
        const double compute = c.matmul + c.scalar;
        t.serial += c.copy + compute;
        t.overlapped += std::max(c.copy, prev_compute);
        prev_compute = compute;
        if (keep && kept->size() < keep_max) kept->push_back(c);
    }
    BlockTime finish() {
        t.overlapped += prev_compute;
        prev_compute = 0;
        BlockTime r = t;
        t = {};
        return r;
    }
};

// One load or store as the L2 model sees it: which tensor and where (element offsets; N < 2^24).
// 20 bytes: the replay walks many blocks' logs in turn, so their size is its cost.
struct Access {
    int32_t r0, c0, rows, cols;
    Tensor tensor;
    bool store;
    uint8_t elem;  // bytes per element: bytes = rows * cols * elem
    int64_t bytes() const { return static_cast<int64_t>(rows) * cols * elem; }
};
struct StepRec {
    uint32_t first = 0, count = 0;
    int64_t matmul = 0, scalar = 0;
};
struct BlockLog {
    std::vector<Access> acc;
    std::vector<StepRec> steps;
    void clear() {
        acc.clear();
        steps.clear();
    }
};

// What one walked segment of a block (e.g. flash1's inner loop for one K/V block) added.
struct SegmentMemo {
    Totals totals;
    int64_t events = 0, steps = 0, lookups = 0;
    double serial = 0, overlapped = 0, prev_in = 0, prev_out = 0;
};

// Counts events (head 0), keeps the first `cap` in the trace, times steps, optionally logs accesses.
struct Walker {
    bool counting = true;
    int64_t cap = 0;
    Totals totals;
    Trace trace;
    int64_t steps = 0;  // steps begun so far
    int64_t step = 0;   // index of the current step
    int32_t phase = 0;  // kernel index
    int32_t pass = 0;   // 0 forward, 1 backward
    int64_t peak = 0;
    int64_t seg_cols = 0;    // width of an N x N row segment (standard's B_c) for the lookup count
    int64_t l2_lookups = 0;  // L2 lookups this head's accesses cause (segments for N x N tensors)

    // timing (counting walk only)
    const SlotRates* rates = nullptr;
    int64_t st_bytes = 0, st_mm = 0, st_sc = 0;
    bool st_open = false;
    BlockTimer timer;
    std::vector<std::vector<BlockTime>> kernel_blocks;  // per kernel: each block's time (head 0)

    // access log (L2 replay)
    BlockLog* log = nullptr;

    [[gnu::always_inline]] void event(EventKind k, Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols,
                                      int64_t bytes, Flops f) {
        if (log) {
            if (log->steps.empty()) log->steps.push_back({0, 0, 0, 0});
            StepRec& s = log->steps.back();
            s.matmul += f.matmul;
            s.scalar += f.exp + f.other;
            return;
        }
        if (!counting) return;
        if (k == EventKind::load)
            totals[t].read_bytes += bytes;
        else if (k == EventKind::store)
            totals[t].write_bytes += bytes;
        totals.flops += f;
        if (k == EventKind::rescale) totals.rescales += rows;
        st_bytes += bytes;
        st_mm += f.matmul;
        st_sc += f.exp + f.other;
        st_open = true;
        ++trace.events_total;
        if (static_cast<int64_t>(trace.events.size()) < cap) {
            Event e{k,
                    t,
                    static_cast<int32_t>(rt),
                    static_cast<int32_t>(ct),
                    static_cast<int32_t>(rows),
                    static_cast<int32_t>(cols),
                    bytes,
                    f,
                    step,
                    phase,
                    0};
            e.pass = static_cast<uint8_t>(pass);
            trace.events.push_back(e);
        } else {
            trace.truncated = true;
        }
    }
    // Loads and stores carry the element offsets (r0, c0) of the tile for the L2 model.
    [[gnu::always_inline]] void load(Tensor t, int64_t rt, int64_t ct, int64_t r0, int64_t c0, int64_t rows,
                                     int64_t cols, int64_t bytes) {
        move(false, t, rt, ct, r0, c0, rows, cols, bytes);
    }
    [[gnu::always_inline]] void store(Tensor t, int64_t rt, int64_t ct, int64_t r0, int64_t c0, int64_t rows,
                                      int64_t cols, int64_t bytes) {
        move(true, t, rt, ct, r0, c0, rows, cols, bytes);
    }
    [[gnu::always_inline]] void move(bool st, Tensor t, int64_t rt, int64_t ct, int64_t r0, int64_t c0, int64_t rows,
                                     int64_t cols, int64_t bytes) {
        if (log) {
            if (log->steps.empty()) log->steps.push_back({0, 0, 0, 0});
            log->acc.push_back({static_cast<int32_t>(r0), static_cast<int32_t>(c0), static_cast<int32_t>(rows),
                                static_cast<int32_t>(cols), t, st, static_cast<uint8_t>(bytes / (rows * cols))});
            ++log->steps.back().count;
            return;
        }
        if (counting) l2_lookups += square_tensor(t) ? rows * ceil_div(cols, std::max<int64_t>(1, seg_cols)) : 1;
        event(st ? EventKind::store : EventKind::load, t, rt, ct, rows, cols, bytes, {});
    }
    [[gnu::always_inline]] void compute(Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, Flops f) {
        event(EventKind::compute, t, rt, ct, rows, cols, 0, f);
    }
    [[gnu::always_inline]] void rescale(int64_t rt, int64_t rows, int64_t cols, Flops f) {
        event(EventKind::rescale, Tensor::O, rt, -1, rows, cols, 0, f);
    }
    [[gnu::always_inline]] void flush_step() {
        if (!st_open) return;
        if (rates)
            timer.step({static_cast<double>(st_bytes) * rates->s_per_hbm_byte,
                        static_cast<double>(st_mm) * rates->s_per_matmul,
                        static_cast<double>(st_sc) * rates->s_per_scalar});
        st_bytes = st_mm = st_sc = 0;
        st_open = false;
    }
    [[gnu::always_inline]] void begin_step() {
        if (log) {
            const uint32_t first = static_cast<uint32_t>(log->acc.size());
            if (!log->steps.empty() && log->steps.back().count == 0 && log->steps.back().matmul == 0 &&
                log->steps.back().scalar == 0)
                log->steps.back().first = first;  // reuse an empty step
            else
                log->steps.push_back({first, 0, 0, 0});
            return;
        }
        if (!counting) return;
        flush_step();
        step = steps++;
        ++totals.steps;
    }
    // Block and kernel boundaries (counting walk): close the timing of what came before.
    void begin_kernel() {
        if (!counting || log) return;
        end_block();
        kernel_blocks.emplace_back();
        block_open = false;
    }
    void begin_block() {
        if (!counting || log) return;
        end_block();
        block_open = true;
    }
    void end_block() {
        flush_step();
        if (block_open && !kernel_blocks.empty()) kernel_blocks.back().push_back(timer.finish());
        block_open = false;
    }
    // Segments of a block with equal keys (>= 0) walk identical loops. Once the trace is full, a
    // segment whose key was walked before (entered with the same overlap state) adds that walk's
    // counts and times again instead of walking (the same shortcut as for heads and blocks).
    std::unordered_map<int64_t, SegmentMemo>* seg_memo = nullptr;
    template <class F>
    void segment(int64_t key, F&& walk) {
        if (!seg_memo || key < 0 || log || !counting || (timer.keep && timer.kept->size() < timer.keep_max) ||
            static_cast<int64_t>(trace.events.size()) < cap) {
            walk();
            return;
        }
        flush_step();
        const auto it = seg_memo->find(key);
        if (it != seg_memo->end() && it->second.prev_in == timer.prev_compute) {
            const SegmentMemo& m = it->second;
            totals += m.totals;
            trace.events_total += m.events;
            trace.truncated = true;
            steps += m.steps;
            l2_lookups += m.lookups;
            timer.t.serial += m.serial;
            timer.t.overlapped += m.overlapped;
            timer.prev_compute = m.prev_out;
            return;
        }
        SegmentMemo m;
        const Totals t0 = totals;
        const int64_t e0 = trace.events_total, s0 = steps, l0 = l2_lookups;
        const double ser0 = timer.t.serial, ov0 = timer.t.overlapped;
        m.prev_in = timer.prev_compute;
        walk();
        flush_step();
        m.totals = totals - t0;
        m.events = trace.events_total - e0;
        m.steps = steps - s0;
        m.lookups = l2_lookups - l0;
        m.serial = timer.t.serial - ser0;
        m.overlapped = timer.t.overlapped - ov0;
        m.prev_out = timer.prev_compute;
        (*seg_memo)[key] = m;
    }
    void in_sram(int64_t bytes) {
        if (counting && !log) peak = std::max(peak, bytes);
    }
    bool block_open = false;
};

struct Tiling {
    int64_t n, br, bc, tr, tc;
    // backward (flash2): copies of the fp32 dQ accumulator a kernel keeps, each added into by its
    // own part of a key block and summed by the post pass (Config::dq_copies)
    int64_t dq_copies = 1;
    bool dq_in_block_order = false;  // Config::dq_in_block_order
    // flash1 forward: one kernel per K/V block (Config::launch_per_kv_block)
    bool launch_per_kv_block = false;
    // flash2 forward: a persistent grid walking units in turn (Config::grid_order = static_units)
    bool static_units = false;
    bool lone_middles = false;  // Config::lone_middles
    int64_t r0(int64_t i) const { return i * br; }
    int64_t rows(int64_t i) const { return std::min(n, (i + 1) * br) - i * br; }
    int64_t c0(int64_t j) const { return j * bc; }
    int64_t cols(int64_t j) const { return std::min(n, (j + 1) * bc) - j * bc; }
};

}  // namespace sim::detail
