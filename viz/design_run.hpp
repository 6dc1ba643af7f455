// viz/design_run.hpp — a design exercise's answer as a run of its own (GL-free, unit-tested): the
// learner's tiles simulated on the exercise's base problem beside the base configuration itself
// (the reference), with the parameters that make the app's views show the learner's run.
#pragma once
#include <cstdint>
#include <string>

#include "sim/simulate.hpp"
#include "viz/model.hpp"

namespace lessons {
struct Lesson;
}

namespace viz {

// One run's figures as the comparison shows them.
struct DesignSide {
    sim::Algo algo = sim::Algo::flash2;
    int64_t block_rows = 0, block_cols = 0;
    int64_t hbm_bytes = 0;   // HBM<->SRAM, every tile move (the exercises' count)
    int64_t steps = 0;       // inner-loop steps walked
    double predicted_s = 0;  // rung 2, the ideal machine (0: not timed)
};
DesignSide design_side(const sim::Result& r);

struct DesignRun {
    std::string lesson_id;
    DesignSide reference;  // the exercise's base configuration as the lesson gives it
    DesignSide yours;      // the accepted answer
    Params params;         // the app's parameters for the answer's run (its problem, algorithm and tiles)
};

// The answer's run (`yours`, the result lessons::check_answer simulated) beside the base
// configuration, simulated here on the same problem and machine. Throws sim::Error if the base does
// not simulate (the lesson loader ran it, so it does).
DesignRun make_design_run(const lessons::Lesson& l, const sim::Result& yours);

}  // namespace viz
