#include "viz/measurement.hpp"

#include <algorithm>
#include <cctype>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <sstream>
#include <vector>

#include "report/results.hpp"

namespace viz {

using nlohmann::json;

namespace {

std::optional<double> num(const json& o, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
        auto it = o.find(k);
        if (it != o.end() && it->is_number()) return it->get<double>();
    }
    return std::nullopt;
}

std::string str(const json& o, std::initializer_list<const char*> keys) {
    for (const char* k : keys) {
        auto it = o.find(k);
        if (it != o.end() && it->is_string()) return it->get<std::string>();
        if (it != o.end() && it->is_number()) return it->dump();
    }
    return {};
}

// The tag of a side-by-side or mode row (MeasuredRow::tag), from the fields gpu_session.sh's
// stages write: mode; knob with knob_var (the variable compared; FLASHSIM_ left off, and a value
// that lists several assignments A=x+B=y shown as it is); the stages' own fields (grid static, wg 3,
// ...); and the round, from a mask_tag that ends in one (none2: round 2).
std::string row_tag(const json& r) {
    std::vector<std::string> parts;
    auto strip = [](std::string s) {
        for (size_t p; (p = s.find("FLASHSIM_")) != std::string::npos;) s.erase(p, 9);
        return s;
    };
    if (const std::string mode = str(r, {"mode"}); !mode.empty()) parts.push_back(mode);
    if (const std::string knob = str(r, {"knob"}); !knob.empty()) {
        const std::string var = str(r, {"knob_var"});
        parts.push_back(var.empty() || var == "ENV" ? strip(knob) : strip(var) + "=" + knob);
    }
    for (const char* field : {"tiling", "schedule", "flash2h_bwd_mode", "flash2h_bwd_schedule", "wg", "exp", "grid",
                              "order", "stages", "flush", "tune", "ab"})
        if (const std::string v = str(r, {field}); !v.empty()) parts.push_back(std::string(field) + " " + v);
    if (const std::string mt = str(r, {"mask_tag"});
        !mt.empty() && std::isdigit(static_cast<unsigned char>(mt.back()))) {
        size_t k = mt.size();
        while (k > 0 && std::isdigit(static_cast<unsigned char>(mt[k - 1]))) --k;
        parts.push_back("round " + mt.substr(k));
    }
    std::string out;
    for (const auto& p : parts) out += (out.empty() ? "" : ", ") + p;
    return out;
}

MeasuredRow parse_row(const json& r) {
    MeasuredRow m;
    m.variant = str(r, {"variant", "kernel", "name"});
    m.pass = str(r, {"pass"});
    if (m.pass.empty()) m.pass = "forward";
    m.dtype = str(r, {"dtype"});
    m.seq = static_cast<int64_t>(num(r, {"seq", "N", "n"}).value_or(0));
    m.head_dim = static_cast<int64_t>(num(r, {"head_dim", "d"}).value_or(0));
    m.batch = static_cast<int64_t>(num(r, {"batch", "B"}).value_or(1));
    m.heads = static_cast<int64_t>(num(r, {"heads", "H"}).value_or(1));
    if (auto it = r.find("causal"); it != r.end() && it->is_boolean()) m.causal = it->get<bool>();
    m.ms = num(r, {"ms_median", "ms", "time_ms"});
    m.predicted_ms = num(r, {"predicted_ms"});
    if (auto it = r.find("predicted_uncertain"); it != r.end() && it->is_boolean())
        m.predicted_uncertain = it->get<bool>();
    // ring attention with the kernels (flashsim bench --ring): the pass names the ring; its time is
    // the ring's forward (the backward and the one-call times stay in the file)
    if (m.pass == "ring") {
        const auto P = num(r, {"gpus"});
        m.pass = "ring forward, P = " + std::to_string(static_cast<int64_t>(P.value_or(0))) + " " + str(r, {"layout"}) +
                 " (" + str(r, {"transport"}) + ")";
        m.ms = num(r, {"forward_ms"});
    }
    m.tflops = num(r, {"tflops", "TFLOPs", "tflop_s"});
    m.dram_read = num(r, {"dram_read_bytes"});
    m.dram_write = num(r, {"dram_write_bytes"});
    m.sim_read = num(r, {"sim_hbm_read_bytes", "sim_read_bytes"});
    m.sim_write = num(r, {"sim_hbm_write_bytes", "sim_write_bytes"});
    m.sim_l2_read = num(r, {"sim_l2_hbm_read_bytes"});
    m.sim_l2_write = num(r, {"sim_l2_hbm_write_bytes"});
    m.sim_l2_counters_view = num(r, {"sim_l2_counters_view_bytes"});
    m.counters_residue = num(r, {"counters_residue_bytes"});
    if (auto it = r.find("tiles"); it != r.end() && it->is_object()) {
        if (auto v = num(*it, {"block_rows"})) m.block_rows = static_cast<int64_t>(*v);
        if (auto v = num(*it, {"block_cols"})) m.block_cols = static_cast<int64_t>(*v);
        if (auto v = num(*it, {"sram_bytes"})) m.sram_bytes = static_cast<int64_t>(*v);
    }
    if (auto it = r.find("error"); it != r.end() && it->is_string()) m.error = it->get<std::string>();
    m.tag = row_tag(r);
    // a ring row's kernel is the one each block call runs; what sets it apart is the ring
    if (m.pass.rfind("ring", 0) == 0 && m.tag.empty()) m.tag = m.pass;
    // Comparisons with PyTorch's kernels: any numeric field whose name mentions sdpa/torch/cudnn,
    // or a nested object of them.
    auto is_torch = [](std::string k) {
        std::transform(k.begin(), k.end(), k.begin(), [](unsigned char c) { return std::tolower(c); });
        return k.find("sdpa") != std::string::npos || k.find("torch") != std::string::npos ||
               k.find("cudnn") != std::string::npos;
    };
    for (auto it = r.begin(); it != r.end(); ++it)
        if (is_torch(it.key()) && it->is_number() && it->get<double>() > 0)  // 0 / null: not measured
            m.vs_torch.emplace_back(it.key(), it->get<double>());
    // PyTorch's own kernels timed on the same shape: {"anchors": {"sdpa_flash": {"ms_median": ...}, ...}}
    if (auto it = r.find("anchors"); it != r.end() && it->is_object())
        for (auto jt = it->begin(); jt != it->end(); ++jt)
            if (jt->is_object())
                if (auto ms = num(*jt, {"ms_median", "ms"}); ms && *ms > 0) m.anchors_ms.emplace_back(jt.key(), *ms);
    return m;
}

}  // namespace

