#include "sim/cli/report.hpp"

#include <cmath>
#include <cstdio>
#include <iomanip>
#include <sstream>

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
    if (u == 0) std::snprintf(buf, sizeof buf, "%.0f B", b);
    else std::snprintf(buf, sizeof buf, "%.2f %s", b, units[u]);
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

nlohmann::json result_json(const sim::Result& r) {
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
    j["gpu"] = r.machine.name;
    j["sram_bytes"] = r.sram_bytes;
    j["block_rows"] = r.block_rows;
    j["block_cols"] = r.block_cols;
    j["tiles_rows"] = r.tiles_rows;
    j["tiles_cols"] = r.tiles_cols;
    j["block_note"] = r.block_note;
    j["hbm"] = traffic_json(r.totals.hbm_total());
    nlohmann::json tensors = nlohmann::json::object();
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto t = static_cast<sim::Tensor>(i);
        if (tensor_used(r, t)) tensors[std::string(sim::tensor_name(t))] = traffic_json(r.totals[t]);
    }
    j["tensors"] = tensors;
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
    return j;
}

std::string result_text(const sim::Result& r, const sim::Result* base) {
    const auto& p = r.problem;
    std::ostringstream o;
    o << sim::algo_name(r.algo) << " attention  N=" << p.seq << " d=" << p.head_dim << " B=" << p.batch
      << " H=" << p.heads << " " << sim::dtype_name(p.dtype) << (p.causal ? " causal" : "") << "  on "
      << r.machine.name << "\n";
    o << "blocks: B_r=" << r.block_rows << " B_c=" << r.block_cols << "  (T_r=" << r.tiles_rows
      << ", T_c=" << r.tiles_cols << ")  " << r.block_note << "\n\n";
    o << std::left << std::setw(8) << "tensor" << std::right << std::setw(22) << "HBM read" << std::setw(22)
      << "HBM written" << "\n";
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto t = static_cast<sim::Tensor>(i);
        if (!tensor_used(r, t)) continue;
        o << std::left << std::setw(8) << sim::tensor_name(t) << std::right << std::setw(22)
          << human_bytes(static_cast<double>(r.totals[t].read_bytes)) << std::setw(22)
          << human_bytes(static_cast<double>(r.totals[t].write_bytes)) << "\n";
    }
    const auto tot = r.totals.hbm_total();
    o << std::left << std::setw(8) << "total" << std::right << std::setw(22) << human_bytes(static_cast<double>(tot.read_bytes))
      << std::setw(22) << human_bytes(static_cast<double>(tot.write_bytes)) << "\n";
    o << "HBM traffic: " << group_digits(tot.total()) << " bytes (" << human_bytes(static_cast<double>(tot.total()))
      << ")\n";
    o << "FLOPs: " << human_flops(static_cast<double>(r.totals.flops.total())) << " (matmul "
      << human_flops(static_cast<double>(r.totals.flops.matmul)) << ", exp " << group_digits(r.totals.flops.exp)
      << ", other " << group_digits(r.totals.flops.other) << ")\n";
    o << "SRAM peak: " << human_bytes(static_cast<double>(r.sram_peak_bytes)) << " of "
      << human_bytes(static_cast<double>(r.sram_bytes)) << "\n";
    if (base && base != &r) {
        const double b = static_cast<double>(base->totals.hbm_total().total());
        char buf[128];
        std::snprintf(buf, sizeof buf, "vs %s: %.3fx the HBM traffic (%.1fx less)\n",
                      std::string(sim::algo_name(base->algo)).c_str(), tot.total() / b, b / tot.total());
        o << buf;
    }
    if (r.trace.truncated)
        o << "(trace keeps the first " << group_digits(static_cast<int64_t>(r.trace.events.size())) << " of "
          << group_digits(r.trace.events_total) << " events of head 0; totals count everything)\n";
    return o.str();
}

std::string compare_text(const std::vector<sim::Result>& rs) {
    if (rs.empty()) return {};
    const auto& p = rs[0].problem;
    std::ostringstream o;
    o << "HBM traffic, N=" << p.seq << " d=" << p.head_dim << " B=" << p.batch << " H=" << p.heads << " "
      << sim::dtype_name(p.dtype) << (p.causal ? " causal" : "") << " on " << rs[0].machine.name << " (SRAM "
      << human_bytes(static_cast<double>(rs[0].sram_bytes)) << ")\n\n";
    o << std::left << std::setw(10) << "tensor";
    for (const auto& r : rs) o << std::right << std::setw(24) << sim::algo_name(r.algo);
    o << "\n";
    for (int i = 0; i < sim::kTensorCount; ++i) {
        const auto t = static_cast<sim::Tensor>(i);
        bool any = false;
        for (const auto& r : rs) any |= tensor_used(r, t);
        if (!any) continue;
        o << std::left << std::setw(10) << sim::tensor_name(t);
        for (const auto& r : rs) o << std::right << std::setw(24) << human_bytes(static_cast<double>(r.totals[t].total()));
        o << "\n";
    }
    (void)p;
    o << std::left << std::setw(10) << "total";
    for (const auto& r : rs) o << std::right << std::setw(24) << human_bytes(static_cast<double>(r.totals.hbm_total().total()));
    o << "\n" << std::left << std::setw(10) << "vs first";
    const double b = static_cast<double>(rs[0].totals.hbm_total().total());
    for (const auto& r : rs) {
        char buf[32];
        std::snprintf(buf, sizeof buf, "%.3fx", r.totals.hbm_total().total() / b);
        o << std::right << std::setw(24) << buf;
    }
    o << "\n" << std::left << std::setw(10) << "FLOPs";
    for (const auto& r : rs) o << std::right << std::setw(24) << human_flops(static_cast<double>(r.totals.flops.total()));
    o << "\n" << std::left << std::setw(10) << "blocks";
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
    o << std::left << std::setw(7) << "block" << std::setw(34) << "scores" << std::setw(11) << "block max"
      << std::setw(13) << "running max" << std::setw(13) << "rescale" << "running sum\n";
    for (const auto& b : s.record.blocks) {
        std::ostringstream sc;
        sc << std::fixed << std::setprecision(2);
        for (size_t i = 0; i < b.scores.size(); ++i) sc << (i ? ", " : "") << b.scores[i];
        std::ostringstream resc;
        resc << std::fixed << std::setprecision(4) << b.rescale;
        o << std::left << std::setw(7) << (b.block + 1) << std::setw(34) << sc.str() << std::setprecision(4)
          << std::setw(11) << b.block_max << std::setw(13) << b.running_max_after
          << std::setw(13) << (b.block == 0 ? std::string("-") : resc.str()) << b.running_sum_after << "\n";
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

}  // namespace report
