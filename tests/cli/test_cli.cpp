// The CLI as scripts use it: exit codes, one-line errors, JSON keys, .npy round trips.
#include <doctest/doctest.h>

#include <cstdio>
#include <cmath>
#include <filesystem>
#include <fstream>
#include <iterator>
#include <nlohmann/json.hpp>
#include <set>
#include <sstream>
#include <string>

#include "report/report.hpp"
#include "sim/npy.hpp"
#include "sim/reference.hpp"
#include "tests/run_cli.hpp"

namespace {
using Out = CliOut;
Out sh(const std::string& args) { return run_cli(std::string(FLASHSIM_BIN) + " " + args); }
nlohmann::json parse_ok(const Out& o) {
    REQUIRE(o.rc == 0);
    return nlohmann::json::parse(o.text);
}
std::string tmp(const std::string& name) {
    const auto dir = std::filesystem::temp_directory_path() / ("flashsim_cli_" + std::to_string(getpid()));
    std::filesystem::create_directories(dir);
    return (dir / name).string();
}
}  // namespace

TEST_CASE("simulate --json has the fields scripts rely on") {
    const Out o = sh("simulate --algo flash2 --seq 4096 --head-dim 128 --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    for (const char* key : {"algo", "seq", "head_dim", "batch", "heads", "dtype", "gpu", "block_rows", "block_cols",
                            "hbm", "tensors", "sram_peak_bytes", "flops"})
        CHECK(j.contains(key));
    CHECK(j["algo"] == "flash2");
    CHECK(j["gpu"] == "H200");
    CHECK(j["dtype"] == "fp16");
    CHECK(j["hbm"]["read_bytes"].get<int64_t>() > 0);
    CHECK(j["tensors"]["Q"]["read_bytes"] == 4096 * 128 * 2);
    CHECK(j["sram_peak_bytes"].get<int64_t>() <= 227 * 1024);
    CHECK(j["ratio_to_standard"].get<double>() < 0.5);  // K/V re-reads: T_r = 4096 / 128 = 32 passes
}

TEST_CASE("simulate prints a table and the ratio to standard") {
    const Out o = sh("simulate --algo flash1 --seq 1024 --head-dim 64");
    CHECK(o.rc == 0);
    CHECK(o.text.find("HBM traffic") != std::string::npos);
    CHECK(o.text.find("vs standard") != std::string::npos);
    const Out c = sh("simulate --algo flash2 --seq 300 --head-dim 32 --check");
    CHECK(c.rc == 0);
    CHECK(c.text.find("vs float64 reference") != std::string::npos);
}

TEST_CASE("--sram reaches the simulator in simulate and compare") {
    // flash1 at B_r = 128, B_c = 256, d = 64 needs Q 16 KiB + K, V 32 KiB each + O (fp32) 32 KiB +
    // S (fp32) 128 KiB + m, l 1 KiB = 241 KiB: more than the H200's 227 KiB, within 256 KiB
    const std::string tiles = "simulate --algo flash1 --seq 1024 --head-dim 64 --block-rows 128 --block-cols 256";
    const Out refused = sh(tiles);
    CHECK(refused.rc != 0);
    CHECK(refused.text.find("246,784 B needed") != std::string::npos);
    const Out ok = sh(tiles + " --sram 262144 --json");
    REQUIRE(ok.rc == 0);
    const auto j = nlohmann::json::parse(ok.text);
    CHECK(j["sram_bytes"] == 262144);
    CHECK(j["block_cols"] == 256);
    // compare: a 32 KiB budget gives every algorithm that budget and smaller flash tiles
    const Out c = sh("compare --seq 4096 --head-dim 128 --sram 32768 --json");
    REQUIRE(c.rc == 0);
    const auto arr = nlohmann::json::parse(c.text);
    REQUIRE(arr.size() == 3);
    for (const auto& r : arr) {
        CHECK(r["sram_bytes"] == 32768);
        if (r["algo"] != "standard") CHECK(r["block_rows"].get<int64_t>() < 128);
    }
}

TEST_CASE("compare defaults to the seed's N = 8192, d = 128") {
    const Out o = sh("compare");
    CHECK(o.rc == 0);
    CHECK(o.text.find("N=8192 d=128") != std::string::npos);
    // By hand: standard writes S (N x N, fp16) once and reads it once for the softmax; the same for P
    // (written by the softmax, read by O = P V): 2 x 8192^2 x 2 bytes = 256 MiB each. The flash
    // algorithms never hold either in HBM: 0 B in their two columns.
    const double s_mib = 2.0 * 8192 * 8192 * 2 / (1024 * 1024);
    char want[32];
    std::snprintf(want, sizeof want, "%.2f MiB", s_mib);
    for (const char* tensor : {"S", "P"}) {
        CAPTURE(tensor);
        std::istringstream lines(o.text);
        std::string line;
        bool found = false;
        while (std::getline(lines, line)) {
            std::istringstream cells(line);
            std::string name, v1, u1, v2, u2, v3, u3;
            if (!(cells >> name) || name != tensor) continue;
            found = true;
            REQUIRE(static_cast<bool>(cells >> v1 >> u1 >> v2 >> u2 >> v3 >> u3));
            CHECK(v1 + " " + u1 == want);   // standard
            CHECK(v2 + " " + u2 == "0 B");  // flash1
            CHECK(v3 + " " + u3 == "0 B");  // flash2
        }
        CHECK(found);
    }
}

