// flashsim ring, as a script uses it: the JSON's bytes per link from the formula, the layouts'
// work, --check against one-device attention, and one-line refusals with a non-zero exit.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/flashsim_cli_test.hpp"

TEST_CASE("ring --json: bytes per link by hand, balanced work even, contiguous uneven") {
    const auto j = json_of(fs("ring --gpus 4 --seq 4096 --head-dim 64 --heads 2 --causal --pass both --json"));
    REQUIRE(j["passes"].size() == 2);
    // n = 1024 tokens a GPU; K and V: 2 x 1024 x 64 x 2 B (bf16, the command's default) x 2 heads =
    // 524288 B a send; forward P-1 = 3 sends; backward also 4 sends of float32 dK, dV (1048576 B)
    CHECK(j["passes"][0]["link_bytes"].get<int64_t>() == 3 * 524288);
    CHECK(j["passes"][1]["link_bytes"].get<int64_t>() == 3 * 524288 + 4 * 1048576);
    CHECK(j["layout"] == "balanced");
    CHECK(j["chunk"].get<int64_t>() == 512);
    CHECK(j["measured"] == false);
    // balanced: every GPU does N(N+1)/2 / P = 4096 x 4097 / 8 pairs
    for (const auto& w : j["passes"][0]["pairs_per_device"]) CHECK(w.get<int64_t>() == 4096LL * 4097 / 8);
    const auto c = json_of(fs("ring --gpus 4 --seq 4096 --head-dim 64 --causal --layout contiguous --json"));
    // contiguous: GPU i does i blocks of 1024^2 and its triangle 1024 x 1025 / 2
    for (int i = 0; i < 4; ++i)
        CHECK(c["passes"][0]["pairs_per_device"][i].get<int64_t>() == i * 1024LL * 1024 + 1024LL * 1025 / 2);
    CHECK(j["passes"][0]["break_even_tokens_per_gpu"].get<int64_t>() > 0);
}

TEST_CASE("ring: past the break-even, contiguous is held to about P/(2P-1), balanced is not") {
    // 32768 tokens a GPU: the link hides. Contiguous: every step after the first waits for the
    // last GPU's full block (twice a triangle's work), so the ring takes ~ (2P-1)/2 triangles
    // where P one-GPU shares would take P/2 each in parallel: efficiency ~ P/(2P-1) = 4/7.
    const std::string shape = "ring --gpus 4 --seq 131072 --head-dim 128 --heads 16 --causal --json";
    const auto b = json_of(fs(shape));
    const auto c = json_of(fs(shape + " --layout contiguous"));
    CHECK(c["efficiency"].get<double>() == doctest::Approx(4.0 / 7.0).epsilon(0.1));
    CHECK(b["efficiency"].get<double>() > c["efficiency"].get<double>() + 0.2);
    for (const auto& st : b["passes"][0]["steps"]) CHECK(st["exposed_ms"].get<double>() == 0);
}

TEST_CASE("ring text names the schedule and --check compares with one device") {
    const CliOut t = fs("ring --gpus 3 --seq 96 --head-dim 16 --causal --dtype fp32 --check");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("GPU 0: 0,5") != std::string::npos);  // chunks i and 2P-1-i
    CHECK(t.text.find("scaling efficiency") != std::string::npos);
    CHECK(t.text.find("check: the ring run on the CPU") != std::string::npos);
    const auto j = json_of(fs("ring --gpus 3 --seq 96 --head-dim 16 --causal --dtype fp32 --check --json"));
    CHECK(j["check"]["O"]["max_abs"].get<double>() < 2e-6);
    CHECK(!j["check"].contains("dQ"));
    // the backward too: dK, dV travel around the ring and come home equal to one device's
    const auto b = json_of(fs("ring --gpus 2 --seq 64 --head-dim 8 --causal --dtype fp32 --pass both --check --json"));
    for (const char* g : {"O", "dQ", "dK", "dV"}) {
        CAPTURE(g);
        REQUIRE(b["check"].contains(g));
        CHECK(b["check"][g]["max_abs"].get<double>() < 1e-5);
        CHECK(b["check"][g]["count"].get<int64_t>() == 64 * 8);
    }
}

TEST_CASE("ring refuses bad input in one line") {
    expect_refusals([](const char* a) { return fs(a); },
                    {{"ring --gpus 0 --seq 64 --head-dim 8", "--gpus must be >= 1"},
                     {"ring --gpus 4 --seq 100 --head-dim 8", "pad the sequence to N = 104"},
                     {"ring --gpus 3 --seq 100 --head-dim 8 --layout contiguous", "pad the sequence to N = 102"},
                     {"ring --gpus 2 --seq 64 --head-dim 8 --gpu B200", "unknown GPU preset"},
                     {"ring --gpus 2 --seq 64 --head-dim 8 --layout zigzag", "unknown --layout"},
                     {"ring --gpus 2 --seq 64 --head-dim 8 --pass sideways", "unknown --pass"},
                     {"ring --gpus 2 --seq 64 --head-dim 8 --window 4", "--window"},
                     {"ring --seq 64 --head-dim 8", "--gpus"}});
}
