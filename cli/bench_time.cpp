// cli/bench_time.cpp — flashsim bench (the default mode): time the kernels, check them, set the model beside them.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "cli/bench.hpp"
#include "cli/commands.hpp"
#include "cuda/api.hpp"
#include "report/kernel_bridge.hpp"
#include "sim/footprint.hpp"
#include "sim/kernel_model.hpp"
#include "sim/knobs.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

int run_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    // by default every variant this GPU can run (flash2h needs Hopper); one asked for by name
    // and not runnable here fails its rows with the reason
    std::vector<std::string> variants = a.variants;
    if (variants.empty())
        for (const auto& v : fcuda::variants()) {
            std::string no;
            if (fcuda::variant_available(v, &no))
                variants.push_back(v);
            else
                std::cerr << "bench: skipping " << v << ": " << no << "\n";
        }
    const sim::Machine& machine = bench_machine(a);
    RatesCache rates(machine, a.predict_ceilings);
    json rows = json::array();
    // the JSON file is rewritten after every row, so a run cut short keeps what it measured
    const std::time_t started = std::time(nullptr);
    auto write_json = [&]() -> bool { return write_doc(a.json, rows, started); };
    bool all_ok = true;
    std::printf("%-9s %-8s %6s %4s %3s %4s %-6s %10s %8s %12s %12s %9s %9s %10s %s\n", "variant", "pass", "N", "d", "B",
                "H", "mask", "ms(med)", "TFLOP/s", "sim_hbm_MB", "dram_MB", "rel_ref", "rel_std", "peak_MB", "ok");
    for (const auto& pass_s : a.passes) {
        const fcuda::Pass pass = pass_s == "backward" ? fcuda::Pass::backward
                                 : pass_s == "step"   ? fcuda::Pass::step
                                                      : fcuda::Pass::forward;
        if (pass_s != "forward" && pass_s != "backward" && pass_s != "step") {
            print_error("bench", "--pass takes forward, backward and/or step, got '" + pass_s + "'");
            return 1;
        }
        for (int64_t d : a.head_dims)
            for (int64_t n : a.seqs)
                for (const auto& v : variants) {
                    if (!fcuda::supports(v, pass)) continue;
                    sim::Problem p;
                    p.seq = n;
                    p.head_dim = d;
                    p.heads = a.heads > 0 ? a.heads : std::max<int64_t>(1, 2048 / d);
                    p.batch = a.batch > 0 ? a.batch : std::max<int64_t>(1, 16384 / n);
                    p.dtype = *dt;
                    p.causal = a.causal;
                    p.seed = a.seed;
                    std::cerr << "bench: " << v << " " << pass_s << " N=" << n << " d=" << d << " B=" << p.batch
                              << " H=" << p.heads << (p.causal ? " causal" : "") << " ...\n";
                    json row{{"variant", v},     {"pass", pass_s},   {"seq", n},         {"head_dim", d},
                             {"batch", p.batch}, {"heads", p.heads}, {"dtype", a.dtype}, {"causal", p.causal}};
                    row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
                    try {
                        fcuda::RunOptions o;
                        o.pass = pass;
                        o.repeats = a.repeats;
                        o.warmup = a.warmup;
                        o.check_reference = !a.no_check;
                        o.check_standard = !a.no_check;
                        o.nvtx = a.nvtx;
                        const fcuda::Measurement m = fcuda::run(p, v, o);
                        row["l2_flush"] = m.l2_flush;
                        row["ms_median"] = m.ms_median;
                        row["ms_min"] = m.ms_min;
                        row["ms_max"] = m.ms_max;
                        row["repeats"] = m.repeats;
                        row["tflops"] = m.tflops;
                        if (p.dtype == sim::DType::fp8) row["prep_ms"] = m.prep_ms;  // quantize + V^T, timed apart
                        row["flops"] = fcuda::attention_flops(p, pass);
                        row["dram_read_bytes"] = opt_bytes(m.dram_read_bytes);
                        row["dram_write_bytes"] = opt_bytes(m.dram_write_bytes);
                        row["l2_bytes"] = opt_bytes(m.l2_bytes);
                        row["counters_note"] = m.counters_note;
                        row["tiles"] = report::tiles_json(m.tiles);
                        if (pass == fcuda::Pass::step) row["tiles_forward"] = report::tiles_json(m.tiles_forward);
                        row["vs_reference"] = stats_json(m.vs_reference);
                        row["vs_standard"] = stats_json(m.vs_standard);
                        row["unwritten"] = m.unwritten;
                        row["note"] = m.note;
                        row["peak_bytes"] = m.peak_bytes;
                        row["peak_bytes_method"] = "harness allocations: one input/output set + workspace";
                        simulate_row(row, machine);
                        predict_row(row, rates);
                        // fp8: 3 x the relative RMS error the CPU emulation of the same arithmetic measures
                        // against float64 (`flashsim numerics --dtype fp8 -n 1024 -d 128`: 0.0526), the bar
                        // of tests/cuda/test_fp8.cpp; standard runs bf16 on the same inputs, as far away
                        const double tol = p.dtype == sim::DType::fp8    ? 3 * 0.0526
                                           : p.dtype == sim::DType::bf16 ? 2e-2
                                                                         : 5e-3;
                        bool ok = m.unwritten == 0 && m.note.empty();
                        for (const auto* e : {&m.vs_reference, &m.vs_standard})
                            if (e->count > 0 && (e->nonfinite > 0 || e->rel_frobenius > tol)) ok = false;
                        row["ok"] = ok;
                        all_ok = all_ok && ok;
                        auto mb = [](const json& j) { return j.is_null() ? -1.0 : j.get<double>() / 1e6; };
                        const double sim_mb = row["sim_hbm_read_bytes"].is_null()
                                                  ? -1.0
                                                  : mb(row["sim_hbm_read_bytes"]) + mb(row["sim_hbm_write_bytes"]);
                        char dram_buf[32] = "-";
                        if (m.dram_read_bytes >= 0)
                            std::snprintf(dram_buf, sizeof dram_buf, "%.1f",
                                          (m.dram_read_bytes + m.dram_write_bytes) / 1e6);
                        const std::string dram_mb = dram_buf;
                        char sim_buf[32] = "-";  // "-": not simulated / not compared (no placeholder number)
                        if (sim_mb >= 0) std::snprintf(sim_buf, sizeof sim_buf, "%.1f", sim_mb);
                        std::printf("%-9s %-8s %6lld %4lld %3lld %4lld %-6s %10.3f %8.1f %12s %12s %9s %9s %10.1f %s\n",
                                    v.c_str(), pass_s.c_str(), (long long)n, (long long)d, (long long)p.batch,
                                    (long long)p.heads, p.causal ? "causal" : "none", m.ms_median, m.tflops, sim_buf,
                                    dram_mb.c_str(), rel_text(m.vs_reference).c_str(), rel_text(m.vs_standard).c_str(),
                                    m.peak_bytes / 1e6, ok ? "yes" : "NO");
                        std::fflush(stdout);
                    } catch (const std::exception& e) {
                        row["error"] = e.what();
                        row["ok"] = false;
                        all_ok = false;
                        std::printf("%-9s %-8s %6lld %4lld  error: %s\n", v.c_str(), pass_s.c_str(), (long long)n,
                                    (long long)d, e.what());
                        // the next case starts clean: its buffers were freed as this one unwound
                        if (const std::string lost = fcuda::clear_error_state(); !lost.empty()) {
                            std::printf("bench: %s\n", lost.c_str());
                            rows.push_back(row);
                            (void)write_json();
                            return 1;
                        }
                    }
                    rows.push_back(row);
                    if (!write_json()) return 1;
                }
    }
    if (!write_json()) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    if (!all_ok) std::cerr << "bench: some configurations failed their checks (ok = NO above)\n";
    return all_ok ? 0 : 1;
}

}  // namespace bench
