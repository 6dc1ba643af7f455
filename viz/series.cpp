#include "viz/series.hpp"

#include <algorithm>
#include <cctype>
#include <chrono>
#include <limits>

#include "sim/dtype.hpp"
#include "viz/measurement.hpp"

namespace viz {

std::vector<int64_t> seq_points() { return {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}; }
std::vector<int64_t> block_points() { return {16, 32, 64, 128, 256, 512, 1024}; }
std::vector<int64_t> sram_points() {
    return {16 * 1024, 32 * 1024, 64 * 1024, 99 * 1024, 128 * 1024, 163 * 1024, 227 * 1024, 512 * 1024, 1024 * 1024};
}

namespace {
struct Bytes {
    double paper = 0;                                      // HBM <-> SRAM, every tile load and store
    double l2 = std::numeric_limits<double>::quiet_NaN();  // DRAM through the L2 model (NaN: not modelled)
};
Bytes hbm_bytes(const sim::Problem& pr, const sim::Machine& m, sim::Algo a, int64_t br, int64_t bc, int64_t sram) {
    sim::Config c;
    c.algo = a;
    c.block_rows = br;
    c.block_cols = bc;
    c.sram_bytes = sram;
    c.numerics = sim::Numerics::off;
    c.event_cap = 0;
    c.record_row = -1;
    // The L2 model within the command line's budget (2^22 lookups, about a second): every flash
    // point of the sweeps; standard up to N = 8192 (its N x N matrices cost N^2 / 16 lookups and
    // more, minutes at N = 65536); the points beyond have no L2 count (NaN: a gap in the line).
    c.l2 = sim::L2Mode::automatic;
    c.l2_budget = kChartL2Budget;
    c.timing = false;
    const sim::Result r = sim::simulate(pr, m, c);
    Bytes b;
    b.paper = static_cast<double>(r.totals.hbm_total().total());
    if (r.l2.simulated) b.l2 = static_cast<double>(r.l2.hbm_total().total());
    return b;
}

bool contains_ci(std::string hay, std::string needle) {
    auto low = [](std::string& x) {
        std::transform(x.begin(), x.end(), x.begin(), [](unsigned char ch) { return std::tolower(ch); });
    };
    low(hay);
    low(needle);
    return hay.find(needle) != std::string::npos;
}
}  // namespace

std::vector<MeasuredPoints> measured_points(const MeasuredSet& ms, const Params& p) {
    std::vector<MeasuredPoints> out;
    const int64_t elem = sim::dtype_bytes(p.dtype);
    for (sim::Algo a : kAlgos) {
        const std::string name(sim::algo_name(a));
        for (const auto& f : ms.files) {
            // the preset's model ("A100" of "A100-80GB") in the device's name ("NVIDIA A100 SXM 80 GB")
            if (!contains_ci(f.device, p.gpu.substr(0, p.gpu.find('-')))) continue;
            MeasuredPoints mp{a, {}, {}, ""};
            for (const auto& r : f.rows) {
                if (r.variant != name || r.pass != "forward" || r.head_dim != p.head_dim || r.causal != p.causal ||
                    !r.error.empty())
                    continue;
                const auto dt = sim::parse_dtype(r.dtype);
                const auto d = r.dram_total();
                if (!dt || sim::dtype_bytes(*dt) != elem || !d || r.batch * r.heads <= 0) continue;
                mp.x.push_back(static_cast<double>(r.seq));
                mp.y.push_back(*d / static_cast<double>(r.batch * r.heads));
            }
            if (mp.x.empty()) continue;
            mp.source = f.path.substr(f.path.find_last_of('/') + 1) + " (" + f.device + ")";
            out.push_back(std::move(mp));
            break;
        }
    }
    return out;
}

std::shared_ptr<ChartData> compute_charts(const Params& p, std::atomic<int>* done, std::atomic<int>* total,
                                          const std::atomic<bool>* cancel) {
    const auto t0 = std::chrono::steady_clock::now();
    auto cd = std::make_shared<ChartData>();
    cd->params = p;
    const sim::Machine& m = sim::find_machine(p.gpu);
    const auto ns = seq_points(), bs = block_points(), ms = sram_points();
    if (total) *total = static_cast<int>(3 * ns.size() + 3 * bs.size() + 3 * ms.size());
    auto point = [&](Series& s, double x, auto&& run) {
        if (cancel && *cancel) return;
        try {
            const Bytes y = run();
            s.x.push_back(x);
            s.y.push_back(y.paper);
            s.y_l2.push_back(y.l2);
        } catch (const sim::Error& e) {
            s.skipped.push_back(std::to_string(static_cast<long long>(x)) + ": " + e.what());
        }
        if (done) ++*done;
    };
    const sim::Problem base = problem_of(p);
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}, {}};
        for (int64_t n : ns) {
            sim::Problem pr = base;
            pr.seq = n;
            point(s, static_cast<double>(n),
                  [&] { return hbm_bytes(pr, m, a, p.block_rows, p.block_cols, p.sram_bytes); });
        }
        cd->vs_seq.push_back(std::move(s));
    }
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}, {}};
        for (int64_t b : bs)
            point(s, static_cast<double>(b), [&] {
                // standard: square GEMM tiles B_r = B_c = b; flash: B_c = b, B_r by the rule
                return hbm_bytes(base, m, a, a == sim::Algo::standard ? b : 0, b, p.sram_bytes);
            });
        cd->vs_block.push_back(std::move(s));
    }
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}, {}};
        for (int64_t sram : ms) point(s, static_cast<double>(sram), [&] { return hbm_bytes(base, m, a, 0, 0, sram); });
        cd->vs_sram.push_back(std::move(s));
    }
    cd->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return cd;
}

}  // namespace viz
