// viz/ticks.hpp — where a chart's axis gets its grid lines and labels (no GL: unit-tested).
//
// Pure and total: any range and any room (zero or negative width included) gives a short, finite,
// increasing list inside [lo, hi], never a division by zero and never an unbounded loop.
#pragma once
#include <vector>

namespace viz {

enum class TickKind {
    decimal,  // 1, 2, 2.5 or 5 times a power of ten (linear axes)
    binary,   // a power of two (linear axes of bytes: 64 MiB, 128 MiB, ...)
    log2,     // powers of two on a log axis, thinned (needs lo > 0)
};

inline constexpr int kMaxTicks = 64;  // no axis gets more labels than this, whatever the room

// At most max(1, min(max_ticks, kMaxTicks)) + 1 values v with lo <= v <= hi (a small tolerance at
// the ends), increasing. lo == hi gives {lo}; a non-finite bound, hi < lo, or a log axis with
// lo <= 0 gives {} (nothing to label).
std::vector<double> axis_ticks(double lo, double hi, int max_ticks, TickKind kind);

// How many labels fit along `length` pixels when one label needs `per_label` pixels: 0 when there
// is no room (length <= 0), never a division by zero.
int ticks_that_fit(float length, float per_label);

}  // namespace viz
