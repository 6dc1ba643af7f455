// cuda/api.hpp — what plain C++ (the CLI, tests) sees of the CUDA kernels. No CUDA headers here.
//
//   fcuda::run(problem, "flash2", options) ──► Measurement (times, TFLOP/s, errors, counters)
//   fcuda::compute(problem, "flash2", pass) ──► Outputs (O, LSE, dQ, dK, dV copied to the host)
//   fcuda::tile_config(variant, problem)    ──► the kernel's tiles and schedule as data (sim::KernelTiles),
//                                               which sim::sim_config turns into sim::simulate's config.
//
// Variants: "standard" (cuBLAS GEMMs + softmax kernel, S and P in HBM; forward and backward),
// "flash1" (the paper's Algorithm 1, forward only), "flash2" (FA2 order on tensor cores, forward
// and backward), "flash2h" (FA2 forward and backward on Hopper's wgmma + TMA; sm_90 only). Inputs come from sim::input_value (same seed: same bytes as sim::generate_inputs).
// Every function throws std::runtime_error with a message that says what was asked, what the card
// has (free memory, compute capability) and what to do; after a failed case, clear_error_state.
#pragma once
#include <cstdint>
#include <stdexcept>
#include <string>
#include <utility>
#include <vector>

#include "sim/decode.hpp"
#include "sim/kernel_config.hpp"
#include "sim/problem.hpp"
#include "sim/reference.hpp"
#include "sim/ring.hpp"
#include "sim/tensor.hpp"

