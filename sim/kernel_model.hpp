// sim/kernel_model.hpp — a timing model that knows the kernel (issue 12).
//
//   sim::kernel_profile("flash2h", pass, d) ──► KernelProfile (plain data: tiles, instruction path,
//                                               what overlaps what, CTAs an SM, dQ accumulation)
//   sim::predict_kernel(problem, profile, rates, machine) ──► KernelPrediction (ms, and where the
//                                               time goes: HBM, L2, tensor cores, exp unit, issue,
//                                               launches, waves/prologue)
//
// The simulator's walk gives the work (matmul FLOPs, exponentials, other FLOPs, HBM bytes through
// its L2 model); the profile says how the kernel spends it: which tensor-core instruction and at
// what measured rate, whether shared-memory operand staging sits in series with it (mma.sync
// loads fragments with ldmatrix before each product; wgmma reads shared memory itself), how much
// of the softmax hides behind the products, how the dQ of the backward is accumulated, how many
// thread blocks an SM holds, and how many launches the pass makes. Blocks are placed on SM slots
// in launch order (waves quantised, causal blocks of unequal length), each block paying the copy
// of its first tiles before its pipeline runs. docs/simulator.md, "The kernel model", has the
// formulas and the reasoning behind every profile field.
//
// The profile table mirrors the TileConfig each CUDA kernel exports (cuda/api.hpp); sim/ cannot
// include cuda/, so tests/tools compare the two through the recorded bench rows.
#pragma once
#include <cstdint>
#include <string>
#include <utility>
#include <vector>

#include "sim/machine.hpp"
#include "sim/problem.hpp"
#include "sim/simulate.hpp"

