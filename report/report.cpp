#include "report/report.hpp"

#include "report/ladder.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

#include "sim/mask.hpp"

namespace report {

std::string group_digits(int64_t v) {
    std::string s = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
        out += s[i];
    }
    return v < 0 ? "-" + out : out;
}

std::string human_bytes(double b) {
    static const char* units[] = {"B", "KiB", "MiB", "GiB", "TiB", "PiB"};
    int u = 0;
    while (std::abs(b) >= 1024.0 && u < 5) {
        b /= 1024.0;
        ++u;
    }
    char buf[64];
    if (u == 0)
        std::snprintf(buf, sizeof buf, "%.0f B", b);
    else
        std::snprintf(buf, sizeof buf, "%.2f %s", b, units[u]);
    return buf;
}

std::string human_flops(double f) {
    static const char* units[] = {"FLOP", "kFLOP", "MFLOP", "GFLOP", "TFLOP", "PFLOP", "EFLOP"};
    int u = 0;
    while (std::abs(f) >= 1000.0 && u < 6) {
        f /= 1000.0;
        ++u;
    }
    char buf[64];
    std::snprintf(buf, sizeof buf, u == 0 ? "%.0f %s" : "%.2f %s", f, units[u]);
    return buf;
}

namespace {
nlohmann::json traffic_json(const sim::Traffic& t) {
    return {{"read_bytes", t.read_bytes}, {"write_bytes", t.write_bytes}};
}
bool tensor_used(const sim::Result& r, sim::Tensor t) { return r.totals[t].total() > 0; }
}  // namespace

nlohmann::json error_json(const sim::ErrorStats& e) {
    return {{"max_abs", std::isfinite(e.max_abs) ? nlohmann::json(e.max_abs) : nlohmann::json(nullptr)},
            {"rel_frobenius", e.rel_frobenius},
            {"max_ulp", e.max_ulp},
            {"identical", e.identical},
            {"count", e.count},
            {"nonfinite", e.nonfinite},
            {"worst_at", e.where}};
}

namespace {
nlohmann::json finite_or_null(double x) { return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr); }

nlohmann::json flops_json(const sim::Flops& f) {
    return {{"matmul", f.matmul}, {"exp", f.exp}, {"other", f.other}, {"total", f.total()}};
}

// {tensor name: traffic} for every tensor that moved any bytes; traffic_of(tensor) gives its counts.
template <typename F>
nlohmann::json tensors_json(F&& traffic_of) {
    nlohmann::json tensors = nlohmann::json::object();
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto k = static_cast<sim::Tensor>(i);
        const sim::Traffic& tr = traffic_of(k);
        if (tr.total() > 0) tensors[std::string(sim::tensor_name(k))] = traffic_json(tr);
    }
    return tensors;
}

nlohmann::json part_json(const sim::Totals& t) {
    return {{"hbm", traffic_json(t.hbm_total())},
            {"tensors", tensors_json([&](sim::Tensor k) -> const sim::Traffic& { return t[k]; })},
            {"flops", flops_json(t.flops)},
            {"steps", t.steps}};
}

nlohmann::json l2_json(const sim::L2Stats& l) {
    nlohmann::json j = {{"simulated", l.simulated},
                        {"capacity_bytes", l.capacity_bytes},
                        {"concurrent_blocks", l.concurrent_blocks},
                        {"note", l.note}};
    if (!l.simulated) return j;
    const nlohmann::json tensors =
        tensors_json([&](sim::Tensor k) -> const sim::Traffic& { return l.hbm[static_cast<int>(k)]; });
    j["exact"] = l.exact;
    j["heads_walked"] = l.heads_walked;
    j["lookups"] = l.lookups;
    j["hits"] = l.hits;
    j["load_bytes"] = l.load_bytes;
    j["hit_bytes"] = l.hit_bytes;
    j["hit_rate"] = l.hit_rate;
    j["end_dirty_bytes"] = l.end_dirty_bytes;
    j["hbm"] = traffic_json(l.hbm_total());
    j["tensors"] = tensors;
    j["seconds"] = l.seconds;
    j["policy"] = l.policy;
    return j;
}

