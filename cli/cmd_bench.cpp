// flashsim bench — time the CUDA kernels (cuda/), check them, and set their DRAM traffic beside
// the simulator's count for the same tiling.
//
//   flashsim bench [--variant standard,flash1,flash2] [--seq 1024,4096] [--head-dim 64,128]
//                  [--batch B --heads H] [--dtype bf16|fp16] [--causal] [--pass forward,backward]
//                  [--repeats 20] [--warmup 3] [--json FILE] [--no-check] [--nvtx]
//
// Per configuration: median/min/max ms over the timed repeats, TFLOP/s (4 B H N^2 d forward, half
// when causal, x2.5 backward), DRAM bytes (measured by ncu from scripts/gpu_session.sh and merged
// into the JSON there; null here), the simulator's HBM bytes for the kernel's own (B_r, B_c, SRAM)
// (sim::simulate, numerics off, H200 preset; null for backward until the simulator has it), and
// the errors against the float64 reference (small problems) and against `standard`.
// Default shape when --batch/--heads are omitted: B*N = 16384 tokens, H*d = 2048.
// Every row carries peak_bytes: the device memory the pass holds, from the harness's own
// allocations (one set of inputs and outputs plus the variant's workspace; cuda/api.hpp).
//
//   flashsim bench --decode [--cache 32768,131072 --batch B] [--q-heads 32 --kv-heads 8] [-d 128]
//                  [--splits 0] [--trace 10]
// decodes one new token against a KV cache (cuda/decode.cu): without --cache the four rows
// (B, L) = (1, 32768), (1, 131072), (8, 32768), (64, 8192); rows have "pass": "decode", kv_len,
// q_heads, kv_heads, splits, kv_bytes (K and V read), tbps (kv_bytes / median time) and the
// simulator's prediction (sim::simulate_decode with the same splits). --trace K adds K traced
// calls a row and its "trace": where the call's time goes, from the blocks' own timer stamps
// (fcuda::DecodeTrace; python3 tools/results/table.py --decode-trace prints it).
//
//   flashsim bench --counters-probe [--json F]
// runs known work after the bench's L2 flush under the in-process DRAM counters (a warp, reads of
// 64, 192 and 576 MiB, a 64 MiB write) and prints what they counted.
//
//   flashsim bench --launch-probe [--repeats R] [--json F]
// times what a short call holds besides its work: an empty kernel with and without the most shared
// memory, a copy and the decode kernel at B = 1, L = 32k, each after the decode rows' L2 flush, and
// after that flush plus a kernel that leaves the SMs set to the most shared memory or to the default.
//
//   flashsim bench --fit [--variant standard,flash2,flash2h] [--batch 1 --heads 16 -d 128]
// finds the longest N (grid of 1/8 of a power of two) whose training step (forward + backward)
// the GPU can allocate, by allocation only (no kernel runs), beside the simulator's answer for
// the free memory cudaMemGetInfo reports (sim::longest_fit).
//   flashsim bench --ring P [--ring-layout balanced|contiguous] [--ring-transport emulated|nccl]
//                  [--variant flash2h] [--seq 8192 -d 128 --causal] [--pass forward|backward]
// runs ring attention with the kernels (cuda/ring.cu): P devices emulated on this GPU, or GPUs
// 0..P-1 over NCCL; per row the ring's forward (and backward) time, its outputs against one
// kernel call on the whole problem and against float64 (small problems), the same kernel on the
// whole problem and on one device's share (N/P tokens) timed in the same call, and the
// simulator's ring (sim::simulate_ring with the kernel's model) for P GPUs.
//
// Without CUDA in the build or without a visible device it says so in one line and exits 2.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cstdio>
#include <ctime>
#include <filesystem>
#include <fstream>
#include <optional>
#include <iostream>
#include <tuple>
#include <unistd.h>
#include <vector>

#include "cli/ceilings.hpp"
#include "cli/commands.hpp"
#include "sim/footprint.hpp"
#include "sim/kernel_model.hpp"
#include "sim/ring.hpp"
#if FLASHSIM_HAVE_CUDA
#include "cuda/api.hpp"
#endif

