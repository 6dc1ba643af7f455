// flashsim sweep over the SRAM budget M, as lesson 3 asks the learner to run it: the counted traffic
// of Algorithm 1 falls as 1/M between M = d and M = N d (the paper's Theorem 2).
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <string>

#include "tests/cli/flashsim_cli_test.hpp"

// The expectation, from Algorithm 1 (the paper's order: key blocks outside) and Theorem 2's count.
// K and V cross once and O, l, m are initialised once: A <= 8 N d + 8 N bytes whatever M is (fp16 K
// and V; FA1's O in fp32). For each of the T_c = N / B_c key blocks every Q_i is read (fp16) and
// every O_i read and written (fp32), l_i and m_i too: B >= 10 N d bytes a key block. B_c follows
// the rule B_c = ceil(M / 4d), linear in M, so doubling M halves T_c and
//   bytes(M) / bytes(2M) = (A + B T) / (A + B T / 2),
// between 1 (all of it A) and 2 (all of it B T). With A/B <= (8 N d + 8 N) / (10 N d) = 0.8125 at
// d = 64 (k), the ratio is at least (k + T) / (k + T / 2) with T = T_c at M: 1.91 for the last
// doubling (T = 16 to 8, M = N d elements at the end). Over the whole range, 32 times the SRAM
// (T = 256 to 8), the bytes fall by at least (k + 256) / (k + 8) = 29.1 and at most 32.
TEST_CASE("sweep over sram: flash1's bytes fall as 1/M from a few d to N d (Theorem 2)") {
    const int64_t n = 1024, d = 64;  // N d = 65,536 fp16 numbers = 131,072 bytes
    const auto j = json_of(
        fs("sweep --algo flash1 -n 1024 -d 64 --param sram --values 4096,8192,16384,32768,65536,131072 --json"));
    REQUIRE(j.size() == 6);
    double first = 0, last = 0;
    for (size_t i = 0; i + 1 < j.size(); ++i) {
        const auto& a = j[i]["result"];
        const auto& b = j[i + 1]["result"];
        CAPTURE(j[i]["value"].get<int64_t>());
        const double ba = a["hbm"]["read_bytes"].get<double>() + a["hbm"]["write_bytes"].get<double>();
        const double bb = b["hbm"]["read_bytes"].get<double>() + b["hbm"]["write_bytes"].get<double>();
        CHECK(b["block_cols"].get<int64_t>() == 2 * a["block_cols"].get<int64_t>());  // the rule: B_c linear in M
        const double t = double(n / b["block_cols"].get<int64_t>());                  // T_c at 2M, at least 8
        const double k = (8.0 * n * d + 8.0 * n) / (10.0 * n * d);
        CHECK(ba / bb >= (k + 2 * t) / (k + t) - 1e-12);
        CHECK(ba / bb <= 2.0);
        if (i == 0) first = ba;
        last = bb;
    }
    const double k = (8.0 * n * d + 8.0 * n) / (10.0 * n * d);
    CHECK(first / last >= (k + 256) / (k + 8) - 1e-12);
    CHECK(first / last <= 32.0);
}
