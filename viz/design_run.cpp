// viz/design_run.cpp — see design_run.hpp.
#include "viz/design_run.hpp"

#include "lessons/lib/lesson.hpp"
#include "sim/machine.hpp"

namespace viz {

DesignSide design_side(const sim::Result& r) {
    DesignSide s;
    s.algo = r.algo;
    s.block_rows = r.block_rows;
    s.block_cols = r.block_cols;
    s.hbm_bytes = r.totals.hbm_total().total();
    s.steps = r.totals.steps;
    s.predicted_s = r.timing.computed ? r.timing.predicted_ms * 1e-3 : 0;
    return s;
}

DesignRun make_design_run(const lessons::Lesson& l, const sim::Result& yours) {
    DesignRun d;
    d.lesson_id = l.id;
    const lessons::ConfigSpec& base = l.configs.at(l.exercise->base);
    sim::Config c = base.config;
    c.numerics = sim::Numerics::off;
    c.event_cap = 1;  // counts and time only: the views run their own simulation of the answer
    d.reference = design_side(sim::simulate(base.problem, sim::find_machine(base.gpu), c));
    d.yours = design_side(yours);
    Params& p = d.params;
    p.seq = yours.problem.seq;
    p.head_dim = yours.problem.head_dim;
    p.dtype = yours.problem.dtype;
    p.causal = yours.problem.causal;
    p.window = yours.problem.window;
    p.gpu = base.gpu;
    p.algo = yours.algo;
    p.block_rows = yours.block_rows;
    p.block_cols = yours.block_cols;
    p.sram_bytes = yours.sram_bytes;
    p.pass = yours.pass;
    return d;
}

}  // namespace viz
