// tests/cuda/test_knobs.cpp — the kernels' knobs (flash2h's forward grid, flash2's backward blocks and
// others), read on the host: the tile config names what each picks, the step's workspace counts the
// counter, and bad values are refused with the fix. No GPU needed (tile_config and step_workspace_bytes only read the environment), so CI runs these.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <set>
#include <stdexcept>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "cuda/units.hpp"
#include "sim/tail_plan.hpp"
#include "sim/program.hpp"

namespace {

sim::Problem shape(bool causal) {
    sim::Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seq = 200;
    p.head_dim = 128;
    p.dtype = sim::DType::bf16;
    p.causal = causal;
    return p;
}

std::string layout(const sim::Problem& p) { return fcuda::tile_config("flash2h", p).layout; }

void clear() {
    for (const char* v :
         {"FLASHSIM_FLASH2H_GRID", "FLASHSIM_FLASH2H", "FLASHSIM_FLASH2H_ORDER", "FLASHSIM_FLASH2H_STAGES",
          "FLASHSIM_FLASH2H_EXP", "FLASHSIM_FLASH2H_PINGPONG", "FLASHSIM_FLASH2H_WG"})
        unsetenv(v);
}

bool has(const std::string& s, const std::string& part) { return s.find(part) != std::string::npos; }

// tile_config refuses flash2h's configuration for p and pass with a message that holds `part`
// (the same check as the grid's and turns' refusals below make through layout())
void check_refused(const sim::Problem& p, fcuda::Pass pass, const char* part) {
    CHECK_THROWS_WITH_AS(fcuda::tile_config("flash2h", p, pass), doctest::Contains(part), std::runtime_error);
}

}  // namespace

TEST_CASE("flash2h forward: FLASHSIM_FLASH2H_GRID picks the grid the tile config names") {
    clear();
    const sim::Problem causal = shape(true), full = shape(false);
    // default at d = 128: the static order, but causal with more than 95 query blocks (N > 12,160)
    CHECK(has(layout(causal), ", in turn)"));
    CHECK(has(layout(full), ", in turn)"));
    sim::Problem long_causal = causal, long_full = full;
    long_causal.seq = long_full.seq = 95 * 128;
    CHECK(has(layout(long_causal), ", in turn)"));
    long_causal.seq = long_full.seq = 95 * 128 + 1;
    CHECK_FALSE(has(layout(long_causal), "persistent"));
    CHECK(has(layout(long_full), ", in turn)"));
    // d = 64 (B_r = 192): the static order unmasked at every N; causal up to 22 query blocks (N = 4,224)
    // the units from the counter (the workspace holds it), one block a tile above
    sim::Problem d64 = full, d64c = causal;
    d64.head_dim = d64c.head_dim = 64;
    CHECK(has(layout(d64), ", in turn)"));
    CHECK(has(layout(d64c), "the next from a counter)"));
    auto counter_bytes = [](const sim::Problem& q) {  // the step's workspace beyond the static order's
        const int64_t by_default = fcuda::step_workspace_bytes("flash2h", q);
        setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
        const int64_t in_turn = fcuda::step_workspace_bytes("flash2h", q);
        unsetenv("FLASHSIM_FLASH2H_GRID");
        return by_default - in_turn;
    };
    CHECK(counter_bytes(d64c) == 4);
    CHECK(counter_bytes(d64) == 0);
    d64.seq = 16384;
    CHECK(has(layout(d64), ", in turn)"));
    d64c.seq = 22 * 192;
    CHECK(has(layout(d64c), "the next from a counter)"));
    d64c.seq = 22 * 192 + 1;
    CHECK_FALSE(has(layout(d64c), "persistent"));
    // d = 64 with two consumer warpgroups (not measured in the static order): one block a tile
    setenv("FLASHSIM_FLASH2H_WG", "2", 1);
    CHECK_FALSE(has(layout(d64), "persistent"));
    unsetenv("FLASHSIM_FLASH2H_WG");
    // with another schedule or the heavy-first order: one block a tile
    setenv("FLASHSIM_FLASH2H", "plain", 1);
    CHECK_FALSE(has(layout(full), "persistent"));
    unsetenv("FLASHSIM_FLASH2H");
    setenv("FLASHSIM_FLASH2H_ORDER", "heavy", 1);
    CHECK_FALSE(has(layout(causal), "persistent"));
    CHECK(has(layout(full), ", in turn)"));  // the order reorders causal grids only
    unsetenv("FLASHSIM_FLASH2H_ORDER");
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    CHECK(has(layout(causal),
              "units of a head's p-th heaviest and p-th lightest query blocks, or two heads' middle blocks, in turn)"));
    CHECK(has(layout(full), "units of one query block, in turn)"));
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    CHECK(has(layout(full), "the next from a counter)"));
    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
    CHECK_FALSE(has(layout(full), "persistent"));
    setenv("FLASHSIM_FLASH2H_GRID", "default", 1);
    CHECK(has(layout(full), ", in turn)"));
    CHECK_FALSE(has(layout(long_causal), "persistent"));
    clear();
}

