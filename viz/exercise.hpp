// viz/exercise.hpp — a lesson's exercise as the app asks it (GL-free, unit-tested in tests/viz): a
// prediction the learner types before the steps that reveal its number, or a design checked at the
// lesson's last step. Answers go through the lessons library (lessons::check_answer), the same check
// as `flashsim lesson ID --answer`.
#pragma once
#include <memory>
#include <string>
#include <vector>

namespace lessons {
struct Lesson;
}

namespace viz {

struct ExerciseDoc {
    bool predict = false;             // a prediction (value=...) rather than a design (fields)
    std::string prompt;               // rendered
    std::vector<std::string> fields;  // what the answer sets: "value", or "block_rows", "block_cols", ...
    std::shared_ptr<const lessons::Lesson> lesson;  // what checks the answer
};

struct ExerciseState {
    std::string typed;     // the answer field's text (kept across frames)
    bool answered = false;  // a valid answer was checked (met its goal or not)
    bool passed = false;
    bool skipped = false;  // the learner chose to read on without predicting
    std::string message;   // the check's paragraph, or what is wrong with the typed text
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

}  // namespace viz
