// cli/bench_study.cpp — flashsim bench --study and --scale: numerics against float64, at random shapes and at scale.
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

// flashsim bench --study COUNT: random shapes, every kernel and pass against float64 on the GPU
// (cuda/study.cpp). One row per shape with each kernel's error, the standard kernel's, and the bar.
int run_study(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const std::time_t started = std::time(nullptr);
    const auto t0 = std::chrono::steady_clock::now();
    const std::vector<fcuda::StudyShape> shapes = fcuda::study_shapes(a.study, a.seed);
    json rows = json::array();
    int64_t entries = 0, inside = 0;
    int done = 0;
    for (size_t k = 0; k < shapes.size(); ++k) {
        const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
        if (a.time_limit > 0 && elapsed > a.time_limit) {
            std::printf("study: time limit of %.0f s reached after %d shapes of slice %d/%d\n", a.time_limit, done,
                        a.slice, a.slices);
            break;
        }
        if (static_cast<int>(k % static_cast<size_t>(a.slices)) != a.slice) continue;
        const fcuda::StudyShape& sh = shapes[k];
        json row{{"shape", k},          {"batch", sh.B},
                 {"heads", sh.H},       {"seq", sh.N},
                 {"head_dim", sh.d},    {"dtype", sim::dtype_name(sh.dtype)},
                 {"causal", sh.causal}, {"score_target", sh.score_target},
                 {"seed", sh.seed}};
        row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
        try {
            // the GPU's float64 against the CPU's on the first shapes small enough
            const double work = double(sh.B * sh.H) * double(sh.N) * double(sh.N) * double(sh.d);
            const bool cpu_check = k < 200 && work <= 2e8;
            const fcuda::StudyResult r = fcuda::study_one(sh, cpu_check);
            row["lse_max"] = r.lse_max;
            row["reference_ms"] = r.reference_ms;
            if (r.gpu_vs_cpu_reference >= 0) row["gpu_vs_cpu_reference"] = r.gpu_vs_cpu_reference;
            json es = json::array();
            bool all = true;
            for (const auto& e : r.entries) {
                es.push_back({{"variant", e.variant},
                              {"pass", fcuda::pass_name(e.pass)},
                              {"tensor", e.tensor},
                              {"err", e.err},
                              {"err_standard", e.err_standard},
                              {"atol", e.atol},
                              {"ref_max", e.ref_max},
                              {"bound", e.bound},
                              {"max_ulp", e.max_ulp},
                              {"identical", e.identical},
                              {"count", e.count},
                              {"nonfinite", e.nonfinite},
                              {"worst_at", e.where},
                              {"ok", e.ok}});
                ++entries;
                inside += e.ok ? 1 : 0;
                all = all && e.ok;
            }
            row["entries"] = es;
            row["ok"] = all;
            if (!all) {
                std::printf("study: shape %zu (B=%lld H=%lld N=%lld d=%d %s%s) outside the bar:", k, (long long)sh.B,
                            (long long)sh.H, (long long)sh.N, sh.d, std::string(sim::dtype_name(sh.dtype)).c_str(),
                            sh.causal ? " causal" : "");
                for (const auto& e : r.entries)
                    if (!e.ok)
                        std::printf(" %s %s %s err %.3g > bound %.3g;", e.variant.c_str(), fcuda::pass_name(e.pass),
                                    e.tensor.c_str(), e.err, e.bound);
                std::printf("\n");
            }
        } catch (const std::exception& e) {
            row["error"] = e.what();
            row["ok"] = false;
            std::printf("study: shape %zu (N=%lld d=%d) error: %s\n", k, (long long)sh.N, sh.d, e.what());
        }
        rows.push_back(row);
        ++done;
        if (done % 50 == 0) {
            std::printf("study: %d shapes, %lld of %lld comparisons inside the bar\n", done, (long long)inside,
                        (long long)entries);
            std::fflush(stdout);
            if (!write_doc(a.json, rows, started, "shapes")) return 1;
        }
    }
    if (!write_doc(a.json, rows, started, "shapes")) return 1;
    std::printf("study: %d shapes, %lld of %lld comparisons inside the bar\n", done, (long long)inside,
                (long long)entries);
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return inside == entries ? 0 : 1;
}

