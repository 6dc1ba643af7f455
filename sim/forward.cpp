// sim/simulate.cpp — the forward tile loops of standard attention, FlashAttention-1 (the paper's
// Algorithm 1) and FlashAttention-2, each counting what it moves and, with numerics on, computing
// the output the way it tiles it; and simulate(), which walks an algorithm's kernels (forward from
// here, backward from sim/backward.cpp), then the L2 model (sim/l2.cpp) and the timing model
// (sim/timing.cpp). The walker itself is in sim/walker.hpp.
//
// [SECTIONS]  names and parsing · block sizes and SRAM budget · shared helpers · standard ·
//             flash1 · flash2 · simulate()
#include "sim/simulate.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>
#include <unordered_map>

#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {

// ---------------------------------------------------------------- [names and parsing]
std::string_view algo_name(Algo a) {
    switch (a) {
        case Algo::standard:
            return "standard";
        case Algo::flash1:
            return "flash1";
        case Algo::flash2:
            return "flash2";
    }
    return "?";
}

std::optional<Algo> parse_algo(std::string_view s) {  // the inverse of algo_name
    for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2})
        if (algo_name(a) == s) return a;
    return std::nullopt;
}

std::string_view pass_name(Pass p) {
    switch (p) {
        case Pass::forward:
            return "forward";
        case Pass::backward:
            return "backward";
        case Pass::both:
            return "both";
    }
    return "?";
}

std::optional<Pass> parse_pass(std::string_view s) {  // the inverse of pass_name
    for (Pass p : {Pass::forward, Pass::backward, Pass::both})
        if (pass_name(p) == s) return p;
    return std::nullopt;
}

using detail::ceil_div;
using detail::kF32;

// ---------------------------------------------------------------- [block sizes and SRAM budget]
namespace {

std::string group(int64_t v) {  // 232448 -> "232,448"
    std::string s = std::to_string(v < 0 ? -v : v), out;
    for (size_t i = 0; i < s.size(); ++i) {
        if (i > 0 && (s.size() - i) % 3 == 0) out += ',';
        out += s[i];
    }
    return v < 0 ? "-" + out : out;
}

std::vector<SramBuffer> buffers_for(const Problem& p, Algo a, int64_t br, int64_t bc, int64_t* total) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const std::string dt(dtype_name(p.dtype));
    std::vector<SramBuffer> b;
    if (a == Algo::standard) {
        const int64_t gemm1 = br * d * e + bc * d * e + br * bc * kF32;
        const int64_t gemm2 = br * bc * e + bc * d * e + br * d * kF32;
        b = {{"S = QK^T: Q_i (B_r x d, " + dt + ")", br * d * e},
             {"S = QK^T: K_j (B_c x d, " + dt + ")", bc * d * e},
             {"S = QK^T: S_ij accumulator (B_r x B_c, fp32)", br * bc * kF32},
             {"O = PV: P_ij (B_r x B_c, " + dt + ")", br * bc * e},
             {"O = PV: V_j (B_c x d, " + dt + ")", bc * d * e},
             {"O = PV: O_i accumulator (B_r x d, fp32)", br * d * kF32}};
        *total = std::max(gemm1, gemm2);  // the two GEMMs run one after the other
    } else {
        b = {{"Q_i (B_r x d, " + dt + ")", br * d * e},         {"K_j (B_c x d, " + dt + ")", bc * d * e},
             {"V_j (B_c x d, " + dt + ")", bc * d * e},         {"O_i accumulator (B_r x d, fp32)", br * d * kF32},
             {"S_ij / P_ij (B_r x B_c, fp32)", br * bc * kF32}, {"m_i, l_i (2 x B_r, fp32)", 2 * br * kF32}};
        *total = 0;
        for (const auto& x : b) *total += x.bytes;
    }
    return b;
}

// The backward's buffers (the largest kernel's, for standard: its kernels run one after another).
std::vector<SramBuffer> backward_buffers_for(const Problem& p, Algo a, int64_t br, int64_t bc, int64_t* total) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const std::string dt(dtype_name(p.dtype));
    std::vector<SramBuffer> b;
    if (a == Algo::standard) {
        const int64_t dv = br * bc * e + br * d * e + bc * d * kF32;  // dV = P^T dO (dK = dS^T Q alike)
        const int64_t dp = br * d * e + bc * d * e + br * bc * kF32;  // dP = dO V^T
        const int64_t dq = br * bc * e + bc * d * e + br * d * kF32;  // dQ = dS K
        b = {{"dV = P^T dO: P_ij (B_r x B_c, " + dt + ")", br * bc * e},
             {"dV = P^T dO: dO_i (B_r x d, " + dt + ")", br * d * e},
             {"dV = P^T dO: dV_j accumulator (B_c x d, fp32)", bc * d * kF32},
             {"dP = dO V^T: dP_ij accumulator (B_r x B_c, fp32)", br * bc * kF32},
             {"dQ = dS K: dQ_i accumulator (B_r x d, fp32)", br * d * kF32}};
        *total = std::max({dv, dp, dq});
        return b;
    }
    b = {{"K_j, V_j (2 x B_c x d, " + dt + ")", 2 * bc * d * e},
         {"dK_j, dV_j accumulators (2 x B_c x d, fp32)", 2 * bc * d * kF32},
         {"Q_i, dO_i (2 x B_r x d, " + dt + ")", 2 * br * d * e},
         {"S_ij / P_ij (B_r x B_c, fp32)", br * bc * kF32},
         {"dP_ij / dS_ij (B_r x B_c, fp32)", br * bc * kF32},
         {"dQ_i update (B_r x d, fp32)", br * d * kF32}};
    if (a == Algo::flash1) {
        b.push_back({"O_i (B_r x d, fp32, as Algorithm 1 stores it)", br * d * kF32});
        b.push_back({"l_i, m_i, D_i (3 x B_r, fp32)", 3 * br * kF32});
    } else {
        b.push_back({"LSE_i, D_i (2 x B_r, fp32)", 2 * br * kF32});
    }
    *total = 0;
    for (const auto& x : b) *total += x.bytes;
    return b;
}

