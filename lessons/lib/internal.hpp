// lessons/lib/internal.hpp — what the library's files share; not part of its interface (the
// command and the app use lesson.hpp). Nothing here names TOML: parse.cpp alone reads the file
// format and hands plain values (names, numbers, positions) to the rest.
//
//   parse.cpp     TOML to the Lesson's parts; drives the others while a lesson loads
//   context.cpp   the computed values placeholders look up (configurations, machine, softmax,
//                 error, measured) and the lookup itself
//   render.cpp    placeholders and filters in prose, paragraphs; evaluate() and render()
//   exercise.cpp  expectations, answers to an exercise and their check
//   directory.cpp the lessons directory: load_all(), lessons_dir()
#pragma once
#include <algorithm>
#include <cstdint>
#include <map>
#include <nlohmann/json.hpp>
#include <set>
#include <string>
#include <vector>

#include "lessons/lib/expr.hpp"
#include "lessons/lib/lesson.hpp"
#include "sim/decode.hpp"
#include "sim/fp8_attention.hpp"
#include "sim/ring.hpp"
#include "sim/simulate.hpp"

namespace lessons {

struct Context {
    nlohmann::json root = nlohmann::json::object();  // config names, "machine", "softmax", "error", "measured"
    std::set<std::string> missing_roots;             // e.g. "measured.flash2_fwd": legitimately absent
    std::map<std::string, std::string> missing_why;  // why a missing root is absent, where not measured.status
};

namespace detail {

// A 1-based line and column in the lesson file.
struct Pos {
    int64_t line = 0, column = 0;
};

// The raw file, to turn an offset inside a string value back into a line and column.
struct Source {
    std::string file;
    std::string text;
    std::vector<size_t> line_start;  // byte offset of each line (0-based lines)

