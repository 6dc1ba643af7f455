// The score-matrix view's tile states and the backward pass's replay, checked against the loops'
// definitions (tiles counted by hand), and the lesson-step -> view map for the lessons that use
// the new views.
#include <doctest/doctest.h>

#include <algorithm>
#include <array>
#include <utility>
#include <vector>

#include "viz/app_args.hpp"
#include "viz/lessons_view.hpp"
#include "viz/measurement.hpp"
#include "viz/model.hpp"
#include "viz/replay.hpp"

#ifndef FLASHSIM_SOURCE_DIR
#define FLASHSIM_SOURCE_DIR "."
#endif

using namespace viz;
using sim::Tensor;

namespace {
std::shared_ptr<RunSet> runs(int64_t n, int64_t d, int64_t b, bool causal, sim::Pass pass = sim::Pass::forward) {
    Params p;
    p.seq = n;
    p.head_dim = d;
    p.block_rows = b;
    p.block_cols = b;
    p.causal = causal;
    p.pass = pass;
    return run_all(p, nullptr);
}

// The current tile after each complete step of the trace, in step order.
std::vector<std::pair<int64_t, int64_t>> sweep(const RunSet& rs, sim::Algo a, int pass) {
    const sim::Result& r = rs.result(a);
    const Timeline& tl = rs.timeline(a);
    Replay rp(r);
    std::vector<std::pair<int64_t, int64_t>> out;
    for (int64_t s = 0; s < tl.steps_kept; ++s) {
        rp.advance_to(tl.step_first[static_cast<size_t>(s) + 1]);
        const ScoreGrid& g = rp.scores(pass);
        if (rp.pass_now() != pass || g.cur_i < 0) continue;
        if (out.empty() || out.back() != std::pair{g.cur_i, g.cur_j}) out.push_back({g.cur_i, g.cur_j});
    }
    return out;
}
}  // namespace

TEST_CASE(
    "score grid, causal N = 256 in 64 x 64 tiles: flash2 sweeps row by row over the 10 tiles on or below the "
    "diagonal") {
    const auto rs = runs(256, 64, 64, true);
    // By hand: T = 256 / 64 = 4 tiles a side; on or below the diagonal (j <= i): 4 + 3 + 2 + 1 = 10;
    // above it 6. FA2: query tile i outer, key tile j inner, masked tiles skipped.
    std::vector<std::pair<int64_t, int64_t>> expect;
    for (int64_t i = 0; i < 4; ++i)
        for (int64_t j = 0; j <= i; ++j) expect.push_back({i, j});
    CHECK(sweep(*rs, sim::Algo::flash2, 0) == expect);
    Replay rp(rs->result(sim::Algo::flash2));
    rp.advance_to(rs->result(sim::Algo::flash2).trace.events.size());
    const ScoreGrid& g = rp.scores(0);
    CHECK(g.T_r == 4);
    CHECK(g.T_c == 4);
    CHECK(g.n_visited == 10);
    CHECK(g.n_skipped == 6);
    CHECK(g.n_stored == 0);
    CHECK(g.n_visited_masked == 0);
    CHECK(sweep_order(g) == "row by row (query tile outer)");
    CHECK(cell_state(g, 0, 3) == CellState::skipped);  // above the diagonal
    CHECK(cell_state(g, 2, 1) == CellState::visited);
    CHECK(cell_state(g, 3, 3) == CellState::current);  // the last tile computed
}

