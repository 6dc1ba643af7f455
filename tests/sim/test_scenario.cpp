// The named workloads (sim/scenario.cpp): the list, lookups by name, and each scenario's counted
// matmul FLOPs against closed forms derived here from its shape.
#include <doctest/doctest.h>

#include <algorithm>
#include <set>
#include <string>

#include "sim/scenario.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

namespace {
std::string scenario_refusal(const std::string& name) {
    try {
        find_scenario(name);
    } catch (const Error& e) { return e.what(); }
    return "(no error)";
}

// The matmul FLOPs of one head's forward when every query sees every key: S = Q K^T and O = P V,
// each N x N x d multiply-adds of 2 FLOPs: 4 N^2 d.
int64_t forward_matmul(const Problem& p) { return 4 * p.seq * p.seq * p.head_dim; }

// The same for a causal head under flash2's tiles: only the tiles (i, j) holding a key at or before
// the tile's last query are computed, each 4 r c d for r rows and c columns.
int64_t flash2_causal_forward_matmul(const Problem& p, int64_t br, int64_t bc) {
    int64_t sum = 0;
    for (int64_t r0 = 0; r0 < p.seq; r0 += br)
        for (int64_t c0 = 0; c0 < p.seq; c0 += bc) {
            const int64_t r = std::min(br, p.seq - r0), c = std::min(bc, p.seq - c0);
            if (c0 <= r0 + r - 1) sum += 4 * r * c * p.head_dim;
        }
    return sum;
}
}  // namespace

TEST_CASE("scenarios: the list holds distinct, valid workloads on known presets") {
    const auto& list = scenarios();
    REQUIRE(list.size() >= 5);
    std::set<std::string> names;
    for (const auto& s : list) {
        CAPTURE(s.name);
        CHECK(names.insert(s.name).second);
        CHECK_FALSE(s.description.empty());
        CHECK_NOTHROW(s.problem.validate());
        CHECK_NOTHROW(find_machine(s.gpu));
        CHECK(s.problem.dtype == DType::fp16);
        CHECK(&find_scenario(s.name) == &s);
    }
    // the published shapes of two of them
    const Scenario& g = find_scenario("gpt2-medium");
    CHECK(g.problem.heads == 16);
    CHECK(g.problem.seq == 1024);
    CHECK(g.problem.head_dim == 64);
    CHECK(g.problem.causal);
    CHECK(g.pass == Pass::both);
    const Scenario& l = find_scenario("llama2-7b-4k");
    CHECK(l.problem.heads == 32);
    CHECK(l.problem.seq == 4096);
    CHECK(l.problem.head_dim == 128);
}

TEST_CASE("scenarios: names match without regard to case; an unknown one is refused with the known names") {
    CHECK(find_scenario("GPT2-Medium").name == "gpt2-medium");
    CHECK(find_scenario("BERT-LARGE").name == "bert-large");
    const std::string msg = scenario_refusal("gpt5");
    CHECK(msg.find("unknown scenario 'gpt5'") != std::string::npos);
    for (const auto& s : scenarios()) CHECK(msg.find(s.name) != std::string::npos);
    CHECK(scenario_refusal("").find("unknown scenario ''") != std::string::npos);
}

TEST_CASE("scenarios: counted matmul FLOPs equal 4 B H N^2 d forward, and the backward's multiple of it") {
    for (const auto& s : scenarios()) {
        CAPTURE(s.name);
        const Problem& p = s.problem;
        const Machine& m = find_machine(s.gpu);
        const int64_t heads = p.batch * p.heads;
        const bool bwd = s.pass != Pass::forward;
        // standard computes every tile, masked or not: forward S = Q K^T and O = P V; backward four
        // GEMMs of the same size (dV = P^T dO, dP = dO V^T, dQ = dS K, dK = dS^T Q): 2x the forward.
        if (p.seq <= 8192) {
            Config c = counting(Algo::standard, 0, 0, s.pass);
            c.timing = false;
            const Result r = simulate(p, m, c);
            CHECK(r.forward_totals.flops.matmul == heads * forward_matmul(p));
            CHECK(r.backward_totals.flops.matmul == (bwd ? 2 * heads * forward_matmul(p) : 0));
        }
        // flash2 skips the tiles wholly above the diagonal; its backward recomputes S = Q K^T and
        // does the four GEMMs: five of the forward's two, 2.5x the forward.
        Config c = counting(Algo::flash2, 0, 0, s.pass);
        c.timing = false;
        const Result r = simulate(p, m, c);
        const int64_t fwd = p.causal ? flash2_causal_forward_matmul(p, r.block_rows, r.block_cols) : forward_matmul(p);
        CHECK(r.forward_totals.flops.matmul == heads * fwd);
        if (bwd) {
            const int64_t bwd_fwd =
                p.causal ? flash2_causal_forward_matmul(p, r.bwd_block_rows, r.bwd_block_cols) : forward_matmul(p);
            CHECK(2 * r.backward_totals.flops.matmul == 5 * heads * bwd_fwd);
        } else {
            CHECK(r.backward_totals.flops.matmul == 0);
        }
    }
    // the unmasked one, in numbers: bert-large, B = 64, H = 16, N = 512, d = 64
    const Scenario& b = find_scenario("bert-large");
    Config c = counting(Algo::flash2, 0, 0, b.pass);
    c.timing = false;
    const Result r = simulate(b.problem, find_machine(b.gpu), c);
    CHECK(r.forward_totals.flops.matmul == 4LL * 64 * 16 * 512 * 512 * 64);
    CHECK(r.totals.flops.matmul == 14LL * 64 * 16 * 512 * 512 * 64);  // 4 forward + 10 backward
}
