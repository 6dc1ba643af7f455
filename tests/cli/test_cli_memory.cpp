// flashsim fit, flashsim decode and simulate's footprint, as scripts use them: JSON keys, values
// that agree with the library, one-line refusals.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
#include <set>
#include <string>

#include "sim/decode.hpp"
#include "sim/footprint.hpp"
#include "tests/cli/flashsim_cli_test.hpp"

TEST_CASE("simulate reports the footprint (text and JSON) without changing the other keys") {
    const auto j = json_of(fs("simulate -n 1024 -d 64 --heads 4 --dtype bf16 --algo standard --pass both --json"));
    CHECK(j.contains("hbm"));
    REQUIRE(j.contains("footprint"));
    // by hand: T = 4*1024*64 elements, S = 4*1024^2; standard's step holds 8 T and 4 S, 2 bytes each
    const double T = 4.0 * 1024 * 64, S = 4.0 * 1024 * 1024;
    CHECK(j["footprint"]["total_bytes"].get<double>() == 2 * (8 * T + 4 * S));
    CHECK(j["footprint"]["fits"].get<bool>());
    const CliOut t = fs("simulate -n 1024 -d 64 --algo flash2");
    CHECK(t.text.find("HBM held at once") != std::string::npos);
}

TEST_CASE("fit: each row's N fits and the next grid point does not") {
    const auto j = json_of(fs("fit --json --pass forward,both"));
    REQUIRE(j["rows"].size() == 6);
    const double cap = j["capacity_bytes"];
    // The H200 preset's usable memory: 139 GiB (what the device reports free, not the datasheet's 141 GB).
    CHECK(cap == 139.0 * 1024 * 1024 * 1024);
    CHECK(j["batch"] == 1);
    CHECK(j["heads"] == 16);
    CHECK(j["head_dim"] == 128);
    CHECK(j["dtype"] == "bf16");
    // By hand, the tensors a pass holds at once (B = 1, H = 16, d = 128, bf16, e = 2 bytes), with
    // T = 16 N 128 elements (one of Q, K, V, O, dO, dQ, dK, dV), R = 16 N rows and 16 N^2 scores:
    //   standard forward: Q, K, V, O and S, P;  standard both: 8 of T and S, P, dP, dS;
    //   flash1 forward: Q, K, V in bf16, O in fp32 (4 bytes), m and l (fp32 a row);
    //   flash1 both (its backward): Q, K, V, dO, dK, dV in bf16, O and dQ in fp32, m and l;
    //   flash2 forward: Q, K, V, O and the LSE (fp32 a row);
    //   flash2 both (its backward): 8 of T, LSE and D (fp32 a row each), dQ's fp32 accumulator.
    auto held = [](const std::string& algo, const std::string& pass, double n) {
        const double T = 16 * n * 128, R = 16 * n, S = 16 * n * n, e = 2;
        if (algo == "standard") return pass == "forward" ? 4 * T * e + 2 * S * e : 8 * T * e + 4 * S * e;
        if (algo == "flash1") return pass == "forward" ? 3 * T * e + 4 * T + 8 * R : 6 * T * e + 8 * T + 8 * R;
        return pass == "forward" ? 4 * T * e + 4 * R : 8 * T * e + 8 * R + 4 * T;
    };
    // The grid: 1..8, then eight steps an octave (2^k (8 + j) / 8): above 8 the next point is n + 2^(k-3)
    // for n in [2^k, 2^(k+1)).
    auto next_point = [](int64_t n) {
        if (n < 8) return n + 1;
        int64_t k = 0;
        while ((int64_t{2} << k) <= n) ++k;
        return n + (int64_t{1} << (k - 3));
    };
    std::set<std::string> seen;
    for (const auto& r : j["rows"]) {
        const std::string algo = r["algo"], pass = r["pass"];
        CAPTURE(algo);
        CAPTURE(pass);
        seen.insert(algo + " " + pass);
        const int64_t n = r["longest_n"], next = r["next_n"];
        CHECK(next == next_point(n));
        CHECK(r["bytes_at_longest"].get<double>() == held(algo, pass, static_cast<double>(n)));
        CHECK(r["bytes_at_next"].get<double>() == held(algo, pass, static_cast<double>(next)));
        CHECK(held(algo, pass, static_cast<double>(n)) <= cap);    // the longest N fits
        CHECK(held(algo, pass, static_cast<double>(next)) > cap);  // the next grid point does not
    }
    CHECK(seen.size() == 6);
    CHECK(json_of(fs("fit --json --algo standard --memory 80GB"))["capacity_bytes"].get<double>() == 80e9);
}

TEST_CASE("decode: the JSON agrees with the library and --check compares with the reference") {
    const auto j = json_of(fs("decode -L 4097 --check --json"));
    sim::DecodeProblem p;
    p.kv_len = 4097;
    const sim::DecodeResult r = sim::simulate_decode(p, sim::find_machine("H200"), {});
    CHECK(j["splits"] == r.split.splits);
    CHECK(j["kv_read_bytes"] == 2 * 8 * 4097 * 128 * 2);
    CHECK(j["vs_reference"]["rel_frobenius"].get<double>() < 1e-2);
    CHECK(fs("decode -L 32768").text.find("why:") != std::string::npos);
}

TEST_CASE("fit and decode refuse bad input in one line") {
    expect_refusals(fs, {{"fit --head-dim 0", "error: head dimension"},
                         {"fit --memory 12XB", "--memory must be"},
                         {"fit --memory -5GB", "--memory must be"},
                         {"fit --memory 0.5", "--memory must be between 1 byte and 1 PB, got '0.5'"},
                         {"fit --memory 1e300", "--memory must be between 1 byte and 1 PB"},
                         {"fit --memory ''", "--memory needs a size"},
                         {"fit --algo foo", "unknown --algo"},
                         {"fit --pass sideways", "--pass must be"},
                         {"fit --dtype int3", "unknown --dtype"},
                         {"fit --batch -1", "error:"},
                         {"decode", "--kv-len"},
                         {"decode -L 0", "error:"},
                         {"decode -L 100 --kv-heads 5", "must divide"},
                         {"decode -L 4 --q-len 5", "cannot exceed"},
                         {"decode -L 100 --splits -2", "splits must be"},
                         {"decode -L 100 --tile-keys 0", "tile_keys"},
                         {"decode -L 100 --gpu Z80", "unknown GPU preset"},
                         {"decode -L 100000000 -b 64 --check", "minutes"}});
}
