// report/figure2.hpp — the paper's Figure 2 beside the model's (sim/figure2.hpp): text and JSON.
#pragma once
#include <nlohmann/json.hpp>
#include <string>
#include <vector>

#include "sim/figure2.hpp"

namespace report {

// Left panel (GFLOPs, HBM GB, runtime: ours, the paper's, ours / paper), each column's kernels,
// the middle panel (FA1 forward against B_c), the variants and the notes.
std::string figure2_text(const sim::Figure2& f);
nlohmann::json figure2_json(const sim::Figure2& f);

// The eager kernels' rates as a GPU measured them: files written by scripts/eager_pytorch.py (with
// ncu's DRAM bytes merged), one a program (authors, hf). Each measured kernel is paired with the
// model's kernel at its place in the sequence (Memset calls and kernels of under 1 MB left out); a
// pair whose kind (GEMM or not) or bytes (beyond 0.8-1.25x) disagree is an error that names it. The
// fraction of each kernel is its DRAM bytes over its time, over `basis`: "datasheet" (the measuring
// card's preset HBM rate) or "copy" (the copy rate measured in the same run). The first file that
// names a kernel gives its fraction.
sim::EagerRates read_eager_rates(const std::vector<std::string>& files, const std::string& basis);

// The recorded eager files in the first of `dirs` (results folders) that holds any: the H200's if
// recorded, else the H100's (authors, then hf); empty when none is there.
std::vector<std::string> default_eager_files(const std::vector<std::string>& dirs);

}  // namespace report
