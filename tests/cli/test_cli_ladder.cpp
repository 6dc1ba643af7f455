// tests/cli/test_cli_ladder.cpp — every screen that prints a time names its rung of the ladder
// (docs/timing.md): simulate's one predicted_ms and one "predicted" line a rung, compare, sweep and
// scenario's columns.
#include <doctest/doctest.h>

#include <sstream>
#include <string>

#include "tests/cli/flashsim_cli_test.hpp"

namespace {
int lines_with(const std::string& text, const std::string& what) {
    std::istringstream in(text);
    int n = 0;
    for (std::string line; std::getline(in, line);) n += line.find(what) != std::string::npos;
    return n;
}
const char* kShape = "--batch 1 --heads 8 --seq 2048 --head-dim 64 --gpu H200";
}  // namespace

TEST_CASE("simulate --kernel --json: one predicted_ms, the kernel's; the lower rungs under their names") {
    const auto j = json_of(fs(std::string("simulate --kernel flash2 --pass both --json ") + kShape));
    REQUIRE(j["kernel_model"].size() == 2);
    const double kernel =
        j["kernel_model"][0]["predicted_ms"].get<double>() + j["kernel_model"][1]["predicted_ms"].get<double>();
    CHECK(j["predicted_rung"] == "this kernel");
    CHECK(j["predicted_ms"].get<double>() == doctest::Approx(kernel));
    CHECK(j["this_kernel_ms"].get<double>() == doctest::Approx(kernel));
    CHECK_FALSE(j.contains("kernel_model_ms"));  // one name a number
    // rung 1 by hand: the walk's HBM bytes (no L2) over the H200's datasheet bandwidth, the rate the
    // JSON's timing block states it used
    const double bytes =
        j["hbm_without_l2"]["read_bytes"].get<double>() + j["hbm_without_l2"]["write_bytes"].get<double>();
    const double bw = j["timing"]["hbm_bandwidth"].get<double>();
    CHECK(j["bytes_bound_ms"].get<double>() == doctest::Approx(bytes / bw * 1e3).epsilon(1e-9));
    CHECK(j["ideal_machine_ms"].get<double>() == doctest::Approx(j["timing"]["overlapped_ms"].get<double>()));
    REQUIRE(j["ladder"].size() == 3);
    CHECK(j["ladder"][0]["name"] == "bytes bound");
    CHECK(j["ladder"][1]["name"] == "ideal machine");
    CHECK(j["ladder"][2]["name"] == "this kernel");
}

TEST_CASE("simulate --kernel: one 'predicted' line a rung, named; --algo: rungs 1 and 2") {
    const auto k = fs(std::string("simulate --kernel flash2 ") + kShape);
    REQUIRE(k.rc == 0);
    CHECK(lines_with(k.text, "predicted") == 3);
    CHECK(lines_with(k.text, "predicted, bytes bound:") == 1);
    CHECK(lines_with(k.text, "predicted, ideal machine:") == 1);
    CHECK(lines_with(k.text, "predicted, this kernel:") == 1);
    CHECK(lines_with(k.text, "<- headline") == 1);
    CHECK(k.text.find("this kernel:") < k.text.rfind("<- headline"));

    const auto a = fs(std::string("simulate --algo flash2 ") + kShape);
    REQUIRE(a.rc == 0);
    CHECK(lines_with(a.text, "predicted") == 2);
    CHECK(lines_with(a.text, "predicted, bytes bound:") == 1);
    CHECK(lines_with(a.text, "predicted, ideal machine:") == 1);
    const auto aj = json_of(fs(std::string("simulate --algo flash2 --json ") + kShape));
    CHECK(aj["predicted_rung"] == "ideal machine");
    CHECK(aj["predicted_ms"].get<double>() == doctest::Approx(aj["ideal_machine_ms"].get<double>()));
    CHECK_FALSE(aj.contains("this_kernel_ms"));
}

TEST_CASE("compare, sweep and scenario name the rung they print") {
    const auto c = fs(std::string("compare ") + kShape);
    REQUIRE(c.rc == 0);
    CHECK(lines_with(c.text, "bytes bound ms") == 1);
    CHECK(lines_with(c.text, "ideal machine ms") == 1);
    const auto s = fs("sweep --param seq --values 1024,2048 --head-dim 64 --gpu H200");
    REQUIRE(s.rc == 0);
    CHECK(lines_with(s.text, "ideal machine") == 1);
    const auto csv = fs("sweep --param seq --values 1024 --head-dim 64 --gpu H200 --csv /dev/stdout");
    REQUIRE(csv.rc == 0);
    CHECK(csv.text.find("ideal_machine_ms") != std::string::npos);
}
