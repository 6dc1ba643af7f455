// lessons/lib/expr.hpp — the placeholder language of lesson prose (internal to the library; the
// fuzz target and the tests use it directly).
//
//   {{ expr }}  or  {{ expr | filter }}      e.g.  {{ standard.tensors.S.write_bytes | MiB }}
//
//   expr   := sum;  sum := product (('+'|'-') product)*;  product := unary (('*'|'/') unary)*
//   unary  := '-' unary | atom;  atom := number | path | func '(' expr (',' expr)* ')' | '(' expr ')'
//   path   := name ('.' (name | index))*     name: [A-Za-z_][A-Za-z0-9_]*, index: [0-9]+
//   func   := min | max | abs | sqrt | log2 | ceil | floor
//
// A path may name a string (e.g. standard.block_note); strings are only allowed alone.
#pragma once
#include <cstddef>
#include <functional>
#include <stdexcept>
#include <string>
#include <string_view>
#include <vector>

namespace lessons::detail {

struct Value {
    bool is_number = true;
    double num = 0;
    std::string str;
};

// A bad expression or filter; `pos` is the offset in the expression text where the problem is.
struct ExprError : std::runtime_error {
    size_t pos = 0;
    ExprError(const std::string& what, size_t at) : std::runtime_error(what), pos(at) {}
};

// A value that is legitimately absent (e.g. a measurement not recorded yet): rendered as "n/a",
// and expectations that need it are skipped.
struct Missing : std::runtime_error {
    using std::runtime_error::runtime_error;
};

// Resolves a dotted path; throws ExprError (pos 0 is fine: the caller adds the path's offset) or Missing.
using Lookup = std::function<Value(const std::string& path)>;

// Parse and evaluate. Division by zero and non-finite results are errors.
Value eval_expr(std::string_view expr, const Lookup& lookup);

// Every path an expression mentions, with its offset (for checking without values).
std::vector<std::pair<std::string, size_t>> expr_paths(std::string_view expr);

// Format a value: filter "" (default), "int", "fixed:N", "sig:N", "sci:N", "percent:N", "times:N"
// (alias "ratio:N"), "bytes", "KiB[:N]", "MiB[:N]", "GiB[:N]", "KB"/"MB"/"GB" (decimal), "TBps",
// "GBps", "TFLOPs", "flops", "ms:N", "us:N", "side" (a ratio to the roofline's ridge point: "left
// (memory-bound)" below 1, else "right (compute-bound)"), "str". Throws ExprError (pos in the filter) on an
// unknown filter, a bad argument, or a string given to a numeric filter.
std::string apply_filter(const Value& v, std::string_view filter);
bool filter_known(std::string_view filter, std::string* why);

struct Placeholder {
    size_t begin = 0, end = 0;  // [begin, end) covers "{{ ... }}" in the text
    std::string expr, filter;   // trimmed
    size_t expr_pos = 0;        // offset of expr in the text
    size_t filter_pos = 0;      // offset of the filter in the text (0 when none)
};
// Throws ExprError (pos in the text) on "{{" without "}}" or an empty placeholder.
std::vector<Placeholder> find_placeholders(std::string_view text);

// Limits that keep lesson loading fast (the app loads every lesson at start). The fuzz target
// lowers them; lessons and tests use the defaults.
struct Limits {
    int64_t max_tile_steps = int64_t{1} << 20;            // T_r x T_c of one head's loop
    double max_numerics_work = double(int64_t{1} << 28);  // B*H*N*N*d with numerics on
    bool allow_l2 = true;                                 // false: l2 = "auto"/"on" are simulated as "off"
};
Limits& limits();

}  // namespace lessons::detail