namespace sim {

// cuda/standard.cu's cuBLAS calls by their layout (alpha aside, the backward's calls are the forward's):
enum class StandardGemm {
    qk,  // S = Q K^T, dP = dO V^T: an N x N output from two N x d operands (depth d)
    pv,  // O = P V, dQ = dS K: an N x d output, the N x N operand read as stored (depth N)
    ptv  // dV = P^T dO, dK = dS^T Q: an N x d output, the N x N operand read transposed (depth N)
};
std::string_view standard_gemm_name(StandardGemm g);  // qk, pv, ptv (the ceilings' names)
// One measured point: the call at row length n and depth d (head dimension), 2 N^2 d FLOPs a head
// over its median time.
struct StandardGemmPoint {
    StandardGemm gemm = StandardGemm::qk;
    int64_t head_dim = 0, n = 0;
    double flops = 0;
};
// The 16-byte alignment class of a 2-byte row of n elements: the largest of 1, 2, 4 and 8 elements
// that divides n (8: every row starts on a 16-byte boundary; 1: rows only 2-byte aligned). cuBLAS
// picks its kernels by this alignment, so a ragged N is charged at points of its own class.
int64_t standard_row_alignment(int64_t n);
// Throughputs the kernel model uses, whole GPU. From the datasheet preset (datasheet_rates) or
// from a measured-ceilings file that the CLI reads (results/h200/ceilings.json).
struct KernelRates {
    double hbm = 0;       // B/s, HBM (a device copy's bytes read + written over its time)
    double l2 = 0;        // B/s, L2 reads
    double smem = 0;      // B/s, shared-memory reads, all SMs
    double mma_sync = 0;  // FLOP/s, mma.sync (bf16/fp16 in, fp32 accumulate)
    double wgmma = 0;     // FLOP/s, wgmma
    // FLOP/s, wgmma with e4m3 inputs (FP8); 0: not measured, the wgmma rate times the preset's
    // datasheet ratio of FP8 to bf16 (2 on Hopper)
    double wgmma_fp8 = 0;
    double gemm = 0;      // FLOP/s, a large library GEMM (cuBLAS), for standard attention
    double exp = 0;       // exponentials/s on the special-function units (MUFU ex2)
    double issue = 0;     // other fp32 operations/s: 128 lanes an SM a clock against ex2's 16, so 8 x exp
    double launch_s = 0;  // seconds a kernel launch costs (0: not known)
    // B/s of fp32 added into global memory by bulk reductions (cp.reduce.async.bulk .add.f32 from
    // shared-memory tiles, absorbed by L2), bytes added; 0: not measured (the L2 read rate stands in)
    double bulk_reduce = 0;
    // seconds a wgmma group costs beyond its throughput when a warpgroup waits on it at once (its
    // latency: the last instruction's result reaching the registers); 0: not measured
    double wgmma_wait_s = 0;
    // B/s of HBM streams one way: a read stream alone, a write stream alone (a GEMM writing an N x N
    // output is one); 0: not measured (the copy rate stands in)
    double hbm_read = 0, hbm_write = 0;
    // B/s at which a library GEMM (cuBLAS, as cuda/standard.cu calls it) of depth d = 64 and 128 writes
    // an N x N output far larger than L2 (S = Q K^T, dP = dO V^T): its own write rate, below a plain
    // write stream's; 0: not measured (the write-stream rate stands in)
    double gemm_write_d64 = 0, gemm_write_d128 = 0;
    // B/s (read + written) of flash1's per-step round trip of an fp32 O_i tile in the kernel's own
    // access pattern (float2 loads all in flight, then float2 stores; one block of 8 warps an SM), at
    // d = 64 and 128; 0: not measured (the copy rate stands in)
    double hbm_rmw_d64 = 0, hbm_rmw_d128 = 0;
    // B/s of fp32 added by float2 atomics (red.global.add.v2.f32) into L2-resident tiles, as flash2's
    // backward adds dQ; 0: not measured
    double l2_red = 0;
    // seconds a fence after a warpgroup's float2 atomics (16 KiB) adds beyond their throughput: their
    // round trip through L2, paid every step by the deterministic backward; 0: not measured
    double red_fence_s = 0;
    // B/s of standard's two-pass row softmax kernels (cuda/standard.cu runs them for rows the one-pass
    // kernels do not take: standard_softmax_one_pass), the bytes the model counts (forward: S read once,
    // P written; backward: P and dP read, dS written) over their time, measured at row lengths n:
    // (n, B/s) pairs in ascending n; empty: not measured
    std::vector<std::pair<int64_t, double>> softmax_rows_fwd, softmax_rows_bwd;
    // FLOP/s of cuda/standard.cu's own cuBLAS calls, each timed alone at row lengths N that are not
    // multiples of 8 (and their aligned neighbours), at d = 64 and 128 (bench --ceilings:
    // gemm_<qk|pv|ptv>_<dtype>_d<d>_n<N>); empty: not measured (ragged rows stay uncertain)
    std::vector<StandardGemmPoint> standard_gemm;
    std::string source;  // where the numbers come from
};
// The call's rate at row length n from the points of the same call, head dimension and alignment
// class: linear in log n between them, the nearest one's beyond them (as softmax_rows_rate); 0 when
// none is measured there.
double standard_gemm_rate(const std::vector<StandardGemmPoint>& points, StandardGemm g, int64_t head_dim, int64_t n);
// cuda/standard.cu's choice of softmax kernels for rows of n columns: the one-pass kernels (16-byte
// loads, a row held in registers, S read once) when every row starts on a 16-byte boundary
// (n % 8 == 0) and a group of at most 512 threads holds it (n <= 32768 forward, 16384 backward); the
// two-pass row kernels (one block a row, 2-byte loads, the row read twice) otherwise.
bool standard_softmax_one_pass(int64_t n, Pass pass);
// The two-pass kernels' rate at row length n from measured points: linear in log n between them, the
// nearest point's beyond them; 0 when none are measured.
double softmax_rows_rate(const std::vector<std::pair<int64_t, double>>& points, int64_t n);
// The preset's datasheet figures (mma.sync = wgmma = the datasheet's dense rate; launch unknown).
KernelRates datasheet_rates(const Machine& m);
// Ceilings estimated for a card never measured (`target`) from a card of the same architecture that
// was (`measured_on`, its rates `measured`): each rate is the fraction of its datasheet figure the
// measured card reached, times the target's datasheet figure. Memory streams (HBM copy, read,
// write, a GEMM's write, the round trips, the two-pass softmax) scale with the HBM bandwidth, L2's
// (reads, atomics, bulk reductions) with the L2 estimate, the SM's units (shared memory, mma.sync,
// wgmma, the library GEMM, the exponentials) with the dense tensor rate, which counts the SMs and
// their clock; latencies (launch, a wgmma wait, a fence) carry over as they are. Throws sim::Error
// when the two are of different architectures (compute capability): their instruction paths are not
// comparable.
KernelRates estimated_rates(const Machine& target, const Machine& measured_on, const KernelRates& measured);

enum class TensorPath { mma_sync, wgmma, library_gemm };
enum class Overlap {
    none,                    // copy, products and softmax one after another
    copy_behind_compute,     // the next tiles' copy runs under this step's arithmetic (cp.async / TMA ring)
    softmax_behind_product,  // and the softmax of block j runs under the product of block j+1
    ping_pong                // two warpgroups alternate: one's softmax under the other's products
};
enum class DqAccumulation { none, atomics, bulk_reduction, ordered };
std::string_view tensor_path_name(TensorPath t);
std::string_view overlap_name(Overlap o);
std::string_view dq_name(DqAccumulation d);

// One kernel's pass at one head dimension.
struct KernelProfile {
    std::string kernel;  // standard, flash1, flash2, flash2h
    Algo algo = Algo::flash2;
    Pass pass = Pass::forward;
    int64_t head_dim = 0;
    int64_t block_rows = 0, block_cols = 0;  // the kernel's B_r, B_c (0: the simulator's rule)
    int threads = 0;                         // per thread block
    int64_t smem_bytes = 0;                  // shared memory a thread block allocates
    int ctas_per_sm = 1;                     // thread blocks resident on one SM
    TensorPath tensor = TensorPath::mma_sync;
    // Shared-memory bytes the products read per matmul FLOP to stage register operands (mma.sync's
    // ldmatrix); 0 for wgmma, whose operands the tensor core reads from shared memory itself.
    double operand_bytes_per_flop = 0;
    Overlap overlap = Overlap::none;
    // With softmax_behind_product: the share of a tile's products (tensor time, not the operand
    // staging) that the softmax may hide under. Half by default (the overlapped schedule's window);
    // a kernel whose counters bound it otherwise carries that bound (flash2's forward).
    double softmax_window = 0.5;
    DqAccumulation dq = DqAccumulation::none;
    int dq_tiles = 1;  // fp32 dQ_i tiles (B_r x d) a step adds into the accumulator
    // Shared-memory dQ tiles the kernel's bulk reductions read from in turn (flash2h backward): 1,
    // a tile is written again the next step, so its reduction must have read it by then (a latency
    // chain every step); more, the reductions only have to keep pace (their rate bounds a step)
    int dq_ring = 1;
    // Consumer warpgroups that share the SM's tensor cores (wgmma kernels; 0: not modelled per
    // warpgroup). With lock_step they meet at a barrier every step, so their softmax and their
    // shared-memory stores run at the same time, with the tensor cores idle; otherwise they are
    // offset by half a step, meant to run one's softmax under the other's products (measured on the
    // H200, it does not: the model sums a step's parts either way; lock_step still decides whether a
    // dQ reduction waits on both warpgroups' parts or on one's).
    int consumer_warpgroups = 0;
    bool lock_step = false;
    int wgmma_waits = 0;                   // wgmma groups each consumer warpgroup waits on at once, a step
    int64_t smem_store_bytes = 0;          // bytes the consumers store to shared memory a step (dS^T, dQ tiles)
    bool one_launch_per_kv_block = false;  // flash1: a grid per K/V block j
    // How the forward's query blocks go to the SMs: the static order (a persistent grid, one block an
    // SM, walking units in turn: GridOrder::static_units) without a mask, and under the causal mask
    // while T_r <= static_causal_max_tr (flash2h's default rule, cuda/flash2h.cu's grid_mode); launch
    // order otherwise (one thread block a query block).
    GridOrder grid = GridOrder::launch;
    int64_t static_causal_max_tr = 0;
    bool lone_middles = false;  // Config::lone_middles (rows recorded before 2026-12-05 ran so)
    bool tail_split = false;    // KernelTiles::tail_split: the static order's last round spread along the keys
    // Kernels the pass launches besides its main one (flash1's are counted from its K/V blocks): the
    // backwards' pass before (D = rowsum(dO o O), the fp32 dQ accumulator zeroed) and after (dQ fp32
    // -> the storage type)
    int side_launches = 0;
    std::string layout;  // how warps split the tile, in words
    std::string why;     // the reasoning for the fields above
};
// Throws sim::Error for an unknown kernel, or a pass / head dimension it does not run.
// causal: the mask picks flash2h's forward tiling at d = 64 (three consumer warpgroups, B_r = 192,
// without a mask; two with one), as cuda/flash2h.cu does by default.
KernelProfile kernel_profile(const std::string& kernel, Pass pass, int64_t head_dim, bool causal = false);
std::vector<std::string> kernel_names();
// The profile with other tiles (a recorded row's own; 0 keeps the profile's), and what follows from
// them: flash2's operand staging, its backward block's threads, shared memory and blocks an SM,
// flash2h backward's shared-memory stores.
KernelProfile with_tiles(KernelProfile k, int64_t block_rows, int64_t block_cols);
// The profile with its forward's grid order given (a recorded row's, or asked for), whatever its rule.
KernelProfile with_grid(KernelProfile k, GridOrder g);
// The grid order the kernel runs the problem with (its block_rows sets T_r): the profile's static
// order where its rule allows it, launch order otherwise.
GridOrder grid_order(const KernelProfile& k, const Problem& p);

// One component of the predicted time: seconds the whole GPU spends on it (as if nothing else
// ran), and whether it sits on the critical path of the profile's schedule.
struct TimeComponent {
    std::string name;  // hbm, l2, tensor, smem_operands, exp, issue, launches
    double seconds = 0;
    std::string what;
};

struct KernelPrediction {
    KernelProfile profile;
    double predicted_ms = 0;
    double tflops = 0;  // the usual count: 4 B H N^2 d forward (half causal), x2.5 backward
    std::vector<TimeComponent> components;
    double steady_s = 0;    // the schedule's composition of the components, per SM, summed over steps
    double prologue_s = 0;  // the blocks' first copies, on the critical path (makespan minus steady)
    std::string bound;      // the largest component
    int64_t ctas = 0, slots = 0;
    double waves = 0;                    // ctas / slots of the main kernel
    GridOrder grid = GridOrder::launch;  // the order the blocks were placed in (grid_order)
    bool uncertain = false;
    std::string uncertain_why;
    std::string rates_source;
    std::vector<std::string> notes;
};

// Simulates the problem with the profile's tiles (numerics off) and predicts the kernel's time.
// FP8 (p.dtype == fp8): FlashAttention-3's FP8 forward on the profile's wgmma schedule: e4m3 Q, K, V
// (1 byte), a bf16 O and fp32 LSE (Problem::out_bytes), both products at the FP8 wgmma rate, the
// exponentials at the same MUFU rate, and one more fp32-lane instruction for each element of P (its
// conversion to e4m3 and the byte shuffle the second product's operand layout needs). Throws
// sim::Error for a backward, a kernel off wgmma, or a machine without an FP8 rate.
// block_rows/block_cols > 0 override the profile's (a recorded row's own tiles).
KernelPrediction predict_kernel(const Problem& p, const KernelProfile& k, const KernelRates& rates, const Machine& m,
                                int64_t block_rows = 0, int64_t block_cols = 0);

}  // namespace sim