MeasuredFile parse_measurements(const std::string& text, const std::string& path) {
    MeasuredFile f;
    f.path = path;
    json doc;
    try {
        doc = json::parse(text);
    } catch (const std::exception& e) {
        f.error = "cannot parse " + path + " as JSON: " + e.what();
        return f;
    }
    const json* rows = nullptr;
    if (doc.is_object()) {
        f.device = str(doc, {"device", "gpu"});
        f.driver = str(doc, {"driver"});
        f.date = str(doc, {"date"});
        f.commit = str(doc, {"commit", "git_commit"});
        // rows merged from several calls (tools/results/merge.py): each call's commit, and the days
        // of the calls (each day once, as the lessons print them: report::run_dates)
        if (auto it = doc.find("runs"); it != doc.end() && it->is_array() && it->size() > 1) {
            std::string commits;
            for (const auto& run : *it) {
                if (!run.is_object()) continue;
                commits += (commits.empty() ? "" : ", ") + str(run, {"git_commit"}).substr(0, 12);
            }
            f.date = report::run_dates(doc);
            f.commit = commits;
        }
        if (auto it = doc.find("rows"); it != doc.end() && it->is_array()) rows = &*it;
        if (auto it = doc.find("anchor"); it != doc.end() && it->is_object()) {
            const std::string t = str(*it, {"torch"}), how = str(*it, {"method"});
            if (!t.empty()) f.anchor_note = "PyTorch " + t + (how.empty() ? "" : " (" + how + ")");
        }
    } else if (doc.is_array()) {
        rows = &doc;
    }
    if (!rows) {
        f.error = path + " has no \"rows\" array (expected {device, date, rows: [...]})";
        return f;
    }
    for (const auto& r : *rows)
        if (r.is_object()) {
            f.rows.push_back(parse_row(r));
            if (auto run = r.find("run"); run != r.end() && run->is_object())
                f.rows.back().device = str(*run, {"device"});
            if (f.rows.back().device.empty()) f.rows.back().device = f.device;
        }
    return f;
}

