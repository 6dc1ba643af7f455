#include "viz/lessons_view.hpp"

#include <algorithm>
#include <cctype>
#include <memory>
#include <utility>
#include <cstdio>
#include <limits>

#include "lessons/lib/lesson.hpp"
#include "sim/tensor.hpp"

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

// ---------------------------------------------------------------- the lessons library
namespace {
// "1.4, 3.9" (fmt: how each number prints; -inf prints as "-inf", a masked score)
std::string join(const std::vector<double>& xs, const char* fmt = "%g") {
    std::string s;
    for (double v : xs) {
        char b[40];
        std::snprintf(b, sizeof b, fmt, v);
        if (!s.empty()) s += ", ";
        s += b;
    }
    return s;
}

// Rows of V as the softmax panel's field takes them: "0, 1; 1, 0"
std::string join_rows(const std::vector<std::vector<double>>& rows, const char* fmt = "%g") {
    std::string s;
    for (const auto& r : rows) {
        if (!s.empty()) s += "; ";
        s += join(r, fmt);
    }
    return s;
}

// The lesson's softmax example as the softmax panel's text fields take it ("1.4, 3.9"; rows of
// values separated by "; ").
void softmax_setup(const lessons::Lesson& l, std::string* scores, std::string* values, int* block) {
    if (!l.softmax) return;
    *scores = join(l.softmax->scores);
    *block = static_cast<int>(l.softmax->block);
    *values = join_rows(l.softmax->values);
}

// The step's ring, read from the lesson's computed values (what `flashsim ring --json` prints for
// [ring.NAME]): the ring view's inputs and the problem it is of. Empty when `name` is not a ring.
std::optional<std::pair<RingInputs, Params>> ring_of(const lessons::Lesson& l, const std::string& name) {
    try {
        const std::string at = "ring." + name + ".";
        auto num = [&](const std::string& key) { return lessons::evaluate(l, at + key); };
        auto text = [&](const std::string& key) { return lessons::render(l, "{{ " + at + key + " | str }}"); };
        RingInputs in;
        in.gpus = static_cast<int64_t>(num("gpus"));
        in.heads = static_cast<int64_t>(num("heads"));
        in.layout = text("layout") == "contiguous" ? sim::RingLayout::contiguous : sim::RingLayout::balanced;
        // passes.0 is the forward or the backward; a passes.1 (the backward) means both
        bool second = false;  // a ring of one pass has no passes.1
        try {
            second = text("passes.1.pass").find("backward") != std::string::npos;
        } catch (const std::exception&) {}
        const bool first_bwd = text("passes.0.pass").find("backward") != std::string::npos;
        in.pass = second ? sim::Pass::both : first_bwd ? sim::Pass::backward : sim::Pass::forward;
        Params p;
        p.seq = static_cast<int64_t>(num("seq"));
        p.head_dim = static_cast<int64_t>(num("head_dim"));
        p.causal = text("causal") == "true" || text("causal") == "1";
        if (auto d = sim::parse_dtype(text("dtype"))) p.dtype = *d;
        p.gpu = text("gpu");
        return std::make_pair(in, p);
    } catch (const std::exception&) { return std::nullopt; }
}

// The step's decoding shape, read from the lesson's computed values (what `flashsim decode --json`
// prints for [decode.NAME]). Empty when `name` is not one.
std::optional<DecodeShape> decode_of(const lessons::Lesson& l, const std::string& name) {
    try {
        const std::string at = "decode." + name + ".";
        auto num = [&](const std::string& key) { return static_cast<int64_t>(lessons::evaluate(l, at + key)); };
        DecodeShape d;
        d.name = name;
        d.batch = num("batch");
        d.q_heads = num("q_heads");
        d.kv_heads = num("kv_heads");
        d.kv_len = num("kv_len");
        d.head_dim = num("head_dim");
        if (auto t = sim::parse_dtype(lessons::render(l, "{{ " + at + "dtype | str }}"))) d.dtype = *t;
        // the table's split count where it gave one: where the model's own choice differs from it
        // (left to the model, the view says the model's reason, not "given")
        const int64_t splits = num("splits");
        const std::string gpu = lessons::render(l, "{{ " + at + "gpu | str }}");
        if (sim::choose_splits(d.problem(), sim::find_machine(gpu), d.config()).splits != splits) d.splits = splits;
        return d;
    } catch (const std::exception&) { return std::nullopt; }
}
}  // namespace

