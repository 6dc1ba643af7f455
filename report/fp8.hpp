// report/fp8.hpp — the FP8 numerics study (sim/fp8_attention.hpp) as text and JSON; pure functions.
#pragma once
#include <nlohmann/json.hpp>
#include <string>

#include "sim/fp8_attention.hpp"

namespace report {

// {"seq", "head_dim", "block_rows", "block_cols", "scales", "incoherent", "outliers", "outlier_scale",
//  "outlier_channels", "seed", "amax": {q, k, v}, "fp8": {max_abs, rms, rel_rms}, "bf16": {...},
//  "rms_ratio" (fp8 over bf16), "unit_roundoff": {fp8, bf16}}
nlohmann::json fp8_study_json(const sim::Fp8Study& s);
std::string fp8_study_text(const sim::Fp8Study& s);

}  // namespace report
