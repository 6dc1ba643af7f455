// Every lesson loads, renders every placeholder and its stated expectations hold: a lesson is a test.
#include <doctest/doctest.h>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdlib>
#include <set>

#include "lessons/lib/lesson.hpp"
#include "tests/lessons/course_cache.hpp"

using namespace lessons;

const std::vector<Loaded>& lessons_test::loaded_course() {
    static const std::vector<Loaded> a = load_all(FLASHSIM_LESSONS_DIR);
    return a;
}

namespace {
const std::vector<Loaded>& all() { return lessons_test::loaded_course(); }
}  // namespace

TEST_CASE("every lesson loads without error") {
    const auto t0 = std::chrono::steady_clock::now();
    const auto a = load_all(FLASHSIM_LESSONS_DIR);
    const double s = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    CHECK(a.size() >= 12);
    for (const auto& x : a) {
        INFO(x.file);
        CHECK_MESSAGE(x.lesson.has_value(), x.error);
    }
    // Load time is reported, not asserted (a loaded CI machine is no benchmark); the figure for
    // the app's start-up is measured with `time flashsim lesson --list`.
    MESSAGE("loaded " << a.size() << " lessons in " << s << " s");
}

TEST_CASE("ids are unique, numbers cover 1..15 once each") {
    std::set<std::string> ids;
    std::set<int64_t> numbers;
    for (const auto& x : all()) {
        REQUIRE(x.lesson);
        CHECK(ids.insert(x.lesson->id).second);
        CHECK(numbers.insert(x.lesson->number).second);
    }
    for (int64_t n = 1; n <= 15; ++n) CHECK(numbers.count(n) == 1);
}

TEST_CASE("every placeholder is rendered; no NaN or infinity is shown") {
    for (const auto& x : all()) {
        REQUIRE(x.lesson);
        const Lesson& l = *x.lesson;
        CHECK(!l.title.empty());
        CHECK(!l.steps.empty());
        for (const auto& s : l.steps) {
            INFO(l.file << ": step '" << s.title << "'");
            CHECK(s.text.find("{{") == std::string::npos);
            CHECK(s.text.find("}}") == std::string::npos);
            CHECK(s.title.find("{{") == std::string::npos);
            for (const char* bad : {"nan", "NaN", "inf ", "-nan"}) CHECK(s.text.find(bad) == std::string::npos);
            // The view names only configurations that exist.
            if (!s.view.config.empty()) CHECK(l.configs.count(s.view.config) == 1);
            for (const auto& c : s.view.compare) CHECK(l.configs.count(c) == 1);
        }
    }
}

TEST_CASE("every lesson's expectations hold") {
    size_t total = 0;
    for (const auto& x : all()) {
        REQUIRE(x.lesson);
        for (const auto& s : x.lesson->steps) total += s.expect.size();
        const auto fails = check_expectations(*x.lesson);
        for (const auto& f : fails) FAIL_CHECK(f);
    }
    CHECK(total >= 40);
    MESSAGE(total << " expectations checked");
}

TEST_CASE("lesson 1: the seed's figures, derived independently") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/01-standard-attention.toml");
    // N = 8192, d = 128, fp16: S is N^2 * 2 bytes = 128 MiB; Q, K, V, O together 4 N d * 2 = 8 MiB.
    CHECK(evaluate(l, "standard.tensors.S.write_bytes") == 8192.0 * 8192 * 2);
    CHECK(evaluate(l, "4 * standard.seq * standard.head_dim * standard.elem_bytes") == 8.0 * 1024 * 1024);
    CHECK(evaluate(l, "doubled.tensors.S.write_bytes / standard.tensors.S.write_bytes") == 4.0);
    CHECK(render(l, "{{ standard.tensors.S.write_bytes | MiB }}") == "128 MiB");
    CHECK(render(l, "{{ standard.seq * standard.seq | int }}") == "67,108,864");
}

TEST_CASE("lesson 4: the seed's running max and sum") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/04-online-softmax.toml");
    const double l1 = std::exp(1.4 - 3.9) + 1 + std::exp(0.7 - 3.9) + std::exp(2.2 - 3.9);
    const double l2 = l1 * std::exp(3.9 - 4.6) + 1 + std::exp(1.1 - 4.6) + std::exp(3.1 - 4.6) + std::exp(0.3 - 4.6);
    CHECK(evaluate(l, "softmax.blocks.0.running_sum") == doctest::Approx(l1).epsilon(1e-6));
    CHECK(evaluate(l, "softmax.blocks.1.running_sum") == doctest::Approx(l2).epsilon(1e-6));
    CHECK(render(l, "{{ softmax.blocks.1.running_sum | fixed:4 }}") == "1.9152");
    CHECK(render(l, "{{ softmax.blocks.0.running_sum | fixed:4 }}") == "1.3055");
}

