// The lessons as one course: glossary terms are linked before they are used, the claims table of
// docs/lessons.md points at steps that exist and types no figures, and quantities stated by more
// than one lesson agree.
#include <doctest/doctest.h>

#include <algorithm>
#include <cctype>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <regex>
#include <set>
#include <sstream>

#include "lessons/lib/glossary.hpp"
#include "lessons/lib/lesson.hpp"
#include "tests/lessons/course_cache.hpp"

using namespace lessons;

namespace {
std::vector<Lesson> course() {
    std::vector<Lesson> v;
    for (const auto& x : lessons_test::loaded_course())
        if (x.lesson) v.push_back(*x.lesson);
    std::sort(v.begin(), v.end(), [](const Lesson& a, const Lesson& b) { return a.number < b.number; });
    return v;
}
const std::vector<Lesson>& all_lessons() {
    static const std::vector<Lesson> v = course();
    return v;
}
const Lesson& lesson(int64_t n) {
    for (const auto& l : all_lessons())
        if (l.number == n) return l;
    FAIL("no lesson " << n);
    return all_lessons().front();
}

bool word_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

// Is `term` used in `text` as a word of its own (a plural 's' allowed)?
bool uses(const std::string& text, const std::string& term) {
    for (size_t at = text.find(term); at != std::string::npos; at = text.find(term, at + 1)) {
        if (at > 0 && word_char(text[at - 1])) continue;
        size_t end = at + term.size();
        if (end < text.size() && text[end] == 's') ++end;
        if (end < text.size() && word_char(text[end])) continue;
        return true;
    }
    return false;
}
}  // namespace

// Jargon a student meets in the prose: each must be linked (a step's `terms`) at or before the first
// step that uses it, counting steps through the course in lesson order.
TEST_CASE("every checked glossary term is linked at or before its first use") {
    for (const auto& t : checked_terms()) CHECK_MESSAGE(glossary_has(t), t);
    std::set<std::string> linked;
    for (const auto& l : all_lessons()) {
        for (size_t i = 0; i < l.steps.size(); ++i) {
            const Step& s = l.steps[i];
            for (const auto& t : s.terms) {
                CHECK_MESSAGE(glossary_has(t), t);
                linked.insert(t);
            }
            for (const auto& t : checked_terms()) {
                const std::string term(t);
                if (linked.count(term)) continue;
                CHECK_MESSAGE(!(uses(s.text, term) || uses(s.title, term)),
                              "step " << l.number << "." << (i + 1) << " uses '" << term
                                      << "' before any step links it (add it to that step's terms)");
            }
        }
    }
}

// "atomic add" (10.9, 11.5) once escaped the check: only "atomics" was a checked term, and the
// phrase does not contain that word. It is a term of its own now, linked where it is first used.
TEST_CASE("'atomic add' is checked, and linked at its first use (10.8)") {
    CHECK(std::find(std::begin(checked_terms()), std::end(checked_terms()), "atomic add") != std::end(checked_terms()));
    CHECK(glossary_has("atomic add"));
    CHECK(glossary("atomic add").find("memory") != std::string_view::npos);
    CHECK(uses("one bulk reduction per tile instead of an atomic add for every pair", "atomic add"));
    CHECK(uses("as atomic adds (flash2h adds", "atomic add"));
    CHECK(!uses("one atomic addition", "atomic add"));
    // The first step of the course that uses the phrase links it.
    bool found = false;
    for (const auto& l : all_lessons()) {
        for (size_t i = 0; i < l.steps.size() && !found; ++i) {
            if (!uses(l.steps[i].text, "atomic add")) continue;
            found = true;
            CHECK(l.number == 10);
            CHECK(i + 1 == 7);  // the training step
            const auto& t = l.steps[i].terms;
            CHECK(std::find(t.begin(), t.end(), "atomic add") != t.end());
        }
        if (found) break;
    }
    CHECK(found);
}

TEST_CASE("term matching: whole words, plural allowed") {
    CHECK(uses("one thread block here", "thread block"));
    CHECK(uses("132 SMs.", "SM"));
    CHECK(uses("LSE, D and dO", "D"));
    CHECK(!uses("dO only", "D"));
    CHECK(!uses("B_rows", "B_r"));
    CHECK(!uses("a 2D grid", "D"));
}

