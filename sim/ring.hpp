// sim/ring.hpp — ring attention: exact attention over P GPUs when the sequence outgrows one (issue 16).
//
//   P devices in a ring, each holding N/P of the tokens (its queries and its own K/V slice):
//   step s = 0 .. P-1: device i attends its queries to the K/V slice of device j = (i - s) mod P,
//                      while it sends the slice it holds to device i+1 and receives the next
//                      one from device i-1 (none after the last step)
//   forward:  each step gives a partial output and LSE for the device's rows; they are merged by
//             log-sum-exp (as split-KV decoding merges its splits, sim/decode.hpp)
//   backward: dQ stays on its device; dK, dV accumulators (float32) travel with their K/V slice
//             and arrive home after P sends (K/V itself moves P-1 times)
//
// Layouts of a causal sequence cut into 2P chunks of c = N/(2P) tokens:
//   contiguous: device i holds tokens [i·N/P, (i+1)·N/P): the last device sees every slice, the
//               first sees only its own, and the ring waits for the slowest each step;
//   balanced:   device i holds chunks i and 2P-1-i, so every device does the same work each step.
//
// The model (docs/simulator.md, "Ring attention"): a step takes max(compute of its slowest
// device, the transfer of the next slice); compute is sim::simulate's predicted time for the
// step's (query chunk, key chunk) blocks, each a square sub-problem of c tokens (or a flops rate).
#pragma once
#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "sim/enum_names.hpp"
#include "sim/kernel_model.hpp"
#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"
#include "sim/tensor.hpp"

namespace sim {

enum class RingLayout { contiguous, balanced };
template <>
struct EnumNames<RingLayout> {
    static constexpr std::array<EnumName<RingLayout>, 2> table{
        {{RingLayout::contiguous, "contiguous"}, {RingLayout::balanced, "balanced"}}};
};

// How a block of (query chunk, key chunk) is timed.
enum class RingCompute {
    simulate,  // sim::simulate (flash2, the preset's ceilings, L2 model) on a c-token sub-problem
    kernel,    // sim::predict_kernel: a CUDA kernel's model (RingConfig::kernel, e.g. flash2h) on it
    flops      // the block's matmul FLOPs over RingConfig::flops_rate (no fill or tile effects)
};

struct RingProblem {
    Problem attn;  // B, H, N (all tokens), d, dtype, causal; window and pad_left must be 0
    int64_t gpus = 2;
    RingLayout layout = RingLayout::balanced;
    Pass pass = Pass::forward;

