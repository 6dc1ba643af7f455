#include "report/kernel_report.hpp"

#include <algorithm>
#include <cstdio>
#include <filesystem>
#include <fstream>

#include "report/results.hpp"
#include "sim/kernel_config.hpp"

namespace report {

namespace {

// Digits only, at most 9 of them (a row length or a head dimension), else -1.
int64_t small_number(const std::string& digits) {
    if (digits.empty() || digits.size() > 9 || digits.find_first_not_of("0123456789") != std::string::npos) return -1;
    return std::stoll(digits);
}

// One ceilings entry `c` named `name`, if it is one of standard's cuBLAS calls timed alone at row length N
// and depth d: gemm_<qk|pv|ptv><suffix>_d<d>_n<N> (FLOP/s), the dtype's own (suffix _bf16 or _fp16);
// other dtypes' points are left to their reader.
template <typename Value>
void standard_gemm_point(const nlohmann::json& c, const std::string& name, const std::string& where,
                         const std::string& suffix, const Value& value_of, std::vector<sim::StandardGemmPoint>& out) {
    for (const auto g : {sim::StandardGemm::qk, sim::StandardGemm::pv, sim::StandardGemm::ptv}) {
        const std::string prefix = "gemm_" + std::string(sim::standard_gemm_name(g)) + suffix + "_d";
        if (name.rfind(prefix, 0) != 0) continue;
        const std::string rest = name.substr(prefix.size());
        const size_t cut = rest.find("_n");
        const int64_t d = cut == std::string::npos ? -1 : small_number(rest.substr(0, cut));
        const int64_t n = cut == std::string::npos ? -1 : small_number(rest.substr(cut + 2));
        if (d <= 0 || n <= 0)
            throw sim::Error(where + ": ceiling '" + name + "' should name a head dimension and a row length, e.g. " +
                             prefix + "64_n1001");
        out.push_back({g, d, n, value_of(c, name)});
    }
}

}  // namespace

sim::KernelRates ceilings_from_json(const nlohmann::json& doc, const std::string& where, const sim::Machine& m,
                                    sim::DType dtype) {
    if (!doc.is_object() || !doc.contains("ceilings") || !doc["ceilings"].is_array())
        throw sim::Error(where +
                         ": not a ceilings file (no \"ceilings\" array; write one with `flashsim bench "
                         "--ceilings --json FILE`)");
    if (doc.contains("device") && doc["device"].is_string()) {
        const std::string dev = doc["device"];
        if (sim::preset_for_device(dev) != m.name)
            throw sim::Error(where + ": measured on '" + dev + "', not on the " + m.name +
                             " preset's GPU; pick that preset with --gpu or another file");
    }
    // an entry's value, checked: positive and below anything a rate or a time can be
    auto value_of = [&](const nlohmann::json& c, const std::string& name) -> double {
        if (!c.contains("value") || !c["value"].is_number())
            throw sim::Error(where + ": ceiling '" + name + "' has no numeric value");
        const double v = c["value"].get<double>();
        if (!(v > 0))
            throw sim::Error(where + ": ceiling '" + name + "' is " + std::to_string(v) +
                             " (not measured on that GPU?); it must be positive");
        if (!(v <= 1e18)) {  // rates are ~1e12-1e16 a second, times ~1e-7-1e-5 s: 1e18 is no measurement
            char buf[32];
            std::snprintf(buf, sizeof buf, "%.3g", v);
            throw sim::Error(where + ": ceiling '" + name + "' is " + buf +
                             ", beyond any measurement (rates in units a second, times in seconds, all below "
                             "1e18); re-measure it with `flashsim bench --ceilings --json FILE`");
        }
        return v;
    };
    auto get = [&](const std::string& name) -> double {
        for (const auto& c : doc["ceilings"])
            if (c.is_object() && c.contains("name") && c["name"] == name) return value_of(c, name);
        throw sim::Error(where + ": ceiling '" + name + "' is missing");
    };
    const std::string suffix = dtype == sim::DType::fp16 ? "_fp16" : "_bf16";
    sim::KernelRates r;
    r.hbm = get("hbm_copy");
    r.l2 = get("l2_read");
    r.smem = get("smem_read");
    r.mma_sync = get("mma_sync" + suffix);
    r.wgmma = get("wgmma" + suffix);
    r.exp = get("ex2");
    r.issue = 8 * r.exp;
    r.launch_s = get("launch");
    // recorded since the backward's model needed them; older files lack them (0: not measured)
    auto optional = [&](const std::string& name) {
        for (const auto& c : doc["ceilings"])
            if (c.is_object() && c.contains("name") && c["name"] == name) return get(name);
        return 0.0;
    };
    r.bulk_reduce = optional("l2_bulk_reduce_f32");
    r.wgmma_wait_s = optional("wgmma_wait");
    r.hbm_read = optional("hbm_read");
    r.hbm_write = optional("hbm_write");
    r.gemm_write_d64 = optional("gemm_write" + suffix + "_d64");
    r.gemm_write_d128 = optional("gemm_write" + suffix + "_d128");
    r.hbm_rmw_d64 = optional("hbm_rmw_f32_d64");
    r.hbm_rmw_d128 = optional("hbm_rmw_f32_d128");
    r.l2_red = optional("l2_red_f32x2");
    r.red_fence_s = optional("l2_red_fence");
    r.wgmma_fp8 = optional("wgmma_e4m3");  // e4m3 wgmma (bench --ceilings); 0: the bf16 rate x the datasheet ratio
    // standard's two-pass softmax kernels at row lengths n (softmax_rows_fwd_n<n>, softmax_rows_bwd_n<n>) and
    // its cuBLAS calls at row length n and depth d (standard_gemm_point), each read from its own entry
    for (const auto& c : doc["ceilings"]) {
        if (!c.is_object() || !c.contains("name") || !c["name"].is_string()) continue;
        const std::string name = c["name"];
        for (auto [prefix, pts] : {std::pair{std::string("softmax_rows_fwd_n"), &r.softmax_rows_fwd},
                                   std::pair{std::string("softmax_rows_bwd_n"), &r.softmax_rows_bwd}}) {
            if (name.rfind(prefix, 0) != 0) continue;
            const int64_t n = small_number(name.substr(prefix.size()));
            if (n < 0)
                throw sim::Error(where + ": ceiling '" + name + "' should end in a row length, e.g. " + prefix +
                                 "4100");
            pts->push_back({n, value_of(c, name)});
        }
        standard_gemm_point(c, name, where, suffix, value_of, r.standard_gemm);
    }
    std::sort(r.softmax_rows_fwd.begin(), r.softmax_rows_fwd.end());
    std::sort(r.softmax_rows_bwd.begin(), r.softmax_rows_bwd.end());
    r.gemm = m.measured_matmul_flops > 0 ? m.measured_matmul_flops : r.wgmma;
    std::string date = doc.contains("date") && doc["date"].is_string() ? doc["date"].get<std::string>() : "";
    std::string commit =
        doc.contains("git_commit") && doc["git_commit"].is_string() ? doc["git_commit"].get<std::string>() : "";
    r.source = "measured: " + where + (date.empty() ? "" : " (" + date + (commit.empty() ? "" : ", " + commit) + ")") +
               "; fp32 issue = 8 x ex2 (128 fp32 lanes against 16 MUFU lanes an SM a clock); library GEMM: " +
               (m.measured_matmul_flops > 0 ? "the preset's measured cuBLAS rate" : "the wgmma rate");
    return r;
}

sim::KernelRates read_ceilings_file(const std::string& path, const sim::Machine& m, sim::DType dtype) {
    std::ifstream in(path);
    if (!in)
        throw sim::Error("cannot read the ceilings file " + path +
                         " (record one with `flashsim bench --ceilings --json FILE` on the GPU, or pass "
                         "--ceilings-file)");
    nlohmann::json doc;
    try {
        doc = nlohmann::json::parse(in);
    } catch (const std::exception& e) { throw sim::Error("ceilings file " + path + " is not valid JSON: " + e.what()); }
    return ceilings_from_json(doc, path, m, dtype);
}

sim::Machine with_measured(const sim::Machine& m, const sim::KernelRates& r) {
    sim::Machine x = m;
    x.measured_hbm_bandwidth = r.hbm;
    if (x.measured_matmul_flops <= 0) x.measured_matmul_flops = r.gemm;
    if (r.wgmma_fp8 > 0) x.measured_matmul_flops_fp8 = r.wgmma_fp8;
    x.l2_bandwidth = r.l2;
    x.sram_bandwidth = r.smem;
    x.exp_rate = r.exp;
    x.source += "; measured ceilings: " + r.source;
    return x;
}

nlohmann::json kernel_prediction_json(const sim::KernelPrediction& k) {
    const auto& p = k.profile;
    nlohmann::json comps = nlohmann::json::array();
    for (const auto& c : k.components) comps.push_back({{"name", c.name}, {"seconds", c.seconds}, {"what", c.what}});
    return {{"kernel", p.kernel},
            {"pass", std::string(sim::pass_name(p.pass))},
            {"profile",
             {{"algo", std::string(sim::algo_name(p.algo))},
              {"block_rows", p.block_rows},
              {"block_cols", p.block_cols},
              {"threads", p.threads},
              {"smem_bytes", p.smem_bytes},
              {"ctas_per_sm", p.ctas_per_sm},
              {"tensor_path", std::string(sim::tensor_path_name(p.tensor))},
              {"operand_bytes_per_flop", p.operand_bytes_per_flop},
              {"overlap", std::string(sim::overlap_name(p.overlap))},
              {"softmax_window", p.overlap == sim::Overlap::softmax_behind_product ? p.softmax_window : 0.0},
              {"dq", std::string(sim::dq_name(p.dq))},
              {"one_launch_per_kv_block", p.one_launch_per_kv_block},
              {"grid", std::string(sim::name_of(p.grid))},
              {"static_causal_max_tr", p.static_causal_max_tr},
              {"side_launches", p.side_launches},
              {"consumer_warpgroups", p.consumer_warpgroups},
              {"lock_step", p.lock_step},
              {"wgmma_waits", p.wgmma_waits},
              {"smem_store_bytes", p.smem_store_bytes},
              {"layout", p.layout},
              {"why", p.why}}},
            {"predicted_ms", k.predicted_ms},
            {"tflops", k.tflops},
            {"where_the_time_goes", comps},
            {"bound", k.bound},
            {"steady_s", k.steady_s},
            {"prologue_and_waves_s", k.prologue_s},
            {"ctas", k.ctas},
            {"slots", k.slots},
            {"waves", k.waves},
            {"grid", std::string(sim::name_of(k.grid))},
            {"uncertain", k.uncertain},
            {"uncertain_why", k.uncertain_why},
            {"rates_source", k.rates_source},
            {"notes", k.notes}};
}

std::string kernel_prediction_text(const sim::KernelPrediction& k) {
    const auto& p = k.profile;
    std::string s;
    char buf[512];
    std::snprintf(buf, sizeof buf, "\nkernel model: %s %s (B_r %lld, B_c %lld, %d threads, %d block(s) an SM)\n",
                  p.kernel.c_str(), std::string(sim::pass_name(p.pass)).c_str(), static_cast<long long>(p.block_rows),
                  static_cast<long long>(p.block_cols), p.threads, p.ctas_per_sm);
    s += buf;
    char window[48] = "";
    if (p.overlap == sim::Overlap::softmax_behind_product)
        std::snprintf(window, sizeof window, " (under %.2f of the products)", p.softmax_window);
    std::snprintf(buf, sizeof buf, "  products on %s; overlap: %s%s; dQ: %s\n",
                  std::string(sim::tensor_path_name(p.tensor)).c_str(),
                  std::string(sim::overlap_name(p.overlap)).c_str(), window, std::string(sim::dq_name(p.dq)).c_str());
    s += buf;
    if (p.consumer_warpgroups > 0) {
        std::snprintf(
            buf, sizeof buf,
            "  %d consumer warpgroups, %s; %d wgmma waits and %lld bytes of shared-memory stores a step\n",
            p.consumer_warpgroups,
            p.lock_step ? "in lock step" : "offset by half a step (measured: no overlap; the step sums its parts)",
            p.wgmma_waits, static_cast<long long>(p.smem_store_bytes));
        s += buf;
    }
    s += "  where the time goes (whole GPU, each alone):\n";
    for (const auto& c : k.components) {
        std::snprintf(buf, sizeof buf, "    %-14s %10.4f ms  %s\n", c.name.c_str(), c.seconds * 1e3, c.what.c_str());
        s += buf;
    }
    std::snprintf(buf, sizeof buf,
                  "  schedule: %.4f ms steady + %.4f ms first copies and waves (%lld blocks on %lld slots, %.2f "
                  "waves)\n",
                  k.steady_s * 1e3, k.prologue_s * 1e3, static_cast<long long>(k.ctas), static_cast<long long>(k.slots),
                  k.waves);
    s += buf;
    if (k.grid == sim::GridOrder::static_units)
        s += std::string("  grid: the static order, a persistent grid of one block a slot taking units in turn (") +
             "a unit: one query block, or under the causal mask a head's p-th heaviest and p-th lightest, " +
             (k.profile.lone_middles ? "or its middle block alone" : "or two heads' middle blocks") +
             "); the blocks above are its tiles\n";
    std::snprintf(buf, sizeof buf, "  this pass: %.4f ms (%.0f TFLOP/s); largest part: %s\n", k.predicted_ms, k.tflops,
                  k.bound.c_str());
    s += buf;
    if (k.uncertain) s += "  uncertain: " + k.uncertain_why + "\n";
    for (const auto& n : k.notes) s += "  note: " + n + "\n";
    s += "  rates: " + k.rates_source + "\n";
    return s;
}

std::string default_ceilings_file(const sim::Machine& m) {
    const std::string card = card_folder(m.name);
    if (card.empty()) return "";
    const std::string path = current_file(card, "ceilings.json");
    // the H200's file is part of the project: a missing one is an error to report, not a datasheet fallback
    return std::filesystem::exists(path) || m.name == "H200" ? path : "";
}

std::optional<sim::KernelRates> measured_rates(const sim::Machine& m, sim::DType dtype, const std::string& file) {
    const std::string path = file.empty() ? default_ceilings_file(m) : file;
    if (path.empty()) return std::nullopt;
    return read_ceilings_file(path, m, dtype);
}

std::optional<sim::KernelRates> estimated_rates(const sim::Machine& m, sim::DType dtype) {
    for (const sim::Machine& other : sim::machine_presets()) {
        if (other.name == m.name || other.compute_capability != m.compute_capability) continue;
        const std::string path = default_ceilings_file(other);
        if (path.empty() || !std::filesystem::exists(path)) continue;
        return sim::estimated_rates(m, other, read_ceilings_file(path, other, dtype));
    }
    return std::nullopt;
}

bool is_rates_choice(const std::string& choice) {
    return choice == "auto" || choice == "measured" || choice == "estimated" || choice == "datasheet";
}

ChosenRates choose_rates(const sim::Machine& m, sim::DType dtype, const std::string& choice) {
    if (!is_rates_choice(choice))
        throw sim::Error("unknown ceilings '" + choice + "'; use measured, estimated, datasheet or auto");
    if (choice == "datasheet") return {sim::datasheet_rates(m), "datasheet"};
    if (choice != "estimated")
        if (const auto r = measured_rates(m, dtype, "")) return {*r, "measured"};
    if (choice == "measured")
        throw sim::Error("no measured ceilings are recorded for the " + m.name +
                         " (record them with `flashsim bench --ceilings --json FILE` on that card); use estimated or "
                         "datasheet");
    if (const auto r = estimated_rates(m, dtype)) return {*r, "estimated"};
    if (choice == "estimated")
        throw sim::Error("no card of the " + m.name +
                         "'s architecture has measured ceilings recorded, so none can be "
                         "estimated for it; use datasheet");
    return {sim::datasheet_rates(m), "datasheet"};
}

}  // namespace report