TEST_CASE("lesson 4's [softmax] example is part of the loaded lesson, as written in the file") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/04-online-softmax.toml");
    REQUIRE(l.softmax);
    // lessons/04-online-softmax.toml: the seed's row of eight scores in blocks of four, and a V row
    // of two numbers per score.
    CHECK(l.softmax->scores == std::vector<double>{1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3});
    CHECK(l.softmax->block == 4);
    REQUIRE(l.softmax->values.size() == 8);
    CHECK(l.softmax->values[0] == std::vector<double>{0, 1});
    CHECK(l.softmax->values[7] == std::vector<double>{1, 1});
    CHECK(l.softmax->precision == sim::Precision::fp32);
    // A lesson without the table has none; one that leaves out block and precision gets 4 and fp32.
    const Lesson l1 = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/01-standard-attention.toml");
    CHECK_FALSE(l1.softmax);
    const Lesson m = load_lesson_text(R"(id = "sm"
title = "t"
[softmax]
scores = [1, 2, 3]
[config.a]
algo = "flash2"
seq = 64
head_dim = 16
[[step]]
text = "{{ softmax.block }}"
)",
                                      "inline.toml");
    REQUIRE(m.softmax);
    CHECK(m.softmax->block == 4);
    CHECK(m.softmax->values.empty());
    CHECK(m.softmax->precision == sim::Precision::fp32);
    CHECK(m.steps[0].text == "4\n");
}

TEST_CASE("the exercise: the worked solution passes, the default blocks do not, bad answers are explained") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/14-exercises.toml");
    REQUIRE(l.exercise);
    // B_r = 96, B_c = 16 at N = 4096, d = 64, fp16: SRAM 96*64*2 + 2*16*64*2 + 96*64*4 + 96*16*4 + 2*96*4
    // = 47,872 B <= 49,152; T_r = 43, traffic = Q + O (2 x 512 KiB) + LSE 16 KiB + 43 x (K + V) 43 x 1 MiB.
    const auto good = check_answer(l, parse_answer("algo=flash2, block_rows=96, block_cols=16"));
    CHECK(good.valid);
    CHECK(good.passed);
    CHECK(good.goal_value == 1024.0 * 1024 + 16384 + 43.0 * 1024 * 1024);
    CHECK(good.result->sram_peak_bytes == 47872);
    const auto bad = check_answer(l, parse_answer("algo=flash1"));
    CHECK(bad.valid);
    CHECK_FALSE(bad.passed);
    const auto too_big = check_answer(l, parse_answer("block_rows=256,block_cols=256"));
    CHECK_FALSE(too_big.valid);
    CHECK(too_big.message.find("do not fit in SRAM") != std::string::npos);
    const auto not_allowed = check_answer(l, {{"seq", "16"}});
    CHECK_FALSE(not_allowed.valid);
    CHECK(not_allowed.message.find("you may set only") != std::string::npos);
    CHECK_FALSE(check_answer(l, {{"block_rows", "-3"}}).valid);
    CHECK_THROWS_AS(parse_answer("block_rows"), LoadError);
    CHECK_THROWS_AS(parse_answer(""), LoadError);
    CHECK_THROWS_AS(parse_answer("a=1,a=2"), LoadError);
}

TEST_CASE("configurations keep the file's order: a step without one shows the file's first") {
    // names sorted otherwise (zeta after alpha): the first table in the file must come first
    const Lesson l = load_lesson_text(R"(id = "order"
title = "order"
[config.zeta]
algo = "flash2"
seq = 32
head_dim = 8
[config.alpha]
algo = "standard"
seq = 16
head_dim = 8
[config.mid]
algo = "flash1"
seq = 16
head_dim = 8
[[step]]
text = "{{ zeta.seq }}"
)",
                                      "order.toml");
    REQUIRE(l.config_order.size() == 3);
    CHECK(l.config_order[0] == "zeta");
    CHECK(l.config_order[1] == "alpha");
    CHECK(l.config_order[2] == "mid");
}

