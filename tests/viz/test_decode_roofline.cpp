// The Decoding and Roofline views' numbers and the lesson steps that open them (issue 60), and a
// design exercise's answer as a run beside its reference. GL-free: the views' logic, not pixels.
#include <doctest/doctest.h>

#include <algorithm>
#include <cstdlib>
#include <numeric>
#include <vector>
#include <string>
#include <tuple>
#include <utility>

#include "sim/decode.hpp"
#include "sim/machine.hpp"
#include "sim/simulate.hpp"
#include "viz/app_args.hpp"
#include "viz/decode_view.hpp"
#include "viz/design_run.hpp"
#include "viz/lessons_view.hpp"
#include "viz/measurement.hpp"
#include "viz/model.hpp"
#include "viz/roofline_view.hpp"
#include "viz/view_state.hpp"

using namespace viz;

namespace {
// The course, loaded once for the cases below (each lesson simulates its own configurations).
const LessonLibrary& course() {
    static const LessonLibrary lib = [] {
        ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
        LessonLibrary l = load_lesson_library();
        ::unsetenv("FLASHSIM_LESSONS");
        return l;
    }();
    return lib;
}
const LessonDoc& lesson(const std::string& id) {
    const int k = course().find(id);
    REQUIRE(k >= 0);
    const LessonDoc& L = course().lessons[static_cast<size_t>(k)];
    REQUIRE(L.error.empty());
    return L;
}
const LessonStep* step_titled(const LessonDoc& L, const std::string& title) {
    for (const auto& s : L.steps)
        if (s.title == title) return &s;
    return nullptr;
}
}  // namespace

TEST_CASE("lesson 13's steps open the decoding view on the lesson's own decode step, and the roofline") {
    CHECK(parse_panel("decoding") == Panel::decoding);
    CHECK(parse_panel("roofline") == Panel::roofline);
    const LessonDoc& L = lesson("decoding");
    REQUIRE(L.steps.size() == 6);
    for (size_t i : {0u, 2u, 3u, 4u, 5u}) {
        CAPTURE(i);
        REQUIRE(L.steps[i].panel.has_value());
        CHECK(*L.steps[i].panel == Panel::decoding);
        REQUIRE(L.steps[i].decode.has_value());
    }
    // "Why decoding waits on memory" places the step far left on the roofline
    REQUIRE(L.steps[1].panel.has_value());
    CHECK(*L.steps[1].panel == Panel::roofline);
    // [decode.one] as the lesson file writes it: B = 1, L = 32,768, 32 query heads on 8 KV heads, d = 128
    const DecodeShape& one = *L.steps[0].decode;
    CHECK(one.name == "one");
    CHECK(one.batch == 1);
    CHECK(one.kv_len == 32768);
    CHECK(one.q_heads == 32);
    CHECK(one.kv_heads == 8);
    CHECK(one.head_dim == 128);
    CHECK(one.dtype == sim::DType::bf16);
    // step 3 is about the unsplit cache: [decode.unsplit] sets splits = 1
    CHECK(L.steps[2].decode->name == "unsplit");
    CHECK(L.steps[2].decode->splits == 1);
    // the merge step carries the worked row (lesson 4's eight scores, two blocks of four)
    CHECK(L.steps[4].block == 4);
    CHECK_FALSE(L.steps[4].scores_text.empty());
}

TEST_CASE("the steps that speak of the roofline open the roofline view") {
    const LessonStep* two = step_titled(lesson("two-memories"), "The roofline and its ridge point");
    const LessonStep* ten = step_titled(lesson("measured"), "Each kernel on the roofline");
    REQUIRE(two);
    REQUIRE(ten);
    CHECK(two->panel == Panel::roofline);
    CHECK(ten->panel == Panel::roofline);
}

