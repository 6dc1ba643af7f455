// What the app reads: its command line, measured results, lessons, the glossary, the charts' series.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <regex>
#include <sstream>

#include "lessons/lib/glossary.hpp"
#include "lessons/lib/lesson.hpp"
#include "sim/tensor.hpp"
#include "viz/app_args.hpp"
#include "viz/lessons_view.hpp"
#include "viz/measurement.hpp"
#include "viz/series.hpp"

using namespace viz;

namespace {
std::string parse(std::vector<const char*> argv, AppArgs& a) {
    argv.insert(argv.begin(), "flashsim-app");
    bool help = false;
    std::string text;
    return parse_app_args(static_cast<int>(argv.size()), argv.data(), a, &help, &text);
}
}  // namespace

TEST_CASE("app arguments: good ones parse, bad ones get a one-line reason") {
    AppArgs a;
    CHECK(parse({"--screenshot", "x.png", "--panel", "compare", "--size", "1024x640", "--step", "2"}, a).empty());
    CHECK(a.panel == Panel::compare);
    CHECK(a.width == 1024);
    CHECK(a.height == 640);
    CHECK(a.lesson_step == 1);
    CHECK(a.frames == 3);  // a screenshot renders a few frames by default
    AppArgs b;
    CHECK(parse({"--panel", "hbm"}, b).find("--panel must be one of") != std::string::npos);
    AppArgs c;
    CHECK(parse({"--size", "big"}, c).find("--size must be WIDTHxHEIGHT") != std::string::npos);
    AppArgs d;
    CHECK(parse({"--step", "0"}, d).find("from 1") != std::string::npos);
    AppArgs e;
    CHECK(parse({"--screenshot", "shot.jpg"}, e).find(".png") != std::string::npos);
    AppArgs f;
    CHECK(parse({"--frames", "0"}, f).find("--frames") != std::string::npos);
    AppArgs g;
    CHECK_FALSE(parse({"--no-such-flag"}, g).empty());
    {  // out of range: refused on the command line with the range, not taken and clamped on screen
        AppArgs x;
        CHECK(parse({"--gpus", "0"}, x).find("--gpus must be 1 to 64") != std::string::npos);
        CHECK(parse({"--gpus", "65"}, x).find("got 65") != std::string::npos);
        CHECK(parse({"--gpus", "64"}, x).empty());
        AppArgs y;
        CHECK(parse({"--anim-step", "-1"}, y).find("--anim-step counts") != std::string::npos);
        AppArgs z;
        CHECK(parse({"--font-size", "0"}, z).find("--font-size must be between 8 and 64") != std::string::npos);
        CHECK(parse({"--font-size", "nan"}, z).find("--font-size") != std::string::npos);
        AppArgs s;
        const std::string sp = parse({"--speed", "1e308"}, s);
        CHECK(sp.find("got 1e+308") != std::string::npos);
        CHECK(sp.size() < 120);  // not 309 digits
        AppArgs w;
        CHECK(parse({"--size", "320x240"}, w).find("640x400") != std::string::npos);
        CHECK(parse({"--size", "640x400"}, w).empty());
    }
    AppArgs h;
    CHECK(parse({"--algo", "flash3"}, h).find("--algo") != std::string::npos);
}

