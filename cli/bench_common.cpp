// cli/bench_common.cpp — what every GPU mode of `flashsim bench` shares: the results file, error stats as JSON, the device check.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "cli/bench.hpp"
#include "cli/commands.hpp"
#include "cuda/api.hpp"
#include "sim/footprint.hpp"
#include "sim/kernel_model.hpp"
#include "sim/kernel_config.hpp"
#include "sim/knobs.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

json stats_json(const sim::ErrorStats& e) {
    if (e.count == 0) return nullptr;
    return json{
        {"max_abs", e.max_abs}, {"rel_frobenius", e.rel_frobenius}, {"max_ulp", e.max_ulp}, {"identical", e.identical},
        {"count", e.count},     {"nonfinite", e.nonfinite},         {"worst_at", e.where}};
}

json opt_bytes(int64_t b) { return b < 0 ? json(nullptr) : json(b); }

// A results file: {device, driver, date (of `started`), git_commit, <key>: rows}, written whole
// (the bench rewrites it after every row, so a run cut short keeps what it measured). No path: nothing.
bool write_doc(const std::string& path, const json& rows, std::time_t started, const char* key) {
    if (path.empty()) return true;
    char date[64];
    std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&started));
    const char* commit = sim::knob("FLASHSIM_GIT_COMMIT");
    const json doc{{"device", fcuda::device_name()},
                   {"driver", fcuda::driver_version()},
                   {"date", date},
                   {"git_commit", commit ? commit : "unknown"},
                   {"knobs", sim::knob_settings()},
                   {key, rows}};
    std::ofstream f(path);
    if (!f) {
        print_error("bench", "cannot write " + path);
        return false;
    }
    f << doc.dump(1) << "\n";
    return true;
}

// What every GPU mode needs first: a usable GPU (exit 2, said plainly, when there is none) and a
// storage type the kernels keep (exit 1 otherwise). 0 when both are fine.
int check_device_and_dtype(const BenchArgs& a) {
    std::string why;
    if (!fcuda::device_available(&why)) {
        std::cerr << "flashsim bench: " << why
                  << "; the H200 measurements recorded with this project are in results/h200/bench.json\n";
        return 2;
    }
    const auto dt = sim::parse_dtype(a.dtype);
    if (!dt || *dt == sim::DType::fp32) {
        print_error("bench", "--dtype must be bf16 or fp16, got '" + a.dtype + "'");
        return 1;
    }
    return 0;
}

const sim::Machine& bench_machine(const BenchArgs& a) {
    static std::string said;  // say the choice once a run
    std::string why;
    const std::string preset = preset_for(a.gpu, fcuda::device_name(), &why);
    if (!why.empty() && why != said) {
        std::cerr << "bench: " << why << "\n";
        said = why;
    }
    return sim::find_machine(preset);
}

}  // namespace bench