TEST_CASE("score grid, causal: flash1 sweeps column by column, standard computes and stores every tile") {
    const auto rs = runs(256, 64, 64, true);
    // FA1 (Algorithm 1): key tile j outer, query tile i inner; a tile (i, j) with j > i is skipped.
    std::vector<std::pair<int64_t, int64_t>> expect;
    for (int64_t j = 0; j < 4; ++j)
        for (int64_t i = j; i < 4; ++i) expect.push_back({i, j});
    CHECK(sweep(*rs, sim::Algo::flash1, 0) == expect);
    {
        Replay rp(rs->result(sim::Algo::flash1));
        rp.advance_to(rs->result(sim::Algo::flash1).trace.events.size());
        CHECK(rp.scores(0).n_visited == 10);
        CHECK(sweep_order(rp.scores(0)) == "column by column (key tile outer)");
    }
    // Standard: S = QK^T in full (16 tiles, row tile i outer), each written to HBM; the mask is applied
    // in the softmax, so the 6 tiles above the diagonal are computed anyway.
    const sim::Result& r = rs->result(sim::Algo::standard);
    Replay rp(r);
    rp.advance_to(r.trace.events.size());
    const ScoreGrid& g = rp.scores(0);
    CHECK(g.T_r * g.T_c == 16);
    CHECK(g.n_visited == 16);
    CHECK(g.n_stored == 16);
    CHECK(g.n_skipped == 6);
    CHECK(g.n_visited_masked == 6);
    CHECK(sweep_order(g) == "row by row (query tile outer)");
    CHECK(cell_state(g, 0, 3) == CellState::visited_masked);  // above the diagonal, computed and stored anyway
    CHECK(cell_state(g, 3, 0) == CellState::stored);          // below it
}

TEST_CASE("score grid, backward: flash recomputes S column by column (K/V outer), standard stores dP row by row") {
    const auto rs = runs(256, 64, 64, false, sim::Pass::backward);
    for (sim::Algo a : {sim::Algo::flash1, sim::Algo::flash2}) {
        const sim::Result& r = rs->result(a);
        REQUIRE(r.bwd_block_rows > 0);
        const int64_t tr = (256 + r.bwd_block_rows - 1) / r.bwd_block_rows;
        const int64_t tc = (256 + r.bwd_block_cols - 1) / r.bwd_block_cols;
        std::vector<std::pair<int64_t, int64_t>> expect;  // Algorithm 4 and FA2's backward: j outer, i inner
        for (int64_t j = 0; j < tc; ++j)
            for (int64_t i = 0; i < tr; ++i) expect.push_back({i, j});
        CHECK(sweep(*rs, a, 1) == expect);
        Replay rp(r);
        rp.advance_to(r.trace.events.size());
        CHECK(rp.scores(1).n_visited == tr * tc);
        CHECK(rp.scores(1).n_stored == 0);   // recomputed in SRAM, never written
        CHECK(rp.scores(0).n_visited == 0);  // backward only: no forward tiles
        CHECK(rp.pass_now() == 1);
    }
    const sim::Result& r = rs->result(sim::Algo::standard);
    const int64_t tr = (256 + r.bwd_block_rows - 1) / r.bwd_block_rows;
    const int64_t tc = (256 + r.bwd_block_cols - 1) / r.bwd_block_cols;
    Replay rp(r);
    rp.advance_to(r.trace.events.size());
    CHECK(rp.scores(1).n_visited == tr * tc);  // dP = dO V^T, one tile each
    CHECK(rp.scores(1).n_stored == tr * tc);   // and each written to HBM
    CHECK(sweep_order(rp.scores(1)) == "row by row (query tile outer)");
}

TEST_CASE("score grid, both passes: the forward's grid fills, then the backward's") {
    const auto rs = runs(256, 64, 64, false, sim::Pass::both);
    const sim::Result& r = rs->result(sim::Algo::flash2);
    Replay rp(r);
    rp.advance_to(1);
    CHECK(rp.pass_now() == 0);
    rp.advance_to(r.trace.events.size());
    CHECK(rp.pass_now() == 1);
    CHECK(rp.scores(0).n_visited == 16);  // 4 x 4 forward tiles
    const int64_t tb = (256 + r.bwd_block_rows - 1) / r.bwd_block_rows;
    CHECK(rp.scores(1).n_visited == tb * ((256 + r.bwd_block_cols - 1) / r.bwd_block_cols));
    CHECK(tb >= 4);
}

