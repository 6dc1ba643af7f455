#include "viz/exercise.hpp"

#include <algorithm>
#include <cctype>
#include <exception>

#include "lessons/lib/lesson.hpp"

namespace viz {

bool step_open(const ExerciseDoc* ex, const ExerciseState& st, int step) {
    if (!ex || !ex->predict || step <= 0) return true;
    return st.answered || st.skipped;
}

int exercise_step(const ExerciseDoc& ex, int steps) { return ex.predict ? 0 : std::max(0, steps - 1); }

std::string answer_format(const ExerciseDoc& ex) {
    if (ex.predict) return "a number (e.g. 1.5e6)";
    std::string f;
    for (const auto& k : ex.fields) f += (f.empty() ? "" : ", ") + k + "=...";
    return f;
}

ExerciseState submit_answer(const ExerciseDoc& ex, ExerciseState st) {
    st.message.clear();
    std::string text = st.typed;
    text.erase(std::remove_if(text.begin(), text.end(), [](unsigned char c) { return std::isspace(c); }), text.end());
    if (text.empty()) {
        st.message = "Type your answer first: " + answer_format(ex) + ".";
        return st;
    }
    if (!ex.lesson) {
        st.message = "This exercise cannot be checked here (its lesson did not load).";
        return st;
    }
    // a bare number is a prediction's value
    if (ex.predict && text.find('=') == std::string::npos) text = "value=" + text;
    std::map<std::string, std::string> answer;
    try {
        answer = lessons::parse_answer(text);
    } catch (const std::exception& e) {
        st.message = std::string(e.what()) + " Type " + answer_format(ex) + ".";
        return st;
    }
    const lessons::AnswerResult r = lessons::check_answer(*ex.lesson, answer);
    st.message = r.message;
    if (!r.valid) return st;  // refused: not an answer yet (the message says why)
    st.answered = true;
    st.passed = r.passed;
    return st;
}

}  // namespace viz