TEST_CASE("softmax defaults to the seed's worked example") {
    const Out o = sh("softmax --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    REQUIRE(j["blocks"].size() == 2);
    CHECK(j["blocks"][0]["running_max"].get<double>() == doctest::Approx(3.9));
    CHECK(j["blocks"][1]["running_sum"].get<double>() == doctest::Approx(1.9152).epsilon(1e-4));
    CHECK(j["max_abs_diff"].get<double>() < 1e-6);
    const Out v = sh("softmax --values '1,0;0,1;1,1;0,0;2,1;1,2;0,1;1,0' --block 3");
    CHECK(v.rc == 0);
    CHECK(v.text.find("output P V") != std::string::npos);
}

TEST_CASE("bad input: one clear line and a non-zero exit") {
    expect_refusals(
        sh,
        {
            {"simulate --seq 0 --head-dim 64", "sequence length N must be a positive integer"},
            {"simulate --seq 128 --head-dim 0", "head dimension d must be a positive integer"},
            {"simulate --seq 128 --head-dim 64 --gpu Z80", "unknown GPU preset 'Z80'"},
            {"simulate --seq 128 --head-dim 64 --algo flash9", "unknown --algo 'flash9'"},
            {"simulate --seq 128 --head-dim 64 --dtype int8", "unknown --dtype 'int8'"},
            {"simulate --seq 4096 --head-dim 128 --block-rows 512 --block-cols 512", "tiles do not fit in SRAM"},
            {"simulate --seq 128 --head-dim 64 --frobnicate", "frobnicate"},
            {"simulate --head-dim 64", "--seq"},
            {"simulate --seq 128 --head-dim 64 --grid sideways", "--grid must be auto, launch or static"},
            {"simulate --seq 128 --head-dim 64 --algo standard --grid static", "use --grid launch"},
            {"simulate --seq 128 --head-dim 64 --grid static --middles sideways", "--middles must be paired or alone"},
            {"softmax --scores 1,x,3", "'x' is not a number"},
            {"softmax --block 0", "--block must be at least 1"},
            {"attend --q /nonexistent/q.npy --k /nonexistent/k.npy --v /nonexistent/v.npy --out /tmp/o.npy",
             "cannot open '/nonexistent/q.npy'"},
        });
}

TEST_CASE("attend: .npy in, .npy out, equal to the reference; bad files refused") {
    sim::Problem p;
    p.seq = 70;
    p.head_dim = 16;
    p.dtype = sim::DType::fp32;
    const sim::Inputs in = sim::generate_inputs(p);
    sim::write_npy(tmp("q.npy"), in.Q, "<f4", false);
    sim::write_npy(tmp("k.npy"), in.K, "<f4", false);
    sim::write_npy(tmp("v.npy"), in.V, "<f8", false);
    const Out o = sh("attend --q " + tmp("q.npy") + " --k " + tmp("k.npy") + " --v " + tmp("v.npy") + " --out " +
                     tmp("o.npy") + " --algo flash1 --block-rows 16 --block-cols 32");
    REQUIRE(o.rc == 0);
    const sim::NpyArray out = sim::read_npy(tmp("o.npy"));
    CHECK(out.descr == "<f4");
    CHECK(out.tensor.rows == 70);
    const auto ref = sim::attention_reference(p, in.Q, in.K, in.V);
    CHECK(sim::validate(out.tensor, ref, sim::DType::fp32).max_abs < 2e-6);

    // Shapes that disagree.
    sim::Problem p2 = p;
    p2.seq = 71;
    sim::write_npy(tmp("k71.npy"), sim::generate_input(p2, sim::InputTensor::K), "<f4", false);
    const Out s = sh("attend --q " + tmp("q.npy") + " --k " + tmp("k71.npy") + " --v " + tmp("v.npy") + " --out " +
                     tmp("o2.npy"));
    CHECK(s.rc != 0);
    CHECK(s.text.find("shapes disagree") != std::string::npos);

    // A file that is not .npy, and one whose header lies about its length.
    FILE* f = fopen(tmp("bad.npy").c_str(), "wb");
    fputs("not numpy at all", f);
    fclose(f);
    const Out b = sh("attend --q " + tmp("bad.npy") + " --k " + tmp("k.npy") + " --v " + tmp("v.npy") + " --out " +
                     tmp("o3.npy"));
    CHECK(b.rc != 0);
    CHECK(b.text.find("is not a .npy file") != std::string::npos);
    std::filesystem::resize_file(tmp("k71.npy"), 200);
    const Out t = sh("attend --q " + tmp("q.npy") + " --k " + tmp("k71.npy") + " --v " + tmp("v.npy") + " --out " +
                     tmp("o4.npy"));
    CHECK(t.rc != 0);
    CHECK(t.text.find("shorter than its shape") != std::string::npos);
}

TEST_CASE("attend: hostile values refused, the backward written, differences measured") {
    sim::Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seq = 45;
    p.head_dim = 16;
    p.dtype = sim::DType::fp32;
    p.causal = true;
    const sim::Inputs in = sim::generate_inputs(p);
    const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
    sim::write_npy(tmp("hq.npy"), in.Q, "<f4", true);
    sim::write_npy(tmp("hk.npy"), in.K, "<f4", true);
    sim::write_npy(tmp("hv.npy"), in.V, "<f4", true);
    sim::write_npy(tmp("hdo.npy"), dO, "<f4", true);
    const std::string qkv = " --q " + tmp("hq.npy") + " --k " + tmp("hk.npy") + " --v " + tmp("hv.npy");

    // NaN and inf are refused with where they are; a value fp16 cannot hold too.
    sim::TensorF bad = in.K;
    bad.data[static_cast<size_t>(1 * 45 * 16 + 3 * 16 + 5)] = std::nanf("");
    bad.data[7] = INFINITY;
    sim::write_npy(tmp("hnan.npy"), bad, "<f4", true);
    const Out n = sh("attend --q " + tmp("hq.npy") + " --k " + tmp("hnan.npy") + " --v " + tmp("hv.npy") + " --out " +
                     tmp("ho.npy"));
    CHECK(n.rc == 1);
    CHECK(n.text.find("holds 2 non-finite values") != std::string::npos);
    CHECK(n.text.find("at (0, 0, 0, 7)") != std::string::npos);  // the first in memory order
    sim::TensorF big = in.V;
    big.data[20] = 1.0e6f;
    sim::write_npy(tmp("hbig.npy"), big, "<f4", true);
    const Out o = sh("attend --q " + tmp("hq.npy") + " --k " + tmp("hk.npy") + " --v " + tmp("hbig.npy") +
                     " --dtype fp16 --out " + tmp("ho.npy"));
    CHECK(o.rc == 1);
    CHECK(o.text.find("beyond fp16's range") != std::string::npos);
    CHECK(o.text.find("--dtype bf16") != std::string::npos);

    expect_refusals(sh,
                    {
                        {("attend" + qkv + " --out /tmp/x.npy --pass backward").c_str(), "needs the upstream gradient"},
                        {("attend" + qkv + " --out /tmp/x.npy --pass sideways").c_str(), "unknown --pass 'sideways'"},
                        {("attend" + qkv + " --out /tmp/x.npy --backend tpu").c_str(), "unknown --backend 'tpu'"},
                        {("attend" + qkv + " --out /tmp/x.npy --do " + tmp("hdo.npy")).c_str(), "--do is read only"},
                    });

    // The GPU backend on this machine (no GPU in CI): unavailable, exit 2, in words.
    const Out g = sh("attend --backend cuda --dtype bf16" + qkv + " --out " + tmp("hg.npy"));
    CHECK(g.rc == 2);
    CHECK(g.text.find("CUDA") != std::string::npos);

    // The backward through the simulator: O, dQ, dK, dV written beside --out, each equal to the
    // float64 reference within float32 rounding, and the comparison table printed.
    const Out b =
        sh("attend --causal --pass backward --compare --do " + tmp("hdo.npy") + qkv + " --out " + tmp("hb.npy"));
    REQUIRE(b.rc == 0);
    CHECK(b.text.find("float64 reference") != std::string::npos);
    CHECK(b.text.find("bit-identical") != std::string::npos);
    const sim::Gradients want = sim::attention_backward_reference(p, in.Q, in.K, in.V, dO);
    const std::pair<const char*, const sim::TensorD*> grads[] = {{"dQ", &want.dQ}, {"dK", &want.dK}, {"dV", &want.dV}};
    for (const auto& name_w : grads) {
        const auto& name = std::get<0>(name_w);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& w = std::get<1>(name_w);
        INFO(name);
        const sim::NpyArray got = sim::read_npy(tmp(std::string("hb_") + name + ".npy"));
        CHECK(got.four_d);
        CHECK(sim::validate(got.tensor, *w, sim::DType::fp32).max_abs < 1e-5);
    }

    // One output that cannot be written: nothing is written (no O, dQ or dK left behind without dV),
    // and outputs already there stay as they were.
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(tmp("allornothing"));
    fs::remove_all(dir);
    fs::create_directories(dir);
    const std::string o_path = (dir / "o.npy").string();
    {
        std::ofstream keep(o_path);
        keep << "an older O";
    }
    const Out w = sh("attend --causal --pass backward --do " + tmp("hdo.npy") + qkv + " --out " + o_path +
                     " --dv /proc/no/such/dir/dv.npy");
    CHECK(w.rc == 1);
    CHECK(w.text.find("/proc/no/such/dir/dv.npy") != std::string::npos);
    std::vector<std::string> left;
    for (const auto& e : fs::directory_iterator(dir)) left.push_back(e.path().filename().string());
    CHECK(left == std::vector<std::string>{"o.npy"});
    std::ifstream older(o_path);
    std::string text;
    std::getline(older, text);
    CHECK(text == "an older O");
}

TEST_CASE("bench without a GPU: one line and exit code 2") {
    // CI and this machine have no CUDA device; with nvcc the command runs flashsim-bench, which
    // finds no device, and without nvcc the build has no backend: both say so and exit 2.
    const Out o = sh("bench --variant flash2 --seq 1024 --head-dim 64 --repeats 1");
    CHECK(o.rc == 2);
    CHECK(o.text.find("flashsim bench:") != std::string::npos);
    CHECK(o.text.find("results/h200/bench.json") != std::string::npos);
    // Plain words: this machine has no GPU (and, in CI, no driver). The runtime's own "CUDA driver
    // version is insufficient for CUDA runtime version" blames a driver that is not there.
    CHECK(o.text.find("insufficient") == std::string::npos);
    const bool plain = o.text.find("no NVIDIA GPU driver") != std::string::npos ||
                       o.text.find("no CUDA GPU") != std::string::npos ||
                       o.text.find("no CUDA backend") != std::string::npos;
    CHECK_MESSAGE(plain, o.text);
}

TEST_CASE("bench refuses flags that do not go together, before it looks for a GPU") {
    const Out probe = sh("bench --trace 3");
    if (probe.text.find("no CUDA backend") != std::string::npos) {
        MESSAGE("built without nvcc: bench has no backend to parse its flags");
        return;
    }
    expect_refusals(
        sh, {
                {"bench --trace 3", "--trace goes with --decode", 1},
                {"bench --decode --trace -1", "--trace takes a count of traced calls from 1 to 1000, got -1", 1},
                {"bench --decode --counters-probe", "are separate runs", 1},
                {"bench --ceilings --counters-probe", "are separate runs", 1},
                {"bench --decode --launch-probe", "are separate runs", 1},
                {"bench --seq abc", "--seq takes whole numbers separated by commas, got 'abc'", 1},
                {"bench --decode --cache 1,x", "--cache takes whole numbers separated by commas, got 'x'", 1},
                {"bench --seq 1024,", "--seq has an empty item in '1024,'", 1},
                {"bench --variant flash2,,standard", "--variant has an empty item in 'flash2,,standard'", 1},
                {"bench --pass ,forward", "--pass has an empty item in ',forward'", 1},
                {"bench --head-dim 64,", "--head-dim has an empty item in '64,'", 1},
                {"bench --decode --cache 1024,", "--cache has an empty item in '1024,'", 1},
                // values a run would take silently (or divide by: N = 0 stopped the process)
                {"bench --seq 0 --variant flash2", "--seq takes lengths from 1 to 16,777,216, got 0", 1},
                {"bench --head-dim 0", "--head-dim takes sizes from 1 to 1024", 1},
                {"bench -b 0", "--batch must be >= 1, got 0", 1},
                {"bench --heads -1", "--heads must be >= 1, got -1", 1},
                {"bench --repeats -1", "--repeats must be >= 0", 1},
                {"bench --warmup -2", "--warmup must be >= 0", 1},
                {"bench --ring 0", "--ring takes a device count P >= 1", 1},
                {"bench --study 0", "--study takes a count of shapes >= 1", 1},
                {"bench --ring-layout contiguous", "go with --ring P", 1},
                {"bench --study-slice 1/2", "--study-slice goes with --study", 1},
                {"bench --study 2 --time-limit -1", "--time-limit takes a number of seconds > 0", 1},
                {"bench --variant flash2h+flash2 --pass forward", "it runs with --pass step", 1},
                {"bench --json /proc/no/such/o.json", "cannot write into /proc/no/such", 1},
                {"bench --json /tmp", "is a folder; give a file name", 1},
            });
}

// bench --resimulate recomputes the simulator's columns of recorded rows (no GPU). With a counters probe
// file beside the results it adds the walk as the counters see it; a bad file is refused with what is
// wrong, and the file is left as it was.
TEST_CASE("bench --resimulate: the counters' view from the probe beside the file; bad files left unchanged") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(tmp("resim"));
    fs::create_directories(dir);
    const std::string results = (dir / "bench.json").string(), probe = (dir / "counters_probe.json").string();
    auto write = [](const std::string& path, const std::string& text) {
        std::FILE* f = std::fopen(path.c_str(), "w");
        REQUIRE(f != nullptr);
        std::fputs(text.c_str(), f);
        std::fclose(f);
    };
    auto read = [](const std::string& path) { return nlohmann::json::parse(std::ifstream(path)); };
    // one recorded row (flash2 forward, N = 1024, d = 64, as results/h200/bench.json has it)
    const std::string row = R"({"variant": "flash2", "pass": "forward", "seq": 1024, "head_dim": 64, "batch": 16,
        "heads": 32, "dtype": "bf16", "causal": false, "ms_median": 0.478, "dram_read_bytes": 201430272,
        "dram_write_bytes": 87101696, "tiles": {"algo": "flash2", "block_cols": 64, "block_rows": 128,
        "loop_order": "q_outer", "smem_bytes": 49152, "sram_bytes": 115712, "threads": 128}})";
    write(results, std::string(R"({"device": "NVIDIA H200", "rows": [)") + row + "]}");
    fs::remove(probe);
    // Without --json the file is read, never written: the recomputed document goes to stdout.
    {
        std::ifstream before(results);
        const std::string text(std::istreambuf_iterator<char>(before), {});
        const Out printed = sh("bench --resimulate " + results);
        CHECK(printed.rc == 0);
        CHECK(printed.text.find("\"sim_l2_hbm_read_bytes\"") != std::string::npos);
        CHECK(printed.text.find("--json FILE writes them") != std::string::npos);
        std::ifstream after(results);
        CHECK(std::string(std::istreambuf_iterator<char>(after), {}) == text);
    }
    const Out none = sh("bench --resimulate " + results + " --json " + results);
    CHECK(none.rc == 0);
    CHECK(none.text.find("no counters probe beside") != std::string::npos);
    const auto a = read(results)["rows"][0];
    REQUIRE(a.contains("sim_l2_hbm_read_bytes"));
    CHECK_FALSE(a.contains("sim_l2_counters_view_bytes"));
    // probes: two read-only kernels of 192 and 576 MiB (the median of them is the residue), and one
    // that writes, which does not count
    write(probe, R"({"counters_probe": [
        {"work_read_bytes": 201326592, "work_write_bytes": 0, "dram_write_bytes": 29000000},
        {"work_read_bytes": 603979776, "work_write_bytes": 0, "dram_write_bytes": 29100000},
        {"work_read_bytes": 0, "work_write_bytes": 67108864, "dram_write_bytes": 66000000}]})");
    const Out with = sh("bench --resimulate " + results + " --json " + results);
    CHECK(with.rc == 0);
    const auto b = read(results)["rows"][0];
    REQUIRE(b.contains("sim_l2_counters_view_bytes"));
    const double walk = b["sim_l2_hbm_read_bytes"].get<double>() + b["sim_l2_hbm_write_bytes"].get<double>();
    const double dirty = b["sim_l2_end_dirty_bytes"].get<double>();
    CHECK(dirty > 0);
    CHECK(dirty <= b["sim_l2_hbm_write_bytes"].get<double>());       // only written lines are dirty
    CHECK(b["counters_residue_bytes"].get<double>() == 29100000.0);  // the upper of two: index size / 2
    CHECK(b["sim_l2_counters_view_bytes"].get<double>() == doctest::Approx(walk - dirty + 29100000.0));
    CHECK(b["dram_over_counters_view"].get<double>() ==
          doctest::Approx((201430272.0 + 87101696.0) / (walk - dirty + 29100000.0)));
    // bad probe file: said, and the rows get no view
    write(probe, "{not json");
    const Out badprobe = sh("bench --resimulate " + results + " --json " + results);
    CHECK(badprobe.rc == 0);
    CHECK(badprobe.text.find("cannot parse") != std::string::npos);
    CHECK_FALSE(read(results)["rows"][0].contains("sim_l2_counters_view_bytes"));
    // bad results files: refused, one line, the file unchanged
    const std::pair<std::string, std::string> bad[] = {
        {"{not json", "cannot parse"},
        {R"({"device": "x"})", "has no \"rows\" list"},
        {R"({"rows": [{"ms_median": 1}]})", "row 1 has no string \"variant\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "forward", "seq": "big", "head_dim": 64}]})",
         "row 1 has no integer \"seq\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "forward", "seq": 64, "head_dim": 64}]})",
         "has no true/false \"causal\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "sideways", "seq": 64, "head_dim": 64,
             "causal": false}]})",
         "has pass \"sideways\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash9", "pass": "forward", "seq": 64, "head_dim": 64,
             "causal": false}]})",
         "has variant \"flash9\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "forward", "seq": 0, "head_dim": 64,
             "causal": false}]})",
         "has \"seq\" = 0"},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "forward", "seq": 64, "head_dim": 64,
             "causal": false, "dtype": "fp4"}]})",
         "has dtype \"fp4\""},
        {R"({"rows": [{"ms_median": 1, "variant": "flash2", "pass": "forward", "seq": 64, "head_dim": 64,
             "causal": false, "dtype": "fp8"}]})",
         "the model covers fp8 for flash2h's forward only"},
        {R"({"rows": []})", "has no measured rows"},
        {R"({"rows": [5, "x"]})", "has no measured rows"},
    };
    for (const auto& text_says : bad) {
        const auto& text = std::get<0>(text_says);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& says = std::get<1>(text_says);
        CAPTURE(text);
        write(results, text);
        const Out o = sh("bench --resimulate " + results + " --json " + results);
        CHECK(o.rc == 1);
        CHECK(o.text.find(says) != std::string::npos);
        CHECK(o.text.find("nothing was changed") != std::string::npos);
        std::ifstream in(results);
        CHECK(std::string(std::istreambuf_iterator<char>(in), {}) == text);
    }
    fs::remove_all(dir);
}

