// sim/kernel_model.cpp — kernel profiles (plain data mirroring cuda/'s TileConfigs) and the
// kernel-aware timing model. Formulas and reasoning: docs/simulator.md, "The kernel model".
//
// [SECTIONS]  names · rates · profiles · helpers · predict_kernel()
#include "sim/kernel_model.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <limits>
#include <queue>
#include <utility>

#include "sim/kernel_geometry.hpp"
#include "sim/tail_plan.hpp"
#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {

// ---------------------------------------------------------------- [names]
std::string_view tensor_path_name(TensorPath t) {
    switch (t) {
        case TensorPath::mma_sync:
            return "mma.sync";
        case TensorPath::wgmma:
            return "wgmma";
        case TensorPath::library_gemm:
            return "cuBLAS GEMM";
    }
    return "?";
}
std::string_view overlap_name(Overlap o) {
    switch (o) {
        case Overlap::none:
            return "none";
        case Overlap::copy_behind_compute:
            return "copy behind compute";
        case Overlap::softmax_behind_product:
            return "softmax behind the next product";
        case Overlap::ping_pong:
            return "ping-pong";
    }
    return "?";
}
std::string_view dq_name(DqAccumulation d) {
    switch (d) {
        case DqAccumulation::none:
            return "none";
        case DqAccumulation::atomics:
            return "float2 atomics";
        case DqAccumulation::bulk_reduction:
            return "bulk reduction";
        case DqAccumulation::ordered:
            return "ordered (deterministic)";
    }
    return "?";
}

// ---------------------------------------------------------------- [standard's softmax path]
bool standard_softmax_one_pass(int64_t n, Pass pass) {
    constexpr int64_t kVecElems = 8, kMaxThreads = 512;               // cuda/standard.cu's vector path
    const int64_t vectors_a_thread = pass == Pass::backward ? 4 : 8;  // backward holds P's and dP's
    return n % kVecElems == 0 && n <= kMaxThreads * vectors_a_thread * kVecElems;
}

double softmax_rows_rate(const std::vector<std::pair<int64_t, double>>& pts, int64_t n) {
    if (pts.empty()) return 0;
    if (n <= pts.front().first) return pts.front().second;
    if (n >= pts.back().first) return pts.back().second;
    for (size_t i = 1; i < pts.size(); ++i)
        if (n <= pts[i].first) {
            const double x0 = std::log(double(pts[i - 1].first)), x1 = std::log(double(pts[i].first));
            const double t = x1 > x0 ? (std::log(double(n)) - x0) / (x1 - x0) : 0;
            return pts[i - 1].second + t * (pts[i].second - pts[i - 1].second);
        }
    return pts.back().second;
}

// ---------------------------------------------------------------- [standard's cuBLAS calls off alignment]
std::string_view standard_gemm_name(StandardGemm g) {
    switch (g) {
        case StandardGemm::qk:
            return "qk";
        case StandardGemm::pv:
            return "pv";
        case StandardGemm::ptv:
            return "ptv";
    }
    return "?";
}

int64_t standard_row_alignment(int64_t n) {
    for (int64_t a : {8, 4, 2})
        if (n % a == 0) return a;
    return 1;
}

double standard_gemm_rate(const std::vector<StandardGemmPoint>& points, StandardGemm g, int64_t head_dim, int64_t n) {
    const int64_t cls = standard_row_alignment(n);
    std::vector<std::pair<int64_t, double>> same;
    for (const auto& pt : points)
        if (pt.gemm == g && pt.head_dim == head_dim && standard_row_alignment(pt.n) == cls && pt.flops > 0)
            same.push_back({pt.n, pt.flops});
    std::sort(same.begin(), same.end());
    return softmax_rows_rate(same, n);
}

// ---------------------------------------------------------------- [rates]
KernelRates datasheet_rates(const Machine& m) {
    KernelRates r;
    r.hbm = m.hbm_bandwidth;
    r.l2 = m.l2_bandwidth;
    r.smem = m.sram_bandwidth;
    r.mma_sync = r.wgmma = r.gemm = m.matmul_flops;
    r.wgmma_fp8 = m.matmul_flops_fp8;
    r.exp = m.exp_rate;
    r.issue = 8 * m.exp_rate;
    r.launch_s = 0;
    r.source = "datasheet figures of the " + m.name +
               " preset (no tensor-core rate per instruction path; launch cost not on datasheets: 0)";
    return r;
}

KernelRates estimated_rates(const Machine& target, const Machine& measured_on, const KernelRates& measured) {
    if (target.compute_capability != measured_on.compute_capability)
        throw Error("the " + target.name + "'s ceilings cannot be estimated from the " + measured_on.name +
                    "'s: they are different architectures (compute capability " +
                    std::to_string(target.compute_capability) + " and " +
                    std::to_string(measured_on.compute_capability) + "); use its datasheet ceilings");
    auto ratio = [&](double t, double m, const char* what) {
        if (!(t > 0) || !(m > 0))
            throw Error(std::string("cannot estimate ceilings: the ") + what + " of the " + target.name + " or the " +
                        measured_on.name + " preset is not set");
        return t / m;
    };
    const double mem = ratio(target.hbm_bandwidth, measured_on.hbm_bandwidth, "HBM bandwidth");
    const double l2 = ratio(target.l2_bandwidth, measured_on.l2_bandwidth, "L2 bandwidth");
    const double sm = ratio(target.matmul_flops, measured_on.matmul_flops, "tensor rate");
    KernelRates r = measured;
    for (double* x :
         {&r.hbm, &r.hbm_read, &r.hbm_write, &r.gemm_write_d64, &r.gemm_write_d128, &r.hbm_rmw_d64, &r.hbm_rmw_d128})
        *x *= mem;
    for (auto* pts : {&r.softmax_rows_fwd, &r.softmax_rows_bwd})
        for (auto& pt : *pts) pt.second *= mem;
    // standard's cuBLAS calls each move an N x N matrix (written or read) against 2 N^2 d FLOPs, 64-128
    // FLOPs a byte, below the tensor cores' ~300 a byte of HBM: they scale with the memory
    for (auto& pt : r.standard_gemm) pt.flops *= mem;
    for (double* x : {&r.l2, &r.bulk_reduce, &r.l2_red}) *x *= l2;
    for (double* x : {&r.smem, &r.mma_sync, &r.wgmma, &r.wgmma_fp8, &r.gemm, &r.exp, &r.issue}) *x *= sm;
    char buf[240];
    std::snprintf(buf, sizeof buf,
                  "estimated for the %s from the %s's measured ceilings, each at the share of its datasheet figure "
                  "the %s reached (memory x %.3f, L2 x %.3f, SM units x %.3f; latencies as measured): ",
                  target.name.c_str(), measured_on.name.c_str(), measured_on.name.c_str(), mem, l2, sm);
    r.source = buf + measured.source;
    return r;
}

// ---------------------------------------------------------------- [profiles]
namespace {

// mma.sync reads the operands it does not keep in registers from shared memory (ldmatrix), once
// per warp. A warp tile of m rows x n columns over depth k costs 2 m n k FLOPs and reads
// (m + n) k e bytes when both operands come from shared memory, n k e when A is in registers.
double staged_bytes_per_flop(double m, double n, double e, bool a_in_registers) {
    return a_in_registers ? e / (2 * m) : e * (m + n) / (2 * m * n);
}

// flash2's forward: each warp owns 32 query rows (2 strips of 16) and all B_c columns; S = Q K^T
// reloads Q's fragments from shared memory at each k-step (both operands staged), O += P V keeps P
// in registers (only V staged). The two products do equal FLOPs, so the average.
double flash2_fwd_operand_bytes(int64_t bc) {
    return 0.5 * (staged_bytes_per_flop(32, static_cast<double>(bc), 2, false) + staged_bytes_per_flop(32, 0, 2, true));
}
// flash2's backward: a warp owns 16 key rows; S^T = K Q^T, dP^T = V dO^T, dV += P^T dO and
// dK += dS^T Q keep their A operand in registers (only the B_r-wide one staged); dQ = dS K stages
// both (16 query rows x d). Five products of equal FLOPs.
double flash2_bwd_operand_bytes(int64_t d) {
    return (4 * staged_bytes_per_flop(16, 0, 2, true) + staged_bytes_per_flop(16, static_cast<double>(d), 2, false)) /
           5;
}
// flash2's backward block of B_c keys (16 a warp): its threads, shared memory (K_j, V_j; two stages
// of Q_i, dO_i of 64 rows; dS^T; two stages of LSE_i, D_i) and how many fit an SM: two at B_c = 64
// (105 KiB at d = 128), one at B_c = 128 and d = 128 (145 KiB). B_c = 128 at d = 64 (81 KiB) fits
// two by shared memory, but its 256 threads of ~220 registers fit one.
void flash2_bwd_shape(KernelProfile& k) {
    const int64_t bc = k.block_cols, d = k.head_dim;
    k.threads = static_cast<int>(bc / 16 * 32);
    k.smem_bytes = (2 * bc * d + 4 * 64 * d + bc * 64) * 2 + 4 * 64 * 4;
    k.ctas_per_sm = bc == 64 ? 2 : 1;
}

// flash2h backward's shared-memory stores a step at its B_r: dS^T (128 keys x B_r, storage type) and
// each warpgroup's B_r x 64 fp32 dQ part
void flash2h_bwd_stores(KernelProfile& k) { k.smem_store_bytes = 128 * k.block_rows * 2 + 2 * k.block_rows * 64 * 4; }

}  // namespace

