#include "viz/live_run.hpp"

#include <chrono>
#include <ctime>

#if FLASHSIM_HAVE_CUDA
#include "cuda/api.hpp"
#include "sim/kernel_config.hpp"
#include "sim/simulate.hpp"
#endif

namespace viz {

LiveRun::~LiveRun() {
    if (job_.valid()) job_.wait();
}

bool LiveRun::available(std::string* why) {
#if FLASHSIM_HAVE_CUDA
    return fcuda::device_available(why);
#else
    if (why) *why = "this build has no CUDA backend (built without nvcc); showing recorded results only";
    return false;
#endif
}

MeasuredFile measure_live(const sim::Problem& p, const std::string& gpu_preset, std::atomic<int>* done,
                          std::atomic<int>* total) {
    MeasuredFile f;
    f.path = "live run";
#if FLASHSIM_HAVE_CUDA
    try {
        f.device = fcuda::device_name();
        f.driver = fcuda::driver_version();
        const std::time_t now = std::time(nullptr);
        char date[64];
        std::strftime(date, sizeof date, "%Y-%m-%dT%H:%M:%SZ", std::gmtime(&now));
        f.date = date;
        std::vector<std::string> runnable;
        for (const std::string& v : fcuda::variants())
            if (fcuda::variant_available(v)) runnable.push_back(v);  // flash2h: Hopper only
        if (total) *total = static_cast<int>(runnable.size());
        for (const std::string& v : runnable) {
            MeasuredRow r;
            r.variant = v;
            r.seq = p.seq;
            r.head_dim = p.head_dim;
            r.batch = p.batch;
            r.heads = p.heads;
            r.causal = p.causal;
            r.dtype = std::string(sim::dtype_name(p.dtype));
            try {
                fcuda::RunOptions o;
                o.repeats = 10;
                const fcuda::Measurement m = fcuda::run(p, v, o);
                r.ms = m.ms_median;
                r.tflops = m.tflops;
                if (m.dram_read_bytes >= 0) r.dram_read = static_cast<double>(m.dram_read_bytes);
                if (m.dram_write_bytes >= 0) r.dram_write = static_cast<double>(m.dram_write_bytes);
                if (!m.note.empty()) r.error = m.note;  // e.g. non-finite outputs: shown, not hidden
                if (m.tiles.block_rows > 0) {           // standard has no tiles (cuBLAS's own)
                    r.block_rows = m.tiles.block_rows;
                    r.block_cols = m.tiles.block_cols;
                    r.sram_bytes = m.tiles.sram_bytes;
                }
                // the simulator with the kernel's own tiling, grid order and blocks an SM: the bridge the bench
                // and `bench --resimulate` use (sim/kernel_config.hpp)
                const sim::Config c = sim::sim_config(sim::kernel_run(p, sim::Pass::forward, v, m.tiles));
                const sim::Result s = sim::simulate(p, sim::find_machine(gpu_preset), c);
                r.sim_read = static_cast<double>(s.totals.hbm_total().read_bytes);
                r.sim_write = static_cast<double>(s.totals.hbm_total().write_bytes);
                if (s.l2.simulated) {
                    r.sim_l2_read = static_cast<double>(s.l2.hbm_total().read_bytes);
                    r.sim_l2_write = static_cast<double>(s.l2.hbm_total().write_bytes);
                }
            } catch (const std::exception& e) { r.error = e.what(); }
            f.rows.push_back(r);
            if (done) ++*done;
        }
    } catch (const std::exception& e) { f.error = e.what(); }
#else
    (void)p;
    (void)gpu_preset;
    (void)done;
    (void)total;
    f.error = "this build has no CUDA backend (built without nvcc)";
#endif
    return f;
}

void LiveRun::start(const sim::Problem& p, const std::string& gpu_preset) {
    if (job_.valid()) return;
    done_ = 0;
#if FLASHSIM_HAVE_CUDA
    job_ =
        std::async(std::launch::async, [this, p, gpu_preset] { return measure_live(p, gpu_preset, &done_, &total_); });
#else
    (void)p;
    (void)gpu_preset;
#endif
}

void LiveRun::poll() {
    if (job_.valid() && job_.wait_for(std::chrono::seconds(0)) == std::future_status::ready) {
        result_ = job_.get();
        have_ = true;
    }
}

}  // namespace viz
