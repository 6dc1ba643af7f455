// lessons/lib/lesson.cpp — load a lesson (TOML), simulate its configurations, render its prose.
//
// [SECTIONS]  errors and positions · TOML helpers · configurations · computed sources (softmax,
//             error, measured, machine) · context lookup · steps and rendering · exercise ·
//             load_lesson · load_all / lessons_dir · expectations · answers
#include "lessons/lib/lesson.hpp"

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <toml++/toml.h>
#include <unistd.h>

#include "lessons/lib/expr.hpp"
#include "report/report.hpp"
#include "sim/reference.hpp"
#include "sim/softmax.hpp"

namespace lessons {

using detail::ExprError;
using detail::Missing;
using detail::Value;
using nlohmann::json;

namespace detail {
Limits& limits() {
    static Limits l;
    return l;
}
}  // namespace detail

// ---------------------------------------------------------------- [errors and positions]
LoadError::LoadError(std::string f, int64_t l, int64_t c, std::string m)
    : std::runtime_error(f + ":" + std::to_string(l) + ":" + std::to_string(c) + ": " + m),
      file(std::move(f)),
      line(l),
      column(c),
      message(std::move(m)) {}

struct Context {
    json root = json::object();           // config names, "machine", "softmax", "error", "measured"
    std::set<std::string> missing_roots;  // e.g. "measured.flash2_fwd": legitimately absent
};

namespace {

struct Pos {
    int64_t line = 0, column = 0;
};

Pos pos_of(const toml::node& n) {
    return {static_cast<int64_t>(n.source().begin.line), static_cast<int64_t>(n.source().begin.column)};
}
Pos pos_of(const toml::key& k) {
    return {static_cast<int64_t>(k.source().begin.line), static_cast<int64_t>(k.source().begin.column)};
}

// The raw file, to turn an offset inside a string value back into a line and column.
struct Source {
    std::string file;
    std::string text;
    std::vector<size_t> line_start;  // byte offset of each line (0-based lines)

