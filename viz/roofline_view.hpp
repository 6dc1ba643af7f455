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

}  // namespace viz
