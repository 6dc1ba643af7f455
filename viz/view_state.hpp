// viz/view_state.hpp — what the learner has selected and where the animation is: a plain struct,
// plus the stepping / scrubbing / playing rules as free functions (no GL: unit-tested).
//
// The position is a step of the "driving" timeline and a fraction into it. The memory view drives
// with the chosen algorithm; the side-by-side view drives with the longest of the three, and every
// algorithm is shown at the same modelled time (clock_of / cursor_at convert).
#pragma once
#include <array>
#include <map>
#include <memory>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/simulate.hpp"
#include "viz/decode_view.hpp"
#include "viz/design_run.hpp"
#include "viz/exercise.hpp"
#include "viz/model.hpp"
#include "viz/ring_view.hpp"

namespace viz {

// In tab order; the keys of the number row open them in this order (panel_of_key).
enum class Panel {
    memory,
    compare,
    scores,
    timeline,
    softmax,
    charts,
    measured,
    ring,
    exact,
    footprint,
    decoding,
    roofline
};
inline constexpr int kPanelCount = 12;
// Views that animate the trace (the step / play / scrub controls drive them).
inline bool animated(Panel p) { return p == Panel::memory || p == Panel::compare || p == Panel::scores; }
std::string_view panel_name(Panel p);   // "memory", "compare", ...
std::string_view panel_title(Panel p);  // "Memory", "Side by side", ...
std::optional<Panel> parse_panel(std::string_view s);
// The keyboard's number row opens the views in tab order: 1 to 9 the first nine, then 0, - and =
// (the three keys after 9). `key` is the key's character, which is also its GLFW key code; any other
// key opens nothing. panel_key is the inverse (the key help lists it).
inline constexpr char kPanelKeys[kPanelCount + 1] = "1234567890-=";
std::optional<Panel> panel_of_key(int key);
char panel_key(Panel p);

struct Cursor {
    int64_t step = 0;
    double frac = 0.0;  // 0: the step's first event is about to happen; 1: all its events are done
    friend bool operator==(const Cursor&, const Cursor&) = default;
};

struct ViewState {
    Panel panel = Panel::memory;
    std::map<std::string, ExerciseState> exercises;  // by lesson id: the learner's answers this session
    // An accepted design answer's run beside the exercise's reference (the Compare view shows it while
    // the views show that run); design_apply asks the app to simulate its parameters (v.edit) once.
    std::shared_ptr<const DesignRun> design_shown;
    bool design_apply = false;
    sim::Algo algo = sim::Algo::flash2;  // the algorithm the memory view shows (all three are simulated)
    // Which algorithms the side-by-side, score-matrix and timeline views show (a lesson's `compare`
    // list narrows it; indexed by algo_index).
    std::array<bool, 3> columns = {true, true, true};
    bool timeline_overlapped = true;  // timeline view: draw the overlapped schedule (and the serial one)
    Cursor cursor;                    // on the driving timeline (see driver())
    int64_t pending_step = -1;        // a lesson's step, applied when the simulations it asked for arrive
    int64_t highlight_row = -1;       // a lesson's highlighted query row
    int64_t highlight_tile_row = -1, highlight_tile_col = -1;  // a lesson's highlighted tile (i, j)
    bool playing = false;
    // A lesson's prediction waits for the learner: the animation stays where the step opened it
    // (forward, End, the slider and Play would show the answer). Set each frame from the lesson.
    bool answer_hidden = false;
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
    std::string softmax_error;   // why the text above was refused (the last good scores stay shown)
    std::string softmax_note;    // what was adjusted on the last apply (V resized to the scores)
    int softmax_block_good = 4;  // the block size of the last good input (softmax_block is the field)
    int footprint_pass = 2;      // the footprint view's pass: 0 forward, 1 backward, 2 both (a training step)
    DecodeShape decode;          // the decoding view's step (a lesson step's [decode.NAME] sets it)
    int exact_tensor = 0;        // the exactness view's tensor: 0 = O, then dQ, dK, dV (with a backward)
    int softmax_focus = -1;      // -1: follow the animation step
    // Charts: what is counted (0: DRAM through the L2 model, 1: HBM<->SRAM as the paper counts;
    // viz::Count) and whether the measured DRAM bytes are drawn as points.
    int chart = 0;
    bool chart_measured = true;
    // Measured view filters: pass (0 forward, 1 backward), head dim (0: all), mask (0 none, 1 causal).
    int measured_pass = 0;
    int measured_d = -1;  // -1: the first head dim in the file
    int measured_mask = 0;
    std::string measured_open;  // a results file whose tab opens on the next frame (a lesson step's), then ""
    std::string measured_file;  // the results file shown ("h200/bench.json"; "": the largest)

