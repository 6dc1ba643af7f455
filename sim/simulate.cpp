// sim/simulate.cpp — simulate(): one simulation as four steps, each a function of the one before:
//
//   plan     the block sizes (sim/blocks.cpp), the forward and backward tilings, the kernels to walk
//   walk     each head's kernels block by block (the bodies: sim/forward.cpp, sim/backward.cpp);
//            head 0 is counted, and with numerics every head computes on its data; once the trace
//            is full, identical blocks are walked once and their counts added again
//   L2       the counted kernels replayed through the L2 cache (sim/l2.cpp)
//   timing   the walked (or replayed) blocks scheduled on the SMs (sim/timing.cpp)
//
// [SECTIONS]  plan · rates · walk · L2 · timing · simulate()
#include "sim/simulate.hpp"

#include <unordered_map>

#include "sim/program.hpp"

namespace sim {

namespace {
using namespace detail;

// ---------------------------------------------------------------- [plan]
// What a simulation walks: the blocks of each pass, their tilings, and the kernels in launch order.
struct Plan {
    int64_t sram = 0;  // the budget M
    BlockChoice fwd_blocks;
    std::optional<BlockChoice> bwd_blocks;  // with a backward pass
    Tiling fwd{}, bwd{};                    // bwd == fwd without a backward pass
    bool want_fwd = true, want_bwd = false;
    bool numerics = false;
    std::vector<KernelDef> kernels;  // walked, in launch order (a backward pass with numerics walks the
                                     // forward too, uncounted, for the outputs the backward reads)
    size_t first_bwd = 0;            // index in `kernels` of the first backward kernel
    std::vector<KernelDef> counted;  // the kernels counted, in launch order
    size_t timeline_kernel = 0;      // index in `counted` of the kernel the timeline keeps (not a helper)
};

Tiling tiling(int64_t n, const BlockChoice& b) {
    return {n, b.block_rows, b.block_cols, ceil_div(n, b.block_rows), ceil_div(n, b.block_cols)};
}

// Throws sim::Error for an invalid problem, blocks that do not fit, or numerics too large to hold.
// FP8 is FlashAttention-3's forward (e4m3 Q, K, V, a bf16 O): the walk counts its bytes for flash2's
// forward only, and its numbers (scales, the quantized P) are sim/fp8_attention.hpp's.
void refuse_fp8_walk(const Problem& p, const Config& cfg) {
    if (p.dtype != DType::fp8) return;
    if (cfg.algo != Algo::flash2 || cfg.pass != Pass::forward)
        throw Error(
            "fp8 is modelled for the flash forward only (FlashAttention-3's FP8 kernel: e4m3 Q, K, V, a "
            "bf16 O); use --algo flash2 --pass forward, or --dtype bf16 for " +
            std::string(algo_name(cfg.algo)) + " " + std::string(pass_name(cfg.pass)));
    if (cfg.numerics == Numerics::on)
        throw Error(
            "the walk counts fp8's bytes but does not compute its numbers (they need scales); "
            "run `flashsim numerics --dtype fp8` for its error, or count without --numerics");
}

Plan make_plan(const Problem& p, const Machine& m, const Config& cfg, bool given_inputs) {
    p.validate();
    refuse_fp8_walk(p, cfg);
    Plan plan;
    plan.sram = cfg.sram_bytes > 0 ? cfg.sram_bytes : m.sram_bytes;
    if (cfg.sram_bytes < 0) throw Error("--sram must be a positive number of bytes");
    plan.fwd_blocks = choose_blocks(p, cfg.algo, plan.sram, cfg.block_rows, cfg.block_cols);
    plan.want_fwd = cfg.pass != Pass::backward;
    plan.want_bwd = cfg.pass != Pass::forward;
    plan.fwd = tiling(p.seq, plan.fwd_blocks);
    plan.bwd = plan.fwd;
    if (plan.want_bwd) {
        plan.bwd_blocks = choose_backward_blocks(p, cfg.algo, plan.sram, plan.fwd_blocks.block_rows,
                                                 plan.fwd_blocks.block_cols, cfg.bwd_block_rows, cfg.bwd_block_cols);
        plan.bwd = tiling(p.seq, *plan.bwd_blocks);
        if (cfg.dq_copies < 1)
            throw Error("dq_copies must be 1 or more (got " + std::to_string(cfg.dq_copies) +
                        "): the number of fp32 dQ accumulators the backward keeps");
        plan.bwd.dq_copies = cfg.algo == Algo::flash2 ? cfg.dq_copies : 1;
        if (cfg.dq_in_block_order && cfg.algo != Algo::flash2)
            throw Error("dQ in block order is flash2's backward's deterministic mode; " +
                        std::string(algo_name(cfg.algo)) + " does not accumulate dQ that way");
        plan.bwd.dq_in_block_order = cfg.dq_in_block_order;
    }
    plan.fwd.launch_per_kv_block = cfg.launch_per_kv_block && cfg.algo == Algo::flash1;
    if (cfg.grid_order == GridOrder::static_units && cfg.algo != Algo::flash2)
        throw Error(
            "the static grid order (a persistent grid walking units of query blocks in turn) is flash2's "
            "forward's, as flash2h runs it; " +
            std::string(algo_name(cfg.algo)) + " launches its blocks in order: use --grid launch");
    plan.fwd.static_units = cfg.grid_order == GridOrder::static_units;
    plan.fwd.lone_middles = cfg.lone_middles;

    const double work = static_cast<double>(p.heads_total()) * p.seq * p.seq * p.head_dim;
    plan.numerics =
        cfg.numerics == Numerics::on || (cfg.numerics == Numerics::automatic && p.dtype != DType::fp8 &&
                                         (given_inputs || work <= static_cast<double>(cfg.numerics_auto_limit)));
    if (given_inputs && cfg.numerics == Numerics::off) plan.numerics = false;
    // Computing the real numbers walks every head on the CPU: about a second per 2^30 of B H N^2 d.
    if (plan.numerics && work > static_cast<double>(int64_t{1} << 36))
        throw Error("computing the real output (numerics) at B H N^2 d = " + std::to_string(p.heads_total()) + " x " +
                    std::to_string(p.seq) + "^2 x " + std::to_string(p.head_dim) +
                    " would take minutes on the CPU (the limit is 2^36, e.g. N = 32768, d = 64, one head); lower "
                    "--seq, --batch or --heads, or count without numerics");
    const int64_t std_limit = plan.want_bwd ? 16384 : 32768;
    if (plan.numerics && cfg.algo == Algo::standard && p.seq > std_limit)
        throw Error("numerics for standard attention at N = " + std::to_string(p.seq) +
                    " would hold N x N matrices per head in memory; run without numerics or with N <= " +
                    std::to_string(std_limit));

    const Ctx proto(p, plan.fwd, plan.bwd, plan.sram);
    plan.kernels = forward_kernels(proto, cfg.algo);
    for (auto& k : plan.kernels) k.counted = plan.want_fwd;
    if (!plan.want_fwd && !plan.numerics) plan.kernels.clear();  // nothing to compute, nothing to count
    plan.first_bwd = plan.kernels.size();
    if (plan.want_bwd)
        for (auto& k : backward_kernels(proto, cfg.algo)) plan.kernels.push_back(std::move(k));
    for (const auto& k : plan.kernels)
        if (k.counted) plan.counted.push_back(k);
    while (plan.timeline_kernel + 1 < plan.counted.size() && plan.counted[plan.timeline_kernel].info.helper)
        ++plan.timeline_kernel;
    return plan;
}

// The result's description of the plan (the counts come later).
Result start_result(const Problem& p, const Machine& m, const Config& cfg, const Plan& plan) {
    Result res;
    res.problem = p;
    res.machine = m;
    res.algo = cfg.algo;
    res.pass = cfg.pass;
    res.block_rows = plan.fwd.br;
    res.block_cols = plan.fwd.bc;
    res.sram_bytes = plan.sram;
    res.sram_buffers = plan.fwd_blocks.buffers;
    res.block_note = plan.fwd_blocks.note;
    res.T_r = plan.fwd.tr;
    res.T_c = plan.fwd.tc;
    if (plan.bwd_blocks) {
        res.bwd_block_rows = plan.bwd.br;
        res.bwd_block_cols = plan.bwd.bc;
        res.bwd_T_r = plan.bwd.tr;
        res.bwd_T_c = plan.bwd.tc;
        res.bwd_sram_buffers = plan.bwd_blocks->buffers;
        res.bwd_block_note = plan.bwd_blocks->note;
    }
    res.numerics = plan.numerics;
    for (const auto& k : plan.counted) res.kernels.push_back(k.info);
    return res;
}

// ---------------------------------------------------------------- [rates]
// Seconds per byte and per FLOP at one block slot, as the walk times its steps.
struct Rates {
    SlotRates full;                     // one slot's share of the whole GPU
    std::vector<SlotRates> kernel;      // per counted kernel: the bandwidth share its resident blocks get
    std::vector<int64_t> kernel_slots;  // per counted kernel: SMs x its blocks per SM
    std::vector<int> kernel_per_sm;     // per counted kernel: its blocks per SM
    int64_t slots = 0;                  // SMs x blocks per SM (the machine's)
};

// fp8: the products at the preset's FP8 rate (the datasheet's ratio to bf16 applied to a measured rate).
SlotRates slot_rates(const Machine& m, Ceilings ceil, Timing& t, DType dtype) {
    const double slots = static_cast<double>(std::max(1, m.sm_count)) * std::max(1, m.blocks_per_sm);
    double bw = m.hbm_bandwidth, mm = m.matmul_flops;
    t.ceilings = "datasheet";
    if (ceil == Ceilings::measured) {
        if (m.measured_hbm_bandwidth > 0 && m.measured_matmul_flops > 0) {
            bw = m.measured_hbm_bandwidth;
            mm = m.measured_matmul_flops;
            t.ceilings = "measured";
            t.ceilings_note = "measured HBM bandwidth and matmul rate of the preset (" + m.name + ")";
        } else {
            t.ceilings_note = "preset " + m.name + " carries no measured ceilings; used the datasheet's";
        }
    } else {
        t.ceilings_note = "datasheet HBM bandwidth and matmul rate";
    }
    if (dtype == DType::fp8) {
        if (ceil == Ceilings::measured && t.ceilings == "measured" && m.measured_matmul_flops_fp8 > 0) {
            mm = m.measured_matmul_flops_fp8;
            t.ceilings_note += "; fp8 products at the measured FP8 wgmma rate";
        } else if (m.matmul_flops_fp8 > 0 && m.matmul_flops > 0) {
            mm *= m.matmul_flops_fp8 / m.matmul_flops;
            t.ceilings_note += "; fp8 products at the datasheet's FP8 rate over bf16's";
        } else {
            t.ceilings_note += "; " + m.name + " has no FP8 rate in its preset: fp8 products at the bf16 rate";
        }
    }
    t.hbm_bandwidth = bw;
    t.l2_bandwidth = m.l2_bandwidth > 0 ? m.l2_bandwidth : bw;
    t.matmul_flops = mm;
    t.scalar_flops = m.scalar_flops;
    auto inv = [&](double rate) { return rate > 0 ? slots / rate : 0.0; };
    return {inv(bw), inv(t.l2_bandwidth), inv(mm), inv(m.scalar_flops)};
}

// A kernel's blocks share the HBM and L2 bandwidth among those resident at once (all slots, or all
// its blocks when there are fewer); arithmetic rates are per SM and do not move between SMs.
SlotRates kernel_rates(const SlotRates& full, int64_t slots, int64_t kernel_blocks) {
    SlotRates r = full;
    const double share =
        static_cast<double>(std::max<int64_t>(1, std::min(slots, kernel_blocks))) / static_cast<double>(slots);
    r.s_per_hbm_byte *= share;
    r.s_per_l2_byte *= share;
    return r;
}

// Also fills the timing's ceilings (which rates, and why).
Rates rates_for(const Plan& plan, const Problem& p, const Machine& m, const Config& cfg, Timing& timing) {
    Rates r;
    r.full = slot_rates(m, cfg.ceilings, timing, p.dtype);
    r.slots = static_cast<int64_t>(std::max(1, m.sm_count)) * std::max(1, m.blocks_per_sm);
    if (cfg.fwd_blocks_per_sm < 0 || cfg.bwd_blocks_per_sm < 0)
        throw Error("blocks an SM must be 1 or more (0: the machine's); got " + std::to_string(cfg.fwd_blocks_per_sm) +
                    " forward, " + std::to_string(cfg.bwd_blocks_per_sm) + " backward");
    for (const auto& k : plan.counted) {
        // a kernel's own occupancy: its slots each get 1 / slots of the GPU's rates
        const int own = k.info.pass == 0 ? cfg.fwd_blocks_per_sm : cfg.bwd_blocks_per_sm;
        const int per_sm = own > 0 ? own : std::max(1, m.blocks_per_sm);
        const int64_t slots = static_cast<int64_t>(std::max(1, m.sm_count)) * per_sm;
        SlotRates full = r.full;
        const double f = static_cast<double>(slots) / static_cast<double>(r.slots);
        full.s_per_hbm_byte *= f;
        full.s_per_l2_byte *= f;
        full.s_per_matmul *= f;
        full.s_per_scalar *= f;
        r.kernel.push_back(kernel_rates(full, slots, k.info.blocks_per_head * p.heads_total()));
        r.kernel_slots.push_back(slots);
        r.kernel_per_sm.push_back(per_sm);
    }
    return r;
}

// ---------------------------------------------------------------- [walk]
// What walking leaves: the walker (head 0's trace, totals, block times, L2 lookups, SRAM peak), the
// totals at the end of the forward kernels, and the first blocks' steps for the timeline.
struct Walk {
    Walker w;
    Totals fwd_totals;
    bool fwd_taken = false;
    int tl_blocks = 0;                            // blocks of the first kernel whose steps are kept
    std::vector<std::vector<StepCost>> timeline;  // their steps
    Walk(const Plan& plan, const Config& cfg, const Rates& rates) {
        w.cap = cfg.event_cap;
        w.seg_cols = plan.fwd.bc;
        if (cfg.timing) w.rates = &rates.full;
        tl_blocks = static_cast<int>(std::min<int64_t>(std::max(0, cfg.timeline_sms), rates.slots));
        timeline.resize(static_cast<size_t>(tl_blocks));
    }
    void take_forward_totals() {
        if (fwd_taken) return;
        w.end_block();
        fwd_totals = w.totals;
        fwd_taken = true;
    }
};

// One walked block's counts, added again for each later block with the same key.
struct BlockMemo {
    Totals totals;
    int64_t events = 0, steps = 0, lookups = 0;
    BlockTime time;
};

// One kernel's blocks of one head. Identical blocks walk identical loops: once the trace is full
// (so it loses nothing), a block whose key was walked before adds that walk's counts again (as
// heads do).
void walk_blocks(const KernelDef& k, bool first_counted, const Config& cfg, Ctx& ctx, Walk& walk) {
    Walker& w = walk.w;
    std::unordered_map<int64_t, BlockMemo> memo;
    std::unordered_map<int64_t, SegmentMemo> seg_memo;
    w.seg_memo = (cfg.memo_blocks && !ctx.h) ? &seg_memo : nullptr;
    for (int64_t b = 0; b < k.info.blocks_per_head; ++b) {
        const bool keep = w.counting && first_counted && b < walk.tl_blocks && cfg.timing;
        const bool trace_full = static_cast<int64_t>(w.trace.events.size()) >= w.cap;
        const int64_t key =
            (cfg.memo_blocks && w.counting && !ctx.h && k.key && trace_full && !keep) ? k.key(ctx, b) : -1;
        if (key >= 0) {
            const auto it = memo.find(key);
            if (it != memo.end()) {
                const BlockMemo& seen = it->second;
                w.totals += seen.totals;
                w.trace.events_total += seen.events;
                w.trace.truncated = true;
                w.steps += seen.steps;
                w.l2_lookups += seen.lookups;
                if (!w.kernel_blocks.empty()) w.kernel_blocks.back().push_back(seen.time);
                continue;
            }
        }
        const Totals t0 = w.totals;
        const int64_t e0 = w.trace.events_total, s0 = w.steps, l0 = w.l2_lookups;
        w.begin_block();
        w.timer.keep = keep;
        w.timer.kept = keep ? &walk.timeline[static_cast<size_t>(b)] : nullptr;
        w.timer.keep_max = static_cast<size_t>(std::max(0, cfg.timeline_steps));
        k.body(ctx, b, w);
        w.end_block();
        if (key >= 0 && !w.kernel_blocks.empty() && !w.kernel_blocks.back().empty())
            memo[key] = {w.totals - t0, w.trace.events_total - e0, w.steps - s0, w.l2_lookups - l0,
                         w.kernel_blocks.back().back()};
    }
    w.seg_memo = nullptr;
}

// One head's kernels in launch order (ctx.h: that head's data, or null to count only); only head 0
// is counted.
void walk_head(const Plan& plan, const Config& cfg, const Rates& rates, Ctx& ctx, bool head0, Walk& walk) {
    Walker& w = walk.w;
    int32_t counted_index = 0;
    for (size_t ki = 0; ki < plan.kernels.size(); ++ki) {
        const KernelDef& k = plan.kernels[ki];
        if (head0 && ki == plan.first_bwd) walk.take_forward_totals();
        w.counting = head0 && k.counted;
        if (k.counted && cfg.timing) w.rates = &rates.kernel[static_cast<size_t>(counted_index)];
        w.phase = k.counted ? counted_index : -1;
        w.pass = k.info.pass;
        w.begin_kernel();
        ctx.launch = k.launch;
        walk_blocks(k, k.counted && counted_index == static_cast<int32_t>(plan.timeline_kernel), cfg, ctx, walk);
        w.end_block();
        w.timer.keep = false;
        if (k.counted) ++counted_index;
    }
    w.counting = head0;
    w.end_block();
    if (head0) walk.take_forward_totals();
}

// Counting only: heads walk identical loops, so head 0 alone is walked.
void walk_counts(const Plan& plan, const Problem& p, const Config& cfg, const Rates& rates, Walk& walk) {
    Ctx ctx(p, plan.fwd, plan.bwd, plan.sram);
    walk_head(plan, cfg, rates, ctx, true, walk);
}

void check_shape(const Problem& p, const TensorF& x, const char* name) {
    if (x.batch != p.batch || x.heads != p.heads || x.rows != p.seq || x.cols != p.head_dim)
        throw Error(std::string("input ") + name + " has shape (" + std::to_string(x.batch) + ", " +
                    std::to_string(x.heads) + ", " + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                    ") but the problem is (B, H, N, d) = (" + std::to_string(p.batch) + ", " + std::to_string(p.heads) +
                    ", " + std::to_string(p.seq) + ", " + std::to_string(p.head_dim) + ")");
}

// The buffers one head's kernels hand each other through HBM (numerics only).
void allocate_head_state(Ctx& ctx, Algo algo, bool want_bwd) {
    const int64_t n = ctx.p.seq, d = ctx.p.head_dim;
    if (algo == Algo::standard) {
        ctx.S = MatF::Zero(n, n);
        ctx.P = MatF::Zero(n, n);
        if (want_bwd) {
            ctx.dP = MatF::Zero(n, n);
            ctx.dS = MatF::Zero(n, n);
        }
    }
    if (want_bwd) {
        ctx.lse = VecF::Zero(n);
        ctx.D = VecF::Zero(n);
        ctx.dQacc = MatF::Zero(n, d);
    }
}

// With numerics: every head walked on its data (head 0 counted); the output, the gradients and the
// recorded row go into `res`.
void walk_numerics(const Plan& plan, const Problem& p, const Config& cfg, const Rates& rates, const Inputs* given,
                   Walk& walk, Result& res) {
    Inputs generated;
    if (!given) generated = generate_inputs(p);
    const Inputs& in = given ? *given : generated;
    check_shape(p, in.Q, "Q");
    check_shape(p, in.K, "K");
    check_shape(p, in.V, "V");
    TensorF dO_gen;
    const TensorF* dO = nullptr;
    if (plan.want_bwd) {
        if (in.dO.size() > 0) {
            check_shape(p, in.dO, "dO");
            dO = &in.dO;
        } else {
            dO_gen = generate_input(p, InputTensor::dO);
            dO = &dO_gen;
        }
    }
    TensorF out(p.batch, p.heads, p.seq, p.head_dim);
    TensorF dQ, dK, dV;
    if (plan.want_bwd) {
        dQ = TensorF(p.batch, p.heads, p.seq, p.head_dim);
        dK = dQ;
        dV = dQ;
    }
    SoftmaxRecord rec;
    const bool want_rec = plan.want_fwd && cfg.algo != Algo::standard && cfg.record_row >= 0 && cfg.record_row < p.seq;
    rec.row = cfg.record_row;
    const int64_t n = p.seq, d = p.head_dim;
    for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
        HeadData hd{MapF(in.Q.head(bh), n, d),
                    MapF(in.K.head(bh), n, d),
                    MapF(in.V.head(bh), n, d),
                    dO ? MapF(dO->head(bh), n, d) : MapF(nullptr, 0, d),
                    out.head(bh),
                    plan.want_bwd ? dQ.head(bh) : nullptr,
                    plan.want_bwd ? dK.head(bh) : nullptr,
                    plan.want_bwd ? dV.head(bh) : nullptr};
        Ctx ctx(p, plan.fwd, plan.bwd, plan.sram);
        ctx.h = &hd;
        ctx.rec = (want_rec && bh == 0) ? &rec : nullptr;
        allocate_head_state(ctx, cfg.algo, plan.want_bwd);
        walk_head(plan, cfg, rates, ctx, bh == 0, walk);
    }
    res.output = std::move(out);
    if (plan.want_bwd) {
        res.dQ = std::move(dQ);
        res.dK = std::move(dK);
        res.dV = std::move(dV);
    }
    if (want_rec) res.record = std::move(rec);
}

// Head 0's counts, scaled to all B*H heads.
void collect_counts(Walk& walk, Result& res) {
    const int64_t heads = res.problem.heads_total();
    Walker& w = walk.w;
    res.trace = std::move(w.trace);
    res.trace.steps_per_head = w.totals.steps;
    res.totals = w.totals.scaled(heads);
    res.forward_totals = walk.fwd_totals.scaled(heads);
    res.backward_totals = (w.totals - walk.fwd_totals).scaled(heads);
    res.sram_peak_bytes = w.peak;
}

// ---------------------------------------------------------------- [L2]
// The replayed blocks' times, for the timing step (empty when the L2 was not simulated).
struct L2Blocks {
    std::vector<std::vector<BlockTime>> kernel_blocks;
    int64_t heads = 0;  // heads replayed
};

// Fills res.l2; with timing, the replay's timeline replaces the walk's.
L2Blocks replay_through_l2(const Plan& plan, const Machine& m, const Config& cfg, const Rates& rates, Walk& walk,
                           Result& res) {
    const Problem& p = res.problem;
    const int64_t heads = p.heads_total();
    L2Stats& l2 = res.l2;
    l2.capacity_bytes = m.l2_walk_bytes();
    l2.concurrent_blocks = rates.slots;
    L2Blocks out;
    if (cfg.l2 == L2Mode::off) {
        l2.note = "L2 model off (--l2 off): HBM traffic is every tile load and store";
        return out;
    }
    if (m.l2_bytes <= 0) {
        l2.note = "preset " + m.name + " has no L2 capacity";
        return out;
    }
    if (plan.counted.empty()) return out;
    const int64_t per_head = std::max<int64_t>(1, walk.w.l2_lookups);
    int64_t walk_heads = heads;
    if (cfg.l2 == L2Mode::automatic && static_cast<double>(per_head) * heads > static_cast<double>(cfg.l2_budget))
        walk_heads = cfg.l2_budget / per_head;
    if (walk_heads <= 0) {
        l2.note = "L2 not simulated: one head alone needs " + std::to_string(per_head) +
                  " lookups, above the automatic budget of " + std::to_string(cfg.l2_budget) +
                  " (force it with --l2 on; it costs roughly 60 ns a lookup)";
        return out;
    }
    const Ctx proto(p, plan.fwd, plan.bwd, plan.sram);
    L2Replay rp = replay_l2(proto, plan.counted, m, walk_heads, heads, rates.kernel_slots, rates.kernel, walk.tl_blocks,
                            cfg.timeline_steps, plan.fwd.bc, plan.timeline_kernel);
    const double cost = rp.stats.seconds;
    const std::string policy = rp.stats.policy;
    l2 = std::move(rp.stats);
    l2.seconds = cost;
    l2.policy = policy;
    if (!l2.exact)
        l2.note = "sampled: walked the first " + std::to_string(walk_heads) + " of " + std::to_string(heads) +
                  " heads (automatic budget " + std::to_string(cfg.l2_budget) +
                  " lookups) and scaled; --l2 on walks them all";
    out.kernel_blocks = std::move(rp.kernel_blocks);
    out.heads = walk_heads;
    if (cfg.timing) walk.timeline = std::move(rp.timeline);
    return out;
}

// ---------------------------------------------------------------- [timing]
// The blocks' times (the L2 replay's when it ran, else the walk's) scheduled on the SMs.
void schedule_blocks(const Plan& plan, const Config& cfg, const Rates& rates, const Walk& walk,
                     const L2Blocks& l2_blocks, Result& res) {
    if (!cfg.timing || plan.counted.empty()) return;
    Timing& timing = res.timing;
    timing.computed = true;
    timing.with_l2 = res.l2.simulated;
    timing.timeline_kernel = plan.counted[plan.timeline_kernel].info.name;
    const int64_t heads = res.problem.heads_total();
    const double flops = static_cast<double>(res.totals.flops.total());
    if (res.l2.simulated)
        schedule(timing, res.kernels, l2_blocks.kernel_blocks, l2_blocks.heads, heads, rates.kernel_slots,
                 rates.kernel_per_sm[plan.timeline_kernel], walk.timeline, flops);
    else
        schedule(timing, res.kernels, walk.w.kernel_blocks, 1, heads, rates.kernel_slots,
                 rates.kernel_per_sm[plan.timeline_kernel], walk.timeline, flops);
}

// ---------------------------------------------------------------- [simulate()]
// A block mask with no blocks of its own takes the forward's tiles (the paper's block-sparse
// FlashAttention masks B_r x B_c tiles); the backward's tiles, the forward's halved, nest in them.
Problem with_mask_blocks(Problem p, const Tiling& fwd) {
    if (p.block_sparse() && p.mask_block_rows == 0 && p.mask_block_cols == 0) {
        p.mask_block_rows = fwd.br;
        p.mask_block_cols = fwd.bc;
    }
    p.require_mask_blocks();
    return p;
}

Result simulate_impl(const Problem& given_p, const Machine& m, const Config& cfg, const Inputs* given) {
    const Plan plan = make_plan(given_p, m, cfg, given != nullptr);
    const Problem p = with_mask_blocks(given_p, plan.fwd);
    Result res = start_result(p, m, cfg, plan);
    const Rates rates = rates_for(plan, p, m, cfg, res.timing);
    Walk walk(plan, cfg, rates);
    if (plan.numerics)
        walk_numerics(plan, p, cfg, rates, given, walk, res);
    else
        walk_counts(plan, p, cfg, rates, walk);
    collect_counts(walk, res);
    const L2Blocks l2_blocks = replay_through_l2(plan, m, cfg, rates, walk, res);
    schedule_blocks(plan, cfg, rates, walk, l2_blocks, res);
    return res;
}
}  // namespace

Result simulate(const Problem& p, const Machine& m, const Config& cfg) { return simulate_impl(p, m, cfg, nullptr); }
Result simulate(const Problem& p, const Machine& m, const Config& cfg, const Inputs& inputs) {
    return simulate_impl(p, m, cfg, &inputs);
}

}  // namespace sim