namespace fcuda {

// A kernel's tiling and schedule, as data with fields (grid kind, dQ schedule, lone middles, launch
// per K/V block, ...): sim/kernel_config.hpp's KernelTiles, which sim::sim_config and sim::run_profile
// turn into the simulator's and the kernel model's configuration.
using TileConfig = sim::KernelTiles;

// step: a training step, the forward then the backward, timed as one (as a training loop calls
// them). A step's variant may pair two kernels, "FWD+BWD" (e.g. "flash2h+flash2": flash2h's
// forward, flash2's backward); a plain name pairs the variant with itself.
enum class Pass { forward, backward, step };
const char* pass_name(Pass p);
// "A+B" -> {A, B}; "A" -> {A, A}.
std::pair<std::string, std::string> step_pair(const std::string& variant);

// True when a CUDA device is visible; otherwise `why` (if given) says what cudaGetDeviceCount said.
bool device_available(std::string* why = nullptr);
std::string device_name();
// After a case failed: waits for the GPU, clears an error that is not sticky, and returns "" when the
// GPU is usable for the next case, else why not (a sticky error: the context is lost for this process).
// Every buffer the failed case allocated was freed as its exception unwound (RAII DeviceBuffer).
std::string clear_error_state();
std::string driver_version();  // e.g. "13.0" (what cudaDriverGetVersion reports)
std::vector<std::string> variants();
// False (and why) when this GPU cannot run the variant: flash2h needs compute capability 9.0.
bool variant_available(const std::string& variant, std::string* why = nullptr);
bool supports(const std::string& variant, Pass pass);
// Throws when the variant or the problem (d not in {64,128}, dtype not fp16/bf16) is unsupported.
TileConfig tile_config(const std::string& variant, const sim::Problem& p, Pass pass = Pass::forward);

// FLOPs counted the usual way: 4*B*H*N*N*d forward, half of it causal, x2.5 backward, x3.5 step.
double attention_flops(const sim::Problem& p, Pass pass);

struct RunOptions {
    Pass pass = Pass::forward;
    int warmup = 3;
    int repeats = 20;                   // timed runs; the median is reported
    bool flush_l2 = true;               // write 2x L2 between repeats
    int input_copies = 0;               // 0: rotate among enough copies to exceed 2x L2 when they are small
    bool check_reference = true;        // vs the float64 CPU reference, only when cheap (see max_reference_work)
    double max_reference_work = 4.0e9;  // B*H*N*N*d above which the CPU reference is skipped
    bool check_standard = true;         // vs the "standard" variant on the same inputs (any size)
    bool nvtx = false;                  // wrap the first timed run in an NVTX range "measure" (for ncu)
    bool counters = true;               // DRAM / L2 bytes of one extra run from CUPTI's range profiler
    int trace_runs = 0;                 // run_decode: traced calls after the timed ones (DecodeTrace)
    // run_decode: the machine preset its prediction is made for; empty: this card's
    // (sim::preset_for_device), else H200
    std::string machine;
};

struct Measurement {
    std::string variant;
    std::string l2_flush;  // how L2 was emptied before each timed call: write (memset) or read (FLASHSIM_L2_FLUSH)
    Pass pass = Pass::forward;
    double ms_median = 0, ms_min = 0, ms_max = 0;
    int repeats = 0;
    double tflops = 0;  // attention_flops / median time
    // Hardware counters of one run (CUPTI range profiler, in process): -1 when not read, and
    // counters_note says why and gives the equivalent ncu command.
    int64_t dram_read_bytes = -1, dram_write_bytes = -1, l2_bytes = -1;
    std::string counters_note;
    TileConfig tiles;          // the pass's kernel (a step: its backward's)
    TileConfig tiles_forward;  // a step only: its forward's kernel
    // Correctness of the checked run (the first, after poisoning). count == 0: not compared.
    sim::ErrorStats vs_reference;  // O vs float64 reference (forward), dQ/dK/dV (backward: worst; step: O too)
    sim::ErrorStats vs_standard;   // the same outputs vs the standard variant
    int64_t unwritten = 0;         // non-finite elements after the last timed run (must be 0)
    std::string note;
    // Device memory the pass holds, tracked from the harness's own allocations (not
    // cudaMemGetInfo): one set of inputs and outputs (Q, K, V, O, LSE; with a backward dO, dQ,
    // dK, dV) plus the variant's workspace after the pass (S, P, dP, dS of standard; flash1's
    // fp32 O, l, m; the dQ accumulator and D of the flash2 backwards). Input copies rotated
    // against the L2, the L2 flush buffer and cuBLAS's own workspace are not counted.
    int64_t peak_bytes = 0;
    // fp8 (flash2h's e4m3 forward): the preparation (bf16 Q, K, V to e4m3 with per-block scales, V
    // transposed), timed apart from the forward, median over the same repeats; 0 for other dtypes
    double prep_ms = 0;
};

// p.dtype fp8: flash2h's e4m3 forward only (d = 128, no mask); its inputs are the generator's values
// in bf16, prepared (quantized) before the timed forward, O stored in bf16, checked against float64.
Measurement run(const sim::Problem& p, const std::string& variant, const RunOptions& opt);

// One untimed FP8 forward of flash2h (cuda/flash2h_fp8.cu) on the generator's inputs in bf16
// (sim::generate_inputs with dtype bf16), with what the preparation made of them, copied back.
struct Fp8Outputs {
    sim::TensorF O;                    // (B, H, N, d), bf16 values
    std::vector<float> LSE;            // (B, H, N), natural log
    std::vector<uint8_t> Q8, K8, Vt8;  // e4m3 bytes: Q, K (B*H, N, d); V^T (B*H, d, n_pad), keys permuted
    std::vector<float> scales;         // (3, B*H, T): s_Q, s_K, s_V per 128-row block of each head
    int64_t T = 0, n_pad = 0;
};
Fp8Outputs compute_fp8(const sim::Problem& p);

// The GPU's own ceilings, measured by microbenchmarks (cuda/ceilings.cu): HBM copy, L2 and shared
// memory bandwidth, mma.sync and wgmma rates, the exponential unit, a launch. value in `unit`
// (B/s, FLOP/s, op/s, s); method says what was run; value 0 and method "not measured: why" where
// this GPU cannot run it.
struct Ceiling {
    std::string name;
    double value = 0;
    std::string unit, method;
};
std::vector<Ceiling> measure_ceilings();

// What the in-process DRAM counters (cuda/counters.hpp) see for known work after the bench's L2
// flush (bench --counters-probe): each probe's work, bytes the work itself reads and writes, and
// the counters' median over `repeats` tries. A difference from the work's own bytes is what the
// counters add to every row (the flush's residue, or what the range counts besides the kernel).
struct CounterProbe {
    std::string name, method;
    double work_read = 0, work_write = 0;    // bytes the kernel itself reads / writes
    double dram_read = -1, dram_write = -1;  // counters, median; -1 when not read (why)
    std::string why;
};
std::vector<CounterProbe> probe_counters(int repeats = 3);

// What a call's time holds besides its work (bench --launch-probe): an empty kernel with and without
// shared memory, a copy and the decode kernel (B = 1, L = 32k), each timed by events after the decode
// rows' read flush and after that flush plus a kernel that leaves the SMs set to the most shared memory
// or to the default carve-out. Medians over `repeats` rounds that interleave every case.
struct LaunchProbe {
    std::string name, method, before;
    int repeats = 0;
    double us_median = 0, us_min = 0, us_max = 0;
};
std::vector<LaunchProbe> probe_launch(int repeats = 30);

// One untimed run, outputs copied back. For backward, the forward of the same variant (flash2)
// or of standard provides O and LSE; dO comes from the generator (InputTensor::dO).
struct Outputs {
    sim::TensorF O;           // (B, H, N, d) as stored (dtype-rounded values)
    std::vector<float> LSE;   // (B, H, N), natural log; empty when the variant keeps none
    sim::TensorF dQ, dK, dV;  // backward only
};
Outputs compute(const sim::Problem& p, const std::string& variant, Pass pass);

// The same on the caller's tensors instead of the generator's: Q, K, V (and dO for a backward),
// each (B, H, N, d) as p says, rounded to p.dtype on upload. Before allocating it compares
// device_bytes_needed with the free memory and throws OutOfDeviceMemory naming both.
struct OutOfDeviceMemory : std::runtime_error {
    OutOfDeviceMemory(const std::string& what, int64_t need, double free)
        : std::runtime_error(what), needed(need), free_bytes(free) {}
    int64_t needed = 0;
    double free_bytes = 0;
};
Outputs compute(const sim::Problem& p, const std::string& variant, Pass pass, const sim::TensorF& Q,
                const sim::TensorF& K, const sim::TensorF& V, const sim::TensorF* dO);
// Device bytes that compute() allocates for the pass: the tensors, the kernels' workspace and one
// float32 staging copy of a tensor. And the free bytes cudaMemGetInfo reports now.
int64_t device_bytes_needed(const sim::Problem& p, const std::string& variant, Pass pass);
double device_free_bytes();

// The pass on the generator's inputs, returning only the listed rows (flat row ids b*H*N + h*N + n)
// of O, LSE, and for a backward of dQ, dK, dV (key rows) — for problems too large to copy back
// (flashsim bench --scale). nonfinite counts NaN/inf over every element of the outputs.
struct SampledRows {
    std::vector<int64_t> rows;
    std::vector<float> O, LSE, dQ, dK, dV;  // rows.size() x d (LSE: x 1; empty when none is kept)
    int64_t nonfinite = 0;
};
SampledRows compute_rows(const sim::Problem& p, const std::string& variant, Pass pass,
                         const std::vector<int64_t>& rows);

// The generator run on the device and copied back (tests check it bit-for-bit against the host).
sim::TensorF device_input(const sim::Problem& p, sim::InputTensor which);

// ---- the numerics study and the scale checks (cuda/study.cpp, flashsim bench --study/--scale) ----
// A random shape of the study: N from 1 to 20,000 (15% shorter than 64, 15% prime, the rest
// log-uniform from 16), d 64 or 128, bf16 or fp16, causal or not, B*H*N^2 <= 4e8; Q and K scaled so that the largest
// scores reach about score_target.
struct StudyShape {
    int64_t B = 1, H = 1, N = 1;
    int d = 64;
    sim::DType dtype = sim::DType::bf16;
    bool causal = false;
    double score_target = 1;
    uint64_t seed = 0;
};
std::vector<StudyShape> study_shapes(int count, uint64_t seed);
// One kernel's output tensor against float64: err = max abs error; err_standard = the standard
// kernel's on the same tensor; bound = 2 * err_standard + atol, atol one ulp of the dtype at the
// reference's largest magnitude; ok = finite and err <= bound.
struct StudyEntry {
    std::string variant, tensor, where;
    Pass pass = Pass::forward;
    double err = 0, err_standard = 0, atol = 0, bound = 0;
    double ref_max = 0;  // the reference's largest magnitude (0: the exact answer is all zeros)
    int64_t max_ulp = 0, identical = 0, count = 0, nonfinite = 0;
    bool ok = false;
};
struct StudyResult {
    StudyShape shape;
    std::vector<StudyEntry> entries;
    double lse_max = -1e300;           // the largest LSE of the reference (scores reach about this)
    double reference_ms = 0;           // the float64 reference's time on the GPU
    double gpu_vs_cpu_reference = -1;  // max relative difference, GPU float64 vs CPU float64 (-1: not checked)
};
// Every available kernel (standard, flash1, flash2, flash2h; forward and backward) on the shape's
// inputs, against the float64 reference computed on the GPU (cuda/reference64.hpp); with
// check_reference_on_cpu the GPU reference is also compared with the CPU's.
StudyResult study_one(const StudyShape& s, bool check_reference_on_cpu);

// A pass at scale on the generator's inputs, checked on sampled rows against float64: the
// listed (head, query row) pairs for O, LSE, dQ; for dK and dV the last key_tail key rows of each
// listed head when causal (else the listed rows). err_* are max abs errors over the rows checked.
struct ScaleCheck {
    std::string variant;
    Pass pass = Pass::forward;
    int64_t elements_per_tensor = 0, rows_checked = 0, nonfinite = 0;
    double err_O = 0, err_LSE = 0, err_dQ = 0, err_dK = 0, err_dV = 0, ref_max = 0;
    double gpu_seconds = 0, reference_seconds = 0;
};
ScaleCheck scale_check(const sim::Problem& p, const std::string& variant, Pass pass,
                       const std::vector<std::pair<int64_t, int64_t>>& heads_rows, int64_t key_tail);

// ---- decoding (cuda/decode.cu) ----------------------------------------------------------------
// One new token (q_len = 1) per sequence against a KV cache of L keys, H_q query heads on H_kv
// KV heads, split-KV then a merge; d 64 or 128, fp16 or bf16, any L. Inputs: Q from the
// generator as (B, H_q, 1, d), K and V as (B, H_kv, L, d) (sim::generate_decode_inputs).
// splits = 0: the count sim::choose_splits gives for this GPU's SM count.
// Where a decode call's time goes (bench --decode --trace): the split kernel's blocks stamp the
// global timer at start, first tile landed, last tile done, partial written and (the merging blocks)
// merge done. Each traced call is flushed from L2 first like a timed one; times are microseconds
// from the first block's start, each the median over the traced calls.
struct DecodeTrace {
    int runs = 0;
    double event_us = 0;                        // the traced call by CUDA events around its launch
    double span_us = 0;                         // first block's start to the last stamp (merge done, or last partial)
    double start_med_us = 0, start_max_us = 0;  // blocks' starts: median, last
    double first_tile_med_us = 0, first_tile_max_us = 0;  // first tile landed
    double stream_med_us = 0, stream_max_us = 0;          // last tile done
    double written_med_us = 0, written_max_us = 0;        // partial (or O) written
    double first_tile_wait_us = 0;  // a block's start to its first tile landed (median over blocks)
    double merge_us = 0;            // a merging block: partial written to merge done (median)
    double timer_step_ns = 0;       // smallest non-zero step seen between two stamps of one block
    double sm_clock_ghz = 0;        // SM clock over global time, start to partial written (median)
};

struct DecodeMeasurement {
    double ms_median = 0, ms_min = 0, ms_max = 0;
    int repeats = 0;
    int64_t splits = 0, blocks = 0, tile_keys = 0;
    int64_t stage_keys = 0;   // keys a ring stage of the kernel held (FLASHSIM_DECODE_STAGE_KEYS)
    int64_t l2_prefetch = 0;  // L2 prefetch size (bytes) hinted on the K/V copies, 0: none (FLASHSIM_DECODE_PREFETCH)
    std::string kv_load;      // how K and V reached shared memory: cp.async or tma (FLASHSIM_DECODE_LOAD)
    std::string merge;        // who merged the splits: none (one split), fused, separate or cluster
    // how L2 was emptied before each timed call: read (decode's default) or write (FLASHSIM_L2_FLUSH)
    std::string l2_flush;
    std::string splits_why;
    int64_t kv_bytes = 0;     // K and V read (once per KV head; x chunks when H_q/H_kv > 4)
    int64_t total_bytes = 0;  // all HBM bytes as sim::simulate_decode counts them with these splits
    double kv_tbps = 0;       // kv_bytes / median time, TB/s
    double sim_predicted_ms = 0;
    sim::ErrorStats vs_reference;  // O vs sim::decode_reference (count 0: too large for the CPU)
    int64_t unwritten = 0;
    int64_t peak_bytes = 0;  // Q, K, V, O, LSE and the partials of one set (tracked allocations)
    std::string note;
    DecodeTrace trace;  // runs == 0: not traced
};
DecodeMeasurement run_decode(const sim::DecodeProblem& p, const RunOptions& opt, int64_t splits = 0);
struct DecodeOutputs {
    sim::TensorF O;          // (B, H_q, 1, d)
    std::vector<float> LSE;  // (B, H_q)
    int64_t splits = 0;
    int64_t keys_per_split = 0;  // keys a split owns (whole ring stages; the last split may own fewer)
    int64_t stage_keys = 0;      // keys a ring stage held
    int64_t l2_prefetch = 0;     // L2 prefetch size hinted on the K/V copies (bytes; 0: none)
    std::string kv_load;         // cp.async or tma
    std::string merge;           // none, fused, separate or cluster
};
DecodeOutputs compute_decode(const sim::DecodeProblem& p, int64_t splits = 0);
// Keys a ring stage of the decode kernel holds at this head dim: FLASHSIM_DECODE_STAGE_KEYS=64|128,
// else 128 at d = 64 and 64 at d = 128; 128 only at d = 64. Bad values throw with the fix. Reads the
// environment only (no GPU).
int decode_stage_keys(int64_t head_dim);
// The L2 prefetch size (bytes) the decode kernel hints on its K/V copies: FLASHSIM_DECODE_PREFETCH=0|128|256,
// else 0 (no hint). Bad values throw with the fix. Reads the environment only (no GPU).
int decode_l2_prefetch();
// How the decode kernel's K/V tiles reach shared memory: FLASHSIM_DECODE_LOAD=cp.async|tma, else
// tma when tma_default (the kernel passes: sm_90 or later and no cp.async prefetch hint asked for),
// cp.async otherwise; tma on an older GPU is refused at launch. Bad values throw with the fix. No GPU needed.
std::string decode_kv_load(bool tma_default);
// Who merges the splits: "fused" (the last block of a head, the default), "separate" (a second
// kernel; for side-by-side timing; more splits than the fused merge takes always use it) or "cluster"
// (a head's splits are the blocks of one cluster, at most 16, one block an SM, merging through
// distributed shared memory; sm_90 with the TMA loads): FLASHSIM_DECODE_MERGE. Bad values throw with
// the fix. Reads the environment only (no GPU).
std::string decode_merge_mode();
// The K/V ring (KiB) a block of the cluster merge holds: FLASHSIM_DECODE_CLUSTER_RING=96|192, else 192
// (one block an SM; 96: two an SM, as the other merges). Bad values throw with the fix. No GPU needed.
int decode_cluster_ring_kib();
// How the timed runs empty L2 before each call, "write" (memset) or "read": FLASHSIM_L2_FLUSH=write|read,
// else read for decode and write for the training passes. Bad values throw with the fix. No GPU needed.
std::string l2_flush_setting(bool decode);

// ---- how long a sequence fits (flashsim bench --fit) --------------------------------------------
// A training step (forward then backward) of `variant` at shape (B, H, d, dtype; seq ignored):
// the longest N on the grid of sim::grid_point whose buffers can all be allocated on this GPU,
// probing by allocation only (no kernel runs): one set of Q, K, V, O, LSE, dO, dQ, dK, dV and the
// workspace the variant's forward and backward allocate (step_workspace_bytes). An allocation
// that fails (cudaErrorMemoryAllocation) is caught, everything freed, and the search goes on.
struct FitProbe {
    std::string variant;
    int64_t longest_n = 0, next_n = 0;
    int64_t peak_bytes_at_longest = 0;
    double free_bytes = 0, total_bytes = 0;  // cudaMemGetInfo before the search
    int probes = 0;
    std::string note;
};
FitProbe probe_fit(const std::string& variant, const sim::Problem& shape);
// The workspace bytes a step of the variant allocates (the kernels' Workspace::ensure calls).
int64_t step_workspace_bytes(const std::string& variant, const sim::Problem& p);
// The same, read from the workspace after running a step (tests compare the two).
int64_t step_workspace_after_run(const std::string& variant, const sim::Problem& p);

// ---- ring attention with the kernels (cuda/ring.cu, flashsim bench --ring) -------------------------
// sim/ring.hpp's schedule on real data: P devices, each with its query chunks (balanced: chunks i
// and 2P-1-i), the K/V slices passed around the ring; every (query chunk, key chunk) block is one
// call of `kernel` (flash2 or flash2h) on a c-token sub-problem (causal on the diagonal, no mask
// below it, skipped above), merged into fp32 (O, LSE) by log-sum-exp; in the backward, dQ adds up
// at home and fp32 dK, dV accumulators travel with their slice.
// emulated: the P devices are P sets of buffers and streams on GPU 0, a send is a device copy on the
// sender's own stream (checks the kernels, the schedule and the merge; one GPU does all the work).
// nccl: GPUs 0..P-1 of this process, sends by NCCL (loaded at run time: FLASHSIM_NCCL_LIB or
// libnccl.so.2), NCCL_NVLS_ENABLE=0 unless set.
enum class RingTransport { emulated, nccl };
const char* ring_transport_name(RingTransport t);
bool nccl_available(std::string* why = nullptr);
std::string nccl_version();  // "2.28.3"; empty when NCCL cannot be loaded
int gpu_count();             // visible CUDA devices (0 without a driver)

struct RingOutputs {
    sim::TensorF O;                          // (B, H, N, d), as stored
    std::vector<float> LSE;                  // (B, H, N)
    sim::TensorF dQ, dK, dV;                 // p.pass != forward
    int64_t blocks = 0, blocks_forward = 0;  // kernel calls of the last pass, of the forward
    int64_t sends = 0;                       // device-to-device sends of the last pass, all devices
    int64_t link_bytes = 0;                  // bytes over each link, one way, in the last pass
};
// The ring's forward (and with p.pass backward or both, its backward) once. Throws
// std::runtime_error on what it cannot run (a kernel other than flash2/flash2h, N not a multiple
// of the chunks, P above the visible GPUs for nccl, no NCCL).
RingOutputs compute_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t);