std::string describe_overflow(const std::vector<SramBuffer>& b, int64_t total, int64_t sram) {
    std::ostringstream o;
    for (size_t i = 0; i < b.size(); ++i) o << (i ? " + " : "") << b[i].name << " " << group(b[i].bytes) << " B";
    o << " = " << group(total) << " B needed, but the SRAM budget M is " << group(sram) << " B";
    return o.str();
}

}  // namespace

// Halve the blocks the caller did not fix (B_c first while it is the larger) until every buffer
// fits the SRAM budget; a fixed size that does not fit is refused with the itemised buffers.
// `what` names the tiles in messages ("tiles", "backward tiles"), `flags` the options to change.
// Returns whether anything was halved; `bufs` and `total` describe the final blocks.
template <typename BuffersFor>
bool fit_by_halving(BuffersFor buffers_for_blocks, int64_t br_in, int64_t bc_in, int64_t sram, const std::string& what,
                    const std::string& flags, int64_t& br, int64_t& bc, std::vector<SramBuffer>& bufs, int64_t& total) {
    bufs = buffers_for_blocks(br, bc, &total);
    if (total > sram && br_in && bc_in)
        throw Error(what + " do not fit in SRAM: " + describe_overflow(bufs, total, sram) + ". Use smaller " + flags +
                    " or a larger --sram.");
    bool halved = false;
    while (total > sram) {
        const bool can_cols = !bc_in && bc > 1, can_rows = !br_in && br > 1;
        if (!can_cols && !can_rows)
            throw Error(what + " do not fit in SRAM: " + describe_overflow(bufs, total, sram) +
                        ". Use a larger --sram or smaller " + flags + ".");
        if (can_cols && (bc >= br || !can_rows))
            bc = ceil_div(bc, 2);
        else
            br = ceil_div(br, 2);
        halved = true;
        bufs = buffers_for_blocks(br, bc, &total);
    }
    return halved;
}

BlockChoice choose_blocks(const Problem& p, Algo a, int64_t sram, int64_t br_in, int64_t bc_in) {
    p.validate();
    if (sram <= 0) throw Error("SRAM budget must be positive (set --sram BYTES)");
    if (br_in < 0 || bc_in < 0) throw Error("block sizes must be positive (--block-rows, --block-cols)");
    const int64_t d = p.head_dim, e = p.elem_bytes();
    BlockChoice c;
    int64_t br = br_in, bc = bc_in;
    std::ostringstream note;
    if (a == Algo::standard) {
        if (!bc) bc = 128;
        if (!br) br = 128;
        note << "standard: GEMM tiles of B_r x B_c = " << br << " x " << bc;
    } else {
        const int64_t m_elems = sram / e;
        const int64_t rule = ceil_div(m_elems, 4 * d);
        if (!bc) bc = rule;
        if (!br) br = std::min(rule, d);
        note << "paper rule with M = " << group(sram) << " B / " << e << " B = " << group(m_elems)
             << " elements: B_c = ceil(M/4d) = " << rule << ", B_r = min(B_c, d) = " << std::min(rule, d);
    }
    // The paper's rule sizes Q_i, K_j, V_j, O_i to a quarter of M each and leaves out the score
    // tile and the float32 accumulator; when that overflows, halve the rule-chosen blocks until
    // everything fits, and say so.
    int64_t total = 0;
    std::vector<SramBuffer> bufs;
    const bool halved = fit_by_halving([&](int64_t r, int64_t cols, int64_t* t) { return buffers_for(p, a, r, cols, t); },
                                       br_in, bc_in, sram, "tiles", "--block-rows/--block-cols", br, bc, bufs, total);
    if (halved)
        note << "; that leaves no room for the fp32 score tile and accumulator, so the blocks were halved to B_r = "
             << br << ", B_c = " << bc;
    note << " (" << group(total) << " of " << group(sram) << " B SRAM)";
    c.block_rows = br;
    c.block_cols = bc;
    c.buffers = std::move(bufs);
    c.bytes = total;
    c.note = note.str();
    return c;
}

BlockChoice choose_backward_blocks(const Problem& p, Algo a, int64_t sram, int64_t fwd_rows, int64_t fwd_cols,
                                   int64_t br_in, int64_t bc_in) {
    if (br_in < 0 || bc_in < 0)
        throw Error("backward block sizes must be positive (--bwd-block-rows, --bwd-block-cols)");
    int64_t br = br_in ? br_in : fwd_rows, bc = bc_in ? bc_in : fwd_cols;
    std::ostringstream note;
    note << "backward: " << (br_in || bc_in ? "requested" : "the forward's") << " B_r x B_c = " << br << " x " << bc;
    int64_t total = 0;
    std::vector<SramBuffer> bufs;
    const bool halved =
        fit_by_halving([&](int64_t r, int64_t c, int64_t* t) { return backward_buffers_for(p, a, r, c, t); }, br_in,
                       bc_in, sram, "backward tiles", "--bwd-block-rows/--bwd-block-cols", br, bc, bufs, total);
    if (halved) note << "; the backward keeps more in SRAM (dK_j, dV_j, dS_ij), so halved to " << br << " x " << bc;
    note << " (" << group(total) << " of " << group(sram) << " B SRAM)";
    BlockChoice c;
    c.block_rows = br;
    c.block_cols = bc;
    c.buffers = std::move(bufs);
    c.bytes = total;
    c.note = note.str();
    return c;
}

