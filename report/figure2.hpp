// report/figure2.hpp — the paper's Figure 2 beside the model's (sim/figure2.hpp): text and JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/figure2.hpp"

namespace report {

// Left panel (GFLOPs, HBM GB, runtime: ours, the paper's, ours / paper), each column's kernels,
// the middle panel (FA1 forward against B_c), the variants and the notes.
std::string figure2_text(const sim::Figure2& f);
nlohmann::json figure2_json(const sim::Figure2& f);

}  // namespace report
