// viz/exact_view.hpp — what the exactness view knows without GL: the three algorithms' real outputs
// on the app's problem (one head), each compared with the float64 reference and with each other
// (max abs, relative, ulps, bit-identical share), where in the output flash2 and standard differ,
// and, for a sliding window, how far the approximation is from the exact causal result. Run off the
// UI thread, and only for problems small enough to compute (the simulator's own numerics limit).
//
//   Params ──validate_exact──► (refusal | ok) ──ExactJob::request──► background thread
//          ──► Exactness { outputs, comparisons, ulp histogram } ──► draw_exact_panel (const&)
#pragma once
#include <array>
#include <cstdint>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/reference.hpp"
#include "viz/background.hpp"
#include "viz/model.hpp"

namespace viz {

// One comparison: `actual` against `expected` ("reference" is the float64 attention).
struct ExactPair {
    std::string actual, expected;
    sim::ErrorStats stats;
};

// One tensor the algorithms compute (O, or a gradient dQ, dK, dV), compared as above.
struct ExactTensor {
    std::string name;                    // "O", "dQ", "dK", "dV"
    std::array<sim::TensorF, 3> output;  // standard, flash1, flash2 (kAlgos order)
    std::vector<ExactPair> pairs;        // each vs the reference, then flash2 vs standard, flash1 vs flash2
    // flash2 against standard, element by element: ulp distance in the problem's dtype (row-major N x d)
    std::vector<int64_t> ulps;
    // ulps' histogram: bin 0 = bit-identical, bin k >= 1 = distances in [2^(k-1), 2^k)
    std::vector<int64_t> ulp_bins;
};

struct Exactness {
    Params params;
    sim::Problem problem;  // one head, as the app simulates it
    // O; with a backward pass (Params::pass backward or both) also dQ, dK, dV of L = sum(O o dO),
    // dO from the shared generator, against the float64 backward reference
    std::vector<ExactTensor> tensors;
    // A sliding window shorter than N (0 < Params::window < N): flash2's windowed output against the
    // float64 reference of full causal attention on the same inputs, the error of leaving keys out.
    std::optional<sim::ErrorStats> approximation;
    const ExactTensor& output() const { return tensors.front(); }
};

// The largest problem the view computes by default: N * N * d = 2^33, the app's default problem
// (N = 8,192, d = 128: about 8 s on one core, 0.9 GB; 16 s, 1.5 GB with the backward).
constexpr int64_t kExactDefaultLimit = int64_t{1} << 33;
// The limit in force: FLASHSIM_EXACT_LIMIT (a whole number >= 1) when set, else the default; -1 when
// the variable is set to anything else (validate_exact then says so).
int64_t exact_work_limit();
// "" when the view can compute `p`; otherwise why not and what to change, in the screen's words.
std::string validate_exact(const Params& p);
// Computes everything above for `p` (throws sim::Error on a refused problem).
Exactness compute_exactness(const Params& p);
// The histogram's bin for a distance of `ulp` (0 -> 0; 1 -> 1; 2-3 -> 2; 4-7 -> 3; ...).
int ulp_bin(int64_t ulp);

// Runs compute_exactness for the app's problem in the background.
class ExactJob {
public:
    ExactJob();
    // The comparison for `p`. Does nothing when it is what was last asked for; a refusal is kept
    // (refusal()) and the last good result stays current; else it starts, or runs after the running one.
    void request(const Params& p);
    bool poll() { return job_.poll(); }
    void wait() { job_.wait(); }
    bool busy() const { return job_.busy(); }
    const std::shared_ptr<const Exactness>& current() const { return job_.current(); }
    const std::string& refusal() const { return refusal_; }
    const std::string& last_error() const { return job_.last_error(); }
    void set_wake(void (*wake)()) { job_.set_wake(wake); }

private:
    std::optional<Params> asked_;
    std::string refusal_;
    BackgroundJob<Params, Exactness> job_;
};

}  // namespace viz
