#include "sim/figure2.hpp"

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <functional>
#include <queue>
#include <string>
#include <utility>
#include <vector>

#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {

// ---------------------------------------------------------------- [columns]
int64_t Fig2Kernel::read_bytes() const {
    int64_t s = 0;
    for (const auto& t : tensors) s += t.read;
    return s;
}
int64_t Fig2Kernel::written_bytes() const {
    int64_t s = 0;
    for (const auto& t : tensors) s += t.written;
    return s;
}
const TensorBytes* Fig2Kernel::find(const std::string& tensor) const {
    for (const auto& t : tensors)
        if (t.tensor == tensor) return &t;
    return nullptr;
}
int64_t Fig2Column::hbm_bytes() const {
    int64_t s = 0;
    for (const auto& k : kernels) s += k.bytes();
    return s;
}
double Fig2Column::flops() const {
    double s = 0;
    for (const auto& k : kernels) s += k.matmul_flops + k.other_flops;
    return s;
}
double Fig2Column::matmul_flops() const {
    double s = 0;
    for (const auto& k : kernels) s += k.matmul_flops;
    return s;
}
double Fig2Column::seconds() const {
    double s = 0;
    for (const auto& k : kernels) s += k.seconds;
    return s;
}

namespace {

void add(Fig2Kernel& k, const std::string& tensor, int64_t read, int64_t written) {
    for (auto& t : k.tensors)
        if (t.tensor == tensor) {
            t.read += read;
            t.written += written;
            return;
        }
    k.tensors.push_back({tensor, read, written});
}

double positive(double v, const char* what) {
    if (!(v > 0)) throw Error(std::string("figure 2 needs a ") + what + " rate; the ceilings given have none");
    return v;
}

// One eager kernel as a line of the table below: the tensors it reads and writes (bytes, all heads) and its work.
struct EagerOp {
    bool on;  // whether the options run this kernel
    std::string name;
    int pass;  // 0 forward, 1 backward
    std::vector<std::pair<std::string, int64_t>> reads, writes;
    double matmul_flops, other_flops, exps;
};

// The kernels eager PyTorch launches for these options, in launch order (forward, then autograd's
// backward), each with the tensors it moves under the name of the op that made them.
std::vector<Fig2Kernel> eager_kernels(const EagerOptions& o, int64_t BH, int64_t N, int64_t d, int64_t e) {
    const int64_t nn = BH * N * N * e, nd = BH * N * d * e, mask_bool = BH * N * N;
    const int64_t causal_buf = o.mask == EagerMask::add ? N * N * e : N * N;  // dtype or bool, once for all heads
    const double scores = static_cast<double>(BH) * static_cast<double>(N) * static_cast<double>(N);
    const double gemm = 2.0 * scores * static_cast<double>(d);  // one N x N x d product, all heads
    const bool bwd = o.backward, split = o.softmax_backward_kernels == 2;
    const bool where = o.mask == EagerMask::where;
    // With the scale as the forward GEMM's alpha, autograd scales each input's gradient by it after its
    // product: an elementwise kernel over dQ and one over dK (N x d each).
    const bool alpha = !o.separate_scale;
    const double grad_scale = static_cast<double>(BH * N * d);
    const std::string dQ = alpha ? "dQ_unscaled" : "dQ", dK = alpha ? "dK_unscaled" : "dK";
    // a kernel's line: whether it runs, its name, pass, reads, writes, matmul FLOPs, other FLOPs, exponentials
    using Io = std::vector<std::pair<std::string, int64_t>>;
    auto op = [](bool on, std::string name, int pass, Io reads, Io writes, double mm, double other, double exps) {
        return EagerOp{on, std::move(name), pass, std::move(reads), std::move(writes), mm, other, exps};
    };
    const std::vector<EagerOp> ops = {
        op(true, "S = Q K^T (batched GEMM)", 0, {{"Q", nd}, {"K", nd}}, {{"S", nn}}, gemm, 0, 0),
        op(o.separate_scale, "S / sqrt(d)", 0, {{"S", nn}}, {{"S_scaled", nn}}, 0, scores, 0),
        op(o.mask != EagerMask::none, where ? "where(causal, S, -inf)" : "S + causal mask", 0,
           {{"S_scaled", nn}, {"causal_mask", causal_buf}}, {{"S_masked", nn}}, 0, scores, 0),
        // max, subtract, sum, divide
        op(true, "P = softmax(S)", 0, {{"S_masked", nn}}, {{"P", nn}}, 0, 4 * scores, scores),
        // compare with the random number, scale
        op(o.dropout, "P_d = dropout(P)", 0, {{"P", nn}}, {{"P_d", nn}, {"dropout_mask", mask_bool}}, 0, 2 * scores, 0),
        op(true, "O = P_d V (batched GEMM)", 0, {{"P_d", nn}, {"V", nd}}, {{"O", nd}}, gemm, 0, 0),
        op(bwd, "dP_d = dO V^T (GEMM)", 1, {{"dO", nd}, {"V", nd}}, {{"dP_d", nn}}, gemm, 0, 0),
        op(bwd, "dV = P_d^T dO (GEMM)", 1, {{"P_d", nn}, {"dO", nd}}, {{"dV", nd}}, gemm, 0, 0),
        op(bwd && o.dropout, "dP = dP_d * mask / (1 - p)", 1, {{"dP_d", nn}, {"dropout_mask", mask_bool}}, {{"dP", nn}},
           0, 2 * scores, 0),
        op(bwd && split, "dPP = dP * P (softmax backward, product)", 1, {{"dP", nn}, {"P", nn}}, {{"dPP", nn}}, 0,
           scores, 0),
        op(bwd,
           split ? "dS = dPP - P * rowsum(dPP) (softmax backward)"
                 : "dS = P * (dP - rowsum(dP * P)) (softmax backward)",
           1, {{split ? "dPP" : "dP", nn}, {"P", nn}}, {{"dS_masked", nn}}, 0, (split ? 2 : 3) * scores, 0),
        // an added mask passes the gradient through
        op(bwd && where, "where(causal, dS, 0)", 1, {{"dS_masked", nn}, {"causal_mask", causal_buf}},
           {{"dS_scaled", nn}}, 0, scores, 0),
        op(bwd && o.separate_scale, "dS / sqrt(d)", 1, {{"dS_scaled", nn}}, {{"dS", nn}}, 0, scores, 0),
        op(bwd, "dQ = dS K (GEMM)", 1, {{"dS", nn}, {"K", nd}}, {{dQ, nd}}, gemm, 0, 0),
        op(bwd && alpha, "dQ = scale * dQ (the product's alpha, backward)", 1, {{dQ, nd}}, {{"dQ", nd}}, 0, grad_scale,
           0),
        op(bwd, "dK = dS^T Q (GEMM)", 1, {{"dS", nn}, {"Q", nd}}, {{dK, nd}}, gemm, 0, 0),
        op(bwd && alpha, "dK = scale * dK (the product's alpha, backward)", 1, {{dK, nd}}, {{"dK", nd}}, 0, grad_scale,
           0),
    };
    std::vector<Fig2Kernel> ks;
    for (const EagerOp& line : ops) {
        if (!line.on) continue;
        Fig2Kernel k;
        k.name = line.name;
        k.pass = line.pass;
        for (const auto& [tensor, bytes] : line.reads) add(k, tensor, bytes, 0);
        for (const auto& [tensor, bytes] : line.writes) add(k, tensor, 0, bytes);
        k.matmul_flops = line.matmul_flops;
        k.other_flops = line.other_flops;
        k.exps = line.exps;
        ks.push_back(std::move(k));
    }
    return ks;
}

}  // namespace

