#include "viz/lessons_view.hpp"

#include <cstdio>
#include <sstream>

#include "report/report.hpp"
#if FLASHSIM_HAVE_LESSONS
#include "lessons/lib/lesson.hpp"
#endif

namespace viz {

int LessonLibrary::find(const std::string& id) const {
    for (size_t i = 0; i < lessons.size(); ++i)
        if (lessons[i].id == id) return static_cast<int>(i);
    try {
        size_t used = 0;
        const int k = std::stoi(id, &used);
        if (used == id.size() && k >= 1 && k <= static_cast<int>(lessons.size())) return k - 1;
    } catch (const std::exception&) {}
    return -1;
}

bool have_lessons_library() {
#if FLASHSIM_HAVE_LESSONS
    return true;
#else
    return false;
#endif
}

// ---------------------------------------------------------------- built-in worked examples
namespace {

std::string fixed(double x, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, x);
    return b;
}

sim::Result run(const Params& p, sim::Algo a) {
    sim::Config c;
    c.algo = a;
    c.block_rows = p.block_rows;
    c.block_cols = p.block_cols;
    c.sram_bytes = p.sram_bytes;
    c.numerics = sim::Numerics::off;
    c.event_cap = 0;
    return sim::simulate(problem_of(p), sim::find_machine(p.gpu), c);
}

LessonStep make_step(std::string title, std::string text, std::optional<Panel> panel, std::optional<Params> params,
                     int64_t step, int64_t row) {
    LessonStep s;
    s.title = std::move(title);
    s.text = std::move(text);
    s.panel = panel;
    s.params = std::move(params);
    s.step = step;
    s.row = row;
    return s;
}

LessonDoc builtin_tiles() {
    using report::human_bytes;
    LessonDoc L;
    L.id = "builtin-tiles";
    L.title = "Where the bytes go (built-in example)";
    L.summary = "Standard attention parks its score matrix in HBM; flash attention keeps tiles on chip.";
    Params p;  // N = 512, d = 64, fp16, H200
    const sim::Result st = run(p, sim::Algo::standard), f1 = run(p, sim::Algo::flash1), f2 = run(p, sim::Algo::flash2);
    const sim::Machine& m = st.machine;
    const double s_bytes = static_cast<double>(st.totals[sim::Tensor::S].write_bytes);
    const double qkvo = 4.0 * p.seq * p.head_dim * dtype_bytes(p.dtype);
    const double st_total = static_cast<double>(st.totals.hbm_total().total());
    const double f2_total = static_cast<double>(f2.totals.hbm_total().total());
    const double f1_total = static_cast<double>(f1.totals.hbm_total().total());
    auto with = [&](sim::Algo a) {
        Params q = p;
        q.algo = a;
        return q;
    };
    const std::string N = std::to_string(p.seq), d = std::to_string(p.head_dim);

    L.steps.push_back(
        make_step("Two kinds of memory",
                  "A GPU keeps data in two very different places. HBM is large (" + human_bytes(m.hbm_bytes) +
                      " on the " + m.name +
                      ") but far from the arithmetic units. SRAM sits next to them and is "
                      "fast, but one thread block may use only " +
                      human_bytes(static_cast<double>(m.sram_bytes)) +
                      " of it.\n\nThe top of the view is HBM, the bottom SRAM. Each tensor is a column of tiles. "
                      "Press the space bar (or Play) to watch the tiles move.",
                  Panel::memory, with(sim::Algo::standard), 0, -1));
    L.steps.push_back(
        make_step("Standard attention writes S",
                  "Standard attention computes the whole score matrix S = QK^T, one tile at a time, and stores "
                  "every tile in HBM. For N = " +
                      N + " tokens that is " + N + " x " + N + " scores, " + human_bytes(s_bytes) + " in " +
                      std::string(sim::dtype_name(p.dtype)) + ", against " + human_bytes(qkvo) +
                      " for Q, K, V and O together.\n\nWatch the S grid fill up: every "
                      "red-orange tile is a trip to HBM.",
                  Panel::memory, with(sim::Algo::standard), st.trace.steps_per_head / 4, -1));
    L.steps.push_back(
        make_step("... and reads it back, twice",
                  "The softmax needs whole rows of S, so S is read back and P = softmax(S) is written out, the "
                  "same size again. Then O = PV reads P once more. In all, standard attention moves " +
                      human_bytes(st_total) + " between HBM and SRAM for this one head.",
                  Panel::memory, with(sim::Algo::standard), st.trace.steps_per_head - 1, -1));
    L.steps.push_back(
        make_step("Flash attention never writes S",
                  "FlashAttention-2 loads a block of queries Q_i once, then streams the blocks K_j, V_j past it. "
                  "Each score tile S_ij lives in SRAM only while it is used. Only O (and one number per row, the "
                  "log-sum-exp) goes back to HBM.\n\nTotal traffic: " +
                      human_bytes(f2_total) + ", " + fixed(st_total / f2_total, 1) + " times less than standard.",
                  Panel::memory, with(sim::Algo::flash2), f2.trace.steps_per_head / 2, -1));
    L.steps.push_back(
        make_step("The same clock, side by side",
                  "The three algorithms run on the same problem and the same modelled clock. Standard is still "
                  "writing its N x N matrices when both flash versions are done. FlashAttention-1 (the paper's "
                  "Algorithm 1) moves " +
                      human_bytes(f1_total) +
                      ": it re-reads and re-writes O, l and m for "
                      "every block of K and V, which FlashAttention-2's loop order avoids.",
                  Panel::compare, with(sim::Algo::flash2), -1, -1));
    L.steps.push_back(
        make_step("How it grows",
                  "Standard attention's traffic grows with N squared. Flash attention's grows with "
                  "N squared times d squared over M (the SRAM size): more SRAM, fewer passes over K and V. "
                  "The charts are simulations, one point per run.",
                  Panel::charts, std::nullopt, -1, -1));
    return L;
}

LessonDoc builtin_softmax() {
    LessonDoc L;
    L.id = "builtin-online-softmax";
    L.title = "Softmax in pieces (built-in example)";
    L.summary = "A running max and a running sum, corrected as blocks arrive, give the exact softmax.";
    const std::vector<double> s = {1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3};
    const sim::StreamedSoftmax r = sim::stream_softmax(s, 4, {}, sim::Precision::fp32);
    const auto& b0 = r.record.blocks.at(0);
    const auto& b1 = r.record.blocks.at(1);
    L.steps.push_back(make_step(
        "One row, two blocks",
        "A tile holds only part of a row of scores, but softmax needs the row's maximum and sum. "
        "Here a row of eight scores arrives in two blocks of four. After the first block the running "
        "max is " +
            fixed(b0.running_max_after, 1) + " and the running sum is " + fixed(b0.running_sum_after, 4) + ".",
        Panel::softmax, std::nullopt, -1, -1));
    L.steps.push_back(
        make_step("A bigger max arrives",
                  "The second block contains " + fixed(b1.block_max, 1) +
                      ", above the old max. Everything "
                      "carried so far was measured against the old max, so it is multiplied by e^(m_old - m_new) = " +
                      fixed(b1.rescale, 4) + " before the new block is added. The running sum becomes " +
                      fixed(b1.running_sum_after, 4) + ".",
                  Panel::softmax, std::nullopt, -1, -1));
    L.steps.push_back(
        make_step("Exact, not approximate",
                  "The streamed result matches the plain softmax over the whole row: the largest difference, in "
                  "float32, is " +
                      fixed(r.max_abs_diff, 9) + " (" + std::to_string(r.max_ulp) +
                      " ulp). Edit "
                      "the scores or the block size and watch it stay that way.",
                  Panel::softmax, std::nullopt, -1, -1));
    return L;
}

}  // namespace