// flashsim bench --scale: every flash kernel with more than 2^31 elements in a tensor (B = 1, N = 16384,
// d = 128, as many heads up to 2048 as the card's free memory holds) and at N = 1,048,576 for one head
// (causal), checked on sampled rows against float64. standard is left out: its N x N scores alone would
// take 1.1 TB and 2.2 TB. A case the card cannot hold is skipped with its reason; a case that fails
// leaves the GPU clean for the next (fcuda::clear_error_state).
namespace {

struct ScaleCase {
    int64_t B, H, N;
    bool causal;
    int64_t key_tail;
};

// The heads of the wide case on this card: the most, up to 2048, whose pass needs at most 90% of the
// free memory (the rest for cuBLAS, the L2 flush buffer and the allocator's rounding); 0 and `why` when
// that is not past 2^31 elements a tensor, the point of the case.
int64_t wide_heads(sim::Problem p, const std::string& v, fcuda::Pass pass, std::string& why) {
    const double free_b = fcuda::device_free_bytes();
    const int64_t past = (int64_t{1} << 31) / (p.seq * p.head_dim) + 1;  // fewest heads past 2^31 elements
    for (int64_t h = 2048; h >= past; h -= 64) {
        p.heads = h;
        if (double(fcuda::device_bytes_needed(p, v, pass)) <= 0.9 * free_b) return h;
    }
    p.heads = past;
    char b[256];
    std::snprintf(b, sizeof b,
                  "skipped: %lld heads (just past 2^31 elements a tensor) need %.1f GiB and the card has %.1f GiB "
                  "free; a card with more memory runs it",
                  (long long)past, double(fcuda::device_bytes_needed(p, v, pass)) / (1 << 30), free_b / (1 << 30));
    why = b;
    return 0;
}

// Sampled (head, query row) pairs: the first and last heads and rows, and a few between.
std::vector<std::pair<int64_t, int64_t>> sample_rows(const sim::Problem& p) {
    const int64_t H = p.heads, N = p.seq;
    if (H == 1) return {{0, 0}, {0, 1}, {0, N / 8 - 1}, {0, N / 2}, {0, N - 1}};
    return {{0, 0}, {H / 2, N / 2 - 1}, {(3 * H) / 4, 77 % N}, {H - 1, 0}, {H - 1, N - 1}};
}

// One checked case into its row; true when it passed.
bool scale_row(json& row, const sim::Problem& p, const std::string& v, fcuda::Pass pass, int64_t key_tail) {
    const fcuda::ScaleCheck r = fcuda::scale_check(p, v, pass, sample_rows(p), key_tail);
    row["elements_per_tensor"] = r.elements_per_tensor;
    row["rows_checked"] = r.rows_checked;
    row["nonfinite"] = r.nonfinite;
    row["err_O"] = r.err_O;
    row["err_LSE"] = r.err_LSE;
    row["ref_max"] = r.ref_max;
    if (pass == fcuda::Pass::backward) {
        row["err_dQ"] = r.err_dQ;
        row["err_dK"] = r.err_dK;
        row["err_dV"] = r.err_dV;
    }
    row["gpu_seconds"] = r.gpu_seconds;
    row["reference_seconds"] = r.reference_seconds;
    // The bar at scale: a few ulps of the dtype at the output's size (the study measures the fine-grained
    // bar; here the question is wrong offsets, which give errors of the order of the values themselves).
    const double eps = p.dtype == sim::DType::bf16 ? 0x1p-7 : 0x1p-10;
    const double tol = 4 * eps * std::max(1.0, r.ref_max);
    const double worst = std::max({r.err_O, r.err_dQ, r.err_dK, r.err_dV});
    row["tolerance"] = tol;
    row["ok"] = r.nonfinite == 0 && worst <= tol;
    std::printf(
        "scale %-8s %-8s B=%lld H=%lld N=%lld%s: %lld elements/tensor, %lld rows checked, max err %.3g (tol "
        "%.3g), %lld non-finite, GPU %.1f s, reference %.1f s\n",
        v.c_str(), fcuda::pass_name(pass), (long long)p.batch, (long long)p.heads, (long long)p.seq,
        p.causal ? " causal" : "", (long long)r.elements_per_tensor, (long long)r.rows_checked, worst, tol,
        (long long)r.nonfinite, r.gpu_seconds, r.reference_seconds);
    return row["ok"].get<bool>();
}

}  // namespace

int run_scale(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const std::time_t started = std::time(nullptr);
    const std::vector<ScaleCase> cases{{1, 2048, 16384, false, 0}, {1, 1, 1048576, true, 64}};
    json rows = json::array();
    bool all_ok = true;
    for (const ScaleCase& c : cases)
        for (const std::string v : {"flash1", "flash2", "flash2h"})
            for (const fcuda::Pass pass : {fcuda::Pass::forward, fcuda::Pass::backward}) {
                if (!a.variants.empty() && std::find(a.variants.begin(), a.variants.end(), v) == a.variants.end())
                    continue;
                if (!fcuda::supports(v, pass) || !fcuda::variant_available(v)) continue;
                sim::Problem p;
                p.batch = c.B;
                p.heads = c.H;
                p.seq = c.N;
                p.head_dim = 128;
                p.dtype = *sim::parse_dtype(a.dtype);
                p.causal = c.causal;
                p.seed = a.seed;
                std::string skip;
                if (c.H > 1) p.heads = wide_heads(p, v, pass, skip);
                json row{{"variant", v},     {"pass", fcuda::pass_name(pass)},
                         {"batch", c.B},     {"heads", p.heads},
                         {"seq", c.N},       {"head_dim", 128},
                         {"dtype", a.dtype}, {"causal", c.causal}};
                row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
                if (!skip.empty()) {                  // a case this card cannot hold: named, not failed
                    row["skipped"] = skip;
                    std::printf("scale %-8s %-8s N=%lld %s\n", v.c_str(), fcuda::pass_name(pass), (long long)c.N,
                                skip.c_str());
                } else {
                    try {
                        all_ok = scale_row(row, p, v, pass, c.key_tail) && all_ok;
                    } catch (const std::exception& e) {
                        row["error"] = e.what();
                        row["ok"] = false;
                        all_ok = false;
                        std::printf("scale %-8s %-8s N=%lld error: %s\n", v.c_str(), fcuda::pass_name(pass),
                                    (long long)c.N, e.what());
                        const std::string lost = fcuda::clear_error_state();  // the next case starts clean
                        if (!lost.empty()) {
                            std::printf("scale: %s\n", lost.c_str());
                            rows.push_back(row);
                            (void)write_doc(a.json, rows, started);
                            return 1;
                        }
                    }
                }
                std::fflush(stdout);
                rows.push_back(row);
                if (!write_doc(a.json, rows, started)) return 1;
            }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

}  // namespace bench
