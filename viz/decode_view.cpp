// viz/decode_view.cpp — the Decoding view's numbers (see decode_view.hpp).
#include "viz/decode_view.hpp"

#include <nlohmann/json.hpp>

#include <algorithm>
#include <fstream>
#include <map>
#include <mutex>
#include <sstream>

#include "report/results.hpp"
#include "sim/dtype.hpp"

namespace viz {

sim::DecodeProblem DecodeShape::problem() const {
    sim::DecodeProblem p;
    p.batch = batch;
    p.q_heads = q_heads;
    p.kv_heads = kv_heads;
    p.q_len = 1;
    p.kv_len = kv_len;
    p.head_dim = head_dim;
    p.dtype = dtype;
    return p;
}

sim::DecodeConfig DecodeShape::config() const {
    sim::DecodeConfig c;
    c.splits = splits;
    return c;
}

std::vector<DecodeSplitRow> split_rows(const sim::DecodeResult& r, int64_t tile_keys) {
    const sim::DecodeProblem& p = r.problem;
    const int64_t e = sim::dtype_bytes(p.dtype), d = p.head_dim, pairs = p.batch * p.kv_heads;
    const int64_t rows = p.group() * p.q_len;                  // query rows a block carries
    const int64_t span = r.split.tiles_per_split * tile_keys;  // keys a whole split covers
    std::vector<DecodeSplitRow> out;
    for (int64_t s = 0; s < r.split.splits; ++s) {
        DecodeSplitRow row;
        row.index = s;
        row.first_key = std::min(p.kv_len, s * span);
        row.keys = std::min(p.kv_len, (s + 1) * span) - row.first_key;
        row.kv_bytes = pairs * 2 * row.keys * d * e;
        row.q_bytes = pairs * rows * d * e;
        // several splits: O_s in fp32 and one LSE_s a row; one split: O itself in the storage type
        row.out_bytes = pairs * rows * (r.split.splits > 1 ? d * 4 + 4 : d * e);
        out.push_back(row);
    }
    return out;
}

namespace {
bool same_int(const nlohmann::json& j, const char* key, int64_t want) {
    return j.contains(key) && j[key].is_number_integer() && j[key].get<int64_t>() == want;
}
double number_or(const nlohmann::json& j, const char* key, double fallback) {
    return j.contains(key) && j[key].is_number() ? j[key].get<double>() : fallback;
}

// What a results file holds for one shape: whether the file could be read, and its row at the shape.
// One cache keyed by the file's path and the shape: the view asks every frame, and reading and parsing
// the file are not free; a new shape reads the file once more.
struct RecordedLookup {
    bool file = false;
    std::optional<DecodeRecorded> row;
};
RecordedLookup recorded_lookup(const std::string& path, const sim::DecodeProblem& p) {
    static std::mutex mu;
    static std::map<std::string, RecordedLookup> kept;
    const std::string key = path + "\n" + std::to_string(p.batch) + " " + std::to_string(p.q_heads) + " " +
                            std::to_string(p.kv_heads) + " " + std::to_string(p.kv_len) + " " +
                            std::to_string(p.head_dim) + " " + std::string(sim::dtype_name(p.dtype));
    std::lock_guard<std::mutex> lock(mu);
    auto it = kept.find(key);
    if (it == kept.end()) {
        RecordedLookup r;
        if (std::ifstream f(path); f) {
            std::stringstream ss;
            ss << f.rdbuf();
            r.file = true;
            r.row = find_decode_row(ss.str(), p);
        }
        it = kept.emplace(key, std::move(r)).first;
    }
    return it->second;
}
}  // namespace

std::optional<DecodeRecorded> find_decode_row(const std::string& json_text, const sim::DecodeProblem& p) {
    const nlohmann::json doc = nlohmann::json::parse(json_text, nullptr, false);
    if (doc.is_discarded() || !doc.is_object() || !doc.contains("rows") || !doc["rows"].is_array()) return std::nullopt;
    const std::string device = doc.value("device", std::string());
    for (const auto& row : doc["rows"]) {
        if (!row.is_object() || row.value("variant", std::string()) != "decode" || !row.value("ok", true)) continue;
        if (!same_int(row, "batch", p.batch) || !same_int(row, "q_heads", p.q_heads) ||
            !same_int(row, "kv_heads", p.kv_heads) || !same_int(row, "kv_len", p.kv_len) ||
            !same_int(row, "head_dim", p.head_dim) || !same_int(row, "seq", p.q_len))
            continue;
        if (row.value("dtype", std::string()) != sim::dtype_name(p.dtype)) continue;
        const double ms = number_or(row, "ms_median", 0);
        if (!(ms > 0)) continue;
        DecodeRecorded rec;
        rec.device = device;
        rec.ms = ms;
        rec.sim_ms = number_or(row, "sim_predicted_ms", 0);
        rec.splits = row.contains("splits") && row["splits"].is_number_integer() ? row["splits"].get<int64_t>() : 0;
        rec.tbps = number_or(row, "tbps", 0);
        return rec;
    }
    return std::nullopt;
}

DecodeView decode_view(const DecodeShape& s, const sim::Machine& m) {
    DecodeView v;
    const sim::DecodeProblem p = s.problem();
    const sim::DecodeConfig c = s.config();
    try {
        v.result = sim::simulate_decode(p, m, c);
    } catch (const std::exception& e) {
        v.error = e.what();
        return v;
    }
    v.splits = split_rows(v.result, c.tile_keys);
    v.bytes_bound_s = v.result.bandwidth > 0 ? double(v.result.total_bytes()) / v.result.bandwidth : 0;
    const std::string card = report::card_folder(m.name);
    if (card.empty()) {
        v.recorded_note = "no " + m.name + " has been measured here";
        return v;
    }
    const std::string name = card + "/decode.json";
    const RecordedLookup found = recorded_lookup(report::current_file(card, "decode.json"), p);
    if (!found.file) {
        v.recorded_note = "no results/" + name + " (scripts/gpu_session.sh's decode stage records it)";
        return v;
    }
    v.recorded = found.row;
    if (v.recorded)
        v.recorded->file = name;
    else
        v.recorded_note = "results/" + name + " has no row at this shape";
    return v;
}

}  // namespace viz
