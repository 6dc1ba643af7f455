// sim/knobs.hpp: every FLASHSIM_* variable the code reads is a row of the one table, the kernels
// read theirs through it, and docs/knobs.md shows the table as it is.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <regex>
#include <set>
#include <sstream>
#include <string>

#include "sim/knobs.hpp"

namespace fs = std::filesystem;

namespace {
std::string slurp(const fs::path& p) {
    std::ifstream in(p);
    std::stringstream s;
    s << in.rdbuf();
    return s.str();
}
bool source_file(const fs::path& p) {
    const std::string e = p.extension().string();
    return e == ".cpp" || e == ".hpp" || e == ".cu" || e == ".cuh";
}
}  // namespace

TEST_CASE("every FLASHSIM_* the code reads is in the knobs table") {
    const fs::path root(FLASHSIM_SOURCE_DIR);
    // a line that reads the environment (getenv) or a knob (sim::knob), and every FLASHSIM_ name quoted on it
    // (flash2.cu picks between two names in one call)
    const std::regex name("\"(FLASHSIM_[A-Z0-9_]+)\"");
    std::set<std::string> read;
    int raw_in_kernels = 0;
    for (const char* dir : {"cuda", "cli", "viz", "sim", "report", "lessons"})
        for (const auto& e : fs::recursive_directory_iterator(root / dir)) {
            if (!e.is_regular_file() || !source_file(e.path())) continue;
            if (e.path().filename() == "knobs.cpp") continue;  // the table itself
            std::istringstream lines(slurp(e.path()));
            for (std::string line; std::getline(lines, line);) {
                const bool getenv = line.find("getenv(") != std::string::npos;
                if (!getenv && line.find("knob(") == std::string::npos) continue;
                for (std::sregex_iterator m(line.begin(), line.end(), name), end; m != end; ++m) {
                    read.insert((*m)[1]);
                    // the kernels, the harness and the command read theirs through the table
                    const std::string d = dir;
                    if (getenv && (d == "cuda" || d == "cli")) {
                        ++raw_in_kernels;
                        MESSAGE("getenv of " << (*m)[1] << " in " << e.path().string() << " (use sim::knob)");
                    }
                }
            }
        }
    // 26 read in cuda/ (issue 56 counted them) and more elsewhere: the scan must see at least those
    CHECK(read.size() >= 26);
    for (const std::string& n : read) {
        CAPTURE(n);
        CHECK_MESSAGE(sim::find_knob(n) != nullptr, n << " is read but not in sim/knobs.cpp's table");
    }
    CHECK(raw_in_kernels == 0);
    // and no row of the table names a variable nothing reads
    for (const sim::Knob& k : sim::knobs()) {
        CAPTURE(k.name);
        CHECK(read.count(std::string(k.name)) == 1);
        CHECK_FALSE(k.values.empty());
        CHECK_FALSE(k.fallback.empty());
        CHECK_FALSE(k.teaches.empty());
        CHECK(fs::exists(root / std::string(k.reader)));
    }
}

TEST_CASE("sim::knob refuses a name outside the table") {
    CHECK_THROWS_AS(sim::knob("FLASHSIM_NO_SUCH_KNOB"), std::logic_error);
    CHECK_NOTHROW(sim::knob("FLASHSIM_L2_FLUSH"));
}

TEST_CASE("docs/knobs.md shows the table as the code has it") {
    const std::string doc = slurp(fs::path(FLASHSIM_SOURCE_DIR) / "docs" / "knobs.md");
    CHECK_MESSAGE(doc.find(sim::knobs_markdown()) != std::string::npos,
                  "docs/knobs.md is out of date: rewrite its table with `flashsim bench --knobs-markdown`");
}