// ---------------------------------------------------------------- [shared helpers]
namespace detail {

MatF stored_gemm_rows(Ctx& c, const Tiling& t, int64_t i, Walker& w, Tensor m, const MatF& M, Tensor b, const MapF& B,
                      Tensor out) {
    const int64_t d = c.p.head_dim, e = c.p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    MatF acc;
    if (c.h) acc = MatF::Zero(r, d);
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), cc = t.cols(j);
        w.begin_step();
        w.load(m, i, j, r0, c0, r, cc, r * cc * e);
        w.load(b, j, -1, c0, 0, cc, d, cc * d * e);
        w.compute(out, i, j, r, d, {2 * r * cc * d, 0, 0});
        w.in_sram(r * cc * e + cc * d * e + r * d * kF32);
        if (c.h) acc.noalias() += M.block(r0, c0, r, cc) * B.middleRows(c0, cc);
    }
    return acc;
}

MatF stored_gemm_cols(Ctx& c, const Tiling& t, int64_t j, Walker& w, Tensor m, const MatF& M, Tensor b, const MapF& B,
                      Tensor out) {
    const int64_t d = c.p.head_dim, e = c.p.elem_bytes(), c0 = t.c0(j), cc = t.cols(j);
    MatF acc;
    if (c.h) acc = MatF::Zero(cc, d);
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.begin_step();
        w.load(m, i, j, r0, c0, r, cc, r * cc * e);
        w.load(b, i, -1, r0, 0, r, d, r * d * e);
        w.compute(out, j, i, cc, d, {2 * r * cc * d, 0, 0});
        w.in_sram(r * cc * e + r * d * e + cc * d * kF32);
        if (c.h) acc.noalias() += M.block(r0, c0, r, cc).transpose() * B.middleRows(r0, r);
    }
    return acc;
}

void apply_mask(const Problem& p, MatF& s, int64_t r0, int64_t c0) {
    if (tile_unmasked(p, r0, r0 + s.rows(), c0, c0 + s.cols())) return;
    for (int64_t a = 0; a < s.rows(); ++a)
        for (int64_t b = 0; b < s.cols(); ++b)
            if (!key_visible(p, r0 + a, c0 + b)) s(a, b) = kNegInf;
}

RowKernelShape row_kernel_shape(int64_t n, int64_t sram, int64_t floats_per_elem, int64_t seg_cols) {
    RowKernelShape s;
    const int64_t row_bytes = n * kF32 * floats_per_elem;
    if (row_bytes <= sram) {
        s.whole_rows = true;
        s.group_rows = std::min(n, sram / row_bytes);
        s.blocks = ceil_div(n, s.group_rows);
    } else {
        s.whole_rows = false;
        s.chunk = sram / (kF32 * floats_per_elem);
        if (seg_cols > 0 && s.chunk >= seg_cols) s.chunk = s.chunk / seg_cols * seg_cols;  // whole segments
        s.blocks = n;
    }
    return s;
}

}  // namespace detail

namespace {
using namespace detail;

std::vector<double> to_doubles(const float* x, int64_t n) { return std::vector<double>(x, x + n); }

// ---------------------------------------------------------------- [standard]
// Kernel 0: S = scale * Q K^T, one block per row tile i (Q_i stays in SRAM across its row).
void std_scores_block(Ctx& c, int64_t i, Walker& w) {
    const Problem& p = c.p;
    const Tiling& t = c.t;
    const int64_t d = p.head_dim, e = p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    const float scale = static_cast<float>(p.softmax_scale());
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), cc = t.cols(j);
        w.begin_step();
        if (j == 0) w.load(Tensor::Q, i, -1, r0, 0, r, d, r * d * e);
        w.load(Tensor::K, j, -1, c0, 0, cc, d, cc * d * e);
        w.compute(Tensor::S, i, j, r, cc, {2 * r * cc * d, 0, r * cc});
        w.store(Tensor::S, i, j, r0, c0, r, cc, r * cc * e);
        w.in_sram(r * d * e + cc * d * e + r * cc * kF32);
        if (c.h) {
            MatF s = (c.h->Q.middleRows(r0, r) * c.h->K.middleRows(c0, cc).transpose()) * scale;
            for (int64_t a = 0; a < s.size(); ++a) s.data()[a] = round_to(p.dtype, s.data()[a]);
            c.S.block(r0, c0, r, cc) = s;
        }
    }
}

void std_softmax_rows(Ctx& c, int64_t r0, int64_t r) {
    const Problem& p = c.p;
    const int64_t n = p.seq;
    for (int64_t row = r0; row < r0 + r; ++row) {
        for (int64_t k = 0; k < n; ++k)
            if (!key_visible(p, row, k)) c.S(row, k) = kNegInf;
        const float m = c.S.row(row).maxCoeff();
        if (m == kNegInf) {
            c.P.row(row).setZero();
            continue;
        }
        c.P.row(row) = masked_exp(c.S.row(row), m);
        const float l = c.P.row(row).sum();
        for (int64_t k = 0; k < n; ++k) c.P(row, k) = round_to(p.dtype, c.P(row, k) / l);
    }
}

// Kernel 1: P = softmax(S) row by row: several rows a block when they fit; else one row a block,
// two passes over it (max and sum, then P).
void std_softmax_block(Ctx& c, int64_t g, Walker& w) {
    const Problem& p = c.p;
    const int64_t n = p.seq, e = p.elem_bytes();
    const RowKernelShape sh = row_kernel_shape(n, c.sram, 1, c.t.bc);
    if (sh.whole_rows) {
        const int64_t r0 = g * sh.group_rows, r = std::min(n, r0 + sh.group_rows) - r0;
        w.begin_step();
        w.load(Tensor::S, g, -1, r0, 0, r, n, r * n * e);
        w.compute(Tensor::P, g, -1, r, n, {0, r * n, 3 * r * n});
        w.store(Tensor::P, g, -1, r0, 0, r, n, r * n * e);
        w.in_sram(r * n * kF32);
        if (c.h) std_softmax_rows(c, r0, r);
        return;
    }
    const int64_t row = g;
    two_pass_row(w, n, sh.chunk, [&](int pass, int64_t q, int64_t k0, int64_t cc) {
        w.load(Tensor::S, row, q, row, k0, 1, cc, cc * e);
        if (pass == 0) {
            w.compute(Tensor::l, row, q, 1, cc, {0, cc, 2 * cc});
        } else {
            w.compute(Tensor::P, row, q, 1, cc, {0, cc, 2 * cc});
            w.store(Tensor::P, row, q, row, k0, 1, cc, cc * e);
        }
        w.in_sram(cc * kF32);
    });
    if (c.h) std_softmax_rows(c, row, 1);
}