TEST_CASE("flash2h step: the workspace counts the forward's unit counter only with the counter grid") {
    clear();
    const sim::Problem p = shape(true);
    const int64_t tiles = fcuda::step_workspace_bytes("flash2h", p);
    CHECK(tiles > 0);  // the backward's dQ accumulator at least
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    CHECK(fcuda::step_workspace_bytes("flash2h", p) == tiles);
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    CHECK(fcuda::step_workspace_bytes("flash2h", p) == tiles + 4);
    // one head of N = 200 at d = 128 (128 query rows a block): its two blocks are one unit, which
    // the static order runs, with no counter
    sim::Problem one = p;
    one.heads = 1;
    clear();
    const int64_t one_tiles = fcuda::step_workspace_bytes("flash2h", one);
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    CHECK(fcuda::step_workspace_bytes("flash2h", one) == one_tiles);
    clear();
}

TEST_CASE("flash2h forward: a bad grid, or a persistent one with another schedule, is refused with the fix") {
    clear();
    const sim::Problem p = shape(true);
    setenv("FLASHSIM_FLASH2H_GRID", "sometimes", 1);
    CHECK_THROWS_WITH_AS(
        layout(p), doctest::Contains("FLASHSIM_FLASH2H_GRID must be static, persistent or tiles (got 'sometimes')"),
        std::runtime_error);
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    setenv("FLASHSIM_FLASH2H", "plain", 1);  // d = 128's default schedule is overlapped
    CHECK_THROWS_WITH_AS(layout(p), doctest::Contains("or set FLASHSIM_FLASH2H_GRID=tiles"), std::runtime_error);
    unsetenv("FLASHSIM_FLASH2H");
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    setenv("FLASHSIM_FLASH2H_ORDER", "heavy", 1);
    CHECK_THROWS_WITH_AS(layout(p), doctest::Contains("FLASHSIM_FLASH2H_GRID=static needs flash2h's default schedule"),
                         std::runtime_error);
    // the heads order alone, with the grid left to its default, is the tiles grid
    unsetenv("FLASHSIM_FLASH2H_GRID");
    CHECK_FALSE(has(layout(p), "persistent"));
    clear();
}