// A ring results file (bench --ring) carries the simulator's ring as it stood when recorded;
// --resimulate recomputes it with this checkout's model, which `flashsim ring` prints independently.
TEST_CASE("bench --resimulate: a ring file's simulator column is today's `flashsim ring`; a row it cannot read stays") {
    namespace fs = std::filesystem;
    const fs::path dir = fs::path(tmp("resim_ring"));
    fs::create_directories(dir);
    const std::string results = (dir / "ring.json").string();
    {
        std::ofstream f(results);
        f << R"({"device": "NVIDIA H200", "rows": [
            {"variant": "flash2h", "pass": "ring", "transport": "emulated", "gpus": 2, "layout": "balanced",
             "batch": 1, "heads": 16, "seq": 16384, "head_dim": 128, "dtype": "bf16", "causal": true,
             "forward_ms": 0.9, "backward_ms": 3.8, "sim_ring": {"forward_ms": 123.0, "backward_ms": 456.0}},
            {"variant": "flash2h", "pass": "ring", "layout": "balanced", "batch": 1, "heads": 16, "seq": 16384,
             "head_dim": 128, "dtype": "bf16", "causal": true, "forward_ms": 0.9, "backward_ms": null,
             "sim_ring": {"forward_ms": 7.0}}]})";
    }
    const Out o = sh("bench --resimulate " + results + " --json " + results);
    CHECK(o.rc == 0);
    CHECK(o.text.find("ring row 2 has no positive integer \"gpus\"; left as recorded") != std::string::npos);
    CHECK(o.text.find("counters") == std::string::npos);  // no kernel rows: no probe looked for
    const auto rows = nlohmann::json::parse(std::ifstream(results))["rows"];
    const Out ring =
        sh("ring --gpus 2 --seq 16384 --head-dim 128 --heads 16 --causal --kernel flash2h --pass both --json");
    REQUIRE(ring.rc == 0);
    const auto r = nlohmann::json::parse(ring.text.substr(ring.text.find('{')));
    CHECK(rows[0]["sim_ring"]["forward_ms"].get<double>() == doctest::Approx(r["passes"][0]["time_ms"].get<double>()));
    CHECK(rows[0]["sim_ring"]["backward_ms"].get<double>() == doctest::Approx(r["passes"][1]["time_ms"].get<double>()));
    CHECK(rows[0]["sim_ring"]["efficiency"].get<double>() == doctest::Approx(r["efficiency"].get<double>()));
    CHECK(rows[1]["sim_ring"]["forward_ms"].get<double>() == 7.0);  // the unreadable row: as recorded
    fs::remove_all(dir);
}

