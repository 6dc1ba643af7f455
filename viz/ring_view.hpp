// viz/ring_view.hpp — what the ring view (issue 16) knows without GL: its inputs, the ring problem
// made from the app's problem, refusals in the screen's words, which GPU computes each cell of the
// chunk grid and in which step, the step cursor, and sim::simulate_ring run off the UI thread.
//
//   Params (the app's N, d, dtype, mask, GPU) + RingInputs (P, layout, pass, heads)
//        ──validate_ring──► (refusal | ok) ──RingJob::request──► background thread
//        ──► RingRun { sim::RingResult } ──► draw_ring_panel (const&)
#pragma once
#include <cstdint>
#include <memory>
#include <optional>
#include <string>

#include "sim/ring.hpp"
#include "viz/background.hpp"
#include "viz/model.hpp"

namespace viz {

// The app draws up to this many GPUs (the simulator accepts more; the view would be unreadable).
inline constexpr int64_t kRingMaxGpus = 64;
inline constexpr int64_t kRingMaxHeads = 256;

// The ring view's own inputs; the rest of the problem is the app's (Params).
struct RingInputs {
    int64_t gpus = 4;
    sim::RingLayout layout = sim::RingLayout::balanced;
    sim::Pass pass = sim::Pass::forward;
    int64_t heads = 1;  // the app's problem has one head; a lesson's ring has its own
    friend bool operator==(const RingInputs&, const RingInputs&) = default;
};

// The ring over the app's problem: N, d, dtype and the causal mask from `p`, one batch.
sim::RingProblem ring_problem_of(const Params& p, const RingInputs& in);
// "" when the simulator accepts the ring; otherwise why not, in the words of the screen (the
// fields "GPUs P", "N (tokens)", ... rather than the command line's flags).
std::string validate_ring(const Params& p, const RingInputs& in);
// A ring message with the command line's flags as the ring view's and the Problem panel's labels.
std::string ring_screen_words(std::string msg);

// ---------------------------------------------------------------- the schedule, cell by cell
// Chunks of the sequence: 2P (balanced) or P (contiguous).
int64_t ring_parts(const sim::RingProblem& p);
// The GPU whose tokens chunk k is: balanced, chunks i and 2P-1-i are GPU i's; contiguous, chunk i.
int64_t chunk_device(const sim::RingProblem& p, int64_t chunk);
// The step in which GPU `device` holds the K/V slice of GPU `source` (the s with ring_source = source).
int64_t ring_step_of(int64_t gpus, int64_t device, int64_t source);

// A cell of the chunk grid: query chunk a (row) against key chunk b (column).
struct RingCell {
    sim::BlockKind kind = sim::BlockKind::none;  // full, diagonal, or skipped by the mask
    int64_t device = 0;                          // the GPU holding query chunk a: it computes the cell
    int64_t step = 0;                            // the step in which that GPU holds the K/V slice with chunk b
};
RingCell ring_cell(const sim::RingProblem& p, int64_t a, int64_t b);

// ---------------------------------------------------------------- the step cursor
// The view walks every step of every pass simulated (forward, then backward): a position pos in
// [0, steps], floor(pos) the step shown, the fraction how far its transfer has gone.
struct RingCursor {
    int pass_index = 0;  // into RingResult::passes
    int64_t step = 0;    // within that pass
    double frac = 1.0;
};
int64_t ring_step_count(const sim::RingResult& r);  // all passes
// Where the view opens: half-way through step 1, the first steady step (in step 0 every GPU works on
// its own slice), its sends half-way along the ring.
inline constexpr double kRingStartPos = 1.5;
RingCursor ring_cursor(const sim::RingResult& r, double pos);
// Position of step `step` (across passes), shown complete; clamped.
double ring_pos_of_step(const sim::RingResult& r, int64_t step);
// Advance a playing ring by dt seconds at `speed` steps a second; stops (playing = false) at the
// end. Returns true if the position moved.
bool ring_tick(double& pos, bool& playing, int64_t steps, double dt, double speed);

// ---------------------------------------------------------------- the simulation, off the UI thread
struct RingRun {
    Params params;
    RingInputs inputs;
    sim::RingResult result;
};

// Runs sim::simulate_ring for the app's problem and the ring view's inputs in the background (a
// ring takes a fraction of a second to a few seconds: its blocks are timed by sim::simulate).
class RingJob {
public:
    RingJob();
    // The ring for `p` and `in`. Does nothing when it is what was last asked for. Otherwise checks
    // it (validate_ring): a refusal is kept (refusal()) and the last good ring stays current;
    // else it starts, or runs after the one running.
    void request(const Params& p, const RingInputs& in);
    bool poll() { return job_.poll(); }  // call once a frame: true when a new ring arrived
    void wait() { job_.wait(); }         // block until idle (screenshot mode, tests)
    bool busy() const { return job_.busy(); }
    const std::shared_ptr<const RingRun>& current() const { return job_.current(); }
    const std::string& refusal() const { return refusal_; }  // "" when the inputs asked for are accepted
    // a run that threw (e.g. a GPU without a link), in the screen's words
    const std::string& last_error() const { return job_.last_error(); }
    void set_wake(void (*wake)()) { job_.set_wake(wake); }

private:
    struct Key {
        Params params;
        RingInputs inputs;
    };
    std::optional<Key> asked_;
    std::string refusal_;
    BackgroundJob<Key, RingRun> job_;
};

}  // namespace viz
