// sim/ladder.hpp — the ladder of timing models: three rungs, named once, read by every screen.
//
//   sim::Result (+ the kernel model's predictions) ──► sim::ladder_of(...) ──► sim::Ladder
//   sim::Problem + sim::Machine + sim::Config (+ a kernel's name) ──► sim::ladder(...) (simulates first)
//
//   rung 1, "bytes bound":   the HBM bytes the algorithm's loops move (no cache) over the memory
//                             bandwidth; arithmetic is free.
//   rung 2, "ideal machine": the algorithm's own steps on a machine that runs every byte and FLOP at
//                             its peak rate: each step's copies at the memory bandwidth (L2 hits at
//                             L2's), its products at the tensor-core peak and then its softmax at
//                             the fp32 peak, the next step's copies overlapped with that arithmetic,
//                             blocks over the SMs in waves (the step model: Result::timing).
//   rung 3, "this kernel":   the kernel model (sim/kernel_model.hpp): the CUDA kernel's tiles,
//                             tensor-core instruction, exponential unit, issue rate, schedule and
//                             launches, at measured or datasheet ceilings; its components are "where
//                             the time goes".
//
// Each rung models more of what a kernel does than the rung below it, so the lower rungs explain the
// gap between the bytes and the kernel's time. They are not bounds of one another: rungs 1 and 2
// count every byte the algorithm's tiles move (the paper's count), while the kernel model charges the
// bytes that reach HBM through the L2 model, so a kernel whose re-reads hit L2 (standard's GEMMs
// re-reading K and V) can come in under them. Where a kernel is named the headline is rung 3, else
// the highest rung computed. docs/timing.md says the same in prose.
#pragma once
#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/kernel_model.hpp"
#include "sim/simulate.hpp"

namespace sim {

enum class Rung { bytes_bound, ideal_machine, this_kernel };

// "bytes bound", "ideal machine", "this kernel": the names every screen prints.
std::string_view rung_name(Rung r);
// "bytes_bound", "ideal_machine", "this_kernel": the JSON keys (with "_ms" after them).
std::string_view rung_key(Rung r);
// One sentence: what the rung charges.
std::string_view rung_charges(Rung r);

struct RungTime {
    Rung rung = Rung::bytes_bound;
    bool present = false;  // rung 2 needs the timing model, rung 3 a kernel
    double ms = 0;
    std::string rates;  // the rates it used, in words (e.g. "4.80 TB/s datasheet")
};

struct Ladder {
    std::array<RungTime, 3> rungs{};
    // Rung 3's passes (forward, backward): their components are where the time goes.
    std::vector<KernelPrediction> kernel;
    std::string kernel_name;  // empty: no kernel named
    const RungTime& at(Rung r) const { return rungs[static_cast<size_t>(r)]; }
    // The headline: rung 3 where a kernel is named, else the highest rung present.
    const RungTime& headline() const;
};

// The ladder of a simulated result; `kernel` holds the kernel model's prediction of each pass run
// (empty: no kernel named). Rung 1 uses the bandwidth the timing model used (datasheet or measured).
Ladder ladder_of(const Result& r, const std::vector<KernelPrediction>& kernel = {});

// A kernel's passes (forward, backward or both) and the simulator's configuration that runs its
// tiles, grid order and blocks an SM (the algorithm is the kernel's; tiles the SRAM rule would
// refuse are allowed: they compiled). Throws sim::Error for an unknown kernel or head dimension.
std::vector<KernelProfile> kernel_profiles(const std::string& kernel, Pass pass, const Problem& p);
Config kernel_config(Config c, const Problem& p, const Machine& m, const std::vector<KernelProfile>& profiles);

// Simulates the problem (numerics off) and, with a kernel's name, predicts that kernel's passes at
// `rates` (datasheet_rates(m) when null). With a kernel, the algorithm is the kernel's.
Ladder ladder(const Problem& p, const Machine& m, Config c, const std::string& kernel = "",
              const KernelRates* rates = nullptr);

}  // namespace sim