// ---------------------------------------------------------------- [eager_attention()]
EagerOptions hf_gpt2_eager() {
    EagerOptions o;
    o.separate_scale = true;
    o.mask = EagerMask::where;
    return o;
}

// Each op is a kernel that reads every input from HBM and writes its output to HBM (eager mode:
// nothing fused). Per head, e bytes an element: an N x N tensor is N^2 e bytes, an N x d one N d e;
// dropout's mask is bool (1 byte an element). The causal mask (GPT-2's (1, 1, N, N) bool buffer, or the
// authors' N x N tensor of the dtype) is read by every head; at 1-2 MiB at N = 1024 it stays in L2
// after the first head, so it is counted once, not per head.
Fig2Column eager_attention(const Problem& p, const KernelRates& r, const EagerOptions& o) {
    p.validate();
    if (o.softmax_backward_kernels != 1 && o.softmax_backward_kernels != 2)
        throw Error("the softmax backward is 1 or 2 kernels, not " + std::to_string(o.softmax_backward_kernels));
    const int64_t BH = p.heads_total(), N = p.seq, d = p.head_dim, e = p.elem_bytes();
    const double hbm = positive(r.hbm, "HBM"), mm_rate = positive(r.gemm, "GEMM"), ex = positive(r.exp, "exp");

    Fig2Column c;
    c.name = "standard (eager PyTorch)";
    const bool hf = o.separate_scale && o.mask == EagerMask::where;
    const bool authors = !o.separate_scale && o.mask == EagerMask::add && o.dropout;
    const char* whose = hf        ? "as HuggingFace's GPT-2 attention runs in eager PyTorch"
                        : authors ? "as the paper's authors' PyTorch baseline runs it"
                                  : "in eager PyTorch";
    c.description = std::string("one kernel an op, ") + whose + ": S = QK^T" +
                    (o.separate_scale ? ", S / sqrt(d)" : " (the scale as the GEMM's alpha)") +
                    (o.mask == EagerMask::where ? ", the causal where"
                     : o.mask == EagerMask::add ? ", + the causal mask"
                                                : "") +
                    ", softmax" + (o.dropout ? ", dropout" : "") + ", O = PV" +
                    (o.backward ? "; autograd's backward kernel for each" : "") +
                    (o.backward && o.mask == EagerMask::add ? " (the mask's sum has none)" : "");
    // Names follow the data, not the op that made it: with an op left out, its input is its output.
    std::vector<Fig2Kernel> ks = eager_kernels(o, BH, N, d, e);
    for (auto& k : ks)
        for (auto& t : k.tensors) {
            if (!o.separate_scale && t.tensor == "S_scaled") t.tensor = "S";
            if (o.mask == EagerMask::none && t.tensor == "S_masked") t.tensor = o.separate_scale ? "S_scaled" : "S";
            if (!o.dropout && t.tensor == "P_d") t.tensor = "P";
            if (!o.dropout && t.tensor == "dP_d") t.tensor = "dP";
            if (o.mask != EagerMask::where && t.tensor == "dS_masked") t.tensor = o.separate_scale ? "dS_scaled" : "dS";
            if (!o.separate_scale && t.tensor == "dS_scaled") t.tensor = "dS";
        }
    int unmeasured = 0;
    for (auto& k : ks) {
        if (const auto it = o.hbm_fraction.find(k.name); it != o.hbm_fraction.end()) {
            if (!(it->second > 0) || it->second > 2)
                throw Error("eager kernel '" + k.name + "': a fraction of the HBM rate must lie in (0, 2], got " +
                            std::to_string(it->second));
            k.hbm_fraction = it->second;
        } else if (!o.hbm_fraction.empty())
            ++unmeasured;
        const double t_hbm = static_cast<double>(k.bytes()) / (hbm * k.hbm_fraction), t_mm = k.matmul_flops / mm_rate,
                     t_ex = k.exps / ex;
        k.seconds = std::max({t_hbm, t_mm, t_ex}) + r.launch_s;
        k.bound = t_hbm >= t_mm && t_hbm >= t_ex ? "hbm" : (t_mm >= t_ex ? "tensor" : "exp");
    }
    c.kernels = std::move(ks);
    if (o.hbm_fraction.empty())
        c.notes.push_back(
            "each kernel: max(bytes at the HBM rate, matmul FLOPs at the GEMM rate, exponentials at the "
            "exp rate) + a launch; the GEMMs' operand re-reads are taken to hit L2 (each operand "
            "counted once); the causal mask buffer is counted once (L2-resident)");
    else
        c.notes.push_back(
            "each kernel: max(bytes at the fraction of the HBM rate the same PyTorch kernel reached where it was "
            "measured, matmul FLOPs at the GEMM rate, exponentials at the exp rate) + a launch (" +
            o.hbm_fraction_source + ")" +
            (unmeasured ? "; " + std::to_string(unmeasured) + " kernel(s) not measured run at the rate" : "") +
            "; the GEMMs' operand re-reads are taken to hit L2; the causal mask buffer is counted once");
    return c;
}

