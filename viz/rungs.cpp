#include "viz/rungs.hpp"

#include <map>
#include <sstream>

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
        const sim::KernelRates rates = sim::datasheet_rates(m);
        r.rates = "datasheet ceilings";
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