TEST_CASE("measurements are read tolerantly: missing fields stay missing") {
    const std::string doc = R"({"device": "NVIDIA H200", "driver": "13.0", "date": "2026-11-29T12:00:00Z",
        "git_commit": "abc123", "rows": [
          {"variant": "flash2", "pass": "forward", "seq": 4096, "head_dim": 128, "batch": 4, "heads": 16,
           "dtype": "bf16", "causal": false, "ms_median": 0.5, "tflops": 550.0, "dram_read_bytes": 1000,
           "dram_write_bytes": 500, "sim_hbm_read_bytes": 900, "sim_hbm_write_bytes": 500,
           "ratio_to_sdpa_flash": 0.93, "tiles": {"block_rows": 128, "block_cols": 64, "sram_bytes": 98304},
           "sim_l2_hbm_read_bytes": 800, "sim_l2_hbm_write_bytes": 500, "sim_l2_counters_view_bytes": 1450,
           "counters_residue_bytes": 250},
          {"variant": "standard", "seq": 1024, "head_dim": 64, "ms_median": null, "dram_read_bytes": null},
          {"variant": "flash1", "seq": 1024, "head_dim": 64, "error": "launch failed"}]})";
    const MeasuredFile f = parse_measurements(doc, "h200/bench.json");
    CHECK(f.error.empty());
    CHECK(f.device == "NVIDIA H200");
    CHECK(f.commit == "abc123");
    REQUIRE(f.rows.size() == 3);
    const MeasuredRow& r = f.rows[0];
    CHECK(r.ms == 0.5);
    CHECK(r.dram_total() == 1500.0);
    CHECK(r.sim_total() == 1400.0);
    CHECK(r.block_rows == 128);
    CHECK(r.sim_l2_total() == 1300.0);
    CHECK(r.sim_l2_counters_view == 1450.0);
    CHECK(r.counters_residue == 250.0);
    CHECK_FALSE(f.rows[1].sim_l2_counters_view.has_value());
    REQUIRE(r.vs_torch.size() == 1);
    CHECK(r.vs_torch[0].first == "ratio_to_sdpa_flash");
    CHECK(f.rows[1].pass == "forward");
    CHECK_FALSE(f.rows[1].ms.has_value());
    CHECK_FALSE(f.rows[1].dram_total().has_value());
    CHECK(f.rows[2].error == "launch failed");

    // rows merged from three calls, two of them on one day: each commit, each day once
    const MeasuredFile m = parse_measurements(R"({"device": "NVIDIA H200", "rows": [], "runs": [
        {"date": "2026-11-29T18:32:47Z", "git_commit": "c03afe0"},
        {"date": "2026-12-01T12:22:09Z", "git_commit": "4e97bf5"},
        {"date": "2026-12-01T18:04:30Z", "git_commit": "0db4d4a"}]})",
                                              "h200/bench.json");
    CHECK(m.date == "2026-11-29 and 2026-12-01");
    CHECK(m.commit == "c03afe0, 4e97bf5, 0db4d4a");

    // a ring row (flashsim bench --ring): named by its P, layout and transport, timed by its forward
    const MeasuredFile ring = parse_measurements(R"({"device": "NVIDIA H200", "rows": [
        {"variant": "flash2h", "pass": "ring", "transport": "emulated", "gpus": 4, "layout": "balanced",
         "seq": 32768, "head_dim": 128, "forward_ms": 8.521, "backward_ms": 27.02}]})",
                                                 "h200/ring.json");
    REQUIRE(ring.rows.size() == 1);
    CHECK(ring.rows[0].pass == "ring forward, P = 4 balanced (emulated)");
    CHECK(ring.rows[0].label() == "flash2h [ring forward, P = 4 balanced (emulated)]");  // the table tells rows apart
    CHECK(ring.rows[0].ms.value_or(0) == 8.521);

    CHECK(parse_measurements("{not json", "x.json").error.find("cannot parse x.json") != std::string::npos);
    CHECK(parse_measurements(R"({"device": "x"})", "y.json").error.find("no \"rows\"") != std::string::npos);
}

// Rows of a side-by-side stage or of a mode name what sets them apart, and the timeline's lookup
// (rows_at) takes the kernel's default row, not one of them, whatever the order in the file.
TEST_CASE("side-by-side and mode rows are tagged, and rows_at skips them") {
    MeasuredSet ms;
    ms.files.push_back(parse_measurements(R"({"device": "NVIDIA H200", "rows": [
        {"variant": "flash2h", "pass": "backward", "seq": 8192, "head_dim": 128, "batch": 2, "heads": 16,
         "ms_median": 9.47, "mode": "deterministic"},
        {"variant": "flash2h", "pass": "backward", "seq": 8192, "head_dim": 128, "batch": 2, "heads": 16,
         "ms_median": 4.79},
        {"variant": "flash2h", "pass": "forward", "seq": 4096, "head_dim": 128, "ms_median": 0.84,
         "knob": "on", "knob_var": "FLASHSIM_FLASH2H_PINGPONG", "mask_tag": "none2"},
        {"variant": "flash2h", "pass": "forward", "seq": 4096, "head_dim": 64, "ms_median": 1.41,
         "knob": "FLASHSIM_FLASH2H_WG=2+FLASHSIM_FLASH2H_PINGPONG=on", "knob_var": "ENV", "mask_tag": "causal1"},
        {"variant": "flash2h", "pass": "forward", "seq": 4096, "head_dim": 128, "ms_median": 0.83,
         "grid": "static", "mask_tag": "none"}]})",
                                          "h200/bench.json"));
    const auto& rows = ms.files[0].rows;
    REQUIRE(rows.size() == 5);
    CHECK(rows[0].label() == "flash2h [deterministic]");
    CHECK(rows[1].tag.empty());
    CHECK(rows[1].label() == "flash2h");
    CHECK(rows[2].label() == "flash2h [FLASH2H_PINGPONG=on, round 2]");
    CHECK(rows[3].tag == "FLASH2H_WG=2+FLASH2H_PINGPONG=on, round 1");
    CHECK(rows[4].tag == "grid static");  // a mask_tag without a round adds nothing
    const auto bwd = rows_at(ms, "backward", 8192, 128, false, 2, 16);
    REQUIRE(bwd.size() == 1);
    CHECK(*bwd[0]->ms == doctest::Approx(4.79));
    CHECK(rows_at(ms, "forward", 4096, 128, false, 1, 1).empty());  // only tagged rows there
}

