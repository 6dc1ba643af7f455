// cli/bench_ceilings.cpp — flashsim bench --ceilings: the GPU's own ceilings.
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

// flashsim bench --ceilings: the GPU's own ceilings (cuda/ceilings.cu), printed and written as JSON.
int run_ceilings(const BenchArgs& a) {
    const std::time_t started = std::time(nullptr);
    const std::vector<fcuda::Ceiling> cs = fcuda::measure_ceilings();
    json rows = json::array();
    std::printf("%-14s %14s %-7s %s\n", "ceiling", "value", "unit", "method");
    for (const auto& c : cs) {
        std::printf("%-14s %14.4g %-7s %s\n", c.name.c_str(), c.value, c.unit.c_str(), c.method.c_str());
        rows.push_back(json{{"name", c.name}, {"value", c.value}, {"unit", c.unit}, {"method", c.method}});
    }
    if (!write_doc(a.json, rows, started, "ceilings")) return 1;
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return 0;
}

}  // namespace bench