namespace {
// The softmax view's input from a config's recorded row (record_row): the row's scores as the walk
// streamed them, a key block at a time, and the rows of V (head 0, as recorded) they weigh. Leaves
// `st` as it is when the config records no row or the row is longer than the view takes.
void recorded_row(const lessons::Lesson& l, const std::string& config, LessonStep& st) {
    auto it = l.configs.find(config);
    if (it == l.configs.end() || it->second.config.record_row < 0) return;
    try {
        const sim::Result r = lessons::simulate_config(l, config);
        if (!r.record || r.record->blocks.empty()) return;
        const sim::SoftmaxRecord& rec = *r.record;
        size_t count = 0;
        for (const auto& b : rec.blocks) count += b.scores.size();
        if (count > kMaxScores) return;
        const sim::TensorF V = sim::generate_input(r.problem, sim::InputTensor::V);
        const float* v0 = V.head(0);
        const int64_t d = r.problem.head_dim;
        std::vector<double> scores;
        std::vector<std::vector<double>> rows;
        for (const auto& b : rec.blocks)
            for (size_t k = 0; k < b.scores.size(); ++k) {
                scores.push_back(b.scores[k]);
                const float* vk = v0 + (b.first_key + static_cast<int64_t>(k)) * d;
                rows.emplace_back(vk, vk + d);
            }
        st.scores_text = join(scores, "%.9g");  // nine digits: a float32 comes back exactly
        st.values_text = join_rows(rows, "%.9g");
        st.block = static_cast<int>(rec.blocks.front().scores.size());
    } catch (const std::exception&) {}
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
    if (l.exercise) {
        ExerciseDoc e;
        e.predict = !l.exercise->predict.empty();
        e.prompt = l.exercise->prompt;
        e.fields = e.predict ? std::vector<std::string>{"value"} : l.exercise->fields;
        e.lesson = std::make_shared<const lessons::Lesson>(l);
        d.exercise = std::move(e);
    }
    for (const auto& s : l.steps) {
        LessonStep st;
        st.title = s.title;
        st.text = s.text;
        if (s.view.panel != "text") st.panel = parse_panel(s.view.panel);
        // the shown config: the step's, else the first it compares, else the lesson's first
        std::string cfg = s.view.config;
        if (cfg.empty() && !s.view.compare.empty()) cfg = s.view.compare.front();
        // (a text step that names none leaves the views as the step before left them)
        if (cfg.empty() && !l.config_order.empty() && s.view.panel != "text") cfg = l.config_order.front();
        if (!s.view.compare.empty()) {
            std::array<bool, 3> cols = {false, false, false};
            for (const auto& name : s.view.compare)
                if (auto it = l.configs.find(name); it != l.configs.end())
                    cols[static_cast<size_t>(algo_index(it->second.config.algo))] = true;
            // configs of one algorithm compare problems (N against 2N), which one run cannot show
            // side by side: then all three algorithms stay
            if (std::count(cols.begin(), cols.end(), true) >= 2) st.columns = cols;
        }
        if (auto it = l.configs.find(cfg);
            it != l.configs.end() && (st.panel != Panel::softmax || !s.view.config.empty())) {
            const lessons::ConfigSpec& c = it->second;
            Params p;
            p.seq = c.problem.seq;
            p.head_dim = c.problem.head_dim;
            p.dtype = c.problem.dtype;
            p.causal = c.problem.causal;
            p.window = c.problem.window;
            p.gpu = c.gpu;
            p.algo = c.config.algo;
            p.block_rows = c.config.block_rows;
            p.block_cols = c.config.block_cols;
            p.sram_bytes = c.config.sram_bytes;
            p.pass = c.config.pass;
            // configs compared across passes (one forward, one backward): walk both
            for (const auto& name : s.view.compare)
                if (auto o = l.configs.find(name); o != l.configs.end() && o->second.config.pass != p.pass)
                    p.pass = sim::Pass::both;
            // standard has no tiles: when the shown config is standard's, the flash columns beside it
            // run the tiles of the flash config it is compared with (lesson 2's flash at 128 x 128),
            // not the block rule (which would give B_c = 114 where the text counts 128)
            if (c.config.algo == sim::Algo::standard && p.block_rows == 0 && p.block_cols == 0)
                for (const auto& name : s.view.compare)
                    if (auto o = l.configs.find(name);
                        o != l.configs.end() && o->second.config.algo != sim::Algo::standard &&
                        (o->second.config.block_rows > 0 || o->second.config.block_cols > 0)) {
                        p.block_rows = o->second.config.block_rows;
                        p.block_cols = o->second.config.block_cols;
                        if (p.sram_bytes == 0) p.sram_bytes = o->second.config.sram_bytes;
                        break;
                    }
            if (auto a = sim::parse_algo(s.view.algo)) p.algo = *a;
            st.params = p;
        }
        // a ring view shows the lesson's [ring.NAME] it names (the loader checked that it exists)
        if (s.view.panel == "ring")
            if (auto ring = ring_of(l, s.view.ring)) {
                st.ring = ring->first;
                st.params = ring->second;
            }
        if (s.view.panel == "decoding") {
            if (!s.view.decode.empty()) st.decode = decode_of(l, s.view.decode);
            // the worked row's split and merge: the lesson's [softmax] example
            if (!sm_scores.empty()) {
                st.scores_text = sm_scores;
                st.values_text = sm_values;
                st.block = sm_block;
            }
        }
        st.step = s.view.step_from;
        st.row = s.view.row;
        st.tile_row = s.view.tile_row;
        st.tile_col = s.view.tile_col;
        if (st.panel == Panel::softmax) {
            if (!s.view.config.empty()) recorded_row(l, s.view.config, st);
            if (st.block == 0 && !sm_scores.empty()) {
                st.scores_text = sm_scores;
                st.values_text = sm_values;
                st.block = sm_block;
            }
            st.focus = s.view.block > 0 ? static_cast<int>(s.view.block - 1) : -1;
        }
        if (st.panel == Panel::charts && !s.view.chart.empty()) st.chart = s.view.chart == "paper" ? 1 : 0;
        if (st.panel == Panel::measured) {
            // the rows the step discusses: its own filters, else its shown config's pass, d and mask
            if (st.params) {
                st.measured_pass = st.params->pass == sim::Pass::backward ? 1 : 0;
                st.measured_d = static_cast<int>(st.params->head_dim);
                st.measured_mask = st.params->causal ? 1 : 0;
            }
            if (!s.view.pass.empty()) st.measured_pass = s.view.pass == "backward" ? 1 : 0;
            if (s.view.head_dim > 0) st.measured_d = static_cast<int>(s.view.head_dim);
            if (!s.view.mask.empty()) st.measured_mask = s.view.mask == "causal" ? 1 : 0;
            st.measured_file = s.view.file;
        }
        d.steps.push_back(std::move(st));
    }
    return d;
}
}  // namespace