// Inputs that are finite but whose results are not: nothing shown, nothing written, exit 1. And
// outputs that would lose a file or land nowhere are refused before any work.
TEST_CASE("no NaN or inf shown as a result; outputs checked before the run") {
    // a score float32 cannot hold; the same in fp64 runs
    const Out big = sh("softmax --scores 1e39,1");
    CHECK(big.rc == 1);
    CHECK(big.text.find("beyond float32's range") != std::string::npos);
    CHECK(big.text.find("nan") == std::string::npos);
    CHECK(sh("softmax --scores 1e39,1 --precision fp64").rc == 0);
    // a scale float32 cannot hold, and one it holds whose scores overflow it
    const Out huge = sh("simulate -n 64 -d 64 --scale 1e39 --check");
    CHECK(huge.rc == 1);
    CHECK(huge.text.find("softmax scale 1e+39 is beyond float32's range") != std::string::npos);
    for (const std::string cmd :
         {"simulate -n 64 -d 64 --scale 3e38 --check", "ring --gpus 2 -n 64 -d 64 --causal --scale 3e38 --check"}) {
        CAPTURE(cmd);
        const Out o = sh(cmd);
        CHECK(o.rc == 1);
        CHECK(o.text.find("NaN or infinite values") != std::string::npos);
        CHECK(o.text.find("max abs inf") == std::string::npos);
    }
    // attend: Q = K = 1e20 everywhere (finite, fp32) makes q . k = 6.4e41: refused, O not written
    sim::TensorF q(1, 1, 8, 64);
    std::fill(q.data.begin(), q.data.end(), 1e20f);
    sim::write_npy(tmp("q_big.npy"), q, "<f4", false);
    std::filesystem::remove(tmp("o_big.npy"));
    const Out a = sh("attend --q " + tmp("q_big.npy") + " --k " + tmp("q_big.npy") + " --v " + tmp("q_big.npy") +
                     " --out " + tmp("o_big.npy"));
    CHECK(a.rc == 1);
    CHECK(a.text.find("NaN or infinite") != std::string::npos);
    CHECK_FALSE(std::filesystem::exists(tmp("o_big.npy")));
    // outputs: over an input, into a missing folder, two on one path, gradients without a backward
    std::fill(q.data.begin(), q.data.end(), 0.5f);
    sim::write_npy(tmp("q_half.npy"), q, "<f4", false);
    const std::string in = " --q " + tmp("q_half.npy") + " --k " + tmp("q_half.npy") + " --v " + tmp("q_half.npy");
    std::filesystem::remove(tmp("o_half.npy"));
    const std::string bwd = " --out " + tmp("o_half.npy") + " --pass backward --do " + tmp("q_half.npy");
    const std::pair<std::string, std::string> bad[] = {
        {"attend" + in + " --out " + tmp("q_half.npy"), "is also an input"},
        {"attend" + in + " --out /nonexistent-folder/o.npy", "does not exist"},
        {"attend" + in + bwd + " --dq /nonexistent-folder/dq.npy", "does not exist"},
        {"attend" + in + bwd + " --dk " + tmp("o_half.npy"), "are the same file"},
        {"attend" + in + " --out " + tmp("o_half.npy") + " --dq " + tmp("dq.npy"), "only with --pass backward"},
    };
    for (const auto& cmd_says : bad) {
        const auto& cmd = std::get<0>(cmd_says);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& says = std::get<1>(cmd_says);
        CAPTURE(cmd);
        const Out o = sh(cmd);
        CHECK(o.rc == 1);
        CHECK(o.text.find(says) != std::string::npos);
        CHECK_FALSE(std::filesystem::exists(tmp("o_half.npy")));  // refused before anything was written
    }
    CHECK(sim::read_npy(tmp("q_half.npy")).tensor.data == q.data);  // the input is intact
}

// Flags whose values a command used to replace, ignore or misread: each refused with what to do.
TEST_CASE("bad values are refused by name: ring rates, decode sizes, Hopper kernels elsewhere") {
    const std::pair<std::string, std::string> cases[] = {
        {"ring --gpus 2 -n 8192 -d 128 --causal --tflops nan --compute flops", "--tflops must be a number"},
        {"ring --gpus 2 -n 8192 -d 128 --causal --tflops 5", "--tflops sets the rate of --compute flops"},
        {"ring --gpus 2 -n 8192 -d 128 --causal --link-gbps inf", "--link-gbps must be a number"},
        {"ring --gpus 2 -n 8192 -d 128 --causal --latency-us -1", "--latency-us must be a number"},
        {"decode -L 32768 --head-dim 5000", "head dimension d = 5000 is above the supported 1024"},
        {"decode -L 32768 --q-heads 100000000 --kv-heads 8", "above the supported 65,536"},
        {"simulate --kernel flash2h --gpu RTX4090 -n 4096 -d 128", "need compute capability 9.0"},
        {"ring --gpus 2 -n 8192 -d 128 --causal --kernel flash2h --gpu A100-80GB", "A100-80GB is 8.0"},
    };
    for (const auto& cmd_says : cases) {
        const auto& cmd = std::get<0>(cmd_says);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& says = std::get<1>(cmd_says);
        CAPTURE(cmd);
        const Out o = sh(cmd);
        CHECK(o.rc == 1);
        CHECK(o.text.find(says) != std::string::npos);
    }
    // the Hopper kernel on a Hopper preset, and flash2 anywhere, still predict
    CHECK(sh("simulate --kernel flash2h --gpu H100-SXM -n 4096 -d 128").rc == 0);
    CHECK(sh("simulate --kernel flash2 --gpu RTX4090 -n 4096 -d 128").rc == 0);
    // a decode cache one GPU cannot hold is said, with the bytes it would take
    const Out big = sh("decode -L 99999999");
    CHECK(big.rc == 0);
    CHECK(big.text.find("381.47 GiB of 139.00 GiB on H200: does NOT fit") !=
          std::string::npos);  // 2 x 8 x L x 128 x 2 B
    CHECK(sh("decode -L 32768").text.find("128.00 MiB of 139.00 GiB on H200: fits") != std::string::npos);
    // softmax --values that hold no rows; scenario --list with a name, and as JSON
    for (const std::string& v : {std::string("/tmp"), tmp("empty.txt")}) {
        std::ofstream(tmp("empty.txt")).close();
        const Out o = sh("softmax --values " + v);
        CHECK(o.rc == 1);
        CHECK(o.text.find("holds no rows") != std::string::npos);
    }
    const Out named = sh("scenario --list gpt2-medium");
    CHECK(named.rc == 1);
    CHECK(named.text.find("leave out the name") != std::string::npos);
    const Out listed = sh("scenario --list --json");
    REQUIRE(listed.rc == 0);
    const auto names = nlohmann::json::parse(listed.text);
    CHECK(names.size() >= 2);
    CHECK(names.back()["name"] == "figure2");
    // a sweep with no valid row leaves an existing CSV as it was
    { std::ofstream(tmp("keep.csv")) << "keep\n"; }
    const Out sw = sh("sweep --param sram --values 100 -n 1024 -d 64 --csv " + tmp("keep.csv"));
    CHECK(sw.rc == 1);
    CHECK(sw.text.find("was not written") != std::string::npos);
    std::ifstream kept(tmp("keep.csv"));
    CHECK(std::string(std::istreambuf_iterator<char>(kept), {}) == "keep\n");
}

TEST_CASE("an unknown command names itself and the known ones") {
    for (const char* args : {"fits", "fits --help", "simulat --seq 8 --head-dim 8"}) {
        const Out o = sh(args);
        CAPTURE(args);
        CHECK(o.rc == 2);
        const std::string word = std::string(args).substr(0, std::string(args).find(' '));
        CHECK(o.text.find("unknown command '" + word + "'") != std::string::npos);
        CHECK(o.text.find("simulate") != std::string::npos);
        CHECK(o.text.find("lesson") != std::string::npos);
        CHECK(o.text.find("Usage") == std::string::npos);  // one line, not the main help
    }
    const Out none = sh("");
    CHECK(none.rc == 2);
    CHECK(none.text.find("a command is required") != std::string::npos);
    // an option before any command is named, with where options go
    const Out opt = sh("--bogus");
    CHECK(opt.rc == 2);
    CHECK(opt.text.find("'--bogus' is not an option of flashsim itself") != std::string::npos);
    CHECK(sh("--help").rc == 0);
    // --timeline only shapes the JSON
    const Out tl = sh("simulate -n 64 -d 64 --timeline");
    CHECK(tl.rc == 1);
    CHECK(tl.text.find("add --json") != std::string::npos);
}