TEST_CASE("score grid: more than 256 tiles a side are drawn in coarser cells, counted per tile") {
    sim::Problem p;
    p.seq = 301 * 16;
    p.head_dim = 16;
    p.causal = true;
    const ScoreGrid g = make_score_grid(p, 16, 16);
    // T = 301 tiles a side; f = ceil(301 / 256) = 2 tiles a cell; ceil(301 / 2) = 151 cells a side.
    CHECK(g.T_r == 301);
    CHECK(g.f_r == 2);
    CHECK(g.rows == 151);
    CHECK(g.tiles[g.idx(0, 0)] == 4);
    CHECK(g.tiles[g.idx(150, 150)] == 1);  // the last row and column of tiles are alone in their cells
    CHECK(g.n_skipped == 301 * 300 / 2);   // tiles strictly above the diagonal
    CHECK(g.skipped[g.idx(0, 1)] == 4);    // tiles (0..1, 2..3): all above it
    CHECK(g.skipped[g.idx(0, 0)] == 1);    // tile (0, 1) only
    CHECK(cell_state(g, 0, 1) == CellState::skipped);
    CHECK(cell_state(g, 1, 0) == CellState::untouched);
}

TEST_CASE("score grid: tiles too narrow to part by a gap are grouped, and the grouped grid counts the same tiles") {
    // group_factor: the smallest k whose cells are wider than 4 px. Counted by hand:
    // 144 tiles in 430 px are 2.99 px each; 2 a cell: 72 cells of 5.97 px.
    CHECK(group_factor(144, 430) == 2);
    CHECK(group_factor(128, 430) == 2);  // 3.36 px; 64 cells of 6.72 px
    CHECK(group_factor(64, 430) == 1);   // 6.72 px already
    CHECK(group_factor(64, 256) == 2);   // exactly 4 px is not wider than 4: 32 cells of 8 px
    CHECK(group_factor(144, 40) == 16);  // 9 cells of 4.4 px; 15 a cell would leave 10 of exactly 4 px
    CHECK(group_factor(1, 2) == 1);
    CHECK(group_factor(10, 0) == 1);  // no room at all: nothing to decide

    // flash2's backward at N = 8,192 in the tiles the lesson's step shows (64 x 57): 128 x 144 tiles.
    sim::Problem p;
    p.seq = 8192;
    p.head_dim = 128;
    p.causal = true;
    const ScoreGrid fine = make_score_grid(p, 64, 57);
    REQUIRE(fine.T_r == 128);
    REQUIRE(fine.T_c == 144);  // ceil(8192 / 57)
    const ScoreGrid g = group_cells(fine, 2, 3);
    CHECK(g.rows == 64);
    CHECK(g.cols == 48);
    CHECK(g.f_r == 2);
    CHECK(g.f_c == 3);
    CHECK(g.tiles[g.idx(0, 0)] == 6);
    uint64_t tiles = 0, skipped = 0;
    for (size_t c = 0; c < g.tiles.size(); ++c) tiles += g.tiles[c], skipped += g.skipped[c];
    CHECK(tiles == 128u * 144u);
    CHECK(skipped == static_cast<uint64_t>(fine.n_skipped));
    // The cell holding query tiles 0-1 and key tiles 3-5 (keys 171 to 341, queries 0 to 127): every
    // key is past every query, so the causal mask empties all six tiles.
    CHECK(g.skipped[g.idx(0, 1)] == 6);
    CHECK(cell_state(g, 0, 1) == CellState::skipped);
    // Query tiles 0-1, key tiles 0-2 (keys 0 to 170): tile (0, 0) holds key 0 <= query 0, tile (0, 2)
    // keys 114-170 past queries 0-63; tile (0, 1) keys 57-113, partly below query 63: not empty.
    CHECK(g.skipped[g.idx(0, 0)] == 1);
    CHECK(g.cell_row(127) == 63);  // a tile finds its cell through the new factors
    CHECK(g.cell_col(143) == 47);
    // Grouping by 3 rows leaves a last cell of 128 - 3 * 42 = 2 tile rows.
    const ScoreGrid h = group_cells(fine, 3, 1);
    CHECK(h.rows == 43);
    CHECK(h.tiles[h.idx(42, 0)] == 2);
}

TEST_CASE("score grid grouped: a finished run's cells are all computed, a half-run's sweep is kept") {
    const auto rs = runs(1024, 64, 32, false, sim::Pass::backward);
    const sim::Result& r = rs->result(sim::Algo::flash2);
    Replay rp(r);
    rp.advance_to(r.trace.events.size());
    const ScoreGrid& fine = rp.scores(1);
    const ScoreGrid g = group_cells(fine, 4, 4);
    CHECK(g.n_visited == fine.n_visited);
    CHECK(sweep_order(g) == sweep_order(fine));
    int computed = 0;
    for (int a = 0; a < g.rows; ++a)
        for (int b = 0; b < g.cols; ++b)
            computed += cell_state(g, a, b) == CellState::visited || cell_state(g, a, b) == CellState::current;
    CHECK(computed == g.rows * g.cols);
}

