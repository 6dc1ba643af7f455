// flashsim simulate --block-sparse: the kept tiles' bytes beside the dense walk's, the output checked
// against the masked reference, and bad densities refused in one line.
#include <doctest/doctest.h>

#include <cstdint>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/flashsim_cli_test.hpp"

TEST_CASE("simulate --block-sparse: K/V bytes of the kept tiles, beside the dense walk's") {
    // N = 1024, d = 64, fp16, 128 x 128 tiles: T_r = T_c = 8. Density 0.25 keeps round(0.25 x 8) = 2 key
    // blocks a query block, 8 x 2 = 16 tiles; each reads K_j and V_j, 2 x 128 x 64 x 2 = 32,768 bytes:
    // 524,288 bytes. Dense: 64 tiles, 2,097,152 bytes.
    const CliOut o =
        fs("simulate --algo flash2 --seq 1024 --head-dim 64 --block-rows 128 --block-cols 128 --block-sparse 0.25 "
           "--json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    CHECK(j["block_mask"]["key_blocks"] == 8);
    CHECK(j["block_mask"]["kept_key_blocks"] == 2);
    CHECK(j["block_mask"]["block_rows"] == 128);
    const int64_t kv = j["tensors"]["K"]["read_bytes"].get<int64_t>() + j["tensors"]["V"]["read_bytes"].get<int64_t>();
    CHECK(kv == 524288);
    CHECK(j["dense_kv_read_bytes"] == 2097152);
    CHECK(j["ratio_to_dense"].get<double>() < 1.0);

    const CliOut t = fs("simulate --algo flash1 --seq 512 --head-dim 32 --block-sparse 0.5 --check");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("block-sparse: the block mask keeps") != std::string::npos);
    CHECK(t.text.find("vs float64 reference") != std::string::npos);
}

TEST_CASE("simulate --block-sparse --check: the output is the masked reference's to fp16 rounding") {
    const CliOut o = fs("simulate --algo flash2 --seq 300 --head-dim 32 --block-sparse 0.4 --check --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    // flash2 rounds only its output to fp16: half an ulp, 2^-12 relative, of |O| < 1
    CHECK(j["vs_reference"]["max_abs"].get<double>() < 2.5e-4);
}

TEST_CASE("simulate --block-sparse: bad densities get one clear line and exit 1") {
    expect_refusals(fs, {
                            {"simulate --seq 256 --head-dim 32 --block-sparse -0.5", "a number above 0", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse 1.5", "more than every block", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse abc", "got 'abc'", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse ''", "got ''", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse 0.5x", "got '0.5x'", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse nan", "got 'nan'", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse 0", "keeps no block", 1},
                            {"simulate --seq 256 --head-dim 32 --block-sparse 0.5 --kernel flash2",
                             "the kernels have no block mask", 1},
                        });
}