std::vector<std::string> kernel_names() { return {"standard", "flash1", "flash2", "flash2h"}; }

KernelProfile with_tiles(KernelProfile k, int64_t block_rows, int64_t block_cols) {
    if (block_rows > 0) k.block_rows = block_rows;
    if (block_cols > 0) k.block_cols = block_cols;
    if (k.kernel == "flash2" && k.pass == Pass::forward)
        k.operand_bytes_per_flop = flash2_fwd_operand_bytes(k.block_cols);
    if (k.kernel == "flash2" && k.pass == Pass::backward) flash2_bwd_shape(k);     // the block the row ran
    if (k.kernel == "flash2h" && k.pass == Pass::backward) flash2h_bwd_stores(k);  // its B_r's stores
    return k;
}

KernelProfile with_grid(KernelProfile k, GridOrder g) {
    k.grid = g;
    k.static_causal_max_tr = g == GridOrder::static_units ? std::numeric_limits<int64_t>::max() : 0;
    return k;
}

GridOrder grid_order(const KernelProfile& k, const Problem& p) {
    if (k.grid != GridOrder::static_units || k.pass != Pass::forward || k.algo != Algo::flash2)
        return GridOrder::launch;
    if (p.window > 0 || p.pad_left > 0) return GridOrder::launch;  // masks the kernel does not run
    if (!p.causal) return GridOrder::static_units;
    // causal: a head's heavy and light blocks paired, up to the kernel's T_r
    const int64_t br = std::max<int64_t>(1, k.block_rows), tr = (p.seq + br - 1) / br;
    return tr <= k.static_causal_max_tr ? GridOrder::static_units : GridOrder::launch;
}

KernelProfile kernel_profile(const std::string& kernel, Pass pass, int64_t d, bool causal) {
    if (pass == Pass::both) throw Error("a kernel profile is per pass: forward or backward, not both");
    if (d != 64 && d != 128)
        throw Error("the CUDA kernels run head_dim 64 or 128 (got " + std::to_string(d) +
                    "); --kernel needs one of them");
    KernelProfile k;
    k.kernel = kernel;
    k.pass = pass;
    k.head_dim = d;
    const bool fwd = pass == Pass::forward;
    if (kernel == "standard") {
        k.algo = Algo::standard;
        k.threads = 256;
        k.tensor = TensorPath::library_gemm;
        k.overlap = Overlap::none;
        k.layout = fwd ? "cuBLAS S = QK^T, a softmax kernel (one block a row), cuBLAS O = PV"
                       : "cuBLAS dV, dP; a dS kernel (one block a row); cuBLAS dQ, dK";
        k.why =
            "kernels one after another; each as long as the larger of its bytes at the copy rate and its "
            "FLOPs at the library GEMM rate";
    } else if (kernel == "flash1") {
        if (!fwd) throw Error("the flash1 CUDA kernel has no backward pass (cuda/flash1.cu)");
        k.algo = Algo::flash1;
        k.block_rows = 128;
        k.block_cols = 256;
        k.threads = 256;
        k.smem_bytes = 2 * 256 * d * 2 + 2 * 128 * d * 2;
        k.ctas_per_sm = 1;
        k.tensor = TensorPath::mma_sync;
        // a warp's 16-row strip: S = Q_i K_j^T stages both operands (Q strip and K_j), O += P V only V_j
        k.operand_bytes_per_flop =
            0.5 * (staged_bytes_per_flop(16, 256, 2, false) + staged_bytes_per_flop(16, 0, 2, true));
        k.overlap = Overlap::copy_behind_compute;
        k.one_launch_per_kv_block = true;
        k.layout = "8 warps x 16-row strips of Q_i (mma.sync); one launch per K/V block j, grid (G, B*H)";
        k.why =
            "Algorithm 1 as cuda/flash1.cu launches it: T_c grids of G x B*H blocks, G = max(1, min(query "
            "blocks, SMs / (B*H))), 1 block an SM (shared memory 192 KiB at d = 128); a block walks query "
            "blocks g, g + G, ...; each step requests O_i (fp32), l_i, m_i before its products and uses them "
            "after, and the next Q_i arrives by cp.async: the step's HBM traffic runs under its arithmetic";
    } else if (kernel == "flash2") {
        k.algo = Algo::flash2;
        k.tensor = TensorPath::mma_sync;
        if (fwd) {
            k.block_rows = 128;
            k.block_cols = 64;
            k.threads = 128;
            k.smem_bytes = 128 * d * 2 + 2 * 2 * 64 * d * 2;
            k.ctas_per_sm = 2;
            k.operand_bytes_per_flop = flash2_fwd_operand_bytes(k.block_cols);
            k.overlap = Overlap::softmax_behind_product;
            // Bounded by Nsight Compute on an H100 (d = 64, N = 8192 and 16384; docs/kernel-notes/
            // kernel-model.md): with every cycle that neither the tensor pipe nor the shared-memory
            // wavefronts fill charged to an exposed softmax, the softmax hides under at least 0.725
            // (8192) and 0.734 (16384) of the products, and under at most 0.82 (the first copies and
            // waves as modelled); the least window both launches allow is taken. Both cards share the SM.
            k.softmax_window = 0.74;
            k.layout = "4 warps x 32 query rows (mma.sync m16n8k16, ldmatrix), 2-stage cp.async K/V ring";
            k.why =
                "two blocks an SM (shared memory 96 KiB at d = 128; registers: __launch_bounds__(128, 1)); "
                "one block's softmax runs while the other's warps issue products, under 0.74 of them (the "
                "least the H100's counters allow at d = 64); operands staged through ldmatrix in series with "
                "the products";
        } else {
            k.block_rows = 64;
            k.block_cols =
                128;  // cuda/flash2_bwd.cu's default at both d (FLASHSIM_FLASH2_BWD_BC=64: the first version)
            flash2_bwd_shape(k);
            k.operand_bytes_per_flop = flash2_bwd_operand_bytes(d);
            k.overlap = Overlap::softmax_behind_product;
            k.dq = DqAccumulation::atomics;
            k.side_launches = 2;  // the pre pass (D, the accumulator zeroed), the conversion
            k.layout = "each warp 16 key rows; dQ by float2 atomics into an fp32 accumulator";
            k.why =
                "8 warps an SM: two blocks of 64 keys or one of 128 (a warp's softmax under other warps' "
                "products, at most half of them); every product stages its shared-memory operand through "
                "ldmatrix in series with it; each step's dQ_i (B_r x d fp32) read and written in L2 by atomics "
                "that the same warps issue, in series";
        }
    } else if (kernel == "flash2h") {
        k.algo = Algo::flash2;
        k.tensor = TensorPath::wgmma;
        k.threads = 384;
        k.ctas_per_sm = 1;
        // backward: B_r = 128 query rows a step at d = 64 (bulk-sum's default since 2026-12-03), 64 at d = 128
        k.block_rows = fwd ? 128 : d == 64 ? 128 : 64;
        k.block_cols = 128;
        // the forward's default grid: the static order, under the causal mask up to a T_r set below
        if (fwd) k.grid = GridOrder::static_units;
        if (fwd && d == 64) {  // three consumer warpgroups at d = 64, causal or not (cuda/flash2h.cu)
            k.block_rows = 192;
            k.threads = 512;
            k.smem_bytes = 192 * d * 2 + 2 * 2 * 128 * d * 2 + 1024;
            // Each warpgroup runs S, softmax, P V in series, but while one is in its softmax the
            // tensor cores run the others' products. The model credits the window it gives the
            // overlapped schedule (half a tile's products), not the others' whole products: their
            // softmaxes use the same exponential unit and FP32 pipes.
            k.overlap = Overlap::softmax_behind_product;
            k.layout = "3 consumer warpgroups x 64 query rows (wgmma), 1 TMA producer warpgroup";
            k.static_causal_max_tr = geometry::kFlash2hStaticCausalMaxTr64;  // N <= 4,224
            k.why =
                "1 block an SM (registers: 160 a consumer thread x 384 + 24 x 128 = 64,512 of 65,536); TMA "
                "copies behind compute; each warpgroup's softmax in series with its own products but under "
                "the other two warpgroups' products, credited as half a tile's products (the overlapped "
                "schedule's window; the three softmaxes share the exponential unit)";
        } else if (fwd) {
            // d = 128 without a mask: 176-key blocks (the kernel's default there since 2026-12-03)
            if (d == 128 && !causal) k.block_cols = 176;
            k.smem_bytes = 128 * d * 2 + 2 * 2 * k.block_cols * d * 2 + 1024;
            k.overlap = d == 128 ? Overlap::softmax_behind_product : Overlap::copy_behind_compute;
            k.layout = "2 consumer warpgroups x 64 query rows (wgmma), 1 TMA producer warpgroup" +
                       std::string(d == 128 ? "; S_{j+1} overlaps P_j V_j" : "");
            k.static_causal_max_tr = geometry::kFlash2hStaticCausalMaxTr;  // N <= 12,160
            k.why =
                "1 block an SM (registers: 240 a consumer thread x 256 + 24 x 128 = 64,512 of 65,536); TMA "
                "copies behind compute; at d = 128 block j's softmax runs under S_{j+1} = Q K_{j+1}^T (half "
                "the products), at d = 64 it does not overlap";
        } else {
            // d = 64: 2 Q_i / dO_i stages of 128 rows, one dS^T buffer and a ring of 4 summed 64-row dQ
            // tiles (two a step) (cuda/flash2h_bwd.cu)
            k.smem_bytes = d == 128 ? 198656 : 199680;
            k.overlap = Overlap::copy_behind_compute;
            k.dq = DqAccumulation::bulk_reduction;
            k.side_launches = 2;  // the pre pass (D, the accumulator zeroed), the conversion
            // one dQ_i tile added a step: d = 128 its column halves; d = 64 (bulk-sum) the two
            // warpgroups' parts over their own keys, summed in shared memory first
            k.dq_tiles = 1;
            k.dq_ring = d == 64 ? 4 : 1;  // bulk-sum's ring of summed tiles; bulk-pipelined reuses its tile
            k.consumer_warpgroups = 2;
            // d = 128 (bulk-pipelined): the warpgroups meet at a named barrier before dQ_i's product
            // (each takes half of dQ_i's columns over all 128 keys); d = 64 (bulk-sum): no barrier
            // before the product, warpgroup 1 starts once warpgroup 0 has its first P^T and adds its
            // dQ part onto warpgroup 0's, which is then half a step ahead
            k.lock_step = d == 128;
            // a step's waits (wgmma.wait_group): S^T; dP^T; dV and dK; dQ_i (d = 64: its two halves)
            k.wgmma_waits = d == 64 ? 5 : 4;
            flash2h_bwd_stores(k);
            k.layout = d == 128 ? "2 consumer warpgroups x 64 key rows (wgmma); pipelined, dQ by bulk reduction"
                                : "2 consumer warpgroups x 64 key rows (wgmma); dQ over own keys, the two parts summed "
                                  "in shared memory, one bulk reduction";
            k.why =
                d == 128
                    ? "1 block an SM; two consumer warpgroups in lock step (a named barrier before dQ_i's product "
                      "every step): their products, softmax, dS^T and dQ-tile stores and wgmma waits in series; "
                      "each dQ tile's bulk reduction (issued by a writer warp of the producer warpgroup) runs under "
                      "the next step until that warpgroup stores its next tile, which waits for it"
                    : "1 block an SM; two consumer warpgroups offset by half a step (warpgroup 1 adds its dQ part "
                      "onto warpgroup 0's, which is ahead), meant to put one's softmax and stores under the other's "
                      "products, "
                      "which measured it does not: the step is the sum of its parts, as at d = 128; "
                      "each summed dQ tile's bulk reduction (issued by a writer warp of the producer warpgroup) "
                      "runs under the next steps, the ring holding 4";
        }
    } else {
        std::string names;
        for (const auto& n : kernel_names()) names += (names.empty() ? "" : ", ") + n;
        throw Error("unknown kernel '" + kernel + "'; kernels: " + names);
    }
    return k;
}

