// tests/viz/test_live_run_gpu.cpp — the app's live run (viz::measure_live, what the measured tab's
// "Measure on this GPU" button starts) on the GPU, without GL. Exits 77 (skipped) without a device.
// Checks, from outside the live run: one row per kernel this GPU runs (fcuda::variants filtered by
// variant_available), each timed and error-free, its TFLOP/s equal to 4·B·H·N²·d / time counted
// here, its DRAM bytes between the compulsory traffic (Q, K, V read, O written once) and the
// simulator's count without L2, and the file named with this GPU; then the live rows read back
// next to the recorded results file the app opens by default, as the measured tab shows them.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <string>

#include "cuda/api.hpp"
#include "sim/problem.hpp"
#include "viz/live_run.hpp"
#include "viz/measurement.hpp"

TEST_CASE("live run: every kernel this GPU runs, timed, with the simulator's bytes beside") {
    sim::Problem p;
    p.batch = 2;
    p.heads = 8;
    p.seq = 1024;
    p.head_dim = 64;
    p.dtype = sim::DType::bf16;
    std::atomic<int> done{0}, total{0};
    const viz::MeasuredFile f = viz::measure_live(p, "H200", &done, &total);
    REQUIRE(f.error.empty());
    CHECK(f.device == fcuda::device_name());
    CHECK(f.date.size() == 20);  // 2026-12-01T20:00:00Z
    int runnable = 0;
    for (const std::string& v : fcuda::variants()) runnable += fcuda::variant_available(v) ? 1 : 0;
    CHECK(total.load() == runnable);
    CHECK(done.load() == runnable);
    REQUIRE(static_cast<int>(f.rows.size()) == runnable);
    const double flops = 4.0 * 2 * 8 * 1024.0 * 1024.0 * 64;
    const double compulsory = 4.0 * 2 * 8 * 1024 * 64 * 2;  // Q, K, V, O in bf16
    for (const viz::MeasuredRow& r : f.rows) {
        CAPTURE(r.variant);
        CHECK(r.error.empty());
        REQUIRE(r.ms.has_value());
        CHECK(*r.ms > 0);
        REQUIRE(r.tflops.has_value());
        CHECK(std::abs(*r.tflops * 1e12 - flops / (*r.ms * 1e-3)) <= 1e-6 * flops / (*r.ms * 1e-3));
        REQUIRE(r.sim_total().has_value());
        CHECK(*r.sim_total() >= compulsory);
        if (r.variant == "standard")
            CHECK(!r.block_rows.has_value());  // cuBLAS's own tiles: none to show
        else
            CHECK(r.block_rows.value_or(0) > 0);
        if (r.dram_total()) {  // CUPTI present: the counters' bytes
            CHECK(*r.dram_total() >= 0.9 * compulsory);
            CHECK(*r.dram_total() <= 1.5 * *r.sim_total());
        }
        if (r.sim_l2_total()) CHECK(*r.sim_l2_total() <= *r.sim_total() * 1.0001);
    }
    // beside the recorded rows: the app's default results folder still loads, and the live file
    // keeps its own device and date
    // (FLASHSIM_SOURCE_DIR in the environment: the checkout when the binary travels to another machine)
    const char* src = std::getenv("FLASHSIM_SOURCE_DIR");
    const viz::MeasuredSet recorded =
        viz::load_measurements(std::string(src && *src ? src : FLASHSIM_SOURCE_DIR) + "/results");
    CHECK(!recorded.files.empty());
    viz::MeasuredSet both = recorded;
    both.files.push_back(f);
    const auto at = viz::rows_at(both, "forward", p.seq, p.head_dim, p.causal, p.batch, p.heads);
    CHECK(static_cast<int>(at.size()) >= runnable);
}

int main(int argc, char** argv) {
    std::string why;
    if (!fcuda::device_available(&why)) {
        std::printf("SKIP: no CUDA device (%s)\n", why.c_str());
        return 77;
    }
    doctest::Context ctx(argc, argv);
    return ctx.run();
}
