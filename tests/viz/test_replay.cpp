// Replaying a trace: which tiles of each tensor have been read or written, running totals, and the
// tiles resident in SRAM, checked against closed forms of the algorithms' loops.
#include <doctest/doctest.h>

#include <algorithm>

#include "viz/hierarchy_layout.hpp"
#include "viz/model.hpp"
#include "viz/replay.hpp"

using namespace viz;
using sim::Tensor;

namespace {
std::shared_ptr<RunSet> runs(int64_t n, int64_t d) {
    Params p;
    p.seq = n;
    p.head_dim = d;
    return run_all(p, nullptr);
}
bool all_cells(const Grid& g, uint8_t bit) {
    return !g.cell.empty() && std::all_of(g.cell.begin(), g.cell.end(), [&](uint8_t c) { return (c & bit) != 0; });
}
}  // namespace

TEST_CASE("standard attention: after the replay every tile of S and P has been written to HBM") {
    const auto rs = runs(256, 64);
    const sim::Result& r = rs->result(sim::Algo::standard);
    Replay rp(r);
    rp.advance_to(r.trace.events.size());
    CHECK(all_cells(rp.grid(Tensor::S), 2));
    CHECK(all_cells(rp.grid(Tensor::P), 2));
    CHECK(all_cells(rp.grid(Tensor::S), 1));  // and read back for the softmax
    // Closed form: S is N x N elements of 2 bytes (fp16), written once.
    CHECK(rp.totals()[Tensor::S].write_bytes == 256 * 256 * 2);
    CHECK(rp.totals()[Tensor::P].write_bytes == 256 * 256 * 2);
    // One head, nothing truncated: the replayed totals are the run's totals.
    CHECK(rp.totals().hbm_total() == r.totals.hbm_total());
}

TEST_CASE("flash2: S never reaches HBM; Q and O cross once, K and V once per query tile") {
    const auto rs = runs(256, 64);
    const sim::Result& r = rs->result(sim::Algo::flash2);
    Replay rp(r);
    CHECK_FALSE(rp.layout().shown(Tensor::S));
    CHECK_FALSE(rp.layout().shown(Tensor::P));
    rp.advance_to(r.trace.events.size());
    const int64_t nde = 256 * 64 * 2, tr = (256 + r.block_rows - 1) / r.block_rows;
    CHECK(rp.totals()[Tensor::Q].read_bytes == nde);
    CHECK(rp.totals()[Tensor::K].read_bytes == tr * nde);
    CHECK(rp.totals()[Tensor::V].read_bytes == tr * nde);
    CHECK(rp.totals()[Tensor::O].write_bytes == nde);
    CHECK(rp.totals()[Tensor::S].total() == 0);
    CHECK(all_cells(rp.grid(Tensor::O), 2));
    CHECK(all_cells(rp.grid(Tensor::Q), 1));
}

TEST_CASE("flash2 after its first query tile: only the first tile of O is written") {
    const auto rs = runs(512, 64);
    const sim::Result& r = rs->result(sim::Algo::flash2);
    const Timeline& tl = rs->timeline(sim::Algo::flash2);
    REQUIRE(r.T_r >= 2);
    Replay rp(r);
    rp.advance_to(tl.step_first[static_cast<size_t>(r.T_c)]);  // steps of row 0 done
    const Grid& o = rp.grid(Tensor::O);
    // rows of O belonging to tile 0: [0, B_r); the grid has one cell per query tile here
    REQUIRE(o.rows == r.T_r);
    CHECK(o.at(0, 0) == 2);
    for (int i = 1; i < o.rows; ++i) CHECK(o.at(i, 0) == 0);
    CHECK(rp.totals()[Tensor::O].write_bytes == r.block_rows * 64 * 2);
}

TEST_CASE("moving forward incrementally equals a fresh replay; moving back rebuilds") {
    const auto rs = runs(384, 32);
    const sim::Result& r = rs->result(sim::Algo::flash1);
    const size_t n = r.trace.events.size();
    Replay a(r), b(r);
    a.advance_to(n / 3);
    a.advance_to(2 * n / 3);
    b.advance_to(2 * n / 3);
    CHECK(a.totals().hbm == b.totals().hbm);
    CHECK(a.totals().flops == b.totals().flops);
    for (int k = 0; k < sim::kTensorCount; ++k)
        CHECK(a.grid(static_cast<Tensor>(k)).cell == b.grid(static_cast<Tensor>(k)).cell);
    a.advance_to(n / 4);
    Replay c(r);
    c.advance_to(n / 4);
    CHECK(a.totals().hbm == c.totals().hbm);
    CHECK(a.position() == n / 4);
    // the running totals agree with the trace's own range sums
    CHECK(a.totals().hbm_total() == r.trace.totals_of(0, n / 4).hbm_total());
}