// ---------------------------------------------------------------- [helpers]
namespace {

double rate_or_throw(double v, const char* what) {
    if (!(v > 0)) throw Error(std::string("the kernel model needs a ") + what + " rate; the ceilings given have none");
    return v;
}

double usual_flops(const Problem& p, Pass pass) {
    double f = 4.0 * static_cast<double>(p.heads_total()) * static_cast<double>(p.seq) * p.seq * p.head_dim;
    if (p.causal) f *= 0.5;
    return pass == Pass::backward ? 2.5 * f : f;
}

}  // namespace

// Standard attention's softmax kernel at this problem: 0 where cuda/standard.cu runs its one-pass
// kernels (the copy, read and write rates hold); else the two-pass row kernels' measured rate at the
// row length, and where none is measured the prediction is marked uncertain, with the reason. (A row
// length that is not a multiple of 8 also puts cuBLAS's GEMMs off 16-byte alignment: standard_gemms.)
static double standard_rows_rate(const Problem& p, Pass pass, const KernelRates& rates, KernelPrediction& out) {
    if (standard_softmax_one_pass(p.seq, pass)) return 0;
    const auto& points = pass == Pass::backward ? rates.softmax_rows_bwd : rates.softmax_rows_fwd;
    const double rate = softmax_rows_rate(points, p.seq);
    const std::string n = std::to_string(p.seq);
    auto uncertain = [&](const std::string& why) {
        out.uncertain = true;
        out.uncertain_why += (out.uncertain_why.empty() ? "" : "; ") + why;
    };
    if (rate <= 0)
        uncertain("N = " + n + (p.seq % 8 ? " is not a multiple of 8" : " is past the one-pass kernels' rows") +
                  ": the softmax runs cuda/standard.cu's two-pass row kernels (one block a row, 2-byte loads), "
                  "with which the H200's forward took 1.2-1.9x the one-pass kernels' time at N = 1024-16384 "
                  "(docs/kernel-notes/standard.md), and no ceiling measures their rate (the copy rate charged here "
                  "is too fast)");
    out.notes.push_back("softmax: two-pass row kernels (N = " + n +
                        (rate > 0 ? ", at their measured rate)" : ", rate not measured)"));
    return rate;
}

// The measured FLOP/s of standard's cuBLAS calls at a row length that is not a multiple of 8 (their
// leading dimension is N, so S and P sit off 16-byte alignment and cuBLAS takes other kernels): from
// the ceilings' points at this N's alignment class and head dimension (standard_gemm_rate), in the
// order of the pass's GEMMs (forward: S, O; backward: dV, dP, dQ, dK). All zero at a multiple of 8
// (the aligned model holds), and where a call the pass makes has no point the prediction is marked
// uncertain, with the reason.
static std::vector<double> standard_gemms(const Problem& p, Pass pass, const KernelRates& rates,
                                          KernelPrediction& out) {
    using G = StandardGemm;
    const std::vector<G> calls =
        pass == Pass::forward ? std::vector<G>{G::qk, G::pv} : std::vector<G>{G::ptv, G::qk, G::pv, G::ptv};
    std::vector<double> flops(calls.size(), 0.0);
    if (p.seq % 8 == 0) return flops;
    bool all = p.elem_bytes() == 2;  // the points are of 2-byte rows (bf16, fp16)
    for (size_t i = 0; i < calls.size() && all; ++i) {
        flops[i] = standard_gemm_rate(rates.standard_gemm, calls[i], p.head_dim, p.seq);
        all = flops[i] > 0;
    }
    const std::string n = std::to_string(p.seq);
    if (!all) {
        std::fill(flops.begin(), flops.end(), 0.0);
        out.uncertain = true;
        out.uncertain_why += std::string(out.uncertain_why.empty() ? "" : "; ") + "N = " + n +
                             " puts cuBLAS's S and P (leading dimension N) off 16-byte alignment; no ceiling "
                             "measures its GEMMs there";
        return flops;
    }
    const int64_t a = standard_row_alignment(p.seq);
    out.notes.push_back("GEMMs: cuBLAS's measured rates at rows " + std::to_string(2 * a) + "-byte aligned (N = " + n +
                        ", d = " + std::to_string(p.head_dim) + ")");
    return flops;
}

