// Tables in lesson prose: an indented block whose cells are separated by two or more spaces is laid
// out again after its placeholders are rendered, so its columns line up whatever the numbers' widths.
#include <doctest/doctest.h>

#include <set>
#include <sstream>

#include "lessons/lib/lesson.hpp"
#include "tests/lessons/course_cache.hpp"

using namespace lessons;

namespace {
std::vector<std::string> lines_of(const std::string& text) {
    std::vector<std::string> v;
    std::stringstream ss(text);
    for (std::string ln; std::getline(ss, ln);) v.push_back(ln);
    return v;
}

// Where each cell of a printed table line begins: the first character after the indentation, and
// the first character after every run of two or more spaces.
std::vector<size_t> cell_starts(const std::string& line) {
    std::vector<size_t> starts;
    size_t i = 0;
    while (i < line.size() && line[i] == ' ') ++i;
    if (i < line.size()) starts.push_back(i);
    while (i < line.size()) {
        if (line[i] == ' ' && i + 1 < line.size() && line[i + 1] == ' ') {
            while (i < line.size() && line[i] == ' ') ++i;
            if (i < line.size()) starts.push_back(i);
        } else
            ++i;
    }
    return starts;
}

// The indented blocks (tables, formulas) of a rendered step.
std::vector<std::vector<std::string>> blocks(const std::string& text) {
    std::vector<std::vector<std::string>> out;
    std::vector<std::string> cur;
    for (const auto& ln : lines_of(text)) {
        if (ln.size() > 1 && ln[0] == ' ' && ln.find_first_not_of(' ') != std::string::npos)
            cur.push_back(ln);
        else if (!cur.empty()) {
            out.push_back(cur);
            cur.clear();
        }
    }
    if (!cur.empty()) out.push_back(cur);
    return out;
}

const char* kHead = R"(id = "t"
title = "t"
[config.a]
algo = "standard"
seq = 64
head_dim = 16
)";
}  // namespace

TEST_CASE("a table's columns line up after numbers of different widths are rendered") {
    const std::string text = std::string(kHead) + R"(
[[step]]
text = """
A table:

    name  value  unit
    a  {{ 1000000 | int }}  B
    bb  {{ 2 | int }}  B

    l_new = e^(m - m_new) l + sum_j e^(s_j - m_new)
"""
)";
    const Lesson l = load_lesson_text(text, "table.toml");
    // Widest cell of the first column: "name" (4); of the second: "1,000,000" (9). Each column is
    // its widest cell plus three spaces; the indentation (4) is kept; the last cell is not padded.
    CHECK(l.steps[0].text ==
          "A table:\n\n"
          "    name   value       unit\n"
          "    a      1,000,000   B\n"
          "    bb     2           B\n\n"
          "    l_new = e^(m - m_new) l + sum_j e^(s_j - m_new)\n");
}

TEST_CASE("an indented block that is not a table is kept as written") {
    const std::string text = std::string(kHead) + R"(
[[step]]
text = """
One line with a wide gap stays as it is:

    copy:      {{ 12 | int }} us
    (the rest of the sentence, no gap)
"""
)";
    const Lesson l = load_lesson_text(text, "table.toml");
    CHECK(l.steps[0].text.find("    copy:      12 us\n    (the rest of the sentence, no gap)") != std::string::npos);
}

TEST_CASE("a row indented further continues under the second column") {
    const std::string text = std::string(kHead) + R"(
[[step]]
text = """
    standard  HBM GB  {{ 40.3 | fixed:1 }}
              ms  {{ 141.7 | fixed:1 }}
"""
)";
    const Lesson l = load_lesson_text(text, "table.toml");
    // first column "standard" (8) + 3; second column "HBM GB" (6) + 3
    CHECK(l.steps[0].text ==
          "    standard   HBM GB   40.3\n"
          "               ms       141.7\n");
}

// Every table the course prints: each row's cells begin at columns where the table's fullest row
// has a cell (12.3 printed its measured column 1 and 2 characters off before this was fixed).
TEST_CASE("every table in the course is aligned") {
    int tables = 0;
    for (const auto& x : lessons_test::loaded_course()) {
        REQUIRE(x.lesson);
        for (size_t si = 0; si < x.lesson->steps.size(); ++si) {
            for (const auto& b : blocks(x.lesson->steps[si].text)) {
                size_t multi = 0;
                std::vector<size_t> full;
                for (const auto& ln : b) {
                    const auto st = cell_starts(ln);
                    multi += st.size() >= 2;
                    if (st.size() > full.size()) full = st;
                }
                if (multi < 2) continue;  // a formula or a single line: not a table
                ++tables;
                const std::set<size_t> columns(full.begin(), full.end());
                for (const auto& ln : b)
                    for (size_t c : cell_starts(ln))
                        CHECK_MESSAGE(columns.count(c) == 1, "lesson " << x.lesson->number << " step " << si + 1
                                                                       << ": a cell at column " << c
                                                                       << " that no other row has:\n"
                                                                       << ln);
            }
        }
    }
    CHECK(tables >= 15);
}

TEST_CASE("lesson 12 step 3: both tables line up under their headers") {
    const Lesson l = load_lesson(std::string(FLASHSIM_LESSONS_DIR) + "/12-memory-wall.toml");
    const auto bs = blocks(l.steps[2].text);
    REQUIRE(bs.size() == 2);
    for (const auto& b : bs) {
        REQUIRE(b.size() == 4);  // a header and three rows
        const auto header = cell_starts(b[0]);
        CHECK(header.size() == 5 - (&b == &bs[1]));  // 5 columns, then 4
        for (const auto& row : b) CHECK(cell_starts(row) == header);
    }
}