    explicit Source(std::string f, std::string t) : file(std::move(f)), text(std::move(t)) {
        line_start.push_back(0);
        for (size_t i = 0; i < text.size(); ++i)
            if (text[i] == '\n') line_start.push_back(i + 1);
    }
    // Byte offset of a 1-based (line, column) where columns count UTF-8 code points.
    size_t offset(Pos p) const {
        if (p.line < 1 || static_cast<size_t>(p.line) > line_start.size()) return text.size();
        size_t o = line_start[static_cast<size_t>(p.line - 1)];
        for (int64_t c = 1; c < p.column && o < text.size() && text[o] != '\n'; ++c) {
            ++o;
            while (o < text.size() && (static_cast<unsigned char>(text[o]) & 0xC0) == 0x80) ++o;
        }
        return o;
    }
    Pos pos(size_t off) const {
        off = std::min(off, text.size());
        auto it = std::upper_bound(line_start.begin(), line_start.end(), off);
        const size_t line = static_cast<size_t>(it - line_start.begin());  // 1-based
        int64_t col = 1;
        for (size_t i = line_start[line - 1]; i < off; ++i)
            if ((static_cast<unsigned char>(text[i]) & 0xC0) != 0x80) ++col;
        return {static_cast<int64_t>(line), col};
    }
    [[noreturn]] void fail(Pos p, const std::string& msg) const { throw LoadError(file, p.line, p.column, msg); }
};

// "a, b, c"
std::string join(const std::vector<std::string>& v);
// A number as messages show it (%.10g).
std::string num_text(double x);

// ---------------------------------------------------------------- context.cpp
// Simulate one configuration of a lesson (refusing loops too long to walk at load time); a
// refusal fails at `pos` in the simulator's words with the lesson's key names.
sim::Result simulate_at_load(const Source& s, Pos pos, const ConfigSpec& c);
// What a configuration contributes to the context: the simulator's JSON plus a few derived views.
nlohmann::json config_json(const sim::Result& r);
// Every machine preset under "machine", its name with '-' written as '_'.
void add_machines(Context& ctx);
// "softmax": the example streamed in its precision and the other one; a refusal fails at `pos`.
void add_softmax(const Source& s, Pos pos, const SoftmaxExample& ex, Context& ctx);

// One [error.NAME] comparison: `actual` (a config name) against `expected` ("reference",
// "reference:CONFIG" or a config name), with where each is written.
struct ErrorSpec {
    std::string name, actual, expected;
    Pos at_table, at_actual, at_expected;
};
// The result of config `cfg`, which must have an output (numerics on); fails at `pos` otherwise.
const sim::Result& output_of(const Source& s, const std::string& where, const std::string& cfg, Pos pos,
                             const std::map<std::string, sim::Result>& results);
void add_error(const Source& s, const ErrorSpec& e, const std::map<std::string, sim::Result>& results,
               const std::map<std::string, ConfigSpec>& configs, Context& ctx);

// One [measured.NAME] entry: which row of the recorded bench results it names.
struct MeasuredSpec {
    // mode: a kernel's non-default mode the row was measured in (e.g. "deterministic"); "" matches
    // only rows without one
    std::string name, variant, pass = "forward", dtype, mode;
    int64_t seq = -1, head_dim = -1;  // -1: any (only where `file` is set; h200/bench.json rows need both)
    bool causal = false;
    // file: a results file beside h200/bench.json (e.g. "h200/decode.json"); "" is h200.json. The other
    // keys match only when set (-1: any): rows of the decode and fit files differ in these.
    std::string file;
    int64_t batch = -1, heads = -1, kv_len = -1;
};
// "measured": the status of the results file beside the lessons and each named row found in it;
// a row not found (or no file) makes its name legitimately absent.
void add_measured(const std::string& lesson_file, const std::vector<MeasuredSpec>& specs, Context& ctx);

// One [ceiling.NAME] entry: a ceiling measured by `flashsim bench --ceilings` (NAME as the file
// calls it, e.g. "smem_read"), read from `file` beside h200/bench.json (default h200/ceilings.json).
struct CeilingSpec {
    std::string name, file = "h200/ceilings.json";
    Pos pos;  // where the table is written
};
// "ceiling.NAME": value, unit, method, measured_on, source. An absent file makes the name
// legitimately absent (rendered n/a); a file that does not hold the ceiling, or holds it without a
// positive value, fails at spec.pos naming the ceilings it has.
void add_ceiling(const Source& s, const std::string& lesson_file, const CeilingSpec& spec, Context& ctx);

// [footprint.NAME], [fit.NAME], [decode.NAME]: the simulator's memory model and its decoding, each
// a small shape (no tile walk): the HBM one attention layer holds, the longest N that fits a GPU,
// and one split-KV decode step. Parsed in parse.cpp; `pos` is where the table is written.
struct MemorySpec {
    enum Kind { kFootprint, kFit, kDecode, kRing, kKernel, kFp8 } kind = kFootprint;
    std::string name, gpu = "H200";
    Pos pos;
    sim::Problem shape;  // batch, heads, seq (footprint), head_dim, dtype
    sim::Algo algo = sim::Algo::flash2;
    sim::Pass pass = sim::Pass::forward;
    std::string kernel;   // footprint: a CUDA kernel's own buffers (empty: the algorithm's)
    double capacity = 0;  // fit: bytes (0: the preset's usable memory)
    sim::DecodeProblem decode;
    sim::DecodeConfig decode_config;
    sim::RingProblem ring;  // [ring.NAME]: ring attention over P GPUs (sim/ring.hpp)
    sim::Fp8Options fp8;    // [fp8.NAME]: the emulated FP8 forward's error (sim/fp8_attention.hpp)
    // [kernel.NAME]: the kernel model's prediction of `kernel`'s pass on `shape` (datasheet rates)
};
// Adds "footprint.NAME", "fit.NAME", "decode.NAME", "ring.NAME", "kernel.NAME" or "fp8.NAME"; a refusal by
// the simulator fails at spec.pos.
void add_memory(const Source& s, const MemorySpec& spec, Context& ctx);
// `figure2 = true`: adds "figure2", the paper's Figure 2 beside the model's (report::figure2_json).
void add_figure2(const Source& s, Pos pos, Context& ctx);

// Resolve a dotted path in the context; `answer` (an exercise's answer) binds the name "answer".
Value lookup_in(const Context& ctx, const nlohmann::json* answer, const std::string& path);

// ---------------------------------------------------------------- render.cpp
// Paragraphs: lines of one paragraph joined with a space, blank lines between paragraphs, lines
// that start with a space or tab kept as written.
std::string reflow(const std::string& text);
// Render `text` (a string value written at `node_pos` in the file); errors point at the placeholder.
std::string render_node_text(const Source& s, const Context& ctx, const std::string& text, Pos node_pos);
// Render `text` with `answer` bound to the name "answer" (an exercise's hints); a placeholder that
// cannot be evaluated renders as "?" (the loader has checked them against the base answer already).
std::string render_with_answer(const Context& ctx, const nlohmann::json& answer, const std::string& text);
// Does `c` hold for this answer? Throws on an expression that does not evaluate.
bool condition_holds(const Context& ctx, const nlohmann::json& answer, const AnswerCondition& c);

}  // namespace detail
}  // namespace lessons
