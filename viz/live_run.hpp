// viz/live_run.hpp — a measurement taken from the app when the build has the CUDA backend
// (cuda/api.hpp) and a GPU is visible: every kernel this GPU runs (flash2h on Hopper only) on the current problem, on a background
// thread, with progress. Without CUDA in the build, available() says why and nothing runs.
#pragma once
#include <atomic>
#include <future>
#include <string>
#include <vector>

#include "sim/problem.hpp"
#include "viz/measurement.hpp"

namespace viz {

// Every kernel this GPU runs on problem p (10 timed repeats each, L2 flushed; flashsim bench's
// harness), each row with the simulator's bytes for the kernel's own tiles, without L2 and through
// the L2 model. done/total (may be null) count the kernels as they finish. Never throws: a failed
// kernel's row carries its error, a failure before any kernel the file's. Without CUDA in the
// build the file's error says so. GL-free: the GPU test runs it without a display.
MeasuredFile measure_live(const sim::Problem& p, const std::string& gpu_preset, std::atomic<int>* done = nullptr,
                          std::atomic<int>* total = nullptr);

class LiveRun {
public:
    ~LiveRun();
    // Whether a live run is possible here; otherwise `why` says what is missing.
    static bool available(std::string* why);
    void start(const sim::Problem& p, const std::string& gpu_preset);
    bool running() const { return job_.valid(); }
    float progress() const { return total_ > 0 ? static_cast<float>(done_) / static_cast<float>(total_) : 0.0f; }
    void poll();
    const MeasuredFile& result() const { return result_; }  // rows so far (error set on failure)
    bool has_result() const { return have_; }

private:
    std::future<MeasuredFile> job_;
    std::atomic<int> done_{0};
    std::atomic<int> total_{3};
    MeasuredFile result_;
    bool have_ = false;
};

}  // namespace viz
