#include "viz/model.hpp"

#include <algorithm>
#include <chrono>
#include <cmath>
#include <string_view>
#include <utility>

namespace viz {

sim::Problem problem_of(const Params& p) {
    sim::Problem pr;
    pr.seq = p.seq;
    pr.head_dim = p.head_dim;
    pr.dtype = p.dtype;
    pr.causal = p.causal || p.window > 0;
    pr.window = p.window;
    return pr;
}

sim::Problem bench_shape(const sim::Problem& p) {
    sim::Problem b = p;
    b.batch = std::max<int64_t>(1, 16384 / std::max<int64_t>(1, p.seq));
    b.heads = std::max<int64_t>(1, 2048 / std::max<int64_t>(1, p.head_dim));
    // the simulator takes at most 2^24 heads in one problem (sim/problem.cpp): at tiny N and d
    // (N = 1, d = 1 would be 16,384 x 2,048) the batch shrinks to fit
    constexpr int64_t kMaxHeads = int64_t{1} << 24;
    if (b.batch * b.heads > kMaxHeads) b.batch = std::max<int64_t>(1, kMaxHeads / b.heads);
    return b;
}

std::string in_screen_words(std::string msg) {
    // longest first, so "--block-rows/--block-cols" is not taken apart by "--block-rows"
    static const std::pair<const char*, const char*> kWords[] = {
        {" (force it with --l2 on; it costs roughly 60 ns a lookup)", " (the app stays within that budget)"},
        {"; --l2 on walks them all", ""},
        {"L2 model off (--l2 off)", "L2 model off"},
        {"(set it with --seq)", "(the field N (tokens))"},
        {"(set it with --head-dim)", "(the field d (head dim))"},
        {"(set --sram BYTES)", "(the field SRAM KiB)"},
        {"--block-rows/--block-cols", "B_r / B_c"},
        {"(--block-rows, --block-cols)", "(the fields B_r and B_c)"},
        {"--bwd-block-rows/--bwd-block-cols", "backward B_r / B_c"},
        {"--block-rows", "B_r"},
        {"--block-cols", "B_c"},
        {"a larger --sram", "a larger SRAM KiB"},
        {"--sram", "SRAM KiB"},
        {"--seq", "N (tokens)"},
        {"--head-dim", "d (head dim)"},
    };
    for (const auto& [from, to] : kWords) {
        const std::string f = from;
        for (size_t at = msg.find(f); at != std::string::npos; at = msg.find(f, at + std::string_view(to).size()))
            msg.replace(at, f.size(), to);
    }
    return msg;
}

namespace {
std::string grouped(long long v) {  // 61042969 -> "61,042,969", as the screen writes counts
    const std::string digits = std::to_string(v < 0 ? -v : v);
    std::string s = v < 0 ? "-" : "";
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i > 0 && (digits.size() - i) % 3 == 0) s += ',';
        s += digits[i];
    }
    return s;
}

// validate() in the simulator's own words (its messages name the command line's flags)
std::string validate_cli_words(const Params& p) {
    try {
        const sim::Problem pr = problem_of(p);
        pr.validate();
        const sim::Machine& m = sim::find_machine(p.gpu);
        if (p.sram_bytes < 0) return "SRAM size must be positive (or 0 for the GPU's own)";
        const int64_t sram = p.sram_bytes > 0 ? p.sram_bytes : m.sram_bytes;
        for (sim::Algo a : kAlgos) {
            sim::BlockChoice bc;
            try {
                bc = sim::choose_blocks(pr, a, sram, p.block_rows, p.block_cols);
            } catch (const sim::Error& e) { return std::string(sim::algo_name(a)) + ": " + e.what(); }
            // The app simulates interactively: keep each walk to seconds (the CLI has no such limit).
            const double pairs = std::ceil(static_cast<double>(p.seq) / static_cast<double>(bc.block_rows)) *
                                 std::ceil(static_cast<double>(p.seq) / static_cast<double>(bc.block_cols));
            if (pairs > kMaxTilePairs)
                return std::string(sim::algo_name(a)) + ": N = " + grouped(p.seq) +
                       " with B_r = " + grouped(bc.block_rows) + ", B_c = " + grouped(bc.block_cols) + " is " +
                       grouped(static_cast<long long>(pairs)) + " tile pairs, more than the app walks interactively (" +
                       grouped(static_cast<long long>(kMaxTilePairs)) +
                       "); use larger blocks (B_r, B_c) or a smaller N; the command line (flashsim simulate) has no "
                       "such limit";
        }
    } catch (const sim::Error& e) { return e.what(); }
    return {};
}
}  // namespace

std::string validate(const Params& p) { return in_screen_words(validate_cli_words(p)); }

// ---------------------------------------------------------------- Timeline
double Timeline::duration(int64_t step) const {
    if (step < 0 || step >= steps_kept) return 0.0;
    return step_start[static_cast<size_t>(step) + 1] - step_start[static_cast<size_t>(step)];
}

