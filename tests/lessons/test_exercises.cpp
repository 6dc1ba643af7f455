// Exercises: every one refuses nonsense with a reason, gives every wrong answer words, and passes or
// fails as the idea it teaches says. Expected values are derived by hand beside each check.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "lessons/lib/lesson.hpp"
#include "tests/lessons/course_cache.hpp"

using namespace lessons;

namespace {
const std::vector<Lesson>& with_exercises() {
    static const std::vector<Lesson> v = [] {
        std::vector<Lesson> out;
        for (const auto& x : lessons_test::loaded_course())
            if (x.lesson && x.lesson->exercise) out.push_back(*x.lesson);
        return out;
    }();
    return v;
}
const Lesson& by_number(int64_t n) {
    for (const auto& l : with_exercises())
        if (l.number == n) return l;
    FAIL("no lesson " << n << " with an exercise");
    return with_exercises().front();
}
AnswerResult answer(const Lesson& l, const std::string& text) { return check_answer(l, parse_answer(text)); }
bool has(const std::string& text, const std::string& part) { return text.find(part) != std::string::npos; }
}  // namespace

TEST_CASE("every lesson that teaches an idea has an exercise") {
    // Lesson 14 is the exercise lesson; every other lesson teaches an idea and asks about it.
    std::vector<int64_t> numbers;
    for (const auto& l : with_exercises()) numbers.push_back(l.number);
    for (int64_t n = 1; n <= 15; ++n)
        CHECK_MESSAGE(std::find(numbers.begin(), numbers.end(), n) != numbers.end(), "lesson " << n);
}

TEST_CASE("nonsense is refused with a reason: negative, zero, non-numeric, empty, off the tensor-core tile") {
    for (const auto& l : with_exercises()) {
        CAPTURE(l.number);
        const Exercise& ex = *l.exercise;
        if (!ex.predict.empty()) {
            for (const char* bad : {"value=-5", "value=0", "value=abc", "value=1e999", "value=12x"}) {
                CAPTURE(bad);
                const AnswerResult r = answer(l, bad);
                CHECK_FALSE(r.valid);
                CHECK_FALSE(r.passed);
                CHECK_FALSE(r.message.empty());
            }
            CHECK(has(answer(l, "value=-5").message, "positive"));
            CHECK(has(answer(l, "value=abc").message, "number"));
        } else {
            const bool rows = std::find(ex.fields.begin(), ex.fields.end(), "block_rows") != ex.fields.end();
            REQUIRE(rows);
            for (const char* bad : {"block_rows=-16", "block_rows=0", "block_rows=abc", "block_rows=100"}) {
                CAPTURE(bad);
                const AnswerResult r = answer(l, bad);
                CHECK_FALSE(r.valid);
                CHECK_FALSE(r.message.empty());
            }
            CHECK(has(answer(l, "block_rows=-16").message, "negative"));
            // 100 = 6 x 16 + 4: the reason names the tile and the two multiples around it
            const std::string m = answer(l, "block_rows=100").message;
            CHECK(has(m, "multiple of 16"));
            CHECK(has(m, "96 or 112"));
        }
        CHECK_THROWS_AS(parse_answer(""), LoadError);
        CHECK_THROWS_AS(parse_answer("  ,  "), LoadError);
    }
}

TEST_CASE("every wrong prediction gets a hint in words, foreseen slip or not") {
    for (const auto& l : with_exercises()) {
        if (l.exercise->predict.empty()) continue;
        CAPTURE(l.number);
        const double truth = evaluate(l, l.exercise->predict);
        // 3x and 1/3x of the truth: no lesson's slips sit there, so the general hint must speak.
        for (const double f : {3.0, 1.0 / 3.0, 1000.0}) {
            const AnswerResult r = answer(l, "value=" + std::to_string(truth * f));
            CHECK(r.valid);
            CHECK_FALSE(r.passed);
            CHECK(has(r.message, "Hint:"));
        }
    }
}