nlohmann::json timing_json(const sim::Timing& t, bool with_timeline) {
    if (!t.computed) return nullptr;
    nlohmann::json ks = nlohmann::json::array();
    for (const auto& k : t.kernels)
        ks.push_back({{"name", k.name},
                      {"blocks", k.blocks},
                      {"serial_ms", k.serial_s * 1e3},
                      {"overlapped_ms", k.overlapped_s * 1e3}});
    nlohmann::json j = {{"ceilings", t.ceilings},
                        {"ceilings_note", t.ceilings_note},
                        {"hbm_bandwidth", t.hbm_bandwidth},
                        {"l2_bandwidth", t.l2_bandwidth},
                        {"matmul_flops", t.matmul_flops},
                        {"scalar_flops", t.scalar_flops},
                        {"slots", t.slots},
                        {"with_l2", t.with_l2},
                        {"serial_ms", t.serial_s * 1e3},
                        {"overlapped_ms", t.overlapped_s * 1e3},
                        {"kernels", ks}};
    if (with_timeline) {
        nlohmann::json tl = nlohmann::json::array();
        for (const auto& g : t.timeline)
            tl.push_back({{"sm", g.sm},
                          {"start", g.start},
                          {"end", g.end},
                          {"kind", std::string(sim::segment_kind_name(g.kind))},
                          {"step", g.step},
                          {"schedule", g.overlapped ? "overlapped" : "serial"}});
        j["timeline"] = tl;
    }
    return j;
}
}  // namespace

nlohmann::json result_json(const sim::Result& r, bool with_timeline) {
    const auto& p = r.problem;
    nlohmann::json j;
    j["algo"] = std::string(sim::algo_name(r.algo));
    j["seq"] = p.seq;
    j["head_dim"] = p.head_dim;
    j["batch"] = p.batch;
    j["heads"] = p.heads;
    j["dtype"] = std::string(sim::dtype_name(p.dtype));
    j["causal"] = p.causal;
    j["window"] = p.window;
    if (sim::mask_blocks_known(p))
        j["block_mask"] = {{"density", p.block_density},
                           {"block_rows", p.mask_block_rows},
                           {"block_cols", p.mask_block_cols},
                           {"key_blocks", sim::mask_key_blocks(p)},
                           {"kept_key_blocks", sim::mask_kept_blocks(p)}};
    j["gpu"] = r.machine.name;
    j["sram_bytes"] = r.sram_bytes;
    j["block_rows"] = r.block_rows;
    j["block_cols"] = r.block_cols;
    j["tiles_rows"] = r.T_r;
    j["tiles_cols"] = r.T_c;
    j["block_note"] = r.block_note;
    j["hbm"] = traffic_json(r.totals.hbm_total());
    j["tensors"] = tensors_json([&](sim::Tensor k) -> const sim::Traffic& { return r.totals[k]; });
    j["sram_peak_bytes"] = r.sram_peak_bytes;
    nlohmann::json bufs = nlohmann::json::array();
    for (const auto& b : r.sram_buffers) bufs.push_back({{"name", b.name}, {"bytes", b.bytes}});
    j["sram_buffers"] = bufs;
    j["flops"] = {{"matmul", r.totals.flops.matmul},
                  {"exp", r.totals.flops.exp},
                  {"other", r.totals.flops.other},
                  {"total", r.totals.flops.total()}};
    j["steps"] = r.totals.steps;
    j["rescales"] = r.totals.rescales;
    j["trace"] = {{"events_kept", r.trace.events.size()},
                  {"events_per_head", r.trace.events_total},
                  {"truncated", r.trace.truncated}};
    j["numerics"] = r.numerics;
    // issue 3: passes, kernels, L2, timing
    j["pass"] = std::string(sim::pass_name(r.pass));
    j["pad_left"] = p.pad_left;
    if (r.pass != sim::Pass::forward) {
        j["bwd_block_rows"] = r.bwd_block_rows;
        j["bwd_block_cols"] = r.bwd_block_cols;
        j["bwd_tiles_rows"] = r.bwd_T_r;
        j["bwd_tiles_cols"] = r.bwd_T_c;
        j["bwd_block_note"] = r.bwd_block_note;
        nlohmann::json bb = nlohmann::json::array();
        for (const auto& b : r.bwd_sram_buffers) bb.push_back({{"name", b.name}, {"bytes", b.bytes}});
        j["bwd_sram_buffers"] = bb;
    }
    j["forward"] = part_json(r.forward_totals);
    j["backward"] = part_json(r.backward_totals);
    nlohmann::json ks = nlohmann::json::array();
    for (const auto& k : r.kernels)
        ks.push_back({{"name", k.name},
                      {"pass", k.pass == 0 ? "forward" : "backward"},
                      {"blocks_per_head", k.blocks_per_head},
                      {"grid", k.grid}});
    j["kernels"] = ks;
    j["hbm_without_l2"] = traffic_json(r.totals.hbm_total());
    j["hbm_with_l2"] = r.l2.simulated ? traffic_json(r.l2.hbm_total()) : nlohmann::json(nullptr);
    j["l2"] = l2_json(r.l2);
    add_ladder_json(j, sim::ladder_of(r));  // predicted_ms: the ideal machine's (rung 2), the highest without a kernel
    j["predicted_tflops"] = r.timing.computed ? finite_or_null(r.timing.predicted_tflops) : nlohmann::json(nullptr);
    j["timing"] = timing_json(r.timing, with_timeline);
    return j;
}

