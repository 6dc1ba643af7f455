// lessons/lib/lesson.hpp — lessons as data: load a lesson file (TOML), run the simulator for the
// configurations it names, and render every placeholder in its prose with computed numbers.
//
//   lessons/NN-name.toml ──► load_lesson() ──► Lesson (value type: text already rendered)
//                                 │
//                                 └─ sim::simulate(...) per [config.*], report::result_json(...)
//
// The format is described for teachers in docs/lessons.md. Nothing here includes UI headers: the
// desktop app and the CLI are both thin clients of this library.
#pragma once
#include <cstdint>
#include <map>
#include <memory>
#include <optional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"
#include "sim/softmax.hpp"

namespace lessons {

struct Context;  // computed values (lessons/lib/internal.hpp, context.cpp)

// Every loading problem: the file, the 1-based line and column of the offending text (0 when the
// problem is not tied to one place, e.g. an unreadable file) and what is wrong.
// what() is "file:line:column: message".
struct LoadError : std::runtime_error {
    std::string file;
    int64_t line = 0;
    int64_t column = 0;
    std::string message;  // without the location
    LoadError(std::string file, int64_t line, int64_t column, std::string message);
};

// What the app shows beside a step. Empty strings / -1 mean "leave as is / not applicable".
struct View {
    std::string panel;   // "memory", "softmax", "compare", "scores", "timeline", "charts", "measured", "ring", "text"
    std::string config;  // which [config.NAME] the panel shows ("" : the lesson's first)
    std::string algo;    // "standard", "flash1", "flash2" (that config's algorithm by default)
    std::vector<std::string> compare;  // configs shown side by side (panels "compare", "scores", "charts")
    int64_t step_from = -1;            // trace position: first inner-loop step shown (sim::Event::step)
    int64_t step_to = -1;              // last step shown, inclusive (== step_from: one position)
    int64_t row = -1;                  // highlighted query row (softmax panel: the recorded row)
    int64_t tile_row = -1;             // highlighted tile (row tile i, column tile j)
    int64_t tile_col = -1;
    std::string ring;    // panel "ring": the [ring.NAME] the ring view shows (its GPUs, layout, pass, problem)
    std::string decode;  // panel "decoding": the [decode.NAME] the decoding view shows (its shape, its splits)
    int64_t block = -1;  // panel "softmax": the key block it opens on, 1 = the first, as the panel numbers them
    std::string chart;   // panel "charts": "dram" (through the L2 model) or "paper" (HBM<->SRAM, the paper's count)
    // panel "measured": the rows it opens on (default: the shown config's pass, head dim and mask)
    std::string pass;  // "forward" or "backward"
    int64_t head_dim = -1;
    std::string mask;  // "none" or "causal"
    std::string file;  // a results file beside h200/bench.json to open on ("h200/ring.json"; default the largest)
};

// A value the test suite checks: the expression (placeholder syntax without filters, e.g.
// "standard.tensors.S.write_bytes / standard.hbm.total") must evaluate to `value` within
// max(abs_tol, rel_tol * |value|), or lie in [at_least, at_most] when those are given.
struct Expectation {
    std::string expr;
    std::optional<double> value;
    double abs_tol = 0;
    double rel_tol = 0;
    std::optional<double> at_least;
    std::optional<double> at_most;
    std::string note;              // why this holds (the independent derivation), shown on failure
    int64_t line = 0, column = 0;  // where it is written
};

struct Step {
    std::string title;
    std::string text;         // rendered: placeholders replaced by computed values
    std::string source_text;  // as written in the file (for editors)
    View view;
    std::vector<Expectation> expect;
    std::vector<std::string> terms;  // glossary terms this step defines or links (lessons/lib/glossary.hpp)
};

// One named simulator configuration of a lesson ([config.NAME]).
struct ConfigSpec {
    std::string name;
    sim::Problem problem;
    std::string gpu = "H200";  // machine preset name (sim::find_machine)
    sim::Config config;        // algorithm, blocks, SRAM budget, numerics
};

// An exercise (lesson 14 style): the learner chooses some of the fields of a base configuration;
// the simulator runs it and the goal (an expression over the answer's result) is checked.
// A condition on an exercise's answer (the answer's simulated result bound to "answer", or for a
// prediction {"value": what the learner typed, "ratio": value / the computed truth}): it holds when
// the expression lies in [at_least, at_most]. `text` may hold placeholders over "answer".
struct AnswerCondition {
    std::string expr;
    std::optional<double> at_least, at_most;
    std::string text;  // as written; rendered with the answer bound when shown
};

struct Exercise {
    std::string prompt;               // rendered
    std::string base;                 // config the answer starts from
    std::vector<std::string> fields;  // what the learner may set: "algo", "block_rows", "block_cols", ...
    std::string goal_expr;            // evaluated with the answer's result bound to the name "answer"
    std::optional<double> goal_at_most, goal_at_least;
    std::string goal_text;     // the goal in words (rendered)
    std::string solution;      // a worked answer that meets the goal (checked by the tests)
    std::string not_solution;  // optional: an answer that must not meet it (e.g. the base as is)
    // A prediction: the learner types `value=X` before the lesson shows the number; X passes when
    // within `tolerance` (relative) of the expression `predict`, evaluated in the lesson's context.
    std::string predict;
    double tolerance = 0.02;
    std::vector<AnswerCondition> requires_;  // each must hold, or the answer is refused (degenerate)
    std::vector<AnswerCondition> hints;      // shown when the answer misses and the condition holds
};

// The lesson's softmax example ([softmax]): one row of scores streamed in blocks, what the softmax
// panel shows (placeholders read its computed values under "softmax").
struct SoftmaxExample {
    std::vector<double> scores;
    int64_t block = 4;                        // scores per block
    std::vector<std::vector<double>> values;  // optional: one value vector (a row of V) per score
    sim::Precision precision = sim::Precision::fp32;
};

struct Lesson {
    std::string id;      // e.g. "online-softmax"
    int64_t number = 0;  // order in the list (1, 2, ...)
    std::string title;
    std::string summary;  // one line (rendered)
    std::string file;     // path it was loaded from
    std::map<std::string, ConfigSpec> configs;
    std::vector<std::string> config_order;  // names in file order
    std::vector<Step> steps;
    std::optional<Exercise> exercise;
    std::optional<SoftmaxExample> softmax;  // [softmax], when the lesson has one
    // The computed values placeholders look up (simulator results as JSON, softmax, machine,
    // measured). Opaque here; shared so a Lesson stays a cheap-to-copy value.
    std::shared_ptr<const Context> context;
};

// Load and render one lesson. Throws LoadError (file:line:column: message) on anything wrong:
// TOML syntax, unknown or missing keys, wrong types, a placeholder that names nothing, a filter
// that does not exist, a configuration the simulator refuses.
Lesson load_lesson(const std::string& path);
// Same from text in memory (`file` is used in error messages only).
Lesson load_lesson_text(const std::string& text, const std::string& file);

// Every *.toml in `dir`, sorted by file name. A file that fails to load gives an entry with its
// error instead of a lesson, so the app can show the error in the lesson's place.
struct Loaded {
    std::string file;
    std::optional<Lesson> lesson;
    std::string error;  // "file:line:column: message" when lesson is empty
};
std::vector<Loaded> load_all(const std::string& dir);
// One file, as load_all loads each (its error in the entry, never thrown).
Loaded load_file(const std::string& path);

// A lesson file's id, number and title, read without computing anything (no simulation, no
// rendering): what finding one lesson among many needs. Throws LoadError when the file cannot be
// read, is not TOML, or lacks them; load_lesson then says precisely what is wrong.
struct Header {
    std::string file, id, title;
    int64_t number = 0;
};
Header read_header(const std::string& path);
// The files of `dir` (*.toml, sorted by name), as load_all takes them. Throws LoadError when the
// directory cannot be listed.
std::vector<std::string> lesson_files(const std::string& dir);

// Where the lessons are: $FLASHSIM_LESSONS if set, else "lessons" next to the executable's
// ../../lessons (build/bin -> repo), else the source directory compiled in. Throws LoadError
// naming the places tried when none exists.
std::string lessons_dir();

// Check a loaded lesson's expectations against its computed values. Empty: all hold. Each
// failure is one line: "file:line:column: expect 'expr' = 16 +- 0, got 15.9 (note)".
std::vector<std::string> check_expectations(const Lesson& lesson);

// Evaluate an expression (placeholder syntax without filters, e.g. "standard.hbm.total /
// flash2.hbm.total") in the lesson's computed context. Throws LoadError (line 0) on a bad one.
double evaluate(const Lesson& lesson, const std::string& expr);
// Render text with {{ expr | filter }} placeholders in the lesson's context ("MiB", "fixed:2", ...).
std::string render(const Lesson& lesson, const std::string& text);
// The cells of one row of a table in a lesson's preformatted lines (its indentation removed): text
// separated by runs of two or more spaces; one space stays inside a cell, and a row indented further
// than its block starts with one empty cell. The terminal's layout (render) and the app's use it.
std::vector<std::string> table_cells(std::string_view row);

// The simulator result of one of the lesson's configurations (what the app's panels draw).
// Throws LoadError when the name is unknown.
sim::Result simulate_config(const Lesson& lesson, const std::string& config_name);

// Exercises. `answer` maps a field to its value as text, e.g. {{"block_rows","64"},{"algo","flash2"}}
// (the CLI's --answer "block_rows=64,algo=flash2" parses into this). Never throws: a malformed
// answer gives passed=false and a message saying what is wrong.
struct AnswerResult {
    bool passed = false;
    bool valid = false;     // the answer parsed and the simulator accepted it
    double goal_value = 0;  // the goal expression's value for this answer
    std::string message;    // one paragraph for the learner
    std::optional<sim::Result> result;
};
std::map<std::string, std::string> parse_answer(const std::string& text);  // throws LoadError on bad syntax
AnswerResult check_answer(const Lesson& lesson, const std::map<std::string, std::string>& answer);

}  // namespace lessons
