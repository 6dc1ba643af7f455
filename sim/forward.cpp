// sim/forward.cpp — the forward tile loops of standard attention, FlashAttention-1 (the paper's
// Algorithm 1) and FlashAttention-2, each counting what it moves and, with numerics on, computing
// the output the way it tiles it; and the forward's list of kernels. simulate() (sim/simulate.cpp)
// walks them; the walker itself is in sim/walker.hpp.
//
// [SECTIONS]  standard · flash1 · flash2 · kernel list
#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>

#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {

namespace {
using namespace detail;

std::vector<double> to_doubles(const float* x, int64_t n) { return std::vector<double>(x, x + n); }

// ---------------------------------------------------------------- [standard]
// Kernel 0: S = scale * Q K^T, one block per row tile i (Q_i stays in SRAM across its row).
void standard_scores_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.t;
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
        if (ctx.h) {
            MatF s = (ctx.h->Q.middleRows(r0, r) * ctx.h->K.middleRows(c0, cc).transpose()) * scale;
            for (int64_t a = 0; a < s.size(); ++a) s.data()[a] = round_to(p.dtype, s.data()[a]);
            ctx.S.block(r0, c0, r, cc) = s;
        }
    }
}

void standard_softmax_rows(Ctx& ctx, int64_t r0, int64_t r) {
    const Problem& p = ctx.p;
    const int64_t n = p.seq;
    for (int64_t row = r0; row < r0 + r; ++row) {
        for (int64_t k = 0; k < n; ++k)
            if (!key_visible(p, row, k)) ctx.S(row, k) = kNegInf;
        const float m = ctx.S.row(row).maxCoeff();
        if (m == kNegInf) {
            ctx.P.row(row).setZero();
            continue;
        }
        ctx.P.row(row) = masked_exp(ctx.S.row(row), m);
        const float l = ctx.P.row(row).sum();
        for (int64_t k = 0; k < n; ++k) ctx.P(row, k) = round_to(p.dtype, ctx.P(row, k) / l);
    }
}

// Kernel 1: P = softmax(S) row by row: several rows a block when they fit; else one row a block,
// two passes over it (max and sum, then P). Under the causal mask row a reads only its visible
// columns [0, a] of S (cuda/standard.cu's softmax_rows, both passes) and writes the whole row of P.
void standard_softmax_block(Ctx& ctx, int64_t g, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t n = p.seq, e = p.elem_bytes();
    const RowKernelShape sh = row_kernel_shape(n, ctx.sram, 1, ctx.t.bc);
    if (sh.whole_rows) {
        const int64_t r0 = g * sh.group_rows, r = std::min(n, r0 + sh.group_rows) - r0;
        w.begin_step();
        if (p.causal)
            for (int64_t a = r0; a < r0 + r; ++a) w.load(Tensor::S, g, -1, a, 0, 1, a + 1, (a + 1) * e);
        else
            w.load(Tensor::S, g, -1, r0, 0, r, n, r * n * e);
        w.compute(Tensor::P, g, -1, r, n, {0, r * n, 3 * r * n});
        w.store(Tensor::P, g, -1, r0, 0, r, n, r * n * e);
        w.in_sram(r * n * kF32);
        if (ctx.h) standard_softmax_rows(ctx, r0, r);
        return;
    }
    const int64_t row = g;
    two_pass_row(w, n, sh.chunk, [&](int pass, int64_t q, int64_t k0, int64_t cc) {
        const int64_t seen = p.causal ? std::clamp<int64_t>(row + 1 - k0, 0, cc) : cc;  // visible columns
        if (seen > 0) w.load(Tensor::S, row, q, row, k0, 1, seen, seen * e);
        if (pass == 0) {
            w.compute(Tensor::l, row, q, 1, cc, {0, cc, 2 * cc});
        } else {
            w.compute(Tensor::P, row, q, 1, cc, {0, cc, 2 * cc});
            w.store(Tensor::P, row, q, row, k0, 1, cc, cc * e);
        }
        w.in_sram(cc * kF32);
    });
    if (ctx.h) standard_softmax_rows(ctx, row, 1);
}