// Kernel 2: O = P V, one block per row tile i (O_i accumulates over j in SRAM).
void std_pv_block(Ctx& c, int64_t i, Walker& w) {
    const Problem& p = c.p;
    const int64_t d = p.head_dim, r0 = c.t.r0(i), r = c.t.rows(i);
    const MatF acc =
        stored_gemm_rows(c, c.t, i, w, Tensor::P, c.P, Tensor::V, c.h ? c.h->V : MapF(nullptr, 0, d), Tensor::O);
    w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * p.elem_bytes());
    if (c.h)
        for (int64_t a = 0; a < r * d; ++a) c.h->O[r0 * d + a] = round_to(p.dtype, acc.data()[a]);
}

// Record one block of one row's online softmax (shared by flash1 and flash2).
void record_block(SoftmaxRecord& rec, int64_t j, int64_t c0, const float* scores, int64_t c, double m_before,
                  double m_after, double l_before, double l_after, double rescale, const float* acc_before,
                  const float* acc_rescaled, const float* acc_after, int64_t d) {
    SoftmaxBlockState b;
    b.block = j;
    b.first_key = c0;
    b.scores = to_doubles(scores, c);
    b.block_max = *std::max_element(b.scores.begin(), b.scores.end());
    b.running_max_before = m_before;
    b.running_max_after = m_after;
    b.rescale = rescale;
    b.running_sum_before = l_before;
    b.running_sum_after = l_after;
    b.acc_before = to_doubles(acc_before, d);
    b.acc_rescaled = to_doubles(acc_rescaled, d);
    b.acc_after = to_doubles(acc_after, d);
    rec.blocks.push_back(std::move(b));
}