    explicit Source(std::string f, std::string t) : file(std::move(f)), text(std::move(t)) {
        line_start.push_back(0);
        for (size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') line_start.push_back(i + 1);
    }
    // Byte offset of a 1-based (line, column) where columns count UTF-8 code points.
    size_t offset(Pos p) const {
        if (p.line < 1 || static_cast<size_t>(p.line) > line_start.size()) return text.size();
        size_t o = line_start[static_cast<size_t>(p.line - 1)];
        for (int64_t c = 1; c < p.column && o < text.size() && text[o] != '\n'; ++c) {
            ++o;
            while (o < text.size() && (static_cast<unsigned char>(text[o]) & 0xC0) == 0x80) ++o;
        }
        return o;
    }
    Pos pos(size_t off) const {
        off = std::min(off, text.size());
        auto it = std::upper_bound(line_start.begin(), line_start.end(), off);
        const size_t line = static_cast<size_t>(it - line_start.begin());  // 1-based
        int64_t col = 1;
        for (size_t i = line_start[line - 1]; i < off; ++i)
            if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++col;
        return {static_cast<int64_t>(line), col};
    }
    [[noreturn]] void fail(Pos p, const std::string& msg) const { throw LoadError(file, p.line, p.column, msg); }
};

// ---------------------------------------------------------------- [TOML helpers]
std::string type_name(const toml::node& n) {
    switch (n.type()) {
        case toml::node_type::string:
            return "text";
        case toml::node_type::integer:
            return "an integer";
        case toml::node_type::floating_point:
            return "a number";
        case toml::node_type::boolean:
            return "true/false";
        case toml::node_type::array:
            return "a list";
        case toml::node_type::table:
            return "a table";
        default:
            return "a date/time";
    }
}

std::string get_string(const Source& s, const toml::node& n, const std::string& what) {
    if (auto v = n.value_exact<std::string>()) return *v;
    s.fail(pos_of(n), "'" + what + "' must be text in quotes, got " + type_name(n));
}
int64_t get_int(const Source& s, const toml::node& n, const std::string& what) {
    if (auto v = n.value_exact<int64_t>()) return *v;
    s.fail(pos_of(n), "'" + what + "' must be a whole number, got " + type_name(n));
}
double get_number(const Source& s, const toml::node& n, const std::string& what) {
    if (auto v = n.value_exact<int64_t>()) return static_cast<double>(*v);
    if (auto v = n.value_exact<double>()) {
        if (!std::isfinite(*v)) s.fail(pos_of(n), "'" + what + "' must be a finite number, got " + std::to_string(*v));
        return *v;
    }
    s.fail(pos_of(n), "'" + what + "' must be a number, got " + type_name(n));
}
bool get_bool(const Source& s, const toml::node& n, const std::string& what) {
    if (auto v = n.value_exact<bool>()) return *v;
    s.fail(pos_of(n), "'" + what + "' must be true or false, got " + type_name(n));
}
const toml::table& get_table(const Source& s, const toml::node& n, const std::string& what) {
    if (auto t = n.as_table()) return *t;
    s.fail(pos_of(n), "'" + what + "' must be a table ([" + what + "] or { ... }), got " + type_name(n));
}
const toml::array& get_array(const Source& s, const toml::node& n, const std::string& what) {
    if (auto a = n.as_array()) return *a;
    s.fail(pos_of(n), "'" + what + "' must be a list [ ... ], got " + type_name(n));
}
std::string join(const std::vector<std::string>& v) {
    std::string o;
    for (const auto& x : v) o += (o.empty() ? "" : ", ") + x;
    return o;
}
// Unknown keys are errors (a typo would otherwise be silently ignored).
void check_keys(const Source& s, const toml::table& t, const std::vector<std::string>& known,
                const std::string& where) {
    for (auto&& [k, v] : t) {
        (void)v;
        if (std::find(known.begin(), known.end(), std::string(k.str())) == known.end())
            s.fail(pos_of(k),
                   "unknown key '" + std::string(k.str()) + "' in " + where + " (known: " + join(known) + ")");
    }
}
bool valid_name(const std::string& n) {
    if (n.empty() || n.size() > 64) return false;
    if (!(std::isalpha(static_cast<unsigned char>(n[0])) || n[0] == '_')) return false;
    for (char c : n)
        if (!(std::isalnum(static_cast<unsigned char>(c)) || c == '_')) return false;
    return true;
}
const std::set<std::string> kReserved = {"machine", "softmax", "error", "measured", "answer", "lesson"};

// ---------------------------------------------------------------- [configurations]
struct ConfigParsed {
    ConfigSpec spec;
    Pos pos;
};

ConfigParsed parse_config(const Source& s, const std::string& name, const toml::table& t) {
    ConfigParsed out;
    out.pos = pos_of(t);
    ConfigSpec& c = out.spec;
    c.name = name;
    c.config.numerics = sim::Numerics::off;  // lessons compute numbers only when asked
    c.config.l2 = sim::L2Mode::off;          // the L2 replay costs time at load; on when asked
    const std::string where = "[config." + name + "]";
    check_keys(
        s, t, {"algo",   "seq",   "head_dim", "batch",      "heads",          "dtype",         "gpu",      "causal",
               "window", "scale", "seed",     "block_rows", "block_cols",     "sram",          "numerics", "record_row",
               "pass",   "l2",    "ceilings", "timing",     "bwd_block_rows", "bwd_block_cols"},
        where);
    for (const char* req : {"algo", "seq", "head_dim"})
        if (!t.contains(req))
            s.fail(out.pos, where + " needs '" + req + "' (e.g. algo = \"flash2\", seq = 1024, head_dim = 64)");
    auto pos_int = [&](const char* key, int64_t lo) {
        const toml::node& n = *t.get(key);
        const int64_t v = get_int(s, n, key);
        if (v < lo)
            s.fail(pos_of(n),
                   "'" + std::string(key) + "' must be at least " + std::to_string(lo) + ", got " + std::to_string(v));
        return v;
    };
    {
        const toml::node& n = *t.get("algo");
        const std::string a = get_string(s, n, "algo");
        const auto algo = sim::parse_algo(a);
        if (!algo) s.fail(pos_of(n), "unknown algo '" + a + "' (use standard, flash1 or flash2)");
        c.config.algo = *algo;
    }
    c.problem.seq = pos_int("seq", 1);
    c.problem.head_dim = pos_int("head_dim", 1);
    if (t.contains("batch")) c.problem.batch = pos_int("batch", 1);
    if (t.contains("heads")) c.problem.heads = pos_int("heads", 1);
    if (t.contains("dtype")) {
        const toml::node& n = *t.get("dtype");
        const std::string d = get_string(s, n, "dtype");
        const auto dt = sim::parse_dtype(d);
        if (!dt) s.fail(pos_of(n), "unknown dtype '" + d + "' (use fp16, bf16 or fp32)");
        c.problem.dtype = *dt;
    }
    if (t.contains("gpu")) {
        const toml::node& n = *t.get("gpu");
        c.gpu = get_string(s, n, "gpu");
        try {
            c.gpu = sim::find_machine(c.gpu).name;
        } catch (const sim::Error& e) { s.fail(pos_of(n), e.what()); }
    }
    if (t.contains("causal")) c.problem.causal = get_bool(s, *t.get("causal"), "causal");
    if (t.contains("window")) {
        c.problem.window = pos_int("window", 0);
        if (c.problem.window > 0) c.problem.causal = true;
    }
    if (t.contains("scale")) {
        const toml::node& n = *t.get("scale");
        c.problem.scale = get_number(s, n, "scale");
        if (c.problem.scale < 0) s.fail(pos_of(n), "'scale' must be positive (or 0 for 1/sqrt(head_dim))");
    }
    if (t.contains("seed")) c.problem.seed = static_cast<uint64_t>(pos_int("seed", 0));
    if (t.contains("block_rows")) c.config.block_rows = pos_int("block_rows", 1);
    if (t.contains("block_cols")) c.config.block_cols = pos_int("block_cols", 1);
    if (t.contains("sram")) c.config.sram_bytes = pos_int("sram", 1);
    if (t.contains("numerics")) {
        const toml::node& n = *t.get("numerics");
        const std::string v = get_string(s, n, "numerics");
        if (v == "on")
            c.config.numerics = sim::Numerics::on;
        else if (v == "off")
            c.config.numerics = sim::Numerics::off;
        else
            s.fail(pos_of(n), "'numerics' must be \"on\" or \"off\", got '" + v + "'");
    }
    if (t.contains("record_row")) c.config.record_row = pos_int("record_row", 0);
    auto choice = [&](const char* key, const std::vector<std::string>& options) -> std::string {
        const toml::node& n = *t.get(key);
        const std::string v = get_string(s, n, key);
        if (std::find(options.begin(), options.end(), v) == options.end())
            s.fail(pos_of(n), "'" + std::string(key) + "' must be one of " + join(options) + ", got '" + v + "'");
        return v;
    };
    if (t.contains("pass")) c.config.pass = *sim::parse_pass(choice("pass", {"forward", "backward", "both"}));
    if (t.contains("l2")) {
        const std::string v = choice("l2", {"auto", "on", "off"});
        c.config.l2 = v == "on" ? sim::L2Mode::on : v == "auto" ? sim::L2Mode::automatic : sim::L2Mode::off;
        if (!detail::limits().allow_l2) c.config.l2 = sim::L2Mode::off;
    }
    if (t.contains("ceilings"))
        c.config.ceilings = choice("ceilings", {"datasheet", "measured"}) == "measured" ? sim::Ceilings::measured
                                                                                        : sim::Ceilings::datasheet;
    if (t.contains("timing")) c.config.timing = get_bool(s, *t.get("timing"), "timing");
    if (t.contains("bwd_block_rows")) c.config.bwd_block_rows = pos_int("bwd_block_rows", 1);
    if (t.contains("bwd_block_cols")) c.config.bwd_block_cols = pos_int("bwd_block_cols", 1);
    // Keep lesson loading fast: numerics (real arithmetic on every element) only for small problems.
    const double work =
        static_cast<double>(c.problem.heads_total()) * c.problem.seq * c.problem.seq * c.problem.head_dim;
    if (c.config.numerics == sim::Numerics::on && work > detail::limits().max_numerics_work)
        s.fail(out.pos, where +
                            ": numerics = \"on\" needs batch*heads*seq*seq*head_dim <= 268,435,456 so the lesson "
                            "loads quickly; use a smaller seq or head_dim, or numerics = \"off\"");
    if (c.problem.heads_total() > 4096)
        s.fail(out.pos, where + ": batch*heads above 4096; lessons use one or a few heads (the counts scale linearly)");
    return out;
}

json machine_json(const sim::Machine& m) {
    return {{"name", m.name},
            {"description", m.description},
            {"hbm_bytes", m.hbm_bytes},
            {"hbm_bandwidth", m.hbm_bandwidth},
            {"sram_bytes", m.sram_bytes},
            {"sram_total_bytes", static_cast<double>(m.sram_bytes) * m.sm_count},
            {"sm_count", m.sm_count},
            {"matmul_flops", m.matmul_flops},
            {"scalar_flops", m.scalar_flops},
            {"l2_bytes", m.l2_bytes},
            {"l2_bandwidth", m.l2_bandwidth},
            {"measured_hbm_bandwidth", m.measured_hbm_bandwidth},
            {"measured_matmul_flops", m.measured_matmul_flops},
            {"source", m.source}};
}

std::string events_text(const sim::Trace& tr, size_t limit) {
    std::ostringstream o;
    const size_t n = std::min(limit, tr.events.size());
    for (size_t i = 0; i < n; ++i) {
        const auto& e = tr.events[i];
        o << "  step " << e.step << ": " << sim::event_kind_name(e.kind) << " " << sim::tensor_name(e.tensor);
        if (e.row_tile >= 0 || e.col_tile >= 0) {
            o << " tile (";
            if (e.row_tile >= 0)
                o << e.row_tile;
            else
                o << "-";
            o << ",";
            if (e.col_tile >= 0)
                o << e.col_tile;
            else
                o << "-";
            o << ")";
        }
        o << " " << e.rows << "x" << e.cols;
        if (e.bytes) o << ", " << report::group_digits(e.bytes) << " B";
        if (e.flops.total()) o << ", " << report::group_digits(e.flops.total()) << " FLOP";
        o << "\n";
    }
    if (tr.events.size() > n || tr.truncated)
        o << "  ... (" << report::group_digits(tr.events_total - static_cast<int64_t>(n)) << " more events)\n";
    return o.str();
}

// What a configuration contributes to the context: the simulator's JSON plus a few derived views.
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
    j["machine"] = machine_json(r.machine);
    j["elem_bytes"] = r.problem.elem_bytes();
    j["steps_per_head"] = r.trace.steps_per_head;
    json ev = json::array();
    for (size_t i = 0; i < std::min<size_t>(r.trace.events.size(), 512); ++i) {
        const auto& e = r.trace.events[i];
        ev.push_back({{"kind", std::string(sim::event_kind_name(e.kind))},
                      {"tensor", std::string(sim::tensor_name(e.tensor))},
                      {"row_tile", e.row_tile},
                      {"col_tile", e.col_tile},
                      {"rows", e.rows},
                      {"cols", e.cols},
                      {"bytes", e.bytes},
                      {"flops", e.flops.total()},
                      {"step", e.step},
                      {"phase", e.phase}});
    }
    j["events"] = ev;
    j["event_list"] = events_text(r.trace, 64);
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
    return j;
}

// ---------------------------------------------------------------- [computed sources]
struct Built {
    Lesson lesson;
    std::map<std::string, sim::Result> results;
};

void build_softmax(const Source& s, const toml::table& t, Context& ctx) {
    check_keys(s, t, {"scores", "block", "values", "precision"}, "[softmax]");
    if (!t.contains("scores")) s.fail(pos_of(t), "[softmax] needs 'scores' (e.g. scores = [1.4, 3.9, 0.7, 2.2])");
    std::vector<double> scores;
    for (auto&& x : get_array(s, *t.get("scores"), "scores")) scores.push_back(get_number(s, x, "scores"));
    const int64_t block = t.contains("block") ? get_int(s, *t.get("block"), "block") : 4;
    std::vector<std::vector<double>> values;
    if (t.contains("values"))
        for (auto&& row : get_array(s, *t.get("values"), "values")) {
            std::vector<double> r;
            for (auto&& x : get_array(s, row, "values row")) r.push_back(get_number(s, x, "values"));
            values.push_back(std::move(r));
        }
    sim::Precision prec = sim::Precision::fp32;
    if (t.contains("precision")) {
        const std::string p = get_string(s, *t.get("precision"), "precision");
        if (p == "fp64")
            prec = sim::Precision::fp64;
        else if (p != "fp32")
            s.fail(pos_of(*t.get("precision")), "'precision' must be \"fp32\" or \"fp64\", got '" + p + "'");
    }
    if (scores.size() > 4096) s.fail(pos_of(t), "[softmax]: at most 4096 scores");
    try {
        const auto r = sim::stream_softmax(scores, block, values, prec);
        json j = report::softmax_json(r);
        j["count"] = scores.size();
        j["block"] = block;
        j["block_count"] = r.record.blocks.size();
        // The other precision too, so a lesson can show that the difference is rounding.
        const auto other = sim::stream_softmax(
            scores, block, values, prec == sim::Precision::fp32 ? sim::Precision::fp64 : sim::Precision::fp32);
        j[prec == sim::Precision::fp32 ? "fp64" : "fp32"] = report::softmax_json(other);
        ctx.root["softmax"] = j;
    } catch (const sim::Error& e) { s.fail(pos_of(t), std::string("[softmax]: ") + e.what()); }
}

void build_error(const Source& s, const std::string& name, const toml::table& t, Built& b, Context& ctx) {
    const std::string where = "[error." + name + "]";
    check_keys(s, t, {"actual", "expected"}, where);
    for (const char* k : {"actual", "expected"})
        if (!t.contains(k))
            s.fail(pos_of(t), where + " needs '" + k +
                                  "' (actual = a config name; expected = \"reference\", "
                                  "\"reference:CONFIG\" or a config name)");
    auto need_output = [&](const std::string& cfg, const toml::node& n) -> const sim::Result& {
        auto it = b.results.find(cfg);
        if (it == b.results.end()) s.fail(pos_of(n), where + ": no configuration named '" + cfg + "'");
        if (!it->second.output)
            s.fail(pos_of(n),
                   where + ": config '" + cfg + "' has no output; add numerics = \"on\" to [config." + cfg + "]");
        return it->second;
    };
    const toml::node& an = *t.get("actual");
    const toml::node& en = *t.get("expected");
    const sim::Result& actual = need_output(get_string(s, an, "actual"), an);
    const std::string exp = get_string(s, en, "expected");
    sim::ErrorStats st;
    json expected_row0 = json::array();
    if (exp == "reference" || exp.rfind("reference:", 0) == 0) {
        sim::Problem p = actual.problem;
        if (exp != "reference") {
            const std::string other = exp.substr(10);
            auto it = b.lesson.configs.find(other);
            if (it == b.lesson.configs.end()) s.fail(pos_of(en), where + ": no configuration named '" + other + "'");
            p = it->second.problem;
            if (p.seq != actual.problem.seq || p.head_dim != actual.problem.head_dim ||
                p.batch != actual.problem.batch || p.heads != actual.problem.heads || p.seed != actual.problem.seed ||
                p.dtype != actual.problem.dtype)
                s.fail(pos_of(en), where + ": '" + other +
                                       "' and the actual config must have the same seq, head_dim, "
                                       "batch, heads, dtype and seed (same inputs)");
        }
        const sim::Inputs in = sim::generate_inputs(p);
        const sim::TensorD ref = sim::attention_reference(p, in.Q, in.K, in.V);
        st = sim::validate(*actual.output, ref, actual.problem.dtype);
        for (int64_t k = 0; k < std::min<int64_t>(p.head_dim, 8); ++k) expected_row0.push_back(ref.at(0, 0, k));
    } else {
        const sim::Result& e = need_output(exp, en);
        if (e.output->size() != actual.output->size())
            s.fail(pos_of(en), where + ": '" + exp + "' and the actual config have outputs of different shapes");
        st = sim::validate(*actual.output, *e.output, actual.problem.dtype);
        for (int64_t k = 0; k < std::min<int64_t>(e.problem.head_dim, 8); ++k)
            expected_row0.push_back(e.output->at(0, 0, k));
    }
    if (st.nonfinite > 0)
        s.fail(pos_of(an), where + ": the actual output has " + std::to_string(st.nonfinite) + " non-finite values");
    json j = report::error_json(st);
    j["identical_fraction"] = st.count ? static_cast<double>(st.identical) / static_cast<double>(st.count) : 0.0;
    json actual_row0 = json::array();
    for (int64_t k = 0; k < std::min<int64_t>(actual.problem.head_dim, 8); ++k)
        actual_row0.push_back(actual.output->at(0, 0, k));
    j["actual_row0"] = actual_row0;
    j["expected_row0"] = expected_row0;
    ctx.root["error"][name] = j;
}

std::string measured_file(const std::string& lesson_file) {
    if (const char* env = std::getenv("FLASHSIM_MEASURED")) return env;
    namespace fs = std::filesystem;
    std::error_code ec;
    const fs::path dir = fs::path(lesson_file).parent_path();
    const fs::path p = (dir.empty() ? fs::path(".") : dir) / ".." / "cuda" / "results" / "h200.json";
    return p.lexically_normal().string();
}

void build_measured(const Source& s, const toml::table& all, Context& ctx) {
    const std::string path = measured_file(s.file);
    json doc;
    std::string why;
    {
        std::ifstream f(path);
        if (!f)
            why = "no measurements recorded yet (" + path + " is absent)";
        else {
            try {
                doc = json::parse(f);
                if (!doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) {
                    why = path + " has no \"rows\" list";
                    doc = json();
                }
            } catch (const std::exception&) { why = path + " is not valid JSON"; }
        }
    }
    ctx.root["measured"] = json::object();
    ctx.root["measured"]["status"] = why.empty() ? "measured on " + doc.value("device", std::string("a GPU")) + " (" +
                                                       doc.value("date", std::string("?")) + ")"
                                                 : why;
    ctx.root["measured"]["available"] = why.empty() ? 1 : 0;
    for (auto&& [k, v] : all) {
        const std::string name(k.str());
        const std::string where = "[measured." + name + "]";
        if (!valid_name(name)) s.fail(pos_of(k), "measurement name '" + name + "' must be letters, digits and _");
        const toml::table& t = get_table(s, v, "measured." + name);
        check_keys(s, t, {"variant", "pass", "seq", "head_dim", "causal", "dtype"}, where);
        for (const char* req : {"variant", "seq", "head_dim"})
            if (!t.contains(req)) s.fail(pos_of(t), where + " needs '" + req + "' (which row of the bench results)");
        const std::string variant = get_string(s, *t.get("variant"), "variant");
        const std::string pass = t.contains("pass") ? get_string(s, *t.get("pass"), "pass") : "forward";
        const int64_t seq = get_int(s, *t.get("seq"), "seq"), d = get_int(s, *t.get("head_dim"), "head_dim");
        const bool causal = t.contains("causal") ? get_bool(s, *t.get("causal"), "causal") : false;
        const std::string dtype = t.contains("dtype") ? get_string(s, *t.get("dtype"), "dtype") : "";
        if (!why.empty()) {
            ctx.missing_roots.insert("measured." + name);
            continue;
        }
        bool found = false;
        for (const auto& row : doc["rows"]) {
            // Read tolerantly: a row missing a field simply does not match.
            if (!row.is_object()) continue;
            auto str = [&](const char* key) {
                return row.contains(key) && row[key].is_string() ? row[key].get<std::string>() : std::string();
            };
            auto num = [&](const char* key) {
                return row.contains(key) && row[key].is_number() ? row[key].get<double>() : -1.0;
            };
            const bool rc = row.contains("causal") && row["causal"].is_boolean() ? row["causal"].get<bool>() : false;
            if (str("variant") == variant && (str("pass").empty() ? "forward" : str("pass")) == pass &&
                num("seq") == static_cast<double>(seq) && num("head_dim") == static_cast<double>(d) && rc == causal &&
                (dtype.empty() || str("dtype") == dtype) && !row.contains("error")) {
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
                ctx.root["measured"][name] = r;
                found = true;
                break;
            }
        }
        if (!found) ctx.missing_roots.insert("measured." + name);
    }
}

// ---------------------------------------------------------------- [context lookup]
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
        if (segs.size() >= 2 && ctx.missing_roots.count(segs[0] + "." + segs[1]))
            throw Missing(segs[0] + "." + segs[1] + ": " + ctx.root["measured"]["status"].get<std::string>());
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

// ---------------------------------------------------------------- [steps and rendering]
// Paragraphs: lines of one paragraph are joined with a space; a blank line separates paragraphs;
// a line that starts with a space or tab is kept as written (tables, event lists). The app wraps
// paragraphs to its width, the terminal to 88 columns.
std::string reflow(const std::string& text) {
    std::vector<std::string> lines;
    {
        std::string cur;
        for (char c : text) {
            if (c == '\n') {
                lines.push_back(cur);
                cur.clear();
            } else if (c != '\r')
                cur += c;
        }
        lines.push_back(cur);
    }
    std::string out;
    bool in_para = false;
    for (const auto& ln : lines) {
        const bool blank = ln.find_first_not_of(" \t") == std::string::npos;
        const bool pre = !blank && (ln[0] == ' ' || ln[0] == '\t');
        if (blank) {
            if (in_para) out += '\n';
            if (!out.empty() && (out.size() < 2 || out.substr(out.size() - 2) != "\n\n")) out += '\n';
            in_para = false;
        } else if (pre) {
            if (in_para) out += '\n';
            out += ln + '\n';
            in_para = false;
        } else {
            std::string t = ln;
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
            if (in_para) out += ' ';
            out += t;
            in_para = true;
        }
    }
    if (in_para) out += '\n';
    while (out.size() >= 2 && out.substr(out.size() - 2) == "\n\n") out.pop_back();
    size_t a = 0;
    while (a < out.size() && out[a] == '\n') ++a;
    return out.substr(a);
}

// Render `text` (the value of node `n` in the file); errors point at the placeholder's place.
std::string render_node_text(const Source& s, const Context& ctx, const std::string& text, Pos node_pos) {
    std::vector<detail::Placeholder> phs;
    const size_t base = s.offset(node_pos);
    auto raw_pos = [&](size_t decoded_off, const std::string& anchor, size_t anchor_decoded) -> Pos {
        // Find the anchor (a placeholder's raw text) in the file after the value's start.
        const size_t found = anchor.empty() ? std::string::npos : s.text.find(anchor, base);
        if (found == std::string::npos) return node_pos;
        return s.pos(found + (decoded_off - anchor_decoded));
    };
    try {
        phs = detail::find_placeholders(text);
    } catch (const ExprError& e) {
        const size_t a = e.pos >= 2 ? e.pos - 2 : 0;
        const std::string anchor = text.substr(a, std::min<size_t>(8, text.size() - a));
        s.fail(raw_pos(e.pos, anchor, a), e.what());
    }
    std::string out;
    size_t prev = 0;
    for (const auto& ph : phs) {
        out += text.substr(prev, ph.begin - prev);
        prev = ph.end;
        const std::string anchor = text.substr(ph.begin, ph.end - ph.begin);
        detail::Lookup lk = [&](const std::string& p) { return lookup_in(ctx, nullptr, p); };
        Value v;
        try {
            v = detail::eval_expr(ph.expr, lk);
        } catch (const ExprError& e) {
            s.fail(raw_pos(ph.expr_pos + e.pos, anchor, ph.begin),
                   std::string("in {{ ") + ph.expr + " }}: " + e.what());
        } catch (const Missing&) {
            // Not an error: the value is legitimately absent (still check the filter).
            std::string why;
            if (!ph.filter.empty() && !detail::filter_known(ph.filter, &why))
                s.fail(raw_pos(ph.filter_pos, anchor, ph.begin), why);
            out += "n/a";
            continue;
        }
        try {
            out += detail::apply_filter(v, ph.filter);
        } catch (const ExprError& e) {
            s.fail(raw_pos(ph.filter_pos + e.pos, anchor, ph.begin),
                   std::string("in {{ ") + ph.expr + " | " + ph.filter + " }}: " + e.what());
        }
    }
    out += text.substr(prev);
    return out;
}

View parse_view(const Source& s, const toml::table& t, const Lesson& l,
                const std::map<std::string, sim::Result>& results) {
    View v;
    check_keys(s, t, {"panel", "config", "algo", "compare", "step_from", "step_to", "row", "tile_row", "tile_col"},
               "view");
    static const std::vector<std::string> panels = {"memory", "softmax", "compare", "charts", "measured", "text"};
    if (t.contains("panel")) {
        v.panel = get_string(s, *t.get("panel"), "panel");
        if (std::find(panels.begin(), panels.end(), v.panel) == panels.end())
            s.fail(pos_of(*t.get("panel")), "unknown panel '" + v.panel + "' (known: " + join(panels) + ")");
    }
    auto cfg_name = [&](const toml::node& n, const std::string& what) {
        const std::string c = get_string(s, n, what);
        if (!l.configs.count(c))
            s.fail(pos_of(n), what + ": no configuration named '" + c + "' (defined: " + join(l.config_order) + ")");
        return c;
    };
    if (t.contains("config")) v.config = cfg_name(*t.get("config"), "config");
    if (t.contains("algo")) {
        v.algo = get_string(s, *t.get("algo"), "algo");
        if (!sim::parse_algo(v.algo))
            s.fail(pos_of(*t.get("algo")), "unknown algo '" + v.algo + "' (use standard, flash1 or flash2)");
    }
    if (t.contains("compare"))
        for (auto&& x : get_array(s, *t.get("compare"), "compare")) v.compare.push_back(cfg_name(x, "compare"));
    const std::string shown = v.config.empty() ? (l.config_order.empty() ? "" : l.config_order[0]) : v.config;
    if (v.algo.empty() && !shown.empty()) v.algo = std::string(sim::algo_name(l.configs.at(shown).config.algo));
    const sim::Result* r = shown.empty() ? nullptr : &results.at(shown);
    auto idx = [&](const char* key, int64_t limit, const std::string& what) -> int64_t {
        if (!t.contains(key)) return -1;
        const toml::node& n = *t.get(key);
        const int64_t x = get_int(s, n, key);
        if (x < 0 || (r && x >= limit))
            s.fail(pos_of(n), std::string("'") + key + "' = " + std::to_string(x) + " is outside " + what + " 0.." +
                                  std::to_string(limit - 1) + " of config '" + shown + "'");
        return x;
    };
    const int64_t steps = r ? std::max<int64_t>(r->trace.steps_per_head, 1) : 1;
    v.step_from = idx("step_from", steps, "the steps");
    v.step_to = idx("step_to", steps, "the steps");
    if (v.step_from >= 0 && v.step_to >= 0 && v.step_to < v.step_from)
        s.fail(pos_of(*t.get("step_to")), "'step_to' must not be before 'step_from'");
    if (v.step_from >= 0 && v.step_to < 0) v.step_to = v.step_from;
    v.row = idx("row", r ? r->problem.seq : 1, "the query rows");
    v.tile_row = idx("tile_row", r ? r->T_r : 1, "the row tiles");
    v.tile_col = idx("tile_col", r ? r->T_c : 1, "the column tiles");
    return v;
}

Expectation parse_expect(const Source& s, const toml::table& t, const Context& ctx) {
    Expectation e;
    check_keys(s, t, {"expr", "value", "abs_tol", "rel_tol", "at_least", "at_most", "note"}, "expect");
    const Pos p = pos_of(t);
    e.line = p.line;
    e.column = p.column;
    if (!t.contains("expr")) s.fail(p, "an expectation needs 'expr' (e.g. expr = \"standard.tensors.S.write_bytes\")");
    const toml::node& en = *t.get("expr");
    e.expr = get_string(s, en, "expr");
    if (t.contains("value")) e.value = get_number(s, *t.get("value"), "value");
    if (t.contains("abs_tol")) e.abs_tol = get_number(s, *t.get("abs_tol"), "abs_tol");
    if (t.contains("rel_tol")) e.rel_tol = get_number(s, *t.get("rel_tol"), "rel_tol");
    if (t.contains("at_least")) e.at_least = get_number(s, *t.get("at_least"), "at_least");
    if (t.contains("at_most")) e.at_most = get_number(s, *t.get("at_most"), "at_most");
    if (t.contains("note")) e.note = get_string(s, *t.get("note"), "note");
    if (e.abs_tol < 0 || e.rel_tol < 0) s.fail(p, "tolerances must not be negative");
    if (!e.value && !e.at_least && !e.at_most) s.fail(p, "an expectation needs 'value', 'at_least' or 'at_most'");
    // The expression must parse and name things that exist (its value is checked by the tests).
    const Pos ep = pos_of(en);
    try {
        detail::eval_expr(e.expr, [&](const std::string& path) { return lookup_in(ctx, nullptr, path); });
    } catch (const ExprError& x) {
        s.fail({ep.line, ep.column + 1 + static_cast<int64_t>(x.pos)}, "in expect '" + e.expr + "': " + x.what());
    } catch (const Missing&) {}
    return e;
}

}  // namespace

// ---------------------------------------------------------------- [load_lesson]
namespace {

Built build(const Source& s) {
    toml::table root;
    try {
        root = toml::parse(s.text, s.file);
    } catch (const toml::parse_error& e) {
        s.fail({static_cast<int64_t>(e.source().begin.line), static_cast<int64_t>(e.source().begin.column)},
               "TOML syntax: " + std::string(e.description()));
    }
    Built b;
    Lesson& l = b.lesson;
    l.file = s.file;
    auto ctx = std::make_shared<Context>();
    check_keys(s, root,
               {"id", "number", "title", "summary", "config", "softmax", "error", "measured", "step", "exercise"},
               "the lesson");
    for (const char* req : {"id", "title", "config", "step"})
        if (!root.contains(req))
            s.fail({1, 1}, std::string("the lesson needs '") + req + "'" +
                               (std::string(req) == "config" ? " (at least one [config.NAME] table)"
                                : std::string(req) == "step" ? " (at least one [[step]])"
                                                             : ""));
    l.id = get_string(s, *root.get("id"), "id");
    {
        bool ok = !l.id.empty() && l.id.size() <= 64;
        for (char c : l.id) ok &= std::isalnum(static_cast<unsigned char>(c)) || c == '-' || c == '_';
        if (!ok)
            s.fail(
                pos_of(*root.get("id")),
                "'id' must be 1-64 letters, digits, '-' or '_' (it is typed on the command line), got '" + l.id + "'");
    }
    if (root.contains("number")) {
        l.number = get_int(s, *root.get("number"), "number");
        if (l.number < 0 || l.number > 999) s.fail(pos_of(*root.get("number")), "'number' must be 0..999");
    }
    l.title = get_string(s, *root.get("title"), "title");
    if (l.title.empty()) s.fail(pos_of(*root.get("title")), "'title' must not be empty");

    // Machines first: every preset, under its name with '-' written as '_'.
    for (const auto& m : sim::machine_presets()) {
        std::string key = m.name;
        std::replace(key.begin(), key.end(), '-', '_');
        ctx->root["machine"][key] = machine_json(m);
    }
    // Configurations, simulated.
    const toml::table& cfgs = get_table(s, *root.get("config"), "config");
    if (cfgs.empty()) s.fail(pos_of(cfgs), "[config] has no configurations; add one like [config.standard]");
    for (auto&& [k, v] : cfgs) {
        const std::string name(k.str());
        if (!valid_name(name))
            s.fail(pos_of(k), "configuration name '" + name +
                                  "' must start with a letter and use only letters, digits and _ "
                                  "(it is used in placeholders like {{" +
                                  name + ".hbm.total}})");
        if (kReserved.count(name))
            s.fail(pos_of(k), "'" + name + "' is reserved for computed values; choose another configuration name");
        const ConfigParsed c = parse_config(s, name, get_table(s, v, "config." + name));
        try {
            const sim::Machine& m = sim::find_machine(c.spec.gpu);
            // Refuse loops too long to walk at load time before walking them.
            const int64_t sram = c.spec.config.sram_bytes > 0 ? c.spec.config.sram_bytes : m.sram_bytes;
            const sim::BlockChoice bc = sim::choose_blocks(c.spec.problem, c.spec.config.algo, sram,
                                                           c.spec.config.block_rows, c.spec.config.block_cols);
            const int64_t n = c.spec.problem.seq;
            const double steps =
                std::ceil(double(n) / double(bc.block_rows)) * std::ceil(double(n) / double(bc.block_cols));
            if (steps > double(detail::limits().max_tile_steps))
                s.fail(c.pos, "[config." + name + "]: blocks of " + std::to_string(bc.block_rows) + " x " +
                                  std::to_string(bc.block_cols) + " make " + report::group_digits(int64_t(steps)) +
                                  " tile steps; a lesson must load in milliseconds, so at most " +
                                  report::group_digits(detail::limits().max_tile_steps) +
                                  " (use larger blocks, a larger sram or a smaller seq)");
            sim::Result r = sim::simulate(c.spec.problem, m, c.spec.config);
            ctx->root[name] = config_json(r);
            b.results.emplace(name, std::move(r));
        } catch (const sim::Error& e) {
            // The simulator speaks in CLI flags; a lesson's keys are spelled with underscores.
            std::string msg = e.what();
            for (const auto& [from, to] :
                 std::vector<std::pair<std::string, std::string>>{{"--block-rows", "block_rows"},
                                                                  {"--block-cols", "block_cols"},
                                                                  {"--sram", "sram"},
                                                                  {"--window", "window"}}) {
                for (size_t at = msg.find(from); at != std::string::npos; at = msg.find(from, at + to.size()))
                    msg.replace(at, from.size(), to);
            }
            s.fail(c.pos, "[config." + name + "]: the simulator refuses this configuration: " + msg);
        }
        l.configs.emplace(name, c.spec);
        l.config_order.push_back(name);
    }
    if (root.contains("softmax")) build_softmax(s, get_table(s, *root.get("softmax"), "softmax"), *ctx);
    if (root.contains("error"))
        for (auto&& [k, v] : get_table(s, *root.get("error"), "error")) {
            const std::string name(k.str());
            if (!valid_name(name)) s.fail(pos_of(k), "comparison name '" + name + "' must be letters, digits and _");
            build_error(s, name, get_table(s, v, "error." + name), b, *ctx);
        }
    if (root.contains("measured"))
        build_measured(s, get_table(s, *root.get("measured"), "measured"), *ctx);
    else { ctx->root["measured"] = json::object(); }

    if (root.contains("summary")) {
        const toml::node& n = *root.get("summary");
        l.summary = render_node_text(s, *ctx, get_string(s, n, "summary"), pos_of(n));
    }
    // Steps.
    const toml::array& steps = get_array(s, *root.get("step"), "step");
    if (steps.empty()) s.fail(pos_of(steps), "the lesson has no steps; add [[step]] tables");
    for (auto&& sn : steps) {
        const toml::table& st = get_table(s, sn, "step");
        check_keys(s, st, {"title", "text", "view", "expect"}, "[[step]]");
        if (!st.contains("text")) s.fail(pos_of(st), "every [[step]] needs 'text'");
        Step step;
        if (st.contains("title")) {
            const toml::node& n = *st.get("title");
            step.title = render_node_text(s, *ctx, get_string(s, n, "title"), pos_of(n));
        }
        const toml::node& tn = *st.get("text");
        step.source_text = get_string(s, tn, "text");
        step.text = reflow(render_node_text(s, *ctx, step.source_text, pos_of(tn)));
        if (st.contains("view"))
            step.view = parse_view(s, get_table(s, *st.get("view"), "view"), l, b.results);
        else
            step.view.panel = "text";
        if (st.contains("expect"))
            for (auto&& en : get_array(s, *st.get("expect"), "expect"))
                step.expect.push_back(parse_expect(s, get_table(s, en, "expect"), *ctx));
        l.steps.push_back(std::move(step));
    }
    // Exercise.
    if (root.contains("exercise")) {
        const toml::table& t = get_table(s, *root.get("exercise"), "exercise");
        check_keys(s, t,
                   {"prompt", "base", "fields", "goal", "at_most", "at_least", "goal_text", "solution", "not_solution"},
                   "[exercise]");
        for (const char* req : {"prompt", "base", "fields", "goal", "solution"})
            if (!t.contains(req)) s.fail(pos_of(t), std::string("[exercise] needs '") + req + "'");
        Exercise ex;
        const toml::node& pn = *t.get("prompt");
        ex.prompt = reflow(render_node_text(s, *ctx, get_string(s, pn, "prompt"), pos_of(pn)));
        const toml::node& bn = *t.get("base");
        ex.base = get_string(s, bn, "base");
        if (!l.configs.count(ex.base)) s.fail(pos_of(bn), "[exercise] base: no configuration named '" + ex.base + "'");
        static const std::vector<std::string> settable = {"algo", "block_rows", "block_cols", "sram",
                                                          "seq",  "head_dim",   "dtype"};
        for (auto&& f : get_array(s, *t.get("fields"), "fields")) {
            const std::string name = get_string(s, f, "fields");
            if (std::find(settable.begin(), settable.end(), name) == settable.end())
                s.fail(pos_of(f), "a learner cannot set '" + name + "' (settable: " + join(settable) + ")");
            ex.fields.push_back(name);
        }
        if (ex.fields.empty()) s.fail(pos_of(*t.get("fields")), "'fields' lists what the learner chooses; it is empty");
        const toml::node& gn = *t.get("goal");
        ex.goal_expr = get_string(s, gn, "goal");
        if (t.contains("at_most")) ex.goal_at_most = get_number(s, *t.get("at_most"), "at_most");
        if (t.contains("at_least")) ex.goal_at_least = get_number(s, *t.get("at_least"), "at_least");
        if (!ex.goal_at_most && !ex.goal_at_least)
            s.fail(pos_of(t), "[exercise] needs 'at_most' or 'at_least' for its goal");
        // The goal must evaluate against the base configuration bound as 'answer'.
        try {
            const json& base = ctx->root[ex.base];
            detail::eval_expr(ex.goal_expr, [&](const std::string& p) { return lookup_in(*ctx, &base, p); });
        } catch (const ExprError& x) {
            const Pos gp = pos_of(gn);
            s.fail({gp.line, gp.column + 1 + static_cast<int64_t>(x.pos)},
                   "in goal '" + ex.goal_expr + "': " + x.what());
        }
        if (t.contains("goal_text")) {
            const toml::node& n = *t.get("goal_text");
            ex.goal_text = render_node_text(s, *ctx, get_string(s, n, "goal_text"), pos_of(n));
        }
        l.exercise = ex;
        // A worked solution (and optionally a wrong answer) the tests check: the exercise is a test too.
        l.context = ctx;
        for (const char* key : {"solution", "not_solution"}) {
            if (!t.contains(key)) continue;
            const toml::node& n = *t.get(key);
            const std::string text = get_string(s, n, key);
            std::map<std::string, std::string> ans;
            try {
                ans = parse_answer(text);
            } catch (const LoadError& e) { s.fail(pos_of(n), std::string("'") + key + "': " + e.message); }
            for (const auto& [f, val] : ans) {
                (void)val;
                if (std::find(ex.fields.begin(), ex.fields.end(), f) == ex.fields.end())
                    s.fail(pos_of(n), std::string("'") + key + "' sets '" + f + "', which is not in 'fields'");
            }
            (std::string(key) == "solution" ? l.exercise->solution : l.exercise->not_solution) = text;
        }
    }
    l.context = ctx;
    return b;
}

std::string read_file(const std::string& path) {
    std::ifstream f(path, std::ios::binary);
    if (!f) throw LoadError(path, 0, 0, "cannot open the file (check the path and that it is readable)");
    std::ostringstream o;
    o << f.rdbuf();
    std::string t = o.str();
    if (t.size() > (1u << 20))
        throw LoadError(path, 0, 0, "the file is larger than 1 MiB; a lesson should be a few KiB of text");
    return t;
}

}  // namespace

Lesson load_lesson_text(const std::string& text, const std::string& file) {
    const Source s(file, text);
    return build(s).lesson;
}

Lesson load_lesson(const std::string& path) { return load_lesson_text(read_file(path), path); }

// ---------------------------------------------------------------- [load_all / lessons_dir]
std::vector<Loaded> load_all(const std::string& dir) {
    namespace fs = std::filesystem;
    std::vector<std::string> files;
    std::error_code ec;
    for (const auto& e : fs::directory_iterator(dir, ec))
        if (e.is_regular_file() && e.path().extension() == ".toml") files.push_back(e.path().string());
    if (ec) throw LoadError(dir, 0, 0, "cannot list the lessons directory: " + ec.message());
    std::sort(files.begin(), files.end());
    std::vector<Loaded> out;
    std::set<std::string> ids;
    for (const auto& f : files) {
        Loaded x;
        x.file = f;
        try {
            x.lesson = load_lesson(f);
            if (!ids.insert(x.lesson->id).second) {
                x.error =
                    f + ":1:1: id '" + x.lesson->id + "' is used by another lesson in " + dir + "; ids must be unique";
                x.lesson.reset();
            }
        } catch (const LoadError& e) {
            x.error = e.what();
        } catch (const std::exception& e) {  // never expected; reported, not crashed on
            x.error = f + ":0:0: internal error: " + e.what();
        }
        out.push_back(std::move(x));
    }
    return out;
}

#ifndef FLASHSIM_LESSONS_SOURCE_DIR
#define FLASHSIM_LESSONS_SOURCE_DIR ""
#endif

std::string lessons_dir() {
    namespace fs = std::filesystem;
    std::vector<std::string> tried;
    auto ok = [&](const fs::path& p) {
        tried.push_back(p.string());
        std::error_code ec;
        return fs::is_directory(p, ec);
    };
    if (const char* env = std::getenv("FLASHSIM_LESSONS"); env && *env) {
        if (ok(env)) return env;
        throw LoadError(env, 0, 0, "FLASHSIM_LESSONS names a directory that does not exist");
    }
    std::error_code ec;
    const fs::path exe = fs::read_symlink("/proc/self/exe", ec);
    if (!ec) {
        for (const fs::path& p : {exe.parent_path() / ".." / ".." / "lessons", exe.parent_path() / ".." / "lessons"})
            if (ok(p)) return p.lexically_normal().string();
    }
    if (*FLASHSIM_LESSONS_SOURCE_DIR && ok(FLASHSIM_LESSONS_SOURCE_DIR)) return FLASHSIM_LESSONS_SOURCE_DIR;
    std::string t;
    for (const auto& x : tried) t += (t.empty() ? "" : ", ") + x;
    throw LoadError("lessons", 0, 0,
                    "no lessons directory found (tried " + t + "); set FLASHSIM_LESSONS=/path/to/lessons");
}

// ---------------------------------------------------------------- [expectations]
double evaluate(const Lesson& lesson, const std::string& expr) {
    if (!lesson.context) throw LoadError(lesson.file, 0, 0, "the lesson was not loaded");
    try {
        const Value v =
            detail::eval_expr(expr, [&](const std::string& p) { return lookup_in(*lesson.context, nullptr, p); });
        if (!v.is_number) throw LoadError(lesson.file, 0, 0, "'" + expr + "' is text, not a number");
        return v.num;
    } catch (const ExprError& e) {
        throw LoadError(lesson.file, 0, 0,
                        "in '" + expr + "' at character " + std::to_string(e.pos + 1) + ": " + e.what());
    } catch (const Missing& e) { throw LoadError(lesson.file, 0, 0, std::string("no value: ") + e.what()); }
}

std::string render(const Lesson& lesson, const std::string& text) {
    if (!lesson.context) throw LoadError(lesson.file, 0, 0, "the lesson was not loaded");
    const Source s(lesson.file + " (text)", text);
    return render_node_text(s, *lesson.context, text, {1, 1});
}

namespace {
std::string num_text(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", x);
    return buf;
}
}  // namespace

std::vector<std::string> check_expectations(const Lesson& lesson) {
    std::vector<std::string> fails;
    for (const auto& st : lesson.steps)
        for (const auto& e : st.expect) {
            const std::string at = lesson.file + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": ";
            double v = 0;
            try {
                const Value x = detail::eval_expr(
                    e.expr, [&](const std::string& p) { return lookup_in(*lesson.context, nullptr, p); });
                if (!x.is_number) {
                    fails.push_back(at + "expect '" + e.expr + "': the value is text, not a number");
                    continue;
                }
                v = x.num;
            } catch (const Missing&) {
                continue;  // e.g. no measurement recorded: nothing to check
            } catch (const ExprError& x) {
                fails.push_back(at + "expect '" + e.expr + "': " + x.what());
                continue;
            }
            std::string why;
            if (e.value) {
                const double tol = std::max(e.abs_tol, e.rel_tol * std::abs(*e.value));
                if (!(std::abs(v - *e.value) <= tol))
                    why = "expected " + num_text(*e.value) + " +- " + num_text(tol) + ", got " + num_text(v);
            }
            if (why.empty() && e.at_least && !(v >= *e.at_least))
                why = "expected at least " + num_text(*e.at_least) + ", got " + num_text(v);
            if (why.empty() && e.at_most && !(v <= *e.at_most))
                why = "expected at most " + num_text(*e.at_most) + ", got " + num_text(v);
            if (!why.empty())
                fails.push_back(at + "expect '" + e.expr + "': " + why + (e.note.empty() ? "" : " (" + e.note + ")"));
        }
    if (lesson.exercise) {
        const Exercise& ex = *lesson.exercise;
        const std::string at = lesson.file + ": [exercise] ";
        const AnswerResult good = check_answer(lesson, parse_answer(ex.solution));
        if (!good.passed)
            fails.push_back(at + "solution '" + ex.solution + "' does not meet the goal: " + good.message);
        if (!ex.not_solution.empty()) {
            const AnswerResult bad = check_answer(lesson, parse_answer(ex.not_solution));
            if (bad.passed)
                fails.push_back(at + "not_solution '" + ex.not_solution + "' meets the goal: " + bad.message);
        }
    }
    return fails;
}

// ---------------------------------------------------------------- [answers]
sim::Result simulate_config(const Lesson& lesson, const std::string& name) {
    auto it = lesson.configs.find(name);
    if (it == lesson.configs.end())
        throw LoadError(lesson.file, 0, 0,
                        "no configuration named '" + name + "' (defined: " + join(lesson.config_order) + ")");
    try {
        return sim::simulate(it->second.problem, sim::find_machine(it->second.gpu), it->second.config);
    } catch (const sim::Error& e) { throw LoadError(lesson.file, 0, 0, "[config." + name + "]: " + e.what()); }
}

std::map<std::string, std::string> parse_answer(const std::string& text) {
    std::map<std::string, std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        auto trim = [](std::string x) {
            while (!x.empty() && std::isspace(static_cast<unsigned char>(x.back()))) x.pop_back();
            size_t a = 0;
            while (a < x.size() && std::isspace(static_cast<unsigned char>(x[a]))) ++a;
            return x.substr(a);
        };
        item = trim(item);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw LoadError("--answer", 0, 0,
                            "'" + item + "' is not NAME=VALUE (write e.g. block_rows=64,block_cols=128)");
        const std::string k = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
        if (k.empty() || v.empty()) throw LoadError("--answer", 0, 0, "'" + item + "' needs a name and a value");
        if (out.count(k)) throw LoadError("--answer", 0, 0, "'" + k + "' is given twice");
        out[k] = v;
    }
    if (out.empty()) throw LoadError("--answer", 0, 0, "the answer is empty (write e.g. block_rows=64,block_cols=128)");
    return out;
}

