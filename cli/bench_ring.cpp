// cli/bench_ring.cpp — flashsim bench --ring P: ring attention with the kernels.
#include <nlohmann/json.hpp>

#include <algorithm>
#include <chrono>
#include <cmath>
#include <cstdio>
#include <ctime>
#include <iostream>
#include <string>
#include <vector>

#include "cli/bench.hpp"
#include "cli/commands.hpp"
#include "cuda/api.hpp"
#include "sim/footprint.hpp"
#include "sim/kernel_model.hpp"
#include "sim/knobs.hpp"
#include "sim/ring.hpp"

namespace bench {

using nlohmann::json;

// flashsim bench --ring P: ring attention with the kernels, beside one GPU on the whole problem
// and on a device's share, and the simulator's ring for P GPUs.
int run_ring_bench(const BenchArgs& a) {
    if (const int rc = check_device_and_dtype(a)) return rc;
    const auto dt = sim::parse_dtype(a.dtype);
    const auto layout = sim::parse_enum<sim::RingLayout>(a.ring_layout);
    if (!layout) throw std::runtime_error("unknown --ring-layout '" + a.ring_layout + "'; use balanced or contiguous");
    fcuda::RingTransport transport = fcuda::RingTransport::emulated;
    if (a.ring_transport == "nccl")
        transport = fcuda::RingTransport::nccl;
    else if (a.ring_transport != "emulated")
        throw std::runtime_error("unknown --ring-transport '" + a.ring_transport + "'; use emulated or nccl");
    const std::vector<std::string> kernels = a.variants.empty() ? std::vector<std::string>{"flash2h"} : a.variants;
    bool grads = false;
    for (const auto& ps : a.passes) {
        if (ps == "backward" || ps == "both")
            grads = true;
        else if (ps != "forward")
            throw std::runtime_error("--ring takes --pass forward or backward (the backward runs the forward too)");
    }
    const std::vector<int64_t> seqs = a.seqs;
    const std::vector<int64_t> dims = a.dims_given ? a.head_dims : std::vector<int64_t>{128};
    const sim::Machine& machine = bench_machine(a);
    const std::time_t started = std::time(nullptr);
    json rows = json::array();
    bool all_ok = true;
    std::printf("%-8s %-9s %2s %-10s %6s %4s %-6s %9s %9s %9s %9s %8s %8s %s\n", "kernel", "transport", "P", "layout",
                "N", "d", "mask", "ring_fwd", "one_fwd", "ring_bwd", "one_bwd", "sim_fwd", "sim_bwd", "ok");
    for (const auto& kernel : kernels)
        for (int64_t d : dims)
            for (int64_t N : seqs) {
                sim::RingProblem rp;
                rp.attn.batch = a.batch > 0 ? a.batch : std::max<int64_t>(1, 16384 / N);
                rp.attn.heads = a.heads > 0 ? a.heads : 2048 / d;
                rp.attn.seq = N;
                rp.attn.head_dim = d;
                rp.attn.dtype = *dt;
                rp.attn.causal = a.causal;
                rp.attn.seed = a.seed;
                rp.gpus = a.ring;
                rp.layout = *layout;
                rp.pass = grads ? sim::Pass::both : sim::Pass::forward;
                json row{{"variant", kernel},
                         {"pass", "ring"},
                         {"transport", a.ring_transport},
                         {"gpus", rp.gpus},
                         {"layout", a.ring_layout},
                         {"batch", rp.attn.batch},
                         {"heads", rp.attn.heads},
                         {"seq", N},
                         {"head_dim", d},
                         {"dtype", a.dtype},
                         {"causal", a.causal}};
                row["knobs"] = sim::knob_settings();  // the FLASHSIM_* set for this row (docs/knobs.md)
                std::cerr << "bench: ring " << kernel << " P=" << rp.gpus << " " << a.ring_layout << " N=" << N
                          << " d=" << d << (a.causal ? " causal" : "") << " (" << a.ring_transport << ") ...\n";
                try {
                    rp.validate();
                    row["tokens_per_gpu"] = rp.tokens_per_gpu();
                    row["chunk"] = rp.chunk();
                    fcuda::RunOptions o;
                    o.repeats = a.repeats;
                    o.warmup = a.warmup;
                    o.check_reference = !a.no_check;
                    o.counters = false;
                    o.check_standard = false;
                    const fcuda::RingMeasurement m = fcuda::run_ring(rp, kernel, transport, o);
                    row["gpus_used"] = m.gpus_used;
                    row["forward_ms"] = m.forward_ms;
                    row["backward_ms"] = grads ? json(m.backward_ms) : json(nullptr);
                    row["repeats"] = m.repeats;
                    row["blocks_last_pass"] = m.blocks;
                    row["sends_last_pass"] = m.sends;
                    row["link_bytes_last_pass"] = m.link_bytes;
                    const char* names[] = {"O", "dQ", "dK", "dV"};
                    json vs1 = json::object(), vsr = json::object(), onr = json::object(), bd = json::object();
                    for (size_t k = 0; k < m.vs_single.size(); ++k) {
                        vs1[names[k]] = stats_json(m.vs_single[k]);
                        bd[names[k]] = m.bound[k];
                        if (k < m.vs_reference.size()) {
                            vsr[names[k]] = stats_json(m.vs_reference[k]);
                            onr[names[k]] = stats_json(m.single_vs_reference[k]);
                        }
                    }
                    row["vs_single"] = vs1;
                    row["vs_reference"] = m.vs_reference.empty() ? json(nullptr) : vsr;
                    row["single_vs_reference"] = m.single_vs_reference.empty() ? json(nullptr) : onr;
                    row["bound"] = bd;
                    row["bar"] = m.vs_reference.empty()
                                     ? "|ring - one call| <= K ulps at the one call's largest magnitude, K = chunks"
                                     : "ring error <= 2 x one call's error + K ulps at the reference's largest "
                                       "magnitude, K = chunks";
                    row["nonfinite"] = m.nonfinite;
                    // one GPU, one call: the whole problem, and one device's share (N/P tokens, same mask)
                    fcuda::RunOptions one = o;
                    one.check_reference = false;
                    auto time_one = [&](const sim::Problem& q, fcuda::Pass ps) {
                        fcuda::RunOptions x = one;
                        x.pass = ps;
                        return fcuda::run(q, kernel, x).ms_median;
                    };
                    sim::Problem share = rp.attn;
                    share.seq = rp.tokens_per_gpu();
                    const double one_f = time_one(rp.attn, fcuda::Pass::forward);
                    const double share_f = time_one(share, fcuda::Pass::forward);
                    const double one_b = grads ? time_one(rp.attn, fcuda::Pass::backward) : 0;
                    const double share_b = grads ? time_one(share, fcuda::Pass::backward) : 0;
                    const double scale = fcuda::attention_flops(rp.attn, fcuda::Pass::forward) /
                                         (double(rp.gpus) * fcuda::attention_flops(share, fcuda::Pass::forward));
                    row["single"] = json{{"forward_ms", one_f}, {"backward_ms", grads ? json(one_b) : json(nullptr)}};
                    row["share"] = json{{"seq", share.seq},
                                        {"forward_ms", share_f},
                                        {"backward_ms", grads ? json(share_b) : json(nullptr)}};
                    // the ideal: the whole work at P x one GPU's throughput on its share
                    row["ideal_forward_ms"] = share_f * scale;
                    row["ideal_backward_ms"] = grads ? json(share_b * scale) : json(nullptr);
                    if (m.gpus_used == rp.gpus) {
                        row["efficiency_forward"] = share_f * scale / m.forward_ms;
                        if (grads)
                            row["efficiency_both"] = (share_f + share_b) * scale / (m.forward_ms + m.backward_ms);
                    } else {
                        // one GPU did every device's work: set it against one call on the whole problem
                        row["one_gpu_work_ratio_forward"] = one_f / m.forward_ms;
                        if (grads) row["one_gpu_work_ratio_backward"] = one_b / m.backward_ms;
                    }
                    // the simulator's ring on P GPUs, the kernel's model timing each block
                    row["sim_ring"] = sim_ring_json(rp, machine, kernel, grads);
                    const double sim_f = row["sim_ring"].value("forward_ms", 0.0);
                    const double sim_b = grads ? row["sim_ring"].value("backward_ms", 0.0) : 0.0;
                    row["ok"] = m.ok;
                    all_ok = all_ok && m.ok;
                    std::printf("%-8s %-9s %2lld %-10s %6lld %4lld %-6s %9.3f %9.3f %9.3f %9.3f %8.3f %8.3f %s\n",
                                kernel.c_str(), a.ring_transport.c_str(), (long long)rp.gpus, a.ring_layout.c_str(),
                                (long long)N, (long long)d, a.causal ? "causal" : "none", m.forward_ms, one_f,
                                m.backward_ms, one_b, sim_f, sim_b, m.ok ? "yes" : "NO");
                    std::fflush(stdout);
                } catch (const std::exception& e) {
                    row["error"] = e.what();
                    row["ok"] = false;
                    all_ok = false;
                    std::printf("ring %s P=%lld N=%lld d=%lld error: %s\n", kernel.c_str(), (long long)rp.gpus,
                                (long long)N, (long long)d, e.what());
                }
                rows.push_back(row);
                if (!write_doc(a.json, rows, started)) return 1;
            }
    if (!a.json.empty()) std::cerr << "bench: wrote " << a.json << "\n";
    return all_ok ? 0 : 1;
}

}  // namespace bench
