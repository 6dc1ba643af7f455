#include "sim/machine.hpp"

#include <algorithm>
#include <cctype>

#include "sim/problem.hpp"

namespace sim {

namespace {
constexpr double KiB = 1024.0, MiB = 1024.0 * 1024.0, GiB = 1024.0 * MiB, GB = 1e9, TB = 1e12, TF = 1e12;
}

// Figures: vendor datasheets (NVIDIA A100 datasheet 2021; H100 datasheet and Hopper whitepaper 2022;
// H200 datasheet 2024; Ada whitepaper for the RTX 4090) and the CUDA C++ Programming Guide's table
// of per-block shared memory (sm_80: 163 KiB, sm_86/89: 99 KiB, sm_90: 227 KiB opt-in).
// Matrix rates are dense (no sparsity), fp16/bf16 inputs with fp32 accumulation.
// L2 bandwidth is not on datasheets; it is an estimate of about 2.5x HBM, stated as such.
// Memory capacities: a datasheet's "141 GB", "80 GB", "40 GB", "24 GB" are binary gigabytes (the chips hold
// 2^30-byte multiples: our H200 reports 150.1e9 bytes in all to cudaMemGetInfo, 139.8 GiB, more than
// 141e9 could hold (results/h200/fit.json), and an H100 80GB HBM3 lent on 2026-12-06 85.0e9
// (nvidia-smi: 81,559 MiB)), so the presets hold them as GiB.
static void set_interconnect(std::vector<Machine>& presets);

const std::vector<Machine>& machine_presets() {
    static const std::vector<Machine> presets = [] {
        std::vector<Machine> list = {
            {"H200", "NVIDIA H200 SXM 141 GB", 141 * GiB, 4.8 * TB, static_cast<int64_t>(227 * KiB), 132, 989.4 * TF,
             66.9 * TF, 60 * MiB, 12 * TB, 1, 4.3 * TB, 788 * TF,
             "H200 datasheet (141 GB HBM3e, 4.8 TB/s; compute as H100 SXM); 227 KiB shared memory per block "
             "(CUDA guide, sm_90); 132 SMs and 60 MiB L2 as cudaGetDeviceProperties reports on our H200; "
             "measured: 4.3 TB/s device copy, 788 TFLOP/s bf16 8192^3 GEMM (our H200, 2026-10)",
             139 * GiB,
             "about 139 GiB: the GPU memory the device tool reports for our lent H200 (the datasheet's "
             "141 GB is the card's capacity; the driver and a CUDA context keep some); `flashsim bench --fit` "
             "records cudaMemGetInfo's free bytes on the card",
             16.0 * 132 * 1.83e9, 128.0 * 132 * 1.83e9,
             "exp: 16 ex2 per clock per SM (CUDA guide, arithmetic instruction throughput, cc 9.0) x 132 SMs x "
             "1.83 GHz = 3.9 T/s, the figure FlashAttention-3 (Shah et al. 2024) gives for the H100 SXM5; shared "
             "memory: 32 banks x 4 B per clock per SM x 132 x 1.83 GHz"},
            {"H100-SXM", "NVIDIA H100 SXM5 80 GB", 80 * GiB, 3.35 * TB, static_cast<int64_t>(227 * KiB), 132,
             989.4 * TF, 66.9 * TF, 50 * MiB, 10 * TB, 1, 0, 0,
             "H100 datasheet (80 GB HBM3, 3.35 TB/s, 989 TFLOP/s dense bf16, 67 TFLOP/s fp32); Hopper whitepaper "
             "(132 SMs, 50 MB L2); 227 KiB shared memory per block (CUDA guide, sm_90)",
             0, "", 16.0 * 132 * 1.83e9, 128.0 * 132 * 1.83e9,
             "exp: 16 ex2 per clock per SM (CUDA guide, arithmetic instruction throughput, cc 9.0) x 132 SMs x "
             "1.83 GHz = 3.9 T/s, the figure FlashAttention-3 (Shah et al. 2024) gives for the H100 SXM5; shared "
             "memory: 32 banks x 4 B per clock per SM x 132 x 1.83 GHz"},
            {"A100-40GB", "NVIDIA A100 SXM 40 GB", 40 * GiB, 1.555 * TB, static_cast<int64_t>(163 * KiB), 108, 312 * TF,
             19.5 * TF, 40 * MiB, 4 * TB, 1, 0, 0,
             "A100 datasheet (40 GB HBM2, 1,555 GB/s, 312 TFLOP/s fp16 tensor, 19.5 TFLOP/s fp32); Ampere "
             "whitepaper (108 SMs, 40 MB L2); 163 KiB shared memory per block (CUDA guide, sm_80)",
             0, "", 16.0 * 108 * 1.41e9, 128.0 * 108 * 1.41e9,
             "exp: 16 ex2 per clock per SM (CUDA guide, cc 8.0) x 108 SMs x 1.41 GHz boost; shared memory: "
             "32 banks x 4 B per clock per SM x 108 x 1.41 GHz"},
            {"A100-80GB", "NVIDIA A100 SXM 80 GB", 80 * GiB, 2.039 * TB, static_cast<int64_t>(163 * KiB), 108, 312 * TF,
             19.5 * TF, 40 * MiB, 5 * TB, 1, 0, 0,
             "A100 datasheet (80 GB HBM2e, 2,039 GB/s SXM, 312 TFLOP/s fp16 tensor, 19.5 TFLOP/s fp32); "
             "108 SMs, 40 MB L2; 163 KiB shared memory per block (CUDA guide, sm_80)",
             0, "", 16.0 * 108 * 1.41e9, 128.0 * 108 * 1.41e9,
             "exp: 16 ex2 per clock per SM (CUDA guide, cc 8.0) x 108 SMs x 1.41 GHz boost; shared memory: "
             "32 banks x 4 B per clock per SM x 108 x 1.41 GHz"},
            {"RTX4090", "NVIDIA GeForce RTX 4090 24 GB", 24 * GiB, 1.008 * TB, static_cast<int64_t>(99 * KiB), 128,
             165.2 * TF, 82.6 * TF, 72 * MiB, 3 * TB, 1, 0, 0,
             "Ada whitepaper (24 GB GDDR6X, 1,008 GB/s, 128 SMs, 72 MB L2, 165.2 TFLOP/s fp16 tensor with fp32 "
             "accumulate, 82.6 TFLOP/s fp32); 99 KiB shared memory per block (CUDA guide, sm_89)",
             0, "", 16.0 * 128 * 2.52e9, 128.0 * 128 * 2.52e9,
             "exp: 16 ex2 per clock per SM (CUDA guide, cc 8.9) x 128 SMs x 2.52 GHz boost; shared memory: "
             "32 banks x 4 B per clock per SM x 128 x 2.52 GHz"},
        };
        set_interconnect(list);
        for (auto& m : list)  // CUDA guide, "Compute Capabilities": Hopper 9.0, A100 8.0, Ada 8.9
            m.compute_capability = m.name.rfind("H", 0) == 0      ? 90
                                   : m.name.rfind("A100", 0) == 0 ? 80
                                   : m.name == "RTX4090"          ? 89
                                                                  : 0;
        // FP8: H100 SXM datasheet, 3,958 TFLOP/s FP8 tensor "with sparsity", dense half of it, 1,979,
        // twice the dense bf16 989; the H200's datasheet gives the same compute. The A100 has no FP8;
        // the RTX 4090's FP8 runs on mma.sync, which the FP8 model does not cover (left 0).
        for (auto& m : list)
            if (m.name == "H200" || m.name == "H100-SXM") m.matmul_flops_fp8 = 1978.9 * TF;
        // The H200's L2 as a re-read sees it: the same S MiB read twice by one grid under the DRAM
        // counters (results/h200/counters_probe_reread.json, 2026-12-04): the second read found
        // all of 8 and 16 MiB, 84% of 24, 45% of 32, 17% of 40, none of 48 or more. Half of it at
        // about 31 MiB: about half the 60 MiB cudaGetDeviceProperties reports.
        list[0].l2_reuse_bytes = 31 * MiB;
        list[0].l2_reuse_source =
            "measured: the same S MiB read twice by one grid; the second read half served by L2 at S = 31 MiB "
            "(all at 16, none at 48; bench --counters-probe, reread_S, 2026-12-04)";
        return list;
    }();
    return presets;
}

// The interconnect of each preset, set by name so that the table above stays one row a GPU.
// NVLink figures are NVIDIA's per-GPU totals over both directions; a ring sends one way to its
// next neighbour and receives the other way from its previous one, so each direction gets half.
// Latencies are assumptions (a few microseconds for a send/recv pair between GPUs, as NCCL's
// small-message timings on NVLink show), stated as such in docs/simulator.md.
static void set_interconnect(std::vector<Machine>& presets) {
    for (auto& m : presets) {
        if (m.name == "H200" || m.name == "H100-SXM") {
            m.link_name = "NVLink 4 (18 links a GPU, through NVSwitch)";
            m.link_bandwidth = 450 * GB;
            m.link_latency_s = 5e-6;
            m.link_source =
                "H100/H200 SXM datasheets: NVLink 900 GB/s per GPU, both directions together (18 links x "
                "50 GB/s); 450 GB/s each way; latency 5 us assumed";
        } else if (m.name.rfind("A100", 0) == 0) {
            m.link_name = "NVLink 3 (12 links a GPU, through NVSwitch)";
            m.link_bandwidth = 300 * GB;
            m.link_latency_s = 5e-6;
            m.link_source =
                "A100 datasheet: NVLink 600 GB/s per GPU, both directions together (12 links x 50 GB/s); "
                "300 GB/s each way; latency 5 us assumed";
        } else if (m.name == "RTX4090") {
            m.link_name = "PCIe 4.0 x16 (no NVLink)";
            m.link_bandwidth = 31.5 * GB;
            m.link_latency_s = 10e-6;
            m.link_source =
                "PCIe 4.0: 16 GT/s a lane x 16 lanes x 128/130 encoding = 31.5 GB/s each way (the RTX 4090 "
                "has no NVLink); latency 10 us assumed (peer copies may pass through host memory)";
        }
    }
}

const Machine& find_machine(const std::string& name) {
    auto lower = [](std::string s) {
        std::transform(s.begin(), s.end(), s.begin(), [](unsigned char c) { return std::tolower(c); });
        s.erase(std::remove(s.begin(), s.end(), '-'), s.end());
        return s;
    };
    const std::string want = lower(name);
    for (const auto& m : machine_presets())
        if (lower(m.name) == want) return m;
    std::string known;
    for (const auto& m : machine_presets()) known += (known.empty() ? "" : ", ") + m.name;
    throw Error("unknown GPU preset '" + name + "'; known presets: " + known);
}

}  // namespace sim
