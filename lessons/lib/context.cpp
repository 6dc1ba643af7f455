// lessons/lib/context.cpp — the computed values a lesson's placeholders look up: each
// configuration's simulator result (as report::result_json prints it, plus a few derived views),
// the machine presets, the softmax example, error comparisons against the reference, measured
// rows from the recorded bench results; and the lookup of a dotted path among them.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <map>

#include "lessons/lib/internal.hpp"
#include "report/figure2.hpp"
#include "report/fp8.hpp"
#include "report/kernel_report.hpp"
#include "report/memory.hpp"
#include "report/ring.hpp"
#include "report/report.hpp"
#include "report/results.hpp"
#include "sim/footprint.hpp"
#include "sim/gradient_walk.hpp"
#include "sim/reference.hpp"
#include "sim/softmax.hpp"

namespace lessons::detail {

using nlohmann::json;

// ---------------------------------------------------------------- [configurations]
sim::Result simulate_at_load(const Source& s, Pos pos, const ConfigSpec& c) {
    const std::string& name = c.name;
    try {
        const sim::Machine& m = sim::find_machine(c.gpu);
        // Refuse loops too long to walk at load time before walking them.
        const int64_t sram = c.config.sram_bytes > 0 ? c.config.sram_bytes : m.sram_bytes;
        const sim::BlockChoice bc =
            sim::choose_blocks(c.problem, c.config.algo, sram, c.config.block_rows, c.config.block_cols);
        const int64_t n = c.problem.seq;
        const double steps =
            std::ceil(double(n) / double(bc.block_rows)) * std::ceil(double(n) / double(bc.block_cols));
        if (steps > double(limits().max_tile_steps))
            s.fail(pos, "[config." + name + "]: blocks of " + std::to_string(bc.block_rows) + " x " +
                            std::to_string(bc.block_cols) + " make " + report::group_digits(int64_t(steps)) +
                            " tile steps; a lesson must load in milliseconds, so at most " +
                            report::group_digits(limits().max_tile_steps) +
                            " (use larger blocks, a larger sram or a smaller seq)");
        return sim::simulate(c.problem, m, c.config);
    } catch (const sim::Error& e) {
        // The simulator speaks in CLI flags; a lesson's keys are spelled with underscores.
        std::string msg = e.what();
        for (const auto& [from, to] : std::vector<std::pair<std::string, std::string>>{{"--block-rows", "block_rows"},
                                                                                       {"--block-cols", "block_cols"},
                                                                                       {"--sram", "sram"},
                                                                                       {"--window", "window"},
                                                                                       {"--grid", "grid ="}}) {
            for (size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size()))
                msg.replace(at, from.size(), to);
        }
        s.fail(pos, "[config." + name + "]: the simulator refuses this configuration: " + msg);
    }
}

// The backward's gradients derived one product at a time in float64, with finite differences beside
// them (sim::gradient_walk), for a numerics configuration with a backward pass small enough to print:
// `grad.P.I.J`, `grad.dS.I.J`, `grad.D.I`, `grad.dQ.I.K`, `grad.fd_dQ.I.K`, ..., `grad.rows.NAME`
// (row `grad.row` of an N x N or N x d matrix as text), and `grad.tiled_max_abs_diff`, the simulator's
// own tiled float32 gradients against the float64 ones.
json gradient_json(const sim::Result& r) {
    const sim::GradientWalk w = sim::gradient_walk(r.problem);
    const int64_t n = w.seq, d = w.head_dim, row = r.record ? r.record->row : 0;
    json j = {{"row", row},
              {"scale", w.scale},
              {"step", w.step},
              {"max_abs_diff", w.max_abs_diff},
              {"max_abs_gradient", w.max_abs_gradient},
              {"D", w.D},
              {"D_from_P", w.D_from_P}};
    const std::pair<const char*, const std::vector<double>*> mats[] = {
        {"P", &w.P},   {"dP", &w.dP}, {"dS", &w.dS},       {"O", &w.O},         {"dV", &w.dV},
        {"dQ", &w.dQ}, {"dK", &w.dK}, {"fd_dQ", &w.fd_dQ}, {"fd_dK", &w.fd_dK}, {"fd_dV", &w.fd_dV}};
    for (const auto& [name, m] : mats) {
        const int64_t cols = static_cast<int64_t>(m->size()) / n;
        json rows = json::array();
        for (int64_t i = 0; i < n; ++i)
            rows.push_back(std::vector<double>(m->begin() + i * cols, m->begin() + (i + 1) * cols));
        j[name] = rows;
        std::string text;
        for (int64_t c = 0; c < cols; ++c) {
            char buf[32];
            std::snprintf(buf, sizeof buf, "%s%+.4f", c ? "  " : "", (*m)[static_cast<size_t>(row * cols + c)]);
            text += buf;
        }
        j["rows"][name] = text;
    }
    double tiled = 0;
    const std::pair<const std::optional<sim::TensorF>*, const std::vector<double>*> grads[] = {
        {&r.dQ, &w.dQ}, {&r.dK, &w.dK}, {&r.dV, &w.dV}};
    for (const auto& [t, g] : grads)
        for (int64_t i = 0; i < n * d; ++i)
            tiled = std::max(tiled, std::abs(double((*t)->data[size_t(i)]) - (*g)[size_t(i)]));
    j["tiled_max_abs_diff"] = tiled;
    return j;
}

