// viz/view_state.hpp — what the learner has selected and where the animation is: a plain struct,
// plus the stepping / scrubbing / playing rules as free functions (no GL: unit-tested).
//
// The position is a step of the "driving" timeline and a fraction into it. The memory view drives
// with the chosen algorithm; the side-by-side view drives with the longest of the three, and every
// algorithm is shown at the same modelled time (clock_of / cursor_at convert).
#pragma once
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "viz/model.hpp"

namespace viz {

enum class Panel { memory, compare, softmax, charts, measured };
inline constexpr int kPanelCount = 5;
std::string_view panel_name(Panel p);   // "memory", "compare", ...
std::string_view panel_title(Panel p);  // "Memory hierarchy", ...
std::optional<Panel> parse_panel(std::string_view s);

struct Cursor {
    int64_t step = 0;
    double frac = 0.0;  // 0: the step's first event is about to happen; 1: all its events are done
    friend bool operator==(const Cursor&, const Cursor&) = default;
};

struct ViewState {
    Panel panel = Panel::memory;
    sim::Algo algo = sim::Algo::flash2;  // the algorithm the memory view shows (all three are simulated)
    Cursor cursor;                       // on the driving timeline (see driver())
    int64_t pending_step = -1;           // a lesson's step, applied when the simulations it asked for arrive
    int64_t highlight_row = -1;          // a lesson's highlighted query row
    int64_t highlight_tile_row = -1, highlight_tile_col = -1;  // a lesson's highlighted tile (i, j)
    bool playing = false;
    double speed = 2.0;      // steps per second while playing
    bool show_help = false;  // keyboard help overlay (F1 or ?)
    // Parameters being edited (applied with Simulations::request) and the last refusal.
    Params edit;
    std::string param_error;
    // Online-softmax view: the scores text, the block size, the block being inspected.
    std::string scores_text = "1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3";
    int softmax_block = 4;
    std::vector<double> softmax_scores = {1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3};  // last good parse
    std::string values_text;  // optional V: one row per score, rows separated by ';' ("0,1; 1,0; ...")
    std::vector<std::vector<double>> softmax_values;  // last good parse (empty: outputs are the weights)
    std::string softmax_error;  // why the text above was refused (the last good scores stay shown)
    int softmax_focus = -1;     // -1: follow the animation step
    // Charts: which series to show.
    int chart = 0;
    // Measured view filters: pass (0 forward, 1 backward), head dim (0: all), mask (0 none, 1 causal).
    int measured_pass = 0;
    int measured_d = -1;  // -1: the first head dim in the file
    int measured_mask = 0;
    // Lessons.
    int lesson = 0;
    int lesson_step = 0;
    bool own_params = false;  // the learner changed the parameters: the views no longer show the lesson's
};

// The algorithm whose steps the cursor counts: the shown one, or in the side-by-side view the one
// that takes longest on the modelled clock.
sim::Algo driver(const RunSet& rs, Panel p, sim::Algo shown);

// Parse the softmax view's score text ("1.4, 3.9 | 4.6 ..."; commas, spaces or | between numbers)
// and values text (rows separated by ';', one per score, all the same length; empty: none).
// On success updates softmax_scores / softmax_values and clears softmax_error; otherwise keeps the
// last good ones and sets softmax_error to a one-line reason. Returns true on success.
bool apply_scores_text(ViewState& v);

// Modelled seconds at a cursor, and the cursor at a modelled time.
double clock_of(const Timeline& tl, Cursor c);
Cursor cursor_at(const Timeline& tl, double t);

// Last step index (steps_kept - 1, or 0).
int64_t last_step(const Timeline& tl);
void step_forward(ViewState& v, const Timeline& tl);            // next step, shown complete
void step_back(ViewState& v, const Timeline& tl);               // previous step, shown complete
void go_home(ViewState& v);                                     // step 0, before its events
void go_end(ViewState& v, const Timeline& tl);                  // last step, complete
void scrub_to(ViewState& v, const Timeline& tl, int64_t step);  // clamped, complete
// Advance a playing animation by dt seconds of wall time at v.speed steps/s; stops (and pauses) at
// the end. Returns true if the cursor moved.
bool tick(ViewState& v, const Timeline& tl, double dt);
// Change panel (or shown algorithm) keeping the same modelled time.
void switch_panel(ViewState& v, const RunSet* rs, Panel p);
void switch_algo(ViewState& v, const RunSet* rs, sim::Algo a);
// Keep the cursor on the same modelled time after the RunSet changed (or clamp it).
void rebase(ViewState& v, const RunSet& now, const Timeline* before);

}  // namespace viz