namespace {
// The mask in a header: "", " causal", or " causal, window W" (a sliding window is causal).
std::string mask_note(const sim::Problem& p) {
    std::string s = p.window > 0 ? " causal, window " + std::to_string(p.window) : p.causal ? " causal" : "";
    if (sim::mask_blocks_known(p))
        s += (s.empty() ? " " : ", ") + std::string("block-sparse (") + std::to_string(sim::mask_kept_blocks(p)) +
             " of " + std::to_string(sim::mask_key_blocks(p)) + " key blocks of " + std::to_string(p.mask_block_rows) +
             " x " + std::to_string(p.mask_block_cols) + " kept a query block)";
    return s;
}
}  // namespace

std::string result_text(const sim::Result& r, const sim::Result* base, bool with_ladder) {
    const auto& p = r.problem;
    std::ostringstream o;
    o << sim::algo_name(r.algo)
      << (r.pass == sim::Pass::forward ? ""
          : r.pass == sim::Pass::both  ? " forward+backward"
                                       : " backward")
      << " attention  N=" << p.seq << " d=" << p.head_dim << " B=" << p.batch << " H=" << p.heads << " "
      << sim::dtype_name(p.dtype) << mask_note(p) << "  on " << r.machine.name << "\n";
    o << "blocks: B_r=" << r.block_rows << " B_c=" << r.block_cols << "  (T_r=" << r.T_r << ", T_c=" << r.T_c << ")  "
      << r.block_note << "\n\n";
    o << std::left << std::setw(8) << "tensor" << std::right << std::setw(22) << "HBM read" << std::setw(22)
      << "HBM written"
      << "\n";
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto t = static_cast<sim::Tensor>(i);
        if (!tensor_used(r, t)) continue;
        o << std::left << std::setw(8) << sim::tensor_name(t) << std::right << std::setw(22)
          << human_bytes(static_cast<double>(r.totals[t].read_bytes)) << std::setw(22)
          << human_bytes(static_cast<double>(r.totals[t].write_bytes)) << "\n";
    }
    const auto tot = r.totals.hbm_total();
    o << std::left << std::setw(8) << "total" << std::right << std::setw(22)
      << human_bytes(static_cast<double>(tot.read_bytes)) << std::setw(22)
      << human_bytes(static_cast<double>(tot.write_bytes)) << "\n";
    o << "HBM traffic: " << group_digits(tot.total()) << " bytes (" << human_bytes(static_cast<double>(tot.total()))
      << ")\n";
    o << "FLOPs: " << human_flops(static_cast<double>(r.totals.flops.total())) << " (matmul "
      << human_flops(static_cast<double>(r.totals.flops.matmul)) << ", exp " << group_digits(r.totals.flops.exp)
      << ", other " << group_digits(r.totals.flops.other) << ")\n";
    o << "SRAM peak: " << human_bytes(static_cast<double>(r.sram_peak_bytes)) << " of "
      << human_bytes(static_cast<double>(r.sram_bytes)) << "\n";
    if (r.pass != sim::Pass::forward) {
        o << "backward blocks: B_r=" << r.bwd_block_rows << " B_c=" << r.bwd_block_cols << "  " << r.bwd_block_note
          << "\n";
        if (r.pass == sim::Pass::both)
            o << "forward " << human_bytes(static_cast<double>(r.forward_totals.hbm_total().total())) << " HBM, "
              << human_flops(static_cast<double>(r.forward_totals.flops.total())) << "; backward "
              << human_bytes(static_cast<double>(r.backward_totals.hbm_total().total())) << " HBM, "
              << human_flops(static_cast<double>(r.backward_totals.flops.total())) << "\n";
    }
    if (r.l2.simulated) {
        char buf[320];
        // the capacity the walk replays: on the H200 the part of its L2 a re-read was measured to find
        const std::string cap =
            r.l2.capacity_bytes < r.machine.l2_bytes
                ? human_bytes(r.l2.capacity_bytes) + " of " + human_bytes(r.machine.l2_bytes) + ": what a re-read finds"
                : human_bytes(r.l2.capacity_bytes);
        std::snprintf(buf, sizeof buf, "with L2 (%s, %lld blocks at once): HBM %s, L2 hit rate %.1f%%%s\n", cap.c_str(),
                      static_cast<long long>(r.l2.concurrent_blocks),
                      human_bytes(static_cast<double>(r.l2.hbm_total().total())).c_str(), 100.0 * r.l2.hit_rate,
                      r.l2.exact ? "" : " (sampled heads, scaled)");
        o << buf;
    } else if (!r.l2.note.empty()) {
        o << r.l2.note << "\n";
    }
    if (r.timing.computed) {
        char buf[256];
        std::snprintf(buf, sizeof buf,
                      "ideal machine's schedule: %.4g ms with each step's copies overlapped, %.4g ms in series; "
                      "%.1f TFLOP/s (%s ceilings%s)\n",
                      r.timing.overlapped_s * 1e3, r.timing.serial_s * 1e3, r.timing.predicted_tflops,
                      r.timing.ceilings.c_str(), r.timing.with_l2 ? ", L2 hits at L2 bandwidth" : "");
        o << buf;
    }
    if (base && base != &r) {
        const double b = static_cast<double>(base->totals.hbm_total().total());
        char buf[128];
        std::snprintf(buf, sizeof buf, "vs %s: %.3fx the HBM traffic (%.1fx less)\n",
                      std::string(sim::algo_name(base->algo)).c_str(), tot.total() / b, b / tot.total());
        o << buf;
    }
    if (with_ladder && r.timing.computed) o << ladder_text(sim::ladder_of(r));
    if (r.trace.truncated)
        o << "(trace keeps the first " << group_digits(static_cast<int64_t>(r.trace.events.size())) << " of "
          << group_digits(r.trace.events_total) << " events of head 0; totals count everything)\n";
    return o.str();
}

