// sim/scenario.hpp — named workloads as data: a model's attention shape on a GPU preset, run by
// `flashsim scenario NAME` (standard vs flash1 vs flash2). Shapes are the models' published ones;
// batch sizes are ours, chosen to fill the GPU, and said so.
#pragma once
#include <string>
#include <vector>

#include "sim/problem.hpp"
#include "sim/simulate.hpp"

namespace sim {

struct Scenario {
    std::string name;  // e.g. "gpt2-medium"
    std::string description;
    Problem problem;  // B, H, N, d, dtype, mask
    std::string gpu;  // preset name
    Pass pass = Pass::both;
};

const std::vector<Scenario>& scenarios();
// Case-insensitive; null when no scenario has that name.
const Scenario* scenario_named(const std::string& name);
// "gpt2-medium, gpt2-small, ...": the names, in order.
std::string scenario_names();
// Case-insensitive; throws sim::Error listing the known names.
const Scenario& find_scenario(const std::string& name);

}  // namespace sim