// ---------------------------------------------------------------- [flash1]
// The paper's Algorithm 1, one thread block per head (as FlashAttention-1's kernel is launched:
// grid (B*H)): O (float32), l, m live in HBM and are initialised there; the outer loop runs over
// K/V blocks j, the inner over Q blocks i; every inner step reads Q_i, O_i, l_i, m_i and writes O_i,
// l_i, m_i back. O_i stays normalised (divided by l_i) after every step.
void flash1_forward_block(Ctx& cx, int64_t /*block*/, Walker& w) {
    const Problem& p = cx.p;
    const Tiling& t = cx.t;
    const int64_t d = p.head_dim, e = p.elem_bytes(), n = p.seq;
    const float scale = static_cast<float>(p.softmax_scale());
    const HeadData* h = cx.h;
    SoftmaxRecord* rec = cx.rec;
    MatF& O_hbm = cx.O32;  // (N, d) float32 in HBM
    VecF& l_hbm = cx.l;    // (N) float32 in HBM
    VecF& m_hbm = cx.m;
    if (h) {
        O_hbm = MatF::Zero(n, d);
        l_hbm = VecF::Zero(n);
        m_hbm = VecF::Constant(n, kNegInf);
    }
    for (int64_t i = 0; i < t.tr; ++i) {  // line 2: initialise O, l, m in HBM
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
        w.store(Tensor::l, i, -1, r0, 0, r, 1, r * kF32);
        w.store(Tensor::m, i, -1, r0, 0, r, 1, r * kF32);
    }
    for (int64_t j = 0; j < t.tc; ++j)
        w.segment(h || has_mask(p) ? -1 : t.cols(j), [&] {
            const int64_t c0 = t.c0(j), c = t.cols(j);
            over_query_blocks(p, t, j, w, [&](int64_t i, int64_t r0, int64_t r) {
                w.load(Tensor::Q, i, -1, r0, 0, r, d, r * d * e);
                w.load(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
                w.load(Tensor::l, i, -1, r0, 0, r, 1, r * kF32);
                w.load(Tensor::m, i, -1, r0, 0, r, 1, r * kF32);
                w.compute(Tensor::S, i, j, r, c, {2 * r * c * d, 0, r * c});
                w.compute(Tensor::P, i, j, r, c, {0, r * c + 2 * r, 2 * r * c + 6 * r});
                w.rescale(i, r, d, {0, 0, 3 * r * d});
                w.compute(Tensor::O, i, j, r, d, {2 * r * c * d, 0, 0});
                w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
                w.store(Tensor::l, i, -1, r0, 0, r, 1, r * kF32);
                w.store(Tensor::m, i, -1, r0, 0, r, 1, r * kF32);
                w.in_sram(r * d * e + 2 * c * d * e + r * d * kF32 + r * c * kF32 + 2 * r * kF32);
                if (!h) return;
                MatF S = (h->Q.middleRows(r0, r) * h->K.middleRows(c0, c).transpose()) * scale;  // (B_r, B_c)
                apply_mask(p, S, r0, c0);
                MatF Pt(r, c);
                VecF mt(r), lt(r), m_new(r), l_new(r), a_old(r), a_new(r);
                for (int64_t a = 0; a < r; ++a) {
                    mt(a) = S.row(a).maxCoeff();
                    const float ms = mt(a) == kNegInf ? 0.0f : mt(a);
                    Pt.row(a) = masked_exp(S.row(a), ms);
                    lt(a) = Pt.row(a).sum();
                    const float mo = m_hbm(r0 + a);
                    m_new(a) = std::max(mo, mt(a));
                    const float mn = m_new(a) == kNegInf ? 0.0f : m_new(a);
                    a_old(a) = std::exp(mo - mn);
                    a_new(a) = std::exp(ms - mn) * (mt(a) == kNegInf ? 0.0f : 1.0f);
                    l_new(a) = a_old(a) * l_hbm(r0 + a) + a_new(a) * lt(a);
                }
                const MatF PV = Pt * h->V.middleRows(c0, c);  // (B_r, d)
                for (int64_t a = 0; a < r; ++a) {
                    const int64_t row = r0 + a;
                    const float inv = l_new(a) > 0 ? 1.0f / l_new(a) : 0.0f;
                    const float keep = l_hbm(row) * a_old(a) * inv;
                    Eigen::RowVectorXf before, rescaled;
                    const bool recording = rec && row == rec->row;
                    if (recording) before = O_hbm.row(row);
                    O_hbm.row(row) = O_hbm.row(row) * keep + PV.row(a) * (a_new(a) * inv);
                    if (recording) {
                        rescaled = before * keep;
                        Eigen::RowVectorXf sc = S.row(a);
                        record_block(*rec, j, c0, sc.data(), c, m_hbm(row), m_new(a), l_hbm(row), l_new(a),
                                     std::exp(static_cast<double>(m_hbm(row)) - m_new(a)), before.data(),
                                     rescaled.data(), O_hbm.row(row).data(), d);
                    }
                    l_hbm(row) = l_new(a);
                    m_hbm(row) = m_new(a);
                }
            });
        });
    if (h) {
        for (int64_t a = 0; a < n * d; ++a) h->O[a] = O_hbm.data()[a];  // O stays float32 in HBM
        if (rec) rec->output = to_doubles(O_hbm.row(rec->row).data(), d);
    }
}

// ---------------------------------------------------------------- [flash2]
// FlashAttention-2 order, one thread block per query block i (grid (T_r, B*H)): the block streams
// K_j, V_j. m_i, l_i and the unnormalised accumulator O_i stay in SRAM; each step rescales O_i by
// e^(m_old - m_new); one division by l_i at the end; O_i and the log-sum-exp LSE_i = m_i + log l_i
// are written once. A fully masked row stores O = 0 and LSE = 0 (finite; its scores are all masked,
// so the backward's exp(S - LSE) is 0 there whatever LSE holds).
void flash2_forward_block(Ctx& cx, int64_t i, Walker& w) {
    const Problem& p = cx.p;
    const Tiling& t = cx.t;
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const float scale = static_cast<float>(p.softmax_scale());
    const HeadData* h = cx.h;
    SoftmaxRecord* rec = cx.rec;
    const int64_t r0 = t.r0(i), r = t.rows(i);
    bool q_loaded = false;
    MatF acc;
    VecF m, l;
    if (h) {
        acc = MatF::Zero(r, d);
        m = VecF::Constant(r, kNegInf);
        l = VecF::Zero(r);
    }
    const int64_t rec_local = (rec && rec->row >= r0 && rec->row < r0 + r) ? rec->row - r0 : -1;
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), c = t.cols(j);
        if (tile_masked(p, r0, r0 + r, c0, c0 + c)) continue;
        w.begin_step();
        if (!q_loaded) {
            w.load(Tensor::Q, i, -1, r0, 0, r, d, r * d * e);
            q_loaded = true;
        }
        w.load(Tensor::K, j, -1, c0, 0, c, d, c * d * e);
        w.load(Tensor::V, j, -1, c0, 0, c, d, c * d * e);
        w.compute(Tensor::S, i, j, r, c, {2 * r * c * d, 0, r * c});
        w.compute(Tensor::P, i, j, r, c, {0, r * c + r, 2 * r * c + 3 * r});
        w.rescale(i, r, d, {0, 0, r * d});
        w.compute(Tensor::O, i, j, r, d, {2 * r * c * d, 0, 0});
        w.in_sram(r * d * e + 2 * c * d * e + r * d * kF32 + r * c * kF32 + 2 * r * kF32);
        if (!h) continue;
        MatF S = (h->Q.middleRows(r0, r) * h->K.middleRows(c0, c).transpose()) * scale;  // (B_r, B_c)
        apply_mask(p, S, r0, c0);
        VecF alpha(r);
        Eigen::RowVectorXf before;
        float m_before = 0, l_before = 0;
        if (rec_local >= 0) {
            before = acc.row(rec_local);
            m_before = m(rec_local);
            l_before = l(rec_local);
        }
        MatF P(r, c);
        for (int64_t a = 0; a < r; ++a) {
            const float m_new = std::max(m(a), S.row(a).maxCoeff());
            const float ms = m_new == kNegInf ? 0.0f : m_new;  // fully masked so far: keep zeros
            alpha(a) = std::exp(m(a) - ms);
            P.row(a) = masked_exp(S.row(a), ms);
            l(a) = alpha(a) * l(a) + P.row(a).sum();
            m(a) = m_new;
        }
        acc = alpha.asDiagonal() * acc;
        Eigen::RowVectorXf rescaled;
        if (rec_local >= 0) rescaled = acc.row(rec_local);
        acc.noalias() += P * h->V.middleRows(c0, c);
        if (rec_local >= 0) {
            Eigen::RowVectorXf sc = S.row(rec_local), after = acc.row(rec_local);
            record_block(*rec, j, c0, sc.data(), c, m_before, m(rec_local), l_before, l(rec_local), alpha(rec_local),
                         before.data(), rescaled.data(), after.data(), d);
        }
    }
    w.compute(Tensor::O, i, -1, r, d, {0, r, r * d});  // the one final rescale: O_i / l_i, LSE_i
    w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * e);
    w.store(Tensor::LSE, i, -1, r0, 0, r, 1, r * kF32);
    if (h) {
        for (int64_t a = 0; a < r; ++a) {
            const float inv = l(a) > 0 ? 1.0f / l(a) : 0.0f;
            for (int64_t k = 0; k < d; ++k) h->O[(r0 + a) * d + k] = round_to(p.dtype, acc(a, k) * inv);
            if (cx.lse.size() > 0) cx.lse(r0 + a) = l(a) > 0 ? m(a) + std::log(l(a)) : 0.0f;
            if (a == rec_local) {
                rec->output.resize(static_cast<size_t>(d));
                for (int64_t k = 0; k < d; ++k) rec->output[static_cast<size_t>(k)] = acc(a, k) * inv;
            }
        }
    }
}

}  // namespace