// docs/lessons.md's claims table names steps ("4.3", "5.2-5.4") and says in words what they compute;
// the figures themselves live in the lessons (flashsim lesson N --all), so they cannot go stale.
TEST_CASE("docs/lessons.md: the claims table names existing steps and types no figures") {
    std::ifstream f(std::string(FLASHSIM_LESSONS_DIR) + "/../docs/lessons.md");
    REQUIRE(f);
    std::string line;
    bool in_table = false;
    int rows = 0;
    const std::regex step_ref(R"((\d+)\.(\d+))");
    // A typed figure: a number with a unit or a ratio, or a grouped / decimal number.
    const std::regex figure(
        R"((\d[\d,]*(\.\d+)?\s*(x\b|%|KiB|MiB|GiB|KB|MB|GB|TB/s|us\b|ms\b|GFLOP|TFLOP|FLOP/byte|ulp))|\d,\d\d\d|\d\.\d)");
    while (std::getline(f, line)) {
        if (line.rfind("| claim (seed)", 0) == 0) {
            in_table = true;
            continue;
        }
        if (!in_table) continue;
        if (line.empty() || line[0] != '|') break;
        if (line.rfind("|---", 0) == 0) continue;
        // | claim | shown in | what the lesson computes |
        std::vector<std::string> cells;
        std::stringstream ss(line.substr(1));
        std::string c;
        while (std::getline(ss, c, '|')) cells.push_back(c);
        REQUIRE(cells.size() >= 3);
        ++rows;
        INFO(line);
        for (auto it = std::sregex_iterator(cells[1].begin(), cells[1].end(), step_ref); it != std::sregex_iterator();
             ++it) {
            const int64_t n = std::stoll((*it)[1]), k = std::stoll((*it)[2]);
            const Lesson& l = lesson(n);
            CHECK_MESSAGE(k >= 1, "step numbers start at 1");
            CHECK_MESSAGE(static_cast<size_t>(k) <= l.steps.size(),
                          "lesson " << n << " has " << l.steps.size() << " steps, not " << k);
        }
        CHECK_MESSAGE(!std::regex_search(cells[2], figure),
                      "a typed figure in the table: state it in words and "
                      "let the lesson compute it");
    }
    CHECK(rows > 20);
}

// Quantities more than one lesson states. Each lesson computes its own (from its own configurations),
// so two statements can only disagree if a configuration or an expression drifts; this pins them.
// (The H200 preset's constants, which every lesson reads by the same name, cannot disagree with
// themselves: the next test case checks them against sources outside the preset instead.)
TEST_CASE("a quantity stated by several lessons has one value") {
    struct Statement {
        int64_t lesson;
        const char* expr;
        double scale;  // what the statement is multiplied by to give the shared quantity
    };
    struct Quantity {
        const char* what;
        std::vector<Statement> statements;
    };
    const std::vector<Quantity> quantities = {
        {"S (or P) of one head at N = 8192, d = 128, fp16, in bytes",
         {{1, "standard.tensors.S.write_bytes", 1},
          {2, "standard.tensors.S.write_bytes", 1},
          {3, "standard.tensors.S.total / 2", 1},
          {7, "standard.tensors.P.write_bytes", 1},
          {12, "one_head.tensors.S.write_bytes", 1}}},
        {"flash2 forward HBM bytes of one head at N = 8192, d = 128, 128 x 128 tiles",
         {{2, "flash.hbm.total", 1},
          {3, "flash.hbm.total", 1},
          {7, "flash.hbm.total", 1},
          {9, "flash.hbm.total", 1.0 / 16},
          {6, "fa2.hbm.total", 1.0 / 16}}},
        {"the longest N standard attention fits for one layer's training step, B = 1, H = 16, d = 128, bf16, "
         "on the H200 preset (simulated) and on the H200 (measured)",
         {{12, "fit.standard.longest_n", 1}, {12, "measured.fit_standard.longest_n", 1}}},
        {"the split count of one decode step at B = 1, L = 32768, 8 KV heads, d = 128 (simulated and measured)",
         {{13, "decode.one.splits", 1}, {13, "measured.b1_32k.splits", 1}}},
        {"exponentials of one head's forward pass at N = 8192 (one per score)",
         {{2, "standard.flops.exp", 1}, {7, "flash.seq * flash.seq", 1}}},
        {"dQ accumulation traffic of flash2's backward at N = 8192, d = 128",
         {{7, "fl_bwd.tensors.dQ.total", 1}, {11, "fl_bwd.tensors.dQ.total", 1}}},
        {"K bytes read by flash2 per query block at N = 8192, d = 128, fp16 (all of K once)",
         {{3, "flash.tensors.K.read_bytes / flash.tiles_rows", 1},
          {9, "flash.tensors.K.read_bytes / flash.tiles_rows", 1.0 / 16}}},
        {"flash2's forward FLOPs per HBM byte at N = 8192, d = 128, B_r = 128, counted without a cache",
         {{2, "flash.flops.matmul / flash.hbm.total", 1}, {10, "flash2.flops.matmul / flash2.hbm.total", 1}}},
        {"the measured flash2h backward at N = 8192, d = 128 (default mode), in ms",
         {{7, "measured.fl2h_bwd.ms_median", 1},
          {10, "measured.flash2h_bwd.ms_median", 1},
          {11, "measured.bwd.ms_median", 1}}},
        {"the measured flash2h backward at N = 8192, d = 128, deterministic mode, in ms",
         {{10, "measured.flash2h_bwd_det.ms_median", 1}, {11, "measured.bwd_det.ms_median", 1}}},
    };
    for (const auto& q : quantities) {
        INFO(q.what);
        REQUIRE(q.statements.size() >= 2);
        const double first = evaluate(lesson(q.statements[0].lesson), q.statements[0].expr) * q.statements[0].scale;
        for (const auto& st : q.statements) {
            const double v = evaluate(lesson(st.lesson), st.expr) * st.scale;
            CHECK_MESSAGE(std::abs(v - first) <= 1e-9 * std::abs(first),
                          "lesson " << st.lesson << " '" << st.expr << "' gives " << v << ", lesson "
                                    << q.statements[0].lesson << " gives " << first);
        }
    }
}

