// viz/roofline_view.cpp — the Roofline view's numbers (see roofline_view.hpp).
#include "viz/roofline_view.hpp"

#include <algorithm>

#include "viz/measurement.hpp"
#include "viz/rungs.hpp"

namespace viz {

double RoofCeiling::attainable(double intensity) const { return std::min(flops, intensity * bandwidth); }

std::vector<RoofCeiling> roof_ceilings(const sim::Machine& m) {
    std::vector<RoofCeiling> out;
    out.push_back({"datasheet", m.hbm_bandwidth, m.matmul_flops});
    if (m.measured_hbm_bandwidth > 0 && m.measured_matmul_flops > 0)
        out.push_back({"measured", m.measured_hbm_bandwidth, m.measured_matmul_flops});
    return out;
}

std::string RoofPoint::label() const { return kernel + " " + pass + (measured ? ", measured" : ", simulated"); }

namespace {
const char* pass_of(sim::Pass p) {
    switch (p) {
        case sim::Pass::forward:
            return "forward";
        case sim::Pass::backward:
            return "backward";
        default:
            return "forward + backward";
    }
}
}  // namespace

RoofPoint simulated_point(const sim::Result& r, double seconds, const std::string& rung, double flop_scale) {
    RoofPoint p;
    p.kernel = std::string(sim::algo_name(r.algo));
    p.pass = pass_of(r.pass);
    p.flops = static_cast<double>(r.totals.flops.matmul);
    if (r.l2.simulated) {
        p.bytes = static_cast<double>(r.l2.hbm_total().total());
        p.bytes_what = "L2 model (DRAM)";
    } else {
        p.bytes = static_cast<double>(r.totals.hbm_total().total());
        p.bytes_what = "tile moves, no L2";
    }
    // the time is of a problem flop_scale times larger: its FLOPs are (matrix FLOPs scale with B x H)
    p.seconds = seconds / flop_scale;
    p.time_what = rung;
    return p;
}

std::vector<RoofPoint> recorded_points(const MeasuredRow& row) {
    std::vector<RoofPoint> out;
    if (!row.ms || !row.tflops || !(*row.ms > 0) || !(*row.tflops > 0)) return out;
    double flops = *row.tflops * 1e12 * (*row.ms * 1e-3);
    if (row.variant == "standard" && row.pass == "backward") flops *= 4.0 / 5.0;
    RoofPoint base;
    base.kernel = row.variant;
    base.pass = row.pass;
    base.flops = flops;
    if (const auto dram = row.dram_total(); dram && *dram > 0) {
        RoofPoint m = base;
        m.measured = true;
        m.bytes = *dram;
        m.bytes_what = "DRAM counters";
        m.seconds = *row.ms * 1e-3;
        m.time_what = "measured median";
        out.push_back(m);
    }
    const std::optional<KernelRung> k = rung_of_row(row);
    if (const auto sim_bytes = row.sim_l2_total();
        sim_bytes && *sim_bytes > 0 && k && k->error.empty() && k->seconds > 0) {
        RoofPoint s = base;
        s.bytes = *sim_bytes;
        s.bytes_what = "L2 model (DRAM)";
        s.seconds = k->seconds;
        s.time_what = kRungKernel;
        out.push_back(s);
    }
    return out;
}

RoofPoint decode_point(const sim::DecodeResult& r) {
    const auto& p = r.problem;
    RoofPoint d;
    d.kernel = "decode";
    d.pass = "step";  // "decode step, simulated"
    d.flops = 4.0 * double(p.batch) * double(p.q_heads) * double(p.q_len) * double(p.kv_len) * double(p.head_dim);
    d.bytes = static_cast<double>(r.total_bytes());
    d.bytes_what = "split-KV walk";
    d.seconds = r.total_s;
    d.time_what = "decode model";
    return d;
}

}  // namespace viz