TEST_CASE("printers: byte units and digit grouping") {
    CHECK(report::human_bytes(134217728) == "128.00 MiB");
    CHECK(report::human_bytes(32768) == "32.00 KiB");
    CHECK(report::human_bytes(512) == "512 B");
    CHECK(report::group_digits(67108864) == "67,108,864");
    CHECK(report::group_digits(-1000) == "-1,000");
    CHECK(report::human_flops(8.59e9) == "8.59 GFLOP");
}

TEST_CASE("simulate --json: pass, L2, predicted time, kernels (issue 3 fields)") {
    const Out o = sh("simulate --algo flash2 --seq 4096 --head-dim 128 --heads 4 --causal --pass both --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    for (const char* key : {"pass", "causal", "l2", "hbm_without_l2", "hbm_with_l2", "predicted_ms", "predicted_tflops",
                            "timing", "kernels", "forward", "backward", "bwd_block_rows"})
        CHECK(j.contains(key));
    CHECK(j["pass"] == "both");
    CHECK(j["causal"] == true);
    CHECK(j["l2"]["simulated"] == true);
    CHECK(j["l2"]["hit_rate"].get<double>() > 0.5);
    CHECK(j["hbm_with_l2"]["read_bytes"].get<int64_t>() < j["hbm_without_l2"]["read_bytes"].get<int64_t>());
    CHECK(j["hbm_without_l2"] == j["hbm"]);  // "hbm" keeps its meaning: every tile load and store
    CHECK(j["predicted_ms"].get<double>() > 0);
    CHECK(j["kernels"].size() == 4);  // forward + three backward kernels
    CHECK(j["forward"]["hbm"]["read_bytes"].get<int64_t>() + j["backward"]["hbm"]["read_bytes"].get<int64_t>() ==
          j["hbm"]["read_bytes"].get<int64_t>());
    CHECK_FALSE(j["timing"].contains("timeline"));
    const Out t = sh("simulate --seq 1024 --head-dim 64 --json --timeline --l2 off");
    REQUIRE(t.rc == 0);
    const auto jt = nlohmann::json::parse(t.text);
    CHECK(jt["l2"]["simulated"] == false);
    CHECK(jt["hbm_with_l2"].is_null());
    CHECK(jt["timing"]["timeline"].size() > 0);
    CHECK(jt["timing"]["timeline"][0]["kind"] == "copy");
}

TEST_CASE("simulate --pass both --check compares gradients with the float64 reference") {
    // The claim: the simulated backward differs from the float64 reference by its storage type's
    // rounding alone. Bound (as tests/cuda/test_kernels.cpp derives it): 4 roundings to the storage
    // type on the longest path to a gradient (P, dP, dS, the stored gradient), each at most the unit
    // roundoff u relatively, plus the fp32 sums over N keys, at most N x 2^-24. A wrong gradient (a
    // missing term, a wrong scale) is off by a relative error of order 1.
    auto bound = [](double u, int64_t n) { return 4 * u + static_cast<double>(n) * 0x1p-24; };
    // fp32 storage (u = 2^-24), N = 200: 2.4e-7 + 1.2e-5.
    const Out o = sh("simulate --algo flash2 --seq 200 --head-dim 32 --pass both --check --dtype fp32");
    REQUIRE(o.rc == 0);
    for (const char* g : {"O ", "dQ", "dK", "dV"}) {
        CAPTURE(g);
        const std::string label = std::string(g) + " vs float64 reference:";
        const size_t at = o.text.find(label);
        REQUIRE(at != std::string::npos);
        const size_t rel = o.text.find("relative ", at);
        REQUIRE(rel != std::string::npos);
        const double r = std::stod(o.text.substr(rel + 9));
        CHECK(r >= 0);
        CHECK(r <= bound(0x1p-24, 200));
    }
    // fp16 storage (u = 2^-11), N = 100: 1.95e-3 + 6e-6.
    const Out j = sh("simulate --algo standard --seq 100 --head-dim 16 --pass backward --check --json");
    REQUIRE(j.rc == 0);
    const auto x = nlohmann::json::parse(j.text);
    for (const char* g : {"dQ", "dK", "dV"}) {
        CAPTURE(g);
        const auto& e = x["gradients_vs_reference"][g];
        CHECK(e["nonfinite"] == 0);
        CHECK(e["count"] == 100 * 16);
        CHECK(e["rel_frobenius"].get<double>() <= bound(0x1p-11, 100));
    }
}

TEST_CASE("issue 3 flags: bad values get one clear line and a non-zero exit") {
    expect_refusals(
        sh, {
                {"simulate --seq 128 --head-dim 64 --pass sideways", "--pass must be forward, backward or both"},
                {"simulate --seq 128 --head-dim 64 --l2 maybe", "--l2 must be auto, on or off"},
                {"simulate --seq 128 --head-dim 64 --ceilings guessed",
                 "--ceilings must be datasheet, measured or estimated"},
                {"simulate --seq 128 --head-dim 64 --pad-left 500", "--pad-left must be between 0 and N = 128"},
                {"simulate --seq 4096 --head-dim 128 --pass both --bwd-block-rows 256 --bwd-block-cols 256",
                 "backward tiles do not fit in SRAM"},
                {"sweep --param colour --values 1,2", "unknown --param 'colour'"},
                {"sweep --param seq --values 1,x", "'x' is not a positive integer"},
                {"sweep --param seq", "--values"},
                {"sweep --param seq --values 256 -d 64 --csv /proc/version", "--csv file '/proc/version'"},
                {"simulate --seq 256 --head-dim 64 --kernel ''", "--kernel needs a kernel's name"},
                {"simulate --seq 256 --head-dim 64 --kernel flash2 --algo standard", "leave out --algo"},
                {"compare --seq 256 --head-dim 64 --numerics bogus", "--numerics must be on, off or auto"},
                {"compare --seq 256 --head-dim 64 --numerics on", "compare counts bytes and time only"},
                {"simulate --seq 1048576 --head-dim 128 --batch 16 --heads 1024", "is above what flashsim counts"},
                {"sweep --param block-rows --values 4096 --block-cols 4096",
                 "no value of --block-rows gave a valid problem"},
                {"scenario gpt5", "unknown scenario 'gpt5'"},
                {"scenario gpt5", "gpt2-medium, gpt2-small"},
                {"scenario gpt5", ", figure2 (flashsim scenario --list)"},
                {"scenario", "give a scenario name, or --list"},
                {"simulate --seq 256 --head-dim 64 --kernel flash2 --gpu A100-80GB --ceilings estimated",
                 "no card of the A100-80GB's architecture has measured ceilings recorded"},
                {"bench --resimulate rows.json --predict-ceilings bogus",
                 "--predict-ceilings must be auto, measured, estimated or datasheet"},
            });
}

TEST_CASE("--ceilings estimated: the H100's from the H200's measured file, scaled by the two datasheets") {
    // The H100 SXM's datasheet HBM bandwidth is 3.35 TB/s, the H200's 4.8: memory rates x 0.698. Their
    // dense tensor rates are both 989 TFLOP/s: SM rates x 1.000. The L2 figures are the presets'
    // estimates, 10 and 12 TB/s: x 0.833.
    const auto o = sh("simulate --kernel flash2 --gpu H100-SXM --seq 2048 --head-dim 64 --ceilings estimated");
    REQUIRE(o.rc == 0);
    CHECK(o.text.find("estimated for the H100-SXM from the H200's measured ceilings") != std::string::npos);
    CHECK(o.text.find("memory x 0.698, L2 x 0.833, SM units x 1.000") != std::string::npos);
    CHECK(o.text.find("estimated)") != std::string::npos);  // the ideal machine's rates say so too
}

// flash2's d = 64 forward under Nsight Compute on an H100 80GB (2026-12-07; results/archive/2026-12-07/
// h100_profile_flash2_fwd_{8192,16384}_d64_*, docs/kernel-notes/kernel-model.md): the launch's time and
// the shares of its cycles the tensor pipe and the shared-memory wavefronts were busy. What they leave
// is all the time there is for an exposed softmax, copies and waves. The model with the H100's measured
// ceilings must fit in it both ways: its exposed softmax (the steady time beyond products and operand
// staging) no more than the cycles left, and that plus its first copies and waves no less.
TEST_CASE("kernel model: flash2's d = 64 forward leaves its softmax the cycles the H100's counters leave") {
    struct Launch {
        int seq;
        double ms, tensor, smem;
    };
    for (const Launch l : {Launch{8192, 3.515, 0.478, 0.428}, Launch{16384, 7.000, 0.481, 0.430}}) {
        CAPTURE(l.seq);
        const Out o =
            sh("simulate --kernel flash2 --gpu H100-SXM --ceilings measured --head-dim 64 --heads 32 --batch " +
               std::to_string(16384 / l.seq) + " --seq " + std::to_string(l.seq) + " --json");
        const auto j = parse_ok(o);
        const auto& k = j["kernel_model"][0];
        REQUIRE(k["kernel"] == "flash2");
        double tensor = 0, operands = 0;
        for (const auto& c : k["where_the_time_goes"]) {
            if (c["name"] == "tensor") tensor = c["seconds"].get<double>();
            if (c["name"] == "smem_operands") operands = c["seconds"].get<double>();
        }
        const double left_ms = l.ms * (1 - l.tensor - l.smem);
        const double exposed_ms = (k["steady_s"].get<double>() - tensor - operands) * 1e3;
        CHECK(exposed_ms <= left_ms * 1.02);
        CHECK(exposed_ms + k["prologue_and_waves_s"].get<double>() * 1e3 >= left_ms);
    }
}

