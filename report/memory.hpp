// report/memory.hpp — printers for the memory footprint, the longest-N fit and decoding (split-KV):
// pure functions from sim's values to text and JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/decode.hpp"
#include "sim/footprint.hpp"
#include "sim/reference.hpp"

namespace report {

// {"total_bytes", "quadratic_bytes", "fits", "capacity_bytes", "gpu", "tensors": [{name, shape, dtype, bytes}]}
nlohmann::json footprint_json(const sim::Footprint& f, const sim::Machine& m);
// "HBM held at once: 8.14 GiB (S, P: ...) of 139.00 GiB on H200: fits" and one line per tensor.
std::string footprint_text(const sim::Footprint& f, const sim::Machine& m);

struct FitRow {
    sim::Algo algo;
    sim::Pass pass;
    sim::FitResult fit;
};
nlohmann::json fit_json(const sim::Problem& shape, const sim::Machine& m, const std::vector<FitRow>& rows);
std::string fit_text(const sim::Problem& shape, const sim::Machine& m, const std::vector<FitRow>& rows);

// vs: errors of the split-and-merge output against the float64 reference (count 0: not checked).
nlohmann::json decode_json(const sim::DecodeResult& r, const sim::Machine& m, const sim::ErrorStats& vs);
std::string decode_text(const sim::DecodeResult& r, const sim::Machine& m, const sim::ErrorStats& vs);

}  // namespace report
