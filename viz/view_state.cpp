#include "viz/view_state.hpp"

#include <algorithm>
#include <array>
#include <cmath>
#include <sstream>

namespace viz {

namespace {
constexpr std::array<std::string_view, kPanelCount> kNames = {"memory", "compare", "softmax", "charts", "measured"};
constexpr std::array<std::string_view, kPanelCount> kTitles = {"Memory hierarchy", "Side by side", "Online softmax",
                                                               "Charts", "Simulated vs measured"};
}  // namespace

std::string_view panel_name(Panel p) { return kNames[static_cast<size_t>(p)]; }
std::string_view panel_title(Panel p) { return kTitles[static_cast<size_t>(p)]; }
std::optional<Panel> parse_panel(std::string_view s) {
    for (int i = 0; i < kPanelCount; ++i)
        if (kNames[static_cast<size_t>(i)] == s) return static_cast<Panel>(i);
    return std::nullopt;
}

sim::Algo driver(const RunSet& rs, Panel p, sim::Algo shown) {
    if (p != Panel::compare) return shown;
    sim::Algo best = sim::Algo::standard;
    for (sim::Algo a : kAlgos)
        if (rs.timeline(a).total_time() > rs.timeline(best).total_time()) best = a;
    return best;
}

int64_t last_step(const Timeline& tl) { return std::max<int64_t>(0, tl.steps_kept - 1); }

namespace {
// Numbers separated by commas, spaces, '|' or tabs; false (and `err`) on anything else.
bool parse_numbers(const std::string& text, std::vector<double>& out, std::string& err) {
    std::string tok;
    auto flush = [&]() -> bool {
        if (tok.empty()) return true;
        size_t used = 0;
        double x = 0;
        try {
            x = std::stod(tok, &used);
        } catch (const std::exception&) { used = 0; }
        if (used != tok.size() || !std::isfinite(x)) {
            err = "'" + tok + "' is not a finite number; type numbers separated by commas";
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
}  // namespace

bool apply_scores_text(ViewState& v) {
    std::vector<std::vector<double>> values;
    {
        std::string row, err;
        std::stringstream ss(v.values_text);
        while (std::getline(ss, row, ';')) {
            std::vector<double> r;
            if (!parse_numbers(row, r, err)) {
                v.softmax_error = "values: " + err;
                return false;
            }
            if (!r.empty()) values.push_back(std::move(r));
        }
    }
    std::vector<double> out;
    if (std::string err; !parse_numbers(v.scores_text, out, err)) {
        v.softmax_error = err;
        return false;
    }
    if (out.empty()) {
        v.softmax_error = "type at least one score";
        return false;
    }
    if (out.size() > 64) {
        v.softmax_error = "at most 64 scores fit the view; got " + std::to_string(out.size());
        return false;
    }
    if (!values.empty()) {
        if (values.size() != out.size()) {
            v.softmax_error = "values: give one row of V per score (" + std::to_string(out.size()) +
                              " rows, separated by ';'), got " + std::to_string(values.size());
            return false;
        }
        for (const auto& r : values)
            if (r.size() != values[0].size()) {
                v.softmax_error =
                    "values: every row of V needs the same length (" + std::to_string(values[0].size()) + ")";
                return false;
            }
    }
    v.softmax_scores = std::move(out);
    v.softmax_values = std::move(values);
    v.softmax_error.clear();
    return true;
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
    v.cursor = {last_step(tl), 1.0};
    v.playing = false;
}

void scrub_to(ViewState& v, const Timeline& tl, int64_t step) {
    v.cursor = {std::clamp<int64_t>(step, 0, last_step(tl)), 1.0};
}

bool tick(ViewState& v, const Timeline& tl, double dt) {
    if (!v.playing || dt <= 0 || tl.steps_kept == 0) return false;
    const Cursor before = v.cursor;
    double pos = static_cast<double>(v.cursor.step) + v.cursor.frac + dt * std::max(0.0, v.speed);
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
        const Timeline& from = rs->timeline(driver(*rs, v.panel, v.algo));
        const Timeline& to = rs->timeline(driver(*rs, p, v.algo));
        if (&from != &to) v.cursor = cursor_at(to, clock_of(from, v.cursor));
    }
    v.panel = p;
}

void switch_algo(ViewState& v, const RunSet* rs, sim::Algo a) {
    if (rs) {
        const Timeline& from = rs->timeline(driver(*rs, v.panel, v.algo));
        const Timeline& to = rs->timeline(driver(*rs, v.panel, a));
        if (&from != &to) {
            // a different algorithm has different steps: keep the same fraction of the run
            const double f = from.total_time() > 0 ? clock_of(from, v.cursor) / from.total_time() : 0.0;
            v.cursor = cursor_at(to, f * to.total_time());
        }
    }
    v.algo = a;
}

void rebase(ViewState& v, const RunSet& now, const Timeline* before) {
    const Timeline& tl = now.timeline(driver(now, v.panel, v.algo));
    if (before) {
        // Keep the same fraction of the run (problems change size; absolute times do not carry over).
        const double f = before->total_time() > 0 ? clock_of(*before, v.cursor) / before->total_time() : 0.0;
        v.cursor = cursor_at(tl, f * tl.total_time());
    } else {
        v.cursor.step = std::clamp<int64_t>(v.cursor.step, 0, last_step(tl));
    }
}

}  // namespace viz
