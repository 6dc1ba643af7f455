#include "viz/lab_trace.hpp"

#include <cmath>

#include "report/report.hpp"

namespace viz {

namespace {

// A RunSet that holds one result, at its algorithm's index, with its timeline.
RunSet one_run(const report::LabTrace& t, sim::Result r) {
    RunSet rs;
    rs.problem = t.info.problem;
    rs.machine = r.machine;
    rs.params.seq = t.info.problem.seq;
    rs.params.head_dim = t.info.problem.head_dim;
    rs.params.block_rows = t.info.block_rows;
    rs.params.block_cols = t.info.block_cols;
    rs.params.dtype = t.info.problem.dtype;
    rs.params.causal = t.info.problem.causal;
    rs.params.algo = t.info.algo;
    rs.params.pass = r.pass;
    const int k = algo_index(t.info.algo);
    rs.timelines[static_cast<size_t>(k)] = make_timeline(r);
    rs.results[static_cast<size_t>(k)] = std::move(r);
    return rs;
}

}  // namespace

std::string LabRun::builtin_name() const {
    return "built-in " + std::string(sim::algo_name(trace.info.algo)) + " (B_r " +
           std::to_string(trace.info.block_rows) + ", B_c " + std::to_string(trace.info.block_cols) + ")";
}

std::shared_ptr<const LabRun> load_lab_run(const std::string& path, std::string* error) {
    try {
        auto run = std::make_shared<LabRun>();
        run->trace = report::read_lab_trace(path);
        const report::LabTraceInfo& in = run->trace.info;
        const double pairs = std::ceil(static_cast<double>(in.problem.seq) / static_cast<double>(in.block_rows)) *
                             std::ceil(static_cast<double>(in.problem.seq) / static_cast<double>(in.block_cols));
        if (pairs > kMaxTilePairs)  // the built-in run would take minutes; the app's own limit
            throw sim::Error(
                "trace " + path + ": the built-in run at N = " + std::to_string(in.problem.seq) + ", B_r " +
                std::to_string(in.block_rows) + ", B_c " + std::to_string(in.block_cols) + " walks " +
                std::to_string(static_cast<int64_t>(pairs)) + " tile pairs, more than the app's " +
                report::group_digits(static_cast<int64_t>(kMaxTilePairs)) + "; replay a smaller run or larger tiles");
        run->mine = one_run(run->trace, report::learner_result(run->trace));
        run->builtin = one_run(run->trace, report::builtin_result(run->trace));
        const sim::Result& b = run->builtin_result();
        run->mine_line =
            report::lab_run_line("yours", run->trace.totals, run->trace.trace.steps_per_head, run->trace.sram_peak);
        run->builtin_line =
            report::lab_run_line(run->builtin_name().c_str(), b.totals, b.trace.steps_per_head, b.sram_peak_bytes);
        if (error) error->clear();
        return run;
    } catch (const std::exception& e) {
        if (error) *error = e.what();
        return nullptr;
    }
}

bool LabTraceState::open(const std::string& file) {
    std::string why;
    auto r = load_lab_run(file, &why);
    if (!r) {
        error = why;
        return false;
    }
    run = std::move(r);
    mine_rp = std::make_unique<Replay>(run->mine_result());
    builtin_rp = std::make_unique<Replay>(run->builtin_result());
    step = -1;
    path = file;
    error.clear();
    return true;
}

void LabTraceState::close() {
    mine_rp.reset();
    builtin_rp.reset();
    run.reset();
    error.clear();
}

}  // namespace viz