// The results folder holds files of several GPUs (an H100's probes sort before h200/bench.json): the
// timeline's measured bars are the chosen preset's GPU's, each row naming the device it ran on.
TEST_CASE("rows_at keeps the chosen GPU's rows; a merged row's own run names its device") {
    CHECK(device_matches("NVIDIA H100 80GB HBM3", "H100-SXM"));
    CHECK(device_matches("NVIDIA H200", "H200"));
    CHECK_FALSE(device_matches("NVIDIA H200", "H100-SXM"));
    CHECK_FALSE(device_matches("NVIDIA H2000", "H200"));  // a word, not a prefix
    CHECK_FALSE(device_matches("NVIDIA H200", ""));
    MeasuredSet ms;
    ms.files.push_back(parse_measurements(R"({"device": "NVIDIA H100 80GB HBM3", "rows": [
        {"variant": "flash2h", "pass": "forward", "seq": 8192, "head_dim": 128, "batch": 2, "heads": 16,
         "ms_median": 2.5}]})",
                                          "h100_x.json"));
    ms.files.push_back(parse_measurements(R"({"device": "NVIDIA H200", "rows": [
        {"variant": "flash2h", "pass": "forward", "seq": 8192, "head_dim": 128, "batch": 2, "heads": 16,
         "ms_median": 1.6},
        {"variant": "flash2", "pass": "forward", "seq": 8192, "head_dim": 128, "batch": 2, "heads": 16,
         "ms_median": 3.3, "run": {"device": "NVIDIA H100 80GB HBM3"}}]})",
                                          "h200/bench.json"));
    CHECK(ms.files[0].rows[0].device == "NVIDIA H100 80GB HBM3");
    CHECK(ms.files[1].rows[0].device == "NVIDIA H200");
    CHECK(ms.files[1].rows[1].device == "NVIDIA H100 80GB HBM3");
    const auto h200 = rows_at(ms, "forward", 8192, 128, false, 2, 16, "H200");
    REQUIRE(h200.size() == 1);
    CHECK(*h200[0]->ms == doctest::Approx(1.6));
    const auto h100 = rows_at(ms, "forward", 8192, 128, false, 2, 16, "H100-SXM");
    REQUIRE(h100.size() == 2);  // flash2h from its own file, flash2 by its row's run
    CHECK(*h100[0]->ms == doctest::Approx(2.5));
    CHECK(h100[1]->variant == "flash2");
    CHECK(rows_at(ms, "forward", 8192, 128, false, 2, 16, "A100-40GB").empty());
    CHECK(rows_at(ms, "forward", 8192, 128, false, 2, 16).size() == 2);  // no GPU named: the first of each
}

TEST_CASE("a missing results folder says how to produce it") {
    const MeasuredSet s = load_measurements("/nonexistent/results");
    CHECK(s.files.empty());
    CHECK(s.note.find("flashsim bench --json") != std::string::npos);
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "flashsim_viz_results_test";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(dir)) fs::remove(e.path());
    const MeasuredSet empty = load_measurements(dir.string());
    CHECK(empty.note.find("no *.json results") != std::string::npos);
    std::ofstream(dir / "a.json") << R"({"device": "GPU", "rows": [{"variant": "flash2", "seq": 512}]})";
    const MeasuredSet one = load_measurements(dir.string());
    REQUIRE(one.files.size() == 1);
    CHECK(one.files[0].rows.size() == 1);
    CHECK(one.note.empty());
}

TEST_CASE("the lesson library opens on the first lesson, or says why not") {
    // The repository's lessons: the app opens on lesson 1 (lessons/01-*.toml), whose id is its file's.
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    REQUIRE_MESSAGE(lib.error.empty(), lib.error);
    REQUIRE(lib.lessons.size() >= 12);
    CHECK(lib.find("1") == 0);
    CHECK(lib.lessons[0].id == "standard-attention");
    CHECK(lib.find("standard-attention") == 0);
    CHECK(lib.find("no-such-lesson") == -1);
    // No lessons where they are looked for: no lesson, and an error that names the place.
    ::setenv("FLASHSIM_LESSONS", "/no/such/lessons/dir", 1);
    const LessonLibrary none = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    CHECK(none.lessons.empty());
    CHECK(none.error.find("/no/such/lessons/dir") != std::string::npos);
}

