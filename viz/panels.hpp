// viz/panels.hpp — one panel a file. Panels draw what they are given (const RunSet&, measurements,
// chart data) and change only the ViewState; they never run or own simulations.
#pragma once
#include <imgui.h>

#include <array>
#include <memory>

#include "viz/exact_view.hpp"
#include "viz/lessons_view.hpp"
#include "viz/measurement.hpp"
#include "viz/model.hpp"
#include "viz/replay.hpp"
#include "viz/ring_view.hpp"
#include "viz/series.hpp"
#include "viz/view_state.hpp"

namespace viz {

// Replays of the current RunSet's traces (view-side caches, rebuilt when the RunSet changes).
struct ReplayCache {
    const RunSet* rs = nullptr;
    std::array<std::unique_ptr<Replay>, 3> replays;
    Replay& get(const RunSet& rs, sim::Algo a);
};

// The hierarchy drawing shared by the memory and side-by-side views: HBM with each tensor's tiles,
// L2, SRAM with its resident tiles, and this step's transfers in flight at cursor `c`.
// `v` supplies a lesson's highlights (query row, tile).
void draw_hierarchy(ImDrawList* dl, ImVec2 a, ImVec2 b, const RunSet& rs, sim::Algo algo, Replay& rp, Cursor c,
                    bool compact, const ViewState& v);
// The least height draw_hierarchy needs at width `w` for nothing in it to overlap (HBM, L2 and SRAM
// each at their least; `rp` the replay it will draw). A view gives it at least this much, scrolling.
float hierarchy_least_height(Replay& rp, bool compact, float w);
// Events of the cursor's step that have happened at `c` (first + done).
size_t events_done(const Timeline& tl, Cursor c);

void draw_memory_panel(const RunSet& rs, ReplayCache& cache, ViewState& v);
void draw_compare_panel(const RunSet& rs, ReplayCache& cache, ViewState& v);
// Checkboxes choosing which algorithms the side-by-side and score views show (v.columns); the last
// one shown cannot be turned off.
// The algorithms' show/hide boxes; the cursor keeps its time when the driving column changes.
void column_toggles(ViewState& v, const RunSet& rs);
// A checked design answer's run beside its exercise's reference (drawn atop the Compare view).
void draw_design_strip(const DesignRun& d, const RunSet& rs);
// "forward pass", "backward pass", "forward, then backward"
const char* pass_words(sim::Pass p);
// The problem's mask for a view's header: "", ", causal" or ", causal, window W" (a sliding window).
std::string mask_words(const sim::Problem& p);
// The run's problem in grey on the current line when it fits, else the next: "N = .., d = .., dtype, GPU, mask, pass".
void problem_line(const RunSet& rs);
// The N x N score matrix as a grid of B_r x B_c tiles, the three loop orders side by side.
void draw_scores_panel(const RunSet& rs, ReplayCache& cache, ViewState& v);
// Per-SM lanes of copies, tensor-core products and exp/softmax work, serial against overlapped,
// and the whole GPU's predicted time beside the measured one.
void draw_timeline_panel(const RunSet& rs, const MeasuredSet& ms, ViewState& v);
void draw_softmax_panel(ViewState& v);
// Ring attention over P GPUs (issue 16): the GPUs in a ring with the chunks and the K/V slice each
// holds, the sends of the step shown, the chunk grid by GPU and step, the overlap of each step's
// send with its compute and the ring's totals, all from the job's current sim::RingResult.
void draw_ring_panel(const RingJob& job, ViewState& v);
// Exact, but in which sense: the three algorithms' real outputs on the app's problem against the
// float64 reference and each other, flash2's ulp distances from standard and where they fall.
void draw_exact_panel(const ExactJob& job, ViewState& v);
// The memory wall: one layer's bytes held at once per algorithm against the card, the longest N.
void draw_footprint_panel(const RunSet& rs, ViewState& v);
// Decoding: one step's KV cache cut into splits (keys and bytes a split, the merge), its time on the
// ladder's rungs and the recorded row beside it; the worked row's split and merge.
void draw_decode_panel(const RunSet& rs, ViewState& v);
// The roofline, log-log: the card's roofs and each kernel placed as simulated and as measured.
void draw_roofline_panel(const RunSet& rs, const MeasuredSet& ms, ViewState& v);
void draw_charts_panel(const RunSet& rs, const ChartData* charts, float progress, bool busy, const MeasuredSet& ms,
                       ViewState& v);
class LiveRun;
void draw_measured_panel(const MeasuredSet& ms, const RunSet* rs, LiveRun* live, ViewState& v);
// Lesson text with Back / Next; returns the step to apply when the learner moved (-1: none).
int draw_lesson_panel(const LessonLibrary& lib, ViewState& v);
// Play / step / scrub / speed and the parameters; returns true when the parameters should be applied.
bool draw_controls_panel(const RunSet* rs, bool busy, float progress, ViewState& v);
void draw_help_overlay(ViewState& v);

}  // namespace viz