TEST_CASE("flash2h forward: FLASHSIM_FLASH2H_PINGPONG is named by the tile config, and refused where it does not run") {
    clear();
    const sim::Problem p = shape(false);
    sim::Problem p64 = p;
    p64.head_dim = 64;
    // by default: turns at d = 128 (tiles grid and static order), none at d = 64 or with the counter
    CHECK(has(layout(p), "warpgroups take turns to issue their products (ping-pong)"));
    CHECK_FALSE(has(layout(p64), "ping-pong"));
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    CHECK(has(layout(p), "ping-pong"));
    CHECK_FALSE(has(layout(p64), "ping-pong"));
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    CHECK_FALSE(has(layout(p), "ping-pong"));
    unsetenv("FLASHSIM_FLASH2H_GRID");
    setenv("FLASHSIM_FLASH2H", "plain", 1);  // not d = 128's default schedule: no turns by default
    CHECK_FALSE(has(layout(p), "ping-pong"));
    unsetenv("FLASHSIM_FLASH2H");
    setenv("FLASHSIM_FLASH2H_PINGPONG", "on", 1);
    // at d = 64 the default grid is the static order (causal: the counter grid), where turns do not
    // run: refused with the fix
    CHECK_THROWS_WITH_AS(
        layout(p64), doctest::Contains("set FLASHSIM_FLASH2H_GRID=tiles (the default grid here is the static order)"),
        std::runtime_error);
    sim::Problem p64c = p64;
    p64c.causal = true;
    CHECK_THROWS_WITH_AS(
        layout(p64c), doctest::Contains("set FLASHSIM_FLASH2H_GRID=tiles (the default grid here is the counter grid)"),
        std::runtime_error);
    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
    CHECK(has(layout(p64), "ping-pong"));
    unsetenv("FLASHSIM_FLASH2H_GRID");
    setenv("FLASHSIM_FLASH2H_PINGPONG", "off", 1);
    CHECK_FALSE(has(layout(p), "ping-pong"));
    setenv("FLASHSIM_FLASH2H_PINGPONG", "yes", 1);
    CHECK_THROWS_WITH_AS(layout(p), doctest::Contains("FLASHSIM_FLASH2H_PINGPONG must be on or off (got 'yes')"),
                         std::runtime_error);
    setenv("FLASHSIM_FLASH2H_PINGPONG", "on", 1);
    setenv("FLASHSIM_FLASH2H", "plain", 1);
    CHECK_THROWS_WITH_AS(layout(p),
                         doctest::Contains("unset FLASHSIM_FLASH2H, FLASHSIM_FLASH2H_STAGES and FLASHSIM_FLASH2H_EXP"),
                         std::runtime_error);
    unsetenv("FLASHSIM_FLASH2H");
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    CHECK_THROWS_WITH_AS(
        layout(p), doctest::Contains("or at d = 128 the static order; unset FLASHSIM_FLASH2H_GRID (got 'persistent')"),
        std::runtime_error);
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    CHECK(has(layout(p), "ping-pong"));
    CHECK_THROWS_WITH_AS(layout(p64), doctest::Contains("(got 'static')"), std::runtime_error);
    clear();
}