TEST_CASE("resident tiles: flash2 keeps Q_i across its row; standard stores each S tile it computes") {
    const auto rs = runs(512, 64);
    {
        const sim::Result& r = rs->result(sim::Algo::flash2);
        const Timeline& tl = rs->timeline(sim::Algo::flash2);
        const int64_t s = r.T_c + 1;  // query tile 1, key tile 1
        const auto res =
            resident_tiles(r.trace, tl.step_first[static_cast<size_t>(s)], tl.step_first[static_cast<size_t>(s) + 1]);
        auto find = [&](Tensor t) {
            return std::find_if(res.begin(), res.end(), [&](const Resident& x) { return x.tensor == t; });
        };
        REQUIRE(find(Tensor::Q) != res.end());
        CHECK(find(Tensor::Q)->event.row_tile == 1);
        CHECK(find(Tensor::Q)->event.kind == sim::EventKind::load);  // loaded at the start of the row, still there
        REQUIRE(find(Tensor::K) != res.end());
        CHECK(find(Tensor::K)->event.row_tile == 1);
        CHECK(find(Tensor::LSE) == res.end());  // row 0's LSE went back to HBM
        CHECK(find(Tensor::S) != res.end());
        CHECK_FALSE(find(Tensor::S)->leaving);
    }
    {
        const sim::Result& r = rs->result(sim::Algo::standard);
        const Timeline& tl = rs->timeline(sim::Algo::standard);
        const auto res = resident_tiles(r.trace, tl.step_first[0], tl.step_first[1]);
        auto s = std::find_if(res.begin(), res.end(), [&](const Resident& x) { return x.tensor == Tensor::S; });
        REQUIRE(s != res.end());
        CHECK(s->leaving);
        // its SRAM size: the float32 accumulator of a B_r x B_c tile
        CHECK(s->bytes == 4 * r.block_rows * r.block_cols);
    }
}

TEST_CASE("a capped trace is shown honestly: kept steps end before the run does") {
    Params p;
    p.seq = 32768;  // standard: (N / 128)^2 = 65,536 steps of 4 events each in S = QK^T alone
    p.head_dim = 64;
    const auto rs = run_all(p, nullptr);
    const sim::Result& r = rs->result(sim::Algo::standard);
    const Timeline& tl = rs->timeline(sim::Algo::standard);
    REQUIRE(r.trace.truncated);
    CHECK(static_cast<int64_t>(r.trace.events.size()) == kAppEventCap);
    CHECK(tl.truncated);
    CHECK(tl.steps_kept < tl.steps_total);
    CHECK(tl.step_first.back() <= r.trace.events.size());
    // the whole-run totals still count everything: S is N^2 fp16 elements
    CHECK(r.totals[Tensor::S].write_bytes == int64_t{32768} * 32768 * 2);
}

namespace {
// One algorithm simulated as the app does, with a given event cap.
sim::Result simulate_capped(const Params& p, sim::Algo a, int64_t cap) {
    sim::Config c;
    c.algo = a;
    c.block_rows = p.block_rows;
    c.block_cols = p.block_cols;
    c.sram_bytes = p.sram_bytes;
    c.numerics = sim::Numerics::off;
    c.event_cap = cap;
    c.record_row = -1;
    return sim::simulate(problem_of(p), sim::find_machine(p.gpu), c);
}
}  // namespace

TEST_CASE("a capped trace: the clock's whole-run figure comes from the complete totals, not the prefix") {
    // The app issue: N = 100,000 with 48 KiB of SRAM printed the prefix's 112 us beside a 16.9 ms
    // prediction, and side by side showed flash2 slower than flash1. Smaller here, same shape: a
    // capped trace against the same run with every event kept (the exact per-step sum).
    Params p;
    p.seq = 16384;
    p.head_dim = 64;
    p.sram_bytes = 48 * 1024;
    for (sim::Algo a : kAlgos) {
        CAPTURE(sim::algo_name(a));
        const Timeline capped = make_timeline(simulate_capped(p, a, kAppEventCap));
        const Timeline full = make_timeline(simulate_capped(p, a, int64_t{1} << 30));
        REQUIRE(capped.truncated);
        REQUIRE_FALSE(full.truncated);
        CHECK(capped.whole_is_estimate());
        CHECK(full.whole_time == full.total_time());
        CHECK(capped.total_time() < 0.5 * full.total_time());  // the prefix alone is far off
        // the rest is one roofline stretch: never above the per-step sum, and close to it here
        CHECK(capped.whole_time <= full.total_time() * (1 + 1e-9));
        CHECK(capped.whole_time >= 0.9 * full.total_time());
    }
    const auto rs = run_all(p, nullptr);
    CHECK(rs->timeline(sim::Algo::flash2).whole_time <= rs->timeline(sim::Algo::flash1).whole_time);
    CHECK(rs->timeline(sim::Algo::flash1).whole_time < rs->timeline(sim::Algo::standard).whole_time);
}