std::vector<LessonDoc> builtin_lessons() { return {builtin_tiles(), builtin_softmax()}; }

// ---------------------------------------------------------------- the lessons library
#if FLASHSIM_HAVE_LESSONS
namespace {
std::string join(const std::vector<double>& xs) {
    std::string s;
    for (double v : xs) {
        char b[32];
        std::snprintf(b, sizeof b, "%g", v);
        s += (s.empty() ? "" : ", ") + std::string(b);
    }
    return s;
}

// The lesson's softmax example as the softmax panel's text fields take it ("1.4, 3.9"; rows of
// values separated by "; ").
void softmax_setup(const lessons::Lesson& l, std::string* scores, std::string* values, int* block) {
    if (!l.softmax) return;
    *scores = join(l.softmax->scores);
    *block = static_cast<int>(l.softmax->block);
    for (const auto& r : l.softmax->values) *values += (values->empty() ? "" : "; ") + join(r);
}

LessonDoc from_library(const lessons::Lesson& l) {
    LessonDoc d;
    std::string sm_scores, sm_values;
    int sm_block = 0;
    softmax_setup(l, &sm_scores, &sm_values, &sm_block);
    d.id = l.id;
    d.title = l.title;
    d.summary = l.summary;
    d.file = l.file;
    for (const auto& s : l.steps) {
        LessonStep st;
        st.title = s.title;
        st.text = s.text;
        if (s.view.panel != "text") st.panel = parse_panel(s.view.panel);
        std::string cfg = s.view.config;
        if (cfg.empty() && !l.config_order.empty()) cfg = l.config_order.front();
        if (auto it = l.configs.find(cfg); it != l.configs.end() && st.panel != Panel::softmax) {
            const lessons::ConfigSpec& c = it->second;
            Params p;
            p.seq = c.problem.seq;
            p.head_dim = c.problem.head_dim;
            p.dtype = c.problem.dtype;
            p.causal = c.problem.causal;
            p.gpu = c.gpu;
            p.algo = c.config.algo;
            p.block_rows = c.config.block_rows;
            p.block_cols = c.config.block_cols;
            p.sram_bytes = c.config.sram_bytes;
            if (auto a = sim::parse_algo(s.view.algo)) p.algo = *a;
            st.params = p;
        }
        st.step = s.view.step_from;
        st.row = s.view.row;
        st.tile_row = s.view.tile_row;
        st.tile_col = s.view.tile_col;
        if (st.panel == Panel::softmax && !sm_scores.empty()) {
            st.scores_text = sm_scores;
            st.values_text = sm_values;
            st.block = sm_block;
        }
        d.steps.push_back(std::move(st));
    }
    return d;
}
}  // namespace
#endif