TEST_CASE("lesson 3: tight enough that K and V alone fail") {
    const Lesson& l = by_number(3);
    const ConfigSpec& c = l.configs.at("flash_2n");
    const double n = double(c.problem.seq), d = double(c.problem.head_dim), e = 2;  // fp16
    const double t_r = std::ceil(n / double(c.config.block_rows));
    // K and V read once per query block; Q read once, O written once, LSE 4 bytes a row written once.
    const double kv = t_r * 2 * n * d * e, rest = 2 * n * d * e + 4 * n;
    CHECK(kv == 1073741824.0);
    CHECK(evaluate(l, "flash_2n.hbm.total") == kv + rest);
    CHECK(answer(l, "value=" + std::to_string(int64_t(kv + rest))).passed);
    const AnswerResult half = answer(l, "value=" + std::to_string(int64_t(kv)));
    CHECK_FALSE(half.passed);
    CHECK(has(half.message, "K and V alone"));
    CHECK(answer(l, "value=1.08e9").passed);  // three significant figures pass
}

TEST_CASE("lesson 4: the rescale factor e^(m_old - m_new)") {
    const Lesson& l = by_number(4);
    const double factor = std::exp(3.9 - 4.6);  // the carried max 3.9, block 2's 4.6 (the lesson's row)
    CHECK(evaluate(l, l.exercise->predict) == doctest::Approx(factor).epsilon(1e-6));
    CHECK(answer(l, "value=0.4966").passed);
    const AnswerResult flipped = answer(l, "value=" + std::to_string(1 / factor));
    CHECK_FALSE(flipped.passed);
    CHECK(has(flipped.message, "Upside down"));
    CHECK_FALSE(answer(l, "value=" + std::to_string(std::exp(-0.6))).passed);  // an exponent off by 0.1
}

TEST_CASE("lesson 7: the backward's products, standard's four plus the recompute") {
    const Lesson& l = by_number(7);
    const double n = 8192, d = 128, product = 2 * n * n * d;
    CHECK(evaluate(l, l.exercise->predict) == 5 * product);
    CHECK(answer(l, "value=" + std::to_string(int64_t(5 * product))).passed);
    const AnswerResult four = answer(l, "value=" + std::to_string(int64_t(4 * product)));
    CHECK_FALSE(four.passed);
    CHECK(has(four.message, "standard's backward"));
}

TEST_CASE("lesson 8: pass and fail follow the balance, one interval of B_r") {
    const Lesson& l = by_number(8);
    // Predicted time against B_r at B_c = 128 falls while shorter query blocks fill idle SMs, then
    // rises as K and V are re-read more often: the passing B_r form one interval, inside (16, 128).
    std::vector<int> passing;
    std::vector<double> goal;
    for (int br = 16; br <= 128; br += 16) {
        const AnswerResult r = answer(l, "block_rows=" + std::to_string(br) + ",block_cols=128");
        REQUIRE(r.valid);
        goal.push_back(r.goal_value);
        if (r.passed) passing.push_back(br);
    }
    REQUIRE_FALSE(passing.empty());
    CHECK(passing.back() - passing.front() == 16 * int(passing.size() - 1));  // contiguous
    CHECK(passing.back() < 128);
    size_t lowest = 0;
    for (size_t i = 1; i < goal.size(); ++i)
        if (goal[i] < goal[lowest]) lowest = i;
    for (size_t i = 1; i <= lowest; ++i) CHECK(goal[i] < goal[i - 1]);
    for (size_t i = lowest + 1; i < goal.size(); ++i) CHECK(goal[i] > goal[i - 1]);
}

TEST_CASE("lesson 9: a new GPU, the A100's ridge point from its datasheet") {
    const Lesson& l = by_number(9);
    const double ridge = 312e12 / 2.039e12;  // A100 SXM 80 GB: 312 TFLOP/s fp16 tensor, 2,039 GB/s
    CHECK(evaluate(l, l.exercise->predict) == doctest::Approx(ridge).epsilon(1e-3));
    CHECK(answer(l, "value=153").passed);
    const AnswerResult h200 = answer(l, "value=206");
    CHECK_FALSE(h200.passed);
    CHECK(has(h200.message, "H200"));
}
