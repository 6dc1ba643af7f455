// viz/exercise.hpp — a lesson's exercise as the app asks it (GL-free, unit-tested in tests/viz): a
// prediction the learner types before the steps that reveal its number, or a design checked at the
// lesson's last step. Answers go through the lessons library (lessons::check_answer), the same check
// as `flashsim lesson ID --answer`.
#pragma once
#include <memory>
#include <string>
#include <string_view>
#include <vector>

namespace lessons {
struct Lesson;
}

namespace viz {

struct DesignRun;  // viz/design_run.hpp

struct ExerciseDoc {
    bool predict = false;                           // a prediction (value=...) rather than a design (fields)
    std::string prompt;                             // rendered
    std::vector<std::string> fields;                // what the answer sets: "value", or "block_rows", "block_cols", ...
    std::shared_ptr<const lessons::Lesson> lesson;  // what checks the answer
};

struct ExerciseState {
    std::string typed;      // the answer field's text (kept across frames)
    bool answered = false;  // a valid answer was checked (met its goal or not)
    bool passed = false;
    bool skipped = false;  // the learner chose to read on without predicting
    std::string message;   // the check's paragraph, or what is wrong with the typed text
    // A design's checked answer as a run of its own beside the exercise's base (null for a prediction,
    // a refused answer, or a base that would not simulate).
    std::shared_ptr<const DesignRun> design;
};

// A prediction locks the steps after the first until the learner has made one (right or wrong) or
// chosen to skip it; a design exercise and a lesson without one lock nothing.
bool step_open(const ExerciseDoc* ex, const ExerciseState& st, int step);

// The step that shows the exercise: the first for a prediction, the last for a design.
int exercise_step(const ExerciseDoc& ex, int steps);

// Checks `st.typed`: for a prediction a number ("3.2e7") or "value=3.2e7", for a design
// "field=value, field=value". Never throws: bad text leaves answered false and says what is wrong.
ExerciseState submit_answer(const ExerciseDoc& ex, ExerciseState st);

// What to type, e.g. "block_rows=..., block_cols=..." or "a number".
std::string answer_format(const ExerciseDoc& ex);

// A prediction as the learner types it: "41943040", "41,943,040", "4.2e7", "40 MiB", "2 GiB",
// "3 MB" (KiB/MiB/GiB/TiB count 1024s, kB/MB/GB/TB 1000s; B is bytes). Returns "" and sets `out`,
// or a sentence saying what is wrong; 0 and negative numbers are refused (nothing is moved 0 times).
std::string parse_prediction(std::string_view text, double& out);
// x with thousands separators: 41943040 -> "41,943,040", 0.0125 -> "0.0125", 1.5e12 -> "1,500,000,000,000".
std::string grouped(double x);
// How far a prediction is from the truth, in words: "about 34,000 times too small", "about 2.9 times
// too large", "about 12% too large" (truth and said both > 0).
std::string how_far(double said, double truth);
// A message from the lesson checker in the learner's words: command-line flags named as the
// fields they set ("--block-rows" -> "block_rows"), long whole numbers grouped in thousands.
std::string learner_words(std::string_view message);

}  // namespace viz