TEST_CASE("a lesson's softmax steps carry its [softmax] example to the softmax panel") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    const int k = lib.find("online-softmax");
    REQUIRE(k >= 0);
    // lessons/04-online-softmax.toml: scores = [1.4, 3.9, ...], block = 4, values = [[0, 1], ...]
    // A step that names a config (the last: config = "tiny", row = 2) shows that config's recorded row.
    int softmax_steps = 0, recorded_steps = 0;
    for (const LessonStep& s : lib.lessons[static_cast<size_t>(k)].steps) {
        if (s.panel != Panel::softmax) {
            CHECK(s.block == 0);
            continue;
        }
        if (s.title.find("real tile loop") != std::string::npos) {
            ++recorded_steps;
            continue;
        }
        ++softmax_steps;
        CHECK(s.scores_text == "1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3");
        CHECK(s.values_text == "0, 1; 1, 0; 2, 1; 1, 2; 3, 2; 0, 3; 2, 2; 1, 1");
        CHECK(s.block == 4);
        // "Block 1" opens on the first block (view block = 1); the others on the final state
        CHECK(s.focus == (s.title == "Block 1" ? 0 : -1));
    }
    CHECK(softmax_steps > 0);
    CHECK(recorded_steps == 1);
    // A lesson without [softmax] leaves the panel's example as it is.
    const int first = lib.find("standard-attention");
    REQUIRE(first >= 0);
    for (const LessonStep& s : lib.lessons[static_cast<size_t>(first)].steps) CHECK(s.block == 0);
}

// The recorded row's scores and values, derived here from the generator's Q, K, V in float64
// (row 2 of lesson 5's toy problem: N = 8, d = 4, fp32, key blocks of 4), not from the walk's record.
TEST_CASE("a softmax step naming a config shows that config's recorded row, block by block") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    const int k = lib.find("flash-forward");
    REQUIRE(k >= 0);
    const LessonDoc& L = lib.lessons[static_cast<size_t>(k)];
    const auto it =
        std::find_if(L.steps.begin(), L.steps.end(), [](const LessonStep& s) { return s.panel == Panel::softmax; });
    REQUIRE(it != L.steps.end());
    CHECK(it->block == 4);
    CHECK(it->focus == -1);  // the step is about the second (last) block: the final state
    const auto loaded = lessons::load_file(std::string(FLASHSIM_SOURCE_DIR) + "/lessons/05-flash-forward.toml");
    REQUIRE(loaded.lesson);
    const sim::Problem p = lessons::simulate_config(*loaded.lesson, "tiny").problem;
    REQUIRE(p.seq == 8);
    REQUIRE(p.head_dim == 4);
    const sim::TensorF Q = sim::generate_input(p, sim::InputTensor::Q), K = sim::generate_input(p, sim::InputTensor::K),
                       V = sim::generate_input(p, sim::InputTensor::V);
    auto numbers = [](std::string t) {
        for (char& c : t)
            if (c == ',' || c == ';') c = ' ';
        std::istringstream in(t);
        std::vector<double> out;
        for (double x; in >> x;) out.push_back(x);
        return out;
    };
    const std::vector<double> scores = numbers(it->scores_text), values = numbers(it->values_text);
    REQUIRE(scores.size() == 8);
    REQUIRE(values.size() == 8 * 4);
    for (int key = 0; key < 8; ++key) {
        double dot = 0;
        for (int x = 0; x < 4; ++x) dot += double(Q.head(0)[2 * 4 + x]) * double(K.head(0)[key * 4 + x]);
        CHECK(scores[key] == doctest::Approx(dot / 2.0).epsilon(1e-6));  // 1/sqrt(4)
        for (int x = 0; x < 4; ++x) CHECK(values[key * 4 + x] == doctest::Approx(V.head(0)[key * 4 + x]).epsilon(1e-7));
    }
}

// lessons/11-exact.toml's window32 (window = 64): the step comparing it opens the views on that
// sliding window, and the problem the app simulates carries it (a window is a causal mask).
TEST_CASE("a lesson config's sliding window reaches the app's problem") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    const int k = lib.find("exact");
    REQUIRE(k >= 0);
    int windowed = 0;
    for (const LessonStep& s : lib.lessons[static_cast<size_t>(k)].steps)
        if (s.params && s.params->window > 0) {
            ++windowed;
            CHECK(s.params->window == 64);
            const sim::Problem p = problem_of(*s.params);
            CHECK(p.window == 64);
            CHECK(p.causal);
        }
    CHECK(windowed == 1);
    Params plain;
    CHECK(problem_of(plain).window == 0);
}

