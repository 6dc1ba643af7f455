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

TEST_CASE("standard's rows by alignment: the largest of 8, 4, 2, 1 elements dividing N") {
    CHECK(standard_row_alignment(1000) == 8);  // 8 * 125: 16-byte rows
    CHECK(standard_row_alignment(1004) == 4);  // 4 * 251
    CHECK(standard_row_alignment(1002) == 2);  // 2 * 501
    CHECK(standard_row_alignment(1001) == 1);  // 7 * 11 * 13
    CHECK(standard_row_alignment(16) == 8);    // 16 is still 8's class (16-byte rows are the aligned kernels')
}

TEST_CASE("the ragged GEMM rate: its own call, d and alignment class; linear in log N, the nearest beyond") {
    using G = StandardGemm;
    // 9009 = 9 * 1001 and 3003 = 3 * 1001, all odd: 3003 lies halfway between the two in log N
    const std::vector<StandardGemmPoint> pts{
        {G::qk, 64, 1001, 1e14},  {G::qk, 64, 9009, 3e14},  // the points read at odd N
        {G::qk, 64, 2002, 9e14},                            // rows 4-byte aligned: another class
        {G::qk, 128, 3003, 7e14}, {G::pv, 64, 3003, 8e14},  // another d, another call
        {G::qk, 64, 3000, 6e14}};                           // the aligned neighbour
    CHECK(standard_gemm_rate(pts, G::qk, 64, 3003) == doctest::Approx(2e14).epsilon(1e-12));
    // Beyond the points: the nearest one's rate (clamped). The probe's points span N = 1001-16004 in
    // every class, which covers the off-grid rule's N = 1000-20000 but for its last fifth, where a
    // throughput-bound call's rate changes little; a row past the points is charged, not refused.
    CHECK(standard_gemm_rate(pts, G::qk, 64, 501) == 1e14);
    CHECK(standard_gemm_rate(pts, G::qk, 64, 20001) == 3e14);
    CHECK(standard_gemm_rate(pts, G::qk, 64, 3002) == 9e14);  // class 2: its one point
    CHECK(standard_gemm_rate(pts, G::qk, 64, 3004) == 0);     // class 4: none
    CHECK(standard_gemm_rate(pts, G::ptv, 64, 3003) == 0);    // a call not measured
    CHECK(standard_gemm_rate(pts, G::qk, 96, 3003) == 0);     // a d not measured
    CHECK(standard_gemm_rate({}, G::qk, 64, 3003) == 0);
}

TEST_CASE("standard at a ragged N with measured GEMM points: each GEMM at its call's rate, certain") {
    using G = StandardGemm;
    const Machine& m = find_machine("H200");
    KernelRates r = datasheet_rates(m);  // launches cost 0 here
    const Problem p = sim::test::shape(1001, 64);
    // Rates far below the datasheet's, so that the points alone make the time. One head, N = 1001,
    // d = 64, 2-byte elements, by hand:
    //   forward:  S = Q K^T   2 N^2 d = 128,256,128 FLOPs at 1e12 FLOP/s   = 128.256128 us
    //             softmax     S read, P written: 2 N^2 2 = 4,008,004 B at 1e11 B/s = 40.08004 us
    //             O = P V     128,256,128 FLOPs at 5e11                     = 256.512256 us
    //   backward: dV, dK      2 x 128,256,128 at 2.5e11                     = 1026.049024 us
    //             dP          at 1e12                                       = 128.256128 us
    //             softmax     P, dP read, dS written: 3 N^2 2 = 6,012,006 B at 1e11 = 60.12006 us
    //             dQ          at 5e11                                       = 256.512256 us
    r.softmax_rows_fwd = {{1001, 1e11}};
    r.softmax_rows_bwd = {{1001, 1e11}};
    r.standard_gemm = {{G::qk, 64, 1001, 1e12}, {G::pv, 64, 1001, 5e11}, {G::ptv, 64, 1001, 2.5e11}};
    const KernelPrediction f = predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, m);
    CHECK_FALSE(f.uncertain);
    // the sums are exact up to rounding: a relative 1e-9
    CHECK(f.predicted_ms == doctest::Approx((128.256128 + 40.08004 + 256.512256) * 1e-3).epsilon(1e-9));
    const KernelPrediction b = predict_kernel(p, kernel_profile("standard", Pass::backward, 64), r, m);
    CHECK_FALSE(b.uncertain);
    CHECK(b.predicted_ms == doctest::Approx((1026.049024 + 128.256128 + 60.12006 + 256.512256) * 1e-3).epsilon(1e-9));

    // A call the pass makes without a point (the backward's ptv): uncertain for the GEMMs, as before
    r.standard_gemm.pop_back();
    CHECK_FALSE(predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, m).uncertain);
    const KernelPrediction u = predict_kernel(p, kernel_profile("standard", Pass::backward, 64), r, m);
    CHECK(u.uncertain);
    CHECK(u.uncertain_why.find("alignment") != std::string::npos);
}

TEST_CASE("the GEMM points leave aligned rows as they were, and rates without them leave ragged rows uncertain") {
    using G = StandardGemm;
    const Machine& m = find_machine("H200");
    const KernelRates plain = datasheet_rates(m);
    KernelRates with = plain;
    for (const int64_t n : {1000, 1001, 1002, 1004})
        for (const G g : {G::qk, G::pv, G::ptv}) with.standard_gemm.push_back({g, 64, n, 1e11});
    for (const Pass pass : {Pass::forward, Pass::backward}) {
        const KernelProfile k = kernel_profile("standard", pass, 64);
        const Problem even = sim::test::shape(1000, 64);  // the aligned neighbour's point is not charged
        CHECK(predict_kernel(even, k, with, m).predicted_ms == predict_kernel(even, k, plain, m).predicted_ms);
        // without points (an older ceilings file, the datasheet): uncertain for the GEMMs, as before
        const KernelPrediction u = predict_kernel(sim::test::shape(1001, 64), k, plain, m);
        CHECK(u.uncertain);
        CHECK(u.uncertain_why.find("puts cuBLAS's S and P (leading dimension N) off 16-byte alignment; no ceiling "
                                   "measures its GEMMs there") != std::string::npos);
        // with them, the GEMMs are no longer the reason (the softmax still is: no two-pass rate here)
        const KernelPrediction w = predict_kernel(sim::test::shape(1001, 64), k, with, m);
        CHECK(w.uncertain_why.find("alignment") == std::string::npos);
        CHECK(w.uncertain_why.find("two-pass") != std::string::npos);
    }
}
