// viz/roofline_view.cpp — the Roofline view's numbers (see roofline_view.hpp).
#include "viz/roofline_view.hpp"

#include <algorithm>
#include <cmath>
#include <exception>
#include <limits>

#include "report/report.hpp"
#include "viz/decode_view.hpp"
#include "viz/measurement.hpp"
#include "viz/model.hpp"
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

std::vector<RoofPoint> roof_points(const RunSet& rs, const MeasuredSet& ms, const DecodeShape& decode,
                                   std::string& note) {
    std::vector<RoofPoint> pts;
    note.clear();
    const sim::Problem& bp = rs.bench_problem;
    const double scale =
        double(bp.batch * bp.heads) / double(std::max<int64_t>(1, rs.problem.batch * rs.problem.heads));
    for (sim::Algo a : kAlgos) {
        const sim::Timing& t = rs.bench_timing[static_cast<size_t>(algo_index(a))];
        if (t.computed && t.predicted_ms > 0)
            pts.push_back(simulated_point(rs.result(a), t.predicted_ms * 1e-3, kRungIdeal, scale));
    }
    std::vector<std::string> passes;
    if (rs.params.pass != sim::Pass::backward) passes.push_back("forward");
    if (rs.params.pass != sim::Pass::forward) passes.push_back("backward");
    size_t rows = 0;
    for (const auto& pass : passes)
        for (const MeasuredRow* r :
             rows_at(ms, pass, bp.seq, bp.head_dim, bp.causal, bp.batch, bp.heads, rs.params.gpu))
            for (RoofPoint& p : recorded_points(*r)) {
                pts.push_back(std::move(p));
                ++rows;
            }
    if (rows == 0)
        note = "No recorded row at this shape (N = " + report::group_digits(bp.seq) +
               ", d = " + std::to_string(bp.head_dim) + (bp.causal ? ", causal" : "") + ", on the " + rs.params.gpu +
               "): only the simulated points are placed. The Measured view lists what was recorded.";
    try {
        pts.push_back(decode_point(sim::simulate_decode(decode.problem(), rs.machine, decode.config())));
    } catch (const std::exception&) {}  // a shape the decoding view refuses (it says why there)
    return pts;
}

float RoofAxes::x(double intensity) const {
    return plot.x0 + float(std::log10(intensity / x_lo) / std::log10(x_hi / x_lo)) * (plot.x1 - plot.x0);
}
float RoofAxes::y(double rate) const {
    return plot.y1 - float(std::log10(rate / y_lo) / std::log10(y_hi / y_lo)) * (plot.y1 - plot.y0);
}

RoofAxes roof_axes(const std::vector<RoofCeiling>& roofs, const std::vector<RoofPoint>& pts, const Box& plot) {
    double x_lo = 1e300, x_hi = 0, y_lo = 1e300, y_hi = 0;
    for (const auto& r : roofs) {
        x_lo = std::min(x_lo, r.ridge() / 10);
        x_hi = std::max(x_hi, r.ridge() * 10);
        y_hi = std::max(y_hi, r.flops);
        y_lo = std::min(y_lo, r.flops / 1000);
    }
    for (const auto& p : pts)
        if (p.intensity() > 0 && p.rate() > 0) {
            x_lo = std::min(x_lo, p.intensity());
            x_hi = std::max(x_hi, p.intensity());
            y_lo = std::min(y_lo, p.rate());
            y_hi = std::max(y_hi, p.rate());
        }
    RoofAxes ax;
    ax.plot = plot;
    if (!(x_hi > 0) || !(y_hi > 0)) return ax;  // nothing to place: one decade each way
    ax.x_lo = std::pow(10.0, std::floor(std::log10(x_lo)));
    ax.x_hi = std::pow(10.0, std::ceil(std::log10(x_hi) + 1e-9));
    ax.y_lo = std::pow(10.0, std::floor(std::log10(y_lo)));
    ax.y_hi = std::pow(10.0, std::ceil(std::log10(y_hi * 1.5)));
    return ax;
}

RoofPlotLayout roof_plot_layout(float x, float y, float avail_w, float avail_h, float fs, float y_label_w) {
    const float left = y_label_w + fs * 0.6f, bottom = fs * 2.6f;
    const float w = std::max(fs * 16, avail_w - fs * 0.5f);
    const float h = std::clamp(avail_h * 0.45f, fs * 10, fs * 22);
    return {{x, y, x + w, y + h}, {x + left, y + fs * 0.5f, x + w, y + h - bottom}};
}

std::vector<PlacedLabel> place_labels(const std::vector<PlotPt>& anchors, const std::vector<PlotPt>& sizes,
                                      const Box& plot, float marker_r, const std::vector<Box>& keep_out) {
    const size_t n = std::min(anchors.size(), sizes.size());
    std::vector<Box> taken = keep_out;  // markers, keep-out boxes, then each label as it is placed
    for (size_t i = 0; i < n; ++i)
        taken.push_back(
            {anchors[i].x - marker_r, anchors[i].y - marker_r, anchors[i].x + marker_r, anchors[i].y + marker_r});
    auto free = [&](const Box& b) {
        if (!b.within(plot)) return false;
        for (const Box& t : taken)
            if (b.overlaps(t)) return false;
        return true;
    };
    std::vector<PlacedLabel> out(n);
    for (size_t i = 0; i < n; ++i) {
        const float ax = anchors[i].x, ay = anchors[i].y, w = sizes[i].x, h = sizes[i].y;
        const float gap = std::max(1.0f, h * 0.12f), step = std::max(1.0f, h * 0.6f);
        PlacedLabel& L = out[i];
        // the eight places around the marker, `e` from its centre: right, above right, below right,
        // left, above left, below left, above, below; then the same farther out
        for (int ring = 0; ring < 6 && !L.placed; ++ring) {
            const float e = marker_r + gap + float(ring) * step;
            const Box c[8] = {{ax + e, ay - h / 2, ax + e + w, ay + h / 2},
                              {ax + e * 0.3f, ay - e - h, ax + e * 0.3f + w, ay - e},
                              {ax + e * 0.3f, ay + e, ax + e * 0.3f + w, ay + e + h},
                              {ax - e - w, ay - h / 2, ax - e, ay + h / 2},
                              {ax - e * 0.3f - w, ay - e - h, ax - e * 0.3f, ay - e},
                              {ax - e * 0.3f - w, ay + e, ax - e * 0.3f, ay + e + h},
                              {ax - w / 2, ay - e - h, ax + w / 2, ay - e},
                              {ax - w / 2, ay + e, ax + w / 2, ay + e + h}};
            for (const Box& b : c)
                if (free(b)) {
                    L = {b, true, ring > 0};
                    break;
                }
        }
        // the nearest free place on a grid over the whole plot (half a label's height apart)
        if (!L.placed && w > 0 && h > 0) {
            const float g = std::max(1.0f, h * 0.5f);
            float best = std::numeric_limits<float>::max();
            for (float y0 = plot.y0; y0 + h <= plot.y1; y0 += g)
                for (float x0 = plot.x0; x0 + w <= plot.x1; x0 += g) {
                    const Box b{x0, y0, x0 + w, y0 + h};
                    const float dx = x0 + w / 2 - ax, dy = y0 + h / 2 - ay, d = dx * dx + dy * dy;
                    if (d < best && free(b)) {
                        best = d;
                        L = {b, true, true};
                    }
                }
        }
        if (L.placed) taken.push_back(L.box);
    }
    return out;
}

}  // namespace viz
