// viz/rungs.hpp — the timing ladder's top rung for the app's views: "this kernel", the kernel
// model (sim/kernel_model.hpp predict_kernel) for a named CUDA kernel at a problem, computed once
// per problem and kept (the views draw every frame). The ladder's names, the same on every screen:
// rung 1 "bytes bound" (HBM bytes / bandwidth), rung 2 "ideal machine" (bytes and FLOPs at peak
// rates, overlapped), rung 3 "this kernel".
#pragma once
#include <optional>
#include <string>
#include <vector>

#include "sim/kernel_model.hpp"
#include "sim/machine.hpp"
#include "sim/problem.hpp"

namespace viz {

struct MeasuredRow;  // viz/measurement.hpp

inline constexpr const char* kRungBytes = "bytes bound";
inline constexpr const char* kRungIdeal = "ideal machine";
inline constexpr const char* kRungKernel = "this kernel";

struct KernelRung {
    std::string kernel;  // standard, flash1, flash2, flash2h
    double seconds = 0;  // forward, backward, or their sum (pass both)
    std::string bound;   // the largest component of the (last) pass
    bool uncertain = false;
    std::string rates;  // which ceilings the model used
    std::string error;  // why there is no prediction ("" when there is)
};

// Rung 3 for `kernel` on `p` (its pass: forward, backward or both summed), at `m`'s measured ceilings
// where the results hold a ceilings file for its card, else its datasheet ceilings. Kept per (kernel, problem, machine): a view may call it every frame.
const KernelRung& kernel_rung(const sim::Problem& p, sim::Pass pass, const std::string& kernel, const sim::Machine& m);

// Rung 3 for a recorded row as the Measured view draws it: the prediction the row records for its own
// tiles and schedule (the bench's, kept equal to today's model by tests/cli/predicted_band.sh); for a
// row without one, the kernel's default profile at the row's problem on the preset of the card it ran on
// (sim::preset_for_device). Empty for a step row, a card without a preset, or no prediction.
std::optional<KernelRung> rung_of_row(const MeasuredRow& r);

// measured / predicted, as the views print it beside both ("1.07x"); 0 when either is missing.
double rung_ratio(double measured_s, double predicted_s);

// The unit a timeline lane charges, in words: "copy" -> "HBM/L2 copies into shared memory",
// "arithmetic" for flash2h -> "tensor cores (wgmma), exponentials on the MUFU unit, fp32 lanes".
std::string lane_unit(const std::string& lane, const std::string& kernel);

}  // namespace viz
