// viz/hierarchy_layout.cpp — see hierarchy_layout.hpp.
#include "viz/hierarchy_layout.hpp"

#include <algorithm>

namespace viz {

namespace {

// The heading and capacity bar above the slots: the bar starts 1.5 lines below the box's top edge.
float slots_top(float fs, bool compact) {
    const float bar_h = fs * (compact ? 0.9f : 1.1f);
    return fs * 1.5f + bar_h + fs * (compact ? 0.6f : 1.6f);
}

}  // namespace

SlotLayout slot_layout(int n, float box_w, float box_h, float fs, bool compact) {
    SlotLayout s;
    n = std::max(1, n);
    s.gx = fs * 0.5f;
    s.gy = fs * (compact ? 0.4f : 1.5f);
    s.top = slots_top(fs, compact);
    s.foot = fs * (compact ? 0.5f : 3.0f);
    // one row of slots, or several when they would be too narrow to name (the backward holds 13)
    const float min_w = fs * (compact ? 2.4f : 3.8f), inner = box_w - 16;
    const int fit = static_cast<int>((inner + s.gx) / (min_w + s.gx));
    s.rows = (n + std::clamp(fit, 1, n) - 1) / std::clamp(fit, 1, n);
    s.per_row = (n + s.rows - 1) / s.rows;  // balanced rows
    s.w = std::min(fs * (compact ? 3.4f : 6.5f), inner / static_cast<float>(s.per_row) - s.gx);
    // the memory view keeps the lower part of the box for the step's events
    const float room = (box_h - s.foot - s.top) * (compact ? 1.0f : 0.4f) - s.gy * static_cast<float>(s.rows - 1);
    s.h = std::max(fs * 1.5f, std::min({room / static_cast<float>(s.rows), s.w * 0.9f, fs * 4.5f}));
    return s;
}

float sram_least_height(int n, float box_w, float fs, bool compact) {
    const SlotLayout s = slot_layout(n, box_w, 0, fs, compact);  // every slot at its least height
    return s.bottom() + s.foot;
}

float hbm_least_height(bool has_square, float fs) {
    const float head = fs * 2.6f, foot = fs * 0.5f, columns = fs * 2.0f;
    return head + columns + (has_square ? fs * 1.3f + fs * 2.0f : 0.0f) + foot;
}

float l2_band_height(float fs, bool compact) { return fs * 0.5f + fs * (compact ? 1.6f : 1.9f) + fs * 0.5f; }

}  // namespace viz