TEST_CASE("a view's panel keys: each only beside its panel, its values checked, the block within the row") {
    auto error_of = [](const std::string& view) {
        try {
            (void)load_lesson_text(
                "id = \"v\"\ntitle = \"t\"\n[config.c]\nalgo = \"flash2\"\nseq = 8\nhead_dim = 4\n"
                "block_rows = 4\nblock_cols = 4\nnumerics = \"on\"\nrecord_row = 1\n[[step]]\ntext = \"x\"\nview = " +
                    view + "\n",
                "view.toml");
        } catch (const LoadError& e) { return std::string(e.what()); }
        return std::string("loaded");
    };
    CHECK(error_of("{ panel = \"softmax\", config = \"c\", block = 2 }") == "loaded");
    // N = 8 in key blocks of 4: two blocks in the recorded row
    CHECK(error_of("{ panel = \"softmax\", config = \"c\", block = 3 }").find("has 2 key block(s)") !=
          std::string::npos);
    CHECK(error_of("{ panel = \"softmax\", block = 0 }").find("counts from 1") != std::string::npos);
    CHECK(error_of("{ panel = \"memory\", block = 1 }").find("belongs to a view with panel = \"softmax\"") !=
          std::string::npos);
    CHECK(error_of("{ panel = \"charts\", chart = \"paper\" }") == "loaded");
    CHECK(error_of("{ panel = \"charts\", chart = \"dram2\" }").find("is not one of") != std::string::npos);
    CHECK(error_of("{ panel = \"measured\", pass = \"backward\", head_dim = 128, mask = \"causal\" }") == "loaded");
    CHECK(error_of("{ panel = \"measured\", mask = \"window\" }").find("is not one of") != std::string::npos);
    CHECK(error_of("{ panel = \"measured\", file = \"h200/ring.json\" }") == "loaded");
    CHECK(error_of("{ panel = \"measured\", file = \"../h200.json\" }").find("a current results file") !=
          std::string::npos);
    CHECK(error_of("{ panel = \"memory\", pass = \"backward\" }").find("panel = \"measured\"") != std::string::npos);
}

TEST_CASE("simulate_config gives the result the placeholders came from") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/03-tiling.toml");
    const sim::Result r = simulate_config(l, "flash");
    CHECK(static_cast<double>(r.totals.hbm_total().total()) == evaluate(l, "flash.hbm.total"));
    CHECK_THROWS_AS(simulate_config(l, "nope"), LoadError);
}

TEST_CASE("lessons_dir honours FLASHSIM_LESSONS") {
    ::setenv("FLASHSIM_LESSONS", FLASHSIM_LESSONS_DIR, 1);
    CHECK(lessons_dir() == FLASHSIM_LESSONS_DIR);
    ::setenv("FLASHSIM_LESSONS", "/no/such/dir", 1);
    CHECK_THROWS_AS(lessons_dir(), LoadError);
    ::unsetenv("FLASHSIM_LESSONS");
    CHECK_NOTHROW(lessons_dir());
}

TEST_CASE("measurements that are absent render as n/a and skip their expectations") {
    ::setenv("FLASHSIM_MEASURED", "/no/such/file.json", 1);
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/10-measured.toml");
    ::unsetenv("FLASHSIM_MEASURED");
    CHECK(l.steps[0].text.find("n/a") != std::string::npos);
    CHECK(l.steps[0].text.find("absent") != std::string::npos);
    CHECK(check_expectations(l).empty());
}

