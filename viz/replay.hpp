// viz/replay.hpp — the state of one simulation replayed up to a point in its trace: which tiles of
// each tensor in HBM have been read or written, the running byte and FLOP totals, and which tiles
// sit in SRAM during a step. Plain data, no GL: the memory and compare views draw it, tests check it.
//
// Replay is incremental (moving forward applies only the new events; moving back rebuilds), so
// playing an N = 4096 animation costs a few events a frame, not the whole trace.
#pragma once
#include <array>
#include <cstdint>
#include <string>
#include <vector>

#include "sim/simulate.hpp"
#include "sim/trace.hpp"

namespace viz {

// An event's rectangle in its tensor, in elements: rows [r0, r1) x cols [c0, c1).
struct ElemRect {
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

// Phases (counted kernels) a trace may have: standard's forward and backward together have 3 + 5.
inline constexpr int kMaxPhases = 8;

// Element sizes of each tensor and the tile strides each (tensor, phase) uses, read off the trace.
// The backward's tensors (dO, dQ, dK, dV: N x d; standard's dP, dS: N x N; D: N x 1) appear when the
// run moves them to or from HBM; flash's dP and dS live in SRAM only and never appear here.
struct Layout {
    int64_t n = 0, d = 0;
    std::array<int64_t, sim::kTensorCount> rows{}, cols{};  // tensor extent in elements
    // stride[tensor][phase]: {row stride, col stride}; phases 0 .. kMaxPhases - 1
    std::array<std::array<std::array<int64_t, 2>, kMaxPhases>, sim::kTensorCount> stride{};
    ElemRect rect(const sim::Event& e) const;
    bool shown(sim::Tensor t) const { return rows[static_cast<size_t>(t)] > 0; }
};
Layout make_layout(const sim::Result& r);

// A coarse raster of one tensor: at most kMaxCells per side. Bits: 1 = read, 2 = written.
inline constexpr int kMaxCells = 64;
struct Grid {
    int rows = 0, cols = 0;
    std::vector<uint8_t> cell;
    uint8_t at(int r, int c) const { return cell[static_cast<size_t>(r * cols + c)]; }
};

// How a cell is drawn: 0 untouched, 1 read (tinted), 2 written (full colour; read or not).
inline int cell_shade(uint8_t bits) { return (bits & 2) ? 2 : (bits & 1) ? 1 : 0; }

// A grid drawn as few rectangles as its shades allow: the cells [r0, r1) x [c0, c1), all of one
// shade. Each row is cut into runs of one shade; consecutive rows cut the same way share their
// rectangles. The blocks cover every cell exactly once. (A 64 x 64 matrix is 4,096 cells but, as
// a pass fills it row by row or column by column, a handful of blocks: a software rasteriser pays
// per triangle, and the backward's four N x N matrices were 32,768 of them a frame.)
struct CellBlock {
    int r0 = 0, r1 = 0, c0 = 0, c1 = 0;
    int shade = 0;
};
std::vector<CellBlock> shade_blocks(const Grid& g);

// The N x N score matrix as the paper draws it: a grid of B_r x B_c tiles for one pass (the
// backward's tiles are its own B_r x B_c). A tile is visited when its scores are computed (S in the
// forward and in the flash backward, which recomputes it; dP in standard's backward, which reads the
// stored P instead), stored when standard writes it to HBM (S; dP in the backward), and skipped when
// the causal mask (or a window) leaves nothing in it to compute. Large grids are drawn coarser: a
// cell holds up to f x f tiles (f = ceil(T / kMaxScoreCells)); the counts stay per tile.
inline constexpr int kMaxScoreCells = 256;
struct ScoreGrid {
    int64_t T_r = 0, T_c = 0, B_r = 0, B_c = 0;
    int rows = 0, cols = 0;                                 // cells
    int64_t f_r = 1, f_c = 1;                               // tiles per cell along each side
    std::vector<uint32_t> tiles, skipped, visited, stored;  // per cell: tiles, masked tiles, and so far
    int64_t n_visited = 0, n_stored = 0, n_skipped = 0;     // whole grid (n_skipped: by definition)
    int64_t n_visited_masked = 0;    // visited tiles the mask leaves empty (standard computes them anyway)
    int64_t cur_i = -1, cur_j = -1;  // the latest tile visited
    // The sweep so far: has every visit come after the previous one in row-major (i, then j) order,
    // and in column-major (j, then i) order?
    bool row_major = true, col_major = true;
    size_t cur_event = 0;  // its event index (+1; 0: none yet)
    size_t idx(int i, int j) const { return static_cast<size_t>(i) * static_cast<size_t>(cols) + j; }
    int cell_row(int64_t i) const { return static_cast<int>(i / f_r); }
    int cell_col(int64_t j) const { return static_cast<int>(j / f_c); }
};
ScoreGrid make_score_grid(const sim::Problem& p, int64_t block_rows, int64_t block_cols);
// The score view draws a cell wider than kMinCellPx pixels with a 1 px gap around it; narrower cells
// run together, and a finished grid of them (flash2's backward at N = 8,192: 128 x 144 tiles in about
// 430 px) reads as one solid block. group_factor says how many cells to draw as one along a side of
// `side_px` pixels: the smallest k with side_px / ceil(cells / k) > min_px (1 when they fit already).
inline constexpr float kMinCellPx = 4.0f;
int group_factor(int cells, float side_px, float min_px = kMinCellPx);
// The grid with k_r x k_c of its cells as one (the last ones may hold fewer): their tiles, masked,
// visited and stored tiles summed, the tiles a cell holds (f_r, f_c) multiplied; the whole grid's
// counts, the sweep and the latest tile kept.
ScoreGrid group_cells(const ScoreGrid& g, int k_r, int k_c);
// Is event e a visit (or a store) of a score tile, for an algorithm?
bool score_visit(sim::Algo a, const sim::Event& e);
bool score_store(const sim::Event& e);
// How one cell of the grid is drawn.
enum class CellState : uint8_t {
    untouched,       // nothing computed yet
    skipped,         // every tile in it is masked: nothing to compute (flash skips it)
    partial,         // some of its tiles computed (a coarse cell)
    visited,         // all of its unmasked tiles computed (in SRAM)
    visited_masked,  // computed (and stored) although the mask empties it (standard computes every tile)
    stored,          // computed and written to HBM (standard)
    current,         // holds the tile computed last
};
CellState cell_state(const ScoreGrid& g, int a, int b);
// The loop order the sweep shows: "row by row (query tile outer)" when the visits so far follow
// row-major order only, "column by column (key tile outer)" when they follow column-major order
// only, "" while both (or neither) fit.
std::string sweep_order(const ScoreGrid& g);

class Replay {
public:
    explicit Replay(const sim::Result& r);
    // Apply events [0, end) (incrementally when moving forward).
    void advance_to(size_t end);
    size_t position() const { return pos_; }
    const sim::Totals& totals() const { return totals_; }  // head 0, events [0, position)
    const Grid& grid(sim::Tensor t) const { return grids_[static_cast<size_t>(t)]; }
    // The score grid of a pass (0 forward, 1 backward) at the current position.
    const ScoreGrid& scores(int pass) const { return scores_[pass == 1 ? 1 : 0]; }
    // The pass the position is in: that of the last event applied (the first event's before any).
    int pass_now() const;
    const Layout& layout() const { return layout_; }
    const sim::Result& result() const { return *r_; }
    // The most tiles SRAM holds at once in any step: the most tensors one phase of the trace loads,
    // computes or stores (resident_tiles never names more). The hierarchy keeps room for that many
    // slots on every step, so its boxes do not change size as the run goes.
    int most_slots() const { return most_slots_; }
    // Cells of grid `t` an element rectangle covers: [r0, r1) x [c0, c1) in cells.
    void cells_of(sim::Tensor t, const ElemRect& e, int* r0, int* r1, int* c0, int* c1) const;

private:
    void reset();
    void apply(const sim::Event& e);
    const sim::Result* r_;
    Layout layout_;
    std::array<Grid, sim::kTensorCount> grids_;
    std::array<ScoreGrid, 2> scores_;
    int most_slots_ = 1;
    sim::Totals totals_;
    size_t pos_ = 0;
};

// A tile resident in SRAM during a step: the latest event that brought or made it there.
struct Resident {
    sim::Tensor tensor;
    sim::Event event;      // the load / compute that put it there (or the store that leaves this step)
    int64_t bytes = 0;     // its size in SRAM (loaded bytes; fp32 for computed tiles)
    bool leaving = false;  // stored back to HBM during this step
};
// Tiles in SRAM while step events [first, last) run: per tensor the latest load/compute since the
// phase began (scanning back at most `scan_limit` events), plus what the step itself stores.
std::vector<Resident> resident_tiles(const sim::Trace& tr, size_t first, size_t last, size_t scan_limit = 50000);

}  // namespace viz