struct RingMeasurement {
    std::string kernel, transport;
    int gpus_used = 1;
    double forward_ms = 0, backward_ms = 0;  // medians; the backward 0 when not run
    int repeats = 0;
    int64_t blocks = 0, sends = 0, link_bytes = 0;  // of the last pass
    // O (then dQ, dK, dV) of the ring against one call of the kernel on the whole problem on one
    // GPU, and (when B·H·N²·d <= opt.max_reference_work) both against float64
    std::vector<sim::ErrorStats> vs_single, vs_reference, single_vs_reference;
    // The bar, per tensor: with float64, ring error <= 2 x the one-call error + K ulps of the
    // dtype at the reference's largest magnitude; without it, |ring - one call| <= K ulps at the
    // one call's largest magnitude. K = the chunks a row's keys are cut into (each block's output
    // is rounded to the dtype once before it is summed).
    std::vector<double> bound, ref_max;
    bool ok = false;
    int64_t nonfinite = 0;
};
// The checked run, then opt.warmup + opt.repeats timed runs of each pass (L2 flushed, every device
// idle before each); a pass's time is its slowest device's, from its start to its last stream's end.
RingMeasurement run_ring(const sim::RingProblem& p, const std::string& kernel, RingTransport t, const RunOptions& opt);

}  // namespace fcuda
