// viz/model.hpp — what the app shows, as plain data computed off the UI thread (no GL, no ImGui).
//
//   Params ──validate──► (error text | ok) ──Simulations::request──► background thread
//        ──► RunSet { standard, flash1, flash2 results + a Timeline each } ──► panels (const&)
//
// A Timeline turns a Trace into steps on one modelled clock so the three algorithms can be played
// side by side: each step lasts max(its HBM bytes / HBM bandwidth, its FLOPs / arithmetic rates)
// (a per-step roofline; the app's own simple clock, stated in the UI).
#pragma once
#include <array>
#include <atomic>
#include <cstdint>
#include <future>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "sim/machine.hpp"
#include "viz/background.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"

namespace viz {

inline constexpr std::array<sim::Algo, 3> kAlgos = {sim::Algo::standard, sim::Algo::flash1, sim::Algo::flash2};
inline int algo_index(sim::Algo a) { return static_cast<int>(a); }

// The parameters the learner edits. Zero block sizes / SRAM mean "the algorithm's rule" / "the GPU's".
struct Params {
    int64_t seq = 512;
    int64_t head_dim = 64;
    int64_t block_rows = 0;
    int64_t block_cols = 0;
    int64_t sram_bytes = 0;
    sim::DType dtype = sim::DType::fp16;
    std::string gpu = "H200";
    sim::Algo algo = sim::Algo::flash2;  // the algorithm the memory view shows
    bool causal = false;
    int64_t window = 0;                   // a lesson's sliding window (keys n-W+1..n; implies causal); 0: none
    sim::Pass pass = sim::Pass::forward;  // which pass the views walk (both: forward, then backward)
    friend bool operator==(const Params&, const Params&) = default;
};

sim::Problem problem_of(const Params& p);
// The most (query tile, key tile) pairs one algorithm may walk in the app (a few seconds of simulation).
inline constexpr double kMaxTilePairs = 5e7;
// Empty when the parameters are usable for all three algorithms; otherwise the simulator's own
// sim::Error message (prefixed with the algorithm it concerns), or the app's limit on tile pairs,
// in the screen's words (in_screen_words).
std::string validate(const Params& p);

// A simulator message in the words of the app's screen: the command line's flags become the labels
// of the fields the learner edits ("--block-rows" -> "B_r", "--sram" -> "SRAM KiB"), and options the
// app does not have ("--l2 on") are left out. Used for every refusal and note the app shows.
std::string in_screen_words(std::string msg);

// Steps of one trace on the modelled clock.
struct Timeline {
    std::vector<size_t> step_first;  // first event of each kept step, plus a sentinel (events.size())
    std::vector<double> step_start;  // modelled seconds at the start of each step, plus the end time
    int64_t steps_kept = 0;          // steps whose events are all in the trace
    int64_t steps_total = 0;         // steps one head walks (trace.steps_per_head)
    bool truncated = false;
    // The clock over the kept steps only: for a capped trace a prefix of the run.
    double total_time() const { return step_start.empty() ? 0.0 : step_start.back(); }
    // The whole run of one head on the same clock: total_time() when nothing was cut; for a capped
    // trace the kept steps plus the rest of head 0's complete totals (Result::totals / heads) on
    // the same roofline, taken as one stretch (so an estimate, at most the per-step sum).
    double whole_time = 0;
    bool whole_is_estimate() const { return truncated && steps_kept < steps_total; }
    double duration(int64_t step) const;
    // The step running at modelled time t (clamped to the kept steps); frac = how far into it. A time
    // on a boundary belongs to the step it completes (frac 1), except t = 0 (step 0, frac 0).
    int64_t step_at(double t, double* frac = nullptr) const;
};
Timeline make_timeline(const sim::Result& r);

struct RunSet {
    Params params;
    sim::Problem problem;
    sim::Machine machine;
    std::array<sim::Result, 3> results;  // indexed by algo_index
    std::array<Timeline, 3> timelines;
    // The same problem at the bench's shape (B*N = 16,384 tokens, H*d = 2,048, as results
    // measured it): timing only, so the timeline view can set the model's whole-GPU time beside the
    // kernels' measured time for the same shape.
    sim::Problem bench_problem;
    std::array<sim::Timing, 3> bench_timing;
    double seconds = 0;  // wall time the simulations took
    const sim::Result& result(sim::Algo a) const { return results[algo_index(a)]; }
    const Timeline& timeline(sim::Algo a) const { return timelines[algo_index(a)]; }
};

// The bench's shape for a problem (results: B = 16,384 / N, H = 2,048 / d, each at least 1;
// B smaller where B x H would pass the simulator's 2^24 heads, at N x d below 2).
sim::Problem bench_shape(const sim::Problem& p);

// Events kept per trace in the app (Config::event_cap); totals always cover everything.
inline constexpr int64_t kAppEventCap = int64_t{1} << 18;

// Run the three algorithms synchronously (what the background thread does).
std::shared_ptr<RunSet> run_all(const Params& p, std::atomic<int>* done);

// Runs the three simulations for a Params on a background thread; keeps the last good RunSet.
class Simulations {
public:
    Simulations() = default;
    Simulations(const Simulations&) = delete;
    Simulations& operator=(const Simulations&) = delete;

    // Validates `p` at once (cheap). On error returns the message and changes nothing; otherwise
    // starts (or queues) the background run and returns "".
    std::string request(const Params& p);
    // Call once a frame: takes a finished run. Returns true when the current RunSet changed.
    bool poll() { return job_.poll(); }
    void wait() { job_.wait(); }  // block until idle (screenshot mode and tests)
    bool busy() const { return job_.busy(); }
    float progress() const { return static_cast<float>(done_.load()) / 3.0f; }
    const std::shared_ptr<const RunSet>& current() const { return job_.current(); }
    const std::string& last_error() const { return job_.last_error(); }  // from a run that threw (rare)
    // Called on the worker thread when a run ends (the app passes glfwPostEmptyEvent, so a window
    // waiting for events wakes to show the result). nullptr: none.
    void set_wake(void (*wake)()) { job_.set_wake(wake); }

private:
    std::atomic<int> done_{0};  // algorithms finished by the running job (before job_: it outlives it)
    BackgroundJob<Params, RunSet> job_{[this](const Params& p) {
        done_ = 0;
        return run_all(p, &done_);
    }};
};

}  // namespace viz