TEST_CASE("every term the app's (?) markers use has a glossary entry") {
    // Scan the app's sources for help("...") and term("...", "...") and look each term up.
    namespace fs = std::filesystem;
    const std::regex call(R"re(help\("([^"]+)"\)|term\("[^"]*",\s*"([^"]+)"\))re");
    int found = 0;
    for (const auto& e : fs::directory_iterator(fs::path(FLASHSIM_SOURCE_DIR) / "viz")) {
        if (e.path().extension() != ".cpp") continue;
        std::ifstream in(e.path());
        std::stringstream b;
        b << in.rdbuf();
        const std::string s = b.str();
        for (auto it = std::sregex_iterator(s.begin(), s.end(), call); it != std::sregex_iterator(); ++it) {
            const std::string t = (*it)[1].matched ? (*it)[1].str() : (*it)[2].str();
            INFO(e.path().filename().string() << ": " << t);
            CHECK(lessons::glossary_has(t));
            ++found;
        }
    }
    CHECK(found > 20);
    for (const char* t : {"standard", "flash1", "flash2", "HBM", "SRAM", "L2", "tile", "B_r", "B_c", "online softmax",
                          "rescale", "LSE"})
        CHECK(lessons::glossary_has(t));
    CHECK(lessons::glossary("no such term").find("add it to lessons/lib/glossary.hpp") != std::string::npos);
}

TEST_CASE("charts: standard's bytes grow like N^2; flash1's shrink like 1/M") {
    Params p;
    p.seq = 1024;
    p.head_dim = 64;
    std::atomic<int> done{0}, total{0};
    const auto cd = compute_charts(p, &done, &total);
    CHECK(done == total);
    REQUIRE(cd->vs_seq.size() == 3);
    const Series& st = cd->vs_seq[0];
    REQUIRE(st.x.size() == seq_points().size());
    // Closed form for standard with 128 x 128 GEMM tiles, d = 64, fp16 (e = 2), while a row of S
    // (4N bytes in fp32) fits the 227 KiB SRAM: S written and read, P written and read (4 N^2 e);
    // Q read once and O written once (2 N d e); K read once per query tile in S = QK^T and V once
    // per query tile in O = PV (2 T_r N d e, T_r = N / 128).
    for (size_t i = 0; i < st.x.size(); ++i) {
        const double n = st.x[i], e = 2, d = 64;
        if (4 * n > 227 * 1024) continue;  // rows that do not fit take two passes over S
        const double tr = std::ceil(n / 128);
        CHECK(st.y[i] == doctest::Approx(4 * n * n * e + 2 * n * d * e + 2 * tr * n * d * e).epsilon(1e-12));
    }
    const size_t k = st.x.size() - 1;
    CHECK(st.y[k] / st.y[k - 1] > 4.0);  // N = 65536: the softmax re-reads S in two passes
    // flash1 (Algorithm 1): Q, O, l, m are re-read T_c = N / B_c times, B_c ~ M / 4d: doubling M at
    // small M about halves the traffic.
    const Series& f1 = cd->vs_sram[1];
    REQUIRE(f1.x.size() >= 2);
    CHECK(f1.y[1] / f1.y[0] < 0.7);
    CHECK(f1.y[1] / f1.y[0] > 0.45);
}

TEST_CASE("charts count DRAM through the L2 model by default; flash's DRAM bytes grow slower than N^2") {
    const ViewState fresh;
    CHECK(fresh.chart == static_cast<int>(Count::l2_model));
    Params p;
    p.seq = 1024;
    p.head_dim = 64;
    const auto cd = compute_charts(p, nullptr, nullptr);
    REQUIRE(cd->vs_seq.size() == 3);
    for (const Series& s : cd->vs_seq) {
        REQUIRE(s.y_l2.size() == s.x.size());
        for (size_t i = 0; i < s.x.size(); ++i) {
            CAPTURE(s.x[i]);
            // the L2 model runs at every flash point; standard's N x N matrices exceed the chart's
            // lookup budget beyond N = 8192 (those points are gaps, not guesses)
            if (s.algo != sim::Algo::standard || s.x[i] <= 8192) REQUIRE(std::isfinite(s.y_l2[i]));
            if (!std::isfinite(s.y_l2[i])) continue;
            // an L2 only removes re-reads: never more DRAM bytes than HBM<->SRAM bytes, never fewer
            // than Q, K, V read once and O written once (4 N d e)
            CHECK(s.y_l2[i] <= s.y[i]);
            CHECK(s.y_l2[i] >= 4 * s.x[i] * 64 * 2);
        }
    }
    // flash2 on an H200 (60 MiB of L2): K and V of one head (4 N d bytes at fp16 <= 16 MiB at
    // N = 65536) mostly stay in L2, so DRAM sees each tensor about once: 4 N d e within 2%, linear
    // in N, while the paper's count re-reads K and V once per query tile (quadratic).
    const Series& f2 = cd->vs_seq[2];
    const size_t k = f2.x.size() - 1;
    CHECK(f2.y_l2[k] == doctest::Approx(4 * f2.x[k] * 64 * 2).epsilon(0.02));
    CHECK(f2.y[k] / f2.y[k - 1] > 3.0);
    CHECK(f2.y_l2[k] / f2.y_l2[k - 1] == doctest::Approx(2.0).epsilon(0.02));
}

TEST_CASE("measured DRAM points: rows whose configuration matches, per head") {
    MeasuredSet ms;
    ms.files.push_back(parse_measurements(R"({"device": "NVIDIA H200", "rows": [
        {"variant": "flash2", "pass": "forward", "seq": 1024, "head_dim": 64, "batch": 2, "heads": 4,
         "dtype": "bf16", "causal": false, "dram_read_bytes": 6000, "dram_write_bytes": 2000},
        {"variant": "flash2", "pass": "forward", "seq": 2048, "head_dim": 128, "batch": 1, "heads": 1,
         "dtype": "bf16", "causal": false, "dram_read_bytes": 1, "dram_write_bytes": 1},
        {"variant": "flash2", "pass": "backward", "seq": 1024, "head_dim": 64, "batch": 1, "heads": 1,
         "dtype": "bf16", "causal": false, "dram_read_bytes": 1, "dram_write_bytes": 1},
        {"variant": "flash1", "pass": "forward", "seq": 1024, "head_dim": 64, "batch": 1, "heads": 1,
         "dtype": "fp32", "causal": false, "dram_read_bytes": 1, "dram_write_bytes": 1},
        {"variant": "standard", "pass": "forward", "seq": 1024, "head_dim": 64, "batch": 1, "heads": 1,
         "dtype": "fp16", "causal": true, "dram_read_bytes": 1, "dram_write_bytes": 1}]})",
                                          "x/h200.json"));
    Params p;  // fp16 (2 bytes, as bf16), d = 64, not causal, H200
    p.head_dim = 64;
    const auto pts = measured_points(ms, p);
    REQUIRE(pts.size() == 1);  // flash2 only: d, pass, element size and mask rule out the others
    CHECK(pts[0].algo == sim::Algo::flash2);
    CHECK(pts[0].x == std::vector<double>{1024});
    CHECK(pts[0].y == std::vector<double>{8000.0 / 8});  // 2 x 4 heads
    p.gpu = "A100-80GB";
    CHECK(measured_points(ms, p).empty());  // another GPU's counters are not this preset's
}

