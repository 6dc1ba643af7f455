// flashsim ring — ring attention over P GPUs (simulated): the schedule, bytes per link and step,
// predicted step times with each transfer overlapping the step's compute, scaling efficiency and
// the break-even tokens per GPU; with --check the ring run on the CPU (forward, and backward with
// --pass backward|both) against one-device float64 attention.
//
//   flashsim ring --gpus 8 --seq 131072 --head-dim 128 [--heads 32 --batch 1 --causal]
//                 [--layout balanced|contiguous] [--gpu H200] [--dtype bf16] [--pass forward|backward|both]
//                 [--compute simulate|flops | --kernel flash2h] [--link-gbps G] [--latency-us U] [--check] [--json]
#include <iostream>
#include <cmath>
#include <memory>

#include "report/kernel_report.hpp"
#include "cli/commands.hpp"
#include "report/ring.hpp"

namespace {
struct RingArgs {
    ProblemArgs shape;
    int64_t gpus = 0;
    std::string layout = "balanced", pass = "forward", compute = "simulate", ceilings = "measured", kernel;
    double link_gbps = 0, latency_us = -1, tflops = 0;
    bool check = false, json = false;
};
}  // namespace

void register_ring(CLI::App& app, int& rc) {
    auto a = std::make_shared<RingArgs>();
    a->shape.dtype = "bf16";
    auto* cmd = app.add_subcommand(
        "ring", "Ring attention over P GPUs (simulated): schedule, bytes per link, overlap, efficiency, break-even");
    cmd->add_option("--gpus,-P", a->gpus, "GPUs in the ring, P >= 1")->required();
    a->shape.add_to(cmd, true);
    cmd->add_option("--layout", a->layout, "balanced (GPU i holds chunks i and 2P-1-i) or contiguous")
        ->capture_default_str();
    cmd->add_option("--pass", a->pass, "forward, backward or both")->capture_default_str();
    cmd->add_option("--compute", a->compute,
                    "How a step's compute is timed: simulate (the simulator's timing model) or flops (FLOPs / rate)")
        ->capture_default_str();
    cmd->add_option("--kernel", a->kernel,
                    "Time a step with a CUDA kernel's model (flash2, flash2h, ...: `simulate --kernel`), with the "
                    "measured ceilings recorded for the preset (or the datasheet's with --ceilings datasheet)");
    cmd->add_option("--ceilings", a->ceilings, "measured or datasheet rates for the compute")->capture_default_str();
    auto* tflops =
        cmd->add_option("--tflops", a->tflops, "With --compute flops: TFLOP/s of one GPU (default: the preset's)");
    auto* gbps = cmd->add_option("--link-gbps", a->link_gbps,
                                 "Link bandwidth one way, GB/s (default: the preset's interconnect)");
    auto* latency =
        cmd->add_option("--latency-us", a->latency_us, "Latency of one send, microseconds (default: the preset's)");
    cmd->add_flag("--check", a->check,
                  "Run the ring on the CPU (P slices, LSE merges; with a backward pass the travelling dK, dV too) "
                  "and compare with one-device float64 attention");
    cmd->add_flag("--json", a->json, "Print one JSON object");
    cmd->callback([a, &rc, tflops, gbps, latency] {
        try {
            sim::RingProblem p;
            if (a->shape.window > 0 || a->shape.pad_left > 0)
                throw sim::Error("ring attention takes no --window or --pad-left (causal or no mask)");
            if (a->shape.sram != 0)
                throw sim::Error(
                    "ring takes no --sram: a step's blocks are timed with the preset's shared memory (or "
                    "the --kernel's own tiles); `flashsim simulate --sram` varies it for one GPU");
            p.attn = a->shape.problem();
            p.gpus = a->gpus;
            const auto layout = sim::parse_enum<sim::RingLayout>(a->layout);
            if (!layout) throw sim::Error("unknown --layout '" + a->layout + "'; use balanced or contiguous");
            p.layout = *layout;
            const auto pass = sim::parse_pass(a->pass);
            if (!pass) throw sim::Error("unknown --pass '" + a->pass + "'; use forward, backward or both");
            p.pass = *pass;
            sim::RingConfig c;
            if (a->compute == "flops")
                c.compute = sim::RingCompute::flops;
            else if (a->compute != "simulate")
                throw sim::Error("unknown --compute '" + a->compute + "'; use simulate or flops");
            if (a->ceilings == "datasheet")
                c.ceilings = sim::Ceilings::datasheet;
            else if (a->ceilings != "measured")
                throw sim::Error("unknown --ceilings '" + a->ceilings + "'; use measured or datasheet");
            // a rate given is used as given: a number in a range a GPU or link could have, or refused
            auto in_range = [](double x, double lo, double hi) { return std::isfinite(x) && x >= lo && x <= hi; };
            if (tflops->count()) {
                if (a->compute != "flops")
                    throw sim::Error("--tflops sets the rate of --compute flops; add --compute flops, or leave it out");
                if (!in_range(a->tflops, 1e-3, 1e6) || a->tflops <= 0)
                    throw sim::Error(
                        "--tflops must be a number above 0.001 and at most 1,000,000 (TFLOP/s of one GPU)");
                c.flops_rate = a->tflops * 1e12;
            }
            if (gbps->count()) {
                if (!in_range(a->link_gbps, 1e-3, 1e6))
                    throw sim::Error("--link-gbps must be a number from 0.001 to 1,000,000 (GB/s one way)");
                c.link_bandwidth = a->link_gbps * 1e9;
            }
            if (latency->count()) {
                if (!in_range(a->latency_us, 0, 1e6))
                    throw sim::Error("--latency-us must be a number from 0 to 1,000,000 (microseconds a send)");
                c.link_latency_s = a->latency_us * 1e-6;
            }
            const sim::Machine& m = a->shape.machine();
            p.validate();
            if (!a->kernel.empty()) {
                if (a->compute != "simulate") throw sim::Error("--kernel and --compute flops exclude each other");
                c.compute = sim::RingCompute::kernel;
                c.kernel = a->kernel;
                (void)sim::kernel_profile(a->kernel, sim::Pass::forward, p.attn.head_dim);  // refuses an unknown one
                if (c.ceilings == sim::Ceilings::measured) {
                    if (const auto r = report::measured_rates(m, p.attn.dtype, "")) c.rates = *r;
                }
            }
            if (a->check && double(p.attn.batch * p.attn.heads) * double(p.attn.seq) * double(p.attn.seq) *
                                    double(p.attn.head_dim) >
                                2e10)
                throw sim::Error(
                    "--check on this shape would take minutes on the CPU (B*H*N*N*d > 2e10); check a "
                    "smaller N");
            const sim::RingResult r = sim::simulate_ring(p, m, c);
            report::RingChecks checks;
            if (a->check) {
                sim::Inputs in = sim::generate_inputs(p.attn);
                const sim::RingNumerics out = sim::run_ring(p, in);
                checks.emplace_back(
                    "O", sim::validate(out.O, sim::attention_reference(p.attn, in.Q, in.K, in.V), p.attn.dtype));
                if (p.pass != sim::Pass::forward) {
                    in.dO = sim::generate_input(p.attn, sim::InputTensor::dO);
                    const sim::RingGradients g = sim::run_ring_backward(p, in, out);
                    const sim::Gradients ref = sim::attention_backward_reference(p.attn, in.Q, in.K, in.V, in.dO);
                    auto as_float = [](const sim::TensorD& t) {
                        sim::TensorF f(t.batch, t.heads, t.rows, t.cols);
                        for (size_t i = 0; i < t.data.size(); ++i) f.data[i] = static_cast<float>(t.data[i]);
                        return f;
                    };
                    checks.emplace_back("dQ", sim::validate(as_float(g.dQ), ref.dQ, p.attn.dtype));
                    checks.emplace_back("dK", sim::validate(as_float(g.dK), ref.dK, p.attn.dtype));
                    checks.emplace_back("dV", sim::validate(as_float(g.dV), ref.dV, p.attn.dtype));
                }
            }
            for (const auto& [name, st] : checks) require_finite(name + " (the ring on the CPU)", st);
            if (a->json)
                std::cout << report::ring_json(r, checks).dump(2) << "\n";
            else
                std::cout << report::ring_text(r, checks);
            rc = 0;
        } catch (const sim::Error& e) {
            print_error("ring", e.what());
            rc = 1;
        }
    });
}
