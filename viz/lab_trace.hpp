// viz/lab_trace.hpp — a learner's recorded tile-machine run (a lab trace file, report/lab_trace)
// as the app replays it: the run beside the built-in algorithm on the same problem and tiles, each
// as a one-result RunSet so the memory view's hierarchy drawing reads both alike. No GL: tested.
//
//   flashsim-app --trace run.json  /  the lesson pane's "Lab trace" field
//        ──load_lab_run──► LabRun { trace, mine, builtin } ──► draw_lab_trace_panel (the memory view)
#pragma once
#include <cstdint>
#include <memory>
#include <string>

#include "report/lab_trace.hpp"
#include "viz/model.hpp"
#include "viz/replay.hpp"

namespace viz {

struct LabRun {
    report::LabTrace trace;
    RunSet mine;                          // the learner's run, at results[algo_index(trace.info.algo)]
    RunSet builtin;                       // the built-in algorithm at the same problem and tiles, at the same index
    std::string mine_line, builtin_line;  // report::lab_run_line of each whole run (shown and printed)
    const sim::Result& mine_result() const { return mine.result(trace.info.algo); }
    const sim::Result& builtin_result() const { return builtin.result(trace.info.algo); }
    const Timeline& mine_timeline() const { return mine.timeline(trace.info.algo); }
    const Timeline& builtin_timeline() const { return builtin.timeline(trace.info.algo); }
    // "built-in flash2 (B_r 64, B_c 48)"
    std::string builtin_name() const;
};

// Reads the file and simulates the built-in run. On a bad file (missing, not JSON, another format
// or version, events naming tensors the trace lacks) or tiles the simulator refuses: null, and
// *error holds the one-line reason.
std::shared_ptr<const LabRun> load_lab_run(const std::string& path, std::string* error);

// What the lab view holds: the run shown (null: the ordinary memory view), its replays, the
// step shown and the path field's text and last refusal.
struct LabTraceState {
    std::shared_ptr<const LabRun> run;
    std::unique_ptr<Replay> mine_rp, builtin_rp;
    int64_t step = -1;  // the learner's step shown (-1: the last); the built-in shows the same index
    std::string path;   // the field's text
    std::string error;  // why the last open failed ("" when it did not)
    // Opens `file`: on success replaces the run shown and returns true; otherwise keeps the last
    // run and sets `error`.
    bool open(const std::string& file);
    void close();
    bool shown() const { return run != nullptr; }
};

}  // namespace viz

namespace viz {

struct ViewState;
// Drawn by the app (viz/panel_lab_trace.cpp, ImGui). The memory view while a lab trace is open:
// the learner's run and the built-in one side by side at one step, their whole-run counts per
// tensor (differences marked), step buttons and a slider, Close (back to the ordinary view).
void draw_lab_trace_panel(LabTraceState& s, ViewState& v);
// The lesson pane's "Lab trace" box: a path field and Open; a refusal in red under it. Returns true
// when a trace was opened (the app then shows the memory view).
bool draw_lab_trace_opener(LabTraceState& s);

}  // namespace viz