// The view's splits are counted from each split's key range; the walker counts tile by tile. Both
// must give the closed form 2 x B x H_kv x L x d x e for K and V, and together with the merge every
// byte of the step.
TEST_CASE("the decoding view's per-split bytes add up to the walker's totals") {
    const sim::Machine& m = sim::find_machine("H200");
    struct Case {
        int64_t batch, kv_len, splits;
    };
    // the lesson's step (the model's split count); a cache ending inside a tile; one split; many sequences
    for (const Case c : {Case{1, 32768, 0}, Case{1, 1000, 0}, Case{1, 4096, 1}, Case{64, 8192, 0}, Case{3, 777, 5}}) {
        CAPTURE(c.batch);
        CAPTURE(c.kv_len);
        CAPTURE(c.splits);
        DecodeShape s;
        s.batch = c.batch;
        s.kv_len = c.kv_len;
        s.splits = c.splits;
        const DecodeView dv = decode_view(s, m);
        REQUIRE(dv.error.empty());
        const sim::DecodeResult& r = dv.result;
        REQUIRE(static_cast<int64_t>(dv.splits.size()) == r.split.splits);
        int64_t keys = 0, kv = 0, q = 0, out = 0, next = 0;
        for (const auto& row : dv.splits) {
            CHECK(row.first_key == next);  // the splits tile the cache without gaps or overlap
            next = row.first_key + row.keys;
            keys += row.keys;
            kv += row.kv_bytes;
            q += row.q_bytes;
            out += row.out_bytes;
        }
        CHECK(keys == c.kv_len);
        const int64_t e = 2;                                // bf16
        CHECK(kv == 2 * c.batch * 8 * c.kv_len * 128 * e);  // closed form: K and V of every KV head once
        CHECK(kv == r.kv_read_bytes);
        CHECK(q == r.q_read_bytes);
        if (r.split.splits > 1) {
            CHECK(out == r.partial_write_bytes);
            CHECK(kv + q + out + r.merge_read_bytes + r.o_write_bytes == r.total_bytes());
        } else {
            CHECK(out == r.o_write_bytes);
            CHECK(kv + q + out == r.total_bytes());
        }
        // rung 1 is every byte at the model's bandwidth; the decode model adds the fill, merge and launches
        CHECK(dv.bytes_bound_s == doctest::Approx(double(r.total_bytes()) / r.bandwidth));
        CHECK(r.total_s >= dv.bytes_bound_s);
    }
}

TEST_CASE("the decoding view finds the recorded row at its shape, and says so when there is none") {
    const std::string doc = R"({"device": "NVIDIA H200", "rows": [
        {"variant": "decode", "ok": true, "batch": 1, "q_heads": 32, "kv_heads": 8, "kv_len": 32768, "seq": 1,
         "head_dim": 128, "dtype": "bf16", "ms_median": 0.04, "sim_predicted_ms": 0.035, "splits": 32, "tbps": 3.4},
        {"variant": "decode", "ok": true, "batch": 8, "q_heads": 32, "kv_heads": 8, "kv_len": 32768, "seq": 1,
         "head_dim": 128, "dtype": "bf16", "ms_median": 0.2}]})";
    DecodeShape s;  // the defaults: B = 1, L = 32,768, 32 / 8 heads, d = 128, bf16
    const auto row = find_decode_row(doc, s.problem());
    REQUIRE(row.has_value());
    CHECK(row->ms == 0.04);
    CHECK(row->sim_ms == 0.035);
    CHECK(row->splits == 32);
    CHECK(row->device == "NVIDIA H200");
    s.head_dim = 64;
    CHECK_FALSE(find_decode_row(doc, s.problem()).has_value());
    CHECK_FALSE(find_decode_row("not json", s.problem()).has_value());
    // the recorded H200 file has the lesson's step: the view names it and its file
    const DecodeView dv = decode_view(DecodeShape{}, sim::find_machine("H200"));
    REQUIRE(dv.recorded.has_value());
    CHECK(dv.recorded->file == "h200/decode.json");
    CHECK(dv.recorded->ms > 0);
    // a preset no card of which was measured: no row, and a reason
    const DecodeView a100 = decode_view(DecodeShape{}, sim::find_machine("A100-80GB"));
    CHECK_FALSE(a100.recorded.has_value());
    CHECK_FALSE(a100.recorded_note.empty());
}