namespace {
std::string repo_file(const std::string& rel) { return std::string(FLASHSIM_LESSONS_DIR) + "/../" + rel; }
nlohmann::json read_json(const std::string& rel) {
    std::ifstream f(repo_file(rel));
    REQUIRE_MESSAGE(f, rel);
    return nlohmann::json::parse(f);
}
}  // namespace

// The H200 figures the lessons quote (machine.H200.*, the same preset in every lesson) against
// sources that do not go through the preset: the datasheet's figures as the test reads them, and
// the card's own measurements in results/.
TEST_CASE("the H200 figures the lessons quote agree with the datasheet and the card's measurements") {
    SUBCASE("the ridge point (lessons 2, 7, 10, 13): datasheet matrix rate over datasheet bandwidth") {
        // NVIDIA's H200 SXM datasheet: BF16 tensor core 1,979 TFLOPS with sparsity (989.5 dense),
        // memory bandwidth 4.8 TB/s. The figures are rounded to 4 and 2 digits: the ratio is known
        // to within 0.05 / 4.8 + 0.5 / 1979 = 1.1%.
        const double datasheet = (1979e12 / 2) / 4.8e12;
        for (int64_t n : {2, 7, 10, 13}) {
            CAPTURE(n);
            const double v = evaluate(lesson(n), "machine.H200.matmul_flops / machine.H200.hbm_bandwidth");
            CHECK(std::abs(v / datasheet - 1) <= 0.05 / 4.8 + 0.5 / 1979);
        }
    }
    SUBCASE("the exponential rate (lessons 2, 6, 7, 9): 16 ex2 a clock an SM at the card's clocks") {
        // CUDA guide, arithmetic instruction throughput, compute capability 9.0: 16 ex2 results a
        // clock an SM. The clocks our H200 ran at under load (nvidia-smi, samples above 1 GHz) bound
        // what any quoted rate may be; the ex2 microbenchmark must fall inside the same bounds.
        std::ifstream csv(repo_file("results/h200/clocks.csv"));
        REQUIRE(csv);
        std::string line;
        std::getline(csv, line);  // header
        double lo = 1e300, hi = 0;
        while (std::getline(csv, line)) {
            const size_t comma = line.find(',');
            if (comma == std::string::npos) continue;
            const double mhz = std::stod(line.substr(comma + 1));
            if (mhz < 1000) continue;  // idle
            lo = std::min(lo, mhz * 1e6);
            hi = std::max(hi, mhz * 1e6);
        }
        REQUIRE(hi > 0);
        const double sms = 132;  // cudaGetDeviceProperties on our H200 (and the Hopper whitepaper's SXM count)
        const auto ceilings = read_json("results/h200/ceilings.json");
        double measured = 0;
        for (const auto& c : ceilings["ceilings"])
            if (c["name"] == "ex2") measured = c["value"].get<double>();
        REQUIRE(measured > 0);
        CHECK(measured <= 16 * sms * hi * (1 + 1e-9));  // the per-clock count holds on the card
        CHECK(measured >= 16 * sms * lo);
        for (int64_t n : {2, 6, 7, 9}) {
            CAPTURE(n);
            const double v = evaluate(lesson(n), "machine.H200.exp_rate");
            CHECK(v >= 16 * sms * lo);
            CHECK(v <= 16 * sms * hi);
        }
    }
    SUBCASE("the L2 a re-read finds (lessons 9, 10): where the probe's second read is half served") {
        // results/h200/counters_probe_reread.json: the same S MiB read twice after a flush. The
        // second read's share served by L2 is 2 (1 - DRAM bytes / bytes asked), 1 when all of it hit.
        // Between the two sizes around one half, linear interpolation gives the half point; the
        // preset states it in whole MiB, so the lessons' figure must lie within 0.5 MiB of it.
        const auto probe = read_json("results/h200/counters_probe_reread.json");
        std::vector<std::pair<double, double>> curve;  // (S in MiB, share served)
        for (const auto& r : probe["counters_probe"]) {
            const std::string name = r["name"];
            if (name.rfind("reread_", 0) != 0) continue;
            const double asked = r["work_read_bytes"].get<double>();
            curve.emplace_back(asked / 2 / (1 << 20), 2 * (1 - r["dram_read_bytes"].get<double>() / asked));
        }
        std::sort(curve.begin(), curve.end());
        REQUIRE(curve.size() >= 4);
        double half = 0;
        for (size_t i = 1; i < curve.size(); ++i)
            if (curve[i - 1].second >= 0.5 && curve[i].second < 0.5)
                half = curve[i - 1].first + (curve[i - 1].second - 0.5) / (curve[i - 1].second - curve[i].second) *
                                                (curve[i].first - curve[i - 1].first);
        REQUIRE(half > 0);
        for (int64_t n : {9, 10}) {
            CAPTURE(n);
            const double v = evaluate(lesson(n), "machine.H200.l2_reuse_bytes") / (1 << 20);
            CHECK(std::abs(v - half) <= 0.5);
            // The lessons' point: a re-read does not see the L2 the card reports. At that size the
            // probe's second read found almost nothing (under 5% served).
            const double l2 = evaluate(lesson(n), "machine.H200.l2_bytes") / (1 << 20);
            CHECK(v < l2);
            for (const auto& [mib, served] : curve)
                if (mib >= l2) CHECK(served < 0.05);
        }
    }
}

