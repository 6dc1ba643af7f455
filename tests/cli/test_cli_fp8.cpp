// flashsim numerics (the emulated FP8 forward) and --dtype fp8 elsewhere: the JSON scripts read, the
// refusals in one line with exit 1, and the kernel model's FP8 prediction.
#include <doctest/doctest.h>

#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/flashsim_cli_test.hpp"

namespace {
// A refusal: exit 1, one line on stderr naming the command, and the words that say what to fix.
void refused(const std::string& args, const std::string& words) {
    CAPTURE(args);
    const CliOut o = fs(args);
    CHECK(o.rc == 1);
    CHECK(o.text.find("error:") != std::string::npos);
    CHECK(o.text.find(words) != std::string::npos);
    CHECK(o.text.find('\n') == o.text.size() - 1);  // one line
}
}  // namespace

TEST_CASE("numerics --dtype fp8 --json: the errors of FP8 and bf16 against float64") {
    const CliOut o = fs("numerics --dtype fp8 -n 200 -d 64 --outliers 2 --seed 3 --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    CHECK(j["seq"] == 200);
    CHECK(j["head_dim"] == 64);
    CHECK(j["scales"] == "block");
    CHECK(j["outlier_channels"].size() == 2);
    for (const char* t : {"fp8", "bf16"})
        for (const char* k : {"max_abs", "rms", "rel_rms"}) {
            CAPTURE(t);
            CAPTURE(k);
            REQUIRE(j[t][k].is_number());
            CHECK(j[t][k].get<double>() > 0);  // rounding happened; a NaN would not be a number
        }
    // e4m3's unit roundoff is 16 times bf16's (2^-4 against 2^-8): its error is clearly larger
    CHECK(j["fp8"]["rms"].get<double>() > 2 * j["bf16"]["rms"].get<double>());
    // the outlier channels are 10x N(0, 1) in Q and K (the default): their largest entries are far
    // above V's (N(0, 1) throughout; 200 x 64 draws stay under 5.5)
    CHECK(j["amax"]["k"].get<double>() > 2 * j["amax"]["v"].get<double>());
    CHECK(j["amax"]["q"].get<double>() > 2 * j["amax"]["v"].get<double>());
    // the text form names both rows
    const CliOut t = fs("numerics --dtype fp8 -n 64 -d 64 --incoherent --scales tensor");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("fp8 (e4m3") != std::string::npos);
    CHECK(t.text.find("bf16 (u = 2^-8)") != std::string::npos);
    CHECK(t.text.find("incoherent processing: on") != std::string::npos);
}

TEST_CASE("numerics refuses bad input in one line") {
    refused("numerics --dtype fp8 -n 64 -d 96 --incoherent", "power of two");
    refused("numerics --dtype fp8 -n 0 -d 64", "sequence length N");
    refused("numerics --dtype fp8 -n -5 -d 64", "sequence length N");
    refused("numerics --dtype fp9 -n 64 -d 64", "unknown --dtype 'fp9'");
    refused("numerics --dtype bf16 -n 64 -d 64", "use --dtype fp8");
    refused("numerics --dtype fp8 -n 64 -d 64 --scales row", "use block or tensor");
    refused("numerics --dtype fp8 -n 64 -d 64 --outliers 65", "--outliers");
    refused("numerics --dtype fp8 -n 1000000 -d 128", "minutes on the CPU");
}

TEST_CASE("simulate --kernel flash2h --dtype fp8: the FP8 forward predicted, refused where not modelled") {
    const std::string shape = " --seq 4096 --head-dim 128 --batch 4 --heads 16 --gpu H100-SXM --l2 off --json";
    const CliOut f = fs("simulate --kernel flash2h --dtype fp8" + shape);
    const CliOut b = fs("simulate --kernel flash2h --dtype bf16" + shape);
    REQUIRE(f.rc == 0);
    REQUIRE(b.rc == 0);
    const auto jf = nlohmann::json::parse(f.text), jb = nlohmann::json::parse(b.text);
    // Q read once a head: B H N d bytes, 1 byte an element in FP8, 2 in bf16
    CHECK(jf["tensors"]["Q"]["read_bytes"].get<double>() == 4.0 * 16 * 4096 * 128 * 1);
    CHECK(jb["tensors"]["Q"]["read_bytes"].get<double>() == 4.0 * 16 * 4096 * 128 * 2);
    // O written once in bf16 either way
    CHECK(jf["tensors"]["O"]["write_bytes"] == jb["tensors"]["O"]["write_bytes"]);
    const double tf = jf["kernel_model"][0]["predicted_ms"].get<double>();
    const double tb = jb["kernel_model"][0]["predicted_ms"].get<double>();
    CHECK(tf < tb);
    CHECK(tb / tf < 2.0);  // the exponentials do not speed up
    refused("simulate --kernel flash2h --dtype fp8 --pass backward --seq 1024 --head-dim 128", "forward only");
    refused("simulate --kernel flash2 --dtype fp8 --seq 1024 --head-dim 128", "--kernel flash2h");
    refused("simulate --algo standard --dtype fp8 --seq 1024 --head-dim 128", "fp8 is modelled for the flash forward");
    refused("decode --dtype fp8 --kv-len 4096 --head-dim 128", "fp8 is modelled for the attention forward only");
}

TEST_CASE("--ceilings measured --dtype fp8: the ideal machine and the kernel take the recorded FP8 wgmma rate") {
    // results/h100/ceilings.json records wgmma_e4m3; both rungs must multiply at that rate, not at the
    // bf16 rate times the datasheet's ratio.
    std::ifstream cf(std::string(FLASHSIM_SOURCE_DIR) + "/results/h100/ceilings.json");
    REQUIRE(cf);
    const auto ceilings = nlohmann::json::parse(cf);
    double e4m3 = 0;
    for (const auto& c : ceilings["ceilings"])
        if (c["name"] == "wgmma_e4m3") e4m3 = c["value"].get<double>();
    REQUIRE(e4m3 > 0);
    const CliOut o =
        fs("simulate --kernel flash2h --dtype fp8 --seq 8192 --head-dim 128 --batch 2 --heads 16 --gpu H100-SXM "
           "--ceilings measured --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    CHECK(j["timing"]["matmul_flops"].get<double>() == doctest::Approx(e4m3).epsilon(1e-12));
    double tensor_s = 0;
    for (const auto& c : j["kernel_model"][0]["where_the_time_goes"])
        if (c["name"] == "tensor") tensor_s = c["seconds"].get<double>();
    // S = Q K^T and O = P V: 2 N^2 d FLOPs each, for each of the B H = 32 heads
    CHECK(tensor_s == doctest::Approx(4.0 * 32 * 8192.0 * 8192 * 128 / e4m3).epsilon(1e-9));
}