// flash2, N = 256, d = 64, 64 x 64 tiles, fp16, no L2 model: T_r = 4. Q read once (N d e), K and V
// once per query tile (2 T_r N d e), O written once (N d e), LSE once (4 N): 256 x 64 x 2 x (2 + 8)
// + 1,024 = 328,704 bytes. Matrix FLOPs: S = Q K^T and O = P V, 2 N^2 d each: 16,777,216.
TEST_CASE("a simulated roofline point is the walk's matrix FLOPs over its counted bytes (by hand)") {
    sim::Problem p;
    p.seq = 256;
    p.head_dim = 64;
    p.dtype = sim::DType::fp16;
    sim::Config c;
    c.algo = sim::Algo::flash2;
    c.block_rows = c.block_cols = 64;
    c.numerics = sim::Numerics::off;
    c.l2 = sim::L2Mode::off;
    const sim::Result r = sim::simulate(p, sim::find_machine("H200"), c);
    const RoofPoint pt = simulated_point(r, 1e-3, "ideal machine");
    CHECK(pt.flops == 16777216.0);
    CHECK(pt.bytes == 328704.0);
    CHECK(pt.intensity() == doctest::Approx(16777216.0 / 328704.0).epsilon(1e-15));
    CHECK(pt.bytes_what == "tile moves, no L2");
    CHECK_FALSE(pt.measured);
    // a time of a problem twice as large (the bench's shape): the FLOP rate is the same run's
    const RoofPoint twice = simulated_point(r, 2e-3, "ideal machine", 2.0);
    CHECK(twice.rate() == doctest::Approx(pt.rate()).epsilon(1e-15));
    CHECK(pt.rate() == doctest::Approx(16777216.0 / 1e-3).epsilon(1e-15));
    // at the ideal machine's own time the point lies under the roof of the ceilings that time used:
    // bytes at the bandwidth and FLOPs at peak can only make the time longer
    REQUIRE(r.timing.computed);
    const RoofPoint ideal = simulated_point(r, r.timing.predicted_ms * 1e-3, "ideal machine");
    const RoofCeiling used{"used", r.timing.hbm_bandwidth, r.timing.matmul_flops};
    CHECK(ideal.rate() <= used.attainable(ideal.intensity()) * (1 + 1e-9));
}

TEST_CASE("the roofs: the datasheet's ridge, the measured one named apart, the roof bends at the ridge") {
    const sim::Machine& h200 = sim::find_machine("H200");
    const auto roofs = roof_ceilings(h200);
    REQUIRE_FALSE(roofs.empty());
    CHECK(roofs[0].name == "datasheet");
    // 989.4 TFLOP/s over 4.8 TB/s (the preset's datasheet figures, as lesson 2 states them)
    CHECK(roofs[0].ridge() == doctest::Approx(989.4e12 / 4.8e12).epsilon(1e-9));
    CHECK(roofs[0].attainable(roofs[0].ridge() / 2) == doctest::Approx(roofs[0].flops / 2));
    CHECK(roofs[0].attainable(roofs[0].ridge() * 2) == roofs[0].flops);
    if (h200.measured_hbm_bandwidth > 0 && h200.measured_matmul_flops > 0) {
        REQUIRE(roofs.size() == 2);
        CHECK(roofs[1].name == "measured");
        CHECK(roofs[1].bandwidth == h200.measured_hbm_bandwidth);
    }
}