std::string compare_text(const std::vector<sim::Result>& rs) {
    if (rs.empty()) return {};
    const auto& p = rs[0].problem;
    std::ostringstream o;
    constexpr int kLabel = 16;  // "ideal machine ms"
    o << "HBM traffic"
      << (rs[0].pass == sim::Pass::forward ? ""
          : rs[0].pass == sim::Pass::both  ? " (forward + backward)"
                                           : " (backward)")
      << ", N=" << p.seq << " d=" << p.head_dim << " B=" << p.batch << " H=" << p.heads << " "
      << sim::dtype_name(p.dtype) << mask_note(p) << " on " << rs[0].machine.name << " (SRAM "
      << human_bytes(static_cast<double>(rs[0].sram_bytes)) << ")\n\n";
    o << std::left << std::setw(kLabel) << "tensor";
    for (const auto& r : rs) o << std::right << std::setw(24) << sim::algo_name(r.algo);
    o << "\n";
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto t = static_cast<sim::Tensor>(i);
        bool any = false;
        for (const auto& r : rs) any |= tensor_used(r, t);
        if (!any) continue;
        o << std::left << std::setw(kLabel) << sim::tensor_name(t);
        for (const auto& r : rs)
            o << std::right << std::setw(24) << human_bytes(static_cast<double>(r.totals[t].total()));
        o << "\n";
    }
    (void)p;
    o << std::left << std::setw(kLabel) << "total";
    for (const auto& r : rs)
        o << std::right << std::setw(24) << human_bytes(static_cast<double>(r.totals.hbm_total().total()));
    o << "\n" << std::left << std::setw(kLabel) << "vs first";
    const double b = static_cast<double>(rs[0].totals.hbm_total().total());
    for (const auto& r : rs) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3fx", r.totals.hbm_total().total() / b);
        o << std::right << std::setw(24) << buf;
    }
    o << "\n" << std::left << std::setw(kLabel) << "FLOPs";
    for (const auto& r : rs)
        o << std::right << std::setw(24) << human_flops(static_cast<double>(r.totals.flops.total()));
    o << "\n" << std::left << std::setw(kLabel) << "with L2";
    for (const auto& r : rs)
        o << std::right << std::setw(24)
          << (r.l2.simulated ? human_bytes(static_cast<double>(r.l2.hbm_total().total())) : std::string("-"));
    for (const sim::Rung rung : {sim::Rung::bytes_bound, sim::Rung::ideal_machine}) {  // no kernel named: rungs 1, 2
        o << "\n" << std::left << std::setw(kLabel) << rung_column(rung);
        for (const auto& r : rs) {
            const sim::RungTime t = sim::ladder_of(r).at(rung);
            char buf[32];
            if (t.present)
                std::snprintf(buf, sizeof buf, "%.4g ms", t.ms);
            else
                std::snprintf(buf, sizeof buf, "-");
            o << std::right << std::setw(24) << buf;
        }
    }
    o << "\n" << std::left << std::setw(kLabel) << "blocks";
    for (const auto& r : rs)
        o << std::right << std::setw(24) << (std::to_string(r.block_rows) + " x " + std::to_string(r.block_cols));
    o << "\n";
    return o.str();
}

