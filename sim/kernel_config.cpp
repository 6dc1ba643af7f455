// sim/kernel_config.cpp — the bridge from a kernel's configuration to the simulator's (see the header).
#include "sim/kernel_config.hpp"

#include <algorithm>

namespace sim {

namespace {
bool has(std::string_view text, std::string_view words) { return text.find(words) != std::string_view::npos; }
}  // namespace

// The prose of rows recorded before the structured fields. flash2h's forward wrote "; persistent grid
// (a block an SM; <units>, in turn)" for the static order and "..., the next from a counter)" for the
// counter grid; since its middle blocks were paired, the causal units name "two heads' middle blocks".
// flash2h's backward wrote "dQ in block order" (deterministic) and "bulk reduction" (its bulk schedules).
LegacyTilesFields legacy_tiles_fields(std::string_view layout, bool backward) {
    LegacyTilesFields f;
    if (backward) {
        f.dq = has(layout, "dQ in block order") ? DqSchedule::block_order
               : has(layout, "bulk reduction")  ? DqSchedule::bulk_reduction
                                                : DqSchedule::atomics;
        return f;
    }
    if (has(layout, "persistent grid")) {
        if (has(layout, ", in turn)")) f.grid = KernelGrid::static_units;
        if (has(layout, "the next from a counter)")) f.grid = KernelGrid::counter;
    }
    f.lone_middles = f.grid != KernelGrid::tiles && !has(layout, "two heads' middle blocks");
    return f;
}

namespace {
// Blocks an SM the kernel's profile holds with the recorded tiles; 0 (the machine's) for a kernel
// the model has no profile of.
int blocks_per_sm(const std::string& kernel, Pass part, const Problem& p, const KernelTiles& t) {
    try {
        return with_tiles(kernel_profile(kernel, part, p.head_dim, p.causal), t.block_rows, t.block_cols).ctas_per_sm;
    } catch (const Error&) { return 0; }
}
}  // namespace

KernelRun kernel_run(const Problem& p, Pass pass, const std::string& variant, const KernelTiles& tiles,
                     const std::optional<KernelTiles>& tiles_forward) {
    KernelRun r;
    r.problem = p;
    r.pass = pass;
    const auto plus = variant.find('+');
    r.fwd_kernel = variant.substr(0, plus);
    r.bwd_kernel = plus == std::string::npos ? variant : variant.substr(plus + 1);
    r.tiles = tiles;
    r.tiles_forward = tiles_forward;
    return r;
}

Config sim_config(const KernelRun& run) {
    const bool step = run.pass == Pass::both, bwd = run.pass == Pass::backward;
    if (step && !run.tiles_forward) throw Error("a training step's row needs its forward's tiles (tiles_forward)");
    const KernelTiles& t = run.tiles;
    const KernelTiles& tf = step ? *run.tiles_forward : t;
    const auto a = parse_algo(t.algo);
    if (!a) throw Error("kernel '" + t.variant + "' names no simulator algorithm ('" + t.algo + "')");
    if (step && tf.algo != t.algo)
        throw Error("the step's forward (" + tf.algo + ") and backward (" + t.algo +
                    ") run different simulator algorithms; a step is simulated only when both run the same");
    Config c;
    c.algo = *a;
    c.pass = run.pass;
    c.launch_per_kv_block = tf.launch_per_kv_block || t.launch_per_kv_block;
    if (!bwd && c.algo == Algo::flash2) {
        c.grid_order = tf.grid == KernelGrid::tiles ? GridOrder::launch : GridOrder::static_units;
        c.lone_middles = c.grid_order == GridOrder::static_units && tf.lone_middles;
    }
    if (!bwd) c.fwd_blocks_per_sm = blocks_per_sm(run.fwd_kernel, Pass::forward, run.problem, tf);
    if (bwd || step) c.bwd_blocks_per_sm = blocks_per_sm(run.bwd_kernel, Pass::backward, run.problem, t);
    c.block_rows = tf.block_rows;
    c.block_cols = tf.block_cols;
    if (bwd || step) {
        c.bwd_block_rows = t.block_rows;
        c.bwd_block_cols = t.block_cols;
        c.dq_copies = t.dq_copies;
        c.dq_in_block_order = c.algo == Algo::flash2 && t.dq == DqSchedule::block_order;
    }
    c.sram_bytes = std::max(t.sram_bytes, tf.sram_bytes);
    c.numerics = Numerics::off;
    c.event_cap = 1;
    c.record_row = -1;
    c.timing = false;
    c.l2_budget = int64_t{1} << 22;  // the CLI's largest: a head of standard at N = 16384 still fits
    return c;
}

KernelProfile run_profile(const KernelRun& run, Pass part) {
    const bool fwd = part == Pass::forward;
    const KernelTiles& t = fwd && run.pass == Pass::both && run.tiles_forward ? *run.tiles_forward : run.tiles;
    KernelProfile k =
        kernel_profile(fwd ? run.fwd_kernel : run.bwd_kernel, part, run.problem.head_dim, run.problem.causal);
    if (!fwd && t.dq == DqSchedule::block_order) k.dq = DqAccumulation::ordered;
    if (fwd) {
        k = with_grid(k, t.grid == KernelGrid::tiles ? GridOrder::launch : GridOrder::static_units);
        k.lone_middles = t.grid != KernelGrid::tiles && t.lone_middles;
        k.tail_split = t.grid == KernelGrid::static_units && !run.problem.causal && t.tail_split;
    }
    return with_tiles(k, t.block_rows, t.block_cols);
}

std::optional<std::string> preset_for_device(std::string_view name) {
    if (has(name, "H200")) return "H200";
    // the SXM card reports "NVIDIA H100 80GB HBM3"; the PCIe and NVL cards (other clocks and memory) have no preset
    if (has(name, "H100") && !has(name, "PCIe") && !has(name, "NVL")) return "H100-SXM";
    if (has(name, "A100")) return has(name, "80GB") ? "A100-80GB" : "A100-40GB";
    if (has(name, "RTX 4090")) return "RTX4090";
    return std::nullopt;
}

}  // namespace sim
