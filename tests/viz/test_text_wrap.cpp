// Wrapping text at spaces only: numbers such as "168.6 us" or "8,192" are never split.
#include <doctest/doctest.h>

#include <string>
#include <vector>

#include "viz/cut_text.hpp"
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

// The app's lesson pane: a table written with runs of spaces (lessons/lib/render.cpp lines its
// columns up for a fixed-width font) is laid out by measured widths, so its columns stay apart in
// a proportional font; one space inside a cell does not split it; prose around it still wraps.
TEST_CASE("lesson text: a preformatted table keeps its columns apart") {
    const std::string text =
        "Decode, measured:\n"
        "    B   L        kernel\n"
        "    1   32768    2.70 TB/s\n"
        "    64  8192     4.20 TB/s\n"
        "words after the table wrap";
    const auto lines = lay_out_text(text, 12, chars);
    REQUIRE(lines.size() == 8);  // "Decode," "measured:", 3 rows, 3 wrapped lines
    CHECK(lines[0].cells[0].text == "Decode,");
    CHECK_FALSE(lines[0].pre);
    // columns: indent 4, "B" / "1" / "64" 2 wide + gap 3 -> x = 9; "L" / "32768" / "8192" 5 wide -> x = 17
    for (int r = 2; r <= 4; ++r) {
        CAPTURE(r);
        CHECK(lines[r].pre);
        REQUIRE(lines[r].cells.size() == 3);
        CHECK(lines[r].cells[0].x == 4);
        CHECK(lines[r].cells[1].x == 9);
        CHECK(lines[r].cells[2].x == 17);
    }
    CHECK(lines[3].cells[2].text == "2.70 TB/s");  // one space stays inside the cell
    CHECK(lines[4].cells[0].text == "64");
    CHECK(lines[5].cells[0].text == "words after");
    CHECK(lines[6].cells[0].text == "the table");
    CHECK(lines[7].cells[0].text == "wrap");
}

TEST_CASE("lesson text: a single preformatted line, a continuation row, and widths in pixels") {
    // one line with cells is not a table: kept whole (a formula) at its indentation
    const auto f = lay_out_text("  O = P V  (the second product)", 100, chars);
    REQUIRE(f.size() == 1);
    REQUIRE(f[0].cells.size() == 1);
    CHECK(f[0].cells[0].text == "O = P V  (the second product)");
    CHECK(f[0].cells[0].x == 2);
    // a row indented further than its block starts under the second column
    const auto c = lay_out_text("  a  bb  c\n  dd  e  f\n      more", 100, chars);
    REQUIRE(c.size() == 3);
    REQUIRE(c[2].cells.size() == 1);
    CHECK(c[2].cells[0].text == "more");
    CHECK(c[2].cells[0].x == c[0].cells[1].x);
    // a proportional width: a column is as wide as its widest cell, measured
    auto wide_digits = [](std::string_view s) {
        float w = 0;
        for (char ch : s) w += ch >= '0' && ch <= '9' ? 2.0f : 1.0f;
        return w;
    };
    const auto p = lay_out_text(" 1  x\n 22  y", 100, wide_digits);
    REQUIRE(p.size() == 2);
    CHECK(p[0].cells[1].x == p[1].cells[1].x);
    CHECK(p[0].cells[1].x == 1 + 4 + 3);  // indent 1, "22" 4 wide, gap of three spaces
}

// ---- text cut by its clip rectangle (cut_text.hpp), on glyphs laid out by hand: 10 px a letter with
// 1 px between letters and 6 px for a space, font size 17, clip rectangle [0, 100]
namespace {
std::vector<DrawnGlyph> line(const std::string& s, float x, float top, float clip_x1, int list = 0) {
    std::vector<DrawnGlyph> out;
    for (char c : s) {
        if (c == ' ') {
            x += 6;
            continue;
        }
        DrawnGlyph g;
        g.x0 = x;
        g.x1 = x + 10;
        g.top = top;
        g.size = 17;
        g.clip_x0 = 0;
        g.clip_x1 = clip_x1;
        g.codepoint = static_cast<unsigned>(c);
        g.list = list;
        out.push_back(g);
        x += 11;
    }
    return out;
}
}  // namespace

TEST_CASE("cut text: a line that runs past its clip rectangle is named whole, one inside is not") {
    // "ab cd" from x = 0: a 0-10, b 11-21, c 28-38, d 39-49: inside [0, 100]
    CHECK(cut_lines(line("ab cd", 0, 0, 100)).empty());
    // from x = 60: d spans 99-109 and crosses the edge at 100 by 9 px: cut, and read back with its space
    const auto cut = cut_lines(line("ab cd", 60, 0, 100));
    REQUIRE(cut.size() == 1);
    CHECK(cut[0] == "ab cd");
    // a glyph past the edge by no more than the tolerance (1.5 px) is not cut: from 51.5, d spans 90.5-100.5
    CHECK(cut_lines(line("ab cd", 51.5f, 0, 100)).empty());
    // the left edge too: a line starting 5 px left of it
    CHECK(cut_lines(line("ab", -5, 0, 100)).size() == 1);
    // two lines (different tops): only the one that runs over is named
    auto two = line("fits", 0, 0, 100);
    const auto over = line("runs over", 60, 20, 100);
    two.insert(two.end(), over.begin(), over.end());
    const auto named = cut_lines(two);
    REQUIRE(named.size() == 1);
    CHECK(named[0] == "runs over");
    // a glyph trimmed on the CPU counts wherever it is; inside a text field nothing counts
    auto trimmed = line("ok", 0, 0, 100);
    trimmed[1].trimmed = true;
    CHECK(cut_lines(trimmed) == std::vector<std::string>{"ok"});
    auto field = line("ab cd", 60, 0, 100);
    for (auto& g : field) g.in_field = true;
    CHECK(cut_lines(field).empty());
    // the same glyphs in two windows' lists are two lines
    auto split = line("ab", 0, 0, 100, 0);
    const auto other = line("cd", 95, 0, 100, 1);
    split.insert(split.end(), other.begin(), other.end());
    CHECK(cut_lines(split) == std::vector<std::string>{"cd"});
}