nlohmann::json compare_json(const std::vector<sim::Result>& rs) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rs) a.push_back(result_json(r));
    return a;
}

// ---------------------------------------------------------------- sweeps and scenarios
namespace {
struct SweepCols {
    double hbm = 0, hbm_l2 = -1, hit = -1, gflop = 0, serial_ms = -1, ms = -1, tflops = -1;
    int64_t br = 0, bc = 0;
};
SweepCols cols_of(const sim::Result& r) {
    SweepCols c;
    c.br = r.block_rows;
    c.bc = r.block_cols;
    c.hbm = static_cast<double>(r.totals.hbm_total().total());
    if (r.l2.simulated) {
        c.hbm_l2 = static_cast<double>(r.l2.hbm_total().total());
        c.hit = r.l2.hit_rate;
    }
    c.gflop = static_cast<double>(r.totals.flops.total()) / 1e9;
    if (r.timing.computed) {
        c.serial_ms = r.timing.serial_s * 1e3;
        c.ms = r.timing.predicted_ms;
        c.tflops = r.timing.predicted_tflops;
    }
    return c;
}
std::string fmt_or_dash(const char* f, double x) {
    if (x < 0) return "-";
    char buf[64];
    std::snprintf(buf, sizeof buf, f, x);
    return buf;
}
}  // namespace

