// The placeholder language: parsing, arithmetic, filters, error positions. Expected values are
// worked out by hand next to each check.
#include <doctest/doctest.h>

#include <cmath>

#include "lessons/lib/expr.hpp"

using namespace lessons::detail;

namespace {
Value lookup(const std::string& p) {
    if (p == "a.b") return {true, 6, {}};
    if (p == "a.c") return {true, 4, {}};
    if (p == "zero") return {true, 0, {}};
    if (p == "name") return {false, 0, "flash2"};
    if (p == "gone") throw Missing("not recorded");
    throw ExprError("unknown '" + p + "'", 0);
}
double ev(const std::string& e) { return eval_expr(e, lookup).num; }
size_t err_pos(const std::string& e) {
    try {
        eval_expr(e, lookup);
    } catch (const ExprError& x) { return x.pos; }
    return std::string::npos;
}
std::string f(double v, const std::string& filter) { return apply_filter(Value{true, v, {}}, filter); }
}  // namespace

TEST_CASE("arithmetic: precedence, parentheses, unary minus, functions") {
    CHECK(ev("2 + 3 * 4") == 14);  // * before +
    CHECK(ev("(2 + 3) * 4") == 20);
    CHECK(ev("a.b / a.c") == 1.5);  // 6 / 4
    CHECK(ev("-a.b + 1") == -5);
    CHECK(ev("a.b - a.c - 1") == 1);  // left to right: (6 - 4) - 1
    CHECK(ev("16 / 4 / 2") == 2);     // (16 / 4) / 2
    CHECK(ev("1e3 * 2") == 2000);
    CHECK(ev("max(a.b, a.c, 10)") == 10);
    CHECK(ev("min(a.b, a.c)") == 4);
    CHECK(ev("sqrt(16) + log2(8) + abs(-1) + ceil(1.2) + floor(1.8)") == 4 + 3 + 1 + 2 + 1);
    CHECK(eval_expr("name", lookup).str == "flash2");
}

TEST_CASE("arithmetic errors carry the offset of the problem") {
    CHECK(err_pos("a.b / zero") == 4);  // the '/'
    CHECK(err_pos("1 + ") == 4);        // end: a value was expected
    CHECK(err_pos("a.b + nope") == 6);  // the unknown name
    CHECK(err_pos("name + 1") == 0);    // text in arithmetic
    CHECK(err_pos("(1 + 2") == 6);      // missing ')'
    CHECK(err_pos("2 3") == 2);         // two values without an operator
    CHECK(err_pos("foo(1)") == 0);      // unknown function
    CHECK(err_pos("a.") == 2);          // '.' without a name
    CHECK(err_pos("3abc") == 0);
    CHECK(err_pos("") == 0);
    CHECK(err_pos(std::string(200, '(') + "1" + std::string(200, ')')) != std::string::npos);  // too deep, no crash
    CHECK_THROWS_AS(eval_expr("gone * 2", lookup), Missing);
}

TEST_CASE("filters") {
    CHECK(f(134217728, "MiB") == "128 MiB");  // 2^27 / 2^20
    CHECK(f(4.53125 * 1048576, "MiB") == "4.53 MiB");
    CHECK(f(4.53125 * 1048576, "MiB:1") == "4.5 MiB");
    CHECK(f(32768, "KiB") == "32 KiB");
    CHECK(f(1536, "bytes") == "1.50 KiB");
    CHECK(f(3 * 1073741824.0, "GiB") == "3 GiB");
    CHECK(f(141e9, "GB:0") == "141 GB");
    CHECK(f(4.8e12, "TBps:1") == "4.8 TB/s");
    CHECK(f(67108864, "int") == "67,108,864");
    CHECK(f(-1234.5, "int") == "-1,235");  // rounds half away from zero
    CHECK(f(1234.5678, "fixed:2") == "1,234.57");
    CHECK(f(-0.0001, "fixed:2") == "0.00");  // never "-0.00"
    CHECK(f(0.6621, "percent:0") == "66%");
    CHECK(f(0.49219, "percent:1") == "49.2%");
    CHECK(f(16, "times:0") == "16x");
    CHECK(f(2.5234, "ratio") == "2.52x");
    CHECK(f(2.384185791015625e-07, "sci:2") == "2.38e-07");
    CHECK(f(1.6867e-4, "us:1") == "168.7 us");
    CHECK(f(0.00103, "ms:3") == "1.030 ms");
    CHECK(f(34359738368.0, "flops") == "34.36 GFLOP");
    CHECK(f(12345.678, "sig:3") == "1.23e+04");
    CHECK(f(8192, "") == "8,192");  // integers: grouped
    CHECK(f(0.125, "") == "0.125");
    CHECK(apply_filter(Value{false, 0, "text"}, "") == "text");
}

TEST_CASE("filter errors") {
    CHECK_THROWS_WITH_AS(f(1, "MB2"), doctest::Contains("unknown filter 'MB2'"), ExprError);
    CHECK_THROWS_WITH_AS(f(1, "fixed:x"), doctest::Contains("must be a number"), ExprError);
    CHECK_THROWS_WITH_AS(f(1, "fixed:99"), doctest::Contains("at most 15"), ExprError);
    CHECK_THROWS_WITH_AS(f(1, "bytes:2"), doctest::Contains("takes no"), ExprError);
    CHECK_THROWS_WITH_AS(apply_filter(Value{false, 0, "x"}, "MiB"), doctest::Contains("needs a number"), ExprError);
    CHECK_THROWS_AS(f(NAN, "fixed:2"), ExprError);
    CHECK_THROWS_AS(f(INFINITY, "int"), ExprError);
}

TEST_CASE("finding placeholders") {
    const auto p = find_placeholders("a {{ x.y | MiB }} b {{z}}");
    REQUIRE(p.size() == 2);
    CHECK(p[0].begin == 2);
    CHECK(p[0].end == 17);
    CHECK(p[0].expr == "x.y");
    CHECK(p[0].expr_pos == 5);
    CHECK(p[0].filter == "MiB");
    CHECK(p[0].filter_pos == 11);
    CHECK(p[1].expr == "z");
    CHECK(p[1].filter.empty());
    CHECK(find_placeholders("no placeholders").empty());
    auto pos_of = [](const std::string& t) {
        try {
            find_placeholders(t);
        } catch (const ExprError& e) { return e.pos; }
        return std::string::npos;
    };
    CHECK(pos_of("a {{ b") == 2);           // never closed
    CHECK(pos_of("a }} b") == 2);           // stray close
    CHECK(pos_of("{{ a {{ b }}") == 5);     // nested
    CHECK(pos_of("{{  }}") == 0);           // empty
    CHECK(pos_of("{{ a | }}") == 5);        // empty filter: at the '|'
    CHECK(pos_of("{{ a | b | c }}") == 9);  // a second filter
}

TEST_CASE("filter side: a ratio to the ridge point, in words") {
    CHECK(f(62.5 / 206.125, "side") == "left (memory-bound)");  // standard attention's forward
    CHECK(f(0.999, "side") == "left (memory-bound)");
    CHECK(f(1.0, "side") == "right (compute-bound)");  // on the ridge: the flat roof already
    CHECK(f(3643.0 / 206.125, "side") == "right (compute-bound)");
    CHECK_THROWS_AS(f(1, "side:2"), ExprError);
    CHECK_THROWS_AS(apply_filter(Value{false, 0, "x"}, "side"), ExprError);
}