bool next_step_open(const LessonLibrary& lib, ViewState& v) {
    if (v.lesson < 0 || v.lesson >= static_cast<int>(lib.lessons.size())) return true;
    const LessonDoc& L = lib.lessons[static_cast<size_t>(v.lesson)];
    if (!L.exercise || v.lesson_step + 1 >= static_cast<int>(L.steps.size())) return true;
    return step_open(&*L.exercise, v.exercises[L.id], v.lesson_step + 1);
}

LessonLibrary load_lesson_library() {
    LessonLibrary lib;
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
    if (s.ring) {
        v.ring = *s.ring;
        v.ring_pos = kRingStartPos;
        v.ring_playing = false;
    }
    if (s.decode) v.decode = *s.decode;
    v.design_shown.reset();  // a step opens fresh: a design's run is shown where its answer was checked
    v.columns = s.columns;
    v.highlight_row = s.row;
    v.highlight_tile_row = s.tile_row;
    v.highlight_tile_col = s.tile_col;
    if (s.block > 0) {
        v.scores_text = s.scores_text;
        v.values_text = s.values_text;
        v.softmax_block = s.block;
        apply_scores_text(v);
    }
    if (s.panel == Panel::softmax) v.softmax_focus = s.focus;
    if (s.chart >= 0) v.chart = s.chart;
    if (s.measured_pass >= 0) v.measured_pass = s.measured_pass;
    if (s.measured_d >= 0) v.measured_d = s.measured_d;
    if (s.measured_mask >= 0) v.measured_mask = s.measured_mask;
    if (!s.measured_file.empty()) v.measured_open = s.measured_file;
    if (s.step >= 0) {
        v.cursor = {s.step, 1.0};
        if (s.params) v.pending_step = s.step;  // clamp once the step's simulations arrive
    } else if (s.params && s.panel == Panel::scores) {
        // the score matrix without a step named: the whole sweep (scrub_to clamps to the last step)
        v.pending_step = std::numeric_limits<int64_t>::max();
    } else {
        // no step named: the animation opens at its start, not where the last step left it
        v.cursor = {0, 0.0};
        v.pending_step = s.params ? 0 : -1;
    }
    v.playing = false;
    return err;
}

