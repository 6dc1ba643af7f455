// The Decoding and Roofline views' numbers and the lesson steps that open them (issue 60), and a
// design exercise's answer as a run beside its reference. GL-free: the views' logic, not pixels.
#include <doctest/doctest.h>

#include <cstdlib>
#include <numeric>
#include <vector>
#include <string>

#include "sim/decode.hpp"
#include "sim/machine.hpp"
#include "sim/simulate.hpp"
#include "viz/app_args.hpp"
#include "viz/decode_view.hpp"
#include "viz/design_run.hpp"
#include "viz/lessons_view.hpp"
#include "viz/measurement.hpp"
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