std::string sweep_text(const std::string& param, const std::vector<SweepRow>& rows) {
    std::ostringstream o;
    const sim::Result* first = nullptr;
    for (const auto& r : rows)
        if (r.result) {
            first = &*r.result;
            break;
        }
    if (first) {
        const auto& p = first->problem;
        o << "sweep of " << param << ": " << sim::algo_name(first->algo) << " " << sim::pass_name(first->pass)
          << ", N=" << p.seq << " d=" << p.head_dim << " B=" << p.batch << " H=" << p.heads << " "
          << sim::dtype_name(p.dtype) << mask_note(p) << " on " << first->machine.name << "\n\n";
    }
    o << "(ms: the ideal machine, rung 2 of the ladder of models (docs/timing.md), its steps' copies in series "
         "or overlapped)\n";
    o << std::right << std::setw(10) << param << std::setw(6) << "B_r" << std::setw(6) << "B_c" << std::setw(13)
      << "HBM" << std::setw(13) << "HBM w/ L2" << std::setw(8) << "L2 hit" << std::setw(11) << "GFLOP" << std::setw(12)
      << "serial ms" << std::setw(12) << "overlap ms" << std::setw(9) << "TFLOP/s"
      << "\n";
    for (const auto& r : rows) {
        o << std::setw(10) << r.value;
        if (!r.result) {
            o << "  " << r.error << "\n";
            continue;
        }
        const SweepCols c = cols_of(*r.result);
        o << std::setw(6) << c.br << std::setw(6) << c.bc << std::setw(13) << human_bytes(c.hbm) << std::setw(13)
          << (c.hbm_l2 < 0 ? std::string("-") : human_bytes(c.hbm_l2)) << std::setw(8)
          << fmt_or_dash("%.1f%%", c.hit * 100) << std::setw(11) << fmt_or_dash("%.2f", c.gflop) << std::setw(12)
          << fmt_or_dash("%.4g", c.serial_ms) << std::setw(12) << fmt_or_dash("%.4g", c.ms) << std::setw(9)
          << fmt_or_dash("%.1f", c.tflops) << "\n";
    }
    return o.str();
}

std::string sweep_csv(const std::string& param, const std::vector<SweepRow>& rows) {
    std::ostringstream o;
    o << param
      << ",block_rows,block_cols,hbm_bytes,hbm_bytes_with_l2,l2_hit_rate,flops,ideal_machine_serial_ms,"
         "ideal_machine_ms,"
         "ideal_machine_tflops,error\n";
    for (const auto& r : rows) {
        o << r.value << ",";
        if (!r.result) {
            std::string e = r.error;
            for (auto& ch : e)
                if (ch == '"') ch = '\'';
            o << ",,,,,,,,,\"" << e << "\"\n";
            continue;
        }
        const SweepCols c = cols_of(*r.result);
        const auto& t = *r.result;
        o << c.br << "," << c.bc << "," << t.totals.hbm_total().total() << ","
          << (c.hbm_l2 < 0 ? std::string() : std::to_string(t.l2.hbm_total().total())) << ","
          << (c.hit < 0 ? std::string() : fmt_or_dash("%.6f", c.hit)) << "," << t.totals.flops.total() << ","
          << (c.serial_ms < 0 ? std::string() : fmt_or_dash("%.6g", c.serial_ms)) << ","
          << (c.ms < 0 ? std::string() : fmt_or_dash("%.6g", c.ms)) << ","
          << (c.tflops < 0 ? std::string() : fmt_or_dash("%.6g", c.tflops)) << ",\n";
    }
    return o.str();
}

nlohmann::json sweep_json(const std::string& param, const std::vector<SweepRow>& rows) {
    nlohmann::json a = nlohmann::json::array();
    for (const auto& r : rows) {
        nlohmann::json x = {{"param", param}, {"value", r.value}};
        if (r.result)
            x["result"] = result_json(*r.result);
        else
            x["error"] = r.error;
        a.push_back(x);
    }
    return a;
}

