// The simulator's footprint (sim/footprint.hpp) against the device memory the bench's harness
// allocated for each measured kernel (results/h200/bench.json's peak_bytes, h200/fit.json), as lesson
// 12 states it. What each counts (tools/results/footprint_vs_peak.py says the same):
//   - the harness allocates an LSE for every kernel (standard needs none): a few MB over standard's
//     footprint;
//   - a backward row runs after its own forward in one workspace and keeps it, so it holds a whole
//     training step's set: compared with the footprint of pass "both";
//   - a kernel's own buffers come from the kernel model when the footprint is given the kernel
//     (sim::footprint(..., "flash2h")); flash2h keeps one fp32 dQ accumulator at both d (at d = 64
//     its two warpgroups' parts are summed in shared memory first; rows recorded before that
//     schedule held a second one), so its footprint is the algorithm's, checked here.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "sim/footprint.hpp"

namespace {
nlohmann::json results(const char* name) {
    std::ifstream f(std::string(FLASHSIM_LESSONS_DIR) + "/../results/" + name);
    if (!f) return {};
    return nlohmann::json::parse(f);
}
}  // namespace

TEST_CASE("measured peak memory against the simulator's footprint, every kernel with a recorded peak") {
    const auto doc = results("h200/bench.json");
    if (doc.is_null()) {
        MESSAGE("skipped: results/h200/bench.json absent");
        return;
    }
    int rows = 0, one_accumulator = 0;  // rows of flash2h's backward at d = 64
    for (const auto& r : doc["rows"]) {
        if (!r.contains("peak_bytes")) continue;
        ++rows;
        sim::Problem p;
        p.seq = r["seq"].get<int64_t>();
        p.head_dim = r["head_dim"].get<int64_t>();
        p.batch = r["batch"].get<int64_t>();
        p.heads = r["heads"].get<int64_t>();
        p.dtype = *sim::parse_dtype(r["dtype"].get<std::string>());
        const std::string variant = r["variant"], pass = r.value("pass", std::string("forward"));
        const sim::Algo algo = variant == "standard" ? sim::Algo::standard : sim::Algo::flash2;
        const sim::Pass sp = pass == "forward" ? sim::Pass::forward : sim::Pass::both;
        // the kernel's own buffers (from the kernel model), except in the deterministic mode, which
        // adds dQ in block order into one accumulator
        const bool det = !r.value("mode", std::string()).empty();
        // (a step pairing "FWD+BWD": the backward's kernel holds the accumulators)
        const std::string bwd_kernel =
            variant.substr(variant.find('+') == std::string::npos ? 0 : variant.find('+') + 1);
        const std::string kernel = bwd_kernel == "standard" || det || pass == "forward" ? "" : bwd_kernel;
        const double fp = sim::footprint(p, algo, sp, kernel).total_bytes;
        const double fp_algo = sim::footprint(p, algo, sp).total_bytes;
        const double peak = r["peak_bytes"].get<double>();
        // Independently: rows R = B H N, elements T = R d; the LSE buffer 4R is the most the harness
        // adds to a footprint, apart from flash2h's padded rows.
        const double R = double(p.batch * p.heads * p.seq);
        INFO(variant << " " << pass << " N=" << p.seq << " d=" << p.head_dim << " peak " << peak << " footprint "
                     << fp);
        if (bwd_kernel == "flash2h" && p.head_dim == 64 && pass != "forward" && !det) {
            ++one_accumulator;
            CHECK(fp == fp_algo);  // one (B, H, N, d) fp32 accumulator, as FA2's algorithm keeps
        }
        CHECK(peak >= fp);
        CHECK(peak - fp <= 4 * R + 8 * R / 64 + 4);  // the LSE (standard) or flash2h's padded rows
        CHECK(peak / fp <= 1.05);
    }
    CHECK(rows >= 40);
    CHECK(one_accumulator >= 1);
}

TEST_CASE("the longest N each kernel allocated equals the simulator's, and its allocation the footprint") {
    const auto doc = results("h200/fit.json");
    if (doc.is_null()) {
        MESSAGE("skipped: results/h200/fit.json absent");
        return;
    }
    int rows = 0;
    for (const auto& r : doc["rows"]) {
        ++rows;
        sim::Problem p;
        p.head_dim = r["head_dim"].get<int64_t>();
        p.batch = r["batch"].get<int64_t>();
        p.heads = r["heads"].get<int64_t>();
        p.dtype = *sim::parse_dtype(r["dtype"].get<std::string>());
        const std::string variant = r["variant"];
        const sim::Algo algo = variant == "standard" ? sim::Algo::standard : sim::Algo::flash2;
        // The simulator searched against the same free memory the GPU reported before the search.
        const sim::FitResult f = sim::longest_fit(p, algo, sim::Pass::both, r["free_bytes"].get<double>());
        INFO(variant);
        CHECK(f.longest_n == r["longest_n"].get<int64_t>());
        p.seq = f.longest_n;
        const double fp = sim::footprint(p, algo, sim::Pass::both).total_bytes;
        const double peak = r["peak_bytes_at_longest"].get<double>();
        CHECK(peak >= fp);
        CHECK(peak / fp <= 1.05);
    }
    CHECK(rows >= 3);
}
