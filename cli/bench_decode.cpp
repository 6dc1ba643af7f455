// cli/bench_decode.cpp — flashsim bench --decode: one new token against a KV cache.
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
#include "sim/footprint.hpp"
#include "sim/kernel_model.hpp"
#include "sim/knobs.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

// flashsim bench --decode: the decode kernel on the shapes (or --cache x --batch).
int run_decode_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    const sim::Machine& machine = bench_machine(a);
    std::vector<std::pair<int64_t, int64_t>> shapes;  // (B, L)
    if (a.caches.empty())
        shapes = {{1, 32768}, {1, 131072}, {8, 32768}, {64, 8192}};
    else
        for (int64_t L : a.caches) shapes.push_back({a.batch > 0 ? a.batch : 1, L});
    const std::vector<int64_t> dims = a.dims_given ? a.head_dims : std::vector<int64_t>{128};
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-7s %3s %8s %4s %4s %4s %6s %10s %10s %8s %9s %9s %10s %s\n", "pass", "B", "L", "H_q", "H_kv", "d",
                "splits", "ms(med)", "KV_MB", "TB/s", "sim_ms", "rel_ref", "peak_MB", "ok");
    for (int64_t d : dims)
        for (const auto& [B, L] : shapes) {
            sim::DecodeProblem p;
            p.batch = B;
            p.kv_len = L;
            p.q_heads = a.q_heads;
            p.kv_heads = a.kv_heads;
            p.head_dim = d;
            p.dtype = *dt;
            p.seed = a.seed;
            std::cerr << "bench: decode B=" << B << " L=" << L << " H_q=" << p.q_heads << " H_kv=" << p.kv_heads
                      << " d=" << d << " ...\n";
            json row{{"variant", "decode"},  {"pass", "decode"},       {"batch", B},         {"kv_len", L},
                     {"q_heads", p.q_heads}, {"kv_heads", p.kv_heads}, {"heads", p.q_heads}, {"seq", 1},
                     {"head_dim", d},        {"dtype", a.dtype},       {"causal", false}};
            row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
            try {
                fcuda::RunOptions o;
                o.machine = machine.name;
                o.repeats = a.repeats;
                o.warmup = a.warmup;
                o.check_reference = !a.no_check;
                o.trace_runs = a.trace;
                const fcuda::DecodeMeasurement m = fcuda::run_decode(p, o, a.splits);
                row["splits"] = m.splits;
                row["splits_why"] = m.splits_why;
                row["blocks"] = m.blocks;
                row["tile_keys"] = m.tile_keys;
                row["stage_keys"] = m.stage_keys;
                row["l2_prefetch"] = m.l2_prefetch;
                row["kv_load"] = m.kv_load;
                row["merge"] = m.merge;
                row["l2_flush"] = m.l2_flush;
                row["ms_median"] = m.ms_median;
                row["ms_min"] = m.ms_min;
                row["ms_max"] = m.ms_max;
                row["repeats"] = m.repeats;
                row["kv_bytes"] = m.kv_bytes;
                row["total_bytes"] = m.total_bytes;
                row["tbps"] = m.kv_tbps;
                row["sim_predicted_ms"] = m.sim_predicted_ms;
                row["vs_reference"] = stats_json(m.vs_reference);
                row["unwritten"] = m.unwritten;
                row["note"] = m.note;
                row["peak_bytes"] = m.peak_bytes;
                row["peak_bytes_method"] = "harness allocations: Q, K, V, O, LSE and the split partials of one set";
                if (m.trace.runs > 0) {
                    const fcuda::DecodeTrace& t = m.trace;
                    row["trace"] = {{"runs", t.runs},
                                    {"event_us", t.event_us},
                                    {"span_us", t.span_us},
                                    {"start_med_us", t.start_med_us},
                                    {"start_max_us", t.start_max_us},
                                    {"first_tile_med_us", t.first_tile_med_us},
                                    {"first_tile_max_us", t.first_tile_max_us},
                                    {"stream_med_us", t.stream_med_us},
                                    {"stream_max_us", t.stream_max_us},
                                    {"written_med_us", t.written_med_us},
                                    {"written_max_us", t.written_max_us},
                                    {"first_tile_wait_us", t.first_tile_wait_us},
                                    {"merge_us", t.merge_us},
                                    {"timer_step_ns", t.timer_step_ns},
                                    {"sm_clock_ghz", t.sm_clock_ghz},
                                    {"note",
                                     "microseconds from the first block's start (global timer), each the "
                                     "median over the traced calls, every call after an L2 flush; event_us "
                                     "is the call by CUDA events, span_us first start to last stamp"}};
                    std::printf(
                        "  trace (%d calls, us): event %.1f, span %.1f; starts med %.1f max %.1f; first tile "
                        "med %.1f max %.1f; last tile med %.1f max %.1f; written med %.1f max %.1f; merge "
                        "%.1f; timer step %.0f ns\n",
                        t.runs, t.event_us, t.span_us, t.start_med_us, t.start_max_us, t.first_tile_med_us,
                        t.first_tile_max_us, t.stream_med_us, t.stream_max_us, t.written_med_us, t.written_max_us,
                        t.merge_us, t.timer_step_ns);
                }
                const double tol = p.dtype == sim::DType::bf16 ? 2e-2 : 5e-3;
                const bool ok = m.unwritten == 0 && m.note.find("non-finite") == std::string::npos &&
                                (m.vs_reference.count == 0 ||
                                 (m.vs_reference.nonfinite == 0 && m.vs_reference.rel_frobenius <= tol));
                row["ok"] = ok;
                all_ok = all_ok && ok;
                std::printf("%-7s %3lld %8lld %4lld %4lld %4lld %6lld %10.4f %10.1f %8.2f %9.4f %9s %10.1f %s\n",
                            "decode", (long long)B, (long long)L, (long long)p.q_heads, (long long)p.kv_heads,
                            (long long)d, (long long)m.splits, m.ms_median, m.kv_bytes / 1e6, m.kv_tbps,
                            m.sim_predicted_ms, rel_text(m.vs_reference).c_str(), m.peak_bytes / 1e6,
                            ok ? "yes" : "NO");
                std::fflush(stdout);
            } catch (const std::exception& e) {
                row["error"] = e.what();
                row["ok"] = false;
                all_ok = false;
                std::printf("decode  B=%lld L=%lld d=%lld error: %s\n", (long long)B, (long long)L, (long long)d,
                            e.what());
            }
            rows.push_back(row);
            if (!write_doc(a.json, rows, started)) return 1;
        }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

}  // namespace bench
