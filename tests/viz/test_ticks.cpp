// Axis ticks: a pure function that must stay finite and short for any range and any room, since a
// chart is drawn at whatever size the window gives it (a narrow window once divided by zero here).
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>

#include "viz/ticks.hpp"

using namespace viz;

namespace {
void check_ticks(double lo, double hi, int room, TickKind kind) {
    const auto t = axis_ticks(lo, hi, room, kind);
    CAPTURE(lo);
    CAPTURE(hi);
    CAPTURE(room);
    CHECK(static_cast<int>(t.size()) <= std::clamp(room, 1, kMaxTicks) + 1);
    for (size_t i = 0; i < t.size(); ++i) {
        CHECK(std::isfinite(t[i]));
        const double tol = std::max(1e-9 * std::abs(hi - lo), 1e-3 * std::abs(lo));
        CHECK(t[i] >= lo - tol);
        CHECK(t[i] <= hi + std::max(1e-9 * std::abs(hi - lo), 1e-3 * std::abs(hi)));
        if (i) CHECK(t[i] > t[i - 1]);
    }
}
}  // namespace

TEST_CASE("ticks: no room, negative room or huge room never divides by zero or runs away") {
    for (TickKind k : {TickKind::decimal, TickKind::binary, TickKind::log2})
        for (int room : {-5, 0, 1, 2, 3, 7, 1000, std::numeric_limits<int>::max(), std::numeric_limits<int>::min()}) {
            check_ticks(256, 65536, room, k);
            check_ticks(1, 1e15, room, k);
            check_ticks(1e-300, 1e300, room, k);
            check_ticks(1e300, 1.0000001e300, room, k);  // a span far below the values' magnitude
            check_ticks(5e-324, 1e-320, room, k);        // subnormal
        }
    for (TickKind k : {TickKind::decimal, TickKind::binary}) {
        check_ticks(-20, 1001, 4, k);
        check_ticks(-1e308, 1e308, 4, k);  // the span overflows to infinity
        check_ticks(-std::numeric_limits<double>::max(), std::numeric_limits<double>::max(), 10, k);
    }
}

TEST_CASE("ticks: equal ends give one tick; reversed, non-finite or non-positive log ranges give none") {
    CHECK(axis_ticks(3, 3, 5, TickKind::decimal) == std::vector<double>{3});
    CHECK(axis_ticks(0, 0, 5, TickKind::binary) == std::vector<double>{0});
    CHECK(axis_ticks(5, 3, 5, TickKind::decimal).empty());
    CHECK(axis_ticks(0, 10, 5, TickKind::log2).empty());
    CHECK(axis_ticks(-1, 10, 5, TickKind::log2).empty());
    const double inf = std::numeric_limits<double>::infinity(), nan = std::numeric_limits<double>::quiet_NaN();
    for (TickKind k : {TickKind::decimal, TickKind::binary, TickKind::log2}) {
        CHECK(axis_ticks(nan, 1, 5, k).empty());
        CHECK(axis_ticks(1, nan, 5, k).empty());
        CHECK(axis_ticks(1, inf, 5, k).empty());
        CHECK(axis_ticks(-inf, 1, 5, k).empty());
    }
}

TEST_CASE("ticks: round values from the data's own range") {
    // 999 .. 1001 with room for 4: steps of 0.5 (1, 2, 2.5 or 5 times a power of ten)
    CHECK(axis_ticks(999, 1001, 4, TickKind::decimal) == std::vector<double>{999, 999.5, 1000, 1000.5, 1001});
    CHECK(axis_ticks(-20, 5, 5, TickKind::decimal) == std::vector<double>{-20, -15, -10, -5, 0, 5});
    CHECK(axis_ticks(0, 100, 4, TickKind::decimal) == std::vector<double>{0, 25, 50, 75, 100});
    // bytes: powers of two
    CHECK(axis_ticks(0, 1000, 4, TickKind::binary) == std::vector<double>{0, 256, 512, 768});
    // log axis: every power of two when there is room, thinned when there is not
    CHECK(axis_ticks(256, 65536, 20, TickKind::log2) ==
          std::vector<double>{256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536});
    CHECK(axis_ticks(256, 65536, 3, TickKind::log2) ==
          std::vector<double>{512, 4096, 32768});  // 2^k, k a multiple of 3
    CHECK(axis_ticks(256, 65536, 0, TickKind::log2) == std::vector<double>{256, 65536});
}

TEST_CASE("ticks_that_fit: labels along a length, zero when there is no room") {
    CHECK(ticks_that_fit(550, 93.5f) == 5);
    CHECK(ticks_that_fit(0, 93.5f) == 0);
    CHECK(ticks_that_fit(-120, 93.5f) == 0);
    CHECK(ticks_that_fit(500, 0) == 0);
    CHECK(ticks_that_fit(500, -3) == 0);
    CHECK(ticks_that_fit(std::numeric_limits<float>::infinity(), 10) == 0);
    CHECK(ticks_that_fit(std::numeric_limits<float>::quiet_NaN(), 10) == 0);
    CHECK(ticks_that_fit(1e9f, 1) == kMaxTicks);
}