    // Ring view (issue 16): GPUs, layout, pass and heads of the ring over the app's problem; the
    // position across its steps (see ring_cursor) and whether it plays.
    RingInputs ring;
    double ring_pos = kRingStartPos;
    bool ring_playing = false;
    // Lessons.
    int lesson = 0;
    int lesson_step = 0;
    bool own_params = false;
    int text_lesson = -1, text_step = -1;  // the step whose text the lesson pane shows (new: scrolled to the top)
    float lesson_share =
        0.62f;  // the lesson pane's share of the left column (the splitter drags it)  // the learner changed the parameters: the views no longer show the lesson's
};

// Lesson navigation across lessons: Next at a lesson's last step opens the next lesson's first step;
// Back at a first step opens the previous lesson's last. `steps[i]` is lesson i's step count (a
// lesson with none, e.g. one that failed to load, counts as one place). Returns false (and changes
// nothing) at the very end / start.
bool lesson_next(int& lesson, int& step, const std::vector<int>& steps);
bool lesson_back(int& lesson, int& step, const std::vector<int>& steps);

// The algorithm whose steps the cursor counts: the shown one, or in the side-by-side and score
// views the one that takes longest on the modelled clock.
sim::Algo driver(const RunSet& rs, Panel p, sim::Algo shown, const std::array<bool, 3>& columns = {true, true, true});

// The online-softmax view's input, parsed. Scores: numbers separated by commas, spaces, '|' or
// tabs; "-inf" is a masked score (weight 0), at least one must be finite, at most kMaxScores.
// Values V: optional, rows separated by ';', one per score, all the same length, finite. Block: >= 1.
inline constexpr size_t kMaxScores = 64;
struct SoftmaxInput {
    std::vector<double> scores;               // -inf where masked
    std::vector<std::vector<double>> values;  // empty: the output is the weights
    int block = 4;
    std::string values_text;  // V's text as applied (rewritten when V was resized)
    std::string note;         // what was adjusted ("" when nothing was)
};
// "" and `out` filled on success; otherwise a one-line reason naming the field to change. With
// `resize_values` (the learner edited the scores, not V), a V whose row count no longer matches is
// cut to the scores or padded with rows of zeros, and `note` says so.
std::string parse_softmax_input(std::string_view scores, std::string_view values, int block, bool resize_values,
                                SoftmaxInput& out);
// What the simulator's stream_softmax takes for a masked score: finite, and e^(s - m) is exactly 0
// in float32 for any real score m. (A block of masked scores only, before any real score, carries
// a placeholder that the next block's rescale factor, also exactly 0, erases.)
inline constexpr double kMaskedScore = -1e30;
std::vector<double> scores_for_sim(const std::vector<double>& scores);

// Apply the softmax view's fields (scores_text, values_text, softmax_block): on success updates
// softmax_scores / softmax_values / softmax_block_good / softmax_note (and values_text when V was
// resized) and clears softmax_error; otherwise keeps the last good ones, which stay drawn, and sets
// softmax_error. Returns true on success.
bool apply_scores_text(ViewState& v, bool scores_edited = false);

// One block of the online softmax as the view states it: a state carried from masked scores only
// (the simulator's finite placeholder for -inf) is shown as what it means, m = -inf, l = 0 and an
// accumulator of zeros, since every masked score has weight 0.
struct SoftmaxStepShown {
    bool masked_so_far = false;    // every score up to and including this block is masked
    bool nothing_carried = false;  // nothing came in from earlier blocks (first block, or only masked before)
    double m_before = 0, m_after = 0, l_before = 0, l_after = 0, rescale = 1;
    std::vector<double> acc_before, acc_rescaled, acc_after;
};
SoftmaxStepShown softmax_step_shown(const sim::SoftmaxBlockState& b);

// Modelled seconds at a cursor, and the cursor at a modelled time.
double clock_of(const Timeline& tl, Cursor c);
Cursor cursor_at(const Timeline& tl, double t);

// Last step index (steps_kept - 1, or 0).
int64_t last_step(const Timeline& tl);
// While v.answer_hidden, step_forward, go_end, user_scrub and tick leave the cursor where it is.
void step_forward(ViewState& v, const Timeline& tl);              // next step, shown complete
void step_back(ViewState& v, const Timeline& tl);                 // previous step, shown complete
void go_home(ViewState& v);                                       // step 0, before its events
void go_end(ViewState& v, const Timeline& tl);                    // last step, complete
void scrub_to(ViewState& v, const Timeline& tl, int64_t step);    // clamped, complete
void user_scrub(ViewState& v, const Timeline& tl, int64_t step);  // the learner's slider: scrub_to, gated
// Playback speed in steps per second: kept within [kMinSpeed, kMaxSpeed] (a NaN becomes the default
// 2), so Play always moves.
inline constexpr float kMinSpeed = 0.25f, kMaxSpeed = 200.0f;
double clamp_speed(double steps_per_s);
// Advance a playing animation by dt seconds of wall time at v.speed steps/s; stops (and pauses) at
// the end. Returns true if the cursor moved.
bool tick(ViewState& v, const Timeline& tl, double dt);
// Change panel (or shown algorithm) keeping the same modelled time.
void switch_panel(ViewState& v, const RunSet* rs, Panel p);
void switch_algo(ViewState& v, const RunSet* rs, sim::Algo a);
// Keep the cursor on the same modelled time after the RunSet changed (or clamp it).
void rebase(ViewState& v, const RunSet& now, const Timeline* before);

}  // namespace viz
