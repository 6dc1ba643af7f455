// flashsim fit, flashsim decode and simulate's footprint, as scripts use them: JSON keys, values
// that agree with the library, one-line refusals.
#include <doctest/doctest.h>

#include <nlohmann/json.hpp>
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
    for (const auto& r : j["rows"]) {
        CHECK(r["bytes_at_longest"].get<double>() <= cap);
        CHECK(r["bytes_at_next"].get<double>() > cap);
        sim::Problem p;
        p.heads = 16;
        p.head_dim = 128;
        p.dtype = sim::DType::bf16;
        p.seq = r["next_n"];
        CHECK(r["next_n"].get<int64_t>() == sim::grid_point(sim::grid_index_at_most(r["longest_n"]) + 1));
    }
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
