// report/lab_trace.hpp — a lab trace file: a learner's tile-machine run written to disk, read back
// by the app (`flashsim-app --trace FILE`) or anything else that links report/.
//
//   TileMachine (sim/) ──save_lab_trace──► run.json ──read_lab_trace──► LabTrace
//        (Python: machine.save_trace("run.json"))        ├─ learner_result(): the run as a sim::Result
//                                                         └─ builtin_result(): the built-in algorithm,
//                                                            same problem, same tiles (sim::simulate)
//
// The file is one JSON object (version 1):
//   {"format": "flashsim-lab-trace", "version": 1,
//    "problem": {"seq": N, "head_dim": d, "dtype": "fp16", "causal": false},
//    "tiles": {"block_rows": B_r, "block_cols": B_c}, "algo": "flash2", "pass": "forward",
//    "sram": {"capacity": bytes, "peak": bytes},
//    "tensors": [{"name": "Q", "counts_as": "Q", "rows": N, "cols": d, "dtype": "fp16", "role": "input"}, ...],
//    "events": [{"kind": "load", "tensor": "Q", "row_tile": 0, "col_tile": -1, "rows": 64, "cols": 32,
//                "bytes": 4096, "flops": {"matmul": 0, "exp": 0, "other": 0}, "step": 0}, ...]}
// An event's tensor is a simulator tensor name (Q, K, S, P, LSE, ...); a load or store must name
// one a listed tensor counts as. Totals are summed from the events when read, never taken on trust.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/problem.hpp"
#include "sim/simulate.hpp"
#include "sim/tile_machine.hpp"
#include "sim/trace.hpp"

namespace report {

inline constexpr const char* kLabTraceFormat = "flashsim-lab-trace";
inline constexpr int kLabTraceVersion = 1;

// What the tile machine does not know: the attention problem the run solves, and the built-in
// algorithm (with its tiles and pass) to set beside it.
struct LabTraceInfo {
    sim::Problem problem;  // seq, head_dim, dtype, causal (one head)
    sim::Algo algo = sim::Algo::flash2;
    sim::Pass pass = sim::Pass::forward;
    int64_t block_rows = 0, block_cols = 0;
};

// Fills what `given` leaves at zero from the machine: N and d from tensor Q's shape, the dtype from
// Q's, B_r from the rows of the first load of Q, B_c from the rows of the first load of K. Throws
// sim::Error naming what to pass when the machine cannot tell (no Q, Q never loaded).
LabTraceInfo complete_lab_trace_info(const sim::TileMachine& tm, LabTraceInfo given);

struct LabTraceTensor {
    std::string name;
    sim::Tensor counts_as = sim::Tensor::O;
    sim::DType dtype = sim::DType::fp16;
    std::string role;  // input, output, scratch
    int64_t rows = 0, cols = 0;
};

struct LabTrace {
    std::string path;
    LabTraceInfo info;
    int64_t sram_capacity = 0, sram_peak = 0;
    std::vector<LabTraceTensor> tensors;
    sim::Trace trace;    // every event (a lab run is small; nothing is cut)
    sim::Totals totals;  // summed from the events
};

// The trace as JSON text; save_ writes it to `path` (throws sim::Error when it cannot).
std::string lab_trace_json(const sim::TileMachine& tm, const LabTraceInfo& info);
void save_lab_trace(const std::string& path, const sim::TileMachine& tm, const LabTraceInfo& info);

// Reads and checks a trace file. Throws sim::Error with one line that names the file, what is
// wrong and how to fix it: a missing file, text that is not JSON, another format or version, a
// missing or mistyped field, an event naming a tensor the trace does not have, steps out of order.
LabTrace read_lab_trace(const std::string& path);
LabTrace parse_lab_trace(const std::string& text, const std::string& path);

// The learner's run as the app replays a simulation (problem, tiles, trace, totals, SRAM).
sim::Result learner_result(const LabTrace& t);
// The built-in algorithm on the same problem and tiles (no L2, no timing, numerics off). Throws
// sim::Error (prefixed with what was asked) when the simulator refuses them.
sim::Result builtin_result(const LabTrace& t);

// One line a side: "yours: 53,248 B moved (read 45,056, written 8,192), 1,638,400 FLOPs, 20 steps,
// SRAM peak 28,672 B" (what the app's lab view shows and prints).
std::string lab_run_line(const char* who, const sim::Totals& t, int64_t steps, int64_t sram_peak);

}  // namespace report
