// lessons/lib/parse.cpp — a lesson file (TOML) to a Lesson: every key checked, each error at its
// line and column; while it reads, it has the configurations simulated and the context computed
// (context.cpp) and the prose rendered (render.cpp). The only file of the library that reads TOML.
//
// [SECTIONS]  errors and positions · TOML helpers · configurations · softmax, error, measured ·
//             views and expectations · load_lesson
#include <algorithm>
#include <cctype>
#include <cmath>
#include <fstream>
#include <sstream>
#include <toml++/toml.h>

#include "lessons/lib/glossary.hpp"
#include "lessons/lib/internal.hpp"
#include "report/results.hpp"
#include "sim/kernel_model.hpp"

namespace lessons {

using detail::ExprError;
using detail::join;
using detail::lookup_in;
using detail::Missing;
using detail::Pos;
using detail::reflow;
using detail::render_node_text;
using detail::Source;
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

namespace {

Pos pos_of(const toml::node& n) {
    return {static_cast<int64_t>(n.source().begin.line), static_cast<int64_t>(n.source().begin.column)};
}
Pos pos_of(const toml::key& k) {
    return {static_cast<int64_t>(k.source().begin.line), static_cast<int64_t>(k.source().begin.column)};
}

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
const std::set<std::string> kReserved = {"machine",   "softmax", "error",  "measured", "answer", "lesson",
                                         "footprint", "fit",     "decode", "figure2",  "ceiling"};

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
    check_keys(s, t,
               {"algo",           "seq",        "head_dim", "batch",       "heads",      "dtype",      "gpu",
                "causal",         "window",     "scale",    "seed",        "block_rows", "block_cols", "sram",
                "numerics",       "record_row", "pass",     "l2",          "ceilings",   "timing",     "bwd_block_rows",
                "bwd_block_cols", "grid",       "middles",  "block_sparse"},
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
    if (t.contains("block_sparse")) {  // the fraction of key blocks each query block keeps (sim/mask.hpp)
        const toml::node& n = *t.get("block_sparse");
        c.problem.block_density = get_number(s, n, "block_sparse");
        if (!(c.problem.block_density > 0 && c.problem.block_density <= 1))
            s.fail(pos_of(n),
                   "'block_sparse' is the fraction of key blocks each query block keeps: above 0, at most 1");
    }
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
    if (t.contains("grid"))
        c.config.grid_order =
            choice("grid", {"launch", "static"}) == "static" ? sim::GridOrder::static_units : sim::GridOrder::launch;
    // the static order's middle blocks at odd T_r: "paired" (two heads' as one unit, the kernel now)
    // or "alone" (each head's its own unit, as flash2h ran until 2026-12-05)
    if (t.contains("middles")) c.config.lone_middles = choice("middles", {"paired", "alone"}) == "alone";
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

// ---------------------------------------------------------------- [softmax, error, measured]
struct Built {
    Lesson lesson;
    std::map<std::string, sim::Result> results;
};

SoftmaxExample parse_softmax(const Source& s, const toml::table& t) {
    check_keys(s, t, {"scores", "block", "values", "precision"}, "[softmax]");
    if (!t.contains("scores")) s.fail(pos_of(t), "[softmax] needs 'scores' (e.g. scores = [1.4, 3.9, 0.7, 2.2])");
    SoftmaxExample ex;
    for (auto&& x : get_array(s, *t.get("scores"), "scores")) ex.scores.push_back(get_number(s, x, "scores"));
    if (t.contains("block")) ex.block = get_int(s, *t.get("block"), "block");
    if (t.contains("values"))
        for (auto&& row : get_array(s, *t.get("values"), "values")) {
            std::vector<double> r;
            for (auto&& x : get_array(s, row, "values row")) r.push_back(get_number(s, x, "values"));
            ex.values.push_back(std::move(r));
        }
    if (t.contains("precision")) {
        const std::string p = get_string(s, *t.get("precision"), "precision");
        if (p == "fp64")
            ex.precision = sim::Precision::fp64;
        else if (p != "fp32")
            s.fail(pos_of(*t.get("precision")), "'precision' must be \"fp32\" or \"fp64\", got '" + p + "'");
    }
    if (ex.scores.size() > 4096) s.fail(pos_of(t), "[softmax]: at most 4096 scores");
    return ex;
}

detail::ErrorSpec parse_error(const Source& s, const std::string& name, const toml::table& t, const Built& b) {
    const std::string where = "[error." + name + "]";
    check_keys(s, t, {"actual", "expected"}, where);
    for (const char* k : {"actual", "expected"})
        if (!t.contains(k))
            s.fail(pos_of(t), where + " needs '" + k +
                                  "' (actual = a config name; expected = \"reference\", "
                                  "\"reference:CONFIG\" or a config name)");
    const toml::node& an = *t.get("actual");
    const toml::node& en = *t.get("expected");
    detail::ErrorSpec e;
    e.name = name;
    e.at_table = pos_of(t);
    e.at_actual = pos_of(an);
    e.at_expected = pos_of(en);
    e.actual = get_string(s, an, "actual");
    detail::output_of(s, where, e.actual, e.at_actual, b.results);  // before 'expected' is read
    e.expected = get_string(s, en, "expected");
    return e;
}

std::vector<detail::MeasuredSpec> parse_measured(const Source& s, const toml::table& all) {
    std::vector<detail::MeasuredSpec> out;
    for (auto&& [k, v] : all) {
        const std::string name(k.str());
        const std::string where = "[measured." + name + "]";
        if (!valid_name(name)) s.fail(pos_of(k), "measurement name '" + name + "' must be letters, digits and _");
        const toml::table& t = get_table(s, v, "measured." + name);
        check_keys(
            s, t, {"variant", "pass", "seq", "head_dim", "causal", "dtype", "mode", "file", "batch", "heads", "kv_len"},
            where);
        detail::MeasuredSpec m;
        m.name = name;
        if (t.contains("file")) {
            const toml::node& n = *t.get("file");
            m.file = get_string(s, n, "file");
            const bool plain = report::is_current_name(m.file) && m.file.substr(m.file.size() - 5) == ".json";
            if (!plain)
                s.fail(pos_of(n), where +
                                      ": 'file' names a current results file, card/kind.json under results/ (e.g. "
                                      "\"h200/decode.json\"), got '" +
                                      m.file + "'");
            if (m.file == "h200/bench.json") m.file.clear();
        }
        std::vector<const char*> required = {"variant"};
        if (m.file.empty()) required = {"variant", "seq", "head_dim"};
        for (const char* req : required)
            if (!t.contains(req)) s.fail(pos_of(t), where + " needs '" + req + "' (which row of the bench results)");
        m.variant = get_string(s, *t.get("variant"), "variant");
        if (t.contains("pass")) m.pass = get_string(s, *t.get("pass"), "pass");
        if (t.contains("seq")) m.seq = get_int(s, *t.get("seq"), "seq");
        if (t.contains("head_dim")) m.head_dim = get_int(s, *t.get("head_dim"), "head_dim");
        if (t.contains("batch")) m.batch = get_int(s, *t.get("batch"), "batch");
        if (t.contains("heads")) m.heads = get_int(s, *t.get("heads"), "heads");
        if (t.contains("kv_len")) m.kv_len = get_int(s, *t.get("kv_len"), "kv_len");
        if (t.contains("causal")) m.causal = get_bool(s, *t.get("causal"), "causal");
        if (t.contains("dtype")) m.dtype = get_string(s, *t.get("dtype"), "dtype");
        if (t.contains("mode")) m.mode = get_string(s, *t.get("mode"), "mode");
        out.push_back(std::move(m));
    }
    return out;
}

// [fp8.NAME]: the emulated FP8 forward's options (sim::Fp8Options), checked as the command checks them.
template <typename PosInt>
detail::MemorySpec parse_fp8(const Source& s, const toml::table& t, PosInt& pos_int, detail::MemorySpec& m) {
    sim::Fp8Options& o = m.fp8;
    o.seq = pos_int("seq", 1);
    o.head_dim = pos_int("head_dim", 1);
    if (t.contains("outliers")) o.outliers = pos_int("outliers", 0);
    if (t.contains("seed")) o.seed = static_cast<uint64_t>(pos_int("seed", 0));
    if (t.contains("incoherent")) o.incoherent = get_bool(s, *t.get("incoherent"), "incoherent");
    if (t.contains("outlier_scale")) o.outlier_scale = get_number(s, *t.get("outlier_scale"), "outlier_scale");
    if (t.contains("scales")) {
        const toml::node& n = *t.get("scales");
        const std::string v = get_string(s, n, "scales");
        const auto sc = sim::parse_enum<sim::Fp8Scales>(v);
        if (!sc) s.fail(pos_of(n), "'scales' must be block or tensor, got '" + v + "'");
        o.scales = *sc;
    }
    // a lesson loads in milliseconds: N^2 d at most 2^26 (N = 1024 at d = 64, 512 at d = 256)
    if (double(o.seq) * double(o.seq) * double(o.head_dim) > double(int64_t{1} << 26))
        s.fail(m.pos, "[fp8." + m.name + "]: N^2 d above 2^26; a lesson must load in milliseconds");
    try {
        o.validate();
    } catch (const sim::Error& e) { s.fail(m.pos, "[fp8." + m.name + "]: " + e.what()); }
    return m;
}

// [footprint.NAME] / [fit.NAME] / [decode.NAME]: a shape for the memory model or for decoding.
detail::MemorySpec parse_memory(const Source& s, detail::MemorySpec::Kind kind, const std::string& section,
                                const std::string& name, const toml::table& t) {
    const std::string where = "[" + section + "." + name + "]";
    detail::MemorySpec m;
    m.kind = kind;
    m.name = name;
    m.pos = pos_of(t);
    std::vector<std::string> known, required;
    if (kind == detail::MemorySpec::kFootprint) {
        known = {"algo", "pass", "seq", "batch", "heads", "head_dim", "dtype", "gpu", "kernel"};
        required = {"algo", "seq", "head_dim"};
    } else if (kind == detail::MemorySpec::kFit) {
        known = {"algo", "pass", "batch", "heads", "head_dim", "dtype", "gpu", "capacity"};
        required = {"algo", "head_dim"};
    } else if (kind == detail::MemorySpec::kDecode) {
        known = {"batch", "q_heads", "kv_heads", "q_len", "kv_len", "head_dim", "dtype", "gpu", "splits", "tile_keys"};
        required = {"kv_len", "head_dim"};
    } else if (kind == detail::MemorySpec::kKernel) {
        known = {"kernel", "pass", "seq", "batch", "heads", "head_dim", "causal", "dtype", "gpu"};
        required = {"kernel", "seq", "head_dim"};
    } else if (kind == detail::MemorySpec::kFp8) {
        known = {"seq", "head_dim", "scales", "incoherent", "outliers", "outlier_scale", "seed"};
        required = {"seq", "head_dim"};
    } else {
        known = {"gpus", "seq", "head_dim", "batch", "heads", "causal", "layout", "pass", "dtype", "gpu"};
        required = {"gpus", "seq", "head_dim"};
    }
    check_keys(s, t, known, where);
    for (const auto& req : required)
        if (!t.contains(req)) s.fail(m.pos, where + " needs '" + req + "'");
    auto pos_int = [&](const char* key, int64_t lo) {
        const toml::node& n = *t.get(key);
        const int64_t v = get_int(s, n, key);
        if (v < lo)
            s.fail(pos_of(n),
                   "'" + std::string(key) + "' must be at least " + std::to_string(lo) + ", got " + std::to_string(v));
        return v;
    };
    sim::DType dtype = sim::DType::fp16;
    if (t.contains("dtype")) {
        const toml::node& n = *t.get("dtype");
        const std::string d = get_string(s, n, "dtype");
        const auto dt = sim::parse_dtype(d);
        if (!dt) s.fail(pos_of(n), "unknown dtype '" + d + "' (use fp16, bf16 or fp32; fp8 in [kernel.NAME])");
        if (*dt == sim::DType::fp8 && kind != detail::MemorySpec::kKernel)
            s.fail(pos_of(n),
                   "dtype fp8 is modelled for the attention forward only: a [kernel.NAME] table "
                   "(kernel = \"flash2h\"), or [fp8.NAME] for its error");
        dtype = *dt;
    }
    if (kind == detail::MemorySpec::kFp8) return parse_fp8(s, t, pos_int, m);
    if (t.contains("gpu")) {
        const toml::node& n = *t.get("gpu");
        m.gpu = get_string(s, n, "gpu");
        try {
            m.gpu = sim::find_machine(m.gpu).name;
        } catch (const sim::Error& e) { s.fail(pos_of(n), e.what()); }
    }
    if (kind == detail::MemorySpec::kDecode) {
        sim::DecodeProblem& p = m.decode;
        p.dtype = t.contains("dtype") ? dtype : sim::DType::bf16;
        p.kv_len = pos_int("kv_len", 1);
        p.head_dim = pos_int("head_dim", 1);
        if (t.contains("batch")) p.batch = pos_int("batch", 1);
        if (t.contains("q_heads")) p.q_heads = pos_int("q_heads", 1);
        if (t.contains("kv_heads")) p.kv_heads = pos_int("kv_heads", 1);
        if (t.contains("q_len")) p.q_len = pos_int("q_len", 1);
        if (t.contains("splits")) m.decode_config.splits = pos_int("splits", 1);
        if (t.contains("tile_keys")) m.decode_config.tile_keys = pos_int("tile_keys", 1);
        return m;
    }
    // [ring.NAME] and [kernel.NAME]: an attention problem (bf16 unless given)
    auto attention = [&](sim::Problem& p) {
        p.dtype = t.contains("dtype") ? dtype : sim::DType::bf16;
        p.seq = pos_int("seq", 1);
        p.head_dim = pos_int("head_dim", 1);
        if (t.contains("batch")) p.batch = pos_int("batch", 1);
        if (t.contains("heads")) p.heads = pos_int("heads", 1);
        if (t.contains("causal")) p.causal = get_bool(s, *t.get("causal"), "causal");
    };
    if (kind == detail::MemorySpec::kRing) {
        sim::RingProblem& p = m.ring;
        p.gpus = pos_int("gpus", 1);
        attention(p.attn);
        if (t.contains("layout")) {
            const toml::node& n = *t.get("layout");
            const std::string v = get_string(s, n, "layout");
            const auto lay = sim::parse_enum<sim::RingLayout>(v);
            if (!lay) s.fail(pos_of(n), "'layout' must be balanced or contiguous, got '" + v + "'");
            p.layout = *lay;
        }
        if (t.contains("pass")) {
            const toml::node& n = *t.get("pass");
            const std::string v = get_string(s, n, "pass");
            const auto ps = sim::parse_pass(v);
            if (!ps) s.fail(pos_of(n), "'pass' must be one of forward, backward, both, got '" + v + "'");
            p.pass = *ps;
        }
        return m;
    }
    if (kind == detail::MemorySpec::kKernel) {
        attention(m.shape);
        if (t.contains("pass")) {
            const toml::node& n = *t.get("pass");
            const std::string v = get_string(s, n, "pass");
            const auto ps = sim::parse_pass(v);
            if (!ps || *ps == sim::Pass::both) s.fail(pos_of(n), "'pass' must be forward or backward, got '" + v + "'");
            m.pass = *ps;
        }
    }
    if (t.contains("kernel")) {  // [footprint.NAME]: the CUDA kernel's own buffers; [kernel.NAME]: its model
        const toml::node& n = *t.get("kernel");
        m.kernel = get_string(s, n, "kernel");
        const auto names = sim::kernel_names();
        if (std::find(names.begin(), names.end(), m.kernel) == names.end())
            s.fail(pos_of(n), "unknown kernel '" + m.kernel + "' (standard, flash1, flash2 or flash2h)");
    }
    if (kind == detail::MemorySpec::kKernel) return m;
    m.shape.dtype = dtype;
    m.shape.head_dim = pos_int("head_dim", 1);
    if (t.contains("seq")) m.shape.seq = pos_int("seq", 1);
    if (t.contains("batch")) m.shape.batch = pos_int("batch", 1);
    if (t.contains("heads")) m.shape.heads = pos_int("heads", 1);
    {
        const toml::node& n = *t.get("algo");
        const std::string a = get_string(s, n, "algo");
        const auto algo = sim::parse_algo(a);
        if (!algo) s.fail(pos_of(n), "unknown algo '" + a + "' (use standard, flash1 or flash2)");
        m.algo = *algo;
    }
    if (t.contains("pass")) {
        const toml::node& n = *t.get("pass");
        const std::string v = get_string(s, n, "pass");
        const auto ps = sim::parse_pass(v);
        if (!ps || v == "step") s.fail(pos_of(n), "'pass' must be one of forward, backward, both, got '" + v + "'");
        m.pass = *ps;
    }
    if (t.contains("capacity")) {
        const toml::node& n = *t.get("capacity");
        m.capacity = get_number(s, n, "capacity");
        if (!(m.capacity > 0)) s.fail(pos_of(n), "'capacity' must be a positive number of bytes");
    }
    return m;
}

// ---------------------------------------------------------------- [views and expectations]
View parse_view(const Source& s, const toml::table& t, const Lesson& l,
                const std::map<std::string, sim::Result>& results, const std::vector<std::string>& rings,
                const std::vector<std::string>& decodes) {
    View v;
    check_keys(s, t,
               {"panel", "config", "algo", "compare", "step_from", "step_to", "row", "tile_row", "tile_col", "ring",
                "block", "chart", "pass", "head_dim", "mask", "file", "decode"},
               "view");
    static const std::vector<std::string> panels = {"memory",   "softmax",  "compare", "scores", "timeline",
                                                    "charts",   "measured", "ring",    "exact",  "footprint",
                                                    "decoding", "roofline", "text"};
    if (t.contains("panel")) {
        v.panel = get_string(s, *t.get("panel"), "panel");
        if (std::find(panels.begin(), panels.end(), v.panel) == panels.end())
            s.fail(pos_of(*t.get("panel")), "unknown panel '" + v.panel + "' (known: " + join(panels) + ")");
    }
    // the ring view shows one of the lesson's [ring.NAME] tables, named by 'ring'
    if (t.contains("ring")) {
        const toml::node& n = *t.get("ring");
        v.ring = get_string(s, n, "ring");
        if (v.panel != "ring") s.fail(pos_of(n), "'ring' belongs to a view with panel = \"ring\"");
        if (std::find(rings.begin(), rings.end(), v.ring) == rings.end())
            s.fail(pos_of(n), "ring: no [ring." + v.ring + "] in this lesson" +
                                  (rings.empty() ? std::string(" (it has none)") : " (defined: " + join(rings) + ")"));
    } else if (v.panel == "ring") {
        s.fail(pos_of(t), "panel = \"ring\" needs ring = \"NAME\", one of the lesson's [ring.NAME] tables" +
                              (rings.empty() ? std::string(" (it has none)") : " (" + join(rings) + ")"));
    }
    // the decoding view shows one of the lesson's [decode.NAME] tables, named by 'decode'
    if (t.contains("decode")) {
        const toml::node& n = *t.get("decode");
        v.decode = get_string(s, n, "decode");
        if (v.panel != "decoding") s.fail(pos_of(n), "'decode' belongs to a view with panel = \"decoding\"");
        if (std::find(decodes.begin(), decodes.end(), v.decode) == decodes.end())
            s.fail(pos_of(n),
                   "decode: no [decode." + v.decode + "] in this lesson" +
                       (decodes.empty() ? std::string(" (it has none)") : " (defined: " + join(decodes) + ")"));
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
    // keys of one panel each: refused beside another panel, checked against what that panel offers
    auto only_with = [&](const char* key, const char* panel) {
        if (t.contains(key) && v.panel != panel)
            s.fail(pos_of(*t.get(key)), std::string("'") + key + "' belongs to a view with panel = \"" + panel + "\"");
    };
    auto one_of = [&](const char* key, const std::vector<std::string>& allowed) {
        const std::string x = get_string(s, *t.get(key), key);
        if (std::find(allowed.begin(), allowed.end(), x) == allowed.end())
            s.fail(pos_of(*t.get(key)), std::string("'") + key + "' = \"" + x + "\" is not one of " + join(allowed));
        return x;
    };
    only_with("block", "softmax");
    only_with("chart", "charts");
    for (const char* key : {"pass", "head_dim", "mask", "file"}) only_with(key, "measured");
    if (t.contains("file")) {
        v.file = get_string(s, *t.get("file"), "file");
        if (!report::is_current_name(v.file) || v.file.substr(v.file.size() - 5) != ".json")
            s.fail(pos_of(*t.get("file")),
                   "'file' names a current results file, card/kind.json under results/, e.g. \"h200/ring.json\"");
    }
    if (t.contains("block")) {
        v.block = get_int(s, *t.get("block"), "block");
        if (v.block < 1)
            s.fail(pos_of(*t.get("block")), "'block' counts from 1 (the first key block), as the panel does");
        // what the panel will show: the named config's recorded row, else the lesson's [softmax] example
        int64_t blocks = -1;
        if (!v.config.empty() && r && r->record)
            blocks = static_cast<int64_t>(r->record->blocks.size());
        else if (l.softmax && l.softmax->block > 0)
            blocks = (static_cast<int64_t>(l.softmax->scores.size()) + l.softmax->block - 1) / l.softmax->block;
        if (blocks >= 0 && v.block > blocks)
            s.fail(pos_of(*t.get("block")), "'block' = " + std::to_string(v.block) + " but the panel's row has " +
                                                std::to_string(blocks) + " key block(s)");
    }
    if (t.contains("chart")) v.chart = one_of("chart", {"dram", "paper"});
    if (t.contains("pass")) v.pass = one_of("pass", {"forward", "backward"});
    if (t.contains("mask")) v.mask = one_of("mask", {"none", "causal"});
    if (t.contains("head_dim")) {
        v.head_dim = get_int(s, *t.get("head_dim"), "head_dim");
        if (v.head_dim < 1) s.fail(pos_of(*t.get("head_dim")), "'head_dim' must be at least 1");
    }
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

// The [exercise] table: a choice of settings with a goal, or a prediction of one number; checked against the
// lesson's computed values (`ctx`) and stored in `l.exercise`.
void parse_exercise(const Source& s, const toml::table& t, Lesson& l, const std::shared_ptr<Context>& ctx) {
    check_keys(s, t,
               {"prompt", "base", "fields", "goal", "at_most", "at_least", "goal_text", "solution", "not_solution",
                "predict", "tolerance", "require", "hint"},
               "[exercise]");
    const bool predict = t.contains("predict");
    for (const char* req : {"prompt", "base", "fields", "goal", "solution"}) {
        if (predict && (std::string(req) == "fields" || std::string(req) == "goal")) continue;
        if (!t.contains(req)) s.fail(pos_of(t), std::string("[exercise] needs '") + req + "'");
    }
    Exercise ex;
    const toml::node& pn = *t.get("prompt");
    ex.prompt = reflow(render_node_text(s, *ctx, get_string(s, pn, "prompt"), pos_of(pn)));
    const toml::node& bn = *t.get("base");
    ex.base = get_string(s, bn, "base");
    if (!l.configs.count(ex.base)) s.fail(pos_of(bn), "[exercise] base: no configuration named '" + ex.base + "'");
    static const std::vector<std::string> settable = {"algo", "block_rows", "block_cols", "sram",
                                                      "seq",  "head_dim",   "dtype"};
    if (predict) {
        // A prediction: one number, compared with an expression of the lesson's own values.
        const toml::node& n = *t.get("predict");
        ex.predict = get_string(s, n, "predict");
        try {
            detail::eval_expr(ex.predict, [&](const std::string& p) { return lookup_in(*ctx, nullptr, p); });
        } catch (const ExprError& x) {
            const Pos gp = pos_of(n);
            s.fail({gp.line, gp.column + 1 + static_cast<int64_t>(x.pos)},
                   "in predict '" + ex.predict + "': " + x.what());
        }
        if (t.contains("tolerance")) {
            ex.tolerance = get_number(s, *t.get("tolerance"), "tolerance");
            if (!(ex.tolerance > 0 && ex.tolerance < 1))
                s.fail(pos_of(*t.get("tolerance")), "'tolerance' is relative: between 0 and 1 (0.02 is 2%)");
        }
        if (t.contains("fields") || t.contains("goal"))
            s.fail(pos_of(t), "a prediction ('predict') takes one 'value'; it has no 'fields' or 'goal'");
        ex.fields = {"value"};
    }
    static const toml::array no_fields;
    for (auto&& f : predict ? no_fields : get_array(s, *t.get("fields"), "fields")) {
        const std::string name = get_string(s, f, "fields");
        if (std::find(settable.begin(), settable.end(), name) == settable.end())
            s.fail(pos_of(f), "a learner cannot set '" + name + "' (settable: " + join(settable) + ")");
        ex.fields.push_back(name);
    }
    // Conditions on the answer: refusals of degenerate answers, and hints that explain a miss.
    const json& base_json = ctx->root[ex.base];
    const json predict_json = {{"value", 1.0}, {"ratio", 1.0}};
    for (const char* key : {"require", "hint"}) {
        if (!t.contains(key)) continue;
        for (auto&& cn : get_array(s, *t.get(key), key)) {
            const toml::table& ct = get_table(s, cn, key);
            const std::string where = std::string("[[exercise.") + key + "]]";
            check_keys(s, ct, {"expr", "at_least", "at_most", "text"}, where);
            if (!ct.contains("expr") || !ct.contains("text")) s.fail(pos_of(ct), where + " needs 'expr' and 'text'");
            AnswerCondition c;
            c.expr = get_string(s, *ct.get("expr"), "expr");
            c.text = get_string(s, *ct.get("text"), "text");
            if (ct.contains("at_least")) c.at_least = get_number(s, *ct.get("at_least"), "at_least");
            if (ct.contains("at_most")) c.at_most = get_number(s, *ct.get("at_most"), "at_most");
            if (!c.at_least && !c.at_most) s.fail(pos_of(ct), where + " needs 'at_least' or 'at_most'");
            try {
                detail::condition_holds(*ctx, predict ? predict_json : base_json, c);
            } catch (const std::exception& x) {
                s.fail(pos_of(*ct.get("expr")), "in " + where + " expr '" + c.expr + "': " + x.what());
            }
            (std::string(key) == "require" ? ex.requires_ : ex.hints).push_back(c);
        }
    }
    if (predict) {
        l.exercise = ex;
        l.context = ctx;
        const toml::node& n = *t.get("solution");
        l.exercise->solution = get_string(s, n, "solution");
        if (t.contains("not_solution"))
            l.exercise->not_solution = get_string(s, *t.get("not_solution"), "not_solution");
    }
    if (!predict && ex.fields.empty())
        s.fail(pos_of(*t.get("fields")), "'fields' lists what the learner chooses; it is empty");
    if (!predict) {
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
}

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
               {"id", "number", "title", "summary", "config", "softmax", "error", "measured", "ceiling", "footprint",
                "fit", "decode", "figure2", "ring", "kernel", "fp8", "step", "exercise"},
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
    detail::add_machines(*ctx);
    // Configurations, simulated.
    const toml::table& cfgs = get_table(s, *root.get("config"), "config");
    if (cfgs.empty()) s.fail(pos_of(cfgs), "[config] has no configurations; add one like [config.standard]");
    std::vector<std::pair<std::pair<int64_t, int64_t>, std::string>> placed;  // (line, column) of each table
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
        sim::Result r = detail::simulate_at_load(s, c.pos, c.spec);
        ctx->root[name] = detail::config_json(r);
        b.results.emplace(name, std::move(r));
        l.configs.emplace(name, c.spec);
        placed.push_back({{c.pos.line, c.pos.column}, name});
    }
    // the table iterates its keys sorted by name; a lesson's first configuration is the file's first
    std::sort(placed.begin(), placed.end());
    for (auto& [at, name] : placed) l.config_order.push_back(std::move(name));
    if (root.contains("softmax")) {
        const toml::table& t = get_table(s, *root.get("softmax"), "softmax");
        l.softmax = parse_softmax(s, t);
        detail::add_softmax(s, pos_of(t), *l.softmax, *ctx);
    }
    if (root.contains("error"))
        for (auto&& [k, v] : get_table(s, *root.get("error"), "error")) {
            const std::string name(k.str());
            if (!valid_name(name)) s.fail(pos_of(k), "comparison name '" + name + "' must be letters, digits and _");
            detail::add_error(s, parse_error(s, name, get_table(s, v, "error." + name), b), b.results, l.configs, *ctx);
        }
    std::vector<std::string> rings;    // [ring.NAME] tables, for the steps' ring views
    std::vector<std::string> decodes;  // [decode.NAME] tables, for the steps' decoding views
    for (const auto& [section, kind] :
         std::vector<std::pair<std::string, detail::MemorySpec::Kind>>{{"footprint", detail::MemorySpec::kFootprint},
                                                                       {"fit", detail::MemorySpec::kFit},
                                                                       {"decode", detail::MemorySpec::kDecode},
                                                                       {"ring", detail::MemorySpec::kRing},
                                                                       {"kernel", detail::MemorySpec::kKernel},
                                                                       {"fp8", detail::MemorySpec::kFp8}}) {
        if (!root.contains(section)) continue;
        for (auto&& [k, v] : get_table(s, *root.get(section), section)) {
            const std::string name(k.str());
            if (!valid_name(name)) s.fail(pos_of(k), section + " name '" + name + "' must be letters, digits and _");
            detail::add_memory(s, parse_memory(s, kind, section, name, get_table(s, v, section + "." + name)), *ctx);
            if (kind == detail::MemorySpec::kRing) rings.push_back(name);
            if (kind == detail::MemorySpec::kDecode) decodes.push_back(name);
        }
    }
    if (root.contains("figure2") && get_bool(s, *root.get("figure2"), "figure2"))
        detail::add_figure2(s, pos_of(*root.get("figure2")), *ctx);
    if (root.contains("measured"))
        detail::add_measured(s.file, parse_measured(s, get_table(s, *root.get("measured"), "measured")), *ctx);
    else { ctx->root["measured"] = json::object(); }
    if (root.contains("ceiling"))
        for (auto&& [k, v] : get_table(s, *root.get("ceiling"), "ceiling")) {
            const std::string name(k.str());
            const std::string where = "[ceiling." + name + "]";
            if (!valid_name(name))
                s.fail(pos_of(k), "ceiling name '" + name +
                                      "' must be letters, digits and _ (as the ceilings file "
                                      "names it, e.g. smem_read)");
            const toml::table& t = get_table(s, v, "ceiling." + name);
            check_keys(s, t, {"file"}, where);
            detail::CeilingSpec c;
            c.name = name;
            c.pos = pos_of(t);
            if (t.contains("file")) {
                const toml::node& n = *t.get("file");
                c.file = get_string(s, n, "file");
                const bool plain = report::is_current_name(c.file) && c.file.substr(c.file.size() - 5) == ".json";
                if (!plain)
                    s.fail(pos_of(n), where +
                                          ": 'file' names a current ceilings file, card/kind.json under results/ (e.g. "
                                          "\"h200/ceilings.json\"), got '" +
                                          c.file + "'");
            }
            detail::add_ceiling(s, s.file, c, *ctx);
        }

    if (root.contains("summary")) {
        const toml::node& n = *root.get("summary");
        l.summary = render_node_text(s, *ctx, get_string(s, n, "summary"), pos_of(n));
    }
    // Steps.
    const toml::array& steps = get_array(s, *root.get("step"), "step");
    if (steps.empty()) s.fail(pos_of(steps), "the lesson has no steps; add [[step]] tables");
    for (auto&& sn : steps) {
        const toml::table& st = get_table(s, sn, "step");
        check_keys(s, st, {"title", "text", "view", "expect", "terms"}, "[[step]]");
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
            step.view = parse_view(s, get_table(s, *st.get("view"), "view"), l, b.results, rings, decodes);
        else
            step.view.panel = "text";
        if (st.contains("terms"))
            for (auto&& tn2 : get_array(s, *st.get("terms"), "terms")) {
                const std::string term = get_string(s, tn2, "terms");
                if (!glossary_has(term))
                    s.fail(pos_of(tn2), "terms: '" + term + "' has no glossary entry (lessons/lib/glossary.hpp)");
                step.terms.push_back(term);
            }
        if (st.contains("expect"))
            for (auto&& en : get_array(s, *st.get("expect"), "expect"))
                step.expect.push_back(parse_expect(s, get_table(s, en, "expect"), *ctx));
        l.steps.push_back(std::move(step));
    }
    // Exercise.
    if (root.contains("exercise")) parse_exercise(s, get_table(s, *root.get("exercise"), "exercise"), l, ctx);
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

}  // namespace lessons