namespace detail {
int64_t key_row_kernel(const Ctx& c, int64_t g) {
    const RowKernelShape sh = row_kernel_shape(c.t.n, c.sram, 1, c.t.bc);
    return sh.whole_rows ? std::min(c.t.n, (g + 1) * sh.group_rows) - g * sh.group_rows : 0;
}
int64_t key_row_kernel2(const Ctx& c, int64_t g) {
    const RowKernelShape sh = row_kernel_shape(c.t.n, c.sram, 2, c.t.bc);
    return sh.whole_rows ? std::min(c.t.n, (g + 1) * sh.group_rows) - g * sh.group_rows : 0;
}

std::vector<KernelDef> forward_kernels(const Ctx& c, Algo a) {
    const Tiling& t = c.t;
    switch (a) {
        case Algo::standard: {
            const RowKernelShape sh = row_kernel_shape(t.n, c.sram, 1, t.bc);
            return {{{"S = scale QK^T (one block per row tile, looping over column tiles)", 0, t.tr,
                      "(T_r, B*H), row tile fastest"},
                     std_scores_block,
                     true,
                     key_rows},
                    {{sh.whole_rows ? "P = softmax(S), " + std::to_string(sh.group_rows) + " rows of S a block"
                                    : "P = softmax(S), one row a block in two passes (a row does not fit in SRAM)",
                      0, sh.blocks, "(row groups, B*H)"},
                     std_softmax_block,
                     true,
                     key_row_kernel},
                    {{"O = PV (one block per row tile, accumulating over column tiles)", 0, t.tr,
                      "(T_r, B*H), row tile fastest"},
                     std_pv_block,
                     true,
                     key_rows}};
        }
        case Algo::flash1:
            return {{{"flash1 forward (Algorithm 1: K/V blocks outer, O, l, m rewritten in HBM)", 0, 1,
                      "(B*H): one block per head, as FlashAttention-1 launches it"},
                     flash1_forward_block,
                     true}};
        case Algo::flash2:
            return {
                {{"flash2 forward (one block per query block, K/V streamed)", 0, t.tr, "(T_r, B*H), row block fastest"},
                 flash2_forward_block,
                 true,
                 key_rows_unmasked}};
    }
    return {};
}
}  // namespace detail