// ---------------------------------------------------------------- [fa1_attention()]
int64_t fa1_block_cols(const Problem& p) {
    if (p.seq <= 128) return 128;
    return p.head_dim > 64 ? 128 : 256;
}

namespace {

// mma.sync staging (as sim/kernel_model.cpp counts it): a warp tile of 16 rows x n columns over
// depth k costs 2*16*n*k FLOPs and reads (16 + n) k e bytes from shared memory when both operands
// are staged, n k e when the 16-row operand is in registers.
double staged_both(double n, double e) { return e * (16 + n) / (2 * 16 * n); }
double staged_one(double e) { return e / (2 * 16); }

struct StepWork {
    double mm = 0, other = 0, exps = 0;
    int64_t bytes = 0;
};

}  // namespace

// The FA1 kernel's loops (fmha_fprop_kernel_1xN.h / fmha_dgrad_kernel_1xN_loop.h): a thread block per
// (batch, head); for each key block j (B_c keys): K_j, V_j to shared memory; for each 16-row query
// step i: Q_i (and dO_i) from HBM, the partial output o_tmp_i (fp32; the backward's dq_tmp_i) read
// unless j is the row's first key block and written unless it is its last (then O_i or dQ_i in the
// storage type), the softmax statistics (fp32, one a row) read and written. Blocks fully masked
// are skipped (a causal problem skips the query steps above the diagonal).
Fig2Column fa1_attention(const Problem& p, const Machine& m, const KernelRates& r, const Fa1Options& o) {
    p.validate();
    const int64_t N = p.seq, d = p.head_dim, e = p.elem_bytes(), BH = p.heads_total();
    const int64_t br = o.block_rows, bc = o.block_cols > 0 ? o.block_cols : fa1_block_cols(p);
    if (br <= 0 || bc <= 0) throw Error("FA1 block sizes must be positive");
    if (o.accum_bytes != 2 && o.accum_bytes != 4) throw Error("FA1's o_tmp / dq_tmp elements are 2 or 4 bytes");
    const int64_t acc = o.accum_bytes, stat = 4;
    const int64_t Tr = (N + br - 1) / br, Tc = (N + bc - 1) / bc;
    const double ed = static_cast<double>(e);
    const double hbm = positive(r.hbm, "HBM"), mma = positive(r.mma_sync, "mma.sync"), ex = positive(r.exp, "exp");
    const double smem = positive(r.smem, "shared-memory"), issue = r.issue > 0 ? r.issue : 8 * ex;

    auto visited = [&](int64_t i, int64_t j) {
        return !tile_masked(p, i * br, std::min(N, (i + 1) * br), j * bc, std::min(N, (j + 1) * bc));
    };
    std::vector<int64_t> first_j(static_cast<size_t>(Tr), -1), last_j(static_cast<size_t>(Tr), -1);
    for (int64_t i = 0; i < Tr; ++i)
        for (int64_t j = 0; j < Tc; ++j)
            if (visited(i, j)) {
                if (first_j[static_cast<size_t>(i)] < 0) first_j[static_cast<size_t>(i)] = j;
                last_j[static_cast<size_t>(i)] = j;
            }

    Fig2Column c;
    c.name = "FlashAttention (FA1 kernel)";
    char buf[400];
    std::snprintf(buf, sizeof buf,
                  "the FA1 CUDA kernel's loops: a block per head, key blocks of B_c = %lld outer, query steps of "
                  "B_r = %lld rows inner; partial O and dQ in %s buffers between key blocks; S and P recomputed "
                  "in the backward",
                  static_cast<long long>(bc), static_cast<long long>(br), acc == 4 ? "fp32" : "2-byte");
    c.description = buf;

    // Time of one pass: each step max(arithmetic, its HBM bytes) at one slot's share of the GPU (the
    // next Q_i is requested before the products, as the kernel does), plus each key block's K_j, V_j
    // load (and the backward's dK_j, dV_j store) in series; blocks placed on SMs x blocks-an-SM slots.
    auto pass_time = [&](Fig2Kernel& k, int ctas_per_sm, double opb, const std::vector<std::vector<StepWork>>& steps,
                         const std::vector<int64_t>& per_j_bytes) {
        const double slots = static_cast<double>(std::max(1, m.sm_count) * std::max(1, ctas_per_sm));
        double head = 0, t_compute = 0, t_hbm_steps = 0;
        for (size_t j = 0; j < steps.size(); ++j) {
            head += static_cast<double>(per_j_bytes[j]) / hbm * slots;
            for (const auto& s : steps[j]) {
                const double compute = (s.mm / mma + s.mm * opb / smem + s.exps / ex + s.other / issue) * slots;
                const double copy = static_cast<double>(s.bytes) / hbm * slots;
                head += std::max(compute, copy);
                t_compute += compute;
                t_hbm_steps += copy;
            }
        }
        std::vector<double> durations(static_cast<size_t>(BH), head);
        k.seconds = detail::list_makespan(durations, static_cast<int64_t>(slots)) + r.launch_s;
        k.bound = t_compute >= t_hbm_steps ? "compute" : "hbm";
    };

    // forward
    {
        Fig2Kernel k;
        k.name = "FA1 forward (one launch, grid B x H)";
        k.pass = 0;
        std::vector<std::vector<StepWork>> steps(static_cast<size_t>(Tc));
        std::vector<int64_t> per_j(static_cast<size_t>(Tc), 0);
        for (int64_t j = 0; j < Tc; ++j) {
            const int64_t cols = std::min(bc, N - j * bc);
            bool any = false;
            for (int64_t i = 0; i < Tr; ++i) any = any || visited(i, j);
            if (!any) continue;
            add(k, "K", cols * d * e, 0);
            add(k, "V", cols * d * e, 0);
            per_j[static_cast<size_t>(j)] = 2 * cols * d * e;
            for (int64_t i = 0; i < Tr; ++i) {
                if (!visited(i, j)) continue;
                const int64_t rows = std::min(br, N - i * br);
                const bool first = j == first_j[static_cast<size_t>(i)], last = j == last_j[static_cast<size_t>(i)];
                StepWork w;
                add(k, "Q", rows * d * e, 0);
                w.bytes += rows * d * e;
                if (!first) {
                    add(k, "o_tmp", rows * d * acc, 0);
                    add(k, "softmax_lse", rows * stat, 0);
                    w.bytes += rows * d * acc + rows * stat;
                }
                if (!last) {
                    add(k, "o_tmp", 0, rows * d * acc);
                    w.bytes += rows * d * acc;
                } else {
                    add(k, "O", 0, rows * d * e);
                    w.bytes += rows * d * e;
                }
                add(k, "softmax_lse", 0, rows * stat);
                w.bytes += rows * stat;
                const double sc = static_cast<double>(rows * cols);
                w.mm = 4.0 * sc * static_cast<double>(d);  // S = Q K^T, O += P V
                w.exps = sc;                               // exp(S - m)
                w.other =
                    5.0 * sc + 2.0 * static_cast<double>(rows * d);  // scale, max, subtract, sum, dropout; rescale O
                steps[static_cast<size_t>(j)].push_back(w);
                k.matmul_flops += w.mm;
                k.exps += w.exps;
                k.other_flops += w.other;
            }
        }
        // 4 warps split the B_c keys of S = Q K^T (both operands staged, 16 x B_c/4 a warp); O += P V
        // keeps P in registers and stages V.
        const double opb = 0.5 * (staged_both(static_cast<double>(bc) / 4, ed) + staged_one(ed));
        pass_time(k, o.fwd_ctas_per_sm, opb, steps, per_j);
        for (auto& t : k.tensors) t.read *= BH, t.written *= BH;
        k.matmul_flops *= static_cast<double>(BH);
        k.exps *= static_cast<double>(BH);
        k.other_flops *= static_cast<double>(BH);
        c.kernels.push_back(std::move(k));
    }
    if (o.backward) {
        Fig2Kernel k;
        k.name = "FA1 backward (one launch, grid B x H)";
        k.pass = 1;
        std::vector<std::vector<StepWork>> steps(static_cast<size_t>(Tc));
        std::vector<int64_t> per_j(static_cast<size_t>(Tc), 0);
        for (int64_t j = 0; j < Tc; ++j) {
            const int64_t cols = std::min(bc, N - j * bc);
            bool any = false;
            for (int64_t i = 0; i < Tr; ++i) any = any || visited(i, j);
            if (!any) continue;
            add(k, "K", cols * d * e, 0);
            add(k, "V", cols * d * e, 0);
            add(k, "dK", 0, cols * d * e);
            add(k, "dV", 0, cols * d * e);
            per_j[static_cast<size_t>(j)] = 4 * cols * d * e;
            for (int64_t i = 0; i < Tr; ++i) {
                if (!visited(i, j)) continue;
                const int64_t rows = std::min(br, N - i * br);
                const bool first = j == first_j[static_cast<size_t>(i)], last = j == last_j[static_cast<size_t>(i)];
                StepWork w;
                add(k, "Q", rows * d * e, 0);
                add(k, "dO", rows * d * e, 0);
                add(k, "softmax_lse", rows * stat, 0);
                w.bytes += 2 * rows * d * e + rows * stat;
                if (first) {  // D_i = rowsum(dO_i o O_i), stored for the later key blocks
                    add(k, "O", rows * d * e, 0);
                    add(k, "softmax_d", 0, rows * stat);
                    w.bytes += rows * d * e + rows * stat;
                    w.other += 2.0 * static_cast<double>(rows * d);
                } else {
                    add(k, "softmax_d", rows * stat, 0);
                    add(k, "dq_tmp", rows * d * acc, 0);
                    w.bytes += rows * stat + rows * d * acc;
                }
                if (!last) {
                    add(k, "dq_tmp", 0, rows * d * acc);
                    w.bytes += rows * d * acc;
                } else {
                    add(k, "dQ", 0, rows * d * e);
                    w.bytes += rows * d * e;
                }
                const double sc = static_cast<double>(rows * cols);
                w.mm = 10.0 * sc * static_cast<double>(d);  // S recomputed, dP = dO V^T, dV, dQ, dK
                w.exps = sc;                                // P = exp(S - LSE) recomputed
                w.other += 5.0 * sc;                        // scale, subtract LSE, dropout, dS = P o (dP - D)
                steps[static_cast<size_t>(j)].push_back(w);
                k.matmul_flops += w.mm;
                k.exps += w.exps;
                k.other_flops += w.other;
            }
        }
        // 8 warps split the B_c keys (16 x B_c/8 a warp): S and dP stage both operands, dV, dK, dQ
        // keep one operand (P^T, dS^T, dS) in registers.
        const double opb = (2 * staged_both(static_cast<double>(bc) / 8, ed) + 3 * staged_one(ed)) / 5;
        pass_time(k, o.bwd_ctas_per_sm, opb, steps, per_j);
        for (auto& t : k.tensors) t.read *= BH, t.written *= BH;
        k.matmul_flops *= static_cast<double>(BH);
        k.exps *= static_cast<double>(BH);
        k.other_flops *= static_cast<double>(BH);
        c.kernels.push_back(std::move(k));
    }
    c.notes.push_back(
        "HBM bytes are the tiles the kernel's loops load and store; no L2 is credited: between two "
        "visits of the same o_tmp_i / dq_tmp_i the resident blocks touch more than the L2 holds");
    return c;
}

