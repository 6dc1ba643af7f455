#include "viz/series.hpp"

#include <chrono>

namespace viz {

std::vector<int64_t> seq_points() { return {256, 512, 1024, 2048, 4096, 8192, 16384, 32768, 65536}; }
std::vector<int64_t> block_points() { return {16, 32, 64, 128, 256, 512, 1024}; }
std::vector<int64_t> sram_points() {
    return {16 * 1024, 32 * 1024, 64 * 1024, 99 * 1024, 128 * 1024, 163 * 1024, 227 * 1024, 512 * 1024, 1024 * 1024};
}

namespace {
double hbm_bytes(const sim::Problem& pr, const sim::Machine& m, sim::Algo a, int64_t br, int64_t bc, int64_t sram) {
    sim::Config c;
    c.algo = a;
    c.block_rows = br;
    c.block_cols = bc;
    c.sram_bytes = sram;
    c.numerics = sim::Numerics::off;
    c.event_cap = 0;
    c.record_row = -1;
    c.l2 = sim::L2Mode::off;  // the charts count HBM <-> SRAM bytes only
    return static_cast<double>(sim::simulate(pr, m, c).totals.hbm_total().total());
}
}  // namespace

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
            const double y = run();
            s.x.push_back(x);
            s.y.push_back(y);
        } catch (const sim::Error& e) {
            s.skipped.push_back(std::to_string(static_cast<long long>(x)) + ": " + e.what());
        }
        if (done) ++*done;
    };
    const sim::Problem base = problem_of(p);
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}};
        for (int64_t n : ns) {
            sim::Problem pr = base;
            pr.seq = n;
            point(s, static_cast<double>(n),
                  [&] { return hbm_bytes(pr, m, a, p.block_rows, p.block_cols, p.sram_bytes); });
        }
        cd->vs_seq.push_back(std::move(s));
    }
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}};
        for (int64_t b : bs)
            point(s, static_cast<double>(b), [&] {
                // standard: square GEMM tiles B_r = B_c = b; flash: B_c = b, B_r by the rule
                return hbm_bytes(base, m, a, a == sim::Algo::standard ? b : 0, b, p.sram_bytes);
            });
        cd->vs_block.push_back(std::move(s));
    }
    for (sim::Algo a : kAlgos) {
        Series s{a, {}, {}, {}};
        for (int64_t sram : ms) point(s, static_cast<double>(sram), [&] { return hbm_bytes(base, m, a, 0, 0, sram); });
        cd->vs_sram.push_back(std::move(s));
    }
    cd->seconds = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
    return cd;
}

ChartJob::~ChartJob() {
    cancel_ = true;
    if (job_.valid()) job_.wait();
}

void ChartJob::request(const Params& p) {
    if (job_.valid()) {
        queued_ = std::make_unique<Params>(p);
        return;
    }
    done_ = 0;
    job_ = std::async(std::launch::async, [this, p] { return compute_charts(p, &done_, &total_, &cancel_); });
}

bool ChartJob::poll() {
    if (!job_.valid() || job_.wait_for(std::chrono::seconds(0)) != std::future_status::ready) return false;
    bool ok = true;
    try {
        current_ = job_.get();
    } catch (const std::exception&) {
        job_ = {};
        ok = false;
    }
    if (queued_) {
        const Params q = *queued_;
        queued_.reset();
        request(q);
    }
    return ok;
}

void ChartJob::wait() {
    while (job_.valid()) {
        job_.wait();
        poll();
    }
}

}  // namespace viz
