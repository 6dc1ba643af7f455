// report/ring.cpp — ring attention printers (see ring.hpp).
#include "report/ring.hpp"

#include <algorithm>
#include <cstdio>
#include <sstream>

#include "report/report.hpp"

namespace report {

namespace {
std::string fmt(const char* f, double v) {
    char b[64];
    std::snprintf(b, sizeof b, f, v);
    return b;
}
std::string ms(double s) { return fmt("%.4g", s * 1e3); }
const char* pass_word(int pass) { return pass == 0 ? "forward" : "backward"; }
}  // namespace

nlohmann::json ring_json(const sim::RingResult& r, const RingChecks& checks) {
    const auto& p = r.problem;
    nlohmann::json passes = nlohmann::json::array();
    for (const auto& pr : r.passes) {
        nlohmann::json steps = nlohmann::json::array();
        for (const auto& st : pr.steps) {
            nlohmann::json devs = nlohmann::json::array();
            for (const auto& ds : st.devices)
                devs.push_back({{"device", ds.device},
                                {"kv_from", ds.kv_from},
                                {"full_blocks", ds.full_blocks},
                                {"diagonal_blocks", ds.diagonal_blocks},
                                {"pairs", ds.pairs},
                                {"compute_ms", ds.compute_s * 1e3},
                                {"merge_ms", ds.merge_s * 1e3}});
            steps.push_back({{"step", st.step},
                             {"compute_ms", st.compute_s * 1e3},
                             {"send_bytes", st.send_bytes},
                             {"kv_bytes", st.kv_bytes},
                             {"grad_bytes", st.grad_bytes},
                             {"transfer_ms", st.transfer_s * 1e3},
                             {"step_ms", st.time_s * 1e3},
                             {"exposed_ms", st.exposed_s * 1e3},
                             {"devices", devs}});
        }
        passes.push_back({{"pass", pass_word(pr.pass)},
                          {"steps", steps},
                          {"tail_ms", pr.tail_s * 1e3},
                          {"time_ms", pr.time_s * 1e3},
                          {"compute_only_ms", pr.compute_only_s * 1e3},
                          {"busy_ms", pr.busy_s * 1e3},
                          {"one_gpu_ms", pr.one_gpu_s * 1e3},
                          {"link_bytes", pr.link_bytes},
                          {"pairs_per_device", pr.pairs_per_device},
                          {"balance", pr.balance},
                          {"single_gpu_ms", pr.single_gpu_s * 1e3},
                          {"ideal_ms", pr.ideal_s * 1e3},
                          {"efficiency", pr.efficiency},
                          {"break_even_tokens_per_gpu", pr.break_even_tokens},
                          {"break_even_note", pr.break_even_note},
                          {"break_even_bandwidth_tokens_per_gpu", pr.break_even_bandwidth_tokens}});
    }
    nlohmann::json j = {{"gpus", p.gpus},
                        {"seq", p.attn.seq},
                        {"tokens_per_gpu", p.tokens_per_gpu()},
                        {"chunk", p.chunk()},
                        {"head_dim", p.attn.head_dim},
                        {"batch", p.attn.batch},
                        {"heads", p.attn.heads},
                        {"dtype", sim::dtype_name(p.attn.dtype)},
                        {"causal", p.attn.causal},
                        {"layout", sim::name_of(p.layout)},
                        {"gpu", r.machine.name},
                        {"link", r.machine.link_name},
                        {"link_bandwidth", r.link_bandwidth},
                        {"link_latency_s", r.link_latency_s},
                        {"link_source", r.machine.link_source},
                        {"hbm_bandwidth", r.hbm_bandwidth},
                        {"compute", r.compute_note},
                        {"chunks_of_device", r.chunks_of_device},
                        {"passes", passes},
                        {"time_ms", r.time_s * 1e3},
                        {"ideal_ms", r.ideal_s * 1e3},
                        {"efficiency", r.efficiency},
                        {"measured", false}};
    for (const auto& [name, vs] : checks)
        j["check"][name] = {{"max_abs", vs.max_abs},
                            {"rel_frobenius", vs.rel_frobenius},
                            {"max_ulp", vs.max_ulp},
                            {"count", vs.count},
                            {"where", vs.where}};
    return j;
}

std::string ring_text(const sim::RingResult& r, const RingChecks& checks) {
    const auto& p = r.problem;
    const int64_t P = p.gpus;
    std::ostringstream o;
    o << "Ring attention (simulated; nothing here was measured on several GPUs)\n"
      << "P=" << P << " GPUs, N=" << p.attn.seq << " (" << p.tokens_per_gpu() << " tokens a GPU), d=" << p.attn.head_dim
      << " B=" << p.attn.batch << " H=" << p.attn.heads << " " << sim::dtype_name(p.attn.dtype)
      << (p.attn.causal ? ", causal" : ", no mask") << ", " << sim::name_of(p.layout) << " layout, on "
      << r.machine.name << "\n";
    o << "link: " << (r.machine.link_name.empty() ? "given" : r.machine.link_name) << ", "
      << fmt("%.1f", r.link_bandwidth / 1e9) << " GB/s each way, latency " << fmt("%.3g", r.link_latency_s * 1e6)
      << " us\n";
    o << "compute: " << r.compute_note << "\n";
    o << "layout: " << P * p.chunks_per_gpu() << " chunks of " << p.chunk() << " tokens;";
    const int64_t show = std::min<int64_t>(P, 8);
    for (int64_t i = 0; i < show; ++i) {
        o << " GPU " << i << ":";
        for (int64_t k = 0; k < p.chunks_per_gpu(); ++k)
            o << (k ? "," : " ") << r.chunks_of_device[size_t(i * p.chunks_per_gpu() + k)];
        o << (i + 1 < show ? ";" : "");
    }
    o << (show < P ? " ..." : "") << "\n";
    for (const auto& pr : r.passes) {
        o << "\n"
          << pass_word(pr.pass) << ": step s, GPU i attends to the K/V slice of GPU (i - s) mod P"
          << (pr.pass == 1 ? "; dK, dV (float32) travel with it" : "") << "\n";
        o << "step  compute ms (slowest / fastest GPU)   sends        transfer ms   step ms   exposed ms\n";
        const size_t rows = pr.steps.size();
        for (size_t k = 0; k < rows; ++k) {
            if (rows > 12 && k == 6) o << "  ... (" << rows - 10 << " steps)\n";
            if (rows > 12 && k >= 6 && k < rows - 4) continue;
            const auto& st = pr.steps[k];
            double lo = 1e300;
            for (const auto& ds : st.devices) lo = std::min(lo, ds.compute_s + ds.merge_s);
            char b[200];
            std::snprintf(b, sizeof b, "%4lld  %-10s / %-10s            %-11s  %-12s  %-8s  %s\n",
                          static_cast<long long>(st.step), ms(st.compute_s).c_str(), ms(lo).c_str(),
                          human_bytes(double(st.send_bytes)).c_str(), ms(st.transfer_s).c_str(), ms(st.time_s).c_str(),
                          ms(st.exposed_s).c_str());
            o << b;
        }
        if (pr.tail_s > 0) o << "tail: the last dK, dV go home: " << ms(pr.tail_s) << " ms, exposed\n";
        int64_t mx = 0, mn = INT64_MAX;
        for (int64_t w : pr.pairs_per_device) mx = std::max(mx, w), mn = std::min(mn, w);
        o << "work a GPU (query-key pairs): " << mn << " to " << mx << "; balance (mean / max) "
          << fmt("%.3f", pr.balance) << "\n";
        o << "bytes over each link, one way: " << human_bytes(double(pr.link_bytes)) << "\n";
        o << "time (each GPU's compute at the ideal machine, rung 2 of docs/timing.md's ladder, or the rate given; "
             "transfers at the link): "
          << ms(pr.time_s) << " ms (compute alone " << ms(pr.compute_only_s) << " ms, all GPUs busy " << ms(pr.busy_s)
          << " ms); perfect scaling " << ms(pr.ideal_s) << " ms (P x one GPU on its " << p.tokens_per_gpu()
          << " tokens: " << ms(pr.single_gpu_s) << " ms each); scaling efficiency " << fmt("%.1f", 100 * pr.efficiency)
          << "%\n";
        if (pr.break_even_tokens > 0)
            o << "break-even: " << pr.break_even_tokens << " tokens a GPU (" << pr.break_even_note << ")\n";
        else if (pr.break_even_tokens < 0)
            o << "break-even: none (" << pr.break_even_note << ")\n";
        if (pr.break_even_bandwidth_tokens > 0)
            o << "  without fixed costs (launches, latency): " << fmt("%.0f", pr.break_even_bandwidth_tokens)
              << " tokens a GPU, where the step's arithmetic at this size's time per pair equals bytes / link "
                 "bandwidth\n";
    }
    if (r.passes.size() > 1)
        o << "\ntotal: " << ms(r.time_s) << " ms, perfect scaling " << ms(r.ideal_s) << " ms, efficiency "
          << fmt("%.1f", 100 * r.efficiency) << "%\n";
    if (!checks.empty())
        o << "\ncheck: the ring run on the CPU (" << P
          << " slices, LSE merges; dK, dV travelling) against one-device float64 attention:\n";
    for (const auto& [name, vs] : checks)
        o << "  " << name << ": max abs " << fmt("%.3g", vs.max_abs) << ", relative Frobenius "
          << fmt("%.3g", vs.rel_frobenius) << "\n";
    return o.str();
}

}  // namespace report