TEST_CASE("a lesson that fails to load is listed with its error in its place") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "flashsim_viz_bad_lessons";
    fs::create_directories(dir);
    for (const auto& e : fs::directory_iterator(dir)) fs::remove(e.path());
    std::ofstream(dir / "01-broken.toml") << "id = \"broken\"\ntitle = [unclosed\n";
    ::setenv("FLASHSIM_LESSONS", dir.c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    REQUIRE_FALSE(lib.lessons.empty());
    CHECK_FALSE(lib.lessons[0].error.empty());
    CHECK(lib.lessons[0].error.find("01-broken.toml") != std::string::npos);
    CHECK(lib.lessons[0].steps.empty());
}

TEST_CASE("--tour: frames a step, and the flags that would fight it are refused") {
    AppArgs a;
    CHECK(parse({"--tour"}, a).empty());
    CHECK(a.tour);
    CHECK(a.frames == 2);
    AppArgs b;
    CHECK(parse({"--tour", "--frames", "5", "--size", "800x600"}, b).empty());
    CHECK(b.frames == 5);
    for (std::vector<const char*> bad : {std::vector<const char*>{"--tour", "--lesson", "2"},
                                         {"--tour", "--step", "3"},
                                         {"--tour", "--panel", "memory"},
                                         {"--tour", "--screenshot", "x.png"},
                                         {"--tour", "--seq", "1024"},
                                         {"--tour", "--causal"}}) {
        AppArgs c;
        const std::string err = parse(bad, c);
        CHECK_MESSAGE(err.find(std::string("cannot be combined with ") + bad[1]) != std::string::npos, err);
        CHECK(err.find('\n') == std::string::npos);
    }
    // the contact sheets are the tour's: with it, a folder; without it, refused in one line
    AppArgs d;
    CHECK(parse({"--tour", "--contact-sheet", "sheets"}, d).empty());
    CHECK(d.contact_sheet == "sheets");
    AppArgs e;
    CHECK(parse({"--contact-sheet", "sheets"}, e) == "--contact-sheet needs --tour: the sheets show the tour's steps");
}