namespace {

struct BenchArgs {
    std::vector<std::string> variants;
    std::vector<int64_t> seqs{1024, 2048, 4096, 8192, 16384};
    std::vector<int64_t> head_dims{64, 128};
    std::vector<std::string> passes{"forward"};
    int64_t batch = 0, heads = 0;  // 0: B*N = 16384, H*d = 2048
    std::string dtype = "bf16", json, gpu = "H200";
    bool causal = false, no_check = false, nvtx = false, ceilings = false, counters_probe = false, launch_probe = false;
    int repeats = 20, warmup = 3;
    uint64_t seed = 42;
    // --decode: one new token against a KV cache; --fit: the longest N a step fits
    bool decode = false, fit = false;
    // --study: the numerics study over random shapes; --scale: past 2^31 elements and at 1M tokens
    int study = 0;
    double time_limit = 0;  // --study: stop starting shapes after this many seconds (0: none)
    int slice = 0, slices = 1;  // --study-slice K/M: only the shapes whose index is K modulo M
    bool scale = false;
    std::vector<int64_t> caches;  // empty: the four preset rows
    int64_t q_heads = 32, kv_heads = 8, splits = 0;
    int trace = 0;  // --decode: traced calls a row
    bool dims_given = false;
    // --ring P: ring attention with the kernels
    int64_t ring = 0;
    std::string ring_layout = "balanced", ring_transport = "emulated";
};

using nlohmann::json;

// The simulator's view of one bench row: HBM bytes (no L2) and HBM bytes through its L2 model,
// for the kernel's own tiling (row["tiles"]), and their ratios to the DRAM bytes ncu measured.
// Pure CPU: also run by `flashsim bench --resimulate FILE` on recorded results.
// The problem a recorded bench row describes.
sim::Problem problem_of(const json& row) {
    sim::Problem p;
    p.seq = row["seq"];
    p.head_dim = row["head_dim"];
    p.batch = row["batch"];
    p.heads = row["heads"];
    p.dtype = *sim::parse_dtype(row["dtype"].get<std::string>());
    p.causal = row["causal"];
    return p;
}

// A row's forward and backward kernels: "A+B" -> {A, B}; "A" -> {A, A}.
std::pair<std::string, std::string> kernels_of(const json& row) {
    const std::string variant = row["variant"];
    const auto plus = variant.find('+');
    return {variant.substr(0, plus), plus == std::string::npos ? variant : variant.substr(plus + 1)};
}

// A row's tiles.layout, in words (empty when not recorded).
std::string layout_of(const json& tiles) {
    return tiles.contains("layout") && tiles["layout"].is_string() ? tiles["layout"].get<std::string>() : "";
}
// How a row's forward kernel handed its query blocks to the SMs: tiles.grid ("static": a persistent
// grid taking units in turn; "counter": the same units, each block taking the next from a counter,
// which the walk takes as the static order, since both start the units in their order and only the
// slot that takes a unit differs; "tiles": in launch order). Rows recorded before that field say it in
// their layout, which names a persistent grid's units taken "in turn" or "the next from a counter".
sim::GridOrder grid_of(const json& tiles) {
    if (tiles.contains("grid") && tiles["grid"].is_string())
        return tiles["grid"] == "static" || tiles["grid"] == "counter" ? sim::GridOrder::static_units
                                                                       : sim::GridOrder::launch;
    const std::string layout = layout_of(tiles);
    return layout.find("persistent grid") != std::string::npos &&
                   (layout.find(", in turn)") != std::string::npos ||
                    layout.find("the next from a counter)") != std::string::npos)
               ? sim::GridOrder::static_units
               : sim::GridOrder::launch;
}

// Whether a row's static order left each head's middle block a unit alone at odd T_r: flash2h's
// forward did until 2026-12-05; since then its causal layout names "two heads' middle blocks".
bool lone_middles_of(const json& tiles) {
    return grid_of(tiles) == sim::GridOrder::static_units &&
           layout_of(tiles).find("two heads' middle blocks") == std::string::npos;
}

// The writes a counted range sees that belong to no work: the median over the counters probes whose
// kernel reads 192 MiB or more and writes nothing (docs/simulator.md, "The walk as the counters see
// it"), read from the probe file beside a results file (h200/bench.json -> h200/counters_probe.json).
// Without a usable probe, no residue and `why` says what is missing.
// The probes evict all of the residue once a range moves this many bytes (192 MiB read: 27.7 MiB of it;
// 64 MiB: 19.4): the residue is taken from such probes, and only passes that move as much get the view.
constexpr double kResidueEvictedBytes = 192.0 * (1 << 20);
struct Residue {
    std::optional<double> bytes;
    std::string why;
};
Residue counters_residue(const std::string& results_path) {
    namespace fs = std::filesystem;
    const fs::path rp(results_path);
    // a card's folder holds its probe beside its bench file (results/h200/counters_probe.json); a file
    // named for its card (h200.json) has the probe named for the card beside it (h200_counters_probe.json)
    std::string stem = rp.filename().string();
    stem = stem.substr(0, stem.find_first_of("._"));
    const fs::path probe = rp.parent_path() / (stem == "bench" ? std::string("counters_probe.json") : stem + "_counters_probe.json");
    const std::string tail = ": rows get no counters' view of the walk";
    std::ifstream in(probe);
    if (!in)
        return {std::nullopt, "no counters probe beside " + results_path + " (" + probe.string() +
                                  ", from `flashsim bench --counters-probe --json FILE` on the GPU)" + tail};
    json doc;
    try {
        doc = json::parse(in);
    } catch (const std::exception& e) {
        return {std::nullopt, "cannot parse " + probe.string() + " as JSON (" + e.what() + ")" + tail};
    }
    std::vector<double> w;
    if (doc.is_object() && doc.contains("counters_probe") && doc["counters_probe"].is_array())
        for (const auto& p : doc["counters_probe"])
            if (p.is_object() && p.value("work_write_bytes", -1.0) == 0 &&
                p.value("work_read_bytes", 0.0) >= kResidueEvictedBytes && p.contains("dram_write_bytes") &&
                p["dram_write_bytes"].is_number())
                w.push_back(p["dram_write_bytes"].get<double>());
    if (w.empty())
        return {std::nullopt, probe.string() +
                                  " has no probe that reads 192 MiB or more and writes nothing (a \"counters_probe\" "
                                  "list as `flashsim bench --counters-probe --json` writes it)" +
                                  tail};
    std::sort(w.begin(), w.end());
    return {w[w.size() / 2], ""};
}

void simulate_row(json& row, const sim::Machine& machine, std::optional<double> residue = std::nullopt) {
    for (const char* k : {"sim_hbm_read_bytes", "sim_hbm_write_bytes", "sim_l2_hbm_read_bytes",
                          "sim_l2_hbm_write_bytes", "sim_l2_hit_rate", "sim_l2_end_dirty_bytes",
                          "sim_l2_counters_view_bytes", "counters_residue_bytes", "dram_over_counters_view", "sim_note",
                          "sim_block_rows", "sim_block_cols", "dram_over_sim", "dram_over_sim_l2"})
        row.erase(k);
    row["sim_hbm_read_bytes"] = nullptr;
    row["sim_hbm_write_bytes"] = nullptr;
    if (!row.contains("tiles")) return;
    const sim::Problem p = problem_of(row);
    const bool bwd = row["pass"] == "backward";
    const bool step = row["pass"] == "step";  // forward then backward: tiles_forward, then tiles
    const auto& t = row["tiles"];
    if (step && !row.contains("tiles_forward")) return;
    const auto& tf = step ? row["tiles_forward"] : t;
    sim::Config c;
    // the kernel's own algorithm (tiles.algo; rows recorded before it existed name it as their variant)
    const std::string algo = t.contains("algo") ? t["algo"].get<std::string>() : row["variant"].get<std::string>();
    const auto a = sim::parse_algo(algo);
    if (!a)
        throw std::runtime_error("row of variant '" + row["variant"].get<std::string>() +
                                 "' names no simulator algorithm ('" + algo + "')");
    c.algo = *a;
    if (step && tf.contains("algo") && tf["algo"] != algo) {
        row["sim_note"] = "the step's forward and backward run different simulator algorithms; not simulated";
        return;
    }
    c.pass = step ? sim::Pass::both : bwd ? sim::Pass::backward : sim::Pass::forward;
    c.launch_per_kv_block = c.algo == sim::Algo::flash1;  // cuda/flash1.cu: one launch per K/V block
    if (!bwd && c.algo == sim::Algo::flash2) {
        c.grid_order = grid_of(tf);
        c.lone_middles = lone_middles_of(tf);
    }
    // each pass's kernel holds as many blocks an SM as its profile says for the row's tiles (flash2's
    // forward two); the L2 walk runs that many side by side
    {
        const auto [fk, bk] = kernels_of(row);
        try {
            if (!bwd)
                c.fwd_blocks_per_sm = sim::with_tiles(sim::kernel_profile(fk, sim::Pass::forward, p.head_dim, p.causal),
                                                      tf.value("block_rows", 0), tf.value("block_cols", 0))
                                          .ctas_per_sm;
            if (bwd || step)
                c.bwd_blocks_per_sm =
                    sim::with_tiles(sim::kernel_profile(bk, sim::Pass::backward, p.head_dim, p.causal),
                                    t.value("block_rows", 0), t.value("block_cols", 0))
                        .ctas_per_sm;
        } catch (const sim::Error&) {  // a kernel without a profile: the machine's blocks an SM
        }
    }
    c.block_rows = tf["block_rows"];
    c.block_cols = tf["block_cols"];
    if (bwd || step) {
        c.bwd_block_rows = t["block_rows"];
        c.bwd_block_cols = t["block_cols"];
        c.dq_copies = t.value("dq_copies", 1);
        // the deterministic mode adds dQ in block order: its key blocks wait for each other
        c.dq_in_block_order =
            c.algo == sim::Algo::flash2 && layout_of(t).find("dQ in block order") != std::string::npos;
    }
    c.sram_bytes = std::max(t["sram_bytes"].get<int64_t>(), tf["sram_bytes"].get<int64_t>());
    c.numerics = sim::Numerics::off;
    c.event_cap = 1;
    c.record_row = -1;
    c.timing = false;
    c.l2_budget = int64_t{1} << 22;  // the CLI's largest: a head of standard at N = 16384 still fits
    std::string note;
    std::optional<sim::Result> r;
    try {
        r = sim::simulate(p, machine, c);
    } catch (const std::exception& e) {  // the simulator's SRAM model may count more than the kernel keeps
        note = std::string("with the kernel's SRAM bytes the simulator refused (") + e.what() +
               "); simulated with the machine's SRAM budget instead";
        c.sram_bytes = 0;
        try {
            r = sim::simulate(p, machine, c);
        } catch (const std::exception& e2) {
            row["sim_note"] = std::string("simulator: ") + e2.what();
            return;
        }
    }
    const sim::Traffic tot = r->totals.hbm_total();
    row["sim_hbm_read_bytes"] = tot.read_bytes;
    row["sim_hbm_write_bytes"] = tot.write_bytes;
    row["sim_block_rows"] = r->block_rows;
    row["sim_block_cols"] = r->block_cols;
    if (r->l2.simulated) {
        const sim::Traffic l2 = r->l2.hbm_total();
        row["sim_l2_hbm_read_bytes"] = l2.read_bytes;
        row["sim_l2_hbm_write_bytes"] = l2.write_bytes;
        row["sim_l2_hit_rate"] = r->l2.hit_rate;
        row["sim_l2_end_dirty_bytes"] = r->l2.end_dirty_bytes;
        if (!r->l2.note.empty()) note += (note.empty() ? "" : "; ") + std::string("L2: ") + r->l2.note;
    } else if (!r->l2.note.empty()) {
        note += (note.empty() ? "" : "; ") + std::string("L2 not simulated: ") + r->l2.note;
    }
    if (!note.empty()) row["sim_note"] = note;
    if (row.contains("dram_read_bytes") && !row["dram_read_bytes"].is_null()) {
        const double dram = row["dram_read_bytes"].get<double>() + row["dram_write_bytes"].get<double>();
        if (tot.total() > 0) row["dram_over_sim"] = dram / double(tot.total());
        if (row.contains("sim_l2_hbm_read_bytes")) {
            const double l2t = row["sim_l2_hbm_read_bytes"].get<double>() + row["sim_l2_hbm_write_bytes"].get<double>();
            if (l2t > 0) row["dram_over_sim_l2"] = dram / l2t;
        }
    }
    // The walk as a counted range sees it: less the dirty lines it leaves in L2 at the end (written
    // back after the range), plus the residue the probes count in every range (all of it evicted
    // once a pass moves 192 MiB, as the probes did; smaller passes get no view)
    if (residue && r->l2.simulated) {
        const double l2t = double(r->l2.hbm_total().total());
        if (l2t >= kResidueEvictedBytes) {
            row["counters_residue_bytes"] = *residue;
            row["sim_l2_counters_view_bytes"] = l2t - r->l2.end_dirty_bytes + *residue;
            if (row.contains("dram_read_bytes") && !row["dram_read_bytes"].is_null())
                row["dram_over_counters_view"] =
                    (row["dram_read_bytes"].get<double>() + row["dram_write_bytes"].get<double>()) /
                    row["sim_l2_counters_view_bytes"].get<double>();
        }
    }
}

// The kernel model's prediction for a row (sim::predict_kernel with the kernel's recorded tiles and
// the preset's measured ceilings when recorded, else its datasheet's), beside the measured time.
// A step sums its forward's and its backward's predictions. Deterministic rows (dQ in block order)
// get the ordered dQ profile, which the model marks uncertain.
void predict_row(json& row, const sim::Machine& machine) {
    for (const char* k : {"predicted_ms", "predicted_over_measured", "predicted_bound", "predicted_uncertain",
                          "predicted_uncertain_why", "predicted_ceilings", "predicted_note", "predicted_parts_ms",
                          "predicted_rung"})
        row.erase(k);
    if (!row.contains("tiles") || !row.contains("ms_median")) return;
    try {
        const sim::Problem p = problem_of(row);
        const std::optional<sim::KernelRates> measured = measured_rates(machine, p.dtype, "");
        const sim::KernelRates rates = measured ? *measured : sim::datasheet_rates(machine);
        const sim::Machine m = machine;
        const std::string pass = row["pass"];
        const auto [fwd_kernel, bwd_kernel] = kernels_of(row);
        struct Part {
            std::string kernel;
            sim::Pass pass;
            const json* tiles;
        };
        std::vector<Part> parts;
        if (pass == "forward") parts.push_back({fwd_kernel, sim::Pass::forward, &row["tiles"]});
        if (pass == "backward") parts.push_back({bwd_kernel, sim::Pass::backward, &row["tiles"]});
        if (pass == "step") {
            if (!row.contains("tiles_forward")) return;
            parts.push_back({fwd_kernel, sim::Pass::forward, &row["tiles_forward"]});
            parts.push_back({bwd_kernel, sim::Pass::backward, &row["tiles"]});
        }
        double ms = 0;
        std::string bound, why;
        bool uncertain = false;
        json parts_ms = json::object();  // where the time goes: each resource alone, ms (a step: summed)
        for (const auto& part : parts) {
            sim::KernelProfile k = sim::kernel_profile(part.kernel, part.pass, p.head_dim, p.causal);
            const json& t = *part.tiles;
            if (part.pass == sim::Pass::backward && layout_of(t).find("dQ in block order") != std::string::npos)
                k.dq = sim::DqAccumulation::ordered;
            if (part.pass == sim::Pass::forward) {  // as the row's kernel ran
                k = sim::with_grid(k, grid_of(t));
                k.lone_middles = lone_middles_of(t);
            }
            const sim::KernelPrediction kp =
                sim::predict_kernel(p, k, rates, m, t.value("block_rows", 0), t.value("block_cols", 0));
            ms += kp.predicted_ms;
            bound += (bound.empty() ? "" : "+") + kp.bound;
            for (const auto& c : kp.components)
                parts_ms[c.name] = parts_ms.value(c.name, 0.0) + c.seconds * 1e3;
            if (kp.uncertain) {
                uncertain = true;
                why += (why.empty() ? "" : "; ") + kp.uncertain_why;
            }
        }
        row["predicted_ms"] = ms;
        row["predicted_rung"] = "this kernel";  // rung 3 of docs/timing.md's ladder
        row["predicted_over_measured"] = ms / row["ms_median"].get<double>();
        row["predicted_bound"] = bound;
        row["predicted_parts_ms"] = parts_ms;
        row["predicted_uncertain"] = uncertain;
        if (uncertain) row["predicted_uncertain_why"] = why;
        row["predicted_ceilings"] = measured ? "measured" : "datasheet";
    } catch (const std::exception& e) {
        row["predicted_note"] = std::string("kernel model: ") + e.what();
    }
}

// The simulator's ring on P GPUs for a ring row, the kernel's model timing each block (with the
// preset's measured ceilings where it has them); an error is recorded in the row, not thrown.
json sim_ring_json(const sim::RingProblem& rp, const sim::Machine& machine, const std::string& kernel, bool grads) {
    try {
        sim::RingConfig c;
        c.compute = sim::RingCompute::kernel;
        c.kernel = kernel;
        if (const auto rates = measured_rates(machine, rp.attn.dtype, "")) c.rates = *rates;
        c.break_even = true;
        const sim::RingResult sr = sim::simulate_ring(rp, machine, c);
        double sim_f = 0, sim_b = 0, one_f = 0, one_b = 0;
        for (const auto& ps : sr.passes) {
            (ps.pass == 0 ? sim_f : sim_b) = ps.time_s * 1e3;
            (ps.pass == 0 ? one_f : one_b) = ps.one_gpu_s * 1e3;
        }
        return json{{"forward_ms", sim_f},         {"backward_ms", grads ? json(sim_b) : json(nullptr)},
                    {"one_gpu_forward_ms", one_f}, {"one_gpu_backward_ms", grads ? json(one_b) : json(nullptr)},
                    {"efficiency", sr.efficiency}, {"machine", machine.name},
                    {"note", sr.compute_note}};
    } catch (const std::exception& e) { return json{{"error", e.what()}}; }
}

// A recorded ring row's simulator column, recomputed by this checkout's model (resimulate). The row
// names its problem as `bench --ring` wrote it; false (row unchanged) with why when it does not.
bool resimulate_ring_row(json& row, const sim::Machine& machine, std::string& why) {
    auto integer = [&](const char* k) -> std::optional<int64_t> {
        if (row.contains(k) && row[k].is_number_integer() && row[k].get<int64_t>() > 0) return row[k].get<int64_t>();
        why = std::string("has no positive integer \"") + k + "\"";
        return std::nullopt;
    };
    const auto gpus = integer("gpus"), batch = integer("batch"), heads = integer("heads"), seq = integer("seq"),
               dim = integer("head_dim");
    if (!gpus || !batch || !heads || !seq || !dim) return false;
    const auto text = [&](const char* k) {
        return row.contains(k) && row[k].is_string() ? row[k].get<std::string>() : "";
    };
    const auto layout = sim::parse_enum<sim::RingLayout>(text("layout"));
    const auto dt = sim::parse_dtype(text("dtype"));
    if (!layout || !dt || text("variant").empty() || !row.contains("causal") || !row["causal"].is_boolean()) {
        why = "needs variant, layout (balanced or contiguous), dtype and causal as `bench --ring` writes them";
        return false;
    }
    sim::RingProblem rp;
    rp.attn.batch = *batch;
    rp.attn.heads = *heads;
    rp.attn.seq = *seq;
    rp.attn.head_dim = *dim;
    rp.attn.dtype = *dt;
    rp.attn.causal = row["causal"].get<bool>();
    rp.gpus = *gpus;
    rp.layout = *layout;
    const bool grads = row.contains("backward_ms") && row["backward_ms"].is_number();
    rp.pass = grads ? sim::Pass::both : sim::Pass::forward;
    row["sim_ring"] = sim_ring_json(rp, machine, text("variant"), grads);
    return true;
}

// flashsim bench --resimulate FILE [--json OUT]: recompute the simulator's columns of recorded rows and
// write the document to OUT (which may be FILE itself, to update it), or print it when no OUT is named:
// a recorded file changes only when its user names it.
int resimulate(const std::string& path, const std::string& gpu, const std::string& out_path) {
    std::ifstream in(path);
    if (!in) {
        print_error("bench", "cannot read " + path);
        return 1;
    }
    json doc;
    try {
        doc = json::parse(in);
    } catch (const std::exception& e) {
        print_error("bench", "cannot parse " + path + " as JSON (" + e.what() + "); nothing was changed");
        return 1;
    }
    if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
        print_error("bench", path +
                                 " has no \"rows\" list (a results file as `flashsim bench --json` writes it); "
                                 "nothing was changed");
        return 1;
    }
    // every row to recompute names its configuration; one that does not is refused before any is changed
    using Check = bool (json::*)() const noexcept;
    const std::tuple<const char*, Check, const char*> fields[] = {{"variant", &json::is_string, "string"},
                                                                  {"pass", &json::is_string, "string"},
                                                                  {"seq", &json::is_number_integer, "integer"},
                                                                  {"head_dim", &json::is_number_integer, "integer"},
                                                                  {"causal", &json::is_boolean, "true/false"}};
    int index = 0, measured = 0, kernel_rows = 0;
    auto refuse = [&](int i, const std::string& what) {
        print_error("bench", path + ": row " + std::to_string(i) + " " + what + "; nothing was changed");
        return 1;
    };
    auto known_variant = [](const std::string& v) {  // a kernel, or a training step's pairing "fwd+bwd"
        const auto one = [](const std::string& k) {  // the kernel model knows every kernel by name
            try {
                (void)sim::kernel_profile(k, sim::Pass::forward, 64);
                return true;
            } catch (const sim::Error&) { return false; }
        };
        const auto plus = v.find('+');
        return plus == std::string::npos ? one(v) : one(v.substr(0, plus)) && one(v.substr(plus + 1));
    };
    for (const auto& row : doc["rows"]) {
        ++index;
        if (row.is_object() && row.value("pass", "") == "ring") {
            ++measured;
            continue;
        }
        if (!row.is_object() || !row.contains("ms_median")) continue;
        ++measured;
        ++kernel_rows;
        for (const auto& [k, ok, kind] : fields)
            if (!row.contains(k) || !(row[k].*ok)())
                return refuse(index, std::string("has no ") + kind + " \"" + k +
                                         "\" (a bench row names variant, pass, seq, head_dim, causal)");
        const std::string pass = row["pass"], variant = row["variant"];
        if (pass != "forward" && pass != "backward" && pass != "step")
            return refuse(index, "has pass \"" + pass + "\"; a kernel row's pass is forward, backward or step");
        if (!known_variant(variant))
            return refuse(index, "has variant \"" + variant +
                                     "\"; the kernels are standard, flash1, flash2 and flash2h (a step may pair two "
                                     "as \"flash2h+flash2\")");
        for (const char* k : {"seq", "head_dim", "batch", "heads"})
            if (row.contains(k) && (!row[k].is_number_integer() || row[k].get<int64_t>() < 1 ||
                                    row[k].get<int64_t>() > (int64_t{1} << 24)))
                return refuse(index, std::string("has \"") + k + "\" = " + row[k].dump() +
                                         "; it must be a whole number from 1 to 16,777,216");
        const auto dt = row.contains("dtype") && row["dtype"].is_string()
                            ? sim::parse_dtype(row["dtype"].get<std::string>())
                            : std::optional<sim::DType>{};
        if (row.contains("dtype") && (!dt || *dt == sim::DType::fp32))
            return refuse(index, "has dtype " + row["dtype"].dump() + "; the kernels store bf16 or fp16");
    }
    if (measured == 0) {
        print_error("bench", path +
                                 " has no measured rows (kernel rows with \"ms_median\" or ring rows) to "
                                 "recompute; nothing was changed");
        return 1;
    }
    const sim::Machine& machine = sim::find_machine(gpu);
    // only kernel rows are given the counters' view (a ring file has none)
    const Residue residue = kernel_rows ? counters_residue(path) : Residue{};
    if (kernel_rows && !residue.bytes) std::cerr << "resimulate: " << residue.why << "\n";
    int n = 0;
    index = 0;
    for (auto& row : doc["rows"]) {
        ++index;
        if (row.is_object() && row.value("pass", "") == "ring") {  // a ring row: its simulator's ring
            std::string why;
            if (resimulate_ring_row(row, machine, why))
                ++n;
            else
                std::cerr << "resimulate: ring row " << index << " " << why << "; left as recorded\n";
            continue;
        }
        if (!row.is_object() || !row.contains("ms_median")) continue;
        std::cerr << "resimulate: " << row["variant"].get<std::string>() << " " << row["pass"].get<std::string>()
                  << " N=" << row["seq"] << " d=" << row["head_dim"] << (row["causal"].get<bool>() ? " causal" : "")
                  << "\n";
        simulate_row(row, machine, residue.bytes);
        predict_row(row, machine);
        ++n;
    }
    doc["simulated_with"] = "flashsim bench --resimulate (simulator of this checkout, " + gpu + " preset)";
    if (out_path.empty()) {
        std::cout << doc.dump(1) << "\n";
        std::cerr << "resimulate: " << n << " rows of " << path << " recomputed (printed; --json FILE writes them)\n";
        return 0;
    }
    std::ofstream out(out_path);
    out << doc.dump(1) << "\n";
    if (!out) {
        print_error("bench", "cannot write " + out_path);
        return 1;
    }
    std::cerr << "resimulate: " << n << " rows of " << path << " recomputed, written to " << out_path << "\n";
    return 0;
}