std::string open_lesson_step(const LessonLibrary& lib, int lesson, int step, ViewState& v, Simulations& sims) {
    if (lesson < 0 || lesson >= static_cast<int>(lib.lessons.size()))
        return "no lesson " + std::to_string(lesson + 1) + (lib.error.empty() ? "" : ": " + lib.error);
    v.lesson = lesson;
    const LessonDoc& L = lib.lessons[static_cast<size_t>(lesson)];
    v.lesson_step = std::clamp(step, 0, std::max(0, static_cast<int>(L.steps.size()) - 1));
    if (!L.error.empty()) return "failed to load: " + L.error;
    if (L.steps.empty()) return "has no steps";
    return apply_lesson_step(L.steps[static_cast<size_t>(v.lesson_step)], v, sims);
}

std::string TourLog::step_done(const LessonDoc& L, int step, Panel panel, const std::string& error) {
    std::string where = "lesson " + L.id, line;
    if (!L.steps.empty()) {
        where += " step " + std::to_string(step + 1) + "/" + std::to_string(L.steps.size());
        line = " view " + std::string(panel_name(panel));
    }
    if (error.empty()) {
        ++rendered;
    } else {
        line += " FAILED: " + error;
        failed.push_back(where + " (" + error + ")");
    }
    return "tour: " + where + line;
}

std::string TourLog::summary(size_t lessons) const {
    return "tour: rendered " + std::to_string(rendered) + " of " + std::to_string(rendered + failed.size()) +
           " steps of " + std::to_string(lessons) + " lessons";
}

std::string TourLog::clipped(const LessonDoc& L, int step, Panel panel, const std::string& text) {
    const std::string where =
        "lesson " + L.id + " step " + std::to_string(step + 1) + "/" + std::to_string(L.steps.size());
    cut.push_back(where + ": '" + text + "'");
    return "tour: clipped " + where + " view " + std::string(panel_name(panel)) + ": '" + text + "'";
}

std::string TourLog::failures() const {
    std::string out;
    if (!failed.empty()) {
        std::string list;
        for (const auto& f : failed) list += (list.empty() ? "" : "; ") + f;
        out = "the tour could not render " + std::to_string(failed.size()) + " step(s): " + list;
    }
    if (!cut.empty())
        out += (out.empty() ? "" : "; and ") + std::to_string(cut.size()) +
               " line(s) of text cut by the edge of their window, pane or cell (the 'tour: clipped' lines), the "
               "first in " +
               cut.front();
    return out;
}

}  // namespace viz
