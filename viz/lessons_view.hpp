// viz/lessons_view.hpp — the lessons as the app walks them: each step's text and what the views
// show (panel, parameters, animation step, the softmax example), from the lessons library
// (lessons/lib/lesson.hpp), which reads the lesson files; the app reads none itself.
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "viz/exercise.hpp"
#include "viz/model.hpp"
#include "viz/view_state.hpp"

namespace viz {

struct LessonStep {
    std::string title;
    std::string text;
    std::optional<Panel> panel;    // empty: leave the panel as it is
    std::optional<Params> params;  // empty: leave the parameters as they are
    // The algorithms the side-by-side and score views show: those of the step's `compare` configs
    // when they name two or more (all three otherwise). The parameters (the pass included) are the
    // first compared config's.
    std::array<bool, 3> columns = {true, true, true};
    int64_t step = -1;                     // animation step to show (-1: leave as is)
    int64_t row = -1;                      // highlighted query row (-1: none)
    int64_t tile_row = -1, tile_col = -1;  // highlighted tile: query tile i, key tile j (-1: none)
    // The lesson's softmax example (its [softmax] table), applied when the step shows that view.
    // A step that names a config with a recorded row (record_row) shows that row instead: its scores
    // block by block and the rows of V they weigh, as the simulator walked them.
    std::string scores_text, values_text;
    int block = 0;   // 0: no example given
    int focus = -1;  // the key block the softmax view opens on (0-based; -1: the last, the final state)
    int chart = -1;  // the charts view's count (viz::Count; -1: leave as is)
    // the measured view's filters (-1: leave as is): pass 0/1, head dim, mask 0/1
    int measured_pass = -1, measured_d = -1, measured_mask = -1;
    std::string measured_file;  // the results file's tab to open on ("": leave as is)
    // The ring the step discusses (a [ring.NAME] its text quotes): the ring view's inputs; the
    // step's params are then that ring's problem (N, d, dtype, mask, GPU).
    std::optional<RingInputs> ring;
    // The decoding step the step discusses (a [decode.NAME] its text quotes): the decoding view's shape.
    std::optional<DecodeShape> decode;
};

struct LessonDoc {
    std::string id, title, summary, file;
    std::vector<LessonStep> steps;
    std::optional<ExerciseDoc> exercise;  // asked at exercise_step(): a prediction first, a design last
    std::string error;                    // the lesson failed to load: shown instead of it
};

struct LessonLibrary {
    std::vector<LessonDoc> lessons;
    std::string source;                     // "lessons library: DIR"
    std::string error;                      // the library could not be found at all
    int find(const std::string& id) const;  // index of the lesson with this id (or "N" = number), -1 if none
};

// Load the lessons from the lessons directory (lessons::lessons_dir()). Never throws: a lesson that
// fails to load is listed with its error; no directory, or none in it, sets `error`.
LessonLibrary load_lesson_library();

// Apply a lesson step to the view: panel, parameters (through Simulations::request), cursor.
// Returns the simulator's refusal when the step's parameters are invalid ("" when fine).
std::string apply_lesson_step(const LessonStep& s, ViewState& v, Simulations& sims);

// Open step `step` (0-based) of lesson `lesson` as the lesson panel's Back / Next and the lesson list
// do: v.lesson and v.lesson_step set (the step clamped to the lesson's), then the step applied
// (apply_lesson_step: panel, parameters, compare columns, highlights, softmax example). The app's
// lesson panel and its --tour both open steps through this. Returns why the step could not be
// opened: no such lesson, the lesson failed to load, it has no steps, or the simulator refused the
// step's parameters ("" when fine; the view state is set as far as it could be).
std::string open_lesson_step(const LessonLibrary& lib, int lesson, int step, ViewState& v, Simulations& sims);

// Whether Next (and Page Down) may open the following step: not while the current lesson's
// prediction waits for the learner (step_open); crossing into the next lesson is always open.
bool next_step_open(const LessonLibrary& lib, ViewState& v);

// What `flashsim-app --tour` prints and counts (the smoke test reads these lines).
struct TourLog {
    int rendered = 0;
    std::vector<std::string> failed;  // "lesson ID step K/N (why)"
    // Record step `step` (0-based) of lesson L, shown in `panel`; `error` empty when it rendered.
    // Returns its line: "tour: lesson ID step K/N view PANEL", plus " FAILED: why" on failure; a
    // lesson that failed to load has no steps: "tour: lesson FILE FAILED: why".
    std::string step_done(const LessonDoc& L, int step, Panel panel, const std::string& error);
    // "tour: rendered R of T steps of L lessons" (T: the steps tried, each failed lesson one)
    std::string summary(size_t lessons) const;
    // Text that step `step` of lesson L drew cut by its clip rectangle (cut_text.hpp): returns
    // "tour: clipped lesson ID step K/N view PANEL: 'text'" and counts it.
    std::vector<std::string> cut;  // "lesson ID step K/N: 'text'"
    std::string clipped(const LessonDoc& L, int step, Panel panel, const std::string& text);
    // "" when every step rendered and no text was cut; else "the tour could not render N step(s):
    // lesson ... (why); ..." and/or "N line(s) of text cut ..., the first in lesson ID step K/N: 'text'"
    std::string failures() const;
};

}  // namespace viz