// ---------------------------------------------------------------- [simulate()]
namespace {
using namespace detail;

SlotRates slot_rates(const Machine& m, Ceilings ceil, Timing& t) {
    const double slots = static_cast<double>(std::max(1, m.sm_count)) * std::max(1, m.blocks_per_sm);
    double bw = m.hbm_bandwidth, mm = m.matmul_flops;
    t.ceilings = "datasheet";
    if (ceil == Ceilings::measured) {
        if (m.measured_hbm_bandwidth > 0 && m.measured_matmul_flops > 0) {
            bw = m.measured_hbm_bandwidth;
            mm = m.measured_matmul_flops;
            t.ceilings = "measured";
            t.ceilings_note = "measured HBM bandwidth and matmul rate of the preset (" + m.name + ")";
        } else {
            t.ceilings_note = "preset " + m.name + " carries no measured ceilings; used the datasheet's";
        }
    } else {
        t.ceilings_note = "datasheet HBM bandwidth and matmul rate";
    }
    t.hbm_bandwidth = bw;
    t.l2_bandwidth = m.l2_bandwidth > 0 ? m.l2_bandwidth : bw;
    t.matmul_flops = mm;
    t.scalar_flops = m.scalar_flops;
    auto inv = [&](double rate) { return rate > 0 ? slots / rate : 0.0; };
    return {inv(bw), inv(t.l2_bandwidth), inv(mm), inv(m.scalar_flops)};
}

// A kernel's blocks share the HBM and L2 bandwidth among those resident at once (all slots, or all
// its blocks when there are fewer); arithmetic rates are per SM and do not move between SMs.
SlotRates kernel_rates(const SlotRates& full, int64_t slots, int64_t kernel_blocks) {
    SlotRates r = full;
    const double share =
        static_cast<double>(std::max<int64_t>(1, std::min(slots, kernel_blocks))) / static_cast<double>(slots);
    r.s_per_hbm_byte *= share;
    r.s_per_l2_byte *= share;
    return r;
}

Result simulate_impl(const Problem& p, const Machine& m, const Config& c, const Inputs* given) {
    p.validate();
    const int64_t sram = c.sram_bytes > 0 ? c.sram_bytes : m.sram_bytes;
    if (c.sram_bytes < 0) throw Error("--sram must be a positive number of bytes");
    const BlockChoice bc = choose_blocks(p, c.algo, sram, c.block_rows, c.block_cols);
    const bool want_fwd = c.pass != Pass::backward, want_bwd = c.pass != Pass::forward;

    Result res;
    res.problem = p;
    res.machine = m;
    res.algo = c.algo;
    res.pass = c.pass;
    res.block_rows = bc.block_rows;
    res.block_cols = bc.block_cols;
    res.sram_bytes = sram;
    res.sram_buffers = bc.buffers;
    res.block_note = bc.note;
    const Tiling t{p.seq, bc.block_rows, bc.block_cols, ceil_div(p.seq, bc.block_rows), ceil_div(p.seq, bc.block_cols)};
    res.tiles_rows = t.tr;
    res.tiles_cols = t.tc;
    Tiling tb = t;
    if (want_bwd) {
        const BlockChoice bb =
            choose_backward_blocks(p, c.algo, sram, bc.block_rows, bc.block_cols, c.bwd_block_rows, c.bwd_block_cols);
        tb = {p.seq, bb.block_rows, bb.block_cols, ceil_div(p.seq, bb.block_rows), ceil_div(p.seq, bb.block_cols)};
        res.bwd_block_rows = tb.br;
        res.bwd_block_cols = tb.bc;
        res.bwd_tiles_rows = tb.tr;
        res.bwd_tiles_cols = tb.tc;
        res.bwd_sram_buffers = bb.buffers;
        res.bwd_block_note = bb.note;
    }

    const double work = static_cast<double>(p.heads_total()) * p.seq * p.seq * p.head_dim;
    res.numerics = c.numerics == Numerics::on ||
                   (c.numerics == Numerics::automatic && (given || work <= static_cast<double>(c.numerics_auto_limit)));
    if (given && c.numerics == Numerics::off) res.numerics = false;
    const int64_t std_limit = want_bwd ? 16384 : 32768;
    if (res.numerics && c.algo == Algo::standard && p.seq > std_limit)
        throw Error("numerics for standard attention at N = " + std::to_string(p.seq) +
                    " would hold N x N matrices per head in memory; run without numerics or with N <= " +
                    std::to_string(std_limit));

    const Ctx proto(p, t, tb, sram);
    std::vector<KernelDef> kernels = forward_kernels(proto, c.algo);
    for (auto& k : kernels) k.counted = want_fwd;
    if (!want_fwd && !res.numerics) kernels.clear();  // nothing to compute, nothing to count
    size_t first_bwd = kernels.size();
    if (want_bwd)
        for (auto& k : backward_kernels(proto, c.algo)) kernels.push_back(std::move(k));
    std::vector<KernelDef> counted;
    for (const auto& k : kernels)
        if (k.counted) counted.push_back(k);
    for (const auto& k : counted) res.kernels.push_back(k.info);

    Timing& timing = res.timing;
    const SlotRates rates = slot_rates(m, c.ceilings, timing);
    const int64_t slots = static_cast<int64_t>(std::max(1, m.sm_count)) * std::max(1, m.blocks_per_sm);
    const int tl_blocks = static_cast<int>(std::min<int64_t>(std::max(0, c.timeline_sms), slots));
    std::vector<std::vector<StepCost>> timeline(static_cast<size_t>(tl_blocks));
    std::vector<SlotRates> krates;
    for (const auto& k : counted)
        krates.push_back(kernel_rates(rates, slots, k.info.blocks_per_head * p.heads_total()));

    Walker w;
    w.cap = c.event_cap;
    w.seg_cols = t.bc;
    if (c.timing) w.rates = &rates;
    Totals fwd_snapshot;
    bool snap_taken = false;
    // Walk one head's kernels in launch order (h: that head's data, or null to count only).
    auto walk = [&](Ctx& cx, bool head0) {
        int32_t counted_index = 0;
        for (size_t ki = 0; ki < kernels.size(); ++ki) {
            const KernelDef& k = kernels[ki];
            if (head0 && ki == first_bwd && !snap_taken) {
                w.end_block();
                fwd_snapshot = w.totals;
                snap_taken = true;
            }
            w.counting = head0 && k.counted;
            if (k.counted && c.timing) w.rates = &krates[static_cast<size_t>(counted_index)];
            w.phase = k.counted ? counted_index : -1;
            w.pass = k.info.pass;
            w.begin_kernel();
            struct Memo {
                Totals totals;
                int64_t events = 0, steps = 0, lookups = 0;
                BlockTime time;
            };
            std::unordered_map<int64_t, Memo> memo;
            std::unordered_map<int64_t, SegmentMemo> seg_memo;
            w.seg_memo = (c.memo_blocks && !cx.h) ? &seg_memo : nullptr;
            for (int64_t b = 0; b < k.info.blocks_per_head; ++b) {
                const bool keep = w.counting && counted_index == 0 && b < tl_blocks && c.timing;
                // Identical blocks walk identical loops: once the trace is full (so it loses nothing),
                // a block whose key was walked before adds that walk's counts again (as heads do).
                const bool trace_full = static_cast<int64_t>(w.trace.events.size()) >= w.cap;
                const int64_t key =
                    (c.memo_blocks && w.counting && !cx.h && k.key && trace_full && !keep) ? k.key(cx, b) : -1;
                if (key >= 0) {
                    const auto it = memo.find(key);
                    if (it != memo.end()) {
                        const Memo& mm = it->second;
                        w.totals += mm.totals;
                        w.trace.events_total += mm.events;
                        w.trace.truncated = true;
                        w.steps += mm.steps;
                        w.l2_lookups += mm.lookups;
                        if (!w.kernel_blocks.empty()) w.kernel_blocks.back().push_back(mm.time);
                        continue;
                    }
                }
                const Totals t0 = w.totals;
                const int64_t e0 = w.trace.events_total, s0 = w.steps, l0 = w.l2_lookups;
                w.begin_block();
                w.timer.keep = keep;
                w.timer.kept = keep ? &timeline[static_cast<size_t>(b)] : nullptr;
                w.timer.keep_max = static_cast<size_t>(std::max(0, c.timeline_steps));
                k.body(cx, b, w);
                w.end_block();
                if (key >= 0 && !w.kernel_blocks.empty() && !w.kernel_blocks.back().empty())
                    memo[key] = {w.totals - t0, w.trace.events_total - e0, w.steps - s0, w.l2_lookups - l0,
                                 w.kernel_blocks.back().back()};
            }
            w.end_block();
            w.timer.keep = false;
            if (k.counted) ++counted_index;
        }
        w.counting = head0;
        w.end_block();
        if (head0 && !snap_taken) {
            fwd_snapshot = w.totals;
            snap_taken = true;
        }
    };

    if (!res.numerics) {
        Ctx cx(p, t, tb, sram);
        walk(cx, true);
    } else {
        Inputs generated;
        if (!given) generated = generate_inputs(p);
        const Inputs& in = given ? *given : generated;
        auto check = [&](const TensorF& x, const char* name) {
            if (x.batch != p.batch || x.heads != p.heads || x.rows != p.seq || x.cols != p.head_dim)
                throw Error(std::string("input ") + name + " has shape (" + std::to_string(x.batch) + ", " +
                            std::to_string(x.heads) + ", " + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                            ") but the problem is (B, H, N, d) = (" + std::to_string(p.batch) + ", " +
                            std::to_string(p.heads) + ", " + std::to_string(p.seq) + ", " + std::to_string(p.head_dim) +
                            ")");
        };
        check(in.Q, "Q");
        check(in.K, "K");
        check(in.V, "V");
        TensorF dO_gen;
        const TensorF* dO = nullptr;
        if (want_bwd) {
            if (in.dO.size() > 0) {
                check(in.dO, "dO");
                dO = &in.dO;
            } else {
                dO_gen = generate_input(p, InputTensor::dO);
                dO = &dO_gen;
            }
        }
        TensorF out(p.batch, p.heads, p.seq, p.head_dim);
        TensorF dQ, dK, dV;
        if (want_bwd) {
            dQ = TensorF(p.batch, p.heads, p.seq, p.head_dim);
            dK = dQ;
            dV = dQ;
        }
        SoftmaxRecord rec;
        const bool want_rec = want_fwd && c.algo != Algo::standard && c.record_row >= 0 && c.record_row < p.seq;
        rec.row = c.record_row;
        const int64_t n = p.seq, d = p.head_dim;
        for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
            HeadData hd{MapF(in.Q.head(bh), n, d),
                        MapF(in.K.head(bh), n, d),
                        MapF(in.V.head(bh), n, d),
                        dO ? MapF(dO->head(bh), n, d) : MapF(nullptr, 0, d),
                        out.head(bh),
                        want_bwd ? dQ.head(bh) : nullptr,
                        want_bwd ? dK.head(bh) : nullptr,
                        want_bwd ? dV.head(bh) : nullptr};
            Ctx cx(p, t, tb, sram);
            cx.h = &hd;
            cx.rec = (want_rec && bh == 0) ? &rec : nullptr;
            if (c.algo == Algo::standard) {
                cx.S = MatF::Zero(n, n);
                cx.P = MatF::Zero(n, n);
                if (want_bwd) {
                    cx.dP = MatF::Zero(n, n);
                    cx.dS = MatF::Zero(n, n);
                }
            }
            if (want_bwd) {
                cx.lse = VecF::Zero(n);
                cx.D = VecF::Zero(n);
                cx.dQacc = MatF::Zero(n, d);
            }
            walk(cx, bh == 0);
        }
        res.output = std::move(out);
        if (want_bwd) {
            res.dQ = std::move(dQ);
            res.dK = std::move(dK);
            res.dV = std::move(dV);
        }
        if (want_rec) res.record = std::move(rec);
    }
    res.trace = std::move(w.trace);
    res.trace.steps_per_head = w.totals.steps;
    const int64_t heads = p.heads_total();
    res.totals = w.totals.scaled(heads);
    res.forward_totals = fwd_snapshot.scaled(heads);
    res.backward_totals = (w.totals - fwd_snapshot).scaled(heads);
    res.sram_peak_bytes = w.peak;