int64_t Timeline::step_at(double t, double* frac) const {
    if (steps_kept == 0) {
        if (frac) *frac = 0;
        return 0;
    }
    // the first step that ends at or after t (a time on a boundary belongs to the step it completes)
    auto it = std::lower_bound(step_start.begin() + 1, step_start.begin() + steps_kept + 1, t);
    int64_t s = std::min<int64_t>(steps_kept - 1, static_cast<int64_t>(it - (step_start.begin() + 1)));
    if (frac) {
        const double d = duration(s);
        *frac = d > 0 ? std::clamp((t - step_start[static_cast<size_t>(s)]) / d, 0.0, 1.0) : 1.0;
    }
    return s;
}

Timeline make_timeline(const sim::Result& r) {
    Timeline tl;
    const auto& ev = r.trace.events;
    tl.steps_total = r.trace.steps_per_head;
    tl.truncated = r.trace.truncated;
    if (ev.empty()) {
        tl.step_first = {0};
        tl.step_start = {0.0};
        return tl;
    }
    int64_t kept = ev.back().step + 1;
    if (r.trace.truncated) kept = ev.back().step;  // the last kept step may be missing events
    tl.steps_kept = kept;
    tl.step_first.resize(static_cast<size_t>(kept) + 1);
    tl.step_start.resize(static_cast<size_t>(kept) + 1);
    const sim::Machine& m = r.machine;
    size_t e = 0;
    double t = 0;
    for (int64_t s = 0; s < kept; ++s) {
        tl.step_first[static_cast<size_t>(s)] = e;
        tl.step_start[static_cast<size_t>(s)] = t;
        double bytes = 0, mm = 0, scalar = 0;
        while (e < ev.size() && ev[e].step == s) {
            bytes += static_cast<double>(ev[e].bytes);
            mm += static_cast<double>(ev[e].flops.matmul);
            scalar += static_cast<double>(ev[e].flops.exp + ev[e].flops.other);
            ++e;
        }
        const double t_mem = m.hbm_bandwidth > 0 ? bytes / m.hbm_bandwidth : 0.0;
        const double t_math =
            (m.matmul_flops > 0 ? mm / m.matmul_flops : 0.0) + (m.scalar_flops > 0 ? scalar / m.scalar_flops : 0.0);
        t += std::max({t_mem, t_math, 1e-15});
    }
    tl.step_first[static_cast<size_t>(kept)] = e;
    tl.step_start[static_cast<size_t>(kept)] = t;
    tl.whole_time = t;
    if (r.trace.truncated) {
        // The rest of head 0 from the complete totals (all heads walk the same loops).
        const int64_t heads = std::max<int64_t>(1, r.problem.heads_total());
        const sim::Totals kept_totals = r.trace.totals_of(0, e);
        const sim::Totals& head0 = r.totals;  // all heads; divided below
        const double bytes = std::max(0.0, static_cast<double>(head0.hbm_total().total()) / heads -
                                               static_cast<double>(kept_totals.hbm_total().total()));
        const double mm = std::max(
            0.0, static_cast<double>(head0.flops.matmul) / heads - static_cast<double>(kept_totals.flops.matmul));
        const double scalar = std::max(0.0, static_cast<double>(head0.flops.exp + head0.flops.other) / heads -
                                                static_cast<double>(kept_totals.flops.exp + kept_totals.flops.other));
        const double t_mem = m.hbm_bandwidth > 0 ? bytes / m.hbm_bandwidth : 0.0;
        const double t_math =
            (m.matmul_flops > 0 ? mm / m.matmul_flops : 0.0) + (m.scalar_flops > 0 ? scalar / m.scalar_flops : 0.0);
        tl.whole_time = t + std::max(t_mem, t_math);
    }
    return tl;
}

// ---------------------------------------------------------------- Simulations
std::shared_ptr<RunSet> run_all(const Params& p, std::atomic<int>* done) {
    const auto t0 = std::chrono::steady_clock::now();
    auto rs = std::make_shared<RunSet>();
    rs->params = p;
    rs->problem = problem_of(p);
    rs->machine = sim::find_machine(p.gpu);
    rs->bench_problem = bench_shape(rs->problem);
    for (sim::Algo a : kAlgos) {
        sim::Config c;
        c.algo = a;
        c.block_rows = p.block_rows;
        c.block_cols = p.block_cols;
        c.sram_bytes = p.sram_bytes;
        c.numerics = sim::Numerics::off;  // the views need bytes and steps; the numbers live in the softmax view
        c.event_cap = kAppEventCap;
        c.record_row = -1;
        c.pass = p.pass;
        const int i = algo_index(a);
        rs->results[i] = sim::simulate(rs->problem, rs->machine, c);
        rs->timelines[i] = make_timeline(rs->results[i]);
        // the bench's shape, timing only (its counts are head 0's, walked once)
        sim::Config b = c;
        b.event_cap = 0;
        b.timeline_sms = 0;
        b.timeline_steps = 0;
        rs->bench_timing[i] = sim::simulate(rs->bench_problem, rs->machine, b).timing;
        if (done) ++*done;
    }
    rs->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return rs;
}

std::string Simulations::request(const Params& p) {
    std::string err = validate(p);
    if (!err.empty()) return err;
    job_.request(p);  // the running job cannot be interrupted; this one runs next
    return {};
}

}  // namespace viz