TEST_CASE("backward replay: the gradient tensors appear in HBM; flash keeps dP and dS on chip") {
    const auto rs = runs(256, 64, 64, false, sim::Pass::backward);
    {
        const sim::Result& r = rs->result(sim::Algo::flash2);
        Replay rp(r);
        for (Tensor t : {Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV, Tensor::LSE, Tensor::D})
            CHECK(rp.layout().shown(t));
        CHECK_FALSE(rp.layout().shown(Tensor::dP));
        CHECK_FALSE(rp.layout().shown(Tensor::dS));
        CHECK_FALSE(rp.layout().shown(Tensor::S));
        rp.advance_to(r.trace.events.size());
        // FA2's backward, by its definition: dQ (fp32, 4 bytes) is zeroed once, read and written back by
        // every (i, j) step (T_c passes over all N rows), then written once in fp16 (2 bytes).
        const int64_t n = 256, d = 64, tc = (n + r.bwd_block_cols - 1) / r.bwd_block_cols;
        CHECK(rp.totals()[Tensor::dQ].write_bytes == n * d * 4 + tc * n * d * 4 + n * d * 2);
        CHECK(rp.totals()[Tensor::dQ].read_bytes == tc * n * d * 4 + n * d * 4);
        // dK and dV accumulate on chip: each written once, in fp16
        CHECK(rp.totals()[Tensor::dK].write_bytes == n * d * 2);
        CHECK(rp.totals()[Tensor::dV].write_bytes == n * d * 2);
        CHECK(rp.totals()[Tensor::dK].read_bytes == 0);
        // a middle step of the dK/dV kernel holds the recomputed tiles and the accumulators in SRAM
        const Timeline& tl = rs->timeline(sim::Algo::flash2);
        size_t first = 0;
        for (int64_t s = 0; s < tl.steps_kept; ++s) {
            const size_t f = tl.step_first[static_cast<size_t>(s)];
            if (r.trace.events[f].phase == 1 && s + 1 < tl.steps_kept &&
                r.trace.events[tl.step_first[static_cast<size_t>(s) + 1]].phase == 1)
                first = f;
        }
        REQUIRE(first > 0);
        const sim::Event& e = r.trace.events[first];
        const int64_t s = e.step;
        const auto res =
            resident_tiles(r.trace, tl.step_first[static_cast<size_t>(s)], tl.step_first[static_cast<size_t>(s) + 1]);
        auto has = [&](Tensor t) {
            return std::any_of(res.begin(), res.end(), [&](const Resident& x) { return x.tensor == t; });
        };
        for (Tensor t : {Tensor::S, Tensor::P, Tensor::dP, Tensor::dS, Tensor::dK, Tensor::dV, Tensor::Q, Tensor::dO})
            CHECK(has(t));
    }
    {
        const sim::Result& r = rs->result(sim::Algo::standard);
        Replay rp(r);
        for (Tensor t : {Tensor::P, Tensor::dP, Tensor::dS, Tensor::dO, Tensor::dQ}) CHECK(rp.layout().shown(t));
        rp.advance_to(r.trace.events.size());
        // standard writes dP and dS (N x N, fp16) once each
        CHECK(rp.totals()[Tensor::dP].write_bytes == 256 * 256 * 2);
        CHECK(rp.totals()[Tensor::dS].write_bytes == 256 * 256 * 2);
    }
}