// ---------------------------------------------------------------- [paper_figure2()]
const PaperFigure2& paper_figure2() {
    static const PaperFigure2 f{
        66.6,
        75.2,
        40.3,
        4.4,
        41.7,
        7.3,
        {64, 128, 256, 512},
        "GPT-2 medium attention: seq. length 1024, head dim. 64, 16 heads, batch size 64, forward + backward, A100 GPU",
        "forward runtime of FlashAttention against block size B_c: HBM accesses fall as B_c grows, and runtime falls "
        "with them up to B_c = 256; beyond it the runtime is bounded by other factors (arithmetic)",
        "Dao, Fu, Ermon, Rudra, Re, FlashAttention (arXiv 2205.14135), Figure 2 and section 3.2 (the paper's "
        "measurements; the middle panel is a plot without printed values)"};
    return f;
}

// ---------------------------------------------------------------- [figure2()]
Problem figure2_problem() {
    Problem p;
    p.batch = 64;
    p.heads = 16;
    p.seq = 1024;
    p.head_dim = 64;
    p.dtype = DType::fp16;
    p.causal = false;
    return p;
}

Figure2 figure2(const Problem& p, const Machine& m, const KernelRates& rates, const EagerRates& eager) {
    Figure2 f;
    f.problem = p;
    f.machine = m.name;
    f.rates_source = rates.source;
    f.eager = eager;
    auto measured = [&](EagerOptions o) {
        o.hbm_fraction = eager.fraction;
        o.hbm_fraction_source = eager.source;
        return o;
    };
    f.standard = eager_attention(p, rates, measured({}));
    f.flash = fa1_attention(p, m, rates);
    for (int64_t bc : paper_figure2().middle_block_sizes) {
        Fa1Options o;
        o.block_cols = bc;
        o.backward = false;
        const Fig2Column c = fa1_attention(p, m, rates, o);
        f.sweep.push_back({bc, c.hbm_bytes(), c.seconds(), c.kernels.front().bound});
    }
    auto variant = [&](std::string label, const Fig2Column& c) {
        f.variants.push_back({std::move(label), c.hbm_bytes(), c.seconds()});
    };
    variant("standard as HuggingFace GPT-2 (own scale, causal where)",
            eager_attention(p, rates, measured(hf_gpt2_eager())));
    {
        EagerOptions o;
        o.dropout = false;
        variant("standard without dropout", eager_attention(p, rates, measured(o)));
    }
    {
        EagerOptions o;
        o.softmax_backward_kernels = 1;
        variant("standard with a one-kernel softmax backward", eager_attention(p, rates, measured(o)));
    }
    {
        Fa1Options o;
        o.accum_bytes = 2;
        variant("FA1 with o_tmp and dq_tmp counted at 2 bytes an element", fa1_attention(p, m, rates, o));
    }
    if (!eager.empty()) variant("standard with every kernel at the HBM rate", eager_attention(p, rates));
    return f;
}

}  // namespace sim