TEST_CASE("a recorded row is placed twice: measured by its counters and time, simulated by its model") {
    MeasuredRow row;
    row.variant = "flash2";
    row.pass = "forward";
    row.ms = 2.0;
    row.tflops = 500.0;  // 500e12 FLOP/s x 2 ms = 1e12 FLOPs
    row.dram_read = 1.5e9;
    row.dram_write = 0.5e9;  // 2e9 bytes: 500 FLOPs a byte
    row.sim_l2_read = 3e9;
    row.sim_l2_write = 1e9;  // 4e9 bytes: 250 FLOPs a byte
    row.predicted_ms = 2.5;  // rung 3 as the row records it
    const auto pts = recorded_points(row);
    REQUIRE(pts.size() == 2);
    const RoofPoint& meas = pts[0].measured ? pts[0] : pts[1];
    const RoofPoint& model = pts[0].measured ? pts[1] : pts[0];
    CHECK(meas.measured);
    CHECK_FALSE(model.measured);
    CHECK(meas.intensity() == doctest::Approx(500.0));
    CHECK(meas.rate() == doctest::Approx(5e14));
    CHECK(model.intensity() == doctest::Approx(250.0));
    CHECK(model.rate() == doctest::Approx(1e12 / 2.5e-3));
    CHECK(model.time_what == "this kernel");
    CHECK(meas.label().find("measured") != std::string::npos);
    CHECK(model.label().find("simulated") != std::string::npos);
    // standard's backward: the bench credits five products of 2 N^2 d, the kernel does four
    row.variant = "standard";
    row.pass = "backward";
    const auto bwd = recorded_points(row);
    REQUIRE_FALSE(bwd.empty());
    CHECK(bwd[0].flops == doctest::Approx(0.8e12));
    // no counters and no model: nothing placed, rather than a point at zero
    MeasuredRow bare;
    bare.variant = "flash2";
    bare.ms = 1.0;
    bare.tflops = 100.0;
    CHECK(recorded_points(bare).empty());
}

// One decoding step: 4 FLOPs a key and a query head a dimension (a score product and a value
// product); 2 bytes an element of K and V over 8 KV heads: about 32 / 8 = 4 FLOPs a byte.
TEST_CASE("the decoding step's roofline point: about four FLOPs a byte, far left of the ridge") {
    DecodeShape s;
    const sim::DecodeResult r = sim::simulate_decode(s.problem(), sim::find_machine("H200"), s.config());
    const RoofPoint d = decode_point(r);
    CHECK(d.flops == 4.0 * 32 * 32768 * 128);
    CHECK(d.intensity() <= 4.0);  // Q, partials and O add bytes to the cache's, never FLOPs
    CHECK(d.intensity() > 3.9);   // ... and they are under 3% of the cache's 128 MiB
}

TEST_CASE("a design exercise's checked answer is a run of its own beside the reference") {
    const LessonDoc& L = lesson("exercises");
    REQUIRE(L.exercise.has_value());
    REQUIRE_FALSE(L.exercise->predict);
    ExerciseState st;
    st.typed = "algo=flash2, block_rows=96, block_cols=16";  // the lesson's worked solution
    st = submit_answer(*L.exercise, st);
    REQUIRE(st.answered);
    CHECK(st.passed);
    REQUIRE(st.design);
    const DesignRun& d = *st.design;
    CHECK(d.yours.algo == sim::Algo::flash2);
    CHECK(d.yours.block_rows == 96);
    CHECK(d.yours.block_cols == 16);
    CHECK(d.yours.hbm_bytes <= 48 * 1024 * 1024);  // the exercise's goal: at most 48 MiB
    CHECK(d.reference.hbm_bytes > d.yours.hbm_bytes);
    // the app's parameters run the answer: its tiles on the base's problem
    CHECK(d.params.block_rows == 96);
    CHECK(d.params.block_cols == 16);
    CHECK(d.params.algo == sim::Algo::flash2);
    // a refused answer opens nothing
    ExerciseState bad;
    bad.typed = "block_rows=17";
    bad = submit_answer(*L.exercise, bad);
    CHECK_FALSE(bad.design);
}

