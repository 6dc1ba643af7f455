// viz/hierarchy_layout.hpp — the memory hierarchy's heights without GL: the SRAM box's rows of slots
// and the least height each box needs so that what it holds stays inside it (hierarchy.cpp draws it;
// at 2x zoom a squeezed SRAM box drew its slots over the counters below it).
#pragma once

namespace viz {

// The SRAM box, from its top edge down: its heading, the capacity bar, the rows of resident tiles
// ("slots", one a tensor), and a margin at its foot (the memory view's caption). Lengths in pixels.
struct SlotLayout {
    int per_row = 1, rows = 1;  // slots a row (rows balanced), rows
    float w = 0, h = 0;         // one slot
    float gx = 0, gy = 0;       // gaps between slots, across and down
    float top = 0;              // the first row's top, below the box's top edge
    float foot = 0;             // room kept under the last row
    float bottom() const { return top + static_cast<float>(rows) * h + static_cast<float>(rows - 1) * gy; }
};

// `n` slots in a box `box_w` wide and `box_h` tall at font size `fs` (compact: a side-by-side pane).
// Slots are never shorter than 1.5 lines (their name); with a box too short for that they run past
// `box_h - foot`, which sram_least_height() keeps from happening.
SlotLayout slot_layout(int n, float box_w, float box_h, float fs, bool compact);
// The least SRAM box height whose slots all end above its foot margin.
float sram_least_height(int n, float box_w, float fs, bool compact);

// The HBM box's least height: its heading, the N x d columns at their least (two lines), and, when
// N x N matrices are shown, their labels and a second row of squares at their least (two lines).
float hbm_least_height(bool has_square, float fs);

// The L2 strip and the gaps around it (between HBM and L2, and L2 and SRAM).
float l2_band_height(float fs, bool compact);

}  // namespace viz