// [footprint.*], [fit.*], [decode.*] and a results file beside h200/bench.json, each against a value
// derived here by hand.
TEST_CASE("memory and decode sections: values derived by hand, bad keys refused") {
    const Lesson l = load_lesson_text(R"(id = "mem"
title = "memory"
[config.c]
algo = "flash2"
seq = 64
head_dim = 16
[footprint.f]
algo = "flash2"
pass = "forward"
seq = 1000
batch = 2
heads = 3
head_dim = 64
dtype = "bf16"
[fit.s]
algo = "standard"
pass = "forward"
heads = 1
head_dim = 64
dtype = "fp16"
capacity = 1000000000
[decode.d]
batch = 2
q_heads = 8
kv_heads = 2
kv_len = 1000
head_dim = 64
dtype = "fp16"
splits = 1
[[step]]
text = "{{ footprint.f.total_bytes | int }} {{ fit.s.longest_n | int }} {{ decode.d.kv_read_bytes | int }}"
)",
                                      "mem.toml");
    // flash2 forward: Q, K, V, O of 2 x 3 x 1000 x 64 bf16 (4 x 768,000 bytes) + LSE 2 x 3 x 1000 x 4.
    CHECK(evaluate(l, "footprint.f.total_bytes") == 4.0 * 2 * 3 * 1000 * 64 * 2 + 2 * 3 * 1000 * 4);
    // standard forward at one head: 4 N d 2 + 2 N^2 2 bytes <= 1e9; the largest grid N by brute force.
    int64_t best = 0;
    for (int64_t k = 3; k < 20; ++k)
        for (int64_t j = 0; j < 8; ++j) {
            const int64_t n = (int64_t{1} << (k - 3)) * (8 + j);
            if (4.0 * n * 64 * 2 + 4.0 * double(n) * double(n) <= 1e9) best = std::max(best, n);
        }
    CHECK(evaluate(l, "fit.s.longest_n") == best);
    // K and V: 2 x batch 2 x 2 KV heads x 1000 x 64 x 2 bytes; one split: no partials.
    CHECK(evaluate(l, "decode.d.kv_read_bytes") == 2.0 * 2 * 2 * 1000 * 64 * 2);
    CHECK(evaluate(l, "decode.d.partial_write_bytes") == 0);
    CHECK(l.steps[0].text.find("{{") == std::string::npos);

    auto error_of = [](const std::string& text) {
        try {
            (void)load_lesson_text(text, "bad.toml");
        } catch (const LoadError& e) { return std::string(e.what()); }
        return std::string("loaded");
    };
    const std::string head =
        "id = \"b\"\ntitle = \"t\"\n[config.c]\nalgo = \"flash2\"\nseq = 64\nhead_dim = 16\n[[step]]\ntext = \"x\"\n";
    CHECK(error_of(head + "[decode.d]\nkv_len = 10\nhead_dim = 8\nsplit = 2\n").find("unknown key 'split'") !=
          std::string::npos);
    CHECK(error_of(head + "[fit.f]\nalgo = \"flash3\"\nhead_dim = 8\n").find("unknown algo 'flash3'") !=
          std::string::npos);
    CHECK(error_of(head + "[decode.d]\nkv_len = 10\nhead_dim = 8\nq_heads = 6\nkv_heads = 4\n").find("must divide") !=
          std::string::npos);
    CHECK(error_of(head + "[measured.m]\nfile = \"../secret.json\"\nvariant = \"decode\"\n")
              .find("a current results file") != std::string::npos);
    CHECK(error_of(head + "[config.fit]\nalgo = \"flash2\"\nseq = 64\nhead_dim = 16\n").find("reserved") !=
          std::string::npos);
}

TEST_CASE("a row of another results file, matched on the keys given") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/13-decoding.toml");
    if (evaluate(l, "measured.available") == 0) return;  // no results recorded beside the lessons
    // h200/decode.json's B = 8, L = 32768, d = 128 row: K and V of 8 x 8 KV heads x 32768 x 128 x 2 bytes.
    CHECK(evaluate(l, "measured.b8_32k.kv_bytes") == 2.0 * 8 * 8 * 32768 * 128 * 2);
    CHECK(evaluate(l, "measured.b8_32k.batch") == 8);
    CHECK(evaluate(l, "measured.b1_32k_64.head_dim") == 64);
}

// flashsim lesson ID finds its file from the headers alone (nothing computed); each header must say
// what the full load says, and a file that is not a lesson is refused in one line.
TEST_CASE("read_header: id, number and title as the full load has them") {
    int n = 0;
    for (const auto& x : all()) {
        REQUIRE(x.lesson);
        const Header h = read_header(x.file);
        CHECK(h.id == x.lesson->id);
        CHECK(h.number == x.lesson->number);
        CHECK(h.title == x.lesson->title);
        ++n;
    }
    CHECK(n == static_cast<int>(lesson_files(FLASHSIM_LESSONS_DIR).size()));
    CHECK_THROWS_AS(read_header(FLASHSIM_BAD_DIR "/no_such_file.toml"), LoadError);
    CHECK_THROWS_WITH_AS(read_header(std::string(FLASHSIM_LESSONS_DIR) + "/CMakeLists.txt"),
                         doctest::Contains("not a TOML file"), LoadError);
}
