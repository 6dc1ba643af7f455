// viz/roofline_view.hpp — what the Roofline view plots, GL-free (unit-tested in tests/viz): the card's
// roofs (memory bandwidth times arithmetic intensity, up to the tensor-core rate; the datasheet's
// and, where the preset has them, the measured ceilings', each named) and each kernel placed twice,
// as the simulator models it and as a recorded row measured it. Intensity is matrix FLOPs over the
// bytes that crossed HBM, as lesson 10 counts it.
#pragma once
#include <string>
#include <vector>

#include "sim/decode.hpp"
#include "sim/machine.hpp"
#include "sim/simulate.hpp"

namespace viz {

struct MeasuredRow;  // viz/measurement.hpp
struct MeasuredSet;
struct RunSet;       // viz/model.hpp
struct DecodeShape;  // viz/decode_view.hpp

struct RoofCeiling {
    std::string name;                                                       // "datasheet" or "measured"
    double bandwidth = 0;                                                   // bytes/s
    double flops = 0;                                                       // tensor-core FLOP/s
    double ridge() const { return bandwidth > 0 ? flops / bandwidth : 0; }  // FLOPs per byte
    // What a kernel of this intensity can reach under this roof: min(flops, intensity x bandwidth).
    double attainable(double intensity) const;
};
// The datasheet's ceilings, then the measured ones where the preset has both (a copy's bandwidth and
// a large GEMM's rate).
std::vector<RoofCeiling> roof_ceilings(const sim::Machine& m);

struct RoofPoint {
    std::string kernel;  // "standard", "flash1", "flash2", "flash2h", "decode"
    std::string pass;    // "forward", "backward", "forward + backward", "decode step"
    bool measured = false;
    double flops = 0;        // matrix FLOPs
    double bytes = 0;        // bytes that crossed HBM
    double seconds = 0;      // the time charged for them
    std::string bytes_what;  // "L2 model (DRAM)", "DRAM counters", "tile moves, no L2", "split-KV walk"
    std::string time_what;   // a rung's name ("ideal machine", "this kernel"), "decode model" or "measured median"
    double intensity() const { return bytes > 0 ? flops / bytes : 0; }  // FLOPs per byte
    double rate() const { return seconds > 0 ? flops / seconds : 0; }   // FLOP/s
    std::string label() const;                                          // "flash2 forward, simulated" / "... measured"
};

// The simulator's point for one algorithm's run `r`: its matrix FLOPs over the HBM bytes its L2 model
// counted (every tile move where the model did not run), at `seconds`, the time of rung `rung` for
// the same run (FLOPs scaled by `flop_scale` when the time is of a larger problem, the bench's shape).
RoofPoint simulated_point(const sim::Result& r, double seconds, const std::string& rung, double flop_scale = 1);

// A recorded row placed twice: as measured (its FLOPs over the DRAM counters' bytes, at its median
// time) and as the model has it (the same FLOPs over the simulator's DRAM bytes through its L2 model
// for the row's own tiles, at rung 3, "this kernel", the row's own prediction). Either is left out
// when the row lacks its numbers. The row's FLOPs are its TFLOP/s times its time; a standard
// backward's are four fifths of them (the bench credits every backward with five products of
// 2 N^2 d; standard's does four, lesson 7).
std::vector<RoofPoint> recorded_points(const MeasuredRow& row);

// A decoding step (sim::simulate_decode): 4 x B x H_q x L x d FLOPs (a score and a value product a
// key) over the bytes it moves, at the decode model's time.
RoofPoint decode_point(const sim::DecodeResult& r);

// The points the view places: the app's three algorithms as simulated (at the bench's shape, rung 1),
// every recorded row at that shape (measured, and its own model), and the decoding view's step.
// `note` says when no recorded row matches the shape ("" when some do).
std::vector<RoofPoint> roof_points(const RunSet& rs, const MeasuredSet& ms, const DecodeShape& decode,
                                   std::string& note);

// ---- the plot's geometry, in screen pixels (y grows downwards), GL-free
struct Box {
    float x0 = 0, y0 = 0, x1 = 0, y1 = 0;
    bool overlaps(const Box& o) const { return x0 < o.x1 && o.x0 < x1 && y0 < o.y1 && o.y0 < y1; }
    bool within(const Box& o) const { return x0 >= o.x0 && y0 >= o.y0 && x1 <= o.x1 && y1 <= o.y1; }
};
struct PlotPt {
    float x = 0, y = 0;
};

// The axes: whole decades around every roof's ridge (a decade each side), its rate and a thousandth
// of it, and every point; mapped log-log onto `plot`.
struct RoofAxes {
    double x_lo = 1, x_hi = 10, y_lo = 1, y_hi = 10;  // FLOPs per byte; FLOP/s
    Box plot;
    float x(double intensity) const;
    float y(double rate) const;
    PlotPt at(const RoofPoint& p) const { return {x(p.intensity()), y(p.rate())}; }
};
RoofAxes roof_axes(const std::vector<RoofCeiling>& roofs, const std::vector<RoofPoint>& pts, const Box& plot);

// Where the panel draws the plot in a view area whose top left is (x, y), avail_w x avail_h of it left
// below the text above, at font size fs, with the y axis's labels y_label_w wide: `outer` is all the
// plot takes (its labels and the x axis's included), `plot` the log-log area.
struct RoofPlotLayout {
    Box outer, plot;
};
RoofPlotLayout roof_plot_layout(float x, float y, float avail_w, float avail_h, float fs, float y_label_w);

// The points' number labels, placed so that none overlaps another, a marker or a `keep_out` box (the
// axis caption), and all stay inside `plot`: each label tries the eight places around its marker
// (right first), then the same eight farther out (drawn with a leader line to the marker), then the
// nearest free place in the plot. A label that finds no room anywhere (a plot too small for them all)
// is not shown (`placed` false); the table under the plot lists every point anyway.
struct PlacedLabel {
    Box box;
    bool placed = false;
    bool leader = false;  // away from its marker: draw a line to it
};
std::vector<PlacedLabel> place_labels(const std::vector<PlotPt>& anchors, const std::vector<PlotPt>& sizes,
                                      const Box& plot, float marker_r, const std::vector<Box>& keep_out);

}  // namespace viz