// A whole-number option reads decimal digits only: no automatic base (010 was 8, 0x20 was 32), no value
// clamped to the largest 64-bit one, no sign on an unsigned option; usage errors (exit 2), by name.
TEST_CASE("whole-number options: decimal digits, 64 bits, refused by name otherwise") {
    const Out ten = sh("simulate --seq 010 --head-dim 64 --json");
    REQUIRE(ten.rc == 0);
    CHECK(nlohmann::json::parse(ten.text)["seq"] == 10);
    expect_refusals(
        sh, {
                {"simulate --seq 0x20 --head-dim 64", "--seq: '0x20' is not a whole number in decimal digits", 2},
                {"simulate --seq 99999999999999999999 --head-dim 64",
                 "--seq: '99999999999999999999' is beyond the range of a 64-bit whole number", 2},
                {"simulate --seq 64 --head-dim 64 --batch 1e3",
                 "--batch: '1e3' is not a whole number in decimal digits", 2},
                {"simulate --seq 64 --head-dim 64 --seed -1",
                 "--seed: '-1' is not a whole number in decimal digits (0 or more)", 2},
                {"decode -L 0x8000", "'0x8000' is not a whole number in decimal digits", 2},
            });
}

// Every comma-separated flag reads its list the same way: items trimmed, and an empty item refused
// wherever it stands (a trailing comma was dropped silently where a doubled one was refused).
TEST_CASE("list flags: an empty item is refused wherever it stands, spaces around items are not") {
    expect_refusals(
        sh,
        {
            {"sweep --param seq --values 1024,2048, --head-dim 64", "--values has an empty item in '1024,2048,'", 1},
            {"sweep --param seq --values ,1024 --head-dim 64", "--values has an empty item in ',1024'", 1},
            {"sweep --param seq --values 1024,,2048 --head-dim 64", "--values has an empty item in '1024,,2048'", 1},
            {"fit --algo flash2,", "--algo has an empty item in 'flash2,'", 1},
            {"fit --pass forward,,both", "--pass has an empty item in 'forward,,both'", 1},
            {"softmax --scores 1,2, --values '1;2'", "--scores has an empty item in '1,2,'", 1},
        });
    CHECK(sh("fit --algo flash2,").text.find("(a leading, doubled or trailing comma)") != std::string::npos);
    // Spaces around an item are not an empty item: the same rows as without them.
    const Out spaced = sh("sweep --param seq --values '1024, 2048' --head-dim 64 --l2 off --json");
    REQUIRE(spaced.rc == 0);
    const auto a = nlohmann::json::parse(spaced.text);
    REQUIRE(a.size() == 2);
    CHECK(a[1]["result"]["seq"] == 2048);
    const Out fit = sh("fit --algo 'standard, flash2' --pass forward --json");
    REQUIRE(fit.rc == 0);
    CHECK(fit.text.find("flash2") != std::string::npos);
}

TEST_CASE("sweep: a table, JSON, CSV; rows that do not fit say why and the rest still run") {
    const Out o = sh("sweep --param block-rows --values 32,64,4096 --block-cols 64 --seq 2048 --head-dim 64");
    REQUIRE(o.rc == 0);
    CHECK(o.text.find("sweep of block-rows") != std::string::npos);
    CHECK(o.text.find("tiles do not fit in SRAM") != std::string::npos);  // the 4096 row
    const std::string csv = tmp("sweep.csv");
    const Out j = sh("sweep --param seq --values 1024,2048 --head-dim 64 --l2 off --json --csv " + csv);
    REQUIRE(j.rc == 0);
    const auto a = nlohmann::json::parse(j.text);
    REQUIRE(a.size() == 2);
    CHECK(a[0]["value"] == "1024");
    CHECK(a[1]["result"]["seq"] == 2048);
    // flash2: Q read once: N d 2 bytes
    CHECK(a[1]["result"]["tensors"]["Q"]["read_bytes"] == 2048 * 64 * 2);
    FILE* f = std::fopen(csv.c_str(), "r");
    REQUIRE(f != nullptr);
    char line[512];
    int lines = 0;
    std::string header;
    while (std::fgets(line, sizeof line, f)) {
        if (lines == 0) header = line;
        ++lines;
    }
    std::fclose(f);
    CHECK(lines == 3);
    CHECK(header.rfind("seq,block_rows,block_cols,hbm_bytes", 0) == 0);
}

TEST_CASE("scenario figure2: the paper's Figure 2 beside the model's, as text and JSON") {
    const Out l = sh("scenario --list");
    REQUIRE(l.rc == 0);
    CHECK(l.text.find("figure2") != std::string::npos);
    const Out t = sh("scenario figure2");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("HBM R/W (GB)") != std::string::npos);
    CHECK(t.text.find("Middle panel") != std::string::npos);
    const Out o = sh("scenario figure2 --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    CHECK(j["problem"]["seq"] == 1024);
    CHECK(j["problem"]["batch"] == 64);
    CHECK(j["machine"] == "A100-40GB");
    CHECK(j["paper"]["standard"]["hbm_gb"].get<double>() == 40.3);  // stored as the paper's
    // eager as the authors' baseline runs in PyTorch: 20 N x N passes of 2 bytes (the softmax
    // backward's two kernels among them) and 2 of the 1-byte dropout mask a head, 16 N x d tensors
    // (autograd's scaling of dQ and dK included), the fp16 causal mask once:
    // (20 * 2 + 2) * 2^20 + 16 * 2^17 bytes a head, 1024 heads, + 2^21
    const double eager = (42.0 * 1048576 + 16.0 * 131072) * 1024 + 2097152;
    CHECK(j["standard"]["hbm_gb"].get<double>() == doctest::Approx(eager / 1e9));
    // its time: each kernel at the fraction of the HBM rate the recorded run measured (a file of
    // results), or, with --eager-rates none, every kernel at the A100's 1,555 GB/s
    CHECK(j["eager_rates_source"].get<std::string>().find("h100/eager_authors.json") != std::string::npos);
    const Out none = sh("scenario figure2 --eager-rates none --json");
    REQUIRE(none.rc == 0);
    const auto jn = nlohmann::json::parse(none.text);
    CHECK(jn["eager_rates_source"] == "");
    CHECK(jn["standard"]["ms"].get<double>() == doctest::Approx(eager / 1.555e12 * 1e3));
    CHECK(j["standard"]["ms"].get<double>() > jn["standard"]["ms"].get<double>());  // below the rate: slower
    CHECK(j["middle"].size() == 4);
    CHECK(j["flash"]["kernels"].size() == 2);
}

TEST_CASE("scenario figure2 --gpu: the same programs on another preset; the bytes stay, the times follow the card") {
    const Out a = sh("scenario figure2 --json");
    const Out h = sh("scenario figure2 --gpu H200 --json");
    REQUIRE(a.rc == 0);
    REQUIRE(h.rc == 0);
    const auto ja = nlohmann::json::parse(a.text), jh = nlohmann::json::parse(h.text);
    CHECK(jh["machine"] == "H200");
    CHECK(jh["standard"]["hbm_gb"].get<double>() == ja["standard"]["hbm_gb"].get<double>());
    // every eager kernel is HBM-bound on both cards: the time scales with the datasheet rates
    CHECK(jh["standard"]["ms"].get<double>() ==
          doctest::Approx(ja["standard"]["ms"].get<double>() * 1555.0 / 4800.0).epsilon(1e-6));
    const Out t = sh("scenario figure2 --gpu H200");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("the paper measured an A100") != std::string::npos);
    const Out m = sh("scenario figure2 --gpu H200 --ceilings measured --json");
    REQUIRE(m.rc == 0);
    CHECK(nlohmann::json::parse(m.text)["rates_source"].get<std::string>().find("h200/ceilings.json") !=
          std::string::npos);
    // bad inputs: each named, exit 1
    for (const auto& cmd_says : std::vector<std::pair<std::string, std::string>>{
             {"scenario figure2 --ceilings measured", "no measured ceilings are recorded for A100-40GB"},
             {"scenario figure2 --ceilings guessed", "--ceilings must be datasheet or measured"},
             {"scenario figure2 --gpu Z80", "Z80"},
             {"scenario gpt2-medium --gpu H200", "--gpu applies to figure2 only"}}) {
        const auto& cmd = std::get<0>(cmd_says);  // named: CAPTURE/INFO cannot capture a structured binding (clang)
        const auto& says = std::get<1>(cmd_says);
        const Out e = sh(cmd);
        CHECK_MESSAGE(e.rc == 1, cmd);
        CHECK_MESSAGE(e.text.find(says) != std::string::npos, (cmd + ": " + e.text));
    }
}

