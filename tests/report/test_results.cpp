// report/results.hpp: the days a merged results file's rows come from, each day once. The lessons
// (measured_on, measured.status) and the app's measured tab both print them through it.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <fstream>
#include <string>
#include <utility>
#include <vector>

#include "report/results.hpp"
#include "sim/machine.hpp"

using nlohmann::json;

TEST_CASE("run_days: each day of the calls once, in the file's order") {
    const json doc = json::parse(R"({"date": "2026-12-01T18:05:14Z", "runs": [
        {"date": "2026-11-29T18:32:47Z", "git_commit": "c03afe0"},
        {"date": "2026-12-01T12:22:09Z", "git_commit": "4e97bf5"},
        {"date": "2026-12-01T17:38:41Z", "git_commit": "d7fd46b"},
        {"date": "2026-11-29T20:00:00Z", "git_commit": "aaaaaaa"}]})");
    CHECK(report::run_days(doc) == std::vector<std::string>{"2026-11-29", "2026-12-01"});
    CHECK(report::run_dates(doc) == "2026-11-29 and 2026-12-01");
}

TEST_CASE("run_span: one date line a file, first day to last whatever the runs' order") {
    const json doc = json::parse(R"({"runs": [{"date": "2026-12-03T01:00:00Z"}, {"date": "2026-11-29T18:32:47Z"},
        {"date": "2026-12-01T12:22:09Z"}]})");
    CHECK(report::run_span(doc) == "2026-11-29 to 2026-12-03");
    CHECK(report::run_span(json::parse(
              R"({"runs": [{"date": "2026-12-01T01:00:00Z"}, {"date": "2026-12-01T09:00:00Z"}]})")) == "2026-12-01");
    CHECK(report::run_span(json::parse(R"({"date": "2026-10-01T00:00:00Z"})")) == "2026-10-01");
    CHECK(report::run_span(json::parse(R"({"device": "NVIDIA H200"})")) == "?");
}

TEST_CASE("run_dates without runs: the file's own day, else '?'") {
    CHECK(report::run_days(json::parse(R"({"date": "2026-12-01T12:21:29Z"})")).empty());
    CHECK(report::run_dates(json::parse(R"({"date": "2026-12-01T12:21:29Z"})")) == "2026-12-01");
    CHECK(report::run_dates(json::parse(R"({"device": "NVIDIA H200"})")) == "?");
    CHECK(report::run_dates(json::parse("[1, 2]")) == "?");
    // runs present but none with a date: the file's date
    CHECK(report::run_dates(json::parse(R"({"date": "2026-10-01", "runs": [{"git_commit": "x"}, 3]})")) ==
          "2026-10-01");
    // one call: one day
    CHECK(report::run_dates(json::parse(R"({"runs": [{"date": "2026-11-29T18:32:47Z"}]})")) == "2026-11-29");
}

// The recorded results file itself: its "runs" span two days (results/h200/bench.json).
TEST_CASE("run_dates of results/h200/bench.json names each of its days once") {
    std::ifstream f(std::string(FLASHSIM_SOURCE_DIR) + "/results/h200/bench.json");
    REQUIRE(f);
    const json doc = json::parse(f);
    std::vector<std::string> days;  // worked out here without the helper
    for (const auto& run : doc["runs"]) {
        const std::string d = run["date"].get<std::string>().substr(0, 10);
        if (days.empty() || std::find(days.begin(), days.end(), d) == days.end()) days.push_back(d);
    }
    REQUIRE(days.size() >= 1);
    CHECK(report::run_days(doc) == days);
    const std::string text = report::run_dates(doc);
    for (const auto& d : days) CHECK(text.find(d) != std::string::npos);
    CHECK(text.size() == days.size() * 10 + (days.size() - 1) * 5);  // "YYYY-MM-DD" and " and " between
}

// The H200 preset's L2 walk capacity (sim::Machine::l2_reuse_bytes) is the measured one: where the
// recorded re-read probe (the same S MiB read twice in one counted range) found half of its second
// read in L2, interpolated here between the two sizes around it. Presets without a measurement
// replay their datasheet capacity.
TEST_CASE("the H200's L2 walk capacity is where the recorded re-read finds half its second read") {
    std::ifstream f(std::string(FLASHSIM_SOURCE_DIR) + "/results/h200/counters_probe_reread.json");
    REQUIRE(f);
    const json doc = json::parse(f);
    std::vector<std::pair<double, double>> hit;  // (S bytes, share of the second read served by L2)
    for (const auto& p : doc["counters_probe"]) {
        const std::string name = p["name"];
        if (name.rfind("reread_", 0) != 0) continue;
        const double s = p["work_read_bytes"].get<double>() / 2;
        hit.emplace_back(s, (2 * s - p["dram_read_bytes"].get<double>()) / s);
    }
    REQUIRE(hit.size() >= 4);
    std::sort(hit.begin(), hit.end());
    double half = -1;
    for (size_t k = 1; k < hit.size() && half < 0; ++k)
        if (hit[k - 1].second >= 0.5 && hit[k].second < 0.5)
            half = hit[k - 1].first +
                   (hit[k].first - hit[k - 1].first) * (hit[k - 1].second - 0.5) / (hit[k - 1].second - hit[k].second);
    REQUIRE(half > 0);
    const sim::Machine& h200 = sim::find_machine("H200");
    CHECK(std::abs(h200.l2_walk_bytes() - half) <= 1.0 * (1 << 20));
    CHECK(h200.l2_walk_bytes() < h200.l2_bytes);
    sim::Machine small = h200;  // a copy given an L2 smaller than the measured capacity replays its own
    small.l2_bytes = 1 << 20;
    CHECK(small.l2_walk_bytes() == small.l2_bytes);
    const sim::Machine& a100 = sim::find_machine("A100-40GB");
    CHECK(a100.l2_walk_bytes() == a100.l2_bytes);
}