TEST_CASE("the bench's shape and its measured rows") {
    sim::Problem p;
    p.seq = 8192;
    p.head_dim = 128;
    const sim::Problem b = bench_shape(p);
    CHECK(b.batch == 2);   // 16,384 tokens / 8,192
    CHECK(b.heads == 16);  // 2,048 / 128
    {  // N = 1, d = 1 would be 16,384 x 2,048 heads, past the simulator's 2^24: the batch shrinks, and
        // the app's run of that problem (its timeline's GPU line included) goes through
        sim::Problem tiny = p;
        tiny.seq = 1;
        tiny.head_dim = 1;
        const sim::Problem t = bench_shape(tiny);
        CHECK(t.heads == 2048);
        CHECK(t.batch == 8192);  // 2^24 / 2,048
        CHECK_NOTHROW(t.validate());
        Params q;
        q.seq = 1;
        q.head_dim = 1;
        CHECK(validate(q).empty());
        CHECK_NOTHROW(run_all(q, nullptr));
    }
    const MeasuredSet ms = load_measurements(std::string(FLASHSIM_SOURCE_DIR) + "/results");
    // the H200's rows (results/h100 holds the same shapes on an H100, which the H100 preset shows)
    const auto rows = rows_at(ms, "forward", 8192, 128, false, 2, 16, "H200");
    // README's forward table, N = 8192, d = 128, no mask: flash2 3.34 ms, standard 5.05 ms (re-recorded 2026-12-04)
    auto find = [&](const char* v) -> const MeasuredRow* {
        for (const auto* r : rows)
            if (r->variant == v) return r;
        return nullptr;
    };
    REQUIRE(find("flash2") != nullptr);
    CHECK(*find("flash2")->ms == doctest::Approx(3.34).epsilon(0.01));
    REQUIRE(find("standard") != nullptr);
    CHECK(*find("standard")->ms == doctest::Approx(5.05).epsilon(0.01));
    CHECK(rows_at(ms, "forward", 8192, 128, false, 1, 1).empty());
}

TEST_CASE("--pass and the new panels on the command line") {
    AppArgs a;
    const char* argv[] = {"flashsim-app", "--pass", "both", "--panel", "scores"};
    CHECK(parse_app_args(5, argv, a, nullptr, nullptr).empty());
    CHECK(a.pass == sim::Pass::both);
    CHECK(a.panel == Panel::scores);
    const char* bad[] = {"flashsim-app", "--pass", "sideways"};
    CHECK(parse_app_args(3, bad, a, nullptr, nullptr).find("--pass must be") != std::string::npos);
    CHECK(parse_panel("timeline") == Panel::timeline);
    CHECK(animated(Panel::scores));
    CHECK_FALSE(animated(Panel::timeline));
}

TEST_CASE("every lesson step opens a view of its own, not the one the step before left") {
    // A step without a view (panel = "text") showed whatever the learner came from: reached by Next,
    // the step before's view (6.3's traffic beside a text on FLOPs, 7.3's N = 8,192 score grid beside
    // the N = 8 gradients, 11.1 the roofline left by lesson 10); opened directly, the app's default.
    // Every step names its view, and the problem too except the softmax view, which draws its own row.
    const LessonLibrary lib = load_lesson_library();
    REQUIRE(lib.error.empty());
    REQUIRE(lib.lessons.size() >= 15);
    for (const auto& l : lib.lessons) {
        CHECK_MESSAGE(l.error.empty(), l.file << ": " << l.error);
        for (size_t k = 0; k < l.steps.size(); ++k) {
            const LessonStep& st = l.steps[k];
            INFO(l.file << ", step " << k + 1 << " (" << st.title << ")");
            REQUIRE(st.panel);
            if (*st.panel != Panel::softmax) CHECK(st.params);
        }
    }
}

