// cli/bench_probes.cpp — flashsim bench --counters-probe and --launch-probe: what the counters and a launch add.
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
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

// flashsim bench --counters-probe: what the in-process DRAM counters see for known work after the
// bench's L2 flush (fcuda::probe_counters), beside the work's own bytes.
int run_counters_probe(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    const double mib = 1024.0 * 1024.0;
    std::printf("%-18s %10s %10s %12s %12s  %s\n", "probe", "reads MiB", "writes MiB", "counted rd", "counted wr",
                "work");
    for (const fcuda::CounterProbe& c : fcuda::probe_counters()) {
        json row{{"name", c.name},
                 {"method", c.method},
                 {"work_read_bytes", c.work_read},
                 {"work_write_bytes", c.work_write}};
        if (c.why.empty()) {
            row["dram_read_bytes"] = c.dram_read;
            row["dram_write_bytes"] = c.dram_write;
            std::printf("%-18s %10.1f %10.1f %12.1f %12.1f  %s\n", c.name.c_str(), c.work_read / mib,
                        c.work_write / mib, c.dram_read / mib, c.dram_write / mib, c.method.c_str());
        } else {
            row["why"] = c.why;
            std::printf("%-18s counters not read: %s\n", c.name.c_str(), c.why.c_str());
        }
        rows.push_back(row);
    }
    if (!write_doc(a.json, rows, started, "counters_probe")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

// flashsim bench --launch-probe: what an event-timed call pays besides its work, and whether the SMs'
// shared-memory carve-out, left by the kernel before, is part of it (fcuda::probe_launch).
int run_launch_probe(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    std::printf("%-20s %9s %9s %9s  %s\n", "work", "us med", "us min", "us max", "before the timed call");
    for (const fcuda::LaunchProbe& p : fcuda::probe_launch(a.repeats)) {
        rows.push_back({{"name", p.name},
                        {"method", p.method},
                        {"before", p.before},
                        {"repeats", p.repeats},
                        {"us_median", p.us_median},
                        {"us_min", p.us_min},
                        {"us_max", p.us_max}});
        std::printf("%-20s %9.2f %9.2f %9.2f  %s\n", p.name.c_str(), p.us_median, p.us_min, p.us_max, p.before.c_str());
    }
    if (!write_doc(a.json, rows, started, "launch_probe")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

}  // namespace bench