json config_json(const sim::Result& r) {
    json j = report::result_json(r);
    // Tensors the algorithm never touches are left out of the JSON; a lesson may still ask for
    // them ("flash never writes S"), so they are present here with zero bytes.
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const std::string t(sim::tensor_name(static_cast<sim::Tensor>(i)));
        if (!j["tensors"].contains(t)) j["tensors"][t] = {{"read_bytes", 0}, {"write_bytes", 0}};
    }
    for (auto& [k, v] : j["tensors"].items()) {
        (void)k;
        v["total"] = v["read_bytes"].get<int64_t>() + v["write_bytes"].get<int64_t>();
    }
    j["hbm"]["total"] = j["hbm"]["read_bytes"].get<int64_t>() + j["hbm"]["write_bytes"].get<int64_t>();
    j["machine"] = report::machine_json(r.machine);
    j["elem_bytes"] = r.problem.elem_bytes();
    j["steps_per_head"] = r.trace.steps_per_head;
    j["events"] = report::events_json(r.trace, 512);
    j["event_list"] = report::events_text(r.trace, 64);
    // Per-kind counts over head 0's kept events (loads, stores, computes, rescales).
    json kinds = {{"load", 0}, {"store", 0}, {"compute", 0}, {"rescale", 0}};
    for (const auto& e : r.trace.events)
        kinds[std::string(sim::event_kind_name(e.kind))] =
            kinds[std::string(sim::event_kind_name(e.kind))].get<int64_t>() + 1;
    j["event_counts"] = kinds;
    if (r.output) {
        json row = json::array();
        for (int64_t k = 0; k < std::min<int64_t>(r.problem.head_dim, 8); ++k) row.push_back(r.output->at(0, 0, k));
        j["output_row0"] = row;
    }
    if (r.record) {
        json blocks = json::array();
        for (const auto& b : r.record->blocks)
            blocks.push_back({{"block", b.block},
                              {"first_key", b.first_key},
                              {"block_max", b.block_max},
                              {"running_max", b.running_max_after},
                              {"running_sum", b.running_sum_after},
                              {"rescale", b.rescale}});
        j["record"] = {{"row", r.record->row}, {"blocks", blocks}, {"count", r.record->blocks.size()}};
    }
    const auto& p = r.problem;
    if (r.dQ && r.dK && r.dV && p.seq * p.seq * p.head_dim <= (int64_t{1} << 16) && !p.causal && p.window == 0 &&
        p.pad_left == 0)
        j["grad"] = gradient_json(r);
    return j;
}

void add_machines(Context& ctx) {
    for (const auto& m : sim::machine_presets()) {
        std::string key = m.name;
        std::replace(key.begin(), key.end(), '-', '_');
        ctx.root["machine"][key] = report::machine_json(m);
    }
}

