// viz/series.hpp — the charts' data: HBM bytes of each algorithm as N, the block size and the SRAM
// size vary, each point a full sim::simulate (numerics off) run on a background thread.
#pragma once
#include <atomic>
#include <memory>
#include <string>
#include <vector>

#include "viz/background.hpp"
#include "viz/model.hpp"

namespace viz {

// What a chart counts. The paper counts bytes between HBM and SRAM, every tile load and store; a
// GPU's DRAM sees only what its L2 cache misses (and writes back), which the simulator's L2 model
// gives (Result::l2), and what the hardware counters measured (results).
enum class Count { l2_model, paper };
inline constexpr const char* kCountNames[] = {"DRAM through the L2 model", "HBM<->SRAM as the paper counts"};

// L2 lookups one chart point may spend on the L2 model (Config::l2_budget; the CLI's allowance).
inline constexpr int64_t kChartL2Budget = int64_t{1} << 22;

struct Series {
    sim::Algo algo = sim::Algo::flash2;
    std::vector<double> x, y;          // y: HBM<->SRAM bytes read + written (one head); only points that ran
    std::vector<double> y_l2;          // same x: DRAM bytes through the L2 model (one head); NaN: not modelled
    std::vector<std::string> skipped;  // "x = ...: why" for points the simulator refused
    const std::vector<double>& counted(Count c) const { return c == Count::paper ? y : y_l2; }
};

// Measured DRAM bytes per head (hardware counters, results) at the points whose configuration
// matches the chart's: forward pass, the same d, element size and mask, on the GPU preset's device.
struct MeasuredPoints {
    sim::Algo algo = sim::Algo::flash2;
    std::vector<double> x, y;  // N, DRAM bytes / (batch x heads)
    std::string source;        // "h200/bench.json (NVIDIA H200)"
};

struct ChartData {
    Params params;                 // d, dtype, GPU, causal (and N for the block / SRAM sweeps)
    std::vector<Series> vs_seq;    // x: N (block sizes as in params: 0 = the rule)
    std::vector<Series> vs_block;  // x: B_c (B_r by the rule); flash1, flash2, and standard's GEMM tile
    std::vector<Series> vs_sram;   // x: SRAM bytes M (blocks by the rule, so they grow with M)
    double seconds = 0;
};

struct MeasuredSet;
// Points of `ms` that match `p` (pass, d, bytes per element, mask, the GPU preset's name in the
// device's), one entry per algorithm that has any; several files: the first that matches each.
std::vector<MeasuredPoints> measured_points(const MeasuredSet& ms, const Params& p);

// The sweep points (shared with the tests, which check the series' shape against closed forms).
std::vector<int64_t> seq_points();
std::vector<int64_t> block_points();
std::vector<int64_t> sram_points();

// `cancel` (optional): when it becomes true the remaining points are skipped (and the result is partial).
std::shared_ptr<ChartData> compute_charts(const Params& p, std::atomic<int>* done, std::atomic<int>* total,
                                          const std::atomic<bool>* cancel = nullptr);

class ChartJob {
public:
    ~ChartJob() { cancel_ = true; }                     // then job_ waits for a sweep that skips its remaining points
    void request(const Params& p) { job_.request(p); }  // starts at once, or after the running one
    bool poll() { return job_.poll(); }                 // true when new data arrived
    bool busy() const { return job_.busy(); }
    float progress() const { return total_ > 0 ? static_cast<float>(done_) / static_cast<float>(total_) : 0.0f; }
    const std::shared_ptr<const ChartData>& current() const { return job_.current(); }
    void wait() { job_.wait(); }
    // Called on the worker thread when a sweep ends (as Simulations::set_wake).
    void set_wake(void (*wake)()) { job_.set_wake(wake); }

private:
    // before job_, so that they outlive the sweep job_'s destructor waits for
    std::atomic<int> done_{0}, total_{0};
    std::atomic<bool> cancel_{false};  // set on destruction: the app does not wait for a sweep to exit
    BackgroundJob<Params, ChartData> job_{[this](const Params& p) {
        done_ = 0;
        return compute_charts(p, &done_, &total_, &cancel_);
    }};
};

}  // namespace viz