std::string scenario_text(const std::string& name, const std::string& description, const std::vector<sim::Result>& rs) {
    std::ostringstream o;
    o << "scenario " << name << ": " << description << "\n";
    if (rs.empty()) return o.str();
    const auto& p = rs[0].problem;
    o << "B=" << p.batch << " H=" << p.heads << " N=" << p.seq << " d=" << p.head_dim << " " << sim::dtype_name(p.dtype)
      << mask_note(p) << ", " << sim::pass_name(rs[0].pass) << ", on " << rs[0].machine.name << " ("
      << rs[0].timing.ceilings << " ceilings)\n\n";
    o << std::left << std::setw(10) << "algo" << std::right << std::setw(10) << "GFLOP" << std::setw(12) << "HBM GB"
      << std::setw(14) << "HBM GB w/ L2" << std::setw(8) << "L2 hit" << std::setw(18)
      << rung_column(sim::Rung::ideal_machine) << std::setw(9) << "TFLOP/s" << std::setw(10) << "speedup"
      << "\n";
    const double base_ms = rs[0].timing.computed ? rs[0].timing.predicted_ms : 0;
    for (const auto& r : rs) {
        const SweepCols c = cols_of(r);
        o << std::left << std::setw(10) << sim::algo_name(r.algo) << std::right << std::setw(10)
          << fmt_or_dash("%.1f", c.gflop) << std::setw(12) << fmt_or_dash("%.3f", c.hbm / 1e9) << std::setw(14)
          << (c.hbm_l2 < 0 ? "-" : fmt_or_dash("%.3f", c.hbm_l2 / 1e9)) << std::setw(8)
          << fmt_or_dash("%.1f%%", c.hit * 100) << std::setw(18) << fmt_or_dash("%.4g", c.ms) << std::setw(9)
          << fmt_or_dash("%.1f", c.tflops) << std::setw(10)
          << (c.ms > 0 && base_ms > 0 ? fmt_or_dash("%.2fx", base_ms / c.ms) : "-") << "\n";
    }
    for (const auto& r : rs)
        if (!r.l2.simulated && !r.l2.note.empty())
            o << sim::algo_name(r.algo) << ": " << r.l2.note << "\n";
        else if (r.l2.simulated && !r.l2.exact)
            o << sim::algo_name(r.algo) << " L2: " << r.l2.note << "\n";
    return o.str();
}

nlohmann::json scenario_json(const std::string& name, const std::string& description,
                             const std::vector<sim::Result>& rs) {
    return {{"scenario", name}, {"description", description}, {"results", compare_json(rs)}};
}

namespace {
nlohmann::json num(double x) {  // JSON has no infinity: -inf (the running max before block 0) is null
    return std::isfinite(x) ? nlohmann::json(x) : nlohmann::json(nullptr);
}
}  // namespace

nlohmann::json softmax_json(const sim::StreamedSoftmax& s) {
    nlohmann::json blocks = nlohmann::json::array();
    for (const auto& b : s.record.blocks) {
        blocks.push_back({{"scores", b.scores},
                          {"block_max", num(b.block_max)},
                          {"running_max_before", num(b.running_max_before)},
                          {"running_max", num(b.running_max_after)},
                          {"running_sum_before", b.running_sum_before},
                          {"running_sum", b.running_sum_after},
                          {"rescale", b.rescale},
                          {"acc_before", b.acc_before},
                          {"acc_rescaled", b.acc_rescaled},
                          {"acc_after", b.acc_after}});
    }
    return {{"precision", s.precision == sim::Precision::fp32 ? "fp32" : "fp64"},
            {"with_values", s.with_values},
            {"blocks", blocks},
            {"plain", s.plain},
            {"streamed", s.streamed},
            {"max_abs_diff", s.max_abs_diff},
            {"max_ulp", s.max_ulp}};
}

