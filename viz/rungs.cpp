#include "viz/rungs.hpp"

#include <map>
#include <sstream>

#include "report/kernel_report.hpp"
#include "sim/kernel_config.hpp"
#include "viz/measurement.hpp"

namespace viz {

const KernelRung& kernel_rung(const sim::Problem& p, sim::Pass pass, const std::string& kernel, const sim::Machine& m) {
    static std::map<std::string, KernelRung> kept;
    std::ostringstream key;
    key << kernel << '|' << static_cast<int>(pass) << '|' << p.seq << '|' << p.head_dim << '|' << p.batch << '|'
        << p.heads << '|' << p.causal << '|' << p.window << '|' << static_cast<int>(p.dtype) << '|' << m.name;
    auto [it, fresh] = kept.try_emplace(key.str());
    KernelRung& r = it->second;
    if (!fresh) return r;
    r.kernel = kernel;
    try {
        // the card's measured ceilings where its results hold them (results/<card>/ceilings.json), the
        // same lookup as `flashsim simulate --kernel ... --ceilings measured` and the bench's predictions
        sim::KernelRates rates = sim::datasheet_rates(m);
        r.rates = "datasheet ceilings";
        if (const auto measured = report::measured_rates(m, p.dtype)) {
            rates = *measured;
            r.rates = "measured ceilings (" + report::default_ceilings_file(m) + ")";
        }
        for (sim::Pass ps : {sim::Pass::forward, sim::Pass::backward}) {
            if (pass != sim::Pass::both && pass != ps) continue;
            const sim::KernelPrediction k =
                sim::predict_kernel(p, sim::kernel_profile(kernel, ps, p.head_dim, p.causal), rates, m);
            r.seconds += k.predicted_ms / 1e3;
            r.bound = k.bound;
            r.uncertain = r.uncertain || k.uncertain;
        }
    } catch (const std::exception& e) {
        r.seconds = 0;
        r.error = e.what();
    }
    return r;
}

std::optional<KernelRung> rung_of_row(const MeasuredRow& r) {
    if (r.pass != "forward" && r.pass != "backward") return std::nullopt;
    // the row's own prediction, from its recorded tiles and schedule (the bench's bridge to the model)
    if (r.predicted_ms && *r.predicted_ms > 0) {
        KernelRung k;
        k.kernel = r.variant;
        k.seconds = *r.predicted_ms / 1e3;
        k.uncertain = r.predicted_uncertain;
        k.rates = "the row's recorded prediction";
        return k;
    }
    const std::optional<std::string> preset = sim::preset_for_device(r.device);
    if (!preset) return std::nullopt;
    sim::Problem p;
    p.seq = r.seq;
    p.head_dim = r.head_dim;
    p.batch = r.batch;
    p.heads = r.heads;
    p.causal = r.causal;
    p.dtype = sim::parse_dtype(r.dtype).value_or(sim::DType::bf16);
    const KernelRung& k = kernel_rung(p, r.pass == "forward" ? sim::Pass::forward : sim::Pass::backward, r.variant,
                                      sim::find_machine(*preset));
    if (!k.error.empty() || !(k.seconds > 0)) return std::nullopt;
    return k;
}

double rung_ratio(double measured_s, double predicted_s) {
    if (!(measured_s > 0) || !(predicted_s > 0)) return 0;
    return measured_s / predicted_s;
}

std::string lane_unit(const std::string& lane, const std::string& kernel) {
    if (lane == "copy") return "HBM and L2 into shared memory (copies)";
    const std::string tc = kernel == "flash2h"    ? "tensor cores (wgmma)"
                           : kernel == "standard" ? "tensor cores (the library GEMM)"
                                                  : "tensor cores (mma.sync)";
    return tc + ", exponentials on the MUFU unit, the rest on fp32 lanes";
}

}  // namespace viz