// Kernel 2: O = P V, one block per row tile i (O_i accumulates over j in SRAM).
void standard_pv_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t d = p.head_dim, r0 = ctx.t.r0(i), r = ctx.t.rows(i);
    const MatF acc = stored_gemm_rows(ctx, ctx.t, i, w, Tensor::P, ctx.P, Tensor::V,
                                      ctx.h ? ctx.h->V : MapF(nullptr, 0, d), Tensor::O);
    w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * p.elem_bytes());
    if (ctx.h)
        for (int64_t a = 0; a < r * d; ++a) ctx.h->O[r0 * d + a] = round_to(p.dtype, acc.data()[a]);
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
// The paper's Algorithm 1: O (float32), l, m live in HBM and are initialised there; the outer loop
// runs over K/V blocks j, the inner over Q blocks i; every inner step reads Q_i, O_i, l_i, m_i and
// writes O_i, l_i, m_i back. O_i stays normalised (divided by l_i) after every step.
// Two launch shapes of the same steps, in the same order:
//   * one thread block per head (as FlashAttention-1's kernel is launched: grid (B*H));
//   * cuda/flash1.cu's (Config::launch_per_kv_block): a launch that initialises O, l, m, then one
//     kernel per K/V block j (each head's block loads K_j, V_j and walks the query blocks), then
//     one that converts O from fp32 to the storage type.

// One inner step (i, j) of Algorithm 1.
void flash1_step(Ctx& ctx, Walker& w, int64_t i, int64_t j, int64_t r0, int64_t r) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.t;
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const float scale = static_cast<float>(p.softmax_scale());
    const HeadData* h = ctx.h;
    SoftmaxRecord* rec = ctx.rec;
    MatF& O_hbm = ctx.O32;  // (N, d) float32 in HBM
    VecF& l_hbm = ctx.l;    // (N) float32 in HBM
    VecF& m_hbm = ctx.m;
    const int64_t c0 = t.c0(j), c = t.cols(j);
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
                         std::exp(static_cast<double>(m_hbm(row)) - m_new(a)), before.data(), rescaled.data(),
                         O_hbm.row(row).data(), d);
        }
        l_hbm(row) = l_new(a);
        m_hbm(row) = m_new(a);
    }
}

// Line 2: O = 0, l = 0, m = -inf in HBM.
void flash1_init(Ctx& ctx, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.t;
    const int64_t d = p.head_dim, n = p.seq;
    if (ctx.h) {
        ctx.O32 = MatF::Zero(n, d);
        ctx.l = VecF::Zero(n);
        ctx.m = VecF::Constant(n, kNegInf);
    }
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
        w.store(Tensor::l, i, -1, r0, 0, r, 1, r * kF32);
        w.store(Tensor::m, i, -1, r0, 0, r, 1, r * kF32);
    }
}

// The output: O as the steps left it, float32 (Algorithm 1 keeps O in float32 in HBM), or, after
// cuda/flash1.cu's conversion launch, rounded to the storage type it writes.
void flash1_output(Ctx& ctx, bool converted) {
    HeadData* h = ctx.h;
    if (!h) return;
    const int64_t n = ctx.p.seq, d = ctx.p.head_dim;
    for (int64_t a = 0; a < n * d; ++a)
        h->O[a] = converted ? round_to(ctx.p.dtype, ctx.O32.data()[a]) : ctx.O32.data()[a];
    if (ctx.rec) ctx.rec->output = to_doubles(ctx.O32.row(ctx.rec->row).data(), d);
}

// One thread block per head: the whole of Algorithm 1.
void flash1_forward_block(Ctx& ctx, int64_t /*block*/, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.t;
    flash1_init(ctx, w);
    for (int64_t j = 0; j < t.tc; ++j)
        w.segment(ctx.h || has_mask(p) ? -1 : t.cols(j), [&] {
            over_query_blocks(p, t, j, w, [&](int64_t i, int64_t r0, int64_t r) { flash1_step(ctx, w, i, j, r0, r); });
        });
    flash1_output(ctx, false);
}

// cuda/flash1.cu's launches: the initialisation, K/V block ctx.launch of every query block, the
// conversion of O (fp32 read, storage type written).
void flash1_init_block(Ctx& ctx, int64_t /*block*/, Walker& w) {
    w.begin_step();
    flash1_init(ctx, w);
}
void flash1_launch_block(Ctx& ctx, int64_t /*block*/, Walker& w) {
    const int64_t j = ctx.launch;
    over_query_blocks(ctx.p, ctx.t, j, w, [&](int64_t i, int64_t r0, int64_t r) { flash1_step(ctx, w, i, j, r0, r); });
}
void flash1_convert_block(Ctx& ctx, int64_t /*block*/, Walker& w) {
    const Tiling& t = ctx.t;
    const int64_t d = ctx.p.head_dim, e = ctx.p.elem_bytes();
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.begin_step();
        w.load(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
        w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * e);
        w.in_sram(r * d * kF32);
    }
    flash1_output(ctx, true);
}