MeasuredSet load_measurements(const std::string& dir) {
    namespace fs = std::filesystem;
    MeasuredSet s;
    s.dir = dir;
    std::error_code ec;
    if (!fs::is_directory(dir, ec)) {
        s.note = "no results folder " + dir +
                 ": give --results a folder of bench JSON files, or on a machine with an NVIDIA GPU build with "
                 "CUDA and run `flashsim bench --json " +
                 dir + "/<card>/bench.json` (or scripts/gpu_session.sh)";
        return s;
    }
    // the current files: the folder's own *.json and those of each card's folder (results/h200/...);
    // results/archive holds history and is not read
    std::vector<fs::path> paths;
    for (const auto& e : fs::directory_iterator(dir, ec)) {
        if (e.is_regular_file() && e.path().extension() == ".json") paths.push_back(e.path());
        if (e.is_directory() && e.path().filename() != "archive")
            for (const auto& f : fs::directory_iterator(e.path(), ec))
                if (f.is_regular_file() && f.path().extension() == ".json") paths.push_back(f.path());
    }
    std::sort(paths.begin(), paths.end());
    for (const auto& p : paths) {
        std::ifstream in(p);
        std::stringstream b;
        b << in.rdbuf();
        if (!in) {
            MeasuredFile f;
            f.path = p.string();
            f.error = "cannot read " + p.string();
            s.files.push_back(f);
            continue;
        }
        s.files.push_back(parse_measurements(b.str(), p.string()));
    }
    if (s.files.empty())
        s.note = "no *.json results in " + dir +
                 " yet: on a machine with an NVIDIA GPU, build with CUDA and run "
                 "`flashsim bench --json " +
                 dir + "/<card>/bench.json` (or scripts/gpu_session.sh)";
    return s;
}

bool device_matches(const std::string& device, const std::string& preset) {
    const std::string gpu = preset.substr(0, preset.find('-'));
    if (gpu.empty()) return false;
    for (size_t at = device.find(gpu); at != std::string::npos; at = device.find(gpu, at + 1)) {
        const size_t end = at + gpu.size();
        const bool starts = at == 0 || !std::isalnum(static_cast<unsigned char>(device[at - 1]));
        const bool ends = end == device.size() || !std::isalnum(static_cast<unsigned char>(device[end]));
        if (starts && ends) return true;
    }
    return false;
}

std::vector<const MeasuredRow*> rows_at(const MeasuredSet& ms, const std::string& pass, int64_t seq, int64_t head_dim,
                                        bool causal, int64_t batch, int64_t heads, const std::string& gpu) {
    std::vector<const MeasuredRow*> out;
    for (const auto& f : ms.files)
        for (const auto& r : f.rows) {
            if (!r.error.empty() || !r.ms || !r.tag.empty() || r.pass != pass || r.seq != seq ||
                r.head_dim != head_dim || r.causal != causal || r.batch != batch || r.heads != heads)
                continue;
            if (!gpu.empty() && !device_matches(r.device, gpu)) continue;
            const bool seen =
                std::any_of(out.begin(), out.end(), [&](const MeasuredRow* x) { return x->variant == r.variant; });
            if (!seen) out.push_back(&r);
        }
    return out;
}

}  // namespace viz
