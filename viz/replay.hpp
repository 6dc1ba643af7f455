// viz/replay.hpp — the state of one simulation replayed up to a point in its trace: which tiles of
// each tensor in HBM have been read or written, the running byte and FLOP totals, and which tiles
// sit in SRAM during a step. Plain data, no GL: the memory and compare views draw it, tests check it.
//
// Replay is incremental (moving forward applies only the new events; moving back rebuilds), so
// playing an N = 4096 animation costs a few events a frame, not the whole trace.
#pragma once
#include <array>
#include <cstdint>
#include <vector>

#include "sim/simulate.hpp"
#include "sim/trace.hpp"

namespace viz {

// An event's rectangle in its tensor, in elements: rows [r0, r1) x cols [c0, c1).
struct ElemRect {
    int64_t r0 = 0, r1 = 0, c0 = 0, c1 = 0;
};

// Element sizes of each tensor and the tile strides each (tensor, phase) uses, read off the trace.
struct Layout {
    int64_t n = 0, d = 0;
    std::array<int64_t, sim::kTensorCount> rows{}, cols{};  // tensor extent in elements
    // stride[tensor][phase]: {row stride, col stride}; phases 0..2
    std::array<std::array<std::array<int64_t, 2>, 3>, sim::kTensorCount> stride{};
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

class Replay {
public:
    explicit Replay(const sim::Result& r);
    // Apply events [0, end) (incrementally when moving forward).
    void advance_to(size_t end);
    size_t position() const { return pos_; }
    const sim::Totals& totals() const { return totals_; }  // head 0, events [0, position)
    const Grid& grid(sim::Tensor t) const { return grids_[static_cast<size_t>(t)]; }
    const Layout& layout() const { return layout_; }
    const sim::Result& result() const { return *r_; }
    // Cells of grid `t` an element rectangle covers: [r0, r1) x [c0, c1) in cells.
    void cells_of(sim::Tensor t, const ElemRect& e, int* r0, int* r1, int* c0, int* c1) const;

private:
    void reset();
    void apply(const sim::Event& e);
    const sim::Result* r_;
    Layout layout_;
    std::array<Grid, sim::kTensorCount> grids_;
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
