// tests/lessons/fuzz/fuzz_lesson.cpp — libFuzzer target for the lesson parser and the placeholder
// renderer. Any input must either load or fail with a LoadError; anything else (a crash, another
// exception, a sanitizer report) is a bug. How to build and run: tests/lessons/fuzz/README.md.
#include <cstddef>
#include <cstdint>
#include <string>

#include "lessons/lib/expr.hpp"
#include "lessons/lib/lesson.hpp"

namespace {
lessons::detail::Value fake_lookup(const std::string& p) {
    if (p.size() % 3 == 0) return {true, static_cast<double>(p.size()), {}};
    if (p.size() % 3 == 1) return {false, 0, p};
    throw lessons::detail::ExprError("unknown", 0);
}
}  // namespace

extern "C" int LLVMFuzzerInitialize(int*, char***) {
    // Keep every input fast: small loops and little real arithmetic.
    lessons::detail::limits().max_tile_steps = 1 << 10;
    lessons::detail::limits().max_numerics_work = 1 << 16;
    lessons::detail::limits().allow_l2 = false;
    return 0;
}

extern "C" int LLVMFuzzerTestOneInput(const uint8_t* data, size_t size) {
    if (size > 8192) return 0;
    const std::string text(reinterpret_cast<const char*>(data), size);
    // 1. The whole loader: TOML, configs, placeholders, views, expectations, exercise.
    try {
        const lessons::Lesson l = lessons::load_lesson_text(text, "fuzz.toml");
        (void)lessons::check_expectations(l);
        if (l.exercise) (void)lessons::check_answer(l, {{"block_rows", "16"}});
    } catch (const lessons::LoadError&) {}
    // 2. The placeholder language on its own, with a lookup that answers anything.
    try {
        for (const auto& p : lessons::detail::find_placeholders(text)) {
            try {
                const auto v = lessons::detail::eval_expr(p.expr, fake_lookup);
                (void)lessons::detail::apply_filter(v, p.filter);
            } catch (const lessons::detail::ExprError&) {
            } catch (const lessons::detail::Missing&) {}
        }
    } catch (const lessons::detail::ExprError&) {}
    // 3. Answers as typed on the command line.
    try {
        (void)lessons::parse_answer(text);
    } catch (const lessons::LoadError&) {}
    return 0;
}
