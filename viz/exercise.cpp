#include "viz/exercise.hpp"

#include <algorithm>
#include <cctype>
#include <cmath>
#include <cstdio>
#include <exception>
#include <utility>

#include "lessons/lib/lesson.hpp"
#include "viz/design_run.hpp"

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

std::string grouped(double x) {
    if (!std::isfinite(x)) return "?";
    const double a = std::abs(x);
    if (a < 1000) {
        char b[32];
        std::snprintf(b, sizeof b, "%.4g", x);
        return b;
    }
    // a large number: its whole part, in groups of three digits
    char b[64];
    std::snprintf(b, sizeof b, "%.0f", a);
    std::string digits = b, out;
    for (size_t i = 0; i < digits.size(); ++i) {
        if (i && (digits.size() - i) % 3 == 0) out += ',';
        out += digits[i];
    }
    return (x < 0 ? "-" : "") + out;
}

std::string how_far(double said, double truth) {
    const double r = said / truth;
    const bool large = r > 1;
    const double f = large ? r : 1 / r;
    const std::string dir = large ? " too large" : " too small";
    char b[32];
    if (f < 1.5) {
        std::snprintf(b, sizeof b, "%.0f%%", (large ? r - 1 : 1 - r) * 100);
        return "about " + std::string(b) + dir;
    }
    if (f < 10) {
        std::snprintf(b, sizeof b, "%.1f", f);
        return "about " + std::string(b) + " times" + dir;
    }
    // two significant digits: 33,554 -> 34,000; 12.3 -> 12
    const double mag = std::pow(10.0, std::floor(std::log10(f)) - 1);
    return "about " + grouped(std::round(f / mag) * mag) + " times" + dir;
}

std::string parse_prediction(std::string_view text, double& out) {
    std::string t;
    for (char c : text)
        if (!std::isspace(static_cast<unsigned char>(c)) && c != ',' && c != '_') t += c;  // 41,943,040 and 40 MiB
    if (t.empty()) return "Type a number first.";
    size_t used = 0;
    double x = 0;
    try {
        x = std::stod(t, &used);
    } catch (const std::exception&) { used = 0; }
    if (used == 0 || !std::isfinite(x)) {
        std::string m = "'";
        m.append(text);
        m.append("' is not a number: type digits, e.g. 41943040, 4.2e7 or 40 MiB.");
        return m;
    }
    std::string unit = t.substr(used), low;
    for (char c : unit) low += static_cast<char>(std::tolower(static_cast<unsigned char>(c)));
    const std::pair<const char*, double> units[] = {{"", 1},
                                                    {"b", 1},
                                                    {"bytes", 1},
                                                    {"kib", 1024.0},
                                                    {"mib", 1048576.0},
                                                    {"gib", 1073741824.0},
                                                    {"tib", 1099511627776.0},
                                                    {"kb", 1e3},
                                                    {"mb", 1e6},
                                                    {"gb", 1e9},
                                                    {"tb", 1e12}};
    double scale = 0;
    for (const auto& [name, s] : units)
        if (low == name) scale = s;
    if (scale == 0)
        return std::string(1, '\'') + unit +
               "' is not a unit the answer knows: type bytes as a number, or with KiB, MiB, GiB (1024s) "
               "or kB, MB, GB (1000s).";
    x *= scale;
    if (x <= 0) return "A prediction must be more than 0: type how many you expect.";
    out = x;
    return {};
}

std::string learner_words(std::string_view message) {
    std::string out;
    for (size_t i = 0; i < message.size();) {
        // "--block-rows" -> "block_rows" (a flag of the command line, named as the field it sets)
        if (message.compare(i, 2, "--") == 0 && i + 2 < message.size() &&
            std::isalpha(static_cast<unsigned char>(message[i + 2]))) {
            i += 2;
            while (i < message.size() && (std::isalnum(static_cast<unsigned char>(message[i])) || message[i] == '-'))
                out += message[i] == '-' ? '_' : message[i], ++i;
            continue;
        }
        // a whole number of five or more digits, not inside a word or a decimal: grouped
        if (std::isdigit(static_cast<unsigned char>(message[i])) &&
            (i == 0 || !(std::isalnum(static_cast<unsigned char>(message[i - 1])) || message[i - 1] == '.'))) {
            size_t j = i;
            while (j < message.size() && std::isdigit(static_cast<unsigned char>(message[j]))) ++j;
            const bool plain = j == message.size() || !(std::isalpha(static_cast<unsigned char>(message[j])) ||
                                                        message[j] == '.' || message[j] == 'e');
            if (plain && j - i >= 5) {
                out += grouped(std::stod(std::string(message.substr(i, j - i))));
                i = j;
                continue;
            }
            out.append(message.substr(i, j - i));
            i = j;
            continue;
        }
        out += message[i++];
    }
    return out;
}

namespace {
// A prediction, parsed and judged here (units, separators, the verdict in words); the lesson's
// checker still decides pass or fail and gives its hints.
ExerciseState submit_prediction(const ExerciseDoc& ex, ExerciseState st) {
    std::string text = st.typed;
    if (const size_t eq = text.find('='); eq != std::string::npos) text = text.substr(eq + 1);  // "value=..."
    double x = 0;
    if (std::string err = parse_prediction(text, x); !err.empty()) {
        st.message = err;
        return st;
    }
    char b[40];
    std::snprintf(b, sizeof b, "%.17g", x);
    const lessons::AnswerResult r = lessons::check_answer(*ex.lesson, {{"value", b}});
    if (!r.valid) {
        st.message = learner_words(r.message);
        return st;
    }
    const lessons::Exercise& e = *ex.lesson->exercise;
    const double truth = lessons::evaluate(*ex.lesson, e.predict);
    std::string hints;
    if (const size_t h = r.message.find("\n\nHint:"); h != std::string::npos) hints = r.message.substr(h);
    char tol[16];
    std::snprintf(tol, sizeof tol, "%g", e.tolerance * 100);
    st.message = "You said " + grouped(x) + "; the simulator computes " + grouped(truth) +
                 (r.passed    ? ": right (within " + std::string(tol) + "%)."
                  : truth > 0 ? ": " + how_far(x, truth) + " (a pass is within " + std::string(tol) + "%)."
                              : ".") +
                 learner_words(hints);
    st.answered = true;
    st.passed = r.passed;
    return st;
}
}  // namespace

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
    if (ex.predict) return submit_prediction(ex, std::move(st));
    std::map<std::string, std::string> answer;
    try {
        answer = lessons::parse_answer(text);
    } catch (const std::exception&) {
        st.message = "Write each choice as name=value, separated by commas: " + answer_format(ex) + ".";
        return st;
    }
    const lessons::AnswerResult r = lessons::check_answer(*ex.lesson, answer);
    st.message = learner_words(r.message);
    st.design.reset();
    if (!r.valid) return st;  // refused: not an answer yet (the message says why)
    st.answered = true;
    st.passed = r.passed;
    if (r.result) try {
            st.design = std::make_shared<const DesignRun>(make_design_run(*ex.lesson, *r.result));
        } catch (const std::exception&) {}  // the base would not simulate: the verdict stands alone
    return st;
}

}  // namespace viz