// Every lesson with an exercise: its worked solution passes, its wrong answer does not.
TEST_CASE("exercises through the course: solutions pass, wrong answers miss") {
    int count = 0, predictions = 0;
    for (const auto& l : all_lessons()) {
        if (!l.exercise) continue;
        ++count;
        if (!l.exercise->predict.empty()) ++predictions;
        INFO("lesson " << l.number);
        const auto good = check_answer(l, parse_answer(l.exercise->solution));
        CHECK_MESSAGE(good.passed, good.message);
        if (!l.exercise->not_solution.empty()) {
            const auto bad = check_answer(l, parse_answer(l.exercise->not_solution));
            CHECK_MESSAGE(!bad.passed, bad.message);
        }
    }
    CHECK(count >= 5);
    CHECK(predictions >= 2);
}

TEST_CASE("a prediction: tolerance, hints in words, bad numbers refused") {
    const Lesson& l = lesson(1);
    REQUIRE(l.exercise);
    // S at N = 4096, fp16: 4096^2 x 2 bytes = 33,554,432.
    CHECK(check_answer(l, parse_answer("value=33554432")).passed);
    CHECK(check_answer(l, parse_answer("value=33000000")).passed);  // 1.7% low
    const auto fp32 = check_answer(l, parse_answer("value=67108864"));
    CHECK(fp32.valid);
    CHECK_FALSE(fp32.passed);
    CHECK(fp32.message.find("fp16") != std::string::npos);
    const auto n8k = check_answer(l, parse_answer("value=134217728"));
    CHECK(n8k.message.find("quarters") != std::string::npos);
    CHECK_FALSE(check_answer(l, parse_answer("value=lots")).valid);
    CHECK_FALSE(check_answer(l, parse_answer("block_rows=4")).valid);
}

