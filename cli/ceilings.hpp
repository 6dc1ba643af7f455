// cli/ceilings.hpp — where `--ceilings measured` finds the measured ceilings: --ceilings-file, or
// the recorded file for the preset (the H200's: results/h200/ceilings.json, looked up in the
// working directory, then in the source tree this binary was built from). Defined in cmd_simulate.cpp.
#pragma once
#include <optional>
#include <string>

#include "sim/kernel_model.hpp"

// The recorded ceilings file for a preset ("" when none is recorded).
std::string default_ceilings_file(const sim::Machine& m);
// The measured rates for the preset: from `file` when given, else from its recorded file; nullopt
// when neither exists for this preset (no file given, none recorded). Throws sim::Error when a file
// is named (or recorded) but missing or malformed.
std::optional<sim::KernelRates> measured_rates(const sim::Machine& m, sim::DType dtype, const std::string& file);