#if FLASHSIM_HAVE_CUDA

json stats_json(const sim::ErrorStats& e) {
    if (e.count == 0) return nullptr;
    return json{
        {"max_abs", e.max_abs}, {"rel_frobenius", e.rel_frobenius}, {"max_ulp", e.max_ulp}, {"identical", e.identical},
        {"count", e.count},     {"nonfinite", e.nonfinite},         {"worst_at", e.where}};
}

json opt_bytes(int64_t b) { return b < 0 ? json(nullptr) : json(b); }

// A results file: {device, driver, date (of `started`), git_commit, <key>: rows}, written whole
// (the bench rewrites it after every row, so a run cut short keeps what it measured). No path: nothing.
bool write_doc(const std::string& path, const json& rows, std::time_t started, const char* key = "rows") {
    if (path.empty()) return true;
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    const char* commit = std::getenv("FLASHSIM_GIT_COMMIT");
    const json doc{{"device", fcuda::device_name()},
                   {"driver", fcuda::driver_version()},
                   {"date", date},
                   {"git_commit", commit ? commit : "unknown"},
                   {key, rows}};
    std::ofstream f(path);
    if (!f) {
        print_error("bench", "cannot write " + path);
        return false;
    }
    f << doc.dump(1) << "\n";
    return true;
}

