// sim/machine.hpp — the machine model: HBM, L2, on-chip SRAM per SM, SM count, arithmetic rates.
// Presets are data (sim/machine.cpp), each with the source of its figures.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

namespace sim {

struct Machine {
    std::string name;          // preset key, e.g. "H200"
    std::string description;   // e.g. "NVIDIA H200 SXM 141 GB"
    double hbm_bytes = 0;      // HBM capacity
    double hbm_bandwidth = 0;  // bytes/s, datasheet
    int64_t sram_bytes = 0;    // on-chip shared memory one thread block may use (the paper's M, in bytes)
    int sm_count = 0;
    double matmul_flops = 0;  // dense fp16/bf16 tensor-core rate, fp32 accumulate, FLOP/s
    double scalar_flops = 0;  // non-tensor fp32 rate, FLOP/s (exp, max, rescale)
    double l2_bytes = 0;      // L2 capacity
    double l2_bandwidth = 0;  // bytes/s (estimate; see source)
    int blocks_per_sm = 1;    // resident thread blocks per SM for the L2 schedule
    // Measured ceilings (0 when none): what a copy and a large GEMM reached on a real card.
    double measured_hbm_bandwidth = 0;
    double measured_matmul_flops = 0;
    std::string source;  // where the figures come from
    // Memory a process can allocate on a fresh device (what cudaMemGetInfo reports free), when
    // known; 0: not recorded (the footprint fit then uses hbm_bytes). Source: usable_source.
    double hbm_usable_bytes = 0;
    std::string usable_source;
    // Rates the timing model does not use (yet); the lessons quote them. 0 when unknown.
    double exp_rate = 0;        // exponentials/s on the special-function units (MUFU ex2)
    double sram_bandwidth = 0;  // shared-memory bytes/s, whole chip (banks x 4 B x SMs x clock)
    std::string rates_source;   // where exp_rate and sram_bandwidth come from
    // The level between GPUs (ring attention, sim/ring.hpp): what one GPU can send to one ring
    // neighbour, one direction, while it receives as much from the other. 0: not known.
    std::string link_name{};    // e.g. "NVLink 4 (18 links, through NVSwitch)"
    double link_bandwidth = 0;  // bytes/s, one direction, peak (datasheet)
    double link_latency_s = 0;  // seconds a message costs before its first byte arrives (an assumption)
    std::string link_source{};  // where the two figures come from
    // The L2 capacity the walk replays (sim/l2.cpp): what a re-read finds, measured where known
    // (`flashsim bench --counters-probe`, reread_S); 0: the datasheet's l2_bytes. Never more than
    // l2_bytes, so a copy of a preset given a smaller L2 replays that.
    double l2_reuse_bytes = 0;
    std::string l2_reuse_source{};
    double l2_walk_bytes() const { return l2_reuse_bytes > 0 && l2_reuse_bytes < l2_bytes ? l2_reuse_bytes : l2_bytes; }
    // CUDA compute capability x 10 (90: Hopper, sm_90; 80: A100; 89: Ada), which decides the
    // instructions a kernel may use (wgmma and TMA need 90). 0: not known.
    int compute_capability = 0;
    // Dense FP8 (e4m3) tensor-core rate with fp32 accumulation, FLOP/s (datasheet); 0: the card has
    // none the kernel model uses (the FP8 forward is modelled on Hopper's wgmma).
    double matmul_flops_fp8 = 0;
    // The same rate measured (bench --ceilings, wgmma_e4m3); 0: not measured, the measured bf16 rate
    // times the datasheet's FP8-over-bf16 ratio stands in.
    double measured_matmul_flops_fp8 = 0;
};

const std::vector<Machine>& machine_presets();
// Case-insensitive lookup; throws sim::Error listing the known names when not found.
const Machine& find_machine(const std::string& name);

}  // namespace sim
