// The corpus of broken lessons: each file in bad/ starts with "# expect: LINE:COL: text" (the place
// was computed from the file's own text by make_bad_corpus.py, independently of the loader) or
// "# expect: TOML syntax" (a parse error; toml++ decides the exact column). Each must fail to load
// with a LoadError naming this file, that line and column, and a message containing the text.
#include <doctest/doctest.h>

#include <algorithm>
#include <filesystem>
#include <fstream>

#include "lessons/lib/lesson.hpp"

namespace fs = std::filesystem;

TEST_CASE("every broken lesson gets its error at file:line:column") {
    std::vector<fs::path> files;
    for (const auto& e : fs::directory_iterator(FLASHSIM_BAD_DIR))
        if (e.path().extension() == ".toml") files.push_back(e.path());
    std::sort(files.begin(), files.end());
    CHECK(files.size() >= 20);
    for (const auto& f : files) {
        std::ifstream in(f);
        std::string header;
        std::getline(in, header);
        INFO(f.filename().string() << "  " << header);
        const std::string tag = "# expect: ";
        REQUIRE(header.rfind(tag, 0) == 0);
        const std::string want = header.substr(tag.size());
        try {
            lessons::load_lesson(f.string());
            FAIL("loaded without error");
        } catch (const lessons::LoadError& e) {
            INFO("got: " << std::string(e.what()));
            CHECK(e.file == f.string());
            CHECK(std::string(e.what()).rfind(f.string() + ":", 0) == 0);
            if (want == "TOML syntax") {
                CHECK(e.line > 1);
                CHECK(e.column >= 1);
                CHECK(e.message.find("TOML syntax") != std::string::npos);
            } else {
                const size_t c1 = want.find(':'), c2 = want.find(':', c1 + 1);
                const int64_t line = std::stoll(want.substr(0, c1));
                const int64_t col = std::stoll(want.substr(c1 + 1, c2 - c1 - 1));
                const std::string text = want.substr(c2 + 2);
                CHECK(e.line == line);
                CHECK(e.column == col);
                CHECK(e.message.find(text) != std::string::npos);
            }
            // One line, no crash, nothing half-loaded.
            CHECK(std::string(e.what()).find('\n') == std::string::npos);
        }
    }
}

TEST_CASE("an unreadable file and an empty directory") {
    CHECK_THROWS_WITH_AS(lessons::load_lesson("/no/such/lesson.toml"), doctest::Contains("cannot open"),
                         lessons::LoadError);
    const auto bad = lessons::load_all(FLASHSIM_BAD_DIR);
    CHECK(bad.size() >= 20);
    for (const auto& x : bad) {
        CHECK_FALSE(x.lesson.has_value());
        CHECK(x.error.rfind(x.file + ":", 0) == 0);
    }
}

TEST_CASE("the fuzz corpus seeds load or fail cleanly") {
    if (!fs::exists(FLASHSIM_FUZZ_CORPUS)) return;
    int n = 0;
    for (const auto& e : fs::directory_iterator(FLASHSIM_FUZZ_CORPUS)) {
        ++n;
        try {
            lessons::load_lesson(e.path().string());
        } catch (const lessons::LoadError& x) { CHECK(!x.message.empty()); }
    }
    CHECK(n > 0);
}
