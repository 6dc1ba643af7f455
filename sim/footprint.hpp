// sim/footprint.hpp — how much HBM one attention layer holds at once, and the longest N that fits.
//
//   sim::footprint(problem, algo, pass) ──► Footprint: the tensors alive at the pass's peak, each
//                                           with its shape and bytes, and their sum
//   sim::longest_fit(shape, algo, pass, capacity) ──► the longest N on the grid that fits
//
// The model: a pass holds, for its whole duration, every tensor it reads or writes in HBM (the
// inputs, the outputs and the intermediates that go through HBM), as the kernels in cuda/ allocate
// them. The backward also holds what the forward left for it; `both` (a training step) holds the
// union of the two. Per algorithm, with T = B·H·N·d elements, R = B·H·N rows, S = B·H·N² and
// e = bytes of the storage type:
//   standard forward   Q K V O (4Te) + S, P (2Se)
//   standard backward  Q K V O dO dQ dK dV (8Te) + P, dP, dS (3Se)
//   standard both      8Te + S, P, dP, dS (4Se)
//   flash1 forward     Q K V (3Te) + O in float32 (4T) + l, m (8R)          (Algorithm 1)
//   flash1 backward    Q K V dO dK dV (6Te) + O and dQ in float32 (8T) + l, m (8R)   (Algorithm 4)
//   flash2 forward     Q K V O (4Te) + LSE (4R)
//   flash2 backward    8Te + LSE, D (8R) + the float32 dQ accumulator (4T)
// (flash1 and flash2: `both` equals the backward, whose set contains the forward's.)
// Weights, activations of other layers and the allocator's slack are not counted: it is one
// attention layer's own bytes, the quantity that decides which N fits.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"

namespace sim {

struct FootprintTensor {
    std::string name;   // "Q", "S", "dQ accumulator", ...
    std::string shape;  // "(B, H, N, d)", "(B, H, N, N)", "(B, H, N)"
    std::string dtype;  // "bf16", "fp32", ...
    double bytes = 0;
};

struct Footprint {
    Algo algo = Algo::flash2;
    Pass pass = Pass::forward;
    std::vector<FootprintTensor> tensors;
    double total_bytes = 0;      // sum of tensors (double: N² terms exceed int64 for very long N)
    double quadratic_bytes = 0;  // the part that grows with N² (S, P, dP, dS)
};

// Throws sim::Error on a bad problem (Problem::validate). kernel (optional, a name of
// sim::kernel_names): the CUDA kernel's own buffers where they differ from the algorithm's; today
// flash2h's backward at d = 64, whose two consumer warpgroups each add into their own fp32 dQ
// accumulator (KernelProfile::dq_tiles = 2), holds a second one. An unknown kernel throws.
Footprint footprint(const Problem& p, Algo algo, Pass pass, const std::string& kernel = "");

// The memory a preset's GPU offers for the fit: hbm_usable_bytes when the preset records it (what
// the device reports), otherwise its datasheet capacity hbm_bytes.
double usable_memory(const Machine& m);

// The N grid "in steps of an eighth of a power of two": 1..8, then 2^k·(8+j)/8 for j = 0..7
// (8, 9, .., 15, 16, 18, .., 30, 32, 36, ..). grid_point(i) is the i-th (0-based, N = i+1 up to 8).
int64_t grid_point(int64_t index);
// The grid index of the largest grid point <= n (n >= 1).
int64_t grid_index_at_most(int64_t n);

struct FitResult {
    int64_t longest_n = 0;  // 0: not even N = 1 fits
    double bytes_at_longest = 0;
    int64_t next_n = 0;  // the next grid point, which does not fit
    double bytes_at_next = 0;
    double capacity = 0;
    bool at_limit = false;  // even N = 2^24, the longest the simulator accepts, fits (next_n = 0)
};

// Binary search over the grid for the longest N whose footprint <= capacity (bytes). `shape` gives
// B, H, d, dtype (its seq is ignored). Throws sim::Error on a bad shape or capacity <= 0.
FitResult longest_fit(const Problem& shape, Algo algo, Pass pass, double capacity);

}  // namespace sim