// ---------------------------------------------------------------- [softmax]
void add_softmax(const Source& s, Pos pos, const SoftmaxExample& ex, Context& ctx) {
    try {
        const auto r = sim::stream_softmax(ex.scores, ex.block, ex.values, ex.precision);
        json j = report::softmax_json(r);
        j["count"] = ex.scores.size();
        j["block"] = ex.block;
        j["block_count"] = r.record.blocks.size();
        // The other precision too, so a lesson can show that the difference is rounding.
        const auto other =
            sim::stream_softmax(ex.scores, ex.block, ex.values,
                                ex.precision == sim::Precision::fp32 ? sim::Precision::fp64 : sim::Precision::fp32);
        j[ex.precision == sim::Precision::fp32 ? "fp64" : "fp32"] = report::softmax_json(other);
        // The blocks taken as split-KV's splits instead (float64): each on its own, then merged.
        if (!ex.values.empty()) {
            const sim::RowSplitMerge sm = sim::split_merge_row(ex.scores, ex.values, ex.block);
            json parts = json::array();
            for (const auto& sp : sm.splits)
                parts.push_back({{"first", sp.first},
                                 {"count", sp.count},
                                 {"max", sp.state.m},
                                 {"sum", sp.state.l},
                                 {"lse", sp.lse},
                                 {"weight", sp.weight},
                                 {"out", sp.out}});
            double diff = 0;
            for (size_t k = 0; k < sm.out.size() && k < r.streamed.size(); ++k)
                diff = std::max(diff, std::abs(sm.out[k] - r.streamed[k]));
            j["split"] = {{"splits", parts},
                          {"count", sm.splits.size()},
                          {"lse", sm.lse},
                          {"out", sm.out},
                          {"max_abs_diff_vs_streamed", diff}};
        }
        ctx.root["softmax"] = j;
    } catch (const sim::Error& e) { s.fail(pos, std::string("[softmax]: ") + e.what()); }
}

// ---------------------------------------------------------------- [error]
const sim::Result& output_of(const Source& s, const std::string& where, const std::string& cfg, Pos pos,
                             const std::map<std::string, sim::Result>& results) {
    auto it = results.find(cfg);
    if (it == results.end()) s.fail(pos, where + ": no configuration named '" + cfg + "'");
    if (!it->second.output)
        s.fail(pos, where + ": config '" + cfg + "' has no output; add numerics = \"on\" to [config." + cfg + "]");
    return it->second;
}

void add_error(const Source& s, const ErrorSpec& e, const std::map<std::string, sim::Result>& results,
               const std::map<std::string, ConfigSpec>& configs, Context& ctx) {
    const std::string where = "[error." + e.name + "]";
    const sim::Result& actual = output_of(s, where, e.actual, e.at_actual, results);
    const std::string& exp = e.expected;
    sim::ErrorStats st;
    json expected_row0 = json::array();
    if (exp == "reference" || exp.rfind("reference:", 0) == 0) {
        sim::Problem p = actual.problem;
        if (exp != "reference") {
            const std::string other = exp.substr(10);
            auto it = configs.find(other);
            if (it == configs.end()) s.fail(e.at_expected, where + ": no configuration named '" + other + "'");
            p = it->second.problem;
            if (p.seq != actual.problem.seq || p.head_dim != actual.problem.head_dim ||
                p.batch != actual.problem.batch || p.heads != actual.problem.heads || p.seed != actual.problem.seed ||
                p.dtype != actual.problem.dtype)
                s.fail(e.at_expected, where + ": '" + other +
                                          "' and the actual config must have the same seq, head_dim, "
                                          "batch, heads, dtype and seed (same inputs)");
        }
        const sim::Inputs in = sim::generate_inputs(p);
        const sim::TensorD ref = sim::attention_reference(p, in.Q, in.K, in.V);
        st = sim::validate(*actual.output, ref, actual.problem.dtype);
        for (int64_t k = 0; k < std::min<int64_t>(p.head_dim, 8); ++k) expected_row0.push_back(ref.at(0, 0, k));
    } else {
        const sim::Result& ex = output_of(s, where, exp, e.at_expected, results);
        if (ex.output->size() != actual.output->size())
            s.fail(e.at_expected, where + ": '" + exp + "' and the actual config have outputs of different shapes");
        st = sim::validate(*actual.output, *ex.output, actual.problem.dtype);
        for (int64_t k = 0; k < std::min<int64_t>(ex.problem.head_dim, 8); ++k)
            expected_row0.push_back(ex.output->at(0, 0, k));
    }
    if (st.nonfinite > 0)
        s.fail(e.at_actual, where + ": the actual output has " + std::to_string(st.nonfinite) + " non-finite values");
    json j = report::error_json(st);
    j["identical_fraction"] = st.count ? static_cast<double>(st.identical) / static_cast<double>(st.count) : 0.0;
    json actual_row0 = json::array();
    for (int64_t k = 0; k < std::min<int64_t>(actual.problem.head_dim, 8); ++k)
        actual_row0.push_back(actual.output->at(0, 0, k));
    j["actual_row0"] = actual_row0;
    j["expected_row0"] = expected_row0;
    ctx.root["error"][e.name] = j;
}

