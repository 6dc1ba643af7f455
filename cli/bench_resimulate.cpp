// cli/bench_resimulate.cpp — the simulator's and the kernel model's columns of a bench row, for a fresh
// measurement and for `flashsim bench --resimulate FILE` (no GPU) alike.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>
#include <iostream>
#include <optional>
#include <string>
#include <tuple>
#include <vector>

#include "cli/bench.hpp"
#include "report/kernel_report.hpp"
#include "cli/commands.hpp"
#include "report/kernel_bridge.hpp"
#include "sim/kernel_config.hpp"
#include "sim/kernel_model.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

using nlohmann::json;

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
    std::string stem = rp.filename().string();
    stem = stem.substr(0, stem.find_first_of("._"));
    // a card's folder holds its probe beside its bench file (results/h200/counters_probe.json); a file
    // named for its card (h200.json) has the probe named for the card beside it (h200_counters_probe.json)
    const fs::path probe =
        rp.parent_path() / (stem == "bench" ? std::string("counters_probe.json") : stem + "_counters_probe.json");
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

void simulate_row(json& row, const sim::Machine& machine, std::optional<double> residue) {
    for (const char* k : {"sim_hbm_read_bytes", "sim_hbm_write_bytes", "sim_l2_hbm_read_bytes",
                          "sim_l2_hbm_write_bytes", "sim_l2_hit_rate", "sim_l2_end_dirty_bytes",
                          "sim_l2_counters_view_bytes", "counters_residue_bytes", "dram_over_counters_view", "sim_note",
                          "sim_block_rows", "sim_block_cols", "dram_over_sim", "dram_over_sim_l2"})
        row.erase(k);
    row["sim_hbm_read_bytes"] = nullptr;
    row["sim_hbm_write_bytes"] = nullptr;
    if (!row.contains("tiles")) return;
    if (row["pass"] == "step" && !row.contains("tiles_forward")) return;
    const sim::KernelRun run = report::kernel_run_of_row(row);
    const sim::Problem& p = run.problem;
    sim::Config c;
    try {
        c = sim::sim_config(run);  // the bridge: the same config the bench and the live run walk
    } catch (const sim::Error& e) {
        row["sim_note"] = std::string(e.what()) + "; not simulated";
        return;
    }
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
const report::ChosenRates& RatesCache::get(sim::DType dtype) {
    auto it = chosen_.find(dtype);
    if (it == chosen_.end()) it = chosen_.emplace(dtype, report::choose_rates(machine_, dtype, choice_)).first;
    return it->second;
}

void predict_row(json& row, RatesCache& cache) {
    const sim::Machine& machine = cache.machine();
    for (const char* k : {"predicted_ms", "predicted_over_measured", "predicted_bound", "predicted_uncertain",
                          "predicted_uncertain_why", "predicted_ceilings", "predicted_note", "predicted_parts_ms",
                          "predicted_machine", "predicted_rung"})
        row.erase(k);
    if (!row.contains("tiles") || !row.contains("ms_median")) return;
    if (row["pass"] == "step" && !row.contains("tiles_forward")) return;
    try {
        const sim::KernelRun run = report::kernel_run_of_row(row);
        const sim::Problem& p = run.problem;
        const report::ChosenRates& chosen = cache.get(p.dtype);
        const sim::KernelRates& rates = chosen.rates;
        std::vector<sim::Pass> parts;
        if (run.pass != sim::Pass::backward) parts.push_back(sim::Pass::forward);
        if (run.pass != sim::Pass::forward) parts.push_back(sim::Pass::backward);
        double ms = 0;
        std::string bound, why;
        bool uncertain = false;
        json parts_ms = json::object();  // where the time goes: each resource alone, ms (a step: summed)
        for (const sim::Pass part : parts) {
            // the bridge: the kernel's profile as the row's kernel ran (tiles, grid, lone middles, dQ schedule)
            const sim::KernelPrediction kp = sim::predict_kernel(p, sim::run_profile(run, part), rates, machine);
            ms += kp.predicted_ms;
            bound += (bound.empty() ? "" : "+") + kp.bound;
            for (const auto& c : kp.components) parts_ms[c.name] = parts_ms.value(c.name, 0.0) + c.seconds * 1e3;
            if (kp.uncertain) {
                uncertain = true;
                why += (why.empty() ? "" : "; ") + kp.uncertain_why;
            }
        }
        if (chosen.kind == "datasheet") {  // no card of this architecture measured: peak figures, a lower bound
            uncertain = true;
            why += std::string(why.empty() ? "" : "; ") +
                   "datasheet ceilings: no ceiling of this card or of one of its architecture is measured, so the "
                   "tensor cores run at the datasheet's peak on every instruction path, HBM at its full datasheet "
                   "rate (the H100 and H200 stream 0.8-0.9 of theirs) and launches cost nothing: a lower bound";
        }
        row["predicted_ms"] = ms;
        row["predicted_over_measured"] = ms / row["ms_median"].get<double>();
        row["predicted_bound"] = bound;
        row["predicted_parts_ms"] = parts_ms;
        row["predicted_uncertain"] = uncertain;
        if (uncertain) row["predicted_uncertain_why"] = why;
        row["predicted_ceilings"] = chosen.kind;
        row["predicted_machine"] = machine.name;
        row["predicted_rung"] = "this kernel";  // rung 3 of docs/timing.md's ladder
    } catch (const std::exception& e) { row["predicted_note"] = std::string("kernel model: ") + e.what(); }
}

// The simulator's ring on P GPUs for a ring row, the kernel's model timing each block (with the
// preset's measured ceilings where it has them); an error is recorded in the row, not thrown.
json sim_ring_json(const sim::RingProblem& rp, const sim::Machine& machine, const std::string& kernel, bool grads) {
    try {
        sim::RingConfig c;
        c.compute = sim::RingCompute::kernel;
        c.kernel = kernel;
        if (const auto rates = report::measured_rates(machine, rp.attn.dtype, "")) c.rates = *rates;
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

std::string preset_for(const std::string& given, const std::string& device, std::string* why) {
    if (!given.empty()) return given;
    if (const auto p = sim::preset_for_device(device)) {
        if (why) *why = "predictions for the " + *p + " preset (the card \"" + device + "\"; --gpu NAME to choose)";
        return *p;
    }
    if (why)
        *why = (device.empty() ? std::string("no device recorded") : "no preset for \"" + device + "\"") +
               "; predictions for the H200 preset (--gpu NAME to choose)";
    return "H200";
}

// flashsim bench --resimulate FILE [--json OUT]: recompute the simulator's columns of recorded rows and
// write the document to OUT (which may be FILE itself, to update it), or print it when no OUT is named:
// a recorded file changes only when its user names it.
int resimulate(const std::string& path, const std::string& gpu, const std::string& out_path,
               const std::string& ceilings) {
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
            return refuse(index, "has dtype " + row["dtype"].dump() + "; the kernels store bf16, fp16 or fp8");
        if (dt && *dt == sim::DType::fp8 && (variant != "flash2h" || pass != "forward"))
            return refuse(index,
                          "has dtype \"fp8\" with " + variant + " " + pass +
                              "; the model covers fp8 for flash2h's forward only (FlashAttention-3's FP8 forward)");
    }
    if (measured == 0) {
        print_error("bench", path +
                                 " has no measured rows (kernel rows with \"ms_median\" or ring rows) to "
                                 "recompute; nothing was changed");
        return 1;
    }
    std::string chose;
    const std::string preset = preset_for(gpu, doc.value("device", ""), &chose);
    if (!chose.empty()) std::cerr << "resimulate: " << chose << "\n";
    const sim::Machine& machine = sim::find_machine(preset);
    RatesCache rates(machine, ceilings);
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
        predict_row(row, rates);
        ++n;
    }
    doc["simulated_with"] = "flashsim bench --resimulate (simulator of this checkout, " + preset + " preset)";
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

}  // namespace bench
