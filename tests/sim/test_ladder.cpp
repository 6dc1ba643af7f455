// tests/sim/test_ladder.cpp — the ladder of timing models (sim/ladder.hpp): each rung's time against
// a closed form from the preset's datasheet figures, worked by hand, and the headline rule.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/ladder.hpp"
#include "tests/sim/support.hpp"

using namespace sim;
using sim::test::cdiv;

namespace {
// flash2's forward at fixed tiles, one head: Q once, K and V once a row block, O written once
// (2-byte elements), LSE written once (4 bytes a row): the paper's count, Theorem 2's shape.
double flash2_forward_bytes(int64_t n, int64_t d, int64_t br) {
    const double e = 2, nd = double(n) * double(d);
    return nd * e * (2.0 + 2.0 * double(cdiv(n, br))) + 4.0 * double(n);
}
}  // namespace

TEST_CASE("ladder: rung names are three, distinct, and in order") {
    std::set<std::string> names, keys;
    for (auto r : {Rung::bytes_bound, Rung::ideal_machine, Rung::this_kernel}) {
        names.insert(std::string(rung_name(r)));
        keys.insert(std::string(rung_key(r)));
        CHECK_FALSE(rung_charges(r).empty());
    }
    CHECK(names == std::set<std::string>{"bytes bound", "ideal machine", "this kernel"});
    CHECK(keys.size() == 3);
}

TEST_CASE("ladder rung 1: the counted HBM bytes over the datasheet bandwidth") {
    const Machine& m = find_machine("H200");
    const int64_t n = 1000, d = 64, br = 64, bc = 64, batch = 2, heads = 3;
    Config c = sim::test::counting(Algo::flash2, br, bc);
    const Ladder l = ladder(sim::test::with_heads(sim::test::shape(n, d), batch, heads), m, c);
    const double expected_ms = double(batch * heads) * flash2_forward_bytes(n, d, br) / m.hbm_bandwidth * 1e3;
    REQUIRE(l.at(Rung::bytes_bound).present);
    // exact up to double rounding: the same integer bytes over the same bandwidth
    CHECK(l.at(Rung::bytes_bound).ms == doctest::Approx(expected_ms).epsilon(1e-12));
    CHECK_FALSE(l.at(Rung::this_kernel).present);
    CHECK(l.headline().rung == Rung::ideal_machine);  // no kernel named: the highest rung computed
}

TEST_CASE("ladder rung 2: full waves of identical blocks run at the roofline of peak rates") {
    // One H200 wave a row block: B*H heads = the slots (SMs x blocks an SM), each head T_r = N / B_r
    // query blocks, so every slot runs T_r identical blocks one after another. A block is T_c
    // identical steps (copy K_j, V_j; products; softmax), so the overlapped schedule is T_c times the
    // longer of a step's copy and its arithmetic, plus what does not overlap: the first copy (with
    // Q_i) and the O_i, LSE store, each at most a step's copy. Hence the ideal machine lies between
    // the roofline max(bytes / bandwidth, products / tensor peak + softmax / fp32 peak) and that
    // roofline times (1 + 3 / T_c).
    const Machine& m = find_machine("H200");
    const int64_t n = 4096, d = 64, br = 64, bc = 64;
    const int64_t slots = int64_t{m.sm_count} * std::max(1, m.blocks_per_sm);
    Config c = sim::test::counting(Algo::flash2, br, bc);
    const Problem p = sim::test::with_heads(sim::test::shape(n, d), 1, slots);
    const Ladder l = ladder(p, m, c);
    REQUIRE(l.at(Rung::ideal_machine).present);
    const double heads = double(slots), tc = double(cdiv(n, bc));
    const double bytes_s = heads * flash2_forward_bytes(n, d, br) / m.hbm_bandwidth;
    // products: S = Q K^T and O += P V, 2 N^2 d FLOPs each, a head
    const double mm_s = heads * 4.0 * double(n) * double(n) * double(d) / m.matmul_flops;
    // the softmax's FLOPs are the simulator's count (its own closed form is tests/sim/test_counts.cpp's);
    // they can only add to the arithmetic, so the bound below uses the products alone, and the
    // upper bound the products plus at most 5 FLOPs a score (max, subtract, exp, sum, scale) at fp32
    const double soft_s = heads * 5.0 * double(n) * double(n) / m.scalar_flops;
    const double lower = std::max(bytes_s, mm_s) * 1e3, upper = std::max(bytes_s, mm_s + soft_s) * 1e3 * (1 + 3 / tc);
    CHECK(l.at(Rung::ideal_machine).ms >= lower * (1 - 1e-9));
    CHECK(l.at(Rung::ideal_machine).ms <= upper);
    // and the bytes bound sits under it: rung 1 charges a subset of rung 2's work
    CHECK(l.at(Rung::bytes_bound).ms <= l.at(Rung::ideal_machine).ms);
}

TEST_CASE("ladder rung 3: a named kernel is the headline, one prediction a pass") {
    const Machine& m = find_machine("H200");
    Config c = sim::test::counting(Algo::flash2);
    c.pass = Pass::both;
    const Problem p = sim::test::with_heads(sim::test::shape(2048, 64), 1, 8);
    const Ladder l = ladder(p, m, c, "flash2");
    REQUIRE(l.at(Rung::this_kernel).present);
    CHECK(l.headline().rung == Rung::this_kernel);
    REQUIRE(l.kernel.size() == 2);  // forward, backward: where each pass's time goes
    CHECK(l.kernel[0].profile.pass == Pass::forward);
    CHECK(l.kernel[1].profile.pass == Pass::backward);
    CHECK(l.at(Rung::this_kernel).ms == doctest::Approx(l.kernel[0].predicted_ms + l.kernel[1].predicted_ms));
    CHECK_THROWS_AS(ladder(p, m, c, "flash9"), Error);
}