// ---------------------------------------------------------------- [footprint, fit, decode, ring]
namespace {
// The shape a [footprint.*] or [fit.*] table was given, so that prose can state it without typing it.
void add_shape(const sim::Problem& p, json& j) {
    j["batch"] = p.batch;
    j["heads"] = p.heads;
    j["head_dim"] = p.head_dim;
    j["elem_bytes"] = p.elem_bytes();
}
// [kernel.NAME]: the kernel model at the preset's datasheet rates (report::kernel_prediction_json),
// with the parts in milliseconds by name and the problem's FLOPs and HBM bytes a second.
json kernel_json(const MemorySpec& spec, const sim::Machine& m) {
    const sim::KernelProfile k = sim::kernel_profile(spec.kernel, spec.pass, spec.shape.head_dim, spec.shape.causal);
    const sim::KernelPrediction pr = sim::predict_kernel(spec.shape, k, sim::datasheet_rates(m), m);
    json j = report::kernel_prediction_json(pr);
    for (const auto& c : pr.components) j["parts_ms"][c.name] = c.seconds * 1e3;
    j["seq"] = spec.shape.seq;
    j["dtype"] = std::string(sim::dtype_name(spec.shape.dtype));
    j["elem_bytes"] = spec.shape.elem_bytes();
    j["out_bytes"] = spec.shape.out_bytes();
    j["batch"] = spec.shape.batch;
    j["heads"] = spec.shape.heads;
    j["head_dim"] = spec.shape.head_dim;
    const bool fp8 = spec.shape.dtype == sim::DType::fp8;
    j["tensor_flops"] = fp8 ? m.matmul_flops_fp8 : m.matmul_flops;
    j["hbm_bandwidth"] = m.hbm_bandwidth;
    j["exp_rate"] = m.exp_rate;
    return j;
}
}  // namespace

void add_memory(const Source& s, const MemorySpec& spec, Context& ctx) {
    const char* section = spec.kind == MemorySpec::kFootprint ? "footprint"
                          : spec.kind == MemorySpec::kFit     ? "fit"
                          : spec.kind == MemorySpec::kRing    ? "ring"
                          : spec.kind == MemorySpec::kKernel  ? "kernel"
                          : spec.kind == MemorySpec::kFp8     ? "fp8"
                                                              : "decode";
    const std::string where = std::string("[") + section + "." + spec.name + "]";
    try {
        const sim::Machine& m = sim::find_machine(spec.gpu);
        json j;
        if (spec.kind == MemorySpec::kFootprint) {
            j = report::footprint_json(sim::footprint(spec.shape, spec.algo, spec.pass, spec.kernel), m);
            j["seq"] = spec.shape.seq;
            add_shape(spec.shape, j);
        } else if (spec.kind == MemorySpec::kFit) {
            const double cap = spec.capacity > 0 ? spec.capacity : sim::usable_memory(m);
            const sim::FitResult f = sim::longest_fit(spec.shape, spec.algo, spec.pass, cap);
            j = report::fit_json(spec.shape, m, {{spec.algo, spec.pass, f}})["rows"][0];
            j["capacity_bytes"] = cap;
            j["hbm_bytes"] = m.hbm_bytes;
            add_shape(spec.shape, j);
        } else if (spec.kind == MemorySpec::kKernel) {
            j = kernel_json(spec, m);
        } else if (spec.kind == MemorySpec::kFp8) {
            j = report::fp8_study_json(sim::fp8_study(spec.fp8));
        } else if (spec.kind == MemorySpec::kRing) {
            const sim::RingResult r = sim::simulate_ring(spec.ring, m, sim::RingConfig{});
            j = report::ring_json(r);
        } else {
            const sim::DecodeProblem& p = spec.decode;
            p.validate();
            const double tiles =
                std::ceil(double(p.kv_len) / double(std::max<int64_t>(1, spec.decode_config.tile_keys)));
            if (double(p.batch) * double(p.kv_heads) * tiles > double(limits().max_tile_steps))
                s.fail(spec.pos, where + ": batch x kv_heads x tiles above " +
                                     report::group_digits(limits().max_tile_steps) +
                                     "; a lesson must load in milliseconds");
            const sim::DecodeResult r = sim::simulate_decode(p, m, spec.decode_config);
            j = report::decode_json(r, m, sim::ErrorStats{});
            j["kv_cache_bytes"] =
                2.0 * double(p.batch * p.kv_heads * p.kv_len * p.head_dim) * double(sim::dtype_bytes(p.dtype));
            j["predicted_ms"] = r.total_s * 1e3;
            j["split_kernel_ms"] = r.split_kernel_s * 1e3;
            j["merge_ms"] = r.merge_s * 1e3;
        }
        ctx.root[section][spec.name] = j;
    } catch (const sim::Error& e) { s.fail(spec.pos, where + ": the simulator refuses this: " + e.what()); }
}

