// viz/exact_view.cpp — the exactness view's numbers: each algorithm's output on the app's problem
// computed by the simulator (numerics on), compared with the float64 reference and with each other.
#include "viz/exact_view.hpp"

#include <cerrno>
#include <cmath>
#include <cstdlib>
#include <string>
#include <utility>

#include "report/report.hpp"
#include "sim/machine.hpp"
#include "sim/tensor.hpp"

namespace viz {

namespace {
// The key the job runs on: what changes the outputs (not the shown algorithm; the pass only as
// forward or with a backward: both compute the same gradients).
Params normalised(Params p) {
    p.algo = sim::Algo::flash2;
    if (p.pass == sim::Pass::backward) p.pass = sim::Pass::both;
    return p;
}
}  // namespace

int64_t exact_work_limit() {
    const char* env = std::getenv("FLASHSIM_EXACT_LIMIT");
    if (!env || !*env) return kExactDefaultLimit;
    char* end = nullptr;
    errno = 0;
    const long long v = std::strtoll(env, &end, 10);
    if (errno != 0 || *end != '\0' || v < 1) return -1;  // validate_exact says what is wrong
    return static_cast<int64_t>(v);
}

int ulp_bin(int64_t ulp) {
    if (ulp <= 0) return 0;
    int b = 1;
    while (ulp > 1 && b < 62) {
        ulp >>= 1;
        ++b;
    }
    return b;
}

std::string validate_exact(const Params& p) {
    if (const std::string e = validate(p); !e.empty()) return e;
    const int64_t limit = exact_work_limit();
    if (limit < 0)
        return std::string("FLASHSIM_EXACT_LIMIT = '") + std::getenv("FLASHSIM_EXACT_LIMIT") +
               "' is not a whole number of at least 1 (the largest N x N x d this view computes); unset it "
               "for the default, " +
               report::group_digits(kExactDefaultLimit) + ", or set e.g. 268435456";
    const double work = static_cast<double>(p.seq) * static_cast<double>(p.seq) * static_cast<double>(p.head_dim);
    if (work > static_cast<double>(limit)) {
        const auto longest = [&](double d) {
            return report::group_digits(static_cast<int64_t>(std::sqrt(static_cast<double>(limit) / d)));
        };
        return "N = " + report::group_digits(p.seq) + ", d = " + report::group_digits(p.head_dim) +
               " is N x N x d = " + report::group_digits(static_cast<int64_t>(work)) +
               ", more than this view computes (" + report::group_digits(limit) + ": N = " + longest(128) +
               " at d = 128, " + longest(64) + " at d = 64" +
               (limit == kExactDefaultLimit ? "" : ", set by FLASHSIM_EXACT_LIMIT") +
               "); set a smaller N (the bytes and times of the other views need no numbers and have no such "
               "limit)";
    }
    return {};
}

namespace {
// One tensor's comparisons: each algorithm's against the reference, then flash2 vs standard and
// flash1 vs flash2, and flash2's ulp distances from standard element by element.
ExactTensor compare(std::string name, std::array<sim::TensorF, 3> outs, const sim::TensorD& ref, sim::DType t) {
    ExactTensor x;
    x.name = std::move(name);
    x.output = std::move(outs);
    const auto& out = [&](sim::Algo a) -> const sim::TensorF& { return x.output[static_cast<size_t>(algo_index(a))]; };
    for (sim::Algo a : {sim::Algo::flash2, sim::Algo::flash1, sim::Algo::standard})
        x.pairs.push_back({std::string(sim::algo_name(a)), "reference", sim::validate(out(a), ref, t)});
    x.pairs.push_back({"flash2", "standard", sim::validate(out(sim::Algo::flash2), out(sim::Algo::standard), t)});
    x.pairs.push_back({"flash1", "flash2", sim::validate(out(sim::Algo::flash1), out(sim::Algo::flash2), t)});
    const sim::TensorF& f2 = out(sim::Algo::flash2);
    const sim::TensorF& st = out(sim::Algo::standard);
    x.ulps.resize(f2.data.size());
    for (size_t i = 0; i < f2.data.size(); ++i) {
        x.ulps[i] = sim::ulp_distance(t, f2.data[i], st.data[i]);
        const auto b = static_cast<size_t>(ulp_bin(x.ulps[i]));
        if (x.ulp_bins.size() <= b) x.ulp_bins.resize(b + 1, 0);
        ++x.ulp_bins[b];
    }
    return x;
}
}  // namespace

Exactness compute_exactness(const Params& in) {
    const Params p = normalised(in);
    if (const std::string e = validate_exact(p); !e.empty()) throw sim::Error(e);
    Exactness x;
    x.params = p;
    x.problem = problem_of(p);
    const bool bwd = p.pass != sim::Pass::forward;
    const sim::Machine& m = sim::find_machine(p.gpu);
    std::array<sim::TensorF, 3> O, dQ, dK, dV;
    for (sim::Algo a : kAlgos) {
        sim::Config c;
        c.algo = a;
        // standard's products run on its own tiles (its kernels are cuBLAS's), whatever B_r, B_c the
        // flash algorithms are given: its rounding is that of its block rule, as a lesson's standard config
        c.block_rows = a == sim::Algo::standard ? 0 : p.block_rows;
        c.block_cols = a == sim::Algo::standard ? 0 : p.block_cols;
        c.sram_bytes = p.sram_bytes;
        c.numerics = sim::Numerics::on;
        c.event_cap = 0;
        c.record_row = -1;
        c.timeline_sms = 0;
        c.timeline_steps = 0;
        c.l2 = sim::L2Mode::off;
        c.pass = bwd ? sim::Pass::both : sim::Pass::forward;
        // flash1 as cuda/flash1.cu runs it: Algorithm 1 keeps O in float32 in HBM, and a last launch
        // converts it to the storage type (the paper's shape would hand back the float32 O itself)
        c.launch_per_kv_block = a == sim::Algo::flash1;
        sim::Result r = sim::simulate(x.problem, m, c);
        const auto i = static_cast<size_t>(algo_index(a));
        if (!r.output || (bwd && (!r.dQ || !r.dK || !r.dV)))
            throw sim::Error(std::string(sim::algo_name(a)) + ": the simulator returned no output");
        O[i] = std::move(*r.output);
        if (bwd) {
            dQ[i] = std::move(*r.dQ);
            dK[i] = std::move(*r.dK);
            dV[i] = std::move(*r.dV);
        }
    }
    const sim::Inputs inputs = sim::generate_inputs(x.problem);
    const sim::DType t = x.problem.dtype;
    x.tensors.push_back(compare("O", O, sim::attention_reference(x.problem, inputs.Q, inputs.K, inputs.V), t));
    if (bwd) {
        const sim::TensorF dO = sim::generate_input(x.problem, sim::InputTensor::dO);
        const sim::Gradients g = sim::attention_backward_reference(x.problem, inputs.Q, inputs.K, inputs.V, dO);
        x.tensors.push_back(compare("dQ", dQ, g.dQ, t));
        x.tensors.push_back(compare("dK", dK, g.dK, t));
        x.tensors.push_back(compare("dV", dV, g.dV, t));
    }
    // the same inputs, every earlier key visible: the exact causal result (a window as long as N leaves
    // no key out: nothing to compare)
    if (x.problem.window > 0 && x.problem.window < x.problem.seq) {
        sim::Problem full = x.problem;
        full.window = 0;
        full.causal = true;
        const sim::TensorF& f2 = x.output().output[static_cast<size_t>(algo_index(sim::Algo::flash2))];
        x.approximation = sim::validate(f2, sim::attention_reference(full, inputs.Q, inputs.K, inputs.V), t);
    }
    return x;
}

ExactJob::ExactJob()
    : job_([](const Params& p) { return std::make_shared<Exactness>(compute_exactness(p)); }, in_screen_words) {}

void ExactJob::request(const Params& in) {
    const Params p = normalised(in);
    if (asked_ && *asked_ == p) return;
    asked_ = p;
    refusal_ = validate_exact(p);
    if (!refusal_.empty()) {
        job_.drop_queued();
        return;
    }
    job_.request(p);
}

}  // namespace viz