    int64_t chunks_per_gpu() const { return layout == RingLayout::balanced ? 2 : 1; }
    int64_t chunk() const { return attn.seq / (gpus * chunks_per_gpu()); }  // c, tokens a chunk
    int64_t tokens_per_gpu() const { return attn.seq / gpus; }
    // Throws sim::Error naming the bad field (P < 1, N not a multiple of P or 2P, a mask other
    // than causal); the message names the nearest N the layout accepts.
    void validate() const;
};

struct RingConfig {
    RingCompute compute = RingCompute::simulate;
    double flops_rate = 0;           // flops mode: FLOP/s of one GPU (0: the preset's, measured when it has one)
    std::string kernel = "flash2h";  // kernel mode: the kernel whose model times a block
    KernelRates rates;               // kernel mode: its rates (hbm = 0: the preset's datasheet_rates)
    Ceilings ceilings = Ceilings::measured;
    L2Mode l2 = L2Mode::automatic;
    double link_bandwidth = 0;   // bytes/s one way; 0: the preset's
    double link_latency_s = -1;  // < 0: the preset's
    bool merge_cost = true;      // time each block's merge (forward) and accumulations (backward) at HBM speed
    bool break_even = true;      // search the break-even tokens per GPU
};

// What one chunk of queries does with one chunk of keys.
enum class BlockKind { none, full, diagonal };

// One device in one step.
struct RingDeviceStep {
    int64_t device = 0;
    int64_t kv_from = 0;  // whose K/V slice it attends to
    int64_t full_blocks = 0, diagonal_blocks = 0;
    int64_t pairs = 0;     // (query, key) pairs it computes (a diagonal block of c: c(c+1)/2)
    double compute_s = 0;  // its kernels
    double merge_s = 0;    // merge / accumulation traffic at HBM speed
};

struct RingStep {
    int pass = 0;  // 0 forward, 1 backward
    int64_t step = 0;
    std::vector<RingDeviceStep> devices;
    double compute_s = 0;    // the slowest device's compute + merge
    int64_t send_bytes = 0;  // what each device sends to its next neighbour during this step
    int64_t kv_bytes = 0;    // of which the next K and V slices
    int64_t grad_bytes = 0;  // of which the dK, dV accumulators (backward)
    double transfer_s = 0;   // latency + send_bytes / link bandwidth (0 with nothing to send)
    double time_s = 0;       // max(compute_s, transfer_s): the transfer overlaps the compute
    double exposed_s = 0;    // time_s - compute_s: what the link adds
};

struct RingPassResult {
    int pass = 0;
    std::vector<RingStep> steps;
    double tail_s = 0;          // backward: the last dK, dV send home, after the last compute (exposed)
    double time_s = 0;          // sum of the step times + tail
    double compute_only_s = 0;  // sum of the steps' compute (the ring's time with a free link)
    double busy_s = 0;          // compute of all devices, all steps, divided by P (perfect balance)
    // The P devices' work done by one GPU, as `flashsim bench --ring P` emulates the ring when one GPU
    // is lent: every device's compute and merges in series (each kernel fills the GPU), the sends
    // (device copies on their own streams) hidden behind them. What the emulated rows are checked against.
    double one_gpu_s = 0;
    int64_t link_bytes = 0;                 // bytes over each link, one direction, the whole pass
    std::vector<int64_t> pairs_per_device;  // work of each device over the pass
    double single_gpu_s = 0;                // one GPU's time on its share alone (N/P tokens, same mask)
    double ideal_s = 0;                     // the ideal: work(N) / (P x single-GPU throughput on N/P)
    double efficiency = 0;                  // ideal_s / time_s
    double balance = 0;                     // mean over max of pairs_per_device (1: even)
    // break-even: the fewest tokens per GPU at which a steady step's compute covers its transfer
    int64_t break_even_tokens = 0;  // 0: not searched or none (P = 1); -1: none below the search cap
    std::string break_even_note;
    // The same without fixed costs (launches, latency): the tokens per GPU at which a steady step's
    // arithmetic, at the time per pair the compute model gives at this problem's chunk, equals the
    // send's bytes over the link bandwidth. 0 when P = 1.
    double break_even_bandwidth_tokens = 0;
};

struct RingResult {
    RingProblem problem;
    Machine machine;
    RingConfig config;
    double link_bandwidth = 0, link_latency_s = 0, hbm_bandwidth = 0;
    std::string compute_note;               // how a block is timed
    std::vector<int64_t> chunks_of_device;  // 2 per device (balanced) or 1, chunk indices, device-major
    std::vector<RingPassResult> passes;     // forward and/or backward
    double time_s = 0;                      // all passes
    double ideal_s = 0;
    double efficiency = 0;
    // With numerics (run_ring): compared with attention_reference.
};

// Throws sim::Error on a bad problem, an unknown link (a preset without an interconnect and no
// link bandwidth given) or a bad config.
RingResult simulate_ring(const RingProblem& p, const Machine& m, const RingConfig& c);

// The chunk indices device i holds (ascending order of tokens).
std::vector<int64_t> ring_chunks(const RingProblem& p, int64_t device);
// What query chunk a does with key chunk b under the mask.
BlockKind block_kind(bool causal, int64_t a, int64_t b);
// The K/V slice device i holds at step s.
inline int64_t ring_source(int64_t gpus, int64_t device, int64_t step) {
    return ((device - step) % gpus + gpus) % gpus;
}

// The ring on real numbers, on the CPU: each device folds every arriving K/V slice into its rows
// (an online softmax over the slice's tiles of `tile_keys`, float32, then a log-sum-exp merge of
// the step's partial (O_s, LSE_s) into the running (O, LSE)), exactly in the schedule above.
// Returns O (B, H, N, d) in float32, unrounded, and the LSE of every row (natural log).
struct RingNumerics {
    TensorF O;
    std::vector<double> lse;  // (B·H·N)
    int64_t merges = 0;       // LSE merges performed (rows x steps with work)
};
RingNumerics run_ring(const RingProblem& p, const Inputs& in, int64_t tile_keys = 64);

// The backward on real numbers (float64): dQ accumulated on each device, dK and dV accumulated in
// buffers that travel with their K/V slice and arrive home after P sends. Uses the forward's O
// and LSE (from run_ring) as a device would.
struct RingGradients {
    TensorD dQ, dK, dV;
    int64_t grad_sends = 0;  // dK/dV accumulator sends, all devices (P per slice)
    int64_t kv_sends = 0;    // K/V slice sends, all devices (P-1 per slice)
};
RingGradients run_ring_backward(const RingProblem& p, const Inputs& in, const RingNumerics& fwd);

}  // namespace sim