// ---------------------------------------------------------------- [predict_kernel()]
namespace {

// What predict_kernel's phases share: the problem, the kernel and rates, the walk's totals at the
// rates, and the time as it is summed (each phase in the order the sums were always taken).
struct Shared {
    const Problem& p;
    const KernelProfile& k;
    const KernelRates& rates;
    const Machine& m;
    const Result& r;
    KernelPrediction& out;
    bool fwd;
    double e, d, BH, N, hbm, l2, ex, tensor_rate, t_tensor, t_smem, t_exp, t_issue, t_hbm;
    int64_t slots;
    int launches = 0;
    double t_l2 = 0;
    double t_stores = 0, t_waits = 0;  // flash2h backward: shared-memory stores, wgmma waits (whole GPU)
    bool bulk_model = false;
    double total_s = 0;
};

// The tiled kernels' blocks and one step's time, as the phases after the walk of the tiles need them.
struct Tiles {
    int64_t br = 0, bc = 0, tr = 0, tc = 0;
    std::vector<int64_t> per_block;  // visited tiles a block (query blocks forward, key blocks else)
    double all_tiles = 0, sl = 0, bw = 0, tile_tensor = 0, tile_soft = 0, tile_compute = 0;
    double tile = 0, prologue = 0;
};

bool tile_visited(const Problem& p, const Tiles& t, int64_t i, int64_t j) {
    const int64_t br = t.br, bc = t.bc;
    return !tile_masked(p, i * br, std::min(p.seq, (i + 1) * br), j * bc, std::min(p.seq, (j + 1) * bc));
}

// Standard attention: its kernels one after another, each bounded by its bytes, FLOPs and exponentials.
void predict_standard(Shared& s) {
    const Problem& p = s.p;
    const KernelProfile& k = s.k;
    const KernelRates& rates = s.rates;
    KernelPrediction& out = s.out;
    const bool fwd = s.fwd;
    const double e = s.e;
    const double d = s.d;
    const double BH = s.BH;
    const double N = s.N;
    const double hbm = s.hbm;
    const double ex = s.ex;
    const double tensor_rate = s.tensor_rate;
    int& launches = s.launches;
    double& total_s = s.total_s;
    // Each kernel: max(its DRAM time, FLOPs at the GEMM rate, exponentials at the exp rate). Its DRAM
    // time is bounded three ways: reads at the read-stream rate, writes at the write-stream rate,
    // and both at the copy rate (R and W are the copy rate where not measured). The two GEMMs that
    // write an N x N output (S = Q K^T, dP = dO V^T) write it at the library's own measured rate for
    // their depth d where there is one (cuBLAS writes below a plain write stream), else at W.
    const double nn = BH * N * N, g = 2 * nn * d, nd = BH * N * d * e;  // nd: one N x d tensor's bytes
    const double R = rates.hbm_read > 0 ? rates.hbm_read : hbm, W = rates.hbm_write > 0 ? rates.hbm_write : hbm;
    const double gemm_w = d == 64 ? rates.gemm_write_d64 : d == 128 ? rates.gemm_write_d128 : 0;
    const double Wg = gemm_w > 0 ? gemm_w : W;
    // The softmax kernel (cuda/standard.cu) reads only a row's visible columns, [0, n] under the
    // causal mask (N (N + 1) / 2 of the N^2 a head), writes the whole row of P, and takes two
    // exponentials a visible score.
    const double vis = p.causal ? nn * (N + 1) / (2 * N) : nn;
    // bytes read, bytes written, FLOPs, exponentials, the rate its writes go at
    struct K3 {
        double r, w, f, x, wrate;
        double all = 0;   // B/s of reads + writes together where the kernel has its own rate (0: HBM's)
        double gemm = 0;  // FLOP/s of the whole call where measured at this shape (0: the bounds)
    };
    const double rows = standard_rows_rate(p, k.pass, rates, out);  // 0: the one-pass kernels
    // At a ragged N each GEMM takes its FLOPs at the call's own measured rate there (its bytes and
    // arithmetic both inside that time); 0 where N is a multiple of 8 (the bounds above)
    const std::vector<double> gf = standard_gemms(p, k.pass, rates, out);
    const std::vector<K3> ks = fwd ? std::vector<K3>{{2 * nd, nn * e, g, 0, Wg, 0, gf[0]},    // S = Q K^T
                                                     {vis * e, nn * e, 0, 2 * vis, W, rows},  // P = softmax(S)
                                                     {nn * e + nd, nd, g, 0, W, 0, gf[1]}}    // O = P V
                                   : std::vector<K3>{{nn * e + nd, nd, g, 0, W, 0, gf[0]},    // dV = P^T dO
                                                     {2 * nd, nn * e, g, 0, Wg, 0, gf[1]},    // dP = dO V^T
                                                     {2 * nn * e, nn * e, 0, 0, W, rows},     // dS = P o (dP - D)
                                                     {nn * e + nd, nd, g, 0, W, 0, gf[2]},    // dQ = dS K
                                                     {nn * e + nd, nd, g, 0, W, 0, gf[3]}};   // dK = dS^T Q
    for (const auto& q : ks) {
        const double t_bytes = q.all > 0 ? (q.r + q.w) / q.all : std::max({q.r / R, q.w / q.wrate, (q.r + q.w) / hbm});
        const double t = q.gemm > 0 ? q.f / q.gemm : std::max({t_bytes, q.f / tensor_rate, q.x / ex});
        total_s += t + rates.launch_s;
    }
    launches = static_cast<int>(ks.size());
    out.steady_s = total_s - launches * rates.launch_s;
    out.ctas = 0;
    // Certain since the one-pass softmax kernels (2026-12-03): the H200's standard rows come to
    // 0.83-1.01 of this count at these rates, their DRAM bytes 0.98-1.01 of the L2 model's. Rows
    // the one-pass kernels do not take are certain where the ceilings measure the two-pass kernels
    // and, at a ragged N, cuBLAS's calls there (standard_rows_rate, standard_gemms say why not).
}

// The tiled kernels' walk: tiles a block, the blocks sharing bandwidth, and a step's arithmetic.
void tiled_blocks(Shared& s, Tiles& t) {
    const Problem& p = s.p;
    const KernelProfile& k = s.k;
    const Machine& m = s.m;
    const Result& r = s.r;
    const bool fwd = s.fwd;
    const double BH = s.BH;
    const double t_tensor = s.t_tensor;
    const double t_smem = s.t_smem;
    const double t_exp = s.t_exp;
    const double t_issue = s.t_issue;
    const int64_t slots = s.slots;
    const int64_t br = k.block_rows > 0 ? k.block_rows : (fwd ? r.block_rows : r.bwd_block_rows);
    const int64_t bc = k.block_cols > 0 ? k.block_cols : (fwd ? r.block_cols : r.bwd_block_cols);
    const int64_t tr = (p.seq + br - 1) / br, tc = (p.seq + bc - 1) / bc;
    auto visited = [&](int64_t i, int64_t j) {
        return !tile_masked(p, i * br, std::min(p.seq, (i + 1) * br), j * bc, std::min(p.seq, (j + 1) * bc));
    };
    // Tiles per block: forward (q_outer) block i walks j; backward and flash1's launches: per j, the i's.
    std::vector<int64_t> per_block;
    int64_t tiles = 0;
    if (fwd && !k.one_launch_per_kv_block) {
        for (int64_t i = 0; i < tr; ++i) {
            int64_t n = 0;
            for (int64_t j = 0; j < tc; ++j) n += visited(i, j);
            per_block.push_back(n);
            tiles += n;
        }
    } else {
        for (int64_t j = 0; j < tc; ++j) {
            int64_t n = 0;
            for (int64_t i = 0; i < tr; ++i) n += visited(i, j);
            per_block.push_back(n);
            tiles += n;
        }
    }
    tiles = std::max<int64_t>(1, tiles);
    const double all_tiles = static_cast<double>(tiles) * BH;
    // One tile's share of each component, at one slot (the whole GPU's rate divided among slots).
    const double sl = static_cast<double>(slots);
    // Bandwidth (HBM, L2) is shared by the blocks resident at once: all slots, or all the blocks
    // when there are fewer (one head's 32 blocks do not get 1/264 of HBM each); arithmetic is per SM.
    const int64_t grid =
        k.one_launch_per_kv_block
            ? std::max<int64_t>(
                  1, std::min<int64_t>(std::max<int64_t>(1, m.sm_count) / std::max<int64_t>(1, p.heads_total()), tr)) *
                  p.heads_total()
            : static_cast<int64_t>(per_block.size()) * p.heads_total();
    const double bw = std::min(sl, static_cast<double>(std::max<int64_t>(1, grid)));
    const double tile_tensor = (t_tensor + t_smem) / all_tiles * sl;
    const double tile_soft = (t_exp + t_issue) / all_tiles * sl;
    double product_window = 0;  // the product a softmax may hide under
    if (k.overlap == Overlap::softmax_behind_product) product_window = k.softmax_window * t_tensor / all_tiles * sl;
    double tile_compute = 0;
    switch (k.overlap) {
        case Overlap::none:
        case Overlap::copy_behind_compute:
            tile_compute = tile_tensor + tile_soft;
            break;
        case Overlap::softmax_behind_product:
            tile_compute = tile_tensor + std::max(0.0, tile_soft - product_window);
            break;
        case Overlap::ping_pong:
            tile_compute = std::max(tile_tensor, tile_soft);
            break;
    }
    t.br = br;
    t.bc = bc;
    t.tr = tr;
    t.tc = tc;
    t.per_block = std::move(per_block);
    t.all_tiles = all_tiles;
    t.sl = sl;
    t.bw = bw;
    t.tile_tensor = tile_tensor;
    t.tile_soft = tile_soft;
    t.tile_compute = tile_compute;
}

// The backward step's dQ accumulation, added onto the step's arithmetic (t.tile_compute).
void tiled_dq_step(Shared& s, Tiles& t) {
    const Problem& p = s.p;
    const KernelProfile& k = s.k;
    const KernelRates& rates = s.rates;
    KernelPrediction& out = s.out;
    const bool fwd = s.fwd;
    const double e = s.e;
    const double d = s.d;
    const double l2 = s.l2;
    double& t_l2 = s.t_l2;
    double& t_stores = s.t_stores;
    double& t_waits = s.t_waits;
    bool& bulk_model = s.bulk_model;
    const int64_t br = t.br;
    const int64_t bc = t.bc;
    const double all_tiles = t.all_tiles;
    const double sl = t.sl;
    const double bw = t.bw;
    const double tile_tensor = t.tile_tensor;
    const double tile_soft = t.tile_soft;
    double& tile_compute = t.tile_compute;
    if (!fwd && k.dq == DqAccumulation::bulk_reduction && k.consumer_warpgroups > 0) {
        // flash2h's backward (cuda/flash2h_bwd.cu): W consumer warpgroups share the SM's tensor
        // cores. Each warpgroup's step is a chain: its products, the exponentials and dS between
        // them, its dS^T and dQ-tile stores to shared memory, and the wgmma groups it waits on at
        // once (their latency). The step is the sum of all of it, at either d. In lock step
        // (d = 128: a barrier every step) the warpgroups run the same phase together, so nothing
        // overlaps by construction. At d = 64 the kernel offsets them by half a step, meant to
        // run one's softmax and stores under the other's products; measured, it does not: with
        // the offset charged as overlap the model came to 0.58-0.74 of every d = 64 row, as a sum
        // to 0.92-1.03, and the sum alone foresaw the B_r = 64 -> 128 change it was not fitted to
        // (4-6% faster, measured 4-9%; the overlapped chain moved under 1%) (cuda/NOTES.md,
        // "flash2h backward at d = 64: the step is the sum of its parts").
        const double W = k.consumer_warpgroups;
        const double added = k.dq_tiles * static_cast<double>(br) * d * 4;  // fp32 bytes a step adds
        const double red_rate = rates.bulk_reduce > 0 ? rates.bulk_reduce : l2;
        t_l2 = added * all_tiles / red_rate;
        const double smem_sm = rate_or_throw(rates.smem, "shared-memory") / sl;
        const double tile_st = static_cast<double>(k.smem_store_bytes) / smem_sm;
        const double tile_wait = k.wgmma_waits * rates.wgmma_wait_s;
        bulk_model = true;
        t_stores = static_cast<double>(k.smem_store_bytes) * all_tiles / rates.smem;
        t_waits = tile_wait * all_tiles / sl;
        const double chain = tile_tensor + tile_soft + tile_st + tile_wait;
        // The dQ tile a warpgroup adds is reused one step later: its bulk reduction must have read
        // it before the next dQ product may write it back (the kernel waits before ds_sync). So the
        // reduction (at the SM's share of the measured rate), then that warpgroup's dQ product,
        // the wait on it and its tile's stores lie in series: a second bound on the step.
        // The SM has one bulk-copy (TMA) unit: the producer's copies of the next Q_i, dO_i, LSE_i,
        // D_i (from L2, at the SM's share of the L2 read rate) pass through it too, so the
        // reduction and the loads share its throughput. The loads are not on the tile's path: the
        // producer warp issues them as stages free up, while the reduction is in flight. (Charged
        // as one series with it, this path bound the H100's d = 128 rows, whose L2 measures 0.85
        // of the H200's, while the H100 ran those rows 1-3% faster than the H200:
        // docs/kernel-notes/flash2h-backward.md.)
        const double share = k.lock_step ? 1.0 : 1.0 / W;  // offset: only its own warpgroup's part
        const double tile_red = added / red_rate * bw;
        const double tile_loads = (2.0 * static_cast<double>(br) * d * e + 8.0 * static_cast<double>(br)) / l2 * bw;
        // With a ring of tiles (dq_ring > 1) the chain spreads over the ring's steps and only the
        // unit's throughput is left: the reduction and the loads a step.
        const double unit = tile_red + tile_loads;
        const double red_path =
            k.dq_ring > 1 ? unit
                          : std::max(unit, tile_red + share * (tile_tensor / 5 + added / smem_sm) + rates.wgmma_wait_s);
        tile_compute = std::max(chain, red_path);
        if (rates.wgmma_wait_s <= 0) {
            out.uncertain = true;
            out.uncertain_why = "no measured wgmma latency: the waits of the warpgroups' serial chains cost 0 here";
        }
        out.notes.push_back(std::string("step bound: ") +
                            (chain >= red_path ? "the warpgroups' chain" : "the dQ bulk reduction's path"));
    } else if (!fwd && k.dq == DqAccumulation::ordered) {
        // Deterministic mode (flash2h, FLASHSIM_FLASH2H_BWD=deterministic): a warpgroup waits for its
        // turn at dQ_i, adds its part by float2 atomics, fences until they are done, and passes the
        // turn on. The fence puts the atomics in series with the step, at the SM's share of the
        // measured atomic rate, and its own round trip once a step where measured (l2_red_fence).
        // At d = 64 each warpgroup adds a whole B_r x d part over its own keys (two a step), at
        // d = 128 each half the columns over all keys (one tile a step). (The profile's dq_tiles
        // counts the accumulator's tiles, one here: both warpgroups add into the same.)
        const double parts = k.kernel == "flash2h" && p.head_dim == 64 ? 2.0 : static_cast<double>(k.dq_tiles);
        const double added = parts * static_cast<double>(br) * d * 4;  // fp32 bytes a step adds
        const double red_rate =
            rates.l2_red > 0 ? rates.l2_red : l2 / 2;  // unmeasured: a read and a write at L2's rate
        t_l2 = added * all_tiles / red_rate;
        const double tile_dq = added / red_rate * bw + rates.red_fence_s;
        out.uncertain = true;
        char fence[160];
        if (rates.red_fence_s > 0)
            std::snprintf(fence, sizeof fence,
                          " and the fence after them (%.2f us, measured, once a step; one fence a step is an "
                          "assumption at d = 64, where the two warpgroups take turns)",
                          rates.red_fence_s * 1e6);
        else
            fence[0] = '\0';
        char buf[700];
        std::snprintf(buf, sizeof buf,
                      "deterministic mode: each warpgroup's dQ atomics (%.0f KiB a step, %s)%s are in series "
                      "with its step, since it fences before passing dQ_i's turn on (%.0f%% of the step here); "
                      "%s, so the model is a lower bound",
                      added / 1024, rates.l2_red > 0 ? "at the measured l2_red_f32x2 rate" : "l2_red not measured",
                      fence, 100 * tile_dq / (tile_compute + tile_dq),
                      rates.red_fence_s > 0 ? "the turn's round trip between key blocks is not measured"
                                            : "the fence's and the turn's round trips through L2, each step, "
                                              "are not measured and not charged");
        out.uncertain_why = buf;
        tile_compute += tile_dq;
    } else if (!fwd) {  // dQ_i accumulated per step: its fp32 tile(s) read and written in L2
        const double dq_bytes = 2.0 * k.dq_tiles * static_cast<double>(br) * d * 4;
        t_l2 = dq_bytes * all_tiles / l2;
        const double tile_dq = dq_bytes / l2 * bw;
        // Charged in series with the step at the L2 read rate (the warps that compute issue the
        // atomics): a stand-in. When it is a quarter of the step or more, how much of it really runs
        // beside the products decides the time, and the model does not know that.
        if (tile_dq >= 0.25 * (tile_compute + tile_dq)) {
            out.uncertain = true;
            char buf[900];
            const double added = dq_bytes / 2;  // bytes of fp32 added a step (the charge counts read + write)
            const double tile_red = rates.l2_red > 0 ? added / rates.l2_red * bw : 0;  // at the measured rate
            if (rates.l2_red > 0 && k.dq == DqAccumulation::atomics)
                std::snprintf(buf, sizeof buf,
                              "the dQ accumulation (%.0f B of fp32 added a score by float2 atomics) is charged in "
                              "series at the L2 read rate, %.0f%% of a step here. Measured, the atomics add %.2f TB/s "
                              "(l2_red_f32x2), at which in series they would be %.0f%% of it; but the H200's d = 128 "
                              "rows, which add twice d = 64's bytes a score, run as fast as d = 64's, and its profile "
                              "puts 2%% of the stall samples on the atomics: most of them run beside the products, "
                              "by an amount the model does not know (the profile's largest stalls are the mma.sync "
                              "chains' fixed latencies)",
                              added / (static_cast<double>(br) * bc), 100 * tile_dq / (tile_compute + tile_dq),
                              rates.l2_red / 1e12, 100 * tile_red / (tile_compute + tile_red));
            else
                std::snprintf(buf, sizeof buf,
                              "the dQ accumulation's L2 traffic (%.0f B a score) is %.0f%% of a step when charged "
                              "in series, as here; how much of it runs beside the products is not modelled",
                              dq_bytes / (static_cast<double>(br) * bc), 100 * tile_dq / (tile_compute + tile_dq));
            out.uncertain_why = buf;
        }
        tile_compute += tile_dq;
    }
}

// flash1: one launch a key block, its blocks walking the query blocks with the O_i round trip.
void flash1_schedule(Shared& s, const Tiles& t) {
    const Problem& p = s.p;
    const KernelRates& rates = s.rates;
    const Machine& m = s.m;
    KernelPrediction& out = s.out;
    const double e = s.e;
    const double d = s.d;
    const double BH = s.BH;
    const double N = s.N;
    const double hbm = s.hbm;
    const double l2 = s.l2;
    const int64_t slots = s.slots;
    int& launches = s.launches;
    double& total_s = s.total_s;
    const int64_t br = t.br;
    const int64_t bc = t.bc;
    const int64_t tc = t.tc;
    const std::vector<int64_t>& per_block = t.per_block;
    const double sl = t.sl;
    const double bw = t.bw;
    const double tile_tensor = t.tile_tensor;
    const double tile_soft = t.tile_soft;
    // flash1: launch j runs G x B*H blocks; block g walks the visited query blocks g, g + G, ...;
    // a step reads and writes O_i (fp32), l_i, m_i and reads the next Q_i, under its arithmetic.
    // The round trip moves at the rate measured for the kernel's own access pattern (hbm_rmw:
    // float2 loads all in flight, then float2 stores, one block an SM) where it was measured.
    const double rmw = d == 64 ? rates.hbm_rmw_d64 : d == 128 ? rates.hbm_rmw_d128 : 0;
    const double trip = 2.0 * static_cast<double>(br) * d * 4 + 4.0 * static_cast<double>(br) * 4;
    const double io = (trip / (rmw > 0 ? rmw : hbm) + static_cast<double>(br) * d * e / hbm) * bw;
    const double step = std::max(tile_tensor + tile_soft, io);
    // The step hides its round trip under its arithmetic (the max): the loads are issued before
    // the products and used after them. The model's arithmetic is a chain in series: products,
    // their operands staged by ldmatrix, then the softmax. But each of a block's 8 warps walks its
    // own strip, so one warp's softmax can run beside another's products, by an amount the model
    // does not know; and at d = 128 the kernel spills a few registers, which it does not charge.
    out.uncertain = true;
    char buf[1600];
    if (rmw > 0)
        std::snprintf(buf, sizeof buf,
                      "flash1's step is its arithmetic: the round trip of O_i (fp32), l_i, m_i in the kernel's "
                      "access pattern runs at %.2f TB/s here (hbm_rmw, one block an SM) and takes %.0f%% of "
                      "the step's arithmetic, hidden under it (the H200's profile at d = 64 puts 5%% of the "
                      "warps' stall samples on long-scoreboard waits). Its products run at the measured mma.sync "
                      "rate: Nsight Compute has the tensor pipe busy 35.0%% (d = 64) and 33.8%% (d = 128) of a "
                      "step launch's cycles at N = 8192, the share the model's products take of the measured "
                      "time there (34%%). The units overlap: the raw counters of one launch (2026-12-05) put the "
                      "tensor pipe, shared memory's ldmatrix wavefronts and the exponential unit at 34.6%%, 49%% "
                      "and 25%% of the cycles at d = 64, 109%% together, and at 33.8%%, 48%% and 12%%, 94%%, at "
                      "d = 128, where the model's chain charges products, staging and softmax in series. How "
                      "much overlaps is what the model does not know (8 warps a block, each on its own strip; "
                      "the largest stalls are the mma.sync chains' fixed latencies), and what the register "
                      "spills at d = 128 cost (255 registers and 36 bytes spilled, 204 causal: 279,552 "
                      "local-memory requests a launch at N = 8192, 4%% of the stall samples on their stores), "
                      "not charged",
                      rmw / 1e12, 100 * io / (tile_tensor + tile_soft));
    else
        std::snprintf(buf, sizeof buf,
                      "flash1's per-step round trip of O_i (fp32), l_i, m_i is %.0f%% of a step when charged "
                      "in series at the copy rate; the model hides it under the step's arithmetic, and the "
                      "rate of the kernel's own access pattern (hbm_rmw) is not measured for this GPU, so "
                      "which of the two sets the step is not known",
                      100 * io / (tile_tensor + tile_soft + io));
    out.uncertain_why = buf;
    const double kv_first = 2.0 * static_cast<double>(bc) * d * e / l2 * bw;  // K_j, V_j (L2: shared by G blocks)
    const int64_t sms = std::max(1, m.sm_count);
    double steady = 0;
    for (int64_t j = 0; j < tc; ++j) {
        const int64_t nq = per_block[static_cast<size_t>(j)];
        if (nq == 0) continue;
        const int64_t G = std::max<int64_t>(1, std::min<int64_t>(nq, sms / std::max<int64_t>(1, p.heads_total())));
        std::vector<double> durations;
        for (int64_t h = 0; h < p.heads_total(); ++h)
            for (int64_t g = 0; g < G; ++g) {
                const int64_t steps = nq / G + (g < nq % G ? 1 : 0);
                durations.push_back(kv_first + io + static_cast<double>(steps) * step);
                steady += static_cast<double>(steps) * step;
            }
        out.ctas += static_cast<int64_t>(durations.size());
        total_s += detail::list_makespan(durations, slots) + rates.launch_s;
    }
    launches = static_cast<int>(tc) + 2;  // + the init (O = 0, l = 0, m = -inf) and the final cast
    total_s += 2 * rates.launch_s + (4.0 * N * BH * d + 8.0 * N * BH + 4.0 * N * BH * d + N * BH * d * e) / hbm;
    out.steady_s = steady / sl;
}

// dQ in block order: the fill of the chain a head's key blocks form.
void dq_chain_fill(Shared& s, const Tiles& tl) {
    KernelPrediction& out = s.out;
    double& total_s = s.total_s;
    const int64_t tr = tl.tr;
    const int64_t tc = tl.tc;
    const double tile = tl.tile;
    auto visited = [&](int64_t i, int64_t j) { return tile_visited(s.p, tl, i, j); };
    // dQ in block order: key block j's step at query block i waits until block j - 1 has
    // added there, so a head's blocks form a chain. The first blocks to run (one head's, all
    // resident at once) fill it: block j starts when block j - 1 has passed its first query
    // block. Later heads' blocks start as the chain's blocks finish, one after another,
    // already in step; so the fill is paid once, as the chain's end beyond its longest
    // block. (Steps of one tile each; the chain from the walk's visited tiles.)
    std::vector<double> prev_done(static_cast<size_t>(tr), 0.0), done(static_cast<size_t>(tr), 0.0);
    double chain_end = 0;
    int64_t longest = 0;
    for (int64_t j = 0; j < tc; ++j) {
        double t = 0;
        int64_t len = 0;
        for (int64_t i = 0; i < tr; ++i) {
            if (!visited(i, j)) continue;
            t = std::max(t, j > 0 ? prev_done[static_cast<size_t>(i)] : 0.0) + 1;
            done[static_cast<size_t>(i)] = t;
            ++len;
        }
        chain_end = std::max(chain_end, t);
        longest = std::max(longest, len);
        prev_done.swap(done);
    }
    const double fill = (chain_end - static_cast<double>(longest)) * tile;
    total_s += fill;
    char buf[200];
    std::snprintf(buf, sizeof buf,
                  "dQ in block order: the chain of a head's %lld key blocks fills once, %.0f steps (%.4f ms)",
                  static_cast<long long>(tc), chain_end - static_cast<double>(longest), fill * 1e3);
    out.notes.push_back(buf);
}

// The backward's side passes (zeroing, D, the dQ cast) and flash2h's measured fixed cost a block.
void backward_side_passes(Shared& s, const Tiles& t) {
    const KernelProfile& k = s.k;
    const KernelRates& rates = s.rates;
    KernelPrediction& out = s.out;
    const double e = s.e;
    const double d = s.d;
    const double BH = s.BH;
    const double N = s.N;
    const double hbm = s.hbm;
    int& launches = s.launches;
    bool& bulk_model = s.bulk_model;
    double& total_s = s.total_s;
    const int64_t br = t.br;
    const double sl = t.sl;
    const double prologue = t.prologue;
    const double tiles_dq = k.dq_tiles;  // the post pass sums the tiles
    // the zeroing writes every tile (in the pre pass, both kernels); the bulk schedules' tiles cover the query
    // rows padded to whole blocks
    const double acc_rows = k.dq == DqAccumulation::bulk_reduction
                                ? std::ceil(N / static_cast<double>(br)) * static_cast<double>(br)
                                : static_cast<double>(N);
    const double zero = tiles_dq * acc_rows * BH * d * 4 / hbm;
    const double pre = 2.0 * N * BH * d * e / hbm;
    const double post = (tiles_dq * N * BH * d * 4 + N * BH * d * e) / hbm;
    total_s += zero + pre + post;
    // flash2h's backward: what a key block pays besides its steps was measured on the H200
    // (cuda/NOTES.md, "flash2h backward's fixed cost a block" and "... at d = 64"): 2,048
    // blocks at N = 128-1024 lie on one line in the steps. d = 128: 23.2 us + 2.03 us a
    // step with the first post pass (114 us a call) and pre pass (72 us); the staged post
    // pass takes 47 us and the pre pass at 16 bytes a lane 65.5 (Nsight Compute, same rows),
    // 73.5 us over 15.5 waves less: 18.5 us a block. d = 64, with those passes: 10.1 us +
    // 2.67 us a step. The model's fixed part of a block is its prologue (first tiles, last
    // dK_j, dV_j) and its share of the side passes and launches; what it lacks of the
    // measured figure it does not know the source of, and where that would move the time by
    // more than 10% (two thirds of the band a certain prediction claims) the prediction is
    // uncertain.
    if (bulk_model && !out.uncertain && out.ctas > 0 && (d == 64 || d == 128)) {
        // H200, 2026-12-04: d = 128 7d24783's line with d1f9481's passes; d = 64 1b253b8's line
        struct BlockFixed {
            double s;          // seconds a key block pays besides its steps
            const char* line;  // the measured line it comes from
        };
        const BlockFixed measured =
            d == 128 ? BlockFixed{18.5e-6, "23.2 us + 2.03 us a step; faster side passes then saved 4.7 us a block"}
                     : BlockFixed{10.1e-6, "10.1 us + 2.67 us a step"};
        const double waves = static_cast<double>(out.ctas) / sl;
        const double model_fixed = prologue + (zero + pre + post + launches * rates.launch_s) / waves;
        const double missing = std::max(0.0, measured.s - model_fixed);
        const double share = missing * waves / (total_s + launches * rates.launch_s);
        if (share > 0.10) {
            out.uncertain = true;
            char buf[700];
            std::snprintf(buf, sizeof buf,
                          "flash2h backward, short walks: a key block's fixed cost (besides its steps) "
                          "is %.1f us at d = %d on the H200 (2,048 blocks at N = 128-1024 lay on %s), "
                          "where the model "
                          "charges %.1f us (its first tiles, last dK_j, dV_j and share of the side "
                          "passes); the %.1f us it does not know the source of would add %.0f%% here",
                          measured.s * 1e6, static_cast<int>(d), measured.line, model_fixed * 1e6, missing * 1e6,
                          100 * share);
            out.uncertain_why = buf;
        }
    }
}

// flash2h's static order without a mask, its last round split along the keys (KernelProfile::tail_split,
// the kernel's own plan, sim/tail_plan.hpp): each of the G blocks runs F = units / G whole units, then its
// run of the L left-over units' key blocks (the longest), in at most two pieces, each begun as a unit is
// (its prologue). The piece that ends a unit reads the others' partials: a block writes two pieces' and
// reads one's, at its share of the L2's bandwidth (they are read back within microseconds of being
// written). Where the plan is not worth splitting the kernel runs the last round whole: `whole`.
double split_tail_makespan(const Shared& s, const Tiles& t, double whole) {
    const int64_t units = static_cast<int64_t>(t.per_block.size()) * static_cast<int64_t>(s.BH);
    const int64_t tc = t.per_block.empty() ? 0 : t.per_block.front();
    const tail::Plan tp = tail::plan(static_cast<int>(units), static_cast<int>(tc), static_cast<int>(s.slots));
    if (!tail::worth(tp)) return whole;
    const double unit_s = t.prologue + static_cast<double>(tc) * t.tile;
    const double piece_bytes = static_cast<double>(tail::piece_bytes(static_cast<int>(t.br), static_cast<int>(s.d)));
    const double merge_s = 3 * piece_bytes / (s.l2 / static_cast<double>(s.slots));
    const double run = static_cast<double>(tail::longest_run(tp));
    char buf[300];
    std::snprintf(buf, sizeof buf,
                  "the last round's %d units split along the keys over %d blocks: %.0f key blocks each, "
                  "%.1f us of merging a block",
                  tp.L, tp.G, run, merge_s * 1e6);
    s.out.notes.push_back(buf);
    return static_cast<double>(tp.u_full / tp.G) * unit_s + run * t.tile + 2 * t.prologue + merge_s;
}

// One launch of all the blocks: the makespan of their durations over the slots, and the side passes.
void one_grid_schedule(Shared& s, const Tiles& t) {
    const Problem& p = s.p;
    const KernelProfile& k = s.k;
    const KernelRates& rates = s.rates;
    KernelPrediction& out = s.out;
    const bool fwd = s.fwd;
    const double BH = s.BH;
    const int64_t slots = s.slots;
    int& launches = s.launches;
    double& total_s = s.total_s;
    const std::vector<int64_t>& per_block = t.per_block;
    const double sl = t.sl;
    const double tile = t.tile;
    const double prologue = t.prologue;
    std::vector<double> durations;
    durations.reserve(per_block.size() * static_cast<size_t>(BH));
    double steady = 0;
    for (int64_t h = 0; h < p.heads_total(); ++h)
        for (int64_t n : per_block) {
            durations.push_back(prologue + static_cast<double>(n) * tile);
            steady += static_cast<double>(n) * tile;
        }
    out.ctas = static_cast<int64_t>(durations.size());
    if (out.grid == GridOrder::static_units) {
        // a persistent grid: G = min(slots, units) blocks, block s running units s, s + G, ...
        // (durations are numbered head * T_r + i, as StaticUnits names them)
        const detail::StaticUnits su{static_cast<int64_t>(per_block.size()), p.heads_total(), p.causal, k.lone_middles};
        total_s = detail::makespan_in_turn(su, slots, [&](int64_t g) { return durations[static_cast<size_t>(g)]; });
        if (k.tail_split && fwd && !p.causal) total_s = split_tail_makespan(s, t, total_s);
    } else {
        total_s = detail::list_makespan(durations, slots);
    }
    if (!fwd && k.dq == DqAccumulation::ordered) dq_chain_fill(s, t);
    out.steady_s = steady / sl;
    launches = 1 + k.side_launches;
    if (!fwd) backward_side_passes(s, t);
    total_s += launches * rates.launch_s;
}

// A step's time (its arithmetic and its share of HBM) and what a block pays before and after its steps.
void step_time(Shared& s, Tiles& t) {
    const KernelProfile& k = s.k;
    const bool fwd = s.fwd;
    const double e = s.e;
    const double d = s.d;
    const double hbm = s.hbm;
    const double t_hbm = s.t_hbm;
    const int64_t br = t.br;
    const int64_t bc = t.bc;
    const double all_tiles = t.all_tiles;
    const double bw = t.bw;
    const double tile_compute = t.tile_compute;
    const double tile_hbm = t_hbm / all_tiles * bw;
    const double tile = (k.overlap == Overlap::none) ? tile_compute + tile_hbm : std::max(tile_compute, tile_hbm);
    // The first tiles a block loads before its pipeline runs, at the slot's share of HBM.
    const double first_bytes = fwd ? (static_cast<double>(br) + 2.0 * bc) * d * e : (2.0 * bc + 2.0 * br) * d * e;
    // and the tiles it stores after its last step (O_i and LSE_i; dK_j and dV_j), not hidden either
    const double e_out = static_cast<double>(s.p.out_bytes());
    const double last_bytes = fwd ? static_cast<double>(br) * (d * e_out + 4) : 2.0 * static_cast<double>(bc) * d * e;
    const double prologue = (first_bytes + last_bytes) / hbm * bw;
    t.tile = tile;
    t.prologue = prologue;
}

// The tiled kernels (flash1, flash2, flash2h): a step's time, then the blocks' schedule.
void predict_tiled(Shared& s) {
    Tiles t;
    tiled_blocks(s, t);
    tiled_dq_step(s, t);
    step_time(s, t);
    if (s.k.one_launch_per_kv_block)
        flash1_schedule(s, t);
    else
        one_grid_schedule(s, t);
    s.out.waves = static_cast<double>(s.out.ctas) / t.sl;
}

// FP8 is FlashAttention-3's forward on wgmma, on a card with a datasheet FP8 rate.
void refuse_fp8(const Problem& p, const KernelProfile& prof, const Machine& m) {
    if (p.dtype != DType::fp8) return;
    if (prof.pass != Pass::forward)
        throw Error(
            "fp8 is modelled for the forward only (FlashAttention-3's FP8 kernel); use --pass forward, or "
            "--dtype bf16 for the backward");
    if (prof.tensor != TensorPath::wgmma)
        throw Error(prof.kernel + " runs on " + std::string(tensor_path_name(prof.tensor)) +
                    "; the FP8 forward is modelled on wgmma, whose e4m3 rate is twice bf16's: use --kernel flash2h");
    if (m.matmul_flops_fp8 <= 0 || m.matmul_flops <= 0)
        throw Error(m.name +
                    " has no FP8 tensor-core rate in its preset; the FP8 forward is modelled on the H100 "
                    "and H200 (--gpu H100-SXM or H200)");
}

}  // namespace