std::string softmax_text(const sim::StreamedSoftmax& s) {
    std::ostringstream o;
    o << std::fixed;
    o << "Online softmax of one row, block by block (" << (s.precision == sim::Precision::fp32 ? "float32" : "float64")
      << ")\n\n";
    o << std::left << std::setw(7) << "block" << std::setw(34) << "scores"
      << " " << std::setw(10) << "block max"
      << " " << std::setw(12) << "running max"
      << " " << std::setw(12) << "rescale"
      << " "
      << "running sum\n";
    // fixed decimals for the usual sizes; beyond 1e6 (scores may be as large as float32 allows) a
    // number in %g form, so a column stays a column
    auto num = [](double x, int digits) {
        char buf[64];
        if (std::isfinite(x) && std::fabs(x) >= 1e6)
            std::snprintf(buf, sizeof buf, "%.*g", digits + 1, x);
        else
            std::snprintf(buf, sizeof buf, "%.*f", digits, x);
        return std::string(buf);
    };
    for (const auto& b : s.record.blocks) {
        std::string sc;
        for (size_t i = 0; i < b.scores.size(); ++i) sc += (i ? ", " : "") + num(b.scores[i], 2);
        o << std::left << std::setw(7) << (b.block + 1) << std::setw(34) << sc << " " << std::setw(10)
          << num(b.block_max, 4) << " " << std::setw(12) << num(b.running_max_after, 4) << " " << std::setw(12)
          << (b.block == 0 ? std::string("-") : num(b.rescale, 4)) << " " << num(b.running_sum_after, 4) << "\n";
    }
    o << "\nWhen a block raises the running max from m_old to m_new, everything carried so far (the sum\n"
         "and the output accumulator) is multiplied by e^(m_old - m_new) before the block is added.\n\n";
    auto vec = [](const std::vector<double>& v) {
        std::ostringstream x;
        x << std::fixed << std::setprecision(6) << "(";
        const size_t show = std::min<size_t>(v.size(), 8);
        for (size_t i = 0; i < show; ++i) x << (i ? ", " : "") << v[i];
        if (v.size() > show) x << ", ... " << v.size() - show << " more";
        x << ")";
        return x.str();
    };
    const char* what = s.with_values ? "output P V" : "probabilities";
    o << "plain softmax (" << what << "):    " << vec(s.plain) << "\n";
    o << "streamed, block by block:       " << vec(s.streamed) << "\n";
    o << std::scientific << std::setprecision(2) << "difference: max abs " << s.max_abs_diff << ", max " << s.max_ulp
      << " ulp\n";
    if (s.max_ulp == 0)
        o << "Bit-identical here. In exact arithmetic the two are always equal; in floating point they may\n"
             "differ by rounding (the sums are formed in a different order), never by more.\n";
    else
        o << "Equal in exact arithmetic; the last-bit difference comes from rounding, because the streamed\n"
             "sum is formed in a different order (and rescaled) than the plain one.\n";
    return o.str();
}

nlohmann::json machine_json(const sim::Machine& m) {
    return {{"name", m.name},
            {"description", m.description},
            {"hbm_bytes", m.hbm_bytes},
            {"hbm_bandwidth", m.hbm_bandwidth},
            {"sram_bytes", m.sram_bytes},
            {"sram_total_bytes", static_cast<double>(m.sram_bytes) * m.sm_count},
            {"sm_count", m.sm_count},
            {"matmul_flops", m.matmul_flops},
            {"matmul_flops_fp8", m.matmul_flops_fp8},
            {"scalar_flops", m.scalar_flops},
            {"l2_bytes", m.l2_bytes},
            {"l2_reuse_bytes", m.l2_walk_bytes()},  // the capacity the L2 walk replays (measured where known)
            {"l2_reuse_source", m.l2_reuse_source.empty() ? "the datasheet's L2 (not measured)" : m.l2_reuse_source},
            {"l2_bandwidth", m.l2_bandwidth},
            {"measured_hbm_bandwidth", m.measured_hbm_bandwidth},
            {"measured_matmul_flops", m.measured_matmul_flops},
            {"exp_rate", m.exp_rate},
            {"sram_bandwidth", m.sram_bandwidth},
            {"source", m.source},
            {"rates_source", m.rates_source}};
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
        if (e.bytes) o << ", " << group_digits(e.bytes) << " B";
        if (e.flops.total()) o << ", " << group_digits(e.flops.total()) << " FLOP";
        o << "\n";
    }
    if (tr.events.size() > n || tr.truncated)
        o << "  ... (" << group_digits(tr.events_total - static_cast<int64_t>(n)) << " more events)\n";
    return o.str();
}

nlohmann::json events_json(const sim::Trace& tr, size_t limit) {
    nlohmann::json ev = nlohmann::json::array();
    for (size_t i = 0; i < std::min(tr.events.size(), limit); ++i) {
        const auto& e = tr.events[i];
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
    return ev;
}

}  // namespace report