// ---------------------------------------------------------------- [figure2]
void add_figure2(const Source& s, Pos pos, Context& ctx) {
    try {
        const sim::Machine& m = sim::find_machine("A100-40GB");
        // the eager kernels' recorded rates, from the results beside the lessons (none: at the HBM rate)
        namespace fs = std::filesystem;
        const fs::path dir = fs::path(s.file).parent_path();
        const auto files = report::default_eager_files({report::results_dir_beside(dir.string())});
        const sim::EagerRates eager = files.empty() ? sim::EagerRates{} : report::read_eager_rates(files, "datasheet");
        ctx.root["figure2"] =
            report::figure2_json(sim::figure2(sim::figure2_problem(), m, sim::datasheet_rates(m), eager));
    } catch (const sim::Error& e) { s.fail(pos, std::string("[figure2]: ") + e.what()); }
}

// ---------------------------------------------------------------- [measured]
namespace {
std::string measured_file(const std::string& lesson_file) {
    if (const char* env = std::getenv("FLASHSIM_MEASURED")) return env;
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(lesson_file).parent_path();
    return (fs::path(report::results_dir_beside(dir.string())) / "h200" / "bench.json").lexically_normal().string();
}
}  // namespace

namespace {
// A results file read tolerantly: `why` says what is wrong when it cannot be used.
struct ResultsFile {
    json doc;
    std::string why;
};
ResultsFile read_results(const std::string& path) {
    ResultsFile r;
    std::ifstream f(path);
    if (!f) {
        r.why = "no measurements recorded yet (" + path + " is absent)";
        return r;
    }
    try {
        r.doc = json::parse(f);
        if (!r.doc.is_object() || !r.doc.contains("rows") || !r.doc["rows"].is_array()) {
            r.why = path + " has no \"rows\" list";
            r.doc = json();
        }
    } catch (const std::exception&) { r.why = path + " is not valid JSON"; }
    return r;
}
}  // namespace