    // The L2 walk.
    L2Stats& l2 = res.l2;
    l2.capacity_bytes = m.l2_bytes;
    l2.concurrent_blocks = slots;
    std::vector<std::vector<BlockTime>> l2_blocks;
    int64_t l2_heads = 0;
    if (c.l2 == L2Mode::off) {
        l2.note = "L2 model off (--l2 off): HBM traffic is every tile load and store";
    } else if (m.l2_bytes <= 0) {
        l2.note = "preset " + m.name + " has no L2 capacity";
    } else if (!counted.empty()) {
        const int64_t per_head = std::max<int64_t>(1, w.l2_lookups);
        int64_t walk_heads = heads;
        if (c.l2 == L2Mode::automatic && static_cast<double>(per_head) * heads > static_cast<double>(c.l2_budget))
            walk_heads = c.l2_budget / per_head;
        if (walk_heads <= 0) {
            l2.note = "L2 not simulated: one head alone needs " + std::to_string(per_head) +
                      " lookups, above the automatic budget of " + std::to_string(c.l2_budget) +
                      " (force it with --l2 on; it costs roughly 60 ns a lookup)";
        } else {
            L2Replay rp =
                replay_l2(proto, counted, m, walk_heads, heads, slots, krates, tl_blocks, c.timeline_steps, t.bc);
            const double cost = rp.stats.seconds;
            const std::string policy = rp.stats.policy;
            l2 = std::move(rp.stats);
            l2.seconds = cost;
            l2.policy = policy;
            if (!l2.exact)
                l2.note = "sampled: walked the first " + std::to_string(walk_heads) + " of " + std::to_string(heads) +
                          " heads (automatic budget " + std::to_string(c.l2_budget) +
                          " lookups) and scaled; --l2 on walks them all";
            l2_blocks = std::move(rp.kernel_blocks);
            l2_heads = walk_heads;
            if (c.timing) timeline = std::move(rp.timeline);
        }
    }

    if (c.timing && !counted.empty()) {
        timing.computed = true;
        timing.with_l2 = l2.simulated;
        const double flops = static_cast<double>(res.totals.flops.total());
        if (l2.simulated)
            schedule(timing, res.kernels, l2_blocks, l2_heads, heads, slots, m.blocks_per_sm, timeline, flops);
        else
            schedule(timing, res.kernels, w.kernel_blocks, 1, heads, slots, m.blocks_per_sm, timeline, flops);
    }
    return res;
}
}  // namespace

Result simulate(const Problem& p, const Machine& m, const Config& c) { return simulate_impl(p, m, c, nullptr); }
Result simulate(const Problem& p, const Machine& m, const Config& c, const Inputs& inputs) {
    return simulate_impl(p, m, c, &inputs);
}

}  // namespace sim
