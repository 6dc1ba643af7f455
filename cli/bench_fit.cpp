// cli/bench_fit.cpp — flashsim bench --fit: the longest N a training step allocates.
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
#include "sim/knobs.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

// flashsim bench --fit: the longest N each kernel's training step can allocate on this GPU.
int run_fit_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    sim::Problem shape;
    shape.batch = a.batch > 0 ? a.batch : 1;
    shape.heads = a.heads > 0 ? a.heads : 16;
    shape.head_dim = a.dims_given ? a.head_dims.front() : 128;
    shape.dtype = *dt;
    std::vector<std::string> variants = a.variants;
    if (variants.empty())
        for (const char* v : {"standard", "flash2", "flash2h"}) {
            std::string no;
            if (fcuda::variant_available(v, &no))
                variants.push_back(v);
            else
                std::cerr << "bench: skipping " << v << ": " << no << "\n";
        }
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-9s %12s %14s %12s %14s %s\n", "variant", "longest_n", "peak_bytes", "next_n", "sim_longest_n",
                "probes");
    for (const auto& v : variants) {
        json row{{"variant", v},
                 {"pass", "fit"},
                 {"batch", shape.batch},
                 {"heads", shape.heads},
                 {"head_dim", shape.head_dim},
                 {"dtype", a.dtype}};
        row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
        try {
            const fcuda::FitProbe r = fcuda::probe_fit(v, shape);
            const sim::Algo algo = v == "standard" ? sim::Algo::standard : sim::Algo::flash2;
            const sim::FitResult s = sim::longest_fit(shape, algo, sim::Pass::both, r.free_bytes);
            row["longest_n"] = r.longest_n;
            row["next_n"] = r.next_n;
            row["peak_bytes_at_longest"] = r.peak_bytes_at_longest;
            row["free_bytes"] = r.free_bytes;
            row["total_bytes"] = r.total_bytes;
            row["probes"] = r.probes;
            row["simulator_longest_n"] = s.longest_n;
            row["simulator_capacity"] = "cudaMemGetInfo's free bytes before the search";
            row["method"] = "allocation only (cudaMalloc of one step's buffers, freed after each probe)";
            row["note"] = r.note;
            row["ok"] = r.longest_n > 0;
            std::printf("%-9s %12lld %14lld %12lld %14lld %d\n", v.c_str(), (long long)r.longest_n,
                        (long long)r.peak_bytes_at_longest, (long long)r.next_n, (long long)s.longest_n, r.probes);
            std::fflush(stdout);
        } catch (const std::exception& e) {
            row["error"] = e.what();
            row["ok"] = false;
            all_ok = false;
            std::printf("%-9s error: %s\n", v.c_str(), e.what());
            if (const std::string lost = fcuda::clear_error_state(); !lost.empty()) {
                std::printf("bench: %s\n", lost.c_str());
                return 1;
            }
        }
        rows.push_back(row);
        if (!write_doc(a.json, rows, started)) return 1;
    }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

}  // namespace bench