// flash2h's backward at d = 64: 128 query rows a step by default (bulk-sum, 2 ring stages of 128
// rows), 64 with FLASHSIM_FLASH2H_BWD_BR=64 or with the deep ring of 64-row stages asked for, 64 in
// deterministic mode and at d = 128; bad values and impossible pairings refused with the fix.
// flash2h's backward converts its tiled dQ accumulator through a shared-memory tile unless
// FLASHSIM_FLASH2H_BWD_POST=plain; anything else is refused when the tiles are asked for
// The knob picks how the accumulator is written out, after the main loop: the tiles, the shared
// memory they take and the accumulators are the same either way (the same bits, checked on the GPU
// in test_kernels.cpp, "FLASHSIM_FLASH2H_BWD_POST: staged and plain give the same bits").
TEST_CASE("flash2h backward: FLASHSIM_FLASH2H_BWD_POST takes staged or plain") {
    clear();
    const sim::Problem d128 = shape(false);
    const fcuda::TileConfig unset = fcuda::tile_config("flash2h", d128, fcuda::Pass::backward);
    for (const char* ok : {"staged", "plain"}) {
        CAPTURE(ok);
        setenv("FLASHSIM_FLASH2H_BWD_POST", ok, 1);
        fcuda::TileConfig c{};
        REQUIRE_NOTHROW(c = fcuda::tile_config("flash2h", d128, fcuda::Pass::backward));
        CHECK(c.block_rows == unset.block_rows);
        CHECK(c.block_cols == unset.block_cols);
        CHECK(c.stages == unset.stages);
        CHECK(c.smem_bytes == unset.smem_bytes);
        CHECK(c.dq_copies == unset.dq_copies);
        CHECK(std::string(c.layout) == unset.layout);
    }
    setenv("FLASHSIM_FLASH2H_BWD_POST", "tiled", 1);
    check_refused(d128, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_POST must be staged or plain (got 'tiled')");
    unsetenv("FLASHSIM_FLASH2H_BWD_POST");
}

TEST_CASE("flash2h backward: FLASHSIM_FLASH2H_BWD_BR picks the query rows a step the tile config names") {
    clear();
    for (const char* v : {"FLASHSIM_FLASH2H_BWD_BR", "FLASHSIM_FLASH2H_BWD", "FLASHSIM_FLASH2H_BWD_STAGES",
                          "FLASHSIM_FLASH2H_BWD_SCHEDULE", "FLASHSIM_FLASH2H_BWD_FLUSH"})
        unsetenv(v);
    sim::Problem d64 = shape(false), d128 = shape(true);
    d64.head_dim = 64;
    auto bwd = [](const sim::Problem& p) { return fcuda::tile_config("flash2h", p, fcuda::Pass::backward); };
    CHECK(bwd(d64).block_rows == 128);
    CHECK(bwd(d64).stages == 2);
    CHECK(bwd(d64).block_cols == 128);
    CHECK(bwd(d128).block_rows == 64);  // d = 128's default (bulk-pipelined) keeps 64
    setenv("FLASHSIM_FLASH2H_BWD_BR", "64", 1);
    CHECK(bwd(d64).block_rows == 64);
    CHECK(bwd(d64).stages == 4);  // the deep ring of 64-row stages, d = 64's default before
    unsetenv("FLASHSIM_FLASH2H_BWD_BR");
    setenv("FLASHSIM_FLASH2H_BWD_STAGES", "deep", 1);
    CHECK(bwd(d64).block_rows == 64);
    CHECK(bwd(d64).stages == 4);
    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    CHECK(bwd(d64).block_rows == 64);
    unsetenv("FLASHSIM_FLASH2H_BWD");
    // the step's tile config is its backward's
    CHECK(fcuda::tile_config("flash2h", d64, fcuda::Pass::step).block_rows == 128);
    setenv("FLASHSIM_FLASH2H_BWD_BR", "96", 1);
    check_refused(d64, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_BR must be 64 or 128 (got '96')");
    setenv("FLASHSIM_FLASH2H_BWD_BR", "128", 1);
    check_refused(d128, fcuda::Pass::backward, "is written for d = 64's default schedule");
    setenv("FLASHSIM_FLASH2H_BWD_STAGES", "deep", 1);
    check_refused(d64, fcuda::Pass::backward, "set FLASHSIM_FLASH2H_BWD_BR=64");
    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    check_refused(d64, fcuda::Pass::backward, "not deterministic mode");
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_BR");
}

// flash2h's forward on 176-key blocks (FLASHSIM_FLASH2H_BC=128|176): the default at d = 128 without a
// mask (the default kernel: the static order, turns), named by the tile config; asked for
// elsewhere, refused with the fix.
TEST_CASE("flash2h forward: FLASHSIM_FLASH2H_BC picks the keys a block the tile config names") {
    clear();
    unsetenv("FLASHSIM_FLASH2H_BC");
    const sim::Problem full = shape(false), causal = shape(true);
    // the default: 176 at d = 128 without a mask on the default kernel; 128 causal, at d = 64, on the
    // tiles grid, without turns, or asked for
    CHECK(fcuda::tile_config("flash2h", full).block_cols == 176);
    CHECK(fcuda::tile_config("flash2h", causal).block_cols == 128);
    sim::Problem small_d = full;
    small_d.head_dim = 64;
    CHECK(fcuda::tile_config("flash2h", small_d).block_cols == 128);
    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
    CHECK(fcuda::tile_config("flash2h", full).block_cols == 128);
    unsetenv("FLASHSIM_FLASH2H_GRID");
    setenv("FLASHSIM_FLASH2H_PINGPONG", "off", 1);
    CHECK(fcuda::tile_config("flash2h", full).block_cols == 128);
    unsetenv("FLASHSIM_FLASH2H_PINGPONG");
    setenv("FLASHSIM_FLASH2H_BC", "128", 1);
    CHECK(fcuda::tile_config("flash2h", full).block_cols == 128);
    setenv("FLASHSIM_FLASH2H_BC", "176", 1);
    CHECK(fcuda::tile_config("flash2h", full).block_cols == 176);
    CHECK(has(layout(full), "ping-pong"));
    CHECK(has(layout(full), ", in turn)"));
    check_refused(causal, fcuda::Pass::forward,
                  "FLASHSIM_FLASH2H_BC=176 is written for d = 128 without a mask (got d = 128, causal)");
    sim::Problem d64 = full;
    d64.head_dim = 64;
    check_refused(d64, fcuda::Pass::forward, "set FLASHSIM_FLASH2H_BC=128");
    setenv("FLASHSIM_FLASH2H_PINGPONG", "off", 1);
    check_refused(full, fcuda::Pass::forward, "runs with flash2h's default kernel at d = 128");
    unsetenv("FLASHSIM_FLASH2H_PINGPONG");
    setenv("FLASHSIM_FLASH2H_BC", "96", 1);
    check_refused(full, fcuda::Pass::forward, "FLASHSIM_FLASH2H_BC must be 128 or 176 (got '96')");
    unsetenv("FLASHSIM_FLASH2H_BC");
}

TEST_CASE("standard: FLASHSIM_STANDARD_SOFTMAX picks the softmax kernels, and a bad value is refused") {
    const sim::Problem p = shape(false);
    unsetenv("FLASHSIM_STANDARD_SOFTMAX");
    CHECK(std::string(fcuda::tile_config("standard", p).layout).empty());  // the one-pass kernels where N allows
    setenv("FLASHSIM_STANDARD_SOFTMAX", "vec", 1);
    CHECK(std::string(fcuda::tile_config("standard", p).layout).empty());
    setenv("FLASHSIM_STANDARD_SOFTMAX", "rows", 1);
    CHECK(has(fcuda::tile_config("standard", p).layout, "two passes"));
    setenv("FLASHSIM_STANDARD_SOFTMAX", "fast", 1);
    CHECK_THROWS_WITH_AS(fcuda::tile_config("standard", p), doctest::Contains("use vec"), std::runtime_error);
    unsetenv("FLASHSIM_STANDARD_SOFTMAX");
}

// flash2's backward: 128 keys a block at both head dims unless FLASHSIM_FLASH2_BWD_BC says otherwise
// (threads and shared memory follow: 16 keys a warp); a bad value is refused.
TEST_CASE("flash2 backward: FLASHSIM_FLASH2_BWD_BC picks the keys a block the tile config names") {
    unsetenv("FLASHSIM_FLASH2_BWD_BC");
    sim::Problem d64 = shape(false), d128 = shape(true);
    d64.head_dim = 64;
    auto bwd = [](const sim::Problem& p) { return fcuda::tile_config("flash2", p, fcuda::Pass::backward); };
    CHECK(bwd(d64).block_cols == 128);
    CHECK(bwd(d128).block_cols == 128);
    CHECK(bwd(d128).threads == 256);
    setenv("FLASHSIM_FLASH2_BWD_BC", "64", 1);
    CHECK(bwd(d128).block_cols == 64);
    CHECK(bwd(d128).threads == 128);
    setenv("FLASHSIM_FLASH2_BWD_BC", "128", 1);
    CHECK(bwd(d128).block_cols == 128);
    // K_j, V_j (128 x 128 each), two stages of Q_i and dO_i (64 x 128), dS^T (128 x 64), all 2 bytes,
    // and two stages of LSE_i, D_i (64 fp32 each)
    CHECK(bwd(d128).smem_bytes == (2 * 128 * 128 + 4 * 64 * 128 + 128 * 64) * 2 + 4 * 64 * 4);
    setenv("FLASHSIM_FLASH2_BWD_BC", "64", 1);
    CHECK(bwd(d64).block_cols == 64);
    CHECK(bwd(d64).threads == 128);
    setenv("FLASHSIM_FLASH2_BWD_BC", "96", 1);
    CHECK_THROWS_WITH_AS(bwd(d64), doctest::Contains("FLASHSIM_FLASH2_BWD_BC must be 64 or 128 (got '96')"),
                         std::runtime_error);
    unsetenv("FLASHSIM_FLASH2_BWD_BC");
}

// the decode kernel's ring stages: 128 keys at d = 64 and 64 at d = 128 unless FLASHSIM_DECODE_STAGE_KEYS
// says otherwise; 128 only at d = 64 (at d = 128 the 96 KiB ring would hold one 64 KiB stage); bad
// values are refused
TEST_CASE("decode: FLASHSIM_DECODE_STAGE_KEYS picks 64 or 128 keys a ring stage, 128 at d = 64 only") {
    unsetenv("FLASHSIM_DECODE_STAGE_KEYS");
    CHECK(fcuda::decode_stage_keys(64) == 128);
    CHECK(fcuda::decode_stage_keys(128) == 64);
    setenv("FLASHSIM_DECODE_STAGE_KEYS", "64", 1);
    CHECK(fcuda::decode_stage_keys(64) == 64);
    setenv("FLASHSIM_DECODE_STAGE_KEYS", "128", 1);
    CHECK(fcuda::decode_stage_keys(64) == 128);
    CHECK_THROWS_WITH_AS(fcuda::decode_stage_keys(128), doctest::Contains("needs head_dim 64 (got 128)"),
                         std::runtime_error);
    setenv("FLASHSIM_DECODE_STAGE_KEYS", "64", 1);
    CHECK(fcuda::decode_stage_keys(128) == 64);
    setenv("FLASHSIM_DECODE_STAGE_KEYS", "256", 1);
    CHECK_THROWS_WITH_AS(fcuda::decode_stage_keys(64),
                         doctest::Contains("FLASHSIM_DECODE_STAGE_KEYS must be 64 or 128 (got '256')"),
                         std::runtime_error);
    unsetenv("FLASHSIM_DECODE_STAGE_KEYS");
}

// the decode kernel's L2 prefetch hint: none unless FLASHSIM_DECODE_PREFETCH names 128 or 256 bytes
// (0 names none); anything else is refused with the fix
TEST_CASE("decode: FLASHSIM_DECODE_PREFETCH picks no hint, 128 or 256 bytes") {
    unsetenv("FLASHSIM_DECODE_PREFETCH");
    CHECK(fcuda::decode_l2_prefetch() == 0);
    setenv("FLASHSIM_DECODE_PREFETCH", "0", 1);
    CHECK(fcuda::decode_l2_prefetch() == 0);
    setenv("FLASHSIM_DECODE_PREFETCH", "128", 1);
    CHECK(fcuda::decode_l2_prefetch() == 128);
    setenv("FLASHSIM_DECODE_PREFETCH", "256", 1);
    CHECK(fcuda::decode_l2_prefetch() == 256);
    for (const char* bad : {"64", "512", "256B", "-1"}) {
        setenv("FLASHSIM_DECODE_PREFETCH", bad, 1);
        const std::string want = "FLASHSIM_DECODE_PREFETCH must be 0, 128 or 256 (got '" + std::string(bad) + "')";
        CHECK_THROWS_WITH_AS(fcuda::decode_l2_prefetch(), doctest::Contains(want.c_str()), std::runtime_error);
    }
    unsetenv("FLASHSIM_DECODE_PREFETCH");
}

// how the decode kernel's K/V tiles reach shared memory: tma on sm_90 and later, cp.async before,
// unless FLASHSIM_DECODE_LOAD says; anything else is refused with the fix
TEST_CASE("decode: FLASHSIM_DECODE_LOAD picks cp.async or tma, tma by default where the GPU has it") {
    unsetenv("FLASHSIM_DECODE_LOAD");
    CHECK(fcuda::decode_kv_load(true) == "tma");
    CHECK(fcuda::decode_kv_load(false) == "cp.async");
    setenv("FLASHSIM_DECODE_LOAD", "tma", 1);
    CHECK(fcuda::decode_kv_load(false) == "tma");  // asked for: refused at launch on an older GPU, not here
    setenv("FLASHSIM_DECODE_LOAD", "cp.async", 1);
    CHECK(fcuda::decode_kv_load(true) == "cp.async");
    for (const char* bad : {"TMA", "bulk", "cpasync"}) {
        setenv("FLASHSIM_DECODE_LOAD", bad, 1);
        const std::string want = "FLASHSIM_DECODE_LOAD must be cp.async or tma (got '" + std::string(bad) + "')";
        CHECK_THROWS_WITH_AS(fcuda::decode_kv_load(true), doctest::Contains(want.c_str()), std::runtime_error);
    }
    unsetenv("FLASHSIM_DECODE_LOAD");
}

// who merges the decode splits: the last block of a head unless FLASHSIM_DECODE_MERGE says a second
// kernel or the blocks of a cluster; a misspelt value is refused rather than silently timing the default
TEST_CASE("decode: FLASHSIM_DECODE_MERGE picks the fused merge, the merge kernel or the cluster, fused by default") {
    unsetenv("FLASHSIM_DECODE_MERGE");
    CHECK(fcuda::decode_merge_mode() == "fused");
    setenv("FLASHSIM_DECODE_MERGE", "", 1);
    CHECK(fcuda::decode_merge_mode() == "fused");
    for (const char* good : {"fused", "separate", "cluster"}) {
        setenv("FLASHSIM_DECODE_MERGE", good, 1);
        CHECK(fcuda::decode_merge_mode() == good);
    }
    for (const char* bad : {"seperate", "kernel", "Fused", "0", "clusters"}) {
        setenv("FLASHSIM_DECODE_MERGE", bad, 1);
        const std::string want =
            "FLASHSIM_DECODE_MERGE must be fused, separate or cluster (got '" + std::string(bad) + "')";
        CHECK_THROWS_WITH_AS(fcuda::decode_merge_mode(), doctest::Contains(want.c_str()), std::runtime_error);
    }
    unsetenv("FLASHSIM_DECODE_MERGE");
}

// the cluster merge's ring: 192 KiB (one block an SM) unless FLASHSIM_DECODE_CLUSTER_RING=96
TEST_CASE("decode: FLASHSIM_DECODE_CLUSTER_RING picks the cluster merge's ring, 96 or 192 KiB, 192 by default") {
    unsetenv("FLASHSIM_DECODE_CLUSTER_RING");
    CHECK(fcuda::decode_cluster_ring_kib() == 192);
    setenv("FLASHSIM_DECODE_CLUSTER_RING", "96", 1);
    CHECK(fcuda::decode_cluster_ring_kib() == 96);
    setenv("FLASHSIM_DECODE_CLUSTER_RING", "192", 1);
    CHECK(fcuda::decode_cluster_ring_kib() == 192);
    for (const char* bad : {"64", "96k", "1", "two"}) {
        setenv("FLASHSIM_DECODE_CLUSTER_RING", bad, 1);
        const std::string want = "FLASHSIM_DECODE_CLUSTER_RING must be 96 or 192 (got '" + std::string(bad) + "')";
        CHECK_THROWS_WITH_AS(fcuda::decode_cluster_ring_kib(), doctest::Contains(want.c_str()), std::runtime_error);
    }
    unsetenv("FLASHSIM_DECODE_CLUSTER_RING");
}

// how the timed runs empty L2: a memset for the training passes, a read for decode, unless
// FLASHSIM_L2_FLUSH says otherwise; a bad value is refused with the fix
TEST_CASE("FLASHSIM_L2_FLUSH: write for training rows and read for decode by default; either when asked") {
    unsetenv("FLASHSIM_L2_FLUSH");
    CHECK(fcuda::l2_flush_setting(false) == "write");
    CHECK(fcuda::l2_flush_setting(true) == "read");
    setenv("FLASHSIM_L2_FLUSH", "read", 1);
    CHECK(fcuda::l2_flush_setting(false) == "read");
    setenv("FLASHSIM_L2_FLUSH", "write", 1);
    CHECK(fcuda::l2_flush_setting(true) == "write");
    setenv("FLASHSIM_L2_FLUSH", "clean", 1);
    CHECK_THROWS_WITH_AS(fcuda::l2_flush_setting(true),
                         doctest::Contains("FLASHSIM_L2_FLUSH must be write or read (got 'clean')"),
                         std::runtime_error);
    unsetenv("FLASHSIM_L2_FLUSH");
}

TEST_CASE("flash2h forward: the persistent grids run the units the simulator's static order walks") {
    // cuda/units.hpp (compiled into the kernel) against sim/program.hpp's StaticUnits (the L2 walk
    // and the schedule): the same units, the same blocks in the same order, for both masks, odd and
    // even T_r and odd and even heads. A block is named head * T_r + i on both sides.
    namespace u = fcuda::units;
    for (bool causal : {false, true})
        for (int T_r = 1; T_r <= 23; ++T_r)
            for (int BH = 1; BH <= 6; ++BH) {
                const sim::detail::StaticUnits su{T_r, BH, causal};
                REQUIRE(u::count(causal, T_r, BH) == su.count());
                for (int unit = 0; unit < u::count(causal, T_r, BH); ++unit) {
                    int64_t b[2];
                    const int n = su.blocks(unit, b);
                    REQUIRE(u::tiles(causal, unit, T_r, BH) == n);
                    for (int half = 0; half < n; ++half) {
                        const u::Tile t = u::tile(causal, unit, half, T_r);
                        CHECK(int64_t{t.bh} * T_r + t.i == b[half]);
                    }
                }
            }
}

TEST_CASE("flash2h forward: the last round split along the keys covers every left-over key block once") {
    // sim/tail_plan.hpp (FLASHSIM_FLASH2H_TAIL=split; the kernel's and the kernel model's plan), walked here block by block and
    // checked against a count made key block by key block: every key block of every left-over unit
    // in exactly one piece, a block's runs within one key block of each other's length, at most two
    // pieces a block, and each unit's sharers (the blocks the last of them merges) exactly the blocks
    // whose pieces meet it, with distinct slots that the pieces themselves name.
    namespace u = sim::tail;
    struct Shape {
        int units, T_c, G;
    };
    // the recorded N = 8192 and 16384 rows at d = 128 (2 x 16 heads, 64 or 128 query blocks, 176-key
    // blocks) on 132 SMs, a last round of one unit, of all but one, and fewer units than blocks
    for (const Shape s : {Shape{2048, 47, 132}, Shape{4096, 94, 132}, Shape{133, 6, 132}, Shape{263, 12, 132},
                          Shape{320, 12, 132}, Shape{100, 47, 132}, Shape{7, 5, 4}, Shape{30, 3, 8}}) {
        CAPTURE(s.units);
        CAPTURE(s.T_c);
        CAPTURE(s.G);
        const u::Plan t = u::plan(s.units, s.T_c, s.G);
        REQUIRE(t.u_full % s.G == 0);
        REQUIRE(t.u_full + t.L == s.units);
        REQUIRE(t.L < s.G);
        if (!u::worth(t)) continue;
        std::vector<int> covered(static_cast<size_t>(t.L) * s.T_c, 0);
        std::vector<std::set<int>> sharers(static_cast<size_t>(t.L)), slots(static_cast<size_t>(t.L));
        int shortest = s.T_c * s.units, longest = 0;
        for (int b = 0; b < s.G; ++b) {
            int run = 0;
            u::Piece pc{};
            for (int k = 0; k < 3; ++k) {
                const bool has = u::piece(t, b, k, pc);
                if (k == 2) CHECK_FALSE(has);
                if (!has) break;
                const int tu = pc.u - t.u_full;
                REQUIRE(tu >= 0);
                REQUIRE(tu < t.L);
                REQUIRE(pc.nj >= 1);
                REQUIRE(pc.j0 + pc.nj <= s.T_c);
                for (int j = pc.j0; j < pc.j0 + pc.nj; ++j) ++covered[static_cast<size_t>(tu) * s.T_c + j];
                sharers[static_cast<size_t>(tu)].insert(b);
                CHECK(slots[static_cast<size_t>(tu)].insert(pc.slot).second);
                CHECK(pc.slot == u::slot(t, b, tu));
                run += pc.nj;
            }
            shortest = std::min(shortest, run);
            longest = std::max(longest, run);
        }
        for (int c : covered) CHECK(c == 1);
        CHECK(longest - shortest <= 1);
        CHECK(longest == u::longest_run(t));
        for (int tu = 0; tu < t.L; ++tu) {
            const auto& sh = sharers[static_cast<size_t>(tu)];
            CHECK(u::sharers(t, tu) == static_cast<int>(sh.size()));
            CHECK(u::block_of(t, static_cast<long long>(tu) * s.T_c) == *sh.begin());
            CHECK(u::block_of(t, static_cast<long long>(tu + 1) * s.T_c - 1) == *sh.rbegin());
        }
    }
}