TEST_CASE("scenario: listed as data; gpt2-medium prints standard vs flash GFLOP, HBM GB and time") {
    const Out l = sh("scenario --list");
    REQUIRE(l.rc == 0);
    CHECK(l.text.find("gpt2-medium") != std::string::npos);
    const Out o = sh("scenario gpt2-medium --l2 off --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    REQUIRE(j["results"].size() == 3);
    const auto& st = j["results"][0];
    const auto& f2 = j["results"][2];
    CHECK(st["algo"] == "standard");
    CHECK(st["seq"] == 1024);
    CHECK(st["heads"] == 16);
    CHECK(st["batch"] == 64);
    CHECK(st["head_dim"] == 64);
    CHECK(st["gpu"] == "A100-40GB");
    CHECK(st["pass"] == "both");
    // standard's forward + backward GEMMs: 6 of 2 N^2 d each, over B*H = 1024 heads
    CHECK(st["flops"]["matmul"].get<int64_t>() == 12LL * 1024 * 1024 * 64 * 1024);
    CHECK(f2["hbm"]["read_bytes"].get<int64_t>() < st["hbm"]["read_bytes"].get<int64_t>());
    CHECK(f2["predicted_ms"].get<double>() < st["predicted_ms"].get<double>());
}

TEST_CASE("simulate --kernel: the kernel's tiles, where the time goes, and the measured ceilings it read") {
    const Out o =
        sh("simulate --kernel flash2h --seq 8192 --head-dim 128 --batch 2 --heads 16 --dtype bf16 "
           "--ceilings measured --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    REQUIRE(j["kernel_model"].size() == 1);
    const auto& k = j["kernel_model"][0];
    CHECK(k["kernel"] == "flash2h");
    CHECK(k["profile"]["tensor_path"] == "wgmma");
    CHECK(j["block_rows"] == k["profile"]["block_rows"]);  // the simulation used the kernel's tiles
    CHECK(j["block_cols"] == k["profile"]["block_cols"]);
    CHECK(k["rates_source"].get<std::string>().find("h200/ceilings.json") != std::string::npos);
    std::set<std::string> names;
    for (const auto& c : k["where_the_time_goes"]) names.insert(c["name"].get<std::string>());
    for (const char* n : {"hbm", "l2", "tensor", "exp", "issue", "launches"}) CHECK(names.count(n) == 1);
    // By hand: S = Q K^T and O = P V, 2 N^2 d FLOPs each for each of the B H heads (not causal).
    const double flops = 4.0 * 2 * 16 * 8192.0 * 8192 * 128;
    // The measured wgmma rate, read here from the ceilings file itself (not through the program).
    std::ifstream cf(std::string(FLASHSIM_SOURCE_DIR) + "/results/h200/ceilings.json");
    REQUIRE(cf);
    const auto ceilings = nlohmann::json::parse(cf);
    double wgmma = 0;
    for (const auto& c : ceilings["ceilings"])
        if (c["name"] == "wgmma_bf16") wgmma = c["value"].get<double>();
    REQUIRE(wgmma > 0);
    // The tensor line is those FLOPs at that rate (both sides divide the same two numbers: to rounding).
    double tensor_s = 0;
    for (const auto& c : k["where_the_time_goes"])
        if (c["name"] == "tensor") tensor_s = c["seconds"].get<double>();
    CHECK(tensor_s == doctest::Approx(flops / wgmma).epsilon(1e-9));
    // No kernel beats the tensor cores' own ceiling: the predicted time is at least the tensor line,
    // so the reported rate is at most the measured wgmma rate; and it is the hand-counted FLOPs over
    // the predicted time (to the 4 significant digits a reader of the rate would use).
    const double predicted_s = k["predicted_ms"].get<double>() * 1e-3;
    CHECK(predicted_s >= tensor_s);
    CHECK(k["tflops"].get<double>() * 1e12 <= wgmma);
    CHECK(k["tflops"].get<double>() == doctest::Approx(flops / predicted_s / 1e12).epsilon(1e-4));
    const Out t = sh("simulate --kernel flash2 --seq 4096 --head-dim 64 --pass both --ceilings measured");
    REQUIRE(t.rc == 0);
    CHECK(t.text.find("where the time goes") != std::string::npos);
    CHECK(t.text.find("predicted, this kernel:") != std::string::npos);  // forward + backward, one line (the ladder)
}

TEST_CASE("--ceilings measured: an H100's file, which names the card as the driver does, serves the H100-SXM preset") {
    // The driver calls the SXM card "NVIDIA H100 80GB HBM3", a name that does not contain the preset's
    // "H100-SXM"; the file must still be read (and its wgmma rate used), not refused as another card's.
    std::ifstream cf(std::string(FLASHSIM_SOURCE_DIR) + "/results/h100/ceilings.json");
    REQUIRE(cf);
    const auto ceilings = nlohmann::json::parse(cf);
    REQUIRE(ceilings["device"].get<std::string>().find("H100-SXM") == std::string::npos);
    double wgmma = 0;
    for (const auto& c : ceilings["ceilings"])
        if (c["name"] == "wgmma_bf16") wgmma = c["value"].get<double>();
    REQUIRE(wgmma > 0);
    const Out o = sh(
        "simulate --kernel flash2h --seq 4096 --head-dim 128 --dtype bf16 --gpu H100-SXM --ceilings measured --json");
    REQUIRE(o.rc == 0);
    const auto j = nlohmann::json::parse(o.text);
    const auto& k = j["kernel_model"][0];
    CHECK(k["rates_source"].get<std::string>().find("h100/ceilings.json") != std::string::npos);
    double tensor_s = 0;
    for (const auto& c : k["where_the_time_goes"])
        if (c["name"] == "tensor") tensor_s = c["seconds"].get<double>();
    CHECK(tensor_s == doctest::Approx(4.0 * 4096.0 * 4096 * 128 / wgmma).epsilon(1e-9));  // B = H = 1
}

TEST_CASE("--ceilings measured: cuBLAS's measured write rate for its d and dtype slows standard's S and nothing else") {
    // The same ceilings with and without gemm_write_bf16_d128 = 1 TB/s (a quarter of the copy): the bf16
    // forward at d = 128 takes S's 4 GiB (B H N^2 2 bytes) at it; fp16 and d = 64 do not read it.
    const std::string base_c =
        R"({"name": "hbm_copy", "unit": "B/s", "value": 4e12}, {"name": "l2_read", "unit": "B/s", "value": 8e12},)"
        R"({"name": "smem_read", "unit": "B/s", "value": 3e13}, {"name": "mma_sync_bf16", "unit": "FLOP/s", "value": 6e14},)"
        R"({"name": "mma_sync_fp16", "unit": "FLOP/s", "value": 6e14}, {"name": "wgmma_bf16", "unit": "FLOP/s", "value": 9e14},)"
        R"({"name": "wgmma_fp16", "unit": "FLOP/s", "value": 9e14}, {"name": "ex2", "unit": "op/s", "value": 4e12},)"
        R"({"name": "launch", "unit": "s", "value": 4e-6})";
    const std::string plain = tmp("plain_ceilings.json"), slow = tmp("slow_gemm_ceilings.json");
    for (const auto& [path, extra] :
         {std::pair{plain, std::string()},
          std::pair{slow, std::string(R"(, {"name": "gemm_write_bf16_d128", "unit": "B/s", "value": 1e12})")}}) {
        FILE* f = std::fopen(path.c_str(), "w");
        std::fputs((R"({"device": "NVIDIA H200", "ceilings": [)" + base_c + extra + "]}").c_str(), f);
        std::fclose(f);
    }
    auto ms = [&](const std::string& file, const std::string& dtype, int d) {
        const Out o = sh("simulate --kernel standard --seq 8192 --head-dim " + std::to_string(d) +
                         " --batch 2 --heads " + std::to_string(2048 / d) + " --dtype " + dtype +
                         " --ceilings measured --ceilings-file " + file + " --json");
        REQUIRE(o.rc == 0);
        return nlohmann::json::parse(o.text)["kernel_model"][0]["predicted_ms"].get<double>();
    };
    const double s_bytes = 2.0 * 16 * 8192 * 8192 * 2;
    // S at 1 TB/s instead of the copy rate 4 TB/s for S and Q, K both ways (Q, K: 2 x 32 MiB)
    const double extra_s = s_bytes / 1e12 - (s_bytes + 2.0 * 2 * 16 * 8192 * 128 * 2) / 4e12;
    CHECK(ms(slow, "bf16", 128) - ms(plain, "bf16", 128) == doctest::Approx(extra_s * 1e3).epsilon(1e-6));
    CHECK(ms(slow, "fp16", 128) == ms(plain, "fp16", 128));
    CHECK(ms(slow, "bf16", 64) == ms(plain, "bf16", 64));
}

TEST_CASE("--ceilings measured: a missing or malformed ceilings file is refused in one line") {
    const std::string bad = tmp("bad_ceilings.json"), partial = tmp("partial_ceilings.json"),
                      other = tmp("other_ceilings.json");
    {
        FILE* f = std::fopen(bad.c_str(), "w");
        std::fputs("{ not json", f);
        std::fclose(f);
        f = std::fopen(partial.c_str(), "w");
        std::fputs(R"({"device": "NVIDIA H200", "ceilings": [{"name": "hbm_copy", "unit": "B/s", "value": 4e12}]})", f);
        std::fclose(f);
        f = std::fopen(other.c_str(), "w");
        std::fputs(R"({"device": "NVIDIA A100-SXM4-40GB", "ceilings": []})", f);
        std::fclose(f);
        f = std::fopen(tmp("huge_ceilings.json").c_str(), "w");
        std::fputs(R"({"device": "NVIDIA H200", "ceilings": [{"name": "hbm_copy", "unit": "B/s", "value": 1e308}]})",
                   f);
        std::fclose(f);
    }
    const std::string base = "simulate --kernel flash2 --seq 1024 --head-dim 64 --ceilings measured ";
    expect_refusals(sh,
                    {
                        {(base + "--ceilings-file /nonexistent/c.json").c_str(), "cannot read the ceilings file"},
                        {(base + "--ceilings-file " + bad).c_str(), "is not valid JSON"},
                        {(base + "--ceilings-file " + partial).c_str(), "ceiling 'l2_read' is missing"},
                        {(base + "--ceilings-file " + other).c_str(), "not on the H200 preset's GPU"},
                        {(base + "--ceilings-file " + tmp("huge_ceilings.json")).c_str(),
                         "ceiling 'hbm_copy' is 1e+308, beyond any measurement"},
                        {"simulate --seq 1024 --head-dim 64 --ceilings-file x.json", "goes with --ceilings measured"},
                        {"simulate --kernel flash9 --seq 1024 --head-dim 64", "unknown kernel 'flash9'"},
                        // sizes past what the counts, the CPU or its memory can take: refused, not wrapped,
                        // hung or aborted (a value beyond 64 bits is refused by the option parser)
                        {"simulate --seq 1024 --head-dim 64 --batch 9223372036854775807", "16,777,216 heads"},
                        {"simulate --seq 1024 --head-dim 64 --batch 99999999999999999999", "beyond the range"},
                        {"simulate --seq 4096 --head-dim 64 --sram 1", "the SRAM budget M is 1 B"},
                        {"simulate --seq 100000 --head-dim 16 --check", "runs up to N = 16384 forward"},
                        {"simulate --seq 16384 --head-dim 16 --check --pass both", "8192 backward"},
                        {"simulate --seq 8192 --head-dim 64 --batch 64 --check", "the limit is 2^35"},
                        {"simulate --seq 100000 --head-dim 64 --numerics on", "the limit is 2^36"},
                        {"decode --kv-len 32768 --tile-keys 9223372036854775807", "between 1 and 1,048,576"},
                        {"decode --kv-len 32768 --tile-keys 99999999999999999999", "beyond the range"},
                        {"decode --kv-len 32768 --blocks-per-sm 1000", "between 1 and 64"},
                        {"decode --kv-len 16777216 --head-dim 64 --check", "limit is B*H_kv*L*d <= 2^28"},
                        {"simulate --kernel flash2 --seq 1024 --head-dim 80", "64 or 128"},
                        {"simulate --kernel flash2 --seq 1024 --head-dim 64 --block-rows 32", "own tiles"},
                        {"simulate --kernel flash1 --seq 1024 --head-dim 64 --pass backward", "no backward"},
                    });
}

TEST_CASE("simulate --grid static walks flash2's forward as a persistent grid; --kernel flash2h takes its own rule") {
    // causal, N = 2048, d = 64 on the H200: the static order pairs a head's 11 query blocks (B_r = 192)
    const auto j =
        parse_ok(sh("simulate --seq 2048 --head-dim 64 --causal --batch 1 --heads 4 --block-rows 192 "
                    "--block-cols 128 --sram 1048576 --numerics off --grid static --json"));
    CHECK(j["kernels"][0]["grid"].get<std::string>().find("units in turn") != std::string::npos);
    CHECK(j["kernels"][0]["grid"].get<std::string>().find("two heads' middle blocks") != std::string::npos);
    // --middles alone: each head's middle block its own unit (flash2h before 2026-12-05)
    const auto alone =
        parse_ok(sh("simulate --seq 2048 --head-dim 64 --causal --batch 1 --heads 4 --block-rows 192 "
                    "--block-cols 128 --sram 1048576 --numerics off --grid static --middles alone --json"));
    CHECK(alone["kernels"][0]["grid"].get<std::string>().find("its middle block alone") != std::string::npos);
    const auto k =
        parse_ok(sh("simulate --kernel flash2h --seq 2048 --head-dim 64 --causal --batch 1 --heads 4 "
                    "--numerics off --json"));
    CHECK(k["kernel_model"][0]["grid"] == "static");
    CHECK(k["kernels"][0]["grid"].get<std::string>().find("units in turn") != std::string::npos);
    // beyond the kernel's rule (T_r > 22 at d = 64), one block a tile
    const auto far =
        parse_ok(sh("simulate --kernel flash2h --seq 8192 --head-dim 64 --causal --batch 1 --heads 1 "
                    "--numerics off --l2 off --json"));
    CHECK(far["kernel_model"][0]["grid"] == "launch");
}

TEST_CASE("simulate --tail split: flash2h's last round spread along the keys, timed as the kernel runs it") {
    // B = 2, H = 16, N = 8192, d = 128 on the H100: 2,048 units over 132 SMs are 15 full rounds and one of
    // 68 units. Split, the last round costs about half a unit's time plus a merge, so the model must
    // come out faster than whole, by less than one round of sixteen, and name the split in its notes.
    const std::string shape =
        "simulate --kernel flash2h --batch 2 --heads 16 --seq 8192 --head-dim 128 --gpu H100-SXM --numerics off "
        "--json --tail ";
    const auto whole = parse_ok(sh(shape + "whole"));
    const auto split = parse_ok(sh(shape + "split"));
    const double t_whole = whole["kernel_model"][0]["predicted_ms"].get<double>();
    const double t_split = split["kernel_model"][0]["predicted_ms"].get<double>();
    CHECK(t_split < t_whole);
    CHECK(t_whole - t_split < t_whole / 16);
    bool named = false;
    for (const auto& n : split["kernel_model"][0]["notes"])
        named = named || n.get<std::string>().find("the last round's 68 units split along the keys over 132 blocks") !=
                             std::string::npos;
    CHECK(named);
    // 16 heads of N = 1024 at B = 1: 128 units, fewer than the SMs, every unit in pieces; 8 heads of
    // N = 128: 8 units of one key block, too few to split (the kernel runs them whole, and so does the model)
    const auto tiny = parse_ok(
        sh("simulate --kernel flash2h --batch 1 --heads 8 --seq 128 --head-dim 128 --numerics off --json --tail "
           "split"));
    const auto tiny_whole =
        parse_ok(sh("simulate --kernel flash2h --batch 1 --heads 8 --seq 128 --head-dim 128 --numerics off --json"));
    CHECK(tiny["kernel_model"][0]["predicted_ms"].get<double>() ==
          tiny_whole["kernel_model"][0]["predicted_ms"].get<double>());
    expect_refusals(
        sh, {
                {"simulate --kernel flash2h --seq 1024 --head-dim 64 --tail split",
                 "--tail split is flash2h's forward at d = 128"},
                {"simulate --kernel flash2h --seq 1024 --head-dim 128 --causal --tail split", "leave out --causal"},
                {"simulate --kernel flash2 --seq 1024 --head-dim 128 --tail split", "add --kernel flash2h"},
                {"simulate --kernel flash2h --seq 1024 --head-dim 128 --tail halves", "--tail must be whole or split"},
            });
}

TEST_CASE("bench --predict-ceilings: datasheet predictions are lower bounds, estimated ones name their source") {
    // The H100's off-grid rows (recorded on the card), predicted three ways. With the datasheet alone the
    // model has no per-instruction rates and no launch cost: every row must say it is uncertain, and why.
    // Estimated, every kernel row must be predicted from the H200's file; measured, from the H100's own.
    const std::string src = std::string(FLASHSIM_SOURCE_DIR) + "/results/h100/offgrid.json";
    for (const std::string kind : {"datasheet", "estimated", "measured"}) {
        CAPTURE(kind);
        const std::string out = tmp("offgrid_" + kind + ".json");
        const Out o = sh("bench --resimulate " + src + " --predict-ceilings " + kind + " --json " + out);
        REQUIRE(o.rc == 0);
        std::ifstream f(out);
        const auto doc = nlohmann::json::parse(f);
        int rows = 0;
        for (const auto& r : doc["rows"]) {
            if (!r.contains("predicted_ms")) continue;
            ++rows;
            CHECK(r["predicted_ceilings"] == kind);
            if (kind == "datasheet") {
                CHECK(r["predicted_uncertain"] == true);
                CHECK(r["predicted_uncertain_why"].get<std::string>().find("datasheet ceilings") != std::string::npos);
            }
        }
        CHECK(rows == 60);  // ten shapes, three kernels, both passes
    }
}
