// cli/bench.hpp — what the modes of `flashsim bench` share. One file a mode:
//   bench_time.cpp      the default: time the kernels, check them, the model beside them
//   bench_decode.cpp    --decode        bench_ring.cpp    --ring P
//   bench_fit.cpp       --fit           bench_study.cpp   --study, --scale
//   bench_ceilings.cpp  --ceilings      bench_probes.cpp  --counters-probe, --launch-probe
//   bench_resimulate.cpp  the simulator's and the model's columns of a row; --resimulate (no GPU)
//   bench_common.cpp    the results file, the device check, the preset for this card
//   cmd_bench.cpp       the options, checked, and the dispatch
#pragma once
#include <nlohmann/json.hpp>

#include <cstdint>
#include <cstdio>
#include <ctime>
#include <map>
#include <optional>
#include <string>
#include <vector>

#include "report/kernel_report.hpp"
#include "sim/machine.hpp"
#include "sim/ring.hpp"
#include "sim/reference.hpp"

namespace bench {

struct BenchArgs {
    std::vector<std::string> variants;
    std::vector<int64_t> seqs{1024, 2048, 4096, 8192, 16384};
    std::vector<int64_t> head_dims{64, 128};
    std::vector<std::string> passes{"forward"};
    int64_t batch = 0, heads = 0;  // 0: B*N = 16384, H*d = 2048
    std::string dtype = "bf16", json;
    // the machine preset predictions are made for; empty: the card the bench runs on (resimulate: the
    // file's recorded device), else H200
    std::string gpu;
    // the ceilings the kernel model's predictions use: auto, measured, estimated or datasheet
    // (report::choose_rates)
    std::string predict_ceilings = "auto";
    bool causal = false, no_check = false, nvtx = false, ceilings = false, counters_probe = false, launch_probe = false;
    int repeats = 20, warmup = 3;
    uint64_t seed = 42;
    // --decode: one new token against a KV cache; --fit: the longest N a step fits
    bool decode = false, fit = false;
    // --study: the numerics study over random shapes; --scale: past 2^31 elements and at 1M tokens
    int study = 0;
    double time_limit = 0;      // --study: stop starting shapes after this many seconds (0: none)
    int slice = 0, slices = 1;  // --study-slice K/M: only the shapes whose index is K modulo M
    bool scale = false;
    std::vector<int64_t> caches;  // empty: the four preset rows
    int64_t q_heads = 32, kv_heads = 8, splits = 0;
    int trace = 0;  // --decode: traced calls a row
    bool dims_given = false;
    // --ring P: ring attention with the kernels
    int64_t ring = 0;
    std::string ring_layout = "balanced", ring_transport = "emulated";
};

// ---- bench_resimulate.cpp (no GPU) ----
// The simulator's columns of a kernel row (sim_* bytes through the bridge's sim::sim_config), and the
// kernel model's prediction (predicted_*, sim::run_profile). residue: the counters' residue, bytes.
void simulate_row(nlohmann::json& row, const sim::Machine& machine, std::optional<double> residue = std::nullopt);
// The ceilings a run of rows is predicted with, chosen once per dtype (report::choose_rates reads and
// parses the ceilings file; a file of rows asks for the same few dtypes again and again).
class RatesCache {
public:
    RatesCache(const sim::Machine& machine, std::string choice) : machine_(machine), choice_(std::move(choice)) {}
    const report::ChosenRates& get(sim::DType dtype);
    const sim::Machine& machine() const { return machine_; }

private:
    const sim::Machine& machine_;
    std::string choice_;
    std::map<sim::DType, report::ChosenRates> chosen_;
};
void predict_row(nlohmann::json& row, RatesCache& rates);
nlohmann::json sim_ring_json(const sim::RingProblem& rp, const sim::Machine& machine, const std::string& kernel,
                             bool grads);
// flashsim bench --resimulate FILE [--gpu NAME] [--json OUT]: recompute the simulator's columns; printed, or
// written to OUT (FILE itself to update it). gpu empty:
// the preset of the file's recorded device, else H200.
int resimulate(const std::string& path, const std::string& gpu, const std::string& out_path,
               const std::string& ceilings = "auto");
// The preset name for --gpu: the one given, else the device's (sim::preset_for_device), else H200;
// `why` says which was taken when it was not given.
std::string preset_for(const std::string& given, const std::string& device, std::string* why = nullptr);

// ---- bench_common.cpp (GPU) ----
nlohmann::json stats_json(const sim::ErrorStats& e);
nlohmann::json opt_bytes(int64_t b);
// A results file: {device, driver, date (of `started`), git_commit, knobs, <key>: rows}, written whole.
bool write_doc(const std::string& path, const nlohmann::json& rows, std::time_t started, const char* key = "rows");
int check_device_and_dtype(const BenchArgs& a);
// The machine preset for this run: --gpu, else the card the bench runs on (said on stderr), else H200.
const sim::Machine& bench_machine(const BenchArgs& a);

// A comparison's relative (Frobenius) error for the text table, or "-" where none was made.
template <typename Stats>
std::string rel_text(const Stats& st) {
    if (!st.count) return "-";
    char b[32];
    std::snprintf(b, sizeof b, "%.2e", st.rel_frobenius);
    return b;
}

// ---- one a mode ----
int run_bench(const BenchArgs& a);           // bench_time.cpp
int run_decode_bench(const BenchArgs& a);    // bench_decode.cpp
int run_ring_bench(const BenchArgs& a);      // bench_ring.cpp
int run_fit_bench(const BenchArgs& a);       // bench_fit.cpp
int run_study(const BenchArgs& a);           // bench_study.cpp
int run_scale(const BenchArgs& a);           // bench_study.cpp
int run_ceilings(const BenchArgs& a);        // bench_ceilings.cpp
int run_counters_probe(const BenchArgs& a);  // bench_probes.cpp
int run_launch_probe(const BenchArgs& a);    // bench_probes.cpp

}  // namespace bench