TEST_CASE("lessons 7, 8 and 9 open the views their steps need") {
    const LessonLibrary lib = load_lesson_library();
    REQUIRE(lib.error.empty());
    for (const auto& l : lib.lessons) CHECK_MESSAGE(l.error.empty(), l.file << ": " << l.error);
    auto step = [&](const char* id, const char* title) -> const LessonStep* {
        const int k = lib.find(id);
        if (k < 0) return nullptr;
        for (const auto& s : lib.lessons[static_cast<size_t>(k)].steps)
            if (s.title == title) return &s;
        return nullptr;
    };
    // lessons/07-backward.toml: "The backward pass, counted" compares std_bwd (standard) and fl_bwd
    // (flash2), both pass = "backward": side by side, backward, those two columns only.
    const LessonStep* s = step("backward", "The backward pass, counted");
    REQUIRE(s);
    REQUIRE(s->panel);
    CHECK(*s->panel == Panel::compare);
    REQUIRE(s->params);
    CHECK(s->params->pass == sim::Pass::backward);
    CHECK(s->params->seq == 8192);
    CHECK(s->columns == std::array<bool, 3>{true, false, true});
    // lessons/02-two-memories.toml and 07-backward.toml compare standard (no tiles) with a flash2
    // config of 128 x 128: the flash columns beside standard run those tiles, not the block rule
    // (which at N = 8192, d = 128 on the H200 gives B_c = 114)
    for (const auto& id_title : {std::pair{"two-memories", "Where the time goes: bytes against arithmetic"},
                                 std::pair{"two-memories", "The roofline and its ridge point"},
                                 std::pair{"backward", "What the gradients need"}}) {
        const auto& id = std::get<0>(id_title);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& title = std::get<1>(id_title);
        const LessonStep* c = step(id, title);
        INFO(id << ": " << title);
        REQUIRE(c);
        REQUIRE(c->params);
        CHECK(c->params->algo == sim::Algo::standard);
        CHECK(c->params->block_rows == 128);
        CHECK(c->params->block_cols == 128);
    }
    {
        Params rule = *step("two-memories", "The roofline and its ridge point")->params;
        rule.block_rows = rule.block_cols = 0;
        const sim::BlockChoice bc =
            sim::choose_blocks(problem_of(rule), sim::Algo::flash2, sim::find_machine(rule.gpu).sram_bytes, 0, 0);
        CHECK(bc.block_cols != 128);  // so the case above is one the rule alone would get wrong
    }
    s = step("backward", "Recompute instead of reload");
    REQUIRE(s);
    CHECK(*s->panel == Panel::scores);
    CHECK(s->params->pass == sim::Pass::backward);
    // lessons/08-causal.toml: the score matrix, causal, flash2 (config causal) beside standard
    s = step("causal", "What skipping saves");
    REQUIRE(s);
    CHECK(*s->panel == Panel::scores);
    CHECK(s->params->causal);
    CHECK(s->params->block_rows == 128);
    CHECK(s->columns == std::array<bool, 3>{true, false, true});
    {  // applied: the score view over the whole sweep, standard and flash2 only
        ViewState v;
        Simulations sims;
        CHECK(apply_lesson_step(*s, v, sims).empty());
        CHECK(v.panel == Panel::scores);
        CHECK(v.columns == std::array<bool, 3>{true, false, true});
        CHECK(v.pending_step > 9000);  // more than any step of the sweep: scrubbed to the end when the run lands
        sims.wait();
    }
    s = step("causal", "Looking back only");
    REQUIRE(s);
    CHECK(*s->panel == Panel::scores);
    CHECK(s->params->seq == 16);
    CHECK(s->columns == std::array<bool, 3>{true, true, true});
    // lessons/01-standard-attention.toml compares "standard" with "doubled", both standard: two
    // problems, one algorithm, so all three algorithms stay shown, on the charts against N, counted
    // as the paper counts (chart = "paper": the S matrix's N^2 in the slope)
    {
        const int k = lib.find("1");
        REQUIRE(k >= 0);
        bool found = false;
        for (const auto& st : lib.lessons[static_cast<size_t>(k)].steps)
            if (st.title == "Double N, quadruple the matrix") {
                found = true;
                CHECK(*st.panel == Panel::charts);
                CHECK(st.chart == 1);
                CHECK(st.columns == std::array<bool, 3>{true, true, true});
            }
        CHECK(found);
    }
    // lessons/06-fa1-vs-fa2.toml compares fa1 and fa2: flash1 and flash2 only
    {
        const int k = lib.find("6");
        REQUIRE(k >= 0);
        for (const auto& st : lib.lessons[static_cast<size_t>(k)].steps)
            if (st.panel == Panel::compare) CHECK(st.columns == std::array<bool, 3>{false, true, true});
    }
    // lessons/09-overlap.toml: both steps on the timeline, forward
    for (const char* t : {"One step, two kinds of work", "Serial against overlapped"}) {
        s = step("overlap", t);
        REQUIRE(s);
        CHECK(*s->panel == Panel::timeline);
        CHECK(s->params->pass == sim::Pass::forward);
    }
}
