// tests/sim/test_standard_rows.cpp — the kernel model of `standard` on rows its one-pass softmax
// kernels do not take (cuda/standard.cu: N not a multiple of 8, or longer than a group of 512
// threads holds): the path rule, the measured rate's interpolation, the time it charges, and the
// uncertainty where no ceiling measures it.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/kernel_model.hpp"
#include "tests/sim/support.hpp"

using namespace sim;

TEST_CASE("standard's softmax path: one pass for rows of a multiple of 8 columns a group holds") {
    // cuda/standard.cu: 8 vectors of 8 elements a thread forward (4 backward), at most 512 threads a
    // row: 512 * 8 * 8 = 32768 columns forward, 512 * 4 * 8 = 16384 backward
    CHECK(standard_softmax_one_pass(8192, Pass::forward));
    CHECK(standard_softmax_one_pass(32768, Pass::forward));
    CHECK_FALSE(standard_softmax_one_pass(32776, Pass::forward));
    CHECK(standard_softmax_one_pass(16384, Pass::backward));
    CHECK_FALSE(standard_softmax_one_pass(16392, Pass::backward));
    CHECK_FALSE(standard_softmax_one_pass(8193, Pass::forward));
    CHECK_FALSE(standard_softmax_one_pass(1004, Pass::backward));  // 1004 = 8 * 125 + 4
}

TEST_CASE("the two-pass rate: linear in log n between measured points, the nearest beyond") {
    const std::vector<std::pair<int64_t, double>> pts{{1000, 1e12}, {10000, 2e12}};
    CHECK(softmax_rows_rate({}, 5000) == 0);
    CHECK(softmax_rows_rate(pts, 500) == 1e12);
    CHECK(softmax_rows_rate(pts, 40000) == 2e12);
    // sqrt(1000 * 10000) sits halfway in log n: the mean of the two rates
    CHECK(softmax_rows_rate(pts, 3162) == doctest::Approx(1.5e12).epsilon(1e-4));
}

TEST_CASE("standard at a ragged N: uncertain without a measured two-pass rate, charged at it with one") {
    const Machine& m = find_machine("H200");
    KernelRates r = datasheet_rates(m);
    const Problem ragged = sim::test::shape(1001, 64), even = sim::test::shape(1000, 64);
    const KernelProfile k = kernel_profile("standard", Pass::forward, 64);
    const KernelPrediction u = predict_kernel(ragged, k, r, m);
    CHECK(u.uncertain);
    CHECK(u.uncertain_why.find("not a multiple of 8") != std::string::npos);
    CHECK_FALSE(predict_kernel(even, k, r, m).uncertain);  // 1000 = 8 * 125: the one-pass kernels

    // A slow measured rate, 1 GB/s, makes the softmax the whole time: it reads S once and writes P
    // (N^2 bf16 elements each, one head): 2 * 1001^2 * 2 B over 1e9 B/s = 4.008 ms. The two GEMMs move
    // about 2 N^2 + 4 N d elements at the datasheet's 4.8 TB/s, under a microsecond, and launches
    // cost nothing at datasheet rates: 0.1% covers them.
    r.softmax_rows_fwd = {{1001, 1e9}};
    const KernelPrediction s = predict_kernel(ragged, k, r, m);
    const double expect_ms = 2.0 * 1001.0 * 1001.0 * 2.0 / 1e9 * 1e3;
    CHECK(s.predicted_ms >= expect_ms);
    CHECK(s.predicted_ms == doctest::Approx(expect_ms).epsilon(1e-3));
    CHECK(s.uncertain);  // the GEMMs off 16-byte alignment are still not measured
    CHECK(s.uncertain_why.find("alignment") != std::string::npos);
}