void add_measured(const std::string& lesson_file, const std::vector<MeasuredSpec>& specs, Context& ctx) {
    namespace fs = std::filesystem;
    const std::string path = measured_file(lesson_file);
    std::map<std::string, ResultsFile> files;  // by the spec's `file` ("" : h200/bench.json)
    files[""] = read_results(path);
    ctx.root["measured"] = json::object();
    const ResultsFile& main = files[""];
    ctx.root["measured"]["status"] =
        main.why.empty()
            ? "measured on " + main.doc.value("device", std::string("a GPU")) + " (" + report::run_span(main.doc) + ")"
            : main.why;
    ctx.root["measured"]["available"] = main.why.empty() ? 1 : 0;
    for (const MeasuredSpec& m : specs) {
        if (!files.count(m.file)) {
            const std::string root = report::results_dir_beside(fs::path(lesson_file).parent_path().string());
            files[m.file] = read_results((fs::path(root) / m.file).lexically_normal().string());
        }
        const ResultsFile& rf = files[m.file];
        ctx.root["measured"]["found"][m.name] = 0;  // measured.found.NAME: 1 once a row matched
        if (!rf.why.empty()) {
            ctx.missing_roots.insert("measured." + m.name);
            continue;
        }
        bool found = false;
        for (const auto& row : rf.doc["rows"]) {
            // Read tolerantly: a row missing a field simply does not match.
            if (!row.is_object()) continue;
            auto str = [&](const char* key) {
                return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
            };
            auto num = [&](const char* key) {
                return row.contains(key) && row[key].is_number() ? row[key].get<double>() : -1.0;
            };
            auto matches = [&](const char* key, int64_t want) { return want < 0 || num(key) == double(want); };
            const bool rc = row.contains("causal") && row["causal"].is_boolean() ? row["causal"].get<bool>() : false;
            if (str("variant") == m.variant && (str("pass").empty() ? "forward" : str("pass")) == m.pass &&
                matches("seq", m.seq) && matches("head_dim", m.head_dim) && matches("batch", m.batch) &&
                matches("heads", m.heads) && matches("kv_len", m.kv_len) && rc == m.causal &&
                (m.dtype.empty() || str("dtype") == m.dtype) && str("mode") == m.mode && !row.contains("error")) {
                json r = row;
                // Derived sums; null (rendered n/a) when a part was not recorded.
                auto sum2 = [&](const char* a, const char* b) {
                    return r.contains(a) && r.contains(b) && r[a].is_number() && r[b].is_number()
                               ? json(r[a].get<double>() + r[b].get<double>())
                               : json(nullptr);
                };
                r["dram_bytes"] = sum2("dram_read_bytes", "dram_write_bytes");
                r["sim_hbm_bytes"] = sum2("sim_hbm_read_bytes", "sim_hbm_write_bytes");
                r["sim_l2_hbm_bytes"] = sum2("sim_l2_hbm_read_bytes", "sim_l2_hbm_write_bytes");
                r["measured_on"] = rf.doc.value("device", std::string("a GPU")) + " (" + report::run_span(rf.doc) + ")";
                ctx.root["measured"][m.name] = r;
                ctx.root["measured"]["found"][m.name] = 1;
                found = true;
                break;
            }
        }
        if (!found) ctx.missing_roots.insert("measured." + m.name);
    }
}

// ---------------------------------------------------------------- [ceiling]
void add_ceiling(const Source& s, const std::string& lesson_file, const CeilingSpec& spec, Context& ctx) {
    namespace fs = std::filesystem;
    const std::string where = "[ceiling." + spec.name + "]";
    const std::string results = report::results_dir_beside(fs::path(lesson_file).parent_path().string());
    const std::string path = (fs::path(results) / spec.file).lexically_normal().string();
    const std::string root = "ceiling." + spec.name;
    std::ifstream f(path);
    if (!f) {
        // Like a measured row: a checkout without recorded results still loads, saying why.
        ctx.missing_roots.insert(root);
        ctx.missing_why[root] = "no ceilings recorded yet (" + path + " is absent)";
        ctx.root["ceiling"][spec.name] = nullptr;
        return;
    }
    json doc;
    try {
        doc = json::parse(f);
    } catch (const std::exception&) { s.fail(spec.pos, where + ": " + path + " is not valid JSON"); }
    if (!doc.is_object() || !doc.contains("ceilings") || !doc["ceilings"].is_array())
        s.fail(spec.pos, where + ": " + path +
                             " has no \"ceilings\" list (record one with `flashsim bench "
                             "--ceilings --json FILE` on the GPU)");
    std::vector<std::string> names;
    for (const auto& c : doc["ceilings"]) {
        if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) continue;
        const std::string name = c["name"].get<std::string>();
        names.push_back(name);
        if (name != spec.name) continue;
        if (!c.contains("value") || !c["value"].is_number() || !(c["value"].get<double>() > 0))
            s.fail(spec.pos, where + ": the ceiling '" + name + "' in " + path + " has no positive value");
        const std::string device = doc.value("device", std::string("a GPU"));
        const std::string date = doc.value("date", std::string("?")).substr(0, 10);
        ctx.root["ceiling"][spec.name] = {{"value", c["value"].get<double>()},
                                          {"unit", c.value("unit", std::string())},
                                          {"method", c.value("method", std::string())},
                                          {"device", device},
                                          {"date", date},
                                          {"measured_on", device + " (" + date + ")"},
                                          {"source", std::getenv("FLASHSIM_MEASURED") ? path : "results/" + spec.file}};
        return;
    }
    s.fail(spec.pos, where + ": " + path + " has no ceiling named '" + spec.name + "' (it has: " + join(names) + ")");
}