TEST_CASE("lesson 14 (exercises) refuses degenerate blocks and explains a miss") {
    const Lesson& l = lesson(14);
    REQUIRE(l.exercise);
    // B_r = 96, B_c = 1: T_r = 43, 43 MiB of K and V plus Q, O: under the 48 MiB budget, but one key a step.
    const auto thin = check_answer(l, parse_answer("algo=flash2,block_rows=96,block_cols=1"));
    CHECK_FALSE(thin.valid);
    CHECK_FALSE(thin.passed);
    CHECK(thin.message.find("multiple of 16") != std::string::npos);
    // B_r = 90 = 5 x 16 + 10: refused before it is simulated, the nearest multiples named.
    const auto off = check_answer(l, parse_answer("algo=flash2,block_rows=90,block_cols=16"));
    CHECK_FALSE(off.valid);
    CHECK(off.message.find("80 or 96") != std::string::npos);
    const auto miss = check_answer(l, parse_answer("algo=flash2,block_rows=32,block_cols=48"));
    CHECK(miss.valid);
    CHECK_FALSE(miss.passed);
    CHECK(miss.message.find("Hint:") != std::string::npos);
    CHECK(miss.message.find("128 query blocks") != std::string::npos);
    // A miss states the goal in the lesson's words, not only as an expression and a raw number.
    CHECK(miss.message.find("at most 48 MiB of HBM traffic") != std::string::npos);
    // Standard attention gets the hint about S and P, not the one about flash2's K and V re-reads:
    // N = 4096, fp16: S is 4096^2 x 2 B = 32 MiB, written and read, and P as much: 128 MiB.
    const auto std_miss = check_answer(l, parse_answer("algo=standard,block_rows=64,block_cols=64"));
    CHECK(std_miss.valid);
    CHECK_FALSE(std_miss.passed);
    CHECK(std_miss.message.find("128 MiB of traffic that no block size removes") != std::string::npos);
    CHECK(std_miss.message.find("flash2 reads all of K") == std::string::npos);
}

// Dates belong to results files, not to prose: a step may print a date only as a results file's date
// line, the device and the span of its runs in parentheses ("NVIDIA H200 (2026-11-29 to 2026-12-06)",
// from report::run_span), one line a file. Any other date, a typed one ("until 2026-12-05") or days
// strung together ("2026-11-29 and 2026-12-01"), is a diary entry and fails.
TEST_CASE("no date in lesson prose outside a results file's date line") {
    const std::regex date_line(R"(\(\d{4}-\d{2}-\d{2}( to \d{4}-\d{2}-\d{2})?\))");
    const std::regex any_date(R"(\d{4}-\d{2}-\d{2})");
    CHECK(std::regex_search("(2026-11-29 and 2026-12-01)", any_date));  // the pattern sees a strung list
    CHECK(
        !std::regex_search(std::regex_replace("on NVIDIA H200 (2026-11-29 to 2026-12-06).", date_line, ""), any_date));
    for (const auto& l : all_lessons()) {
        std::vector<std::pair<std::string, std::string>> texts = {{"summary", l.summary}};
        for (size_t i = 0; i < l.steps.size(); ++i)
            texts.push_back(
                {std::to_string(l.number) + "." + std::to_string(i + 1), l.steps[i].title + "\n" + l.steps[i].text});
        if (l.exercise) texts.push_back({"exercise", l.exercise->prompt});
        for (const auto& where_text : texts) {
            const auto& where =
                std::get<0>(where_text);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
            const auto& text = std::get<1>(where_text);
            const std::string rest = std::regex_replace(text, date_line, "");
            std::smatch m;
            CHECK_MESSAGE(!std::regex_search(rest, m, any_date), "lesson " << l.number << " (" << where
                                                                           << ") holds the date " << m.str()
                                                                           << " outside a results file's date line");
        }
    }
}

// The course points to the lab where each idea is practised: every puzzle (lab/puzzles/NN_*.py) is
// named by a step ("Try it: lab puzzle N"), and every puzzle a step names exists.
TEST_CASE("every lab puzzle is pointed to by the step that teaches its idea") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(FLASHSIM_LESSONS_DIR) / ".." / "lab" / "puzzles";
    std::set<int> puzzles;
    for (const auto& e : fs::directory_iterator(dir)) {
        const std::string name = e.path().filename().string();
        if (name.size() > 3 && std::isdigit(static_cast<unsigned char>(name[0])) && e.path().extension() == ".py")
            puzzles.insert(std::stoi(name.substr(0, 2)));
    }
    REQUIRE(puzzles.size() >= 10);
    const std::regex pointer(R"(lab puzzle (\d+))");
    std::set<int> named;
    for (const auto& l : all_lessons())
        for (size_t i = 0; i < l.steps.size(); ++i) {
            const std::string& t = l.steps[i].text;
            for (std::sregex_iterator it(t.begin(), t.end(), pointer), end; it != end; ++it) {
                const int n = std::stoi((*it)[1].str());
                CHECK_MESSAGE(puzzles.count(n) == 1, "step " << l.number << "." << (i + 1) << " names lab puzzle " << n
                                                             << ", which lab/puzzles does not hold");
                named.insert(n);
            }
        }
    for (const int n : puzzles) CHECK_MESSAGE(named.count(n) == 1, "no step points to lab puzzle " << n);
}