AnswerResult check_answer(const Lesson& lesson, const std::map<std::string, std::string>& answer) {
    AnswerResult res;
    if (!lesson.exercise || !lesson.context) {
        res.message = "lesson '" + lesson.id + "' has no exercise";
        return res;
    }
    const Exercise& ex = *lesson.exercise;
    ConfigSpec c = lesson.configs.at(ex.base);
    auto parse_int = [](const std::string& k, const std::string& v, int64_t& out) -> std::string {
        if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos)
            return "'" + k + "' must be a positive whole number, got '" + v + "'";
        out = std::stoll(v);
        if (out < 1) return "'" + k + "' must be at least 1";
        return {};
    };
    for (const auto& [k, v] : answer) {
        if (std::find(ex.fields.begin(), ex.fields.end(), k) == ex.fields.end()) {
            res.message = "you may set only: " + join(ex.fields) + " (got '" + k + "')";
            return res;
        }
        std::string err;
        if (k == "algo") {
            const auto a = sim::parse_algo(v);
            if (!a)
                err = "'algo' must be standard, flash1 or flash2, got '" + v + "'";
            else
                c.config.algo = *a;
        } else if (k == "dtype") {
            const auto d = sim::parse_dtype(v);
            if (!d)
                err = "'dtype' must be fp16, bf16 or fp32, got '" + v + "'";
            else
                c.problem.dtype = *d;
        } else if (k == "block_rows")
            err = parse_int(k, v, c.config.block_rows);
        else if (k == "block_cols")
            err = parse_int(k, v, c.config.block_cols);
        else if (k == "sram")
            err = parse_int(k, v, c.config.sram_bytes);
        else if (k == "seq")
            err = parse_int(k, v, c.problem.seq);
        else if (k == "head_dim")
            err = parse_int(k, v, c.problem.head_dim);
        if (!err.empty()) {
            res.message = err;
            return res;
        }
    }
    c.config.numerics = sim::Numerics::off;
    c.config.event_cap = 1;
    try {
        const sim::Machine& m = sim::find_machine(c.gpu);
        const int64_t sram = c.config.sram_bytes > 0 ? c.config.sram_bytes : m.sram_bytes;
        const sim::BlockChoice bc =
            sim::choose_blocks(c.problem, c.config.algo, sram, c.config.block_rows, c.config.block_cols);
        const double steps = std::ceil(double(c.problem.seq) / double(bc.block_rows)) *
                             std::ceil(double(c.problem.seq) / double(bc.block_cols));
        if (steps > double(detail::limits().max_tile_steps) * 16) {
            res.message = "blocks of " + std::to_string(bc.block_rows) + " x " + std::to_string(bc.block_cols) +
                          " make " + report::group_digits(int64_t(steps)) +
                          " tile steps; try larger blocks (they would also move far more bytes)";
            return res;
        }
        res.result = sim::simulate(c.problem, m, c.config);
    } catch (const sim::Error& e) {
        res.message = std::string("the simulator refuses this answer: ") + e.what();
        return res;
    }
    res.valid = true;
    const json aj = config_json(*res.result);
    try {
        const Value v =
            detail::eval_expr(ex.goal_expr, [&](const std::string& p) { return lookup_in(*lesson.context, &aj, p); });
        res.goal_value = v.num;
    } catch (const std::exception& e) {
        res.valid = false;
        res.message = std::string("the goal could not be evaluated: ") + e.what();
        return res;
    }
    res.passed = (!ex.goal_at_most || res.goal_value <= *ex.goal_at_most) &&
                 (!ex.goal_at_least || res.goal_value >= *ex.goal_at_least);
    std::ostringstream o;
    o << "B_r = " << res.result->block_rows << ", B_c = " << res.result->block_cols << ", "
      << sim::algo_name(res.result->algo) << ": HBM traffic "
      << report::human_bytes(static_cast<double>(res.result->totals.hbm_total().total())) << ", SRAM "
      << report::human_bytes(static_cast<double>(res.result->sram_peak_bytes)) << " of "
      << report::human_bytes(static_cast<double>(res.result->sram_bytes)) << ". Goal '" << ex.goal_expr
      << "' = " << num_text(res.goal_value);
    if (ex.goal_at_most) o << " (must be <= " << num_text(*ex.goal_at_most) << ")";
    if (ex.goal_at_least) o << " (must be >= " << num_text(*ex.goal_at_least) << ")";
    o << (res.passed ? ": met." : ": not met yet.");
    res.message = o.str();
    return res;
}

}  // namespace lessons