// What every GPU mode needs first: a usable GPU (exit 2, said plainly, when there is none) and a
// storage type the kernels keep (exit 1 otherwise). 0 when both are fine.
int check_device_and_dtype(const BenchArgs& a) {
    std::string why;
    if (!fcuda::device_available(&why)) {
        std::cerr << "flashsim bench: " << why
                  << "; the H200 measurements recorded with this project are in results/h200/bench.json\n";
        return 2;
    }
    const auto dt = sim::parse_dtype(a.dtype);
    if (!dt || *dt == sim::DType::fp32) {
        print_error("bench", "--dtype must be bf16 or fp16, got '" + a.dtype + "'");
        return 1;
    }
    return 0;
}

// flashsim bench --ceilings: the GPU's own ceilings (cuda/ceilings.cu), printed and written as JSON.
int run_ceilings(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    const std::vector<fcuda::Ceiling> cs = fcuda::measure_ceilings();
    json rows = json::array();
    std::printf("%-14s %14s %-7s %s\n", "ceiling", "value", "unit", "method");
    for (const auto& c : cs) {
        std::printf("%-14s %14.4g %-7s %s\n", c.name.c_str(), c.value, c.unit.c_str(), c.method.c_str());
        rows.push_back(json{{"name", c.name}, {"value", c.value}, {"unit", c.unit}, {"method", c.method}});
    }
    if (!write_doc(a.json, rows, started, "ceilings")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

// flashsim bench --counters-probe: what the in-process DRAM counters see for known work after the
// bench's L2 flush (fcuda::probe_counters), beside the work's own bytes.
int run_counters_probe(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    const double mib = 1024.0 * 1024.0;
    std::printf("%-18s %10s %10s %12s %12s  %s\n", "probe", "reads MiB", "writes MiB", "counted rd", "counted wr",
                "work");
    for (const fcuda::CounterProbe& c : fcuda::probe_counters()) {
        json row{{"name", c.name},
                 {"method", c.method},
                 {"work_read_bytes", c.work_read},
                 {"work_write_bytes", c.work_write}};
        if (c.why.empty()) {
            row["dram_read_bytes"] = c.dram_read;
            row["dram_write_bytes"] = c.dram_write;
            std::printf("%-18s %10.1f %10.1f %12.1f %12.1f  %s\n", c.name.c_str(), c.work_read / mib,
                        c.work_write / mib, c.dram_read / mib, c.dram_write / mib, c.method.c_str());
        } else {
            row["why"] = c.why;
            std::printf("%-18s counters not read: %s\n", c.name.c_str(), c.why.c_str());
        }
        rows.push_back(row);
    }
    if (!write_doc(a.json, rows, started, "counters_probe")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

// flashsim bench --launch-probe: what an event-timed call pays besides its work, and whether the SMs'
// shared-memory carve-out, left by the kernel before, is part of it (fcuda::probe_launch).
int run_launch_probe(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    std::printf("%-20s %9s %9s %9s  %s\n", "work", "us med", "us min", "us max", "before the timed call");
    for (const fcuda::LaunchProbe& p : fcuda::probe_launch(a.repeats)) {
        rows.push_back({{"name", p.name},
                        {"method", p.method},
                        {"before", p.before},
                        {"repeats", p.repeats},
                        {"us_median", p.us_median},
                        {"us_min", p.us_min},
                        {"us_max", p.us_max}});
        std::printf("%-20s %9.2f %9.2f %9.2f  %s\n", p.name.c_str(), p.us_median, p.us_min, p.us_max, p.before.c_str());
    }
    if (!write_doc(a.json, rows, started, "launch_probe")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

// A comparison's relative (Frobenius) error for the text table, or "-" where none was made.
template <typename Stats>
std::string rel_text(const Stats& st) {
    if (!st.count) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.2e", st.rel_frobenius);
    return b;
}

int run_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    if (a.ceilings) return run_ceilings(a);
    if (a.counters_probe) return run_counters_probe(a);
    if (a.launch_probe) return run_launch_probe(a);
    const auto dt = sim::parse_dtype(a.dtype);
    // by default every variant this GPU can run (flash2h needs Hopper); one asked for by name
    // and not runnable here fails its rows with the reason
    std::vector<std::string> variants = a.variants;
    if (variants.empty())
        for (const auto& v : fcuda::variants()) {
            std::string no;
            if (fcuda::variant_available(v, &no))
                variants.push_back(v);
            else
                std::cerr << "bench: skipping " << v << ": " << no << "\n";
        }
    const sim::Machine& machine = sim::find_machine(a.gpu);
    json rows = json::array();
    // the JSON file is rewritten after every row, so a run cut short keeps what it measured
    const std::time_t started = std::time(nullptr);
    auto write_json = [&]() -> bool { return write_doc(a.json, rows, started); };
    bool all_ok = true;
    std::printf("%-9s %-8s %6s %4s %3s %4s %-6s %10s %8s %12s %12s %9s %9s %10s %s\n", "variant", "pass", "N", "d", "B",
                "H", "mask", "ms(med)", "TFLOP/s", "sim_hbm_MB", "dram_MB", "rel_ref", "rel_std", "peak_MB", "ok");
    for (const auto& pass_s : a.passes) {
        const fcuda::Pass pass = pass_s == "backward" ? fcuda::Pass::backward
                                 : pass_s == "step"   ? fcuda::Pass::step
                                                      : fcuda::Pass::forward;
        if (pass_s != "forward" && pass_s != "backward" && pass_s != "step") {
            print_error("bench", "--pass takes forward, backward and/or step, got '" + pass_s + "'");
            return 1;
        }
        for (int64_t d : a.head_dims)
            for (int64_t n : a.seqs)
                for (const auto& v : variants) {
                    if (!fcuda::supports(v, pass)) continue;
                    sim::Problem p;
                    p.seq = n;
                    p.head_dim = d;
                    p.heads = a.heads > 0 ? a.heads : std::max<int64_t>(1, 2048 / d);
                    p.batch = a.batch > 0 ? a.batch : std::max<int64_t>(1, 16384 / n);
                    p.dtype = *dt;
                    p.causal = a.causal;
                    p.seed = a.seed;
                    std::cerr << "bench: " << v << " " << pass_s << " N=" << n << " d=" << d << " B=" << p.batch
                              << " H=" << p.heads << (p.causal ? " causal" : "") << " ...\n";
                    json row{{"variant", v},     {"pass", pass_s},   {"seq", n},         {"head_dim", d},
                             {"batch", p.batch}, {"heads", p.heads}, {"dtype", a.dtype}, {"causal", p.causal}};
                    try {
                        fcuda::RunOptions o;
                        o.pass = pass;
                        o.repeats = a.repeats;
                        o.warmup = a.warmup;
                        o.check_reference = !a.no_check;
                        o.check_standard = !a.no_check;
                        o.nvtx = a.nvtx;
                        const fcuda::Measurement m = fcuda::run(p, v, o);
                        const fcuda::TileConfig& t = m.tiles;
                        auto tiles_json = [](const fcuda::TileConfig& k) {
                            return json{{"variant", k.variant},       {"algo", k.algo},
                                        {"block_rows", k.block_rows}, {"block_cols", k.block_cols},
                                        {"loop_order", k.loop_order}, {"stages", k.stages},
                                        {"sram_bytes", k.sram_bytes}, {"smem_bytes", k.smem_bytes},
                                        {"threads", k.threads},       {"layout", k.layout},
                                        {"dq_copies", k.dq_copies},   {"grid", k.grid}};
                        };
                        row["l2_flush"] = m.l2_flush;
                        row["ms_median"] = m.ms_median;
                        row["ms_min"] = m.ms_min;
                        row["ms_max"] = m.ms_max;
                        row["repeats"] = m.repeats;
                        row["tflops"] = m.tflops;
                        row["flops"] = fcuda::attention_flops(p, pass);
                        row["dram_read_bytes"] = opt_bytes(m.dram_read_bytes);
                        row["dram_write_bytes"] = opt_bytes(m.dram_write_bytes);
                        row["l2_bytes"] = opt_bytes(m.l2_bytes);
                        row["counters_note"] = m.counters_note;
                        row["tiles"] = tiles_json(t);
                        if (pass == fcuda::Pass::step) row["tiles_forward"] = tiles_json(m.tiles_forward);
                        row["vs_reference"] = stats_json(m.vs_reference);
                        row["vs_standard"] = stats_json(m.vs_standard);
                        row["unwritten"] = m.unwritten;
                        row["note"] = m.note;
                        row["peak_bytes"] = m.peak_bytes;
                        row["peak_bytes_method"] = "harness allocations: one input/output set + workspace";
                        simulate_row(row, machine);
                        predict_row(row, machine);
                        const double tol = p.dtype == sim::DType::bf16 ? 2e-2 : 5e-3;
                        bool ok = m.unwritten == 0 && m.note.empty();
                        for (const auto* e : {&m.vs_reference, &m.vs_standard})
                            if (e->count > 0 && (e->nonfinite > 0 || e->rel_frobenius > tol)) ok = false;
                        row["ok"] = ok;
                        all_ok = all_ok && ok;
                        auto mb = [](const json& j) { return j.is_null() ? -1.0 : j.get<double>() / 1e6; };
                        const double sim_mb = row["sim_hbm_read_bytes"].is_null()
                                                  ? -1.0
                                                  : mb(row["sim_hbm_read_bytes"]) + mb(row["sim_hbm_write_bytes"]);
                        char dram_buf[32] = "-";
                        if (m.dram_read_bytes >= 0)
                            std::snprintf(dram_buf, sizeof dram_buf, "%.1f",
                                          (m.dram_read_bytes + m.dram_write_bytes) / 1e6);
                        const std::string dram_mb = dram_buf;
                        char sim_buf[32] = "-";  // "-": not simulated / not compared (no placeholder number)
                        if (sim_mb >= 0) std::snprintf(sim_buf, sizeof sim_buf, "%.1f", sim_mb);
                        std::printf("%-9s %-8s %6lld %4lld %3lld %4lld %-6s %10.3f %8.1f %12s %12s %9s %9s %10.1f %s\n",
                                    v.c_str(), pass_s.c_str(), (long long)n, (long long)d, (long long)p.batch,
                                    (long long)p.heads, p.causal ? "causal" : "none", m.ms_median, m.tflops, sim_buf,
                                    dram_mb.c_str(), rel_text(m.vs_reference).c_str(), rel_text(m.vs_standard).c_str(),
                                    m.peak_bytes / 1e6, ok ? "yes" : "NO");
                        std::fflush(stdout);
                    } catch (const std::exception& e) {
                        row["error"] = e.what();
                        row["ok"] = false;
                        all_ok = false;
                        std::printf("%-9s %-8s %6lld %4lld  error: %s\n", v.c_str(), pass_s.c_str(), (long long)n,
                                    (long long)d, e.what());
                    }
                    rows.push_back(row);
                    if (!write_json()) return 1;
                }
    }
    if (!write_json()) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    if (!all_ok) std::cerr << "bench: some configurations failed their checks (ok = NO above)\n";
    return all_ok ? 0 : 1;
}

// flashsim bench --decode: the decode kernel on the shapes (or --cache x --batch).
int run_decode_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    std::vector<std::pair<int64_t, int64_t>> shapes;  // (B, L)
    if (a.caches.empty())
        shapes = {{1, 32768}, {1, 131072}, {8, 32768}, {64, 8192}};
    else
        for (int64_t L : a.caches) shapes.push_back({a.batch > 0 ? a.batch : 1, L});
    const std::vector<int64_t> dims = a.dims_given ? a.head_dims : std::vector<int64_t>{128};
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-7s %3s %8s %4s %4s %4s %6s %10s %10s %8s %9s %9s %10s %s\n", "pass", "B", "L", "H_q", "H_kv", "d",
                "splits", "ms(med)", "KV_MB", "TB/s", "sim_ms", "rel_ref", "peak_MB", "ok");
    for (int64_t d : dims)
        for (const auto& [B, L] : shapes) {
            sim::DecodeProblem p;
            p.batch = B;
            p.kv_len = L;
            p.q_heads = a.q_heads;
            p.kv_heads = a.kv_heads;
            p.head_dim = d;
            p.dtype = *dt;
            p.seed = a.seed;
            std::cerr << "bench: decode B=" << B << " L=" << L << " H_q=" << p.q_heads << " H_kv=" << p.kv_heads
                      << " d=" << d << " ...\n";
            json row{{"variant", "decode"},  {"pass", "decode"},       {"batch", B},         {"kv_len", L},
                     {"q_heads", p.q_heads}, {"kv_heads", p.kv_heads}, {"heads", p.q_heads}, {"seq", 1},
                     {"head_dim", d},        {"dtype", a.dtype},       {"causal", false}};
            try {
                fcuda::RunOptions o;
                o.repeats = a.repeats;
                o.warmup = a.warmup;
                o.check_reference = !a.no_check;
                o.trace_runs = a.trace;
                const fcuda::DecodeMeasurement m = fcuda::run_decode(p, o, a.splits);
                row["splits"] = m.splits;
                row["splits_why"] = m.splits_why;
                row["blocks"] = m.blocks;
                row["tile_keys"] = m.tile_keys;
                row["stage_keys"] = m.stage_keys;
                row["l2_prefetch"] = m.l2_prefetch;
                row["kv_load"] = m.kv_load;
                row["merge"] = m.merge;
                row["l2_flush"] = m.l2_flush;
                row["ms_median"] = m.ms_median;
                row["ms_min"] = m.ms_min;
                row["ms_max"] = m.ms_max;
                row["repeats"] = m.repeats;
                row["kv_bytes"] = m.kv_bytes;
                row["total_bytes"] = m.total_bytes;
                row["tbps"] = m.kv_tbps;
                row["sim_predicted_ms"] = m.sim_predicted_ms;
                row["vs_reference"] = stats_json(m.vs_reference);
                row["unwritten"] = m.unwritten;
                row["note"] = m.note;
                row["peak_bytes"] = m.peak_bytes;
                row["peak_bytes_method"] = "harness allocations: Q, K, V, O, LSE and the split partials of one set";
                if (m.trace.runs > 0) {
                    const fcuda::DecodeTrace& t = m.trace;
                    row["trace"] = {{"runs", t.runs},
                                    {"event_us", t.event_us},
                                    {"span_us", t.span_us},
                                    {"start_med_us", t.start_med_us},
                                    {"start_max_us", t.start_max_us},
                                    {"first_tile_med_us", t.first_tile_med_us},
                                    {"first_tile_max_us", t.first_tile_max_us},
                                    {"stream_med_us", t.stream_med_us},
                                    {"stream_max_us", t.stream_max_us},
                                    {"written_med_us", t.written_med_us},
                                    {"written_max_us", t.written_max_us},
                                    {"first_tile_wait_us", t.first_tile_wait_us},
                                    {"merge_us", t.merge_us},
                                    {"timer_step_ns", t.timer_step_ns},
                                    {"sm_clock_ghz", t.sm_clock_ghz},
                                    {"note", "microseconds from the first block's start (global timer), each the "
                                             "median over the traced calls, every call after an L2 flush; event_us "
                                             "is the call by CUDA events, span_us first start to last stamp"}};
                    std::printf("  trace (%d calls, us): event %.1f, span %.1f; starts med %.1f max %.1f; first tile "
                                "med %.1f max %.1f; last tile med %.1f max %.1f; written med %.1f max %.1f; merge "
                                "%.1f; timer step %.0f ns\n",
                                t.runs, t.event_us, t.span_us, t.start_med_us, t.start_max_us, t.first_tile_med_us,
                                t.first_tile_max_us, t.stream_med_us, t.stream_max_us, t.written_med_us,
                                t.written_max_us, t.merge_us, t.timer_step_ns);
                }
                const double tol = p.dtype == sim::DType::bf16 ? 2e-2 : 5e-3;
                const bool ok = m.unwritten == 0 && m.note.find("non-finite") == std::string::npos &&
                                (m.vs_reference.count == 0 ||
                                 (m.vs_reference.nonfinite == 0 && m.vs_reference.rel_frobenius <= tol));
                row["ok"] = ok;
                all_ok = all_ok && ok;
                std::printf("%-7s %3lld %8lld %4lld %4lld %4lld %6lld %10.4f %10.1f %8.2f %9.4f %9s %10.1f %s\n",
                            "decode", (long long)B, (long long)L, (long long)p.q_heads, (long long)p.kv_heads,
                            (long long)d, (long long)m.splits, m.ms_median, m.kv_bytes / 1e6, m.kv_tbps,
                            m.sim_predicted_ms, rel_text(m.vs_reference).c_str(), m.peak_bytes / 1e6,
                            ok ? "yes" : "NO");
                std::fflush(stdout);
            } catch (const std::exception& e) {
                row["error"] = e.what();
                row["ok"] = false;
                all_ok = false;
                std::printf("decode  B=%lld L=%lld d=%lld error: %s\n", (long long)B, (long long)L, (long long)d,
                            e.what());
            }
            rows.push_back(row);
            if (!write_doc(a.json, rows, started)) return 1;
        }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

// flashsim bench --ring P: ring attention with the kernels, beside one GPU on the whole problem
// and on a device's share, and the simulator's ring for P GPUs.
int run_ring_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    const auto layout = sim::parse_enum<sim::RingLayout>(a.ring_layout);
    if (!layout) throw std::runtime_error("unknown --ring-layout '" + a.ring_layout + "'; use balanced or contiguous");
    fcuda::RingTransport transport = fcuda::RingTransport::emulated;
    if (a.ring_transport == "nccl")
        transport = fcuda::RingTransport::nccl;
    else if (a.ring_transport != "emulated")
        throw std::runtime_error("unknown --ring-transport '" + a.ring_transport + "'; use emulated or nccl");
    const std::vector<std::string> kernels = a.variants.empty() ? std::vector<std::string>{"flash2h"} : a.variants;
    bool grads = false;
    for (const auto& ps : a.passes) {
        if (ps == "backward" || ps == "both")
            grads = true;
        else if (ps != "forward")
            throw std::runtime_error("--ring takes --pass forward or backward (the backward runs the forward too)");
    }
    const std::vector<int64_t> seqs = a.seqs;
    const std::vector<int64_t> dims = a.dims_given ? a.head_dims : std::vector<int64_t>{128};
    const sim::Machine& machine = sim::find_machine(a.gpu);
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-8s %-9s %2s %-10s %6s %4s %-6s %9s %9s %9s %9s %8s %8s %s\n", "kernel", "transport", "P", "layout",
                "N", "d", "mask", "ring_fwd", "one_fwd", "ring_bwd", "one_bwd", "sim_fwd", "sim_bwd", "ok");
    for (const auto& kernel : kernels)
        for (int64_t d : dims)
            for (int64_t N : seqs) {
                sim::RingProblem rp;
                rp.attn.batch = a.batch > 0 ? a.batch : std::max<int64_t>(1, 16384 / N);
                rp.attn.heads = a.heads > 0 ? a.heads : 2048 / d;
                rp.attn.seq = N;
                rp.attn.head_dim = d;
                rp.attn.dtype = *dt;
                rp.attn.causal = a.causal;
                rp.attn.seed = a.seed;
                rp.gpus = a.ring;
                rp.layout = *layout;
                rp.pass = grads ? sim::Pass::both : sim::Pass::forward;
                json row{{"variant", kernel},   {"pass", "ring"},          {"transport", a.ring_transport},
                         {"gpus", rp.gpus},     {"layout", a.ring_layout}, {"batch", rp.attn.batch},
                         {"heads", rp.attn.heads}, {"seq", N},             {"head_dim", d},
                         {"dtype", a.dtype},    {"causal", a.causal}};
                std::cerr << "bench: ring " << kernel << " P=" << rp.gpus << " " << a.ring_layout << " N=" << N
                          << " d=" << d << (a.causal ? " causal" : "") << " (" << a.ring_transport << ") ...\n";
                try {
                    rp.validate();
                    row["tokens_per_gpu"] = rp.tokens_per_gpu();
                    row["chunk"] = rp.chunk();
                    fcuda::RunOptions o;
                    o.repeats = a.repeats;
                    o.warmup = a.warmup;
                    o.check_reference = !a.no_check;
                    o.counters = false;
                    o.check_standard = false;
                    const fcuda::RingMeasurement m = fcuda::run_ring(rp, kernel, transport, o);
                    row["gpus_used"] = m.gpus_used;
                    row["forward_ms"] = m.forward_ms;
                    row["backward_ms"] = grads ? json(m.backward_ms) : json(nullptr);
                    row["repeats"] = m.repeats;
                    row["blocks_last_pass"] = m.blocks;
                    row["sends_last_pass"] = m.sends;
                    row["link_bytes_last_pass"] = m.link_bytes;
                    const char* names[] = {"O", "dQ", "dK", "dV"};
                    json vs1 = json::object(), vsr = json::object(), onr = json::object(), bd = json::object();
                    for (size_t k = 0; k < m.vs_single.size(); ++k) {
                        vs1[names[k]] = stats_json(m.vs_single[k]);
                        bd[names[k]] = m.bound[k];
                        if (k < m.vs_reference.size()) {
                            vsr[names[k]] = stats_json(m.vs_reference[k]);
                            onr[names[k]] = stats_json(m.single_vs_reference[k]);
                        }
                    }
                    row["vs_single"] = vs1;
                    row["vs_reference"] = m.vs_reference.empty() ? json(nullptr) : vsr;
                    row["single_vs_reference"] = m.single_vs_reference.empty() ? json(nullptr) : onr;
                    row["bound"] = bd;
                    row["bar"] = m.vs_reference.empty()
                                     ? "|ring - one call| <= K ulps at the one call's largest magnitude, K = chunks"
                                     : "ring error <= 2 x one call's error + K ulps at the reference's largest "
                                       "magnitude, K = chunks";
                    row["nonfinite"] = m.nonfinite;
                    // one GPU, one call: the whole problem, and one device's share (N/P tokens, same mask)
                    fcuda::RunOptions one = o;
                    one.check_reference = false;
                    auto time_one = [&](const sim::Problem& q, fcuda::Pass ps) {
                        fcuda::RunOptions x = one;
                        x.pass = ps;
                        return fcuda::run(q, kernel, x).ms_median;
                    };
                    sim::Problem share = rp.attn;
                    share.seq = rp.tokens_per_gpu();
                    const double one_f = time_one(rp.attn, fcuda::Pass::forward);
                    const double share_f = time_one(share, fcuda::Pass::forward);
                    const double one_b = grads ? time_one(rp.attn, fcuda::Pass::backward) : 0;
                    const double share_b = grads ? time_one(share, fcuda::Pass::backward) : 0;
                    const double scale =
                        fcuda::attention_flops(rp.attn, fcuda::Pass::forward) /
                        (double(rp.gpus) * fcuda::attention_flops(share, fcuda::Pass::forward));
                    row["single"] = json{{"forward_ms", one_f}, {"backward_ms", grads ? json(one_b) : json(nullptr)}};
                    row["share"] = json{{"seq", share.seq},
                                        {"forward_ms", share_f},
                                        {"backward_ms", grads ? json(share_b) : json(nullptr)}};
                    // the ideal: the whole work at P x one GPU's throughput on its share
                    row["ideal_forward_ms"] = share_f * scale;
                    row["ideal_backward_ms"] = grads ? json(share_b * scale) : json(nullptr);
                    if (m.gpus_used == rp.gpus) {
                        row["efficiency_forward"] = share_f * scale / m.forward_ms;
                        if (grads)
                            row["efficiency_both"] = (share_f + share_b) * scale / (m.forward_ms + m.backward_ms);
                    } else {
                        // one GPU did every device's work: set it against one call on the whole problem
                        row["one_gpu_work_ratio_forward"] = one_f / m.forward_ms;
                        if (grads) row["one_gpu_work_ratio_backward"] = one_b / m.backward_ms;
                    }
                    // the simulator's ring on P GPUs, the kernel's model timing each block
                    row["sim_ring"] = sim_ring_json(rp, machine, kernel, grads);
                    const double sim_f = row["sim_ring"].value("forward_ms", 0.0);
                    const double sim_b = grads ? row["sim_ring"].value("backward_ms", 0.0) : 0.0;
                    row["ok"] = m.ok;
                    all_ok = all_ok && m.ok;
                    std::printf("%-8s %-9s %2lld %-10s %6lld %4lld %-6s %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f %s\n",
                                kernel.c_str(), a.ring_transport.c_str(), (long long)rp.gpus, a.ring_layout.c_str(),
                                (long long)N, (long long)d, a.causal ? "causal" : "none", m.forward_ms, one_f,
                                m.backward_ms, one_b, sim_f, sim_b, m.ok ? "yes" : "NO");
                    std::fflush(stdout);
                } catch (const std::exception& e) {
                    row["error"] = e.what();
                    row["ok"] = false;
                    all_ok = false;
                    std::printf("ring %s P=%lld N=%lld d=%lld error: %s\n", kernel.c_str(), (long long)rp.gpus,
                                (long long)N, (long long)d, e.what());
                }
                rows.push_back(row);
                if (!write_doc(a.json, rows, started)) return 1;
            }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

// flashsim bench --fit: the longest N each kernel's training step can allocate on this GPU.
int run_fit_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    sim::Problem shape;
    shape.batch = a.batch > 0 ? a.batch : 1;
    shape.heads = a.heads > 0 ? a.heads : 16;
    shape.head_dim = a.dims_given ? a.head_dims.front() : 128;
    shape.dtype = *dt;
    std::vector<std::string> variants = a.variants;
    if (variants.empty())
        for (const char* v : {"standard", "flash2", "flash2h"}) {
            std::string no;
            if (fcuda::variant_available(v, &no))
                variants.push_back(v);
            else
                std::cerr << "bench: skipping " << v << ": " << no << "\n";
        }
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-9s %12s %14s %12s %14s %s\n", "variant", "longest_n", "peak_bytes", "next_n", "sim_longest_n",
                "probes");
    for (const auto& v : variants) {
        json row{{"variant", v},
                 {"pass", "fit"},
                 {"batch", shape.batch},
                 {"heads", shape.heads},
                 {"head_dim", shape.head_dim},
                 {"dtype", a.dtype}};
        try {
            const fcuda::FitProbe r = fcuda::probe_fit(v, shape);
            const sim::Algo algo = v == "standard" ? sim::Algo::standard : sim::Algo::flash2;
            const sim::FitResult s = sim::longest_fit(shape, algo, sim::Pass::both, r.free_bytes);
            row["longest_n"] = r.longest_n;
            row["next_n"] = r.next_n;
            row["peak_bytes_at_longest"] = r.peak_bytes_at_longest;
            row["free_bytes"] = r.free_bytes;
            row["total_bytes"] = r.total_bytes;
            row["probes"] = r.probes;
            row["simulator_longest_n"] = s.longest_n;
            row["simulator_capacity"] = "cudaMemGetInfo's free bytes before the search";
            row["method"] = "allocation only (cudaMalloc of one step's buffers, freed after each probe)";
            row["note"] = r.note;
            row["ok"] = r.longest_n > 0;
            std::printf("%-9s %12lld %14lld %12lld %14lld %d\n", v.c_str(), (long long)r.longest_n,
                        (long long)r.peak_bytes_at_longest, (long long)r.next_n, (long long)s.longest_n, r.probes);
            std::fflush(stdout);
        } catch (const std::exception& e) {
            row["error"] = e.what();
            row["ok"] = false;
            all_ok = false;
            std::printf("%-9s error: %s\n", v.c_str(), e.what());
        }
        rows.push_back(row);
        if (!write_doc(a.json, rows, started)) return 1;
    }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

// flashsim bench --study COUNT: random shapes, every kernel and pass against float64 on the GPU
// (cuda/study.cpp). One row per shape with each kernel's error, the standard kernel's, and the bar.
int run_study(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const std::time_t started = std::time(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<fcuda::StudyShape> shapes = fcuda::study_shapes(a.study, a.seed);
    json rows = json::array();
    int64_t entries = 0, inside = 0;
    int done = 0;
    for (size_t k = 0; k < shapes.size(); ++k) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (a.time_limit > 0 && elapsed > a.time_limit) {
            std::printf("study: time limit of %.0f s reached after %d shapes of slice %d/%d\n", a.time_limit, done,
                        a.slice, a.slices);
            break;
        }
        if (static_cast<int>(k % static_cast<size_t>(a.slices)) != a.slice) continue;
        const fcuda::StudyShape& sh = shapes[k];
        json row{{"shape", k},
                 {"batch", sh.B},
                 {"heads", sh.H},
                 {"seq", sh.N},
                 {"head_dim", sh.d},
                 {"dtype", sim::dtype_name(sh.dtype)},
                 {"causal", sh.causal},
                 {"score_target", sh.score_target},
                 {"seed", sh.seed}};
        try {
            // the GPU's float64 against the CPU's on the first shapes small enough
            const double work = double(sh.B * sh.H) * double(sh.N) * double(sh.N) * double(sh.d);
            const bool cpu_check = k < 200 && work <= 2e8;
            const fcuda::StudyResult r = fcuda::study_one(sh, cpu_check);
            row["lse_max"] = r.lse_max;
            row["reference_ms"] = r.reference_ms;
            if (r.gpu_vs_cpu_reference >= 0) row["gpu_vs_cpu_reference"] = r.gpu_vs_cpu_reference;
            json es = json::array();
            bool all = true;
            for (const auto& e : r.entries) {
                es.push_back({{"variant", e.variant},
                              {"pass", fcuda::pass_name(e.pass)},
                              {"tensor", e.tensor},
                              {"err", e.err},
                              {"err_standard", e.err_standard},
                              {"atol", e.atol},
                              {"ref_max", e.ref_max},
                              {"bound", e.bound},
                              {"max_ulp", e.max_ulp},
                              {"identical", e.identical},
                              {"count", e.count},
                              {"nonfinite", e.nonfinite},
                              {"worst_at", e.where},
                              {"ok", e.ok}});
                ++entries;
                inside += e.ok ? 1 : 0;
                all = all && e.ok;
            }
            row["entries"] = es;
            row["ok"] = all;
            if (!all) {
                std::printf("study: shape %zu (B=%lld H=%lld N=%lld d=%d %s%s) outside the bar:", k, (long long)sh.B,
                            (long long)sh.H, (long long)sh.N, sh.d, std::string(sim::dtype_name(sh.dtype)).c_str(),
                            sh.causal ? " causal" : "");
                for (const auto& e : r.entries)
                    if (!e.ok)
                        std::printf(" %s %s %s err %.3g > bound %.3g;", e.variant.c_str(), fcuda::pass_name(e.pass),
                                    e.tensor.c_str(), e.err, e.bound);
                std::printf("\n");
            }
        } catch (const std::exception& e) {
            row["error"] = e.what();
            row["ok"] = false;
            std::printf("study: shape %zu (N=%lld d=%d) error: %s\n", k, (long long)sh.N, sh.d, e.what());
        }
        rows.push_back(row);
        ++done;
        if (done % 50 == 0) {
            std::printf("study: %d shapes, %lld of %lld comparisons inside the bar\n", done, (long long)inside,
                        (long long)entries);
            std::fflush(stdout);
            if (!write_doc(a.json, rows, started, "shapes")) return 1;
        }
    }
    if (!write_doc(a.json, rows, started, "shapes")) return 1;
    std::printf("study: %d shapes, %lld of %lld comparisons inside the bar\n", done, (long long)inside,
                (long long)entries);
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return inside == entries ? 0 : 1;
}

// flashsim bench --scale: every flash kernel with more than 2^31 elements in a tensor (B = 1,
// H = 2048, N = 16384, d = 128) and at N = 1,048,576 for one head (causal), checked on sampled rows
// against float64. standard is left out: its N x N scores alone would take 1.1 TB and 2.2 TB.
int run_scale(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const std::time_t started = std::time(nullptr);
    struct Case {
        int64_t B, H, N;
        bool causal;
        std::vector<std::pair<int64_t, int64_t>> rows;  // (head, query row)
        int64_t key_tail;
    };
    std::vector<Case> cases{
        {1, 2048, 16384, false, {{0, 0}, {1024, 8191}, {1500, 77}, {2047, 0}, {2047, 16383}}, 0},
        {1, 1, 1048576, true, {{0, 0}, {0, 1}, {0, 131071}, {0, 524288}, {0, 1048575}}, 64},
    };
    json rows = json::array();
    bool all_ok = true;
    for (const Case& c : cases)
        for (const std::string v : {"flash1", "flash2", "flash2h"})
            for (const fcuda::Pass pass : {fcuda::Pass::forward, fcuda::Pass::backward}) {
                if (!a.variants.empty() && std::find(a.variants.begin(), a.variants.end(), v) == a.variants.end())
                    continue;
                if (!fcuda::supports(v, pass) || !fcuda::variant_available(v)) continue;
                sim::Problem p;
                p.batch = c.B;
                p.heads = c.H;
                p.seq = c.N;
                p.head_dim = 128;
                p.dtype = *sim::parse_dtype(a.dtype);
                p.causal = c.causal;
                p.seed = a.seed;
                json row{{"variant", v},
                         {"pass", fcuda::pass_name(pass)},
                         {"batch", c.B},
                         {"heads", c.H},
                         {"seq", c.N},
                         {"head_dim", 128},
                         {"dtype", a.dtype},
                         {"causal", c.causal}};
                try {
                    const fcuda::ScaleCheck r = fcuda::scale_check(p, v, pass, c.rows, c.key_tail);
                    row["elements_per_tensor"] = r.elements_per_tensor;
                    row["rows_checked"] = r.rows_checked;
                    row["nonfinite"] = r.nonfinite;
                    row["err_O"] = r.err_O;
                    row["err_LSE"] = r.err_LSE;
                    row["ref_max"] = r.ref_max;
                    if (pass == fcuda::Pass::backward) {
                        row["err_dQ"] = r.err_dQ;
                        row["err_dK"] = r.err_dK;
                        row["err_dV"] = r.err_dV;
                    }
                    row["gpu_seconds"] = r.gpu_seconds;
                    row["reference_seconds"] = r.reference_seconds;
                    // The bar at scale: a few ulps of the dtype at the output's size (the study
                    // measures the fine-grained bar; here the question is wrong offsets, which
                    // give errors of the order of the values themselves).
                    const double eps = p.dtype == sim::DType::bf16 ? 0x1p-7 : 0x1p-10;
                    const double tol = 4 * eps * std::max(1.0, r.ref_max);
                    const double worst = std::max({r.err_O, r.err_dQ, r.err_dK, r.err_dV});
                    row["tolerance"] = tol;
                    row["ok"] = r.nonfinite == 0 && worst <= tol;
                    all_ok = all_ok && row["ok"].get<bool>();
                    std::printf("scale %-8s %-8s B=%lld H=%lld N=%lld%s: %lld elements/tensor, %lld rows checked, "
                                "max err %.3g (tol %.3g), %lld non-finite, GPU %.1f s, reference %.1f s\n",
                                v.c_str(), fcuda::pass_name(pass), (long long)c.B, (long long)c.H, (long long)c.N,
                                c.causal ? " causal" : "", (long long)r.elements_per_tensor, (long long)r.rows_checked,
                                worst, tol, (long long)r.nonfinite, r.gpu_seconds, r.reference_seconds);
                } catch (const std::exception& e) {
                    row["error"] = e.what();
                    row["ok"] = false;
                    all_ok = false;
                    std::printf("scale %-8s %-8s N=%lld error: %s\n", v.c_str(), fcuda::pass_name(pass),
                                (long long)c.N, e.what());
                }
                std::fflush(stdout);
                rows.push_back(row);
                if (!write_doc(a.json, rows, started)) return 1;
            }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}
#endif

}  // namespace

void register_bench(CLI::App& app, int& rc) {
    auto args = std::make_shared<BenchArgs>();
    auto* cmd =
        app.add_subcommand("bench", "Time the CUDA kernels, check them, compare their traffic with the simulator");
    auto variants = std::make_shared<std::string>(), seqs = std::make_shared<std::string>(),
         dims = std::make_shared<std::string>(), passes = std::make_shared<std::string>("forward");
    cmd->add_option("--variant", *variants,
                    "Comma-separated: standard, flash1, flash2, flash2h (Hopper only) (default: all this GPU runs); "
                    "for --pass step also pairs FWD+BWD, e.g. flash2h+flash2");
    cmd->add_option("--seq,-n", *seqs, "Comma-separated sequence lengths (default 1024,2048,4096,8192,16384)");
    cmd->add_option("--head-dim,-d", *dims, "Comma-separated head dims, 64 and/or 128 (default both)");
    auto* opt_batch = cmd->add_option("--batch,-b", args->batch, "Batch B (default 16384 / N)");
    auto* opt_heads = cmd->add_option("--heads", args->heads, "Heads H (default 2048 / d)");
    cmd->add_option("--dtype", args->dtype, "bf16 or fp16")->capture_default_str();
    cmd->add_flag("--causal", args->causal, "Causal mask");
    cmd->add_option("--pass", *passes,
                    "Comma-separated: forward, backward, step (a training step: the forward then the backward, "
                    "timed as one)")
        ->capture_default_str();
    cmd->add_option("--repeats", args->repeats, "Timed repeats (median reported); 0: none")->capture_default_str();
    cmd->add_option("--warmup", args->warmup, "Untimed warm-up runs")->capture_default_str();
    cmd->add_option("--seed", args->seed, "Input generator seed")->capture_default_str();
    cmd->add_option("--json", args->json, "Write every row (and device, driver, date, commit) to this file");
    cmd->add_flag("--no-check", args->no_check, "Skip the reference and standard comparisons");
    cmd->add_flag("--nvtx", args->nvtx, "Wrap the checked run in an NVTX range 'measure' (for ncu)");
    cmd->add_flag("--counters-probe", args->counters_probe,
                  "What the in-process DRAM counters see for known work after the L2 flush (a warp, reads of 64, "
                  "192 and 576 MiB, a 64 MiB write), beside the work's own bytes");
    cmd->add_flag("--launch-probe", args->launch_probe,
                  "Time an empty kernel, a copy and the decode kernel (B = 1, L = 32k) after the decode rows' L2 "
                  "flush, with the SMs left set to the most shared memory or to the default: what a short call "
                  "pays besides its work");
    cmd->add_flag("--ceilings", args->ceilings,
                  "Measure this GPU's ceilings instead (HBM copy, L2, shared memory, mma.sync, wgmma, exp unit, "
                  "launch) with microbenchmarks; --json writes them");
    cmd->add_flag("--decode", args->decode,
                  "Decode one new token against a KV cache (cuda/decode.cu); without --cache the rows (B, L) = (1, "
                  "32768), (1, 131072), (8, 32768), (64, 8192)");
    auto caches = std::make_shared<std::string>();
    cmd->add_option("--cache", *caches, "--decode: comma-separated KV cache lengths L (batch from --batch, default 1)");
    cmd->add_option("--q-heads", args->q_heads, "--decode: query heads H_q")->capture_default_str();
    cmd->add_option("--kv-heads", args->kv_heads, "--decode: key/value heads H_kv (dividing H_q)")
        ->capture_default_str();
    cmd->add_option("--splits", args->splits, "--decode: splits of the cache (0: choose to fill the SMs)")
        ->capture_default_str();
    cmd->add_option("--trace", args->trace,
                    "--decode: K traced calls a row after the timed ones: where a call's time goes, from the "
                    "kernel's per-block timer stamps")
        ->capture_default_str();
    cmd->add_option("--ring", args->ring,
                    "Ring attention with the kernels over P devices (emulated on this GPU, or --ring-transport nccl)");
    auto* opt_layout =
        cmd->add_option("--ring-layout", args->ring_layout, "--ring: balanced or contiguous")->capture_default_str();
    cmd->add_option("--ring-transport", args->ring_transport,
                    "--ring: emulated (P devices on this GPU, device copies) or nccl (GPUs 0..P-1)")
        ->capture_default_str();
    cmd->add_flag("--fit", args->fit,
                  "The longest N each variant's training step can allocate (B=1, H=16, d=128 unless given; "
                  "allocation only, no kernel runs), beside the simulator's answer");
    cmd->add_option("--study", args->study,
                    "The numerics study: this many random shapes, every kernel and pass against float64 (seed from "
                    "--seed)");
    auto* opt_time_limit =
        cmd->add_option("--time-limit", args->time_limit, "--study: start no new shape after this many seconds");
    auto slice = std::make_shared<std::string>();
    cmd->add_option("--study-slice", *slice, "--study: K/M runs only the shapes whose index is K modulo M (M processes share a study)");
    cmd->add_flag("--scale", args->scale,
                  "The flash kernels past 2^31 elements in a tensor and at N = 1,048,576, checked on sampled rows");
    auto resim = std::make_shared<std::string>();
    cmd->add_option("--resimulate", *resim,
                    "Recompute the simulator's columns of a recorded bench JSON (no GPU needed); prints the "
                    "result, or writes it to the file --json names (the same file to update it)");
    auto* opt_ring = cmd->get_option("--ring");
    auto* opt_study = cmd->get_option("--study");
    auto* opt_transport = cmd->get_option("--ring-transport");
    // every object the options write into is captured (the option flags keep pointers into them)
    cmd->callback([args, variants, seqs, dims, passes, resim, caches, slice, opt_batch, opt_heads, opt_layout,
                   opt_time_limit, opt_ring, opt_study, opt_transport, &rc] {
        if (!resim->empty()) {
            try {
                rc = resimulate(*resim, args->gpu, args->json);
            } catch (const std::exception& e) {
                print_error("bench", e.what());
                rc = 1;
            }
            return;
        }
#if FLASHSIM_HAVE_CUDA
        try {
            // a whole number for a list flag, or an error that names the flag and the item
            auto whole = [](const std::string& item, const char* flag) -> int64_t {
                size_t used = 0;
                int64_t v = 0;
                try {
                    v = std::stoll(item, &used);
                } catch (const std::exception&) { used = 0; }
                if (item.empty() || used != item.size())
                    throw std::runtime_error(std::string(flag) + " takes whole numbers separated by commas, got '" +
                                             item + "'");
                return v;
            };
            args->variants = split_items(*variants, "--variant");
            args->passes = split_items(*passes, "--pass");
            if (!seqs->empty()) {
                args->seqs.clear();
                for (const auto& s : split_items(*seqs, "--seq")) args->seqs.push_back(whole(s, "--seq"));
            }
            if (!dims->empty()) {
                args->head_dims.clear();
                for (const auto& s : split_items(*dims, "--head-dim"))
                    args->head_dims.push_back(whole(s, "--head-dim"));
                args->dims_given = true;
            }
            for (const auto& s : split_items(*caches, "--cache")) {
                const int64_t L = whole(s, "--cache");
                if (L <= 0) throw std::runtime_error("--cache lengths must be >= 1, got " + s);
                args->caches.push_back(L);
            }
            if (args->decode && args->fit) throw std::runtime_error("--decode and --fit are separate runs");
            if (!args->caches.empty() && !args->decode) throw std::runtime_error("--cache goes with --decode");
            if (args->trace != 0 && !args->decode) throw std::runtime_error("--trace goes with --decode");
            if (args->trace < 0 || args->trace > 1000)
                throw std::runtime_error("--trace takes a count of traced calls from 1 to 1000, got " +
                                         std::to_string(args->trace));
            const std::vector<std::string> known = fcuda::variants();
            for (const auto& v : args->variants) {
                const auto [fwd, bwd] = fcuda::step_pair(v);  // "flash2h+flash2": a step's pair
                for (const std::string& k : {fwd, bwd})
                    if (std::find(known.begin(), known.end(), k) == known.end()) {
                        std::string list;
                        for (const auto& n : known) list += (list.empty() ? "" : ", ") + n;
                        print_error("bench", "unknown variant '" + k + "' (" + list +
                                                 "; a step may pair two as FWD+BWD, e.g. flash2h+flash2)");
                        rc = 1;
                        return;
                    }
            }
            if (int(args->decode) + int(args->fit) + int(args->study > 0) + int(args->scale) + int(args->ring != 0) +
                    int(args->ceilings) + int(args->counters_probe) + int(args->launch_probe) >
                1)
                throw std::runtime_error(
                    "--decode, --fit, --study, --scale, --ring, --ceilings, --counters-probe and --launch-probe are "
                    "separate runs");
            if (args->ring < 0 || (opt_ring->count() && args->ring == 0))
                throw std::runtime_error("--ring takes a device count P >= 1");
            if (args->study < 0 || (opt_study->count() && args->study == 0))
                throw std::runtime_error("--study takes a count of shapes >= 1");
            // values the runs would otherwise take silently: each refused with what it takes
            for (int64_t n : args->seqs)
                if (n < 1 || n > (int64_t{1} << 24))
                    throw std::runtime_error("--seq takes lengths from 1 to 16,777,216, got " + std::to_string(n));
            for (int64_t d : args->head_dims)
                if (d < 1 || d > 1024)
                    throw std::runtime_error(
                        "--head-dim takes sizes from 1 to 1024 (the kernels run 64 and 128), got " + std::to_string(d));
            if (opt_batch->count() && args->batch < 1)
                throw std::runtime_error("--batch must be >= 1, got " + std::to_string(args->batch) +
                                         " (leave it out for 16384 / N)");
            if (opt_heads->count() && args->heads < 1)
                throw std::runtime_error("--heads must be >= 1, got " + std::to_string(args->heads) +
                                         " (leave it out for 2048 / d)");
            if (args->repeats < 0) throw std::runtime_error("--repeats must be >= 0 (0: no timed repeats)");
            if (args->warmup < 0) throw std::runtime_error("--warmup must be >= 0");
            if ((opt_layout->count() || opt_transport->count()) && args->ring == 0)
                throw std::runtime_error("--ring-layout and --ring-transport go with --ring P");
            if (!slice->empty() && args->study == 0) throw std::runtime_error("--study-slice goes with --study");
            if (opt_time_limit->count() && args->study == 0) throw std::runtime_error("--time-limit goes with --study");
            if (opt_time_limit->count() && !(args->time_limit > 0))
                throw std::runtime_error("--time-limit takes a number of seconds > 0");
            if (!args->json.empty()) {  // a path that cannot be written fails now, not after the whole run
                namespace fs = std::filesystem;
                const fs::path out(args->json);
                const fs::path dir = out.has_parent_path() ? out.parent_path() : fs::path(".");
                std::error_code ec;
                if (fs::is_directory(out, ec))
                    throw std::runtime_error("--json " + args->json + " is a folder; give a file name, e.g. " +
                                             (out / "bench.json").string());
                if (!fs::is_directory(dir, ec) || ::access(dir.c_str(), W_OK) != 0)
                    throw std::runtime_error("--json " + args->json + ": cannot write into " + dir.string() +
                                             " (no such folder, or not writable); choose another path");
            }
            for (const auto& v : args->variants)
                if (v.find('+') != std::string::npos &&
                    std::find(args->passes.begin(), args->passes.end(), "step") == args->passes.end())
                    throw std::runtime_error("'" + v + "' pairs a forward with a backward: it runs with --pass step");
            if (!slice->empty()) {
                const auto cut = slice->find('/');
                if (cut == std::string::npos) throw std::runtime_error("--study-slice takes K/M, e.g. 0/4");
                args->slice = static_cast<int>(whole(slice->substr(0, cut), "--study-slice K/M"));
                args->slices = static_cast<int>(whole(slice->substr(cut + 1), "--study-slice K/M"));
                if (args->slices < 1 || args->slice < 0 || args->slice >= args->slices)
                    throw std::runtime_error("--study-slice K/M needs 0 <= K < M, got " + *slice);
            }
            rc = args->decode  ? run_decode_bench(*args)
                 : args->fit   ? run_fit_bench(*args)
                 : args->study ? run_study(*args)
                 : args->scale ? run_scale(*args)
                 : args->ring  ? run_ring_bench(*args)
                               : run_bench(*args);
        } catch (const std::exception& e) {
            print_error("bench", e.what());
            rc = 1;
        }
#else
        (void)args;
        (void)opt_batch, (void)opt_heads, (void)opt_layout, (void)opt_time_limit, (void)opt_ring, (void)opt_study,
            (void)opt_transport;
        std::cerr << "flashsim bench: this build has no CUDA backend (built without nvcc); recorded H200 results are "
                     "in results/h200/bench.json\n";
        rc = 2;
#endif
    });
}
