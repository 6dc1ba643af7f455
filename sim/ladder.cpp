// sim/ladder.cpp — the three rungs from one simulated result (and the kernel model's predictions).
#include "sim/ladder.hpp"

#include <algorithm>
#include <cstdio>

namespace sim {

namespace {
struct RungText {
    std::string_view name, key, charges;
};
constexpr std::array<RungText, 3> kRungs{{
    {"bytes bound", "bytes_bound",
     "the HBM bytes the algorithm's loops move (no cache), at the memory bandwidth; arithmetic is free"},
    {"ideal machine", "ideal_machine",
     "the algorithm's own steps at peak rates: each step's copies at the memory bandwidth (L2 hits at L2's), its "
     "products at the tensor-core peak and then its softmax at the fp32 peak, the next step's copies overlapped "
     "with that arithmetic, blocks over the SMs in waves"},
    {"this kernel", "this_kernel",
     "the CUDA kernel's own tiles, tensor-core instruction (mma.sync, wgmma or a library GEMM), exponentials on "
     "the special-function units, issue rate, schedule and launches, at measured or datasheet ceilings"},
}};

std::string rate_words(double bytes_per_s, const std::string& ceilings) {
    char buf[96];
    std::snprintf(buf, sizeof buf, "%.2f TB/s, %s", bytes_per_s / 1e12, ceilings.c_str());
    return buf;
}
}  // namespace

std::string_view rung_name(Rung r) { return kRungs[static_cast<size_t>(r)].name; }
std::string_view rung_key(Rung r) { return kRungs[static_cast<size_t>(r)].key; }
std::string_view rung_charges(Rung r) { return kRungs[static_cast<size_t>(r)].charges; }

const RungTime& Ladder::headline() const {
    if (!kernel_name.empty()) return at(Rung::this_kernel);
    for (size_t i = rungs.size(); i-- > 0;)
        if (rungs[i].present) return rungs[i];
    return rungs[0];
}

Ladder ladder_of(const Result& r, const std::vector<KernelPrediction>& kernel) {
    Ladder l;
    for (size_t i = 0; i < l.rungs.size(); ++i) l.rungs[i].rung = static_cast<Rung>(i);
    const bool timed = r.timing.computed && r.timing.hbm_bandwidth > 0;
    const double bw = timed ? r.timing.hbm_bandwidth : r.machine.hbm_bandwidth;
    auto& b = l.rungs[0];
    if (bw > 0) {
        b.present = true;
        b.ms = static_cast<double>(r.totals.hbm_total().total()) / bw * 1e3;
        b.rates = rate_words(bw, timed ? r.timing.ceilings : std::string("datasheet"));
    }
    auto& ideal = l.rungs[1];
    if (r.timing.computed) {
        ideal.present = true;
        ideal.ms = r.timing.overlapped_s * 1e3;
        char buf[160];
        std::snprintf(buf, sizeof buf, "%.2f TB/s, %.0f TFLOP/s tensor, %.0f TFLOP/s fp32, %s",
                      r.timing.hbm_bandwidth / 1e12, r.timing.matmul_flops / 1e12, r.timing.scalar_flops / 1e12,
                      r.timing.ceilings.c_str());
        ideal.rates = buf;
    }
    if (!kernel.empty()) {
        auto& k = l.rungs[2];
        k.present = true;
        for (const auto& kp : kernel) k.ms += kp.predicted_ms;
        k.rates = kernel.front().rates_source;
        l.kernel = kernel;
        l.kernel_name = kernel.front().profile.kernel;
    }
    return l;
}

Config kernel_config(Config c, const Problem& p, const Machine& m, const std::vector<KernelProfile>& profiles) {
    if (profiles.empty()) return c;
    c.algo = profiles.front().algo;
    c.launch_per_kv_block = profiles.front().one_launch_per_kv_block;  // cuda/flash1.cu: a launch per K/V block
    for (const auto& kp : profiles) {
        if (kp.pass == Pass::forward) c.grid_order = grid_order(kp, p);
        (kp.pass == Pass::forward ? c.fwd_blocks_per_sm : c.bwd_blocks_per_sm) = kp.ctas_per_sm;
        if (kp.block_rows <= 0) continue;
        c.sram_bytes = std::max<int64_t>(m.sram_bytes, int64_t{1} << 20);  // the kernel's tiles (they compiled)
        if (kp.pass == Pass::forward) {
            c.block_rows = kp.block_rows;
            c.block_cols = kp.block_cols;
        } else {
            c.bwd_block_rows = kp.block_rows;
            c.bwd_block_cols = kp.block_cols;
        }
    }
    return c;
}

std::vector<KernelProfile> kernel_profiles(const std::string& kernel, Pass pass, const Problem& p) {
    std::vector<KernelProfile> out;
    if (pass != Pass::backward) out.push_back(kernel_profile(kernel, Pass::forward, p.head_dim, p.causal));
    if (pass != Pass::forward) out.push_back(kernel_profile(kernel, Pass::backward, p.head_dim, p.causal));
    return out;
}

Ladder ladder(const Problem& p, const Machine& m, Config c, const std::string& kernel, const KernelRates* rates) {
    c.numerics = Numerics::off;
    c.timing = true;
    const std::vector<KernelProfile> profiles =
        kernel.empty() ? std::vector<KernelProfile>{} : kernel_profiles(kernel, c.pass, p);
    const Result r = simulate(p, m, kernel_config(c, p, m, profiles));
    std::vector<KernelPrediction> preds;
    const KernelRates kr = rates ? *rates : datasheet_rates(m);
    for (const auto& kp : profiles) preds.push_back(predict_kernel(p, kp, kr, m));
    return ladder_of(r, preds);
}

}  // namespace sim