TEST_CASE("a capped standard trace still shows S and P in HBM") {
    Params p;
    // N = 65536: S = QK^T alone is (N / 128)^2 = 262,144 steps, so the cap ends the trace inside
    // it and P has not moved yet (the app issue: P vanished from the HBM picture at N = 100,000)
    p.seq = 65536;
    p.head_dim = 64;
    const sim::Result r = simulate_capped(p, sim::Algo::standard, kAppEventCap);
    REQUIRE(r.trace.truncated);
    bool p_in_trace = false;
    for (const auto& e : r.trace.events) p_in_trace = p_in_trace || e.tensor == Tensor::P;
    REQUIRE_FALSE(p_in_trace);
    const Layout L = make_layout(r);
    CHECK(L.shown(Tensor::S));
    CHECK(L.shown(Tensor::P));
    CHECK(L.rows[static_cast<size_t>(Tensor::P)] == 65536);
}

namespace {
// Every cell in exactly one block, and every block's cells of its shade.
void check_cover(const Grid& g, const std::vector<CellBlock>& blocks) {
    std::vector<int> hits(g.cell.size(), 0);
    for (const CellBlock& b : blocks) {
        REQUIRE(b.r0 < b.r1);
        REQUIRE(b.c0 < b.c1);
        for (int i = b.r0; i < b.r1; ++i)
            for (int j = b.c0; j < b.c1; ++j) {
                ++hits[static_cast<size_t>(i * g.cols + j)];
                CHECK(cell_shade(g.at(i, j)) == b.shade);
            }
    }
    CHECK(std::all_of(hits.begin(), hits.end(), [](int h) { return h == 1; }));
}
Grid grid_of(int rows, int cols) { return Grid{rows, cols, std::vector<uint8_t>(static_cast<size_t>(rows * cols), 0)}; }
}  // namespace

TEST_CASE("shade blocks: a matrix filled row by row is four rectangles, not a rectangle a cell") {
    Grid g = grid_of(64, 64);
    // rows 0-9 written and read back (bits 3), row 10 written up to column 20 (bit 2): written
    // either way, so one shade
    for (int i = 0; i < 10; ++i)
        for (int j = 0; j < 64; ++j) g.cell[static_cast<size_t>(i * 64 + j)] = 3;
    for (int j = 0; j < 20; ++j) g.cell[static_cast<size_t>(10 * 64 + j)] = 2;
    const auto blocks = shade_blocks(g);
    check_cover(g, blocks);
    // the written rows 0-9 (one block), row 10 cut in two, the untouched rows 11-63 (one block)
    CHECK(blocks.size() == 4);
    CHECK(cell_shade(3) == cell_shade(2));
}

TEST_CASE("shade blocks: a matrix filled column by column, a checkerboard, one column, none") {
    SUBCASE("columns 0-4 read, column 5 read in rows 0-6: rows 0-6 cut alike, rows 7-63 alike") {
        Grid g = grid_of(64, 64);
        for (int i = 0; i < 64; ++i)
            for (int j = 0; j < 5 + (i < 7 ? 1 : 0); ++j) g.cell[static_cast<size_t>(i * 64 + j)] = 1;
        const auto blocks = shade_blocks(g);
        check_cover(g, blocks);
        CHECK(blocks.size() == 4);  // two bands of two runs each
    }
    SUBCASE("a checkerboard has no two neighbours alike: a block a cell") {
        Grid g = grid_of(8, 8);
        for (int i = 0; i < 8; ++i)
            for (int j = 0; j < 8; ++j)
                g.cell[static_cast<size_t>(i * 8 + j)] = static_cast<uint8_t>((i + j) % 2 ? 2 : 1);
        const auto blocks = shade_blocks(g);
        check_cover(g, blocks);
        CHECK(blocks.size() == 64);
    }
    SUBCASE("an N x d tensor is one column: its runs of rows") {
        Grid g = grid_of(64, 1);
        for (int i = 0; i < 30; ++i) g.cell[static_cast<size_t>(i)] = 1;
        const auto blocks = shade_blocks(g);
        check_cover(g, blocks);
        CHECK(blocks.size() == 2);
    }
    SUBCASE("a tensor not shown has an empty grid: no blocks") { CHECK(shade_blocks(Grid{}).empty()); }
}

