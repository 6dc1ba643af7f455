// viz/series.hpp — the charts' data: HBM bytes of each algorithm as N, the block size and the SRAM
// size vary, each point a full sim::simulate (numerics off) run on a background thread.
#pragma once
#include <atomic>
#include <future>
#include <memory>
#include <string>
#include <vector>

#include "viz/model.hpp"

namespace viz {

struct Series {
    sim::Algo algo = sim::Algo::flash2;
    std::vector<double> x, y;          // y: HBM bytes read + written (one head); only points that ran
    std::vector<std::string> skipped;  // "x = ...: why" for points the simulator refused
};

struct ChartData {
    Params params;                 // d, dtype, GPU, causal (and N for the block / SRAM sweeps)
    std::vector<Series> vs_seq;    // x: N (block sizes as in params: 0 = the rule)
    std::vector<Series> vs_block;  // x: B_c (B_r by the rule); flash1, flash2, and standard's GEMM tile
    std::vector<Series> vs_sram;   // x: SRAM bytes M (blocks by the rule, so they grow with M)
    double seconds = 0;
};

// The sweep points (shared with the tests, which check the series' shape against closed forms).
std::vector<int64_t> seq_points();
std::vector<int64_t> block_points();
std::vector<int64_t> sram_points();

// `cancel` (optional): when it becomes true the remaining points are skipped (and the result is partial).
std::shared_ptr<ChartData> compute_charts(const Params& p, std::atomic<int>* done, std::atomic<int>* total,
                                          const std::atomic<bool>* cancel = nullptr);

class ChartJob {
public:
    ~ChartJob();
    void request(const Params& p);  // starts at once, or after the running one
    bool poll();                    // true when new data arrived
    bool busy() const { return job_.valid(); }
    float progress() const { return total_ > 0 ? static_cast<float>(done_) / static_cast<float>(total_) : 0.0f; }
    const std::shared_ptr<const ChartData>& current() const { return current_; }
    void wait();

private:
    std::shared_ptr<const ChartData> current_;
    std::future<std::shared_ptr<ChartData>> job_;
    std::unique_ptr<Params> queued_;
    std::atomic<int> done_{0}, total_{0};
    std::atomic<bool> cancel_{false};  // set on destruction: the app does not wait for a sweep to exit
};

}  // namespace viz