// ---------------------------------------------------------------- [lookup]
Value lookup_in(const Context& ctx, const json* answer, const std::string& path) {
    std::vector<std::string> segs;
    {
        std::string cur;
        for (char c : path) {
            if (c == '.') {
                segs.push_back(cur);
                cur.clear();
            } else
                cur += c;
        }
        segs.push_back(cur);
    }
    const json* node = nullptr;
    std::string walked = segs[0];
    if (segs[0] == "answer") {
        if (!answer) throw ExprError("'answer' is only defined in an exercise's goal", 0);
        node = answer;
    } else {
        if (segs.size() >= 2 && ctx.missing_roots.count(segs[0] + "." + segs[1])) {
            const std::string root = segs[0] + "." + segs[1];
            const auto why = ctx.missing_why.find(root);
            throw Missing(
                root + ": " +
                (why != ctx.missing_why.end() ? why->second : ctx.root["measured"]["status"].get<std::string>()));
        }
        auto it = ctx.root.find(segs[0]);
        if (it == ctx.root.end()) {
            std::vector<std::string> names;
            for (auto& [k, v] : ctx.root.items()) {
                (void)v;
                names.push_back(k);
            }
            throw ExprError("unknown name '" + segs[0] + "' (defined here: " + join(names) + ")", 0);
        }
        node = &*it;
    }
    for (size_t i = 1; i < segs.size(); ++i) {
        const std::string& sgm = segs[i];
        if (node->is_array()) {
            const bool digits =
                !sgm.empty() && sgm.size() < 10 && sgm.find_first_not_of("0123456789") == std::string::npos;
            if (!digits)
                throw ExprError("'" + walked + "' is a list of " + std::to_string(node->size()) +
                                    " entries; use an index 0.." + std::to_string(node->size() ? node->size() - 1 : 0) +
                                    ", got '" + sgm + "'",
                                0);
            const size_t idx = static_cast<size_t>(std::stoul(sgm));
            if (idx >= node->size())
                throw ExprError("'" + walked + "' has " + std::to_string(node->size()) + " entries; index " + sgm +
                                    " is past the end",
                                0);
            node = &(*node)[idx];
        } else if (node->is_object()) {
            auto it = node->find(sgm);
            if (it == node->end()) {
                std::vector<std::string> keys;
                for (auto& [k, v] : node->items()) {
                    (void)v;
                    if (keys.size() < 24) keys.push_back(k);
                }
                throw ExprError("'" + walked + "' has no '" + sgm + "' (it has: " + join(keys) + ")", 0);
            }
            node = &*it;
        } else {
            throw ExprError("'" + walked + "' is a single value; it has no '" + sgm + "'", 0);
        }
        walked += "." + sgm;
    }
    if (node->is_number()) return Value{true, node->get<double>(), {}};
    if (node->is_boolean()) return Value{true, node->get<bool>() ? 1.0 : 0.0, {}};
    if (node->is_string()) return Value{false, 0, node->get<std::string>()};
    if (node->is_null() && segs[0] == "measured") throw Missing(walked + " was not recorded in the measurements");
    if (node->is_null())
        throw ExprError("'" + walked + "' has no value here (e.g. the running max before the first block is -infinity)",
                        0);
    throw ExprError("'" + walked + "' is a group of values, not one value; add a field name (e.g. '" + walked + "." +
                        (node->is_object() && !node->empty() ? node->begin().key() : std::string("0")) + "')",
                    0);
}

}  // namespace lessons::detail
