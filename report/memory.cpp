// report/memory.cpp — footprint, fit and decode printers (see memory.hpp).
#include "report/memory.hpp"

#include <cstdio>
#include <sstream>

#include "report/report.hpp"

namespace report {

nlohmann::json footprint_json(const sim::Footprint& f, const sim::Machine& m) {
    nlohmann::json t = nlohmann::json::array();
    for (const auto& x : f.tensors)
        t.push_back({{"name", x.name}, {"shape", x.shape}, {"dtype", x.dtype}, {"bytes", x.bytes}});
    const double cap = sim::usable_memory(m);
    return {{"algo", sim::algo_name(f.algo)},
            {"pass", sim::pass_name(f.pass)},
            {"total_bytes", f.total_bytes},
            {"quadratic_bytes", f.quadratic_bytes},
            {"gpu", m.name},
            {"capacity_bytes", cap},
            {"fits", f.total_bytes <= cap},
            {"tensors", t}};
}

std::string footprint_text(const sim::Footprint& f, const sim::Machine& m) {
    std::ostringstream o;
    const double cap = sim::usable_memory(m);
    o << "HBM held at once (" << sim::pass_name(f.pass) << "): " << human_bytes(f.total_bytes) << " of "
      << human_bytes(cap) << " on " << m.name << ": " << (f.total_bytes <= cap ? "fits" : "does NOT fit");
    if (f.quadratic_bytes > 0) o << " (" << human_bytes(f.quadratic_bytes) << " of it N x N)";
    o << "\n ";
    for (const auto& x : f.tensors) o << " " << x.name << " " << human_bytes(x.bytes) << ";";
    o << "\n";
    return o.str();
}

namespace {
std::string shape_line(const sim::Problem& s, const sim::Machine& m) {
    char buf[256];
    std::snprintf(buf, sizeof buf, "B=%lld H=%lld d=%lld %s on %s (%s)", (long long)s.batch, (long long)s.heads,
                  (long long)s.head_dim, std::string(sim::dtype_name(s.dtype)).c_str(), m.name.c_str(),
                  human_bytes(sim::usable_memory(m)).c_str());
    return buf;
}
// The KV cache a decode step keeps in HBM: K and V, B x H_kv x L x d each, in the storage type.
double decode_cache_bytes(const sim::DecodeProblem& p) {
    return 2.0 * double(p.batch) * double(p.kv_heads) * double(p.kv_len) * double(p.head_dim) *
           double(sim::dtype_bytes(p.dtype));
}
}  // namespace

nlohmann::json fit_json(const sim::Problem& shape, const sim::Machine& m, const std::vector<FitRow>& rows) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows)
        a.push_back({{"algo", sim::algo_name(r.algo)},
                     {"pass", sim::pass_name(r.pass)},
                     {"longest_n", r.fit.longest_n},
                     {"bytes_at_longest", r.fit.bytes_at_longest},
                     {"next_n", r.fit.at_limit ? nlohmann::json(nullptr) : nlohmann::json(r.fit.next_n)},
                     {"bytes_at_next", r.fit.at_limit ? nlohmann::json(nullptr) : nlohmann::json(r.fit.bytes_at_next)},
                     {"at_simulator_limit", r.fit.at_limit}});
    return {{"batch", shape.batch},
            {"heads", shape.heads},
            {"head_dim", shape.head_dim},
            {"dtype", sim::dtype_name(shape.dtype)},
            {"gpu", m.name},
            {"capacity_bytes", rows.empty() ? sim::usable_memory(m) : rows.front().fit.capacity},
            {"grid", "N = 1..8, then 2^k * (8 + j) / 8 for j = 0..7"},
            {"rows", a}};
}

std::string fit_text(const sim::Problem& shape, const sim::Machine& m, const std::vector<FitRow>& rows) {
    std::ostringstream o;
    o << "Longest N that fits one attention layer: " << shape_line(shape, m);
    if (!rows.empty() && rows.front().fit.capacity != sim::usable_memory(m))
        o << ", capacity given: " << human_bytes(rows.front().fit.capacity);
    o << "\n";
    char buf[256];
    std::snprintf(buf, sizeof buf, "%-9s %-9s %12s %12s   %s\n", "algo", "pass", "longest N", "held",
                  "next grid N (held)");
    o << buf;
    for (const auto& r : rows) {
        std::string next = r.fit.at_limit
                               ? "- (N = 2^24 is the simulator's limit)"
                               : std::to_string(r.fit.next_n) + " (" + human_bytes(r.fit.bytes_at_next) + ")";
        std::snprintf(buf, sizeof buf, "%-9s %-9s %12lld %12s   %s\n", std::string(sim::algo_name(r.algo)).c_str(),
                      std::string(sim::pass_name(r.pass)).c_str(), (long long)r.fit.longest_n,
                      r.fit.longest_n ? human_bytes(r.fit.bytes_at_longest).c_str() : "-", next.c_str());
        o << buf;
    }
    return o.str();
}

