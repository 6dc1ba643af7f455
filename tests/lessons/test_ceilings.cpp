// [ceiling.NAME]: a lesson cites a ceiling measured by `flashsim bench --ceilings` by its name in
// results/h200/ceilings.json, with the device and date of the run; the number is read from the
// file, never typed. Here the file is read independently (nlohmann::json) and compared.
#include <doctest/doctest.h>

#include <cstdio>
#include <cstdlib>
#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>

#include "lessons/lib/lesson.hpp"

using namespace lessons;

namespace {
const std::string kDir = FLASHSIM_LESSONS_DIR;

nlohmann::json ceilings_file() {
    std::ifstream f(kDir + "/../results/h200/ceilings.json");
    REQUIRE(f);
    return nlohmann::json::parse(f);
}
double ceiling_in_file(const std::string& name) {
    const nlohmann::json doc = ceilings_file();
    for (const auto& c : doc["ceilings"])
        if (c["name"] == name) return c["value"].get<double>();
    FAIL("no ceiling " << name << " in the file");
    return 0;
}

std::string lesson_with(const std::string& ceiling_tables, const std::string& text) {
    return "id = \"c\"\ntitle = \"c\"\n[config.a]\nalgo = \"standard\"\nseq = 64\nhead_dim = 16\n" + ceiling_tables +
           "\n[[step]]\ntext = \"\"\"\n" + text + "\n\"\"\"\n";
}

// Sets an environment variable for one scope.
struct Env {
    std::string name;
    Env(std::string n, const std::string& v) : name(std::move(n)) { ::setenv(name.c_str(), v.c_str(), 1); }
    ~Env() { ::unsetenv(name.c_str()); }
};
}  // namespace

TEST_CASE("lesson 2 cites the measured shared-memory bandwidth from the ceilings file") {
    const Lesson l = load_lesson(kDir + "/02-two-memories.toml");
    const double smem = ceiling_in_file("smem_read");
    const double copy = ceiling_in_file("hbm_copy");
    CHECK(evaluate(l, "ceiling.smem_read.value") == smem);
    CHECK(evaluate(l, "ceiling.hbm_copy.value") == copy);
    // About 32.6 TB/s on the H200 (cuda/NOTES.md): a plausible bank-limited figure, not a typo.
    CHECK(smem > 25e12);
    CHECK(smem < 40e12);
    // Step 1 prints it (TB/s with one decimal), beside the preset's figure, with the run's day and source.
    const std::string& text = l.steps[0].text;
    char tbps[32];
    std::snprintf(tbps, sizeof tbps, "%.1f TB/s", smem / 1e12);
    CHECK_MESSAGE(text.find(tbps) != std::string::npos, text);
    const std::string day = ceilings_file()["date"].get<std::string>().substr(0, 10);
    CHECK(text.find(ceilings_file()["device"].get<std::string>() + " (" + day + ")") != std::string::npos);
    CHECK(text.find("results/h200/ceilings.json") != std::string::npos);
    CHECK(text.find("flashsim bench --ceilings") != std::string::npos);
    char preset[32];
    std::snprintf(preset, sizeof preset, "%.1f TB/s", evaluate(l, "machine.H200.sram_bandwidth") / 1e12);
    CHECK(text.find(preset) != std::string::npos);
}

TEST_CASE("a ceiling the file does not hold is refused, naming the ones it has") {
    const std::string text = lesson_with("[ceiling.smem_write]\n", "{{ ceiling.smem_write.value | TBps }}");
    try {
        load_lesson_text(text, kDir + "/inline.toml");
        FAIL("a missing ceiling loaded");
    } catch (const LoadError& e) {
        CHECK(e.line == 7);  // the [ceiling.smem_write] table
        CHECK(e.message.find("no ceiling named 'smem_write'") != std::string::npos);
        CHECK(e.message.find("smem_read") != std::string::npos);  // what the file has
        CHECK(e.message.find("h200/ceilings.json") != std::string::npos);
    }
}

TEST_CASE("ceiling tables: bad names, keys and files are refused") {
    CHECK_THROWS_WITH_AS(
        load_lesson_text(lesson_with("[ceiling.smem_read]\nfile = \"../h200.json\"\n", "x"), kDir + "/inline.toml"),
        doctest::Contains("'file' names a current ceilings file"), LoadError);
    CHECK_THROWS_WITH_AS(load_lesson_text(lesson_with("[ceiling.smem_read]\nvalue = 3\n", "x"), kDir + "/inline.toml"),
                         doctest::Contains("unknown key 'value'"), LoadError);
    // A results file without a "ceilings" list (h200/bench.json holds rows) is not a ceilings file.
    CHECK_THROWS_WITH_AS(
        load_lesson_text(lesson_with("[ceiling.smem_read]\nfile = \"h200/bench.json\"\n", "x"), kDir + "/inline.toml"),
        doctest::Contains("has no \"ceilings\" list"), LoadError);
    // A name used without a [ceiling.NAME] table names nothing.
    CHECK_THROWS_AS(load_lesson_text(lesson_with("", "{{ ceiling.smem_read.value }}"), kDir + "/inline.toml"),
                    LoadError);
}

TEST_CASE("a ceiling without a positive value is refused; no file at all renders n/a") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::temp_directory_path() / "flashsim_test_ceilings";
    fs::create_directories(dir);
    fs::create_directories(dir / "h200");
    const Env env("FLASHSIM_RESULTS", dir.string());
    {
        std::ofstream f(dir / "h200/ceilings.json");
        f << R"({"device": "Test GPU", "date": "2026-01-02T03:04:05Z",
                 "ceilings": [{"name": "smem_read", "unit": "B/s", "value": 0}]})";
    }
    CHECK_THROWS_WITH_AS(load_lesson_text(lesson_with("[ceiling.smem_read]\n", "x"), "inline.toml"),
                         doctest::Contains("has no positive value"), LoadError);
    {
        std::ofstream f(dir / "h200/ceilings.json");
        f << R"({"device": "Test GPU", "date": "2026-01-02T03:04:05Z",
                 "ceilings": [{"name": "smem_read", "unit": "B/s", "value": 2.53e13, "method": "test"}]})";
    }
    const Lesson ok =
        load_lesson_text(lesson_with("[ceiling.smem_read]\n",
                                     "{{ ceiling.smem_read.value | TBps:1 }} on {{ ceiling.smem_read.measured_on }}"),
                         "inline.toml");
    CHECK(ok.steps[0].text == "25.3 TB/s on Test GPU (2026-01-02)\n");
    fs::remove(dir / "h200/ceilings.json");
    const Lesson none = load_lesson_text(
        lesson_with("[ceiling.smem_read]\n", "{{ ceiling.smem_read.value | TBps:1 }} measured"), "inline.toml");
    CHECK(none.steps[0].text == "n/a measured\n");
    CHECK_THROWS_WITH_AS(evaluate(none, "ceiling.smem_read.value"), doctest::Contains("no ceilings recorded"),
                         LoadError);
    fs::remove_all(dir);
}
