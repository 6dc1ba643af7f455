// The seeds' worked example: scores 1.4, 3.9, 0.7, 2.2 | 4.6, 1.1, 3.1, 0.3 in blocks of four.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/softmax.hpp"

using namespace sim;

TEST_CASE("the seed's worked example: running max 3.9 then 4.6, running sum 1.3055 then 1.9152") {
    const std::vector<double> s = {1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3};
    for (Precision prec : {Precision::fp32, Precision::fp64}) {
        const StreamedSoftmax r = stream_softmax(s, 4, {}, prec);
        REQUIRE(r.record.blocks.size() == 2);
        const auto& b1 = r.record.blocks[0];
        const auto& b2 = r.record.blocks[1];
        CHECK(b1.running_max_after == doctest::Approx(3.9));
        CHECK(b2.running_max_after == doctest::Approx(4.6));
        // Independent: e^(1.4-3.9) + e^0 + e^(0.7-3.9) + e^(2.2-3.9) = 1.30553...
        const double l1 = std::exp(-2.5) + 1 + std::exp(-3.2) + std::exp(-1.7);
        CHECK(b1.running_sum_after == doctest::Approx(l1).epsilon(1e-6));
        CHECK(std::round(b1.running_sum_after * 1e4) / 1e4 == doctest::Approx(1.3055));
        const double l2 =
            l1 * std::exp(3.9 - 4.6) + 1 + std::exp(1.1 - 4.6) + std::exp(3.1 - 4.6) + std::exp(0.3 - 4.6);
        CHECK(b2.running_sum_after == doctest::Approx(l2).epsilon(1e-6));
        CHECK(std::round(b2.running_sum_after * 1e4) / 1e4 == doctest::Approx(1.9152));
        CHECK(b2.rescale == doctest::Approx(std::exp(-0.7)));
        // Streamed equals plain up to rounding in the working precision.
        CHECK(r.max_abs_diff < (prec == Precision::fp32 ? 1e-6 : 1e-15));
        CHECK(r.max_ulp <= 4);
        double sum = 0;
        for (double x : r.streamed) sum += x;
        CHECK(sum == doctest::Approx(1.0).epsilon(1e-6));
    }
}

TEST_CASE("with values, the streamed output vector equals the plain one") {
    const std::vector<double> s = {1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3};
    std::vector<std::vector<double>> v;
    for (int j = 0; j < 8; ++j) v.push_back({0.5 * j, 1.0 - 0.25 * j, (j % 2) ? 1.0 : -1.0});
    const StreamedSoftmax r = stream_softmax(s, 3, v, Precision::fp64);
    CHECK(r.record.blocks.size() == 3);
    REQUIRE(r.plain.size() == 3);
    // Independent plain computation.
    double m = 4.6, l = 0;
    for (double x : s) l += std::exp(x - m);
    for (size_t k = 0; k < 3; ++k) {
        double o = 0;
        for (int j = 0; j < 8; ++j) o += std::exp(s[j] - m) / l * v[j][k];
        CHECK(r.streamed[k] == doctest::Approx(o).epsilon(1e-12));
    }
}

TEST_CASE("softmax refuses bad input") {
    CHECK_THROWS_WITH_AS(stream_softmax({}, 4, {}, Precision::fp32), doctest::Contains("at least one score"), Error);
    CHECK_THROWS_WITH_AS(stream_softmax({1, 2}, 0, {}, Precision::fp32), doctest::Contains("--block"), Error);
    CHECK_THROWS_WITH_AS(stream_softmax({1, NAN}, 1, {}, Precision::fp32), doctest::Contains("not a finite"), Error);
    CHECK_THROWS_WITH_AS(stream_softmax({1, 2}, 1, {{1.0}}, Precision::fp32),
                         doctest::Contains("one row of V per score"), Error);
}