TEST_CASE("--tour's lines: one a step, a failed lesson by its file, a summary, the failures named") {
    LessonDoc a;
    a.id = "tiling";
    a.steps.resize(4);
    LessonDoc broken;
    broken.id = broken.file = "lessons/02-broken.toml";
    TourLog t;
    CHECK(t.step_done(a, 0, Panel::memory, "") == "tour: lesson tiling step 1/4 view memory");
    CHECK(t.step_done(a, 3, Panel::charts, "its view was not drawn") ==
          "tour: lesson tiling step 4/4 view charts FAILED: its view was not drawn");
    CHECK(t.step_done(broken, 0, Panel::memory, "failed to load: x") ==
          "tour: lesson lessons/02-broken.toml FAILED: failed to load: x");
    CHECK(t.rendered == 1);
    CHECK(t.summary(2) == "tour: rendered 1 of 3 steps of 2 lessons");
    CHECK(t.failures() ==
          "the tour could not render 2 step(s): lesson tiling step 4/4 (its view was not drawn); "
          "lesson lessons/02-broken.toml (failed to load: x)");
    CHECK(TourLog{}.failures().empty());
    // text cut mid-word: its own line, and the tour fails on it although every step rendered
    TourLog c;
    CHECK(c.step_done(a, 1, Panel::roofline, "") == "tour: lesson tiling step 2/4 view roofline");
    CHECK(c.clipped(a, 1, Panel::roofline, "the card: 139.0") ==
          "tour: clipped lesson tiling step 2/4 view roofline: 'the card: 139.0'");
    CHECK(c.summary(1) == "tour: rendered 1 of 1 steps of 1 lessons");
    CHECK(c.failures() ==
          "1 line(s) of text cut by the edge of their window, pane or cell (the 'tour: clipped' lines), the first "
          "in lesson tiling step 2/4: 'the card: 139.0'");
}

TEST_CASE("open_lesson_step opens a step as Next does, and says why it cannot") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    REQUIRE(lib.lessons.size() >= 2);
    const LessonDoc& L = lib.lessons[1];
    REQUIRE(L.error.empty());
    REQUIRE_FALSE(L.steps.empty());
    const int last = static_cast<int>(L.steps.size()) - 1;
    ViewState v;
    Simulations sims;
    // a step past the lesson's end opens its last step, as the lesson panel clamps it
    CHECK(open_lesson_step(lib, 1, last + 5, v, sims).empty());
    CHECK(v.lesson == 1);
    CHECK(v.lesson_step == last);
    const LessonStep& s = L.steps[static_cast<size_t>(last)];
    if (s.panel) CHECK(v.panel == *s.panel);
    CHECK(v.columns == s.columns);
    if (s.params) CHECK(v.edit == *s.params);
    sims.wait();
    CHECK(open_lesson_step(lib, static_cast<int>(lib.lessons.size()), 0, v, sims).find("no lesson") == 0);
    CHECK(v.lesson == 1);  // nothing changed
    // a lesson that failed to load: its error, and the view left as it was
    LessonLibrary broken;
    LessonDoc d;
    d.id = d.file = "01-broken.toml";
    d.error = "01-broken.toml:2:9: unclosed array";
    broken.lessons.push_back(d);
    const Panel before = v.panel;
    CHECK(open_lesson_step(broken, 0, 0, v, sims) == "failed to load: 01-broken.toml:2:9: unclosed array");
    CHECK(v.lesson == 0);
    CHECK(v.panel == before);
}