KernelPrediction predict_kernel(const Problem& p, const KernelProfile& prof, const KernelRates& rates, const Machine& m,
                                int64_t block_rows, int64_t block_cols) {
    p.validate();
    if (p.dtype == DType::fp32)
        throw Error("the CUDA kernels store fp16 or bf16 (tensor-core inputs); the kernel model has no fp32 path");
    refuse_fp8(p, prof, m);
    if (prof.tensor == TensorPath::wgmma && m.compute_capability != 0 && m.compute_capability < 90)
        throw Error(prof.kernel + " runs on wgmma and TMA, which need compute capability 9.0 (Hopper: H100, H200); " +
                    m.name + " is " + std::to_string(m.compute_capability / 10) + "." +
                    std::to_string(m.compute_capability % 10) + ", where the kernels run flash2 (--kernel flash2)");
    KernelPrediction out;
    out.profile = with_tiles(prof, block_rows, block_cols);
    KernelProfile& k = out.profile;
    out.rates_source = rates.source;
    const bool fwd = k.pass == Pass::forward;
    const double e = static_cast<double>(p.elem_bytes()), d = static_cast<double>(p.head_dim);
    const double BH = static_cast<double>(p.heads_total()), N = static_cast<double>(p.seq);
    const double hbm = rate_or_throw(rates.hbm, "HBM");
    const double l2 = rates.l2 > 0 ? rates.l2 : hbm;
    const double ex = rate_or_throw(rates.exp, "exponential");
    const double issue = rates.issue > 0 ? rates.issue : 8 * ex;

    // The simulator's walk of the kernel's tiles: the work and the HBM bytes through its L2 model.
    Config c;
    c.algo = k.algo;
    c.pass = k.pass;
    c.numerics = Numerics::off;
    c.event_cap = 1;
    c.record_row = -1;
    c.timing = false;
    c.l2_budget = int64_t{1} << 20;  // the library default: a sample of the heads beyond it (said in notes)
    out.grid = grid_order(k, p);
    c.grid_order = out.grid;
    c.lone_middles = k.lone_middles;
    c.dq_in_block_order = k.algo == Algo::flash2 && k.pass == Pass::backward && k.dq == DqAccumulation::ordered;
    (k.pass == Pass::forward ? c.fwd_blocks_per_sm : c.bwd_blocks_per_sm) = k.ctas_per_sm;
    if (k.block_rows > 0) {
        c.block_rows = c.bwd_block_rows = k.block_rows;
        c.block_cols = c.bwd_block_cols = k.block_cols;
        c.sram_bytes = std::max<int64_t>(m.sram_bytes, 1 << 20);  // the kernel's tiles, held however it holds them
    }
    const Result r = simulate(p, m, c);
    const Totals& tot = r.totals;
    const double mm = static_cast<double>(tot.flops.matmul), n_exp = static_cast<double>(tot.flops.exp);
    // FP8: P to e4m3 before its product, one fp32-lane instruction an element of P: a forward's two
    // products cost 4 d FLOPs a score (the exponentials count the rescales' too, so not those)
    const double n_other = static_cast<double>(tot.flops.other) +
                           (p.dtype == DType::fp8 ? mm / (4.0 * static_cast<double>(p.head_dim)) : 0.0);
    const double bytes = static_cast<double>(r.l2.simulated ? r.l2.hbm_total().total() : tot.hbm_total().total());
    if (!r.l2.simulated)
        out.notes.push_back("HBM bytes without the L2 model: " + r.l2.note);
    else if (!r.l2.note.empty())
        out.notes.push_back("L2: " + r.l2.note);

    double tensor_rate = 0;
    switch (k.tensor) {
        case TensorPath::mma_sync:
            tensor_rate = rate_or_throw(rates.mma_sync, "mma.sync");
            break;
        case TensorPath::wgmma:
            tensor_rate = p.dtype != DType::fp8 ? rate_or_throw(rates.wgmma, "wgmma")
                          : rates.wgmma_fp8 > 0
                              ? rates.wgmma_fp8
                              : rate_or_throw(rates.wgmma, "wgmma") * m.matmul_flops_fp8 / m.matmul_flops;
            break;
        case TensorPath::library_gemm:
            tensor_rate = rate_or_throw(rates.gemm, "GEMM");
            break;
    }
    const double t_tensor = mm / tensor_rate;
    const double t_smem =
        k.operand_bytes_per_flop > 0 ? mm * k.operand_bytes_per_flop / rate_or_throw(rates.smem, "shared-memory") : 0;
    const double t_exp = n_exp / ex, t_issue = n_other / issue, t_hbm = bytes / hbm;
    const int64_t slots = static_cast<int64_t>(std::max(1, m.sm_count)) * std::max(1, k.ctas_per_sm);
    out.slots = slots;
    out.tflops = 0;

    Shared s{p,   k,  rates, m,           r,        out,    fwd,   e,       d,     BH,   N,
             hbm, l2, ex,    tensor_rate, t_tensor, t_smem, t_exp, t_issue, t_hbm, slots};
    if (k.algo == Algo::standard)
        predict_standard(s);
    else
        predict_tiled(s);
    const int launches = s.launches;
    const double t_l2 = s.t_l2, t_stores = s.t_stores, t_waits = s.t_waits;
    const bool bulk_model = s.bulk_model;
    const double total_s = s.total_s;
    out.prologue_s = std::max(0.0, total_s - out.steady_s - launches * rates.launch_s);
    out.predicted_ms = total_s * 1e3;
    out.tflops = total_s > 0 ? usual_flops(p, k.pass) / total_s / 1e12 : 0;
    out.components = {
        {"hbm", t_hbm, "HBM bytes through the L2 model at the copy rate"},
        {"l2", t_l2,
         bulk_model ? "the dQ tiles added into L2 by bulk reductions, at the measured bulk-reduction rate"
                    : "the backward's dQ accumulator read and written in L2"},
        {"smem_stores", t_stores, "dS^T and the dQ tiles stored to shared memory by the consumer warpgroups"},
        {"wgmma_waits", t_waits, "wgmma groups waited on at once (their latency), each warpgroup's share"},
        {"tensor", t_tensor, std::string("matmul FLOPs at the ") + std::string(tensor_path_name(k.tensor)) + " rate"},
        {"smem_operands", t_smem, "operands staged from shared memory for the products (ldmatrix)"},
        {"exp", t_exp, "exponentials on the MUFU ex2 unit"},
        {"issue", t_issue, "max, sums, scaling and rescales on the fp32 lanes"},
        {"launches", launches * rates.launch_s, std::to_string(launches) + " launch(es)"}};
    const auto big =
        std::max_element(out.components.begin(), out.components.end(),
                         [](const TimeComponent& a, const TimeComponent& b) { return a.seconds < b.seconds; });
    out.bound = big->name;
    return out;
}

}  // namespace sim