nlohmann::json decode_json(const sim::DecodeResult& r, const sim::Machine& m, const sim::ErrorStats& vs) {
    const auto& p = r.problem;
    nlohmann::json j{{"batch", p.batch},
                     {"q_heads", p.q_heads},
                     {"kv_heads", p.kv_heads},
                     {"q_len", p.q_len},
                     {"kv_len", p.kv_len},
                     {"head_dim", p.head_dim},
                     {"dtype", sim::dtype_name(p.dtype)},
                     {"gpu", m.name},
                     {"splits", r.split.splits},
                     {"tiles", r.split.tiles},
                     {"tiles_per_split", r.split.tiles_per_split},
                     {"keys_per_split", r.split.keys_per_split},
                     {"blocks", r.split.blocks},
                     {"target_blocks", r.split.target_blocks},
                     {"splits_why", r.split.why},
                     {"kv_read_bytes", r.kv_read_bytes},
                     {"kv_bytes_if_read_per_query_head", r.kv_bytes_per_query_head},
                     {"q_read_bytes", r.q_read_bytes},
                     {"partial_write_bytes", r.partial_write_bytes},
                     {"merge_read_bytes", r.merge_read_bytes},
                     {"o_write_bytes", r.o_write_bytes},
                     {"total_bytes", r.total_bytes()},
                     {"bandwidth", r.bandwidth},
                     {"bandwidth_source", r.bandwidth_source},
                     {"fill", r.fill},
                     {"split_kernel_s", r.split_kernel_s},
                     {"merge_s", r.merge_s},
                     {"launch_s", r.launch_s},
                     {"predicted_s", r.total_s},
                     {"kv_bytes_per_s", r.kv_bandwidth()},
                     {"cache_bytes", decode_cache_bytes(r.problem)},
                     {"capacity_bytes", sim::usable_memory(m)},
                     {"cache_fits", decode_cache_bytes(r.problem) <= sim::usable_memory(m)}};
    if (vs.count > 0) j["vs_reference"] = error_json(vs);
    return j;
}

std::string decode_text(const sim::DecodeResult& r, const sim::Machine& m, const sim::ErrorStats& vs) {
    const auto& p = r.problem;
    std::ostringstream o;
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "Decode: B=%lld, %lld new token(s) vs a KV cache of L=%lld, H_q=%lld query heads on H_kv=%lld KV "
                  "heads (%lld per KV head), d=%lld, %s, %s\n",
                  (long long)p.batch, (long long)p.q_len, (long long)p.kv_len, (long long)p.q_heads,
                  (long long)p.kv_heads, (long long)p.group(), (long long)p.head_dim,
                  std::string(sim::dtype_name(p.dtype)).c_str(), m.name.c_str());
    o << buf;
    std::snprintf(buf, sizeof buf,
                  "Splits: %lld of %lld keys (%lld tiles of %lld): %lld blocks\n  why: ", (long long)r.split.splits,
                  (long long)r.split.keys_per_split, (long long)r.split.tiles_per_split,
                  (long long)(r.split.tiles_per_split ? r.split.keys_per_split / r.split.tiles_per_split : 0),
                  (long long)r.split.blocks);
    o << buf << r.split.why << "\n";
    o << "HBM bytes:\n";
    auto line = [&](const char* what, double b) {
        std::snprintf(buf, sizeof buf, "  %-34s %16s  %s\n", what, group_digits(int64_t(b)).c_str(),
                      human_bytes(b).c_str());
        o << buf;
    };
    line("K, V read (once per KV head)", double(r.kv_read_bytes));
    line("Q read", double(r.q_read_bytes));
    line("partial O_s, LSE_s written (fp32)", double(r.partial_write_bytes));
    line("partials read by the merge", double(r.merge_read_bytes));
    line("O written", double(r.o_write_bytes));
    line("total", double(r.total_bytes()));
    line("(K, V if read once per query head)", double(r.kv_bytes_per_query_head));
    {
        const double cache = decode_cache_bytes(r.problem), cap = sim::usable_memory(m);
        o << "The cache in HBM: " << human_bytes(cache) << " of " << human_bytes(cap) << " on " << m.name << ": "
          << (cache <= cap ? "fits"
                           : "does NOT fit (one GPU cannot hold it; the bytes and time are what it would take)")
          << "\n";
    }
    std::snprintf(buf, sizeof buf,
                  "Predicted, this kernel (the decode kernel's bytes at the bandwidth its blocks fill; "
                  "docs/timing.md): "
                  "%.2f us = split kernel %.2f us (at %.2f TB/s, %s, x %.2f fill) + merge %.2f us + "
                  "launches %.2f us; K, V bytes / time = %.2f TB/s\n",
                  r.total_s * 1e6, r.split_kernel_s * 1e6, r.bandwidth / 1e12, r.bandwidth_source.c_str(), r.fill,
                  r.merge_s * 1e6, r.launch_s * 1e6, r.kv_bandwidth() / 1e12);
    o << buf;
    if (vs.count > 0) {
        std::snprintf(buf, sizeof buf,
                      "O (split and merge, float32) vs float64 reference: max abs %.3g, relative %.3g, %lld of %lld "
                      "identical\n",
                      vs.max_abs, vs.rel_frobenius, (long long)vs.identical, (long long)vs.count);
        o << buf;
    }
    return o.str();
}

}  // namespace report
