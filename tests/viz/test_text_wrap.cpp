// Wrapping text at spaces only: numbers such as "168.6 us" or "8,192" are never split.
#include <doctest/doctest.h>

#include "viz/text_wrap.hpp"

using namespace viz;

namespace {
float chars(std::string_view s) { return static_cast<float>(s.size()); }  // one unit a character
}  // namespace

TEST_CASE("wrap at spaces: numbers with '.' and ',' stay whole") {
    // ImGui's wrap could break after the '.' of 168.6 or the ',' of 8,192 (the app issue's
    // "168. / 6 us" and "8, / 192")
    const auto a = wrap_at_spaces("the run took 168.6 us on 8,192 tokens", 16, chars);
    CHECK(a == std::vector<std::string>{"the run took", "168.6 us on", "8,192 tokens"});
    for (const auto& l : a) CHECK(l.size() <= 16);
}

TEST_CASE("wrap at spaces: long words stand alone, newlines break, nothing is lost") {
    CHECK(wrap_at_spaces("a 1,234,567,890 b", 5, chars) == std::vector<std::string>{"a", "1,234,567,890", "b"});
    CHECK(wrap_at_spaces("one\ntwo three", 100, chars) == std::vector<std::string>{"one", "two three"});
    CHECK(wrap_at_spaces("", 10, chars) == std::vector<std::string>{""});
    CHECK(wrap_at_spaces("x y", 0, chars) == std::vector<std::string>{"x", "y"});
    CHECK(wrap_at_spaces("x  y", 100, chars) == std::vector<std::string>{"x y"});
}