LessonLibrary load_lesson_library() {
    LessonLibrary lib;
#if FLASHSIM_HAVE_LESSONS
    try {
        const std::string dir = lessons::lessons_dir();
        lib.source = "lessons library: " + dir;
        for (const auto& x : lessons::load_all(dir)) {
            if (x.lesson) {
                lib.lessons.push_back(from_library(*x.lesson));
            } else {
                LessonDoc d;
                d.file = x.file;
                d.id = x.file;
                d.title = "Lesson failed to load";
                d.error = x.error;
                lib.lessons.push_back(std::move(d));
            }
        }
        if (lib.lessons.empty()) lib.error = "no lesson files (*.toml) in " + dir;
    } catch (const std::exception& e) { lib.error = e.what(); }
    if (!lib.lessons.empty()) return lib;
#endif
    try {
        lib.lessons = builtin_lessons();
        if (lib.source.empty())
            lib.source = "built-in worked examples (this build has no lessons library)";
        else
            lib.source += " (unavailable; showing the built-in worked examples)";
    } catch (const std::exception& e) { lib.error = std::string("built-in lessons: ") + e.what(); }
    return lib;
}

std::string apply_lesson_step(const LessonStep& s, ViewState& v, Simulations& sims) {
    std::string err;
    if (s.params) {
        err = sims.request(*s.params);
        if (err.empty()) {
            v.edit = *s.params;
            v.algo = s.params->algo;
            v.own_params = false;
            v.param_error.clear();
        } else {
            v.param_error = err;
        }
    }
    if (s.panel) v.panel = *s.panel;
    v.highlight_row = s.row;
    v.highlight_tile_row = s.tile_row;
    v.highlight_tile_col = s.tile_col;
    if (s.block > 0) {
        v.scores_text = s.scores_text;
        v.values_text = s.values_text;
        v.softmax_block = s.block;
        v.softmax_focus = -1;
        apply_scores_text(v);
    }
    if (s.step >= 0) {
        v.cursor = {s.step, 1.0};
        if (s.params) v.pending_step = s.step;  // clamp once the step's simulations arrive
    }
    v.playing = false;
    return err;
}

}  // namespace viz