TEST_CASE("--answer: with a lesson only, and not on a tour; the new views by name") {
    auto parse = [](std::vector<const char*> argv, AppArgs& a) {
        argv.insert(argv.begin(), "flashsim-app");
        bool help = false;
        std::string text;
        return parse_app_args(static_cast<int>(argv.size()), argv.data(), a, &help, &text);
    };
    AppArgs a;
    CHECK(parse({"--lesson", "exercises", "--answer", "block_rows=64"}, a).empty());
    CHECK(a.answer == "block_rows=64");
    AppArgs b;
    CHECK(parse({"--answer", "block_rows=64"}, b).find("needs --lesson") != std::string::npos);
    AppArgs c;
    CHECK(parse({"--tour", "--answer", "x=1"}, c).find("--answer") != std::string::npos);
    AppArgs d;
    CHECK(parse({"--panel", "decoding"}, d).empty());
    CHECK(d.panel == Panel::decoding);
    AppArgs e;
    CHECK(parse({"--panel", "roofline"}, e).empty());
    CHECK(e.panel == Panel::roofline);
    AppArgs f;
    CHECK(parse({"--panel", "graphs"}, f).find("decoding, roofline") != std::string::npos);
}

// ---- the roofline's number labels (place_labels)
namespace {
// Every placed label inside the plot, off every marker and keep-out box, and off every other label.
void check_labels(const std::vector<PlacedLabel>& labels, const std::vector<PlotPt>& anchors, const Box& plot,
                  float marker_r, const std::vector<Box>& keep_out) {
    for (size_t i = 0; i < labels.size(); ++i) {
        if (!labels[i].placed) continue;
        const Box& b = labels[i].box;
        CAPTURE(i);
        CHECK(b.within(plot));
        for (const Box& k : keep_out) CHECK_FALSE(b.overlaps(k));
        for (const PlotPt& a : anchors)
            CHECK_FALSE(b.overlaps(Box{a.x - marker_r, a.y - marker_r, a.x + marker_r, a.y + marker_r}));
        for (size_t j = i + 1; j < labels.size(); ++j)
            if (labels[j].placed) CHECK_FALSE(b.overlaps(labels[j].box));
    }
}
}  // namespace

TEST_CASE("roofline labels: a pile of points at one spot still gets every label, none over another") {
    // twelve markers on one pixel in a 400 x 200 plot: the eight places around it hold eight labels,
    // the rest go farther out with leader lines
    const Box plot{0, 0, 400, 200};
    const std::vector<PlotPt> anchors(12, PlotPt{200, 100}), sizes(12, PlotPt{20, 17});
    const auto labels = place_labels(anchors, sizes, plot, 8, {});
    REQUIRE(labels.size() == 12);
    for (const auto& l : labels) CHECK(l.placed);
    CHECK_FALSE(labels[0].leader);  // the first takes the place right of the marker
    CHECK(labels[0].box.x0 > 200 + 8);
    CHECK(labels[11].leader);  // eight places around a marker: the ninth on is farther out
    check_labels(labels, anchors, plot, 8, {});
    // in a corner: the places outside the plot are skipped
    const std::vector<PlotPt> corner(6, PlotPt{399, 1});
    const auto in_corner = place_labels(corner, std::vector<PlotPt>(6, PlotPt{20, 17}), plot, 8, {});
    for (const auto& l : in_corner) CHECK(l.placed);
    check_labels(in_corner, corner, plot, 8, {});
    // a plot with room for two labels of 20 x 17 beside the marker: the rest are not shown, never overlapped
    const Box tiny{0, 0, 60, 20};
    const std::vector<PlotPt> mid(5, PlotPt{30, 10});
    const auto crowded = place_labels(mid, std::vector<PlotPt>(5, PlotPt{20, 17}), tiny, 5, {});
    size_t placed = 0;
    for (const auto& l : crowded) placed += l.placed;
    CHECK(placed >= 1);
    CHECK(placed < 5);
    check_labels(crowded, mid, tiny, 5, {});
}

