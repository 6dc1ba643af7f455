// lessons/lib/exercise.cpp — checks: a lesson's expectations against its computed values, and an
// exercise's answers (parsed, simulated, the goal evaluated with the answer bound as "answer").
#include <cmath>
#include <sstream>

#include "lessons/lib/internal.hpp"
#include "report/report.hpp"

namespace lessons {

using detail::config_json;
using detail::ExprError;
using detail::join;
using detail::lookup_in;
using detail::Missing;
using detail::num_text;
using detail::Value;
using nlohmann::json;

// ---------------------------------------------------------------- [expectations]
std::vector<std::string> check_expectations(const Lesson& lesson) {
    std::vector<std::string> fails;
    for (const auto& st : lesson.steps)
        for (const auto& e : st.expect) {
            const std::string at = lesson.file + ":" + std::to_string(e.line) + ":" + std::to_string(e.column) + ": ";
            double v = 0;
            try {
                const Value x = detail::eval_expr(
                    e.expr, [&](const std::string& p) { return lookup_in(*lesson.context, nullptr, p); });
                if (!x.is_number) {
                    fails.push_back(at + "expect '" + e.expr + "': the value is text, not a number");
                    continue;
                }
                v = x.num;
            } catch (const Missing&) {
                continue;  // e.g. no measurement recorded: nothing to check
            } catch (const ExprError& x) {
                fails.push_back(at + "expect '" + e.expr + "': " + x.what());
                continue;
            }
            std::string why;
            if (e.value) {
                const double tol = std::max(e.abs_tol, e.rel_tol * std::abs(*e.value));
                if (!(std::abs(v - *e.value) <= tol))
                    why = "expected " + num_text(*e.value) + " +- " + num_text(tol) + ", got " + num_text(v);
            }
            if (why.empty() && e.at_least && !(v >= *e.at_least))
                why = "expected at least " + num_text(*e.at_least) + ", got " + num_text(v);
            if (why.empty() && e.at_most && !(v <= *e.at_most))
                why = "expected at most " + num_text(*e.at_most) + ", got " + num_text(v);
            if (!why.empty())
                fails.push_back(at + "expect '" + e.expr + "': " + why + (e.note.empty() ? "" : " (" + e.note + ")"));
        }
    if (lesson.exercise) {
        const Exercise& ex = *lesson.exercise;
        const std::string at = lesson.file + ": [exercise] ";
        const AnswerResult good = check_answer(lesson, parse_answer(ex.solution));
        if (!good.passed)
            fails.push_back(at + "solution '" + ex.solution + "' does not meet the goal: " + good.message);
        if (!ex.not_solution.empty()) {
            const AnswerResult bad = check_answer(lesson, parse_answer(ex.not_solution));
            if (bad.passed)
                fails.push_back(at + "not_solution '" + ex.not_solution + "' meets the goal: " + bad.message);
        }
    }
    return fails;
}

// ---------------------------------------------------------------- [answers]
sim::Result simulate_config(const Lesson& lesson, const std::string& name) {
    auto it = lesson.configs.find(name);
    if (it == lesson.configs.end())
        throw LoadError(lesson.file, 0, 0,
                        "no configuration named '" + name + "' (defined: " + join(lesson.config_order) + ")");
    try {
        return sim::simulate(it->second.problem, sim::find_machine(it->second.gpu), it->second.config);
    } catch (const sim::Error& e) { throw LoadError(lesson.file, 0, 0, "[config." + name + "]: " + e.what()); }
}

std::map<std::string, std::string> parse_answer(const std::string& text) {
    std::map<std::string, std::string> out;
    std::stringstream ss(text);
    std::string item;
    while (std::getline(ss, item, ',')) {
        auto trim = [](std::string x) {
            while (!x.empty() && std::isspace(static_cast<unsigned char>(x.back()))) x.pop_back();
            size_t a = 0;
            while (a < x.size() && std::isspace(static_cast<unsigned char>(x[a]))) ++a;
            return x.substr(a);
        };
        item = trim(item);
        if (item.empty()) continue;
        const size_t eq = item.find('=');
        if (eq == std::string::npos)
            throw LoadError("--answer", 0, 0,
                            "'" + item + "' is not NAME=VALUE (write e.g. block_rows=64,block_cols=128)");
        const std::string k = trim(item.substr(0, eq)), v = trim(item.substr(eq + 1));
        if (k.empty() || v.empty()) throw LoadError("--answer", 0, 0, "'" + item + "' needs a name and a value");
        if (out.count(k)) throw LoadError("--answer", 0, 0, "'" + k + "' is given twice");
        out[k] = v;
    }
    if (out.empty()) throw LoadError("--answer", 0, 0, "the answer is empty (write e.g. block_rows=64,block_cols=128)");
    return out;
}

AnswerResult check_answer(const Lesson& lesson, const std::map<std::string, std::string>& answer) {
    AnswerResult res;
    if (!lesson.exercise || !lesson.context) {
        res.message = "lesson '" + lesson.id + "' has no exercise";
        return res;
    }
    const Exercise& ex = *lesson.exercise;
    const Context& ctx = *lesson.context;
    // Hints whose condition holds for this answer, as one paragraph each.
    auto hints_for = [&](const json& aj) {
        std::string out;
        for (const auto& h : ex.hints) {
            bool holds = false;
            try {
                holds = detail::condition_holds(ctx, aj, h);
            } catch (const std::exception&) {}
            if (holds) out += "\n\nHint: " + detail::render_with_answer(ctx, aj, h.text);
        }
        return out;
    };
    if (!ex.predict.empty()) {
        auto it = answer.find("value");
        if (answer.size() != 1 || it == answer.end()) {
            res.message = "answer with one number: value=...";
            return res;
        }
        double x = 0;
        try {
            size_t used = 0;
            x = std::stod(it->second, &used);
            if (used != it->second.size() || !std::isfinite(x)) throw std::invalid_argument("x");
        } catch (const std::exception&) {
            res.message = "'value' must be a number, got '" + it->second + "'";
            return res;
        }
        const double truth = evaluate(lesson, ex.predict);
        // A count, a size, a time or a factor asked for is positive: a negative or zero prediction is
        // not a guess at it, so it is refused with the reason, not scored as "off by a factor of -1".
        if (truth > 0 && !(x > 0)) {
            res.message =
                "'value' must be a positive number: the quantity asked for is positive (got " + num_text(x) + ")";
            return res;
        }
        res.valid = true;
        res.goal_value = x;
        res.passed = std::abs(x - truth) <= ex.tolerance * std::abs(truth);
        const json aj = {{"value", x}, {"ratio", truth != 0 ? x / truth : 0.0}};
        std::ostringstream o;
        o << "You said " << num_text(x) << "; the simulator computes " << num_text(truth);
        if (res.passed)
            o << ": right (within " << num_text(ex.tolerance * 100) << "%).";
        else {
            const std::string hints = hints_for(aj);
            o << ": off by a factor of " << num_text(truth != 0 ? x / truth : 0.0) << " (a pass is within "
              << num_text(ex.tolerance * 100) << "%)." << hints;
            // Every wrong answer gets words, not only the slips a lesson foresaw.
            if (hints.empty())
                o << "\n\nHint: your number is " << (x > truth ? "too large" : "too small") << " by a factor of "
                  << num_text(x > truth ? x / truth : truth / x)
                  << "; no common slip gives that. Recount from the lesson's shape: what is read or written,"
                     " how many times, and how many bytes an element.";
        }
        res.message = o.str();
        return res;
    }
    ConfigSpec c = lesson.configs.at(ex.base);
    auto parse_int = [](const std::string& k, const std::string& v, int64_t& out) -> std::string {
        if (!v.empty() && v[0] == '-')
            return "'" + k + "' must be positive: a size cannot be negative, got '" + v + "'";
        if (v.empty() || v.size() > 12 || v.find_first_not_of("0123456789") != std::string::npos)
            return "'" + k + "' must be a positive whole number, got '" + v + "'";
        out = std::stoll(v);
        if (out < 1) return "'" + k + "' must be at least 1: a size of " + v + " holds nothing";
        return {};
    };
    // Tiles the tensor cores can multiply: an mma instruction takes 16 rows (and 16 keys) at a time, so
    // a block edge that is not a multiple of 16 leaves part of every instruction idle. The simulator
    // would count such a block, but no kernel runs it; refusing it keeps the exercises about real tiles.
    constexpr int64_t kMmaTile = 16;
    auto tile_multiple = [&](const std::string& k, int64_t value) -> std::string {
        if (value % kMmaTile == 0) return {};
        const int64_t lo = value / kMmaTile * kMmaTile, hi = lo + kMmaTile;
        return "'" + k + "' = " + std::to_string(value) + " is not a multiple of " + std::to_string(kMmaTile) +
               ", the tensor cores' tile edge; try " + (lo > 0 ? std::to_string(lo) + " or " : "") + std::to_string(hi);
    };
    for (const auto& [k, v] : answer) {
        if (std::find(ex.fields.begin(), ex.fields.end(), k) == ex.fields.end()) {
            res.message = "you may set only: " + join(ex.fields) + " (got '" + k + "')";
            return res;
        }
        std::string err;
        if (k == "algo") {
            const auto a = sim::parse_algo(v);
            if (!a)
                err = "'algo' must be standard, flash1 or flash2, got '" + v + "'";
            else
                c.config.algo = *a;
        } else if (k == "dtype") {
            const auto d = sim::parse_dtype(v);
            if (!d)
                err = "'dtype' must be fp16, bf16 or fp32, got '" + v + "'";
            else
                c.problem.dtype = *d;
        } else if (k == "block_rows") {
            err = parse_int(k, v, c.config.block_rows);
            if (err.empty()) err = tile_multiple(k, c.config.block_rows);
        } else if (k == "block_cols") {
            err = parse_int(k, v, c.config.block_cols);
            if (err.empty()) err = tile_multiple(k, c.config.block_cols);
        } else if (k == "sram")
            err = parse_int(k, v, c.config.sram_bytes);
        else if (k == "seq")
            err = parse_int(k, v, c.problem.seq);
        else if (k == "head_dim")
            err = parse_int(k, v, c.problem.head_dim);
        if (!err.empty()) {
            res.message = err;
            return res;
        }
    }
    c.config.numerics = sim::Numerics::off;
    c.config.event_cap = 1;
    try {
        const sim::Machine& m = sim::find_machine(c.gpu);
        const int64_t sram = c.config.sram_bytes > 0 ? c.config.sram_bytes : m.sram_bytes;
        const sim::BlockChoice bc =
            sim::choose_blocks(c.problem, c.config.algo, sram, c.config.block_rows, c.config.block_cols);
        const double steps = std::ceil(double(c.problem.seq) / double(bc.block_rows)) *
                             std::ceil(double(c.problem.seq) / double(bc.block_cols));
        if (steps > double(detail::limits().max_tile_steps) * 16) {
            res.message = "blocks of " + std::to_string(bc.block_rows) + " x " + std::to_string(bc.block_cols) +
                          " make " + report::group_digits(int64_t(steps)) +
                          " tile steps; try larger blocks (they would also move far more bytes)";
            return res;
        }
        res.result = sim::simulate(c.problem, m, c.config);
    } catch (const sim::Error& e) {
        res.message = std::string("the simulator refuses this answer: ") + e.what();
        return res;
    }
    res.valid = true;
    const json aj = config_json(*res.result);
    try {
        const Value v =
            detail::eval_expr(ex.goal_expr, [&](const std::string& p) { return lookup_in(*lesson.context, &aj, p); });
        res.goal_value = v.num;
    } catch (const std::exception& e) {
        res.valid = false;
        res.message = std::string("the goal could not be evaluated: ") + e.what();
        return res;
    }
    for (const auto& r : ex.requires_) {
        bool holds = false;
        try {
            holds = detail::condition_holds(ctx, aj, r);
        } catch (const std::exception&) {}
        if (!holds) {
            res.valid = false;
            res.message = "This answer is refused: " + detail::render_with_answer(ctx, aj, r.text);
            return res;
        }
    }
    res.passed = (!ex.goal_at_most || res.goal_value <= *ex.goal_at_most) &&
                 (!ex.goal_at_least || res.goal_value >= *ex.goal_at_least);
    std::ostringstream o;
    o << "B_r = " << res.result->block_rows << ", B_c = " << res.result->block_cols << ", "
      << sim::algo_name(res.result->algo) << ": HBM traffic "
      << report::human_bytes(static_cast<double>(res.result->totals.hbm_total().total())) << ", SRAM "
      << report::human_bytes(static_cast<double>(res.result->sram_peak_bytes)) << " of "
      << report::human_bytes(static_cast<double>(res.result->sram_bytes)) << ". Goal";
    // the goal in words when the lesson gives them, then the computed value against the bound
    if (!ex.goal_text.empty()) o << " (" << ex.goal_text << ")";
    o << ": " << ex.goal_expr << " = " << num_text(res.goal_value);
    if (ex.goal_at_most) o << " (must be <= " << num_text(*ex.goal_at_most) << ")";
    if (ex.goal_at_least) o << " (must be >= " << num_text(*ex.goal_at_least) << ")";
    o << (res.passed ? ": met." : ": not met yet.");
    if (!res.passed) {
        const std::string hints = hints_for(aj);
        o << hints;
        if (hints.empty())
            o << "\n\nHint: no common slip matches these blocks; compare what each loop re-reads with your "
                 "blocks and the lesson's, and move B_r or B_c in the direction that re-reads less.";
    }
    res.message = o.str();
    return res;
}

}  // namespace lessons