TEST_CASE("exercises in the app: a prediction opens the next steps once made, a design is checked at the end") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    // lessons/01-standard-attention.toml: a prediction (predict = ..., solution "value=33554432")
    const int k = lib.find("standard-attention");
    REQUIRE(k >= 0);
    const LessonDoc& L = lib.lessons[static_cast<size_t>(k)];
    REQUIRE(L.exercise.has_value());
    const ExerciseDoc& ex = *L.exercise;
    CHECK(ex.predict);
    CHECK(exercise_step(ex, static_cast<int>(L.steps.size())) == 0);
    ViewState v;
    v.lesson = k;
    v.lesson_step = 0;
    CHECK(!next_step_open(lib, v));  // nothing predicted yet: the steps that show the number stay shut
    CHECK(step_open(&ex, ExerciseState{}, 0));
    // text that is not a number: said, and still shut
    ExerciseState st;
    st.typed = "about a lot";
    st = submit_answer(ex, st);
    CHECK(!st.answered);
    CHECK(!st.message.empty());
    CHECK(!step_open(&ex, st, 1));
    st.typed = "";
    CHECK(submit_answer(ex, st).message.find("Type your answer") != std::string::npos);
    // the lesson's own worked answer, typed as a bare number: right, and the steps open
    const std::string& solution = ex.lesson->exercise->solution;  // "value=33554432"
    REQUIRE(solution.rfind("value=", 0) == 0);
    st.typed = solution.substr(6);
    st = submit_answer(ex, st);
    CHECK(st.answered);
    CHECK(st.passed);
    CHECK(step_open(&ex, st, 1));
    v.exercises[L.id] = st;
    CHECK(next_step_open(lib, v));
    // a wrong prediction is still a prediction: the steps open, and the verdict says it missed
    ExerciseState wrong;
    wrong.typed = ex.lesson->exercise->not_solution;  // "value=67108864"
    wrong = submit_answer(ex, wrong);
    CHECK(wrong.answered);
    CHECK(!wrong.passed);
    CHECK(step_open(&ex, wrong, 3));
    // skipping opens them too
    ExerciseState skip;
    skip.skipped = true;
    CHECK(step_open(&ex, skip, 1));

    // lessons/06-fa1-vs-fa2.toml: a design (block_rows, block_cols), checked at the last step, no lock
    const int j = lib.find("fa1-vs-fa2");
    REQUIRE(j >= 0);
    const LessonDoc& D = lib.lessons[static_cast<size_t>(j)];
    REQUIRE(D.exercise.has_value());
    CHECK(!D.exercise->predict);
    CHECK(exercise_step(*D.exercise, static_cast<int>(D.steps.size())) == static_cast<int>(D.steps.size()) - 1);
    CHECK(step_open(&*D.exercise, ExerciseState{}, 1));
    CHECK(answer_format(*D.exercise).find("block_rows=...") != std::string::npos);
    ExerciseState a;
    a.typed = D.exercise->lesson->exercise->solution;  // "block_rows=16,block_cols=128"
    a = submit_answer(*D.exercise, a);
    CHECK(a.answered);
    CHECK(a.passed);
    ExerciseState b;
    b.typed = D.exercise->lesson->exercise->not_solution;  // "block_rows=64,block_cols=32"
    b = submit_answer(*D.exercise, b);
    CHECK(!b.passed);
    CHECK(!b.message.empty());
    ExerciseState c;
    c.typed = "block_rows=sixteen";
    c = submit_answer(*D.exercise, c);
    CHECK(!c.passed);
    CHECK(!c.message.empty());
}

TEST_CASE("a prediction in the learner's words: separators, units, 0 refused, the verdict as a factor") {
    // units by hand: 2 GiB = 2 x 1024^3 bytes; 3 MB = 3 x 10^6
    double x = 0;
    CHECK(parse_prediction("41,943,040", x).empty());
    CHECK(x == 41943040.0);
    CHECK(parse_prediction("2 GiB", x).empty());
    CHECK(x == 2.0 * 1024 * 1024 * 1024);
    CHECK(parse_prediction("3MB", x).empty());
    CHECK(x == 3e6);
    CHECK(parse_prediction("4.2e7", x).empty());
    CHECK(x == 4.2e7);
    CHECK(parse_prediction("0", x).find("more than 0") != std::string::npos);
    CHECK(parse_prediction("-5", x).find("more than 0") != std::string::npos);
    CHECK(parse_prediction("abc", x).find("not a number") != std::string::npos);
    CHECK(parse_prediction("5 parsecs", x).find("not a unit") != std::string::npos);
    CHECK(grouped(33554432) == "33,554,432");
    CHECK(grouped(999) == "999");
    // 2^25 / 2^10 = 32,768: two significant digits
    CHECK(how_far(1024, 33554432) == "about 33,000 times too small");
    CHECK(how_far(3, 1) == "about 3.0 times too large");
    CHECK(how_far(1.25, 1) == "about 25% too large");
    CHECK(learner_words("Use smaller --block-rows/--block-cols or a larger --sram") ==
          "Use smaller block_rows/block_cols or a larger sram");
    CHECK(learner_words("total = 135282688 (at most 50331648), 1.5e12, row 3") ==
          "total = 135,282,688 (at most 50,331,648), 1.5e12, row 3");

    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    const int k = lib.find("standard-attention");
    REQUIRE(k >= 0);
    const ExerciseDoc& ex = *lib.lessons[static_cast<size_t>(k)].exercise;
    const std::string& solution = ex.lesson->exercise->solution;  // "value=N", the lesson's worked answer
    REQUIRE(solution.rfind("value=", 0) == 0);
    const double truth = std::stod(solution.substr(6));
    ExerciseState st;
    st.typed = "0";
    st = submit_answer(ex, st);
    CHECK_FALSE(st.answered);   // 0 is no prediction: refused, the gate stays shut
    st.typed = grouped(truth);  // typed with separators
    st = submit_answer(ex, st);
    CHECK(st.passed);
    st = ExerciseState{};
    st.typed = grouped(truth / 1024);
    st = submit_answer(ex, st);
    CHECK(st.answered);
    CHECK_FALSE(st.passed);
    CHECK(st.message.find(how_far(truth / 1024, truth)) != std::string::npos);
    CHECK(st.message.find("factor of") == std::string::npos);
    CHECK(st.message.find("--") == std::string::npos);
}
