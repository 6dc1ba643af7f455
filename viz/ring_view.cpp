#include "viz/ring_view.hpp"

#include <algorithm>
#include <cmath>
#include <string_view>
#include <utility>

namespace viz {

sim::RingProblem ring_problem_of(const Params& p, const RingInputs& in) {
    sim::RingProblem r;
    r.attn = problem_of(p);
    r.attn.heads = in.heads;
    r.gpus = in.gpus;
    r.layout = in.layout;
    r.pass = in.pass;
    return r;
}

std::string ring_screen_words(std::string msg) {
    static const std::pair<const char*, const char*> kWords[] = {
        {"--gpus", "GPUs P"},
        {"--heads", "heads H"},
        {"--link-gbps", "a link bandwidth (the app uses the preset's)"},
        {"pad the sequence to N = ", "set N (tokens) to "},
    };
    for (const auto& [from, to] : kWords) {
        const std::string f = from;
        for (size_t at = msg.find(f); at != std::string::npos; at = msg.find(f, at + std::string_view(to).size()))
            msg.replace(at, f.size(), to);
    }
    return in_screen_words(std::move(msg));
}

std::string validate_ring(const Params& p, const RingInputs& in) {
    if (in.gpus < 1 || in.gpus > kRingMaxGpus)
        return "GPUs P: the app draws rings of 1 to " + std::to_string(kRingMaxGpus) + " GPUs, got " +
               std::to_string(in.gpus) +
               (in.gpus > kRingMaxGpus && in.gpus <= 1024 ? " (the command line, flashsim ring, takes up to 1,024)"
                                                          : "");
    if (in.heads < 1 || in.heads > kRingMaxHeads)
        return "heads H: 1 to " + std::to_string(kRingMaxHeads) + ", got " + std::to_string(in.heads);
    try {
        ring_problem_of(p, in).validate();
        (void)sim::find_machine(p.gpu);
    } catch (const sim::Error& e) { return ring_screen_words(e.what()); }
    return {};
}

// ---------------------------------------------------------------- the schedule, cell by cell
int64_t ring_parts(const sim::RingProblem& p) { return p.gpus * p.chunks_per_gpu(); }

int64_t chunk_device(const sim::RingProblem& p, int64_t chunk) {
    if (p.layout == sim::RingLayout::balanced) return chunk < p.gpus ? chunk : 2 * p.gpus - 1 - chunk;
    return chunk;
}

int64_t ring_step_of(int64_t gpus, int64_t device, int64_t source) {
    // ring_source(P, i, s) = (i - s) mod P = j  <=>  s = (i - j) mod P
    return ((device - source) % gpus + gpus) % gpus;
}

RingCell ring_cell(const sim::RingProblem& p, int64_t a, int64_t b) {
    RingCell c;
    c.kind = sim::block_kind(p.attn.causal, a, b);
    c.device = chunk_device(p, a);
    c.step = ring_step_of(p.gpus, c.device, chunk_device(p, b));
    return c;
}

// ---------------------------------------------------------------- the step cursor
int64_t ring_step_count(const sim::RingResult& r) {
    int64_t n = 0;
    for (const auto& pr : r.passes) n += static_cast<int64_t>(pr.steps.size());
    return n;
}

RingCursor ring_cursor(const sim::RingResult& r, double pos) {
    RingCursor c;
    const int64_t total = ring_step_count(r);
    if (total == 0 || !std::isfinite(pos)) return c;
    pos = std::clamp(pos, 0.0, static_cast<double>(total));
    // a whole position belongs to the step it completes (frac 1), except 0 (step 0, frac 0)
    int64_t k = pos <= 0 ? 0 : static_cast<int64_t>(std::ceil(pos)) - 1;
    k = std::clamp<int64_t>(k, 0, total - 1);
    c.frac = std::clamp(pos - static_cast<double>(k), 0.0, 1.0);
    for (size_t i = 0; i < r.passes.size(); ++i) {
        const auto n = static_cast<int64_t>(r.passes[i].steps.size());
        if (k < n) {
            c.pass_index = static_cast<int>(i);
            c.step = k;
            return c;
        }
        k -= n;
    }
    return c;
}

double ring_pos_of_step(const sim::RingResult& r, int64_t step) {
    const int64_t total = ring_step_count(r);
    if (total == 0) return 0;
    return static_cast<double>(std::clamp<int64_t>(step, 0, total - 1) + 1);
}

bool ring_tick(double& pos, bool& playing, int64_t steps, double dt, double speed) {
    if (!playing || !(dt > 0) || steps <= 0) return false;
    const double before = pos;
    const double s = std::isfinite(speed) && speed > 0 ? speed : 1.0;
    pos = std::max(0.0, pos) + dt * s;
    if (pos >= static_cast<double>(steps)) {
        pos = static_cast<double>(steps);
        playing = false;
    }
    return pos != before;
}

// ---------------------------------------------------------------- the simulation
RingJob::RingJob()
    : job_(
          [](const Key& k) {
              auto run = std::make_shared<RingRun>();
              run->params = k.params;
              run->inputs = k.inputs;
              run->result = sim::simulate_ring(ring_problem_of(k.params, k.inputs), sim::find_machine(k.params.gpu),
                                               sim::RingConfig{});
              return run;
          },
          ring_screen_words) {}

void RingJob::request(const Params& p, const RingInputs& in) {
    if (asked_ && asked_->params == p && asked_->inputs == in) return;
    asked_ = Key{p, in};
    refusal_ = validate_ring(p, in);
    if (!refusal_.empty()) {
        job_.drop_queued();  // a refused ring replaces whatever was waiting
        return;
    }
    job_.request(*asked_);
}

}  // namespace viz
