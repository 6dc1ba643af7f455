#include "viz/view_state.hpp"

#include "sim/problem.hpp"
#include "sim/softmax.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <string_view>
#include <limits>
#include <cctype>
#include <sstream>

namespace viz {

namespace {
constexpr std::array<std::string_view, kPanelCount> kNames = {"memory",  "compare",   "scores",   "timeline",
                                                              "softmax", "charts",    "measured", "ring",
                                                              "exact",   "footprint", "decoding", "roofline"};
constexpr std::array<std::string_view, kPanelCount> kTitles = {
    "Memory",   "Side by side", "Score matrix", "Timeline",  "Online softmax", "Charts",
    "Measured", "Ring of GPUs", "Exactness",    "Footprint", "Decoding",       "Roofline"};
}  // namespace

std::string_view panel_name(Panel p) { return kNames[static_cast<size_t>(p)]; }
std::string_view panel_title(Panel p) { return kTitles[static_cast<size_t>(p)]; }
std::optional<Panel> parse_panel(std::string_view s) {
    for (int i = 0; i < kPanelCount; ++i)
        if (kNames[static_cast<size_t>(i)] == s) return static_cast<Panel>(i);
    return std::nullopt;
}
std::optional<Panel> panel_of_key(int key) {
    for (int i = 0; i < kPanelCount; ++i)
        if (kPanelKeys[i] == key) return static_cast<Panel>(i);
    return std::nullopt;
}
char panel_key(Panel p) { return kPanelKeys[static_cast<size_t>(p)]; }

sim::Algo driver(const RunSet& rs, Panel p, sim::Algo shown, const std::array<bool, 3>& columns) {
    if (p != Panel::compare && p != Panel::scores) return shown;
    // the longest of the columns shown (all, if none is): the step bar counts a column on the screen
    const bool any = columns[0] || columns[1] || columns[2];
    std::optional<sim::Algo> best;
    for (sim::Algo a : kAlgos)
        if ((!any || columns[static_cast<size_t>(algo_index(a))]) &&
            (!best || rs.timeline(a).total_time() > rs.timeline(*best).total_time()))
            best = a;
    return *best;
}

int64_t last_step(const Timeline& tl) { return std::max<int64_t>(0, tl.steps_kept - 1); }

namespace {
// Numbers separated by commas, spaces, '|' or tabs; false (and `err`) on anything else. "-inf"
// (masked) only where `allow_masked`.
bool parse_numbers(std::string_view text, std::vector<double>& out, std::string& err, bool allow_masked) {
    std::string tok;
    auto flush = [&]() -> bool {
        if (tok.empty()) return true;
        std::string low = tok;
        std::transform(low.begin(), low.end(), low.begin(), [](unsigned char c) { return std::tolower(c); });
        if (allow_masked && (low == "-inf" || low == "-infinity")) {
            out.push_back(-std::numeric_limits<double>::infinity());
            tok.clear();
            return true;
        }
        size_t used = 0;
        double x = 0;
        try {
            x = std::stod(tok, &used);
        } catch (const std::exception&) { used = 0; }
        if (used != tok.size() || !std::isfinite(x)) {
            err = "'" + tok + "' is not a finite number" +
                  (allow_masked ? " (-inf masks a score); type numbers separated by commas"
                                : "; type numbers separated by commas");
            return false;
        }
        // The view computes in float32: a number beyond its range would turn into infinity there.
        if (std::abs(x) > static_cast<double>(std::numeric_limits<float>::max())) {
            err = "'" + tok + "' is too large: the view computes in float32, whose largest number is about 3.4e38; " +
                  "type a smaller number";
            return false;
        }
        out.push_back(x);
        tok.clear();
        return true;
    };
    for (char ch : text) {
        if (ch == ',' || ch == ' ' || ch == '|' || ch == '\t') {
            if (!flush()) return false;
        } else {
            tok += ch;
        }
    }
    return flush();
}

std::string number_text(double x) {
    std::ostringstream o;
    o << x;
    return o.str();
}
}  // namespace

std::string parse_softmax_input(std::string_view scores_text, std::string_view values_text, int block,
                                bool resize_values, SoftmaxInput& out) {
    if (block < 1) return "block size: at least 1 score a block, got " + std::to_string(block);
    std::vector<double> scores;
    if (std::string err; !parse_numbers(scores_text, scores, err, true)) return "scores: " + err;
    if (scores.empty()) return "scores: type at least one score";
    if (scores.size() > kMaxScores)
        return "scores: at most " + std::to_string(kMaxScores) + " fit the view; got " + std::to_string(scores.size());
    if (std::none_of(scores.begin(), scores.end(), [](double x) { return std::isfinite(x); }))
        return "scores: every score is -inf (masked); at least one must be a number";
    std::vector<std::vector<double>> values;
    {
        std::string err;
        size_t start = 0;
        while (start <= values_text.size()) {
            const size_t semi = values_text.find(';', start);
            const std::string_view row =
                values_text.substr(start, semi == std::string_view::npos ? std::string_view::npos : semi - start);
            std::vector<double> r;
            if (!parse_numbers(row, r, err, false)) return "values V: " + err;
            if (!r.empty()) values.push_back(std::move(r));
            if (semi == std::string_view::npos) break;
            start = semi + 1;
        }
    }
    std::string note;
    std::string vtext(values_text);
    if (!values.empty()) {
        for (size_t j = 0; j < values.size(); ++j)
            if (values[j].size() != values[0].size())
                return "values V: every row needs the same length as row 1 (" + std::to_string(values[0].size()) +
                       "); row " + std::to_string(j + 1) + " has " + std::to_string(values[j].size());
        if (values.size() != scores.size()) {
            if (!resize_values)
                return "values V: give one row of V per score (" + std::to_string(scores.size()) +
                       " rows, separated by ';'), got " + std::to_string(values.size());
            const size_t had = values.size();
            values.resize(scores.size(), std::vector<double>(values[0].size(), 0.0));
            note = had > scores.size()
                       ? "V cut to the first " + std::to_string(scores.size()) + " rows (it had " +
                             std::to_string(had) + ")"
                       : "V padded to " + std::to_string(scores.size()) + " rows: rows " + std::to_string(had + 1) +
                             "-" + std::to_string(scores.size()) + " are zeros";
            vtext.clear();
            for (size_t j = 0; j < values.size(); ++j) {
                if (j) vtext += "; ";
                for (size_t k = 0; k < values[j].size(); ++k) vtext += (k ? ", " : "") + number_text(values[j][k]);
            }
        }
    }
    out.scores = std::move(scores);
    out.values = std::move(values);
    out.block = block;
    out.values_text = std::move(vtext);
    out.note = std::move(note);
    return {};
}

std::vector<double> scores_for_sim(const std::vector<double>& scores) {
    std::vector<double> s = scores;
    for (double& x : s)
        if (std::isinf(x) && x < 0) x = kMaskedScore;
    return s;
}

bool apply_scores_text(ViewState& v, bool scores_edited) {
    SoftmaxInput in;
    if (std::string err = parse_softmax_input(v.scores_text, v.values_text, v.softmax_block, scores_edited, in);
        !err.empty()) {
        v.softmax_error = std::move(err);
        return false;
    }
    // The parse checks what the streamed softmax needs; should it still refuse, the input is refused
    // here (the last good one stays drawn) rather than a blank view.
    try {
        (void)sim::stream_softmax(scores_for_sim(in.scores), in.block, in.values, sim::Precision::fp32);
    } catch (const sim::Error&) {
        v.softmax_error = "these numbers cannot be streamed in float32; type smaller numbers";
        return false;
    }
    v.softmax_scores = std::move(in.scores);
    v.softmax_values = std::move(in.values);
    v.softmax_block_good = in.block;
    v.values_text = std::move(in.values_text);
    v.softmax_note = std::move(in.note);
    v.softmax_error.clear();
    return true;
}

SoftmaxStepShown softmax_step_shown(const sim::SoftmaxBlockState& b) {
    const double neg_inf = -std::numeric_limits<double>::infinity();
    auto masked = [](double m) { return !std::isfinite(m) || m <= kMaskedScore * 0.5; };
    // a masked accumulator is shown as zeros (each masked score has weight 0), at its own length
    auto shown = [](const std::vector<double>& x, bool zero) {
        std::vector<double> out = x;
        if (zero) std::fill(out.begin(), out.end(), 0.0);
        return out;
    };
    SoftmaxStepShown s;
    const bool before_masked = masked(b.running_max_before);
    s.masked_so_far = masked(b.running_max_after);
    s.nothing_carried = before_masked;
    s.m_before = before_masked ? neg_inf : b.running_max_before;
    s.l_before = before_masked ? 0.0 : b.running_sum_before;
    s.acc_before = shown(b.acc_before, before_masked);
    // e^(m_old - m_new) with m_old = -inf is 0; with both -inf nothing is rescaled (shown as 1)
    s.rescale = s.masked_so_far ? 1.0 : before_masked ? 0.0 : b.rescale;
    s.acc_rescaled = shown(b.acc_rescaled, before_masked);
    s.m_after = s.masked_so_far ? neg_inf : b.running_max_after;
    s.l_after = s.masked_so_far ? 0.0 : b.running_sum_after;
    s.acc_after = shown(b.acc_after, s.masked_so_far);
    return s;
}

double clock_of(const Timeline& tl, Cursor c) {
    if (tl.steps_kept == 0) return 0.0;
    const int64_t s = std::clamp<int64_t>(c.step, 0, last_step(tl));
    return tl.step_start[static_cast<size_t>(s)] + std::clamp(c.frac, 0.0, 1.0) * tl.duration(s);
}

Cursor cursor_at(const Timeline& tl, double t) {
    Cursor c;
    c.step = tl.step_at(t, &c.frac);
    return c;
}

void step_forward(ViewState& v, const Timeline& tl) {
    // A step shown half-done completes first; a complete one moves on.
    if (v.answer_hidden) return;
    if (v.cursor.frac < 1.0)
        v.cursor.frac = 1.0;
    else if (v.cursor.step < last_step(tl))
        v.cursor = {v.cursor.step + 1, 1.0};
    v.playing = false;
}

void step_back(ViewState& v, const Timeline& tl) {
    (void)tl;
    if (v.cursor.step > 0)
        v.cursor = {v.cursor.step - 1, 1.0};
    else
        v.cursor = {0, 0.0};
    v.playing = false;
}

void go_home(ViewState& v) {
    v.cursor = {0, 0.0};
    v.playing = false;
}

void go_end(ViewState& v, const Timeline& tl) {
    if (v.answer_hidden) return;
    v.cursor = {last_step(tl), 1.0};
    v.playing = false;
}

void scrub_to(ViewState& v, const Timeline& tl, int64_t step) {
    v.cursor = {std::clamp<int64_t>(step, 0, last_step(tl)), 1.0};
}

void user_scrub(ViewState& v, const Timeline& tl, int64_t step) {
    if (!v.answer_hidden) scrub_to(v, tl, step);
}

bool lesson_next(int& lesson, int& step, const std::vector<int>& steps) {
    const int n = static_cast<int>(steps.size());
    if (lesson < 0 || lesson >= n) return false;
    if (step + 1 < std::max(1, steps[static_cast<size_t>(lesson)])) {
        ++step;
        return true;
    }
    if (lesson + 1 >= n) return false;
    ++lesson;
    step = 0;
    return true;
}

bool lesson_back(int& lesson, int& step, const std::vector<int>& steps) {
    const int n = static_cast<int>(steps.size());
    if (lesson < 0 || lesson >= n) return false;
    if (step > 0) {
        step = std::min(step, std::max(1, steps[static_cast<size_t>(lesson)])) - 1;
        return true;
    }
    if (lesson == 0) return false;
    --lesson;
    step = std::max(1, steps[static_cast<size_t>(lesson)]) - 1;
    return true;
}

double clamp_speed(double s) {
    if (std::isnan(s)) return 2.0;
    return std::clamp(s, static_cast<double>(kMinSpeed), static_cast<double>(kMaxSpeed));
}

bool tick(ViewState& v, const Timeline& tl, double dt) {
    if (v.answer_hidden) v.playing = false;
    if (!v.playing || dt <= 0 || tl.steps_kept == 0) return false;
    const Cursor before = v.cursor;
    double pos = static_cast<double>(v.cursor.step) + v.cursor.frac + dt * clamp_speed(v.speed);
    const double end = static_cast<double>(last_step(tl)) + 1.0;
    if (pos >= end) {
        v.cursor = {last_step(tl), 1.0};
        v.playing = false;
    } else {
        const double s = std::floor(pos);
        v.cursor = {static_cast<int64_t>(s), pos - s};
    }
    return !(v.cursor == before);
}

void switch_panel(ViewState& v, const RunSet* rs, Panel p) {
    if (rs) {
        const Timeline& from = rs->timeline(driver(*rs, v.panel, v.algo, v.columns));
        const Timeline& to = rs->timeline(driver(*rs, p, v.algo, v.columns));
        if (&from != &to) v.cursor = cursor_at(to, clock_of(from, v.cursor));
    }
    v.panel = p;
}

void switch_algo(ViewState& v, const RunSet* rs, sim::Algo a) {
    if (rs) {
        const Timeline& from = rs->timeline(driver(*rs, v.panel, v.algo, v.columns));
        const Timeline& to = rs->timeline(driver(*rs, v.panel, a, v.columns));
        if (&from != &to) {
            // a different algorithm has different steps: keep the same fraction of the run
            const double f = from.total_time() > 0 ? clock_of(from, v.cursor) / from.total_time() : 0.0;
            v.cursor = cursor_at(to, f * to.total_time());
        }
    }
    v.algo = a;
}

void rebase(ViewState& v, const RunSet& now, const Timeline* before) {
    const Timeline& tl = now.timeline(driver(now, v.panel, v.algo, v.columns));
    if (before) {
        // Keep the same fraction of the run (problems change size; absolute times do not carry over).
        const double f = before->total_time() > 0 ? clock_of(*before, v.cursor) / before->total_time() : 0.0;
        v.cursor = cursor_at(tl, f * tl.total_time());
    } else {
        v.cursor.step = std::clamp<int64_t>(v.cursor.step, 0, last_step(tl));
    }
}

}  // namespace viz