// The steps that open the roofline (2.4, 10.9, 13.2) with the recorded rows at their shape, placed in
// the plot the view draws at 1280 x 800 (zoom 1, 17 px text) and 1920 x 1080 at zoom 2 (34 px). The
// view's area is worked out from the app's layout (main.cpp: the left column min(0.45 W, max(19 fs,
// 0.26 W)), 8 px paddings, a 14 px scrollbar, the tab bar and three lines of text above the plot) and
// the text from DejaVu Sans's widths (a digit 0.64 em, "TFLOP/s" under 4.8 em); the layout may be off
// by some pixels, so each size is also tried 10% narrower, wider, shorter and taller.
TEST_CASE("roofline labels at 1280x800 and 1920x1080 zoom 2: inside the plot, none over another") {
    const MeasuredSet ms = load_measurements(std::string(FLASHSIM_SOURCE_DIR) + "/results");
    struct Opened {
        std::string where;
        std::vector<RoofPoint> pts;
        std::vector<RoofCeiling> roofs;
    };
    std::vector<Opened> opened;
    size_t recorded = 0;
    for (const auto& lesson_step :
         {std::pair<std::string, std::string>{"two-memories", "The roofline and its ridge point"},
          {"measured", "Each kernel on the roofline"},
          {"decoding", "Why decoding waits on memory"}}) {
        const std::string& id = lesson_step.first;  // named, not bound: CAPTURE takes no structured binding
        const std::string& title = lesson_step.second;
        const int li = course().find(id);
        REQUIRE(li >= 0);
        const LessonDoc& L = course().lessons[static_cast<size_t>(li)];
        int si = -1;
        for (size_t k = 0; k < L.steps.size(); ++k)
            if (L.steps[k].title == title) si = static_cast<int>(k);
        CAPTURE(title);
        REQUIRE(si >= 0);
        ViewState v;
        Simulations sims;
        REQUIRE(open_lesson_step(course(), li, si, v, sims).empty());
        CHECK(v.panel == Panel::roofline);
        sims.wait();
        REQUIRE(sims.current());
        std::string note;
        Opened o{id, roof_points(*sims.current(), ms, v.decode, note), roof_ceilings(sims.current()->machine)};
        for (const auto& p : o.pts) recorded += p.measured;
        opened.push_back(std::move(o));
    }
    CHECK(recorded >= 4);  // the H200's recorded rows are there: standard, flash1, flash2, flash2h measured
    size_t checked = 0;
    for (const auto& size : {std::tuple{1280.0f, 800.0f, 17.0f}, std::tuple{1920.0f, 1080.0f, 34.0f}}) {
        const float W = std::get<0>(size), H = std::get<1>(size), fs = std::get<2>(size);
        const float left_col = std::min(0.45f * W, std::max(19 * fs, 0.26f * W));
        const float view_w = W - left_col - 3 * 8 - 14, view_h = H - 2 * 8 - (fs + 10) - 3 * (fs + 4) - 14;
        for (float kw : {0.9f, 1.0f, 1.1f})
            for (float kh : {0.9f, 1.0f, 1.1f})
                for (const Opened& o : opened) {
                    CAPTURE(o.where);
                    CAPTURE(W);
                    CAPTURE(kw);
                    CAPTURE(kh);
                    const RoofPlotLayout lay = roof_plot_layout(0, 0, view_w * kw, view_h * kh, fs, 5 * 0.64f * fs);
                    const RoofAxes ax = roof_axes(o.roofs, o.pts, lay.plot);
                    std::vector<PlotPt> anchors, sizes;
                    for (size_t i = 0; i < o.pts.size(); ++i)
                        if (o.pts[i].intensity() > 0 && o.pts[i].rate() > 0) {
                            anchors.push_back(ax.at(o.pts[i]));
                            sizes.push_back({0.64f * fs * float(std::to_string(i + 1).size()), fs});
                        }
                    const std::vector<Box> keep_out = {
                        {lay.plot.x0 + 4, lay.plot.y0 + 2, lay.plot.x0 + 4 + 4.8f * fs, lay.plot.y0 + 2 + fs}};
                    const auto labels = place_labels(anchors, sizes, lay.plot, 0.45f * fs, keep_out);
                    REQUIRE(labels.size() == anchors.size());
                    for (const auto& l : labels) CHECK(l.placed);  // room for every label at these sizes
                    check_labels(labels, anchors, lay.plot, 0.45f * fs, keep_out);
                    ++checked;
                }
    }
    CHECK(checked == 2 * 9 * opened.size());
}
