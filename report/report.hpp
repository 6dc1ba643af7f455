// report/report.hpp — printers: pure functions from simulation results to text and JSON.
// The CLI, the lessons and the tests use them; they never run a simulation themselves.
#pragma once
#include <nlohmann/json.hpp>
#include <optional>
#include <string>
#include <vector>

#include "sim/reference.hpp"
#include "sim/simulate.hpp"
#include "sim/softmax.hpp"

namespace report {

// "134,217,728"
std::string group_digits(int64_t v);
// Binary units: "128.00 MiB", "32.00 KiB", "512 B".
std::string human_bytes(double bytes);
// "8.59 GFLOP"
std::string human_flops(double flops);

// Every field of a result. with_timeline adds timing.timeline (bounded: a few SMs x a few steps).
nlohmann::json result_json(const sim::Result& r, bool with_timeline = false);
nlohmann::json error_json(const sim::ErrorStats& e);
// Human table: bytes per tensor (read, written), totals, FLOPs, SRAM, blocks; `baseline` (e.g. the
// standard algorithm on the same problem) adds a ratio line. with_ladder: end with the ladder of
// models (rungs 1 and 2: report/ladder.hpp); a caller that names a kernel prints its own ladder.
std::string result_text(const sim::Result& r, const sim::Result* baseline, bool with_ladder = true);
// Several algorithms on one problem, side by side (HBM bytes per tensor, total, FLOPs, ratio to the first).
std::string compare_text(const std::vector<sim::Result>& rs);
nlohmann::json compare_json(const std::vector<sim::Result>& rs);

// A sweep: one row per value of the swept parameter; a row whose problem was refused carries the
// refusal instead of a result.
struct SweepRow {
    std::string value;
    std::optional<sim::Result> result;
    std::string error;
};
std::string sweep_text(const std::string& param, const std::vector<SweepRow>& rows);
std::string sweep_csv(const std::string& param, const std::vector<SweepRow>& rows);
nlohmann::json sweep_json(const std::string& param, const std::vector<SweepRow>& rows);

// A named scenario: its description, then standard vs flash1 vs flash2 (GFLOP, HBM GB, predicted ms).
std::string scenario_text(const std::string& name, const std::string& description, const std::vector<sim::Result>& rs);
nlohmann::json scenario_json(const std::string& name, const std::string& description,
                             const std::vector<sim::Result>& rs);

// A machine preset, every field (name, sizes, bandwidths, FLOP rates, where the numbers come from).
nlohmann::json machine_json(const sim::Machine& m);
// The first `limit` events of a trace: as a list of objects, and as text, one line an event
// ("  step 3: load K tile (-,3) 64x64, 8,192 B"), then "... (N more events)" when some are left out.
nlohmann::json events_json(const sim::Trace& tr, size_t limit);
std::string events_text(const sim::Trace& tr, size_t limit);

nlohmann::json softmax_json(const sim::StreamedSoftmax& s);
std::string softmax_text(const sim::StreamedSoftmax& s);

}  // namespace report
