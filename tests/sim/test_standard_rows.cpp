// tests/sim/test_standard_rows.cpp — the kernel model of `standard` on rows its one-pass softmax
// kernels do not take (cuda/standard.cu: rows longer than a group of 512 threads holds; rows of any
// N are stored a multiple of 8 elements apart, so a ragged N takes the one-pass kernels): the path rule, the measured rate's interpolation, the time it charges, and the
// uncertainty where no ceiling measures it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/kernel_model.hpp"
#include "tests/sim/support.hpp"

using namespace sim;

TEST_CASE("standard's softmax path: one pass for the rows a group holds, ragged or not") {
    // cuda/standard.cu: 8 vectors of 8 elements a thread forward (4 backward), at most 512 threads a
    // row: 512 * 8 * 8 = 32768 columns forward, 512 * 4 * 8 = 16384 backward. A row of N columns
    // takes ceil(N / 8) vectors (its padding to 16 bytes), so 32767 still fits and 32769 does not.
    CHECK(standard_softmax_one_pass(8192, Pass::forward));
    CHECK(standard_softmax_one_pass(32768, Pass::forward));
    CHECK_FALSE(standard_softmax_one_pass(32776, Pass::forward));
    CHECK(standard_softmax_one_pass(16384, Pass::backward));
    CHECK_FALSE(standard_softmax_one_pass(16392, Pass::backward));
    CHECK(standard_softmax_one_pass(8193, Pass::forward));
    CHECK(standard_softmax_one_pass(1004, Pass::backward));  // 1004 = 8 * 125 + 4
    CHECK(standard_softmax_one_pass(32767, Pass::forward));
    CHECK_FALSE(standard_softmax_one_pass(32769, Pass::forward));  // 4097 vectors: past 512 x 8
    CHECK(standard_softmax_one_pass(16383, Pass::backward));
    CHECK_FALSE(standard_softmax_one_pass(16385, Pass::backward));
}

TEST_CASE("the two-pass rate: linear in log n between measured points, the nearest beyond") {
    const std::vector<std::pair<int64_t, double>> pts{{1000, 1e12}, {10000, 2e12}};
    CHECK(softmax_rows_rate({}, 5000) == 0);
    CHECK(softmax_rows_rate(pts, 500) == 1e12);
    CHECK(softmax_rows_rate(pts, 40000) == 2e12);
    // sqrt(1000 * 10000) sits halfway in log n: the mean of the two rates
    CHECK(softmax_rows_rate(pts, 3162) == doctest::Approx(1.5e12).epsilon(1e-4));
}

TEST_CASE("standard past the one-pass rows: uncertain without a measured two-pass rate, charged at it with one") {
    const Machine& m = find_machine("H200");
    KernelRates r = datasheet_rates(m);
    const Problem longer = sim::test::shape(32776, 64), held = sim::test::shape(32768, 64);
    const KernelProfile k = kernel_profile("standard", Pass::forward, 64);
    const KernelPrediction u = predict_kernel(longer, k, r, m);
    CHECK(u.uncertain);
    CHECK(u.uncertain_why.find("past the one-pass kernels' rows") != std::string::npos);
    CHECK_FALSE(predict_kernel(held, k, r, m).uncertain);                        // 32768: the one-pass kernels
    CHECK_FALSE(predict_kernel(sim::test::shape(1001, 64), k, r, m).uncertain);  // ragged: one pass too

    // A slow measured rate, 1 GB/s, makes the softmax the whole time: it reads S once and writes P
    // (N^2 bf16 elements each, one head): 2 * 32776^2 * 2 B over 1e9 B/s = 4297 ms. The two GEMMs move
    // about 2 N^2 + 4 N d elements at the datasheet's 4.8 TB/s, under 2 ms, and launches cost nothing
    // at datasheet rates: 0.1% covers them.
    r.softmax_rows_fwd = {{32776, 1e9}};
    const KernelPrediction s = predict_kernel(longer, k, r, m);
    const double expect_ms = 2.0 * 32776.0 * 32776.0 * 2.0 / 1e9 * 1e3;
    CHECK(s.predicted_ms >= expect_ms);
    CHECK(s.predicted_ms == doctest::Approx(expect_ms).epsilon(1e-3));
    CHECK_FALSE(s.uncertain);  // the rate is measured, and the GEMMs' rows are 16-byte aligned
}