TEST_CASE("shade blocks of a replayed standard run cover its S grid at every point") {
    const auto rs = runs(512, 64);
    const sim::Result& r = rs->result(sim::Algo::standard);
    Replay rp(r);
    const size_t n = r.trace.events.size();
    for (size_t end : {size_t{0}, n / 7, n / 3, n / 2, n - 1, n}) {
        rp.advance_to(end);
        const Grid& g = rp.grid(Tensor::S);
        REQUIRE(g.rows > 0);
        const auto blocks = shade_blocks(g);
        check_cover(g, blocks);
        CHECK(blocks.size() <= static_cast<size_t>(g.rows * g.cols));
        if (end == n) CHECK(blocks.size() == 1);  // every tile of S written: one shade, one block
    }
}

TEST_CASE("resident tiles: no step of a run holds more slots than most_slots says, and some step holds that many") {
    // The hierarchy keeps SRAM room for most_slots() slots on every step; a step with more would
    // draw past the room kept. Checked step by step against resident_tiles itself.
    Params p;
    p.seq = 512;
    p.head_dim = 64;
    for (sim::Pass pass : {sim::Pass::forward, sim::Pass::backward}) {
        p.pass = pass;
        const auto rs = run_all(p, nullptr);
        for (sim::Algo a : {sim::Algo::standard, sim::Algo::flash1, sim::Algo::flash2}) {
            const sim::Result& r = rs->result(a);
            const Timeline& tl = rs->timeline(a);
            const Replay rp(r);
            size_t most = 0;
            for (int64_t s = 0; s < tl.steps_kept; ++s)
                most = std::max(most, resident_tiles(r.trace, tl.step_first[static_cast<size_t>(s)],
                                                     tl.step_first[static_cast<size_t>(s) + 1])
                                          .size());
            CAPTURE(sim::algo_name(a));
            CAPTURE(static_cast<int>(pass));
            CHECK(most <= static_cast<size_t>(rp.most_slots()));
            CHECK(most == static_cast<size_t>(rp.most_slots()));
        }
    }
}

TEST_CASE("SRAM slots: at the least height every slot ends above the box's foot, and rows fit the width") {
    // The backward's 13 slots in a side-by-side pane at 2x zoom (fs = 34 px, a pane 460 px wide):
    // a slot is at least 2.4 lines wide plus a half-line gap, so (460 - 16 + 17) / (81.6 + 17) = 4.7
    // -> 4 a row, ceil(13 / 4) = 4 rows of ceil(13 / 4) = 4. The box: the heading and bar (1.5 + 0.9
    // lines), 0.6 lines, four rows of 1.5 lines with 0.4 between, 0.5 at the foot = 10.7 lines.
    const SlotLayout s = slot_layout(13, 460, 0, 34, true);
    CHECK(s.rows == 4);
    CHECK(s.per_row == 4);
    CHECK(sram_least_height(13, 460, 34, true) == doctest::Approx(10.7 * 34).epsilon(1e-5));
    // Every count, width and font size: at the least height and above it, the slots stay inside
    // the box (their bottom above the foot margin), the rows hold every slot, and a row fits across.
    for (bool compact : {true, false})
        for (float fs : {13.0f, 17.0f, 34.0f})
            for (int n = 1; n <= 16; ++n)
                for (float w = fs * 8; w <= fs * 40; w += fs * 3)
                    for (float extra : {0.0f, fs * 0.7f, fs * 5.0f, fs * 30.0f}) {
                        const float h = sram_least_height(n, w, fs, compact) + extra;
                        const SlotLayout l = slot_layout(n, w, h, fs, compact);
                        CAPTURE(n);
                        CAPTURE(w);
                        CAPTURE(h);
                        CHECK(l.rows * l.per_row >= n);
                        CHECK((l.rows - 1) * l.per_row < n);  // no empty row
                        CHECK(l.per_row * l.w + (l.per_row - 1) * l.gx <= w - 16 + 1e-3f);
                        CHECK(l.h >= fs * 1.5f);  // a slot keeps room for its name
                        CHECK(l.bottom() <= h - l.foot + 1e-3f);
                    }
}
