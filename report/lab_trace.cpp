#include "report/lab_trace.hpp"

#include <algorithm>
#include <filesystem>
#include <fstream>
#include <limits>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>

#include "report/report.hpp"
#include "sim/machine.hpp"

namespace report {

using nlohmann::json;

namespace {

const char* role_name(sim::LabRole r) {
    switch (r) {
        case sim::LabRole::input:
            return "input";
        case sim::LabRole::output:
            return "output";
        case sim::LabRole::scratch:
            return "scratch";
    }
    return "scratch";
}

// The fixes a reader of a bad file is told: how a good one is made.
constexpr const char* kHowToWrite = "write it with TileMachine.save_trace(FILE) from Python";

}  // namespace

LabTraceInfo complete_lab_trace_info(const sim::TileMachine& tm, LabTraceInfo info) {
    const sim::LabTensor* q = nullptr;
    for (const auto& t : tm.tensors())
        if (t.name == "Q") q = &t;
    if (info.problem.seq <= 0 || info.problem.head_dim <= 0) {
        if (!q)
            throw sim::Error(
                "the trace needs the problem's N and d: the machine has no tensor Q to read them from; pass seq= and "
                "head_dim=");
        if (info.problem.seq <= 0) info.problem.seq = q->rows;
        if (info.problem.head_dim <= 0) info.problem.head_dim = q->cols;
    }
    if (q) info.problem.dtype = q->dtype;
    // the first loads of Q and K give the tiles (row_tile 0: the tile at offset 0, a full one)
    for (const sim::Event& e : tm.trace().events) {
        if (e.kind != sim::EventKind::load) continue;
        if (info.block_rows <= 0 && e.tensor == sim::Tensor::Q) info.block_rows = e.rows;
        if (info.block_cols <= 0 && e.tensor == sim::Tensor::K) info.block_cols = e.rows;
    }
    if (info.block_rows <= 0 || info.block_cols <= 0)
        throw sim::Error("the trace needs the tiles B_r and B_c: the run loads no " +
                         std::string(info.block_rows <= 0 ? "Q" : "K") +
                         " to read them from; pass block_rows= and "
                         "block_cols=");
    return info;
}

std::string lab_trace_json(const sim::TileMachine& tm, const LabTraceInfo& info) {
    json j;
    j["format"] = kLabTraceFormat;
    j["version"] = kLabTraceVersion;
    j["problem"] = {{"seq", info.problem.seq},
                    {"head_dim", info.problem.head_dim},
                    {"dtype", std::string(sim::dtype_name(info.problem.dtype))},
                    {"causal", info.problem.causal}};
    j["tiles"] = {{"block_rows", info.block_rows}, {"block_cols", info.block_cols}};
    j["algo"] = std::string(sim::algo_name(info.algo));
    j["pass"] = std::string(sim::pass_name(info.pass));
    j["sram"] = {{"capacity", tm.sram_capacity()}, {"peak", tm.sram_peak()}};
    json ts = json::array();
    for (const auto& t : tm.tensors())
        ts.push_back({{"name", t.name},
                      {"counts_as", std::string(sim::tensor_name(t.traced))},
                      {"rows", t.rows},
                      {"cols", t.cols},
                      {"dtype", std::string(sim::dtype_name(t.dtype))},
                      {"role", role_name(t.role)}});
    j["tensors"] = ts;
    json ev = json::array();
    for (const sim::Event& e : tm.trace().events)
        ev.push_back({{"kind", std::string(sim::event_kind_name(e.kind))},
                      {"tensor", std::string(sim::tensor_name(e.tensor))},
                      {"row_tile", e.row_tile},
                      {"col_tile", e.col_tile},
                      {"rows", e.rows},
                      {"cols", e.cols},
                      {"bytes", e.bytes},
                      {"flops", {{"matmul", e.flops.matmul}, {"exp", e.flops.exp}, {"other", e.flops.other}}},
                      {"step", e.step}});
    j["events"] = ev;
    return j.dump(1) + "\n";
}

void save_lab_trace(const std::string& path, const sim::TileMachine& tm, const LabTraceInfo& info) {
    const std::string text = lab_trace_json(tm, info);
    std::ofstream f(path, std::ios::binary);
    if (!f) throw sim::Error("cannot write the trace to " + path + ": check that its folder exists and is writable");
    f << text;
    if (!f.flush()) throw sim::Error("writing the trace to " + path + " failed (disk full?)");
}

namespace {

// A reader of one parsed file: every complaint names the file and the field.
struct Reader {
    const std::string& path;
    [[noreturn]] void fail(const std::string& what) const {
        throw sim::Error("trace " + path + ": " + what + "; " + kHowToWrite);
    }
    const json& field(const json& o, const char* key, const std::string& where) const {
        if (!o.is_object() || !o.contains(key)) fail("'" + where + key + "' is missing");
        return o.at(key);
    }
    int64_t integer(const json& o, const char* key, const std::string& where, int64_t lo,
                    int64_t hi = std::numeric_limits<int64_t>::max()) const {
        const json& v = field(o, key, where);
        if (!v.is_number_integer() || v.get<int64_t>() < lo || v.get<int64_t>() > hi)
            fail("'" + where + key + "' must be an integer " +
                 (hi == std::numeric_limits<int64_t>::max()
                      ? "of at least " + std::to_string(lo)
                      : "from " + std::to_string(lo) + " to " + std::to_string(hi)) +
                 ", got " + v.dump());
        return v.get<int64_t>();
    }
    std::string text(const json& o, const char* key, const std::string& where) const {
        const json& v = field(o, key, where);
        if (!v.is_string()) fail("'" + where + key + "' must be a string, got " + v.dump());
        return v.get<std::string>();
    }
    template <class E>
    E named(const json& o, const char* key, const std::string& where, const char* choices) const {
        const std::string s = text(o, key, where);
        const auto e = sim::parse_enum<E>(s);
        if (!e) fail("'" + where + key + "' is '" + s + "'; it must be one of " + choices);
        return *e;
    }
};

void read_header(const Reader& rd, const json& j, LabTrace& t) {
    if (!j.is_object() || !j.contains("format") || j["format"] != kLabTraceFormat)
        throw sim::Error("trace " + t.path + " is JSON but not a flashsim lab trace (no \"format\": \"" +
                         kLabTraceFormat + "\"); " + kHowToWrite);
    const json& ver = rd.field(j, "version", "");
    if (!ver.is_number_integer() || ver.get<int64_t>() != kLabTraceVersion)
        throw sim::Error("trace " + t.path + " is version " + ver.dump() + "; this flashsim reads version " +
                         std::to_string(kLabTraceVersion) + ": write it again with this build's save_trace");
    const json& p = rd.field(j, "problem", "");
    t.info.problem.seq = rd.integer(p, "seq", "problem.", 1);
    t.info.problem.head_dim = rd.integer(p, "head_dim", "problem.", 1);
    t.info.problem.dtype = rd.named<sim::DType>(p, "dtype", "problem.", "fp16, bf16, fp32");
    const json& c = rd.field(p, "causal", "problem.");
    if (!c.is_boolean()) rd.fail("'problem.causal' must be true or false, got " + c.dump());
    t.info.problem.causal = c.get<bool>();
    const json& tiles = rd.field(j, "tiles", "");
    t.info.block_rows = rd.integer(tiles, "block_rows", "tiles.", 1);
    t.info.block_cols = rd.integer(tiles, "block_cols", "tiles.", 1);
    t.info.algo = rd.named<sim::Algo>(j, "algo", "", "standard, flash1, flash2");
    t.info.pass = rd.named<sim::Pass>(j, "pass", "", "forward, backward, both");
    const json& s = rd.field(j, "sram", "");
    t.sram_capacity = rd.integer(s, "capacity", "sram.", 1);
    t.sram_peak = rd.integer(s, "peak", "sram.", 0);
    try {
        t.info.problem.validate();
    } catch (const sim::Error& e) { rd.fail(std::string("its problem is refused: ") + e.what()); }
}

void read_tensors(const Reader& rd, const json& j, LabTrace& t) {
    const json& ts = rd.field(j, "tensors", "");
    if (!ts.is_array() || ts.empty()) rd.fail("'tensors' must be a list of the run's tensors");
    for (size_t k = 0; k < ts.size(); ++k) {
        const std::string where = "tensors[" + std::to_string(k) + "].";
        LabTraceTensor x;
        x.name = rd.text(ts[k], "name", where);
        x.counts_as = rd.named<sim::Tensor>(ts[k], "counts_as", where,
                                            "Q, K, V, O, S, P, m, l, LSE, dO, dQ, dK, "
                                            "dV, dS, dP, D");
        x.rows = rd.integer(ts[k], "rows", where, 1);
        x.cols = rd.integer(ts[k], "cols", where, 1);
        x.dtype = rd.named<sim::DType>(ts[k], "dtype", where, "fp16, bf16, fp32");
        x.role = rd.text(ts[k], "role", where);
        t.tensors.push_back(std::move(x));
    }
}

void read_events(const Reader& rd, const json& j, LabTrace& t) {
    const json& ev = rd.field(j, "events", "");
    if (!ev.is_array()) rd.fail("'events' must be a list");
    std::set<sim::Tensor> in_hbm;
    std::string names;
    for (const auto& x : t.tensors)
        if (in_hbm.insert(x.counts_as).second)
            names += (names.empty() ? "" : ", ") + std::string(sim::tensor_name(x.counts_as));
    int64_t last_step = 0;
    for (size_t k = 0; k < ev.size(); ++k) {
        const std::string where = "events[" + std::to_string(k) + "].";
        sim::Event e;
        e.kind = rd.named<sim::EventKind>(ev[k], "kind", where, "load, store, compute, rescale");
        const std::string tn = rd.text(ev[k], "tensor", where);
        const auto tensor = sim::parse_enum<sim::Tensor>(tn);
        const bool moves = e.kind == sim::EventKind::load || e.kind == sim::EventKind::store;
        if (!tensor || (moves && !in_hbm.count(*tensor)))
            rd.fail("event " + std::to_string(k) + " (" + std::string(sim::event_kind_name(e.kind)) +
                    ") names tensor '" + tn + "', which is not one of the trace's tensors (" + names + ")");
        e.tensor = *tensor;
        constexpr int64_t i32 = std::numeric_limits<int32_t>::max();
        e.row_tile = static_cast<int32_t>(rd.integer(ev[k], "row_tile", where, -1, i32));
        e.col_tile = static_cast<int32_t>(rd.integer(ev[k], "col_tile", where, -1, i32));
        e.rows = static_cast<int32_t>(rd.integer(ev[k], "rows", where, 0, i32));
        e.cols = static_cast<int32_t>(rd.integer(ev[k], "cols", where, 0, i32));
        e.bytes = rd.integer(ev[k], "bytes", where, 0);
        if (ev[k].contains("flops")) {
            const json& f = ev[k]["flops"];
            e.flops = {rd.integer(f, "matmul", where + "flops.", 0), rd.integer(f, "exp", where + "flops.", 0),
                       rd.integer(f, "other", where + "flops.", 0)};
        }
        e.step = rd.integer(ev[k], "step", where, 0);
        if (e.step < last_step)
            rd.fail("event " + std::to_string(k) + " is in step " + std::to_string(e.step) + ", after step " +
                    std::to_string(last_step) + ": the events must come in the order they ran");
        last_step = e.step;
        if (e.kind == sim::EventKind::load) t.totals[e.tensor].read_bytes += e.bytes;
        if (e.kind == sim::EventKind::store) t.totals[e.tensor].write_bytes += e.bytes;
        t.totals.flops += e.flops;
        t.trace.events.push_back(e);
    }
    t.trace.events_total = static_cast<int64_t>(t.trace.events.size());
    t.trace.steps_per_head = t.trace.events.empty() ? 0 : last_step + 1;
    t.totals.steps = t.trace.steps_per_head;
}

}  // namespace

LabTrace parse_lab_trace(const std::string& text, const std::string& path) {
    LabTrace t;
    t.path = path;
    json j;
    try {
        j = json::parse(text);
    } catch (const json::parse_error& e) {
        throw sim::Error("trace " + path + " is not JSON (at byte " + std::to_string(e.byte) + "); " + kHowToWrite);
    }
    const Reader rd{t.path};
    read_header(rd, j, t);
    read_tensors(rd, j, t);
    read_events(rd, j, t);
    return t;
}

LabTrace read_lab_trace(const std::string& path) {
    std::error_code ec;
    if (!std::filesystem::exists(path, ec))
        throw sim::Error("trace " + path +
                         " does not exist; give the path of a file written by "
                         "TileMachine.save_trace (or flashsim lab check N --trace FILE)");
    if (std::filesystem::is_directory(path, ec))
        throw sim::Error("trace " + path + " is a folder; give the path of the trace file in it");
    std::ifstream f(path, std::ios::binary);
    if (!f) throw sim::Error("cannot read trace " + path + ": check its permissions");
    std::ostringstream s;
    s << f.rdbuf();
    return parse_lab_trace(s.str(), path);
}

sim::Result learner_result(const LabTrace& t) {
    sim::Result r;
    r.problem = t.info.problem;
    r.machine = sim::find_machine("H200");
    r.algo = t.info.algo;
    r.pass = sim::Pass::forward;  // the tile machine records one pass: its events are drawn as a forward's
    r.block_rows = t.info.block_rows;
    r.block_cols = t.info.block_cols;
    r.T_r = (r.problem.seq + r.block_rows - 1) / r.block_rows;
    r.T_c = (r.problem.seq + r.block_cols - 1) / r.block_cols;
    r.sram_bytes = t.sram_capacity;
    r.sram_peak_bytes = t.sram_peak;
    // the machine records no buffers: its peak, as one, fills the SRAM bar as far as the run went
    r.sram_buffers = {{"the learner's tiles at their peak", t.sram_peak}};
    r.block_note = "the learner's tiles";
    r.trace = t.trace;
    r.totals = r.forward_totals = t.totals;
    return r;
}

sim::Result builtin_result(const LabTrace& t) {
    sim::Config c;
    c.algo = t.info.algo;
    c.pass = t.info.pass;
    c.block_rows = t.info.block_rows;
    c.block_cols = t.info.block_cols;
    if (t.info.pass != sim::Pass::forward) {
        c.bwd_block_rows = t.info.block_rows;
        c.bwd_block_cols = t.info.block_cols;
    }
    c.numerics = sim::Numerics::off;
    c.l2 = sim::L2Mode::off;
    c.timing = false;
    try {
        return sim::simulate(t.info.problem, sim::find_machine("H200"), c);
    } catch (const sim::Error& e) {
        throw sim::Error("the built-in " + std::string(sim::algo_name(t.info.algo)) + " at B_r " +
                         std::to_string(t.info.block_rows) + ", B_c " + std::to_string(t.info.block_cols) + " (trace " +
                         t.path + ") is refused: " + e.what());
    }
}

std::string lab_run_line(const char* who, const sim::Totals& t, int64_t steps, int64_t sram_peak) {
    const sim::Traffic h = t.hbm_total();
    return std::string(who) + ": " + group_digits(h.total()) + " B moved (read " + group_digits(h.read_bytes) +
           ", written " + group_digits(h.write_bytes) + "), " + group_digits(t.flops.total()) + " FLOPs, " +
           group_digits(steps) + " steps, SRAM peak " + group_digits(sram_peak) + " B";
}

}  // namespace report