// ---------------------------------------------------------------- [flash2]
// FlashAttention-2 order, one thread block per query block i (grid (T_r, B*H)): the block streams
// K_j, V_j. m_i, l_i and the unnormalised accumulator O_i stay in SRAM; each step rescales O_i by
// e^(m_old - m_new); one division by l_i at the end; O_i and the log-sum-exp LSE_i = m_i + log l_i
// are written once. A fully masked row stores O = 0 and LSE = 0 (finite; its scores are all masked,
// so the backward's exp(S - LSE) is 0 there whatever LSE holds).
void flash2_forward_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.t;
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const float scale = static_cast<float>(p.softmax_scale());
    const HeadData* h = ctx.h;
    SoftmaxRecord* rec = ctx.rec;
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
    w.store(Tensor::O, i, -1, r0, 0, r, d, r * d * p.out_bytes());
    w.store(Tensor::LSE, i, -1, r0, 0, r, 1, r * kF32);
    if (h) {
        for (int64_t a = 0; a < r; ++a) {
            const float inv = l(a) > 0 ? 1.0f / l(a) : 0.0f;
            for (int64_t k = 0; k < d; ++k) h->O[(r0 + a) * d + k] = round_to(p.dtype, acc(a, k) * inv);
            if (ctx.lse.size() > 0) ctx.lse(r0 + a) = l(a) > 0 ? m(a) + std::log(l(a)) : 0.0f;
            if (a == rec_local) {
                rec->output.resize(static_cast<size_t>(d));
                for (int64_t k = 0; k < d; ++k) rec->output[static_cast<size_t>(k)] = acc(a, k) * inv;
            }
        }
    }
}

}  // namespace

// ---------------------------------------------------------------- [kernel list]
namespace detail {
std::vector<KernelDef> forward_kernels(const Ctx& ctx, Algo a) {
    const Tiling& t = ctx.t;
    switch (a) {
        case Algo::standard: {
            const RowKernelShape sh = row_kernel_shape(t.n, ctx.sram, 1, t.bc);
            return {{{"S = scale QK^T (one block per row tile, looping over column tiles)", 0, t.tr,
                      "(T_r, B*H), row tile fastest"},
                     standard_scores_block,
                     true,
                     key_rows},
                    {{sh.whole_rows ? "P = softmax(S), " + std::to_string(sh.group_rows) + " rows of S a block"
                                    : "P = softmax(S), one row a block in two passes (a row does not fit in SRAM)",
                      0, sh.blocks, "(row groups, B*H)"},
                     standard_softmax_block,
                     true,
                     key_softmax_rows},
                    {{"O = PV (one block per row tile, accumulating over column tiles)", 0, t.tr,
                      "(T_r, B*H), row tile fastest"},
                     standard_pv_block,
                     true,
                     key_rows}};
        }
        case Algo::flash1: {
            if (!t.launch_per_kv_block)
                return {{{"flash1 forward (Algorithm 1: K/V blocks outer, O, l, m rewritten in HBM)", 0, 1,
                          "(B*H): one block per head, as FlashAttention-1 launches it"},
                         flash1_forward_block,
                         true}};
            std::vector<KernelDef> ks;
            ks.push_back({{"flash1: O = 0, l = 0, m = -inf in HBM", 0, 1, "(B*H)", true}, flash1_init_block, true});
            for (int64_t j = 0; j < t.tc; ++j) {
                KernelDef k{{"flash1 launch " + std::to_string(j) + " of " + std::to_string(t.tc) + ": K/V block " +
                                 std::to_string(j) + " against every query block (O, l, m in HBM)",
                             0, 1, "(B*H): one launch per K/V block, as cuda/flash1.cu runs it"},
                            flash1_launch_block,
                            true};
                k.launch = j;
                ks.push_back(std::move(k));
            }
            ks.push_back({{"flash1: O converted from fp32", 0, 1, "(B*H)", true}, flash1_convert_block, true});
            return ks;
        }
        case Algo::flash2: {
            KernelDef k{
                {"flash2 forward (one block per query block, K/V streamed)", 0, t.tr, "(T_r, B*H), row block fastest"},
                flash2_forward_block,
                true,
                key_rows_unmasked};
            if (t.static_units) {
                k.info.static_units = true;
                k.info.unit_pairs = ctx.p.causal;
                k.info.lone_middles = t.lone_middles;
                k.info.grid = ctx.p.causal ? std::string(
                                                 "persistent, min(SMs, units) blocks taking units in turn; "
                                                 "a unit is a head's p-th heaviest and p-th lightest query "
                                                 "blocks") +
                                                 (t.lone_middles ? ", or its middle block alone"
                                                                 : ", or two heads' middle blocks")
                                           : "persistent, min(SMs, units) blocks taking units in turn; a unit is "
                                             "one query block";
            }
            return {std::move(k)};
        }
    }
    return {};
}
}  // namespace detail

}  // namespace sim
