// The lab trace file (report/lab_trace) as the app loads it (viz/lab_trace): a learner's FA2
// forward written on the tile machine round-trips, counts the closed form's bytes, the same bytes
// and FLOPs as the built-in flash2 at its tiles, replays to its own totals, and bad files are
// refused with a line that says what is wrong.
#include <doctest/doctest.h>

#include <filesystem>
#include <fstream>
#include <nlohmann/json.hpp>
#include <string>

#include "tests/viz/lab_fa2.hpp"
#include "viz/lab_trace.hpp"

namespace {

namespace fs = std::filesystem;

std::string temp_file(const std::string& name) { return (fs::temp_directory_path() / name).string(); }

void write(const std::string& path, const std::string& text) { std::ofstream(path, std::ios::binary) << text; }

// N = 200, d = 32 in fp16, B_r = 64, B_c = 48: T_r = ceil(200 / 64) = 4 query tiles (the last of
// 8 rows), T_c = ceil(200 / 48) = 5 key tiles (the last of 8).
constexpr int64_t kN = 200, kD = 32, kBr = 64, kBc = 48, kTr = 4, kTc = 5, kElem = 2;

}  // namespace

TEST_CASE("a lab trace of an FA2 forward: closed-form bytes, the built-in's counts, a replay to its totals") {
    const sim::TileMachine tm = lab_test::fa2_run(kN, kD, kBr, kBc, sim::DType::fp16, 1 << 20);
    const report::LabTraceInfo info = report::complete_lab_trace_info(tm, {});
    // read off the machine: N, d and the dtype from Q, B_r and B_c from the first loads of Q and K
    CHECK(info.problem.seq == kN);
    CHECK(info.problem.head_dim == kD);
    CHECK(info.problem.dtype == sim::DType::fp16);
    CHECK(info.block_rows == kBr);
    CHECK(info.block_cols == kBc);
    const std::string path = temp_file("flashsim_lab_trace_fa2.json");
    report::save_lab_trace(path, tm, info);
    std::string err;
    const auto run = viz::load_lab_run(path, &err);
    REQUIRE_MESSAGE(run, err);
    // FA2's forward reads Q once, K and V once per query tile, writes O once and LSE (fp32) once
    const int64_t nd = kN * kD * kElem;
    const sim::Totals& got = run->trace.totals;
    CHECK(got[sim::Tensor::Q].read_bytes == nd);
    CHECK(got[sim::Tensor::K].read_bytes == kTr * nd);
    CHECK(got[sim::Tensor::V].read_bytes == kTr * nd);
    CHECK(got[sim::Tensor::O].write_bytes == nd);
    CHECK(got[sim::Tensor::LSE].write_bytes == kN * 4);
    const int64_t closed = nd + 2 * kTr * nd + nd + kN * 4;
    CHECK(got.hbm_total().total() == closed);
    CHECK(tm.totals().hbm_total().total() == closed);  // the file carries what the machine counted
    CHECK(run->trace.trace.steps_per_head == kTr * kTc);
    // the built-in flash2 at the same tiles moves the same bytes and counts the same FLOPs
    const sim::Result& b = run->builtin_result();
    CHECK(b.block_rows == kBr);
    CHECK(b.block_cols == kBc);
    CHECK(b.totals.hbm_total().total() == closed);
    CHECK(b.totals.flops == got.flops);
    // the last query tile (rows 192..199) is tile 3, as the walkers number it
    int32_t last_q = -1;
    for (const sim::Event& e : run->trace.trace.events)
        if (e.kind == sim::EventKind::load && e.tensor == sim::Tensor::Q) last_q = e.row_tile;
    CHECK(last_q == kTr - 1);
    // replayed to the end, the learner's run has moved all it counted, and every tile of Q was read
    viz::Replay rp(run->mine_result());
    rp.advance_to(run->mine_result().trace.events.size());
    CHECK(rp.totals().hbm_total() == got.hbm_total());
    const viz::Grid& q = rp.grid(sim::Tensor::Q);
    REQUIRE(q.rows == kTr);
    for (int i = 0; i < q.rows; ++i) CHECK((q.at(i, 0) & 1) == 1);
    // the lines the app shows and prints
    CHECK(run->mine_line.find("yours: 128,800 B moved") == 0);  // 12,800 + 2 x 51,200 + 12,800 + 800
    CHECK(closed == 128800);
    fs::remove(path);
}

TEST_CASE("bad lab trace files are refused with one line that says what is wrong") {
    const sim::TileMachine tm = lab_test::fa2_run(64, 16, 32, 32, sim::DType::fp16, 1 << 20);
    const nlohmann::json good =
        nlohmann::json::parse(report::lab_trace_json(tm, report::complete_lab_trace_info(tm, {})));
    const std::string path = temp_file("flashsim_lab_trace_bad.json");
    auto refused = [&](const std::string& text, const std::string& phrase) {
        write(path, text);
        std::string err;
        const auto run = viz::load_lab_run(path, &err);
        CHECK_MESSAGE(!run, phrase);
        CHECK_MESSAGE(err.find(phrase) != std::string::npos, err);
        CHECK(err.find('\n') == std::string::npos);
    };
    {
        std::string err;
        CHECK(!viz::load_lab_run(temp_file("flashsim_no_such_trace.json"), &err));
        CHECK(err.find("does not exist") != std::string::npos);
    }
    refused("{\"format\": \"flashsim-lab-trace\", ", "is not JSON");
    refused("[1, 2, 3]", "not a flashsim lab trace");
    nlohmann::json j = good;
    j["version"] = 2;
    refused(j.dump(), "this flashsim reads version 1");
    j = good;
    j["events"][0]["tensor"] = "X";
    refused(j.dump(), "names tensor 'X', which is not one of the trace's tensors");
    j = good;
    for (auto& e : j["events"])
        if (e["kind"] == "load") {
            e["tensor"] = "dQ";  // a real tensor name, but not one this run has in HBM
            break;
        }
    refused(j.dump(), "names tensor 'dQ'");
    j = good;
    j["events"][0]["step"] = 5;
    refused(j.dump(), "in the order they ran");
    j = good;
    j["problem"].erase("seq");
    refused(j.dump(), "'problem.seq' is missing");
    j = good;
    j["tiles"]["block_rows"] = 0;
    refused(j.dump(), "'tiles.block_rows' must be an integer of at least 1");
    j = good;
    j["tiles"]["block_rows"] = 1;
    j["tiles"]["block_cols"] = 1;
    j["problem"]["seq"] = 16384;  // 16,384^2 tile pairs: more than the app walks
    refused(j.dump(), "tile pairs");
    fs::remove(path);
}

TEST_CASE("the lab view's state: a bad file keeps the run shown and says why; close returns to the memory view") {
    const sim::TileMachine tm = lab_test::fa2_run(64, 16, 32, 32, sim::DType::fp16, 1 << 20);
    const std::string good = temp_file("flashsim_lab_trace_state.json");
    report::save_lab_trace(good, tm, report::complete_lab_trace_info(tm, {}));
    viz::LabTraceState s;
    CHECK(!s.shown());
    REQUIRE(s.open(good));
    CHECK(s.shown());
    CHECK(s.error.empty());
    CHECK(s.step == -1);  // the last step until one is chosen
    const viz::LabRun* shown = s.run.get();
    CHECK(!s.open(temp_file("flashsim_no_such_trace.json")));
    CHECK(s.run.get() == shown);  // the last good run stays
    CHECK(s.error.find("does not exist") != std::string::npos);
    s.close();
    CHECK(!s.shown());
    CHECK(s.error.empty());
    fs::remove(good);
}
