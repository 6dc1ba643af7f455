// sim/backward.cpp — the backward pass's tile loops: standard attention (reads the stored P, and
// writes and reads dP and dS through HBM), FlashAttention-2 (recomputes S and P from the stored LSE,
// K/V blocks outer, dQ accumulated in HBM) and the paper's Algorithm 4 (flash1).
//
// All compute the gradients of L = sum(O o dO):  dV = P^T dO,  dP = dO V^T,  D = rowsum(P o dP)
// (= rowsum(dO o O)),  dS = P o (dP - D),  dQ = scale dS K,  dK = scale dS^T Q.
//
// [SECTIONS]  standard (five kernels) · flash2 (three kernels) · flash1 (Algorithm 4) · kernel lists
#include <cmath>

#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {
namespace {
using namespace detail;

void round_rows(const Problem& p, const MatF& src, float* dst, int64_t r0, int64_t d, float scale = 1.0f) {
    for (int64_t a = 0; a < src.rows(); ++a)
        for (int64_t k = 0; k < d; ++k) dst[(r0 + a) * d + k] = round_to(p.dtype, src(a, k) * scale);
}

// ---------------------------------------------------------------- [standard]
// Kernel 0: dV = P^T dO, one block per column tile j (dV_j accumulates over i in SRAM).
void standard_dv_block(Ctx& ctx, int64_t j, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t d = p.head_dim, c0 = ctx.tb.c0(j), cc = ctx.tb.cols(j);
    const MatF acc = stored_gemm_cols(ctx, ctx.tb, j, w, Tensor::P, ctx.P, Tensor::dO,
                                      ctx.h ? ctx.h->dO : MapF(nullptr, 0, d), Tensor::dV);
    w.store(Tensor::dV, j, -1, c0, 0, cc, d, cc * d * p.elem_bytes());
    if (ctx.h) round_rows(p, acc, ctx.h->dV, c0, d);
}

// Kernel 1: dP = dO V^T, one block per row tile i (dO_i stays in SRAM across its row).
void standard_dp_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.tb;
    const int64_t d = p.head_dim, e = p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), cc = t.cols(j);
        w.begin_step();
        if (j == 0) w.load(Tensor::dO, i, -1, r0, 0, r, d, r * d * e);
        w.load(Tensor::V, j, -1, c0, 0, cc, d, cc * d * e);
        w.compute(Tensor::dP, i, j, r, cc, {2 * r * cc * d, 0, 0});
        w.store(Tensor::dP, i, j, r0, c0, r, cc, r * cc * e);
        w.in_sram(r * d * e + cc * d * e + r * cc * kF32);
        if (ctx.h) {
            MatF x = ctx.h->dO.middleRows(r0, r) * ctx.h->V.middleRows(c0, cc).transpose();
            for (int64_t a = 0; a < x.size(); ++a) x.data()[a] = round_to(p.dtype, x.data()[a]);
            ctx.dP.block(r0, c0, r, cc) = x;
        }
    }
}

void standard_ds_rows(Ctx& ctx, int64_t r0, int64_t r) {
    for (int64_t row = r0; row < r0 + r; ++row) {
        const float D = (ctx.P.row(row).array() * ctx.dP.row(row).array()).sum();
        for (int64_t k = 0; k < ctx.p.seq; ++k)
            ctx.dS(row, k) = round_to(ctx.p.dtype, ctx.P(row, k) * (ctx.dP(row, k) - D));
    }
}

// Kernel 2: dS = P o (dP - D), D = rowsum(P o dP), row-wise like the softmax (rows of P and dP in SRAM
// together; when a row pair does not fit, one row a block in two passes: D first, then dS).
void standard_ds_block(Ctx& ctx, int64_t g, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t n = p.seq, e = p.elem_bytes();
    const RowKernelShape sh = row_kernel_shape(n, ctx.sram, 2, ctx.t.bc);
    if (sh.whole_rows) {
        const int64_t r0 = g * sh.group_rows, r = std::min(n, r0 + sh.group_rows) - r0;
        w.begin_step();
        w.load(Tensor::P, g, -1, r0, 0, r, n, r * n * e);
        w.load(Tensor::dP, g, -1, r0, 0, r, n, r * n * e);
        w.compute(Tensor::D, g, -1, r, 1, {0, 0, 2 * r * n});
        w.compute(Tensor::dS, g, -1, r, n, {0, 0, 2 * r * n});
        w.store(Tensor::dS, g, -1, r0, 0, r, n, r * n * e);
        w.in_sram(2 * r * n * kF32);
        if (ctx.h) standard_ds_rows(ctx, r0, r);
        return;
    }
    const int64_t row = g;
    two_pass_row(w, n, sh.chunk, [&](int pass, int64_t q, int64_t k0, int64_t cc) {
        w.load(Tensor::P, row, q, row, k0, 1, cc, cc * e);
        w.load(Tensor::dP, row, q, row, k0, 1, cc, cc * e);
        if (pass == 0) {
            w.compute(Tensor::D, row, q, 1, 1, {0, 0, 2 * cc});
        } else {
            w.compute(Tensor::dS, row, q, 1, cc, {0, 0, 2 * cc});
            w.store(Tensor::dS, row, q, row, k0, 1, cc, cc * e);
        }
        w.in_sram(2 * cc * kF32);
    });
    if (ctx.h) standard_ds_rows(ctx, row, 1);
}

// Kernel 3: dQ = scale dS K, one block per row tile i.
void standard_dq_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t d = p.head_dim, r0 = ctx.tb.r0(i), r = ctx.tb.rows(i);
    const MatF acc = stored_gemm_rows(ctx, ctx.tb, i, w, Tensor::dS, ctx.dS, Tensor::K,
                                      ctx.h ? ctx.h->K : MapF(nullptr, 0, d), Tensor::dQ);
    w.compute(Tensor::dQ, i, -1, r, d, {0, 0, r * d});  // times the softmax scale
    w.store(Tensor::dQ, i, -1, r0, 0, r, d, r * d * p.elem_bytes());
    if (ctx.h) round_rows(p, acc, ctx.h->dQ, r0, d, static_cast<float>(p.softmax_scale()));
}

// Kernel 4: dK = scale dS^T Q, one block per column tile j.
void standard_dk_block(Ctx& ctx, int64_t j, Walker& w) {
    const Problem& p = ctx.p;
    const int64_t d = p.head_dim, c0 = ctx.tb.c0(j), cc = ctx.tb.cols(j);
    const MatF acc = stored_gemm_cols(ctx, ctx.tb, j, w, Tensor::dS, ctx.dS, Tensor::Q,
                                      ctx.h ? ctx.h->Q : MapF(nullptr, 0, d), Tensor::dK);
    w.compute(Tensor::dK, j, -1, cc, d, {0, 0, cc * d});  // times the softmax scale
    w.store(Tensor::dK, j, -1, c0, 0, cc, d, cc * d * p.elem_bytes());
    if (ctx.h) round_rows(p, acc, ctx.h->dK, c0, d, static_cast<float>(p.softmax_scale()));
}

// ---------------------------------------------------------------- [flash2]
// The gradients of one tile (i, j) of the flash backward passes, given P_ij (B_r, B_c) and
// D_i = rowsum(dO_i o O_i): dV_j += P^T dO_i, dP = dO_i V_j^T, dS = P o (dP - D_i), then with
// dS' = ds_scale dS: dK_j += dS'^T Q_i and the float32 accumulator dQ_i += dS' K_j. Algorithm 4
// scales dS here (ds_scale = softmax scale); FA2 scales dK and dQ once at the end (ds_scale = 1).
void accumulate_grads(Ctx& ctx, int64_t r0, int64_t c0, const MatF& P, const Eigen::Ref<const VecF>& D, float ds_scale,
                      MatF& dK, MatF& dV) {
    const int64_t r = P.rows(), cc = P.cols();
    dV.noalias() += P.transpose() * ctx.h->dO.middleRows(r0, r);
    const MatF dP = ctx.h->dO.middleRows(r0, r) * ctx.h->V.middleRows(c0, cc).transpose();
    MatF dS(r, cc);
    for (int64_t a = 0; a < r; ++a) dS.row(a) = (P.row(a).array() * (dP.row(a).array() - D(a))).matrix();
    ctx.dQacc.middleRows(r0, r).noalias() += (ds_scale * dS) * ctx.h->K.middleRows(c0, cc);
    dK.noalias() += (ds_scale * dS).transpose() * ctx.h->Q.middleRows(r0, r);
}

int64_t flash_backward_sram(const Problem& p, int64_t r, int64_t cc, bool flash1) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    return 2 * cc * d * e + 2 * cc * d * kF32 + 2 * r * d * e + 2 * r * cc * kF32 + r * d * kF32 +
           (flash1 ? r * d * kF32 + 3 * r * kF32 : 2 * r * kF32);
}

// Kernel 0: D_i = rowsum(dO_i o O_i) (O as the forward stored it), and the float32 dQ accumulator
// zeroed; one block per row tile.
void flash2_backward_pre_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.tb;
    const int64_t d = p.head_dim, e = p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    w.begin_step();
    w.load(Tensor::O, i, -1, r0, 0, r, d, r * d * e);
    w.load(Tensor::dO, i, -1, r0, 0, r, d, r * d * e);
    w.compute(Tensor::D, i, -1, r, 1, {0, 0, 2 * r * d});
    w.store(Tensor::D, i, -1, r0, 0, r, 1, r * kF32);
    for (int64_t c = 0; c < t.dq_copies; ++c)  // dQ accumulator(s) := 0 (float32; copy c at column c d)
        w.store(Tensor::dQ, i, -1, r0, c * d, r, d, r * d * kF32);
    w.in_sram(2 * r * d * e + r * kF32);
    if (!ctx.h) return;
    for (int64_t a = 0; a < r; ++a) {
        float s = 0;
        for (int64_t k = 0; k < d; ++k) s += ctx.h->dO(r0 + a, k) * ctx.h->O[(r0 + a) * d + k];
        ctx.D(r0 + a) = s;
    }
    ctx.dQacc.middleRows(r0, r).setZero();
}

// Kernel 1: one block per K/V block j (grid (T_c, B*H), column block fastest). K_j, V_j and the dK_j,
// dV_j accumulators stay in SRAM while the block walks the query blocks i that see it; each step
// recomputes S_ij and P_ij = exp(S_ij - LSE_i) and adds dS_ij K_j into dQ_i in HBM (FA2 does this
// with float32 atomic adds: a read and a write of dQ_i per step).
void flash2_backward_dkdv_block(Ctx& ctx, int64_t j, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.tb;
    const int64_t d = p.head_dim, e = p.elem_bytes(), c0 = t.c0(j), cc = t.cols(j);
    const float scale = static_cast<float>(p.softmax_scale());
    MatF dK, dV;
    if (ctx.h) {
        dK = MatF::Zero(cc, d);
        dV = MatF::Zero(cc, d);
    }
    over_query_blocks(p, t, j, w, [&](int64_t i, int64_t r0, int64_t r) {
        w.load(Tensor::Q, i, -1, r0, 0, r, d, r * d * e);
        w.load(Tensor::dO, i, -1, r0, 0, r, d, r * d * e);
        w.load(Tensor::LSE, i, -1, r0, 0, r, 1, r * kF32);
        w.load(Tensor::D, i, -1, r0, 0, r, 1, r * kF32);
        w.compute(Tensor::S, i, j, r, cc, {2 * r * cc * d, 0, r * cc});
        w.compute(Tensor::P, i, j, r, cc, {0, r * cc, r * cc});
        w.compute(Tensor::dV, j, i, cc, d, {2 * r * cc * d, 0, 0});
        w.compute(Tensor::dP, i, j, r, cc, {2 * r * cc * d, 0, 0});
        w.compute(Tensor::dS, i, j, r, cc, {0, 0, 2 * r * cc});
        w.compute(Tensor::dK, j, i, cc, d, {2 * r * cc * d, 0, 0});
        w.compute(Tensor::dQ, i, j, r, d, {2 * r * cc * d, 0, 0});
        for (int64_t c = 0; c < t.dq_copies; ++c) {                     // each copy gets its part of the block's keys
            w.load(Tensor::dQ, i, -1, r0, c * d, r, d, r * d * kF32);   // atomic add: read ...
            w.store(Tensor::dQ, i, -1, r0, c * d, r, d, r * d * kF32);  // ... and write dQ_i (float32)
        }
        w.in_sram(flash_backward_sram(p, r, cc, false));
        if (!ctx.h) return;
        MatF S = (ctx.h->Q.middleRows(r0, r) * ctx.h->K.middleRows(c0, cc).transpose()) * scale;  // (B_r, B_c)
        apply_mask(p, S, r0, c0);
        MatF P(r, cc);
        for (int64_t a = 0; a < r; ++a) P.row(a) = masked_exp(S.row(a), ctx.lse(r0 + a));
        accumulate_grads(ctx, r0, c0, P, ctx.D.segment(r0, r), 1.0f, dK, dV);
    });
    w.compute(Tensor::dK, j, -1, cc, d, {0, 0, cc * d});  // times the softmax scale
    w.store(Tensor::dK, j, -1, c0, 0, cc, d, cc * d * e);
    w.store(Tensor::dV, j, -1, c0, 0, cc, d, cc * d * e);
    if (ctx.h) {
        round_rows(p, dK, ctx.h->dK, c0, d, scale);
        round_rows(p, dV, ctx.h->dV, c0, d);
    }
}

// Kernel 2: dQ = scale * accumulator, converted from float32 to the storage type; one block per row tile.
void flash2_backward_dq_block(Ctx& ctx, int64_t i, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.tb;
    const int64_t d = p.head_dim, e = p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    w.begin_step();
    for (int64_t c = 0; c < t.dq_copies; ++c) w.load(Tensor::dQ, i, -1, r0, c * d, r, d, r * d * kF32);
    w.compute(Tensor::dQ, i, -1, r, d, {0, 0, t.dq_copies * r * d});  // scale (and sum the copies)
    w.store(Tensor::dQ, i, -1, r0, 0, r, d, r * d * e);
    w.in_sram(r * d * kF32);
    if (ctx.h) round_rows(p, ctx.dQacc.middleRows(r0, r), ctx.h->dQ, r0, d, static_cast<float>(p.softmax_scale()));
}

// ---------------------------------------------------------------- [flash1: Algorithm 4]
// The paper's Algorithm 4, one block per head like its forward: dQ (float32), dK, dV initialised to
// 0 in HBM; outer loop over K/V blocks j (K_j, V_j loaded once, dK_j, dV_j accumulated in SRAM),
// inner over query blocks i: read Q_i, O_i (float32, as Algorithm 1 left it), dO_i, dQ_i, l_i, m_i;
// P_ij = exp(S_ij - m_i) / l_i; D_i = rowsum(dO_i o O_i) recomputed in every step; dQ_i written back
// each step; dK_j, dV_j written at the end of the outer step.
void flash1_backward_block(Ctx& ctx, int64_t /*block*/, Walker& w) {
    const Problem& p = ctx.p;
    const Tiling& t = ctx.tb;
    const int64_t d = p.head_dim, e = p.elem_bytes(), n = p.seq;
    const float scale = static_cast<float>(p.softmax_scale());
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.store(Tensor::dQ, i, -1, r0, 0, r, d, r * d * kF32);
    }
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), cc = t.cols(j);
        w.store(Tensor::dK, j, -1, c0, 0, cc, d, cc * d * e);
        w.store(Tensor::dV, j, -1, c0, 0, cc, d, cc * d * e);
    }
    if (ctx.h) ctx.dQacc = MatF::Zero(n, d);
    for (int64_t j = 0; j < t.tc; ++j)
        w.segment(ctx.h || has_mask(p) ? -1 : t.cols(j), [&] {
            const int64_t c0 = t.c0(j), cc = t.cols(j);
            MatF dK, dV;
            if (ctx.h) {
                dK = MatF::Zero(cc, d);
                dV = MatF::Zero(cc, d);
            }
            over_query_blocks(p, t, j, w, [&](int64_t i, int64_t r0, int64_t r) {
                w.load(Tensor::Q, i, -1, r0, 0, r, d, r * d * e);
                w.load(Tensor::O, i, -1, r0, 0, r, d, r * d * kF32);
                w.load(Tensor::dO, i, -1, r0, 0, r, d, r * d * e);
                w.load(Tensor::dQ, i, -1, r0, 0, r, d, r * d * kF32);
                w.load(Tensor::l, i, -1, r0, 0, r, 1, r * kF32);
                w.load(Tensor::m, i, -1, r0, 0, r, 1, r * kF32);
                w.compute(Tensor::S, i, j, r, cc, {2 * r * cc * d, 0, r * cc});
                w.compute(Tensor::P, i, j, r, cc, {0, r * cc, 2 * r * cc});
                w.compute(Tensor::dV, j, i, cc, d, {2 * r * cc * d, 0, 0});
                w.compute(Tensor::dP, i, j, r, cc, {2 * r * cc * d, 0, 0});
                w.compute(Tensor::D, i, -1, r, 1, {0, 0, 2 * r * d});
                w.compute(Tensor::dS, i, j, r, cc, {0, 0, 2 * r * cc});
                w.compute(Tensor::dQ, i, j, r, d, {2 * r * cc * d, 0, r * d});
                w.compute(Tensor::dK, j, i, cc, d, {2 * r * cc * d, 0, 0});
                w.store(Tensor::dQ, i, -1, r0, 0, r, d, r * d * kF32);
                w.in_sram(flash_backward_sram(p, r, cc, true));
                if (!ctx.h) return;
                MatF S = (ctx.h->Q.middleRows(r0, r) * ctx.h->K.middleRows(c0, cc).transpose()) * scale;
                apply_mask(p, S, r0, c0);
                MatF P(r, cc);
                VecF D(r);
                for (int64_t a = 0; a < r; ++a) {
                    const float l = ctx.l(r0 + a), m = ctx.m(r0 + a);
                    if (!(l > 0))
                        P.row(a).setZero();  // a fully masked row: no probability anywhere
                    else
                        P.row(a) = masked_exp(S.row(a), m) / l;
                    D(a) = (ctx.h->dO.row(r0 + a).array() * ctx.O32.row(r0 + a).array()).sum();
                }
                accumulate_grads(ctx, r0, c0, P, D, scale, dK, dV);
            });
            w.store(Tensor::dK, j, -1, c0, 0, cc, d, cc * d * e);
            w.store(Tensor::dV, j, -1, c0, 0, cc, d, cc * d * e);
            if (ctx.h) {
                round_rows(p, dK, ctx.h->dK, c0, d);
                round_rows(p, dV, ctx.h->dV, c0, d);
            }
        });
    if (ctx.h)
        for (int64_t a = 0; a < n * d; ++a) ctx.h->dQ[a] = ctx.dQacc.data()[a];  // dQ stays float32, like O
}

}  // namespace

// ---------------------------------------------------------------- [kernel lists]
namespace detail {
std::vector<KernelDef> backward_kernels(const Ctx& ctx, Algo a) {
    const Tiling& t = ctx.tb;
    switch (a) {
        case Algo::standard: {
            const RowKernelShape sh = row_kernel_shape(t.n, ctx.sram, 2, ctx.t.bc);
            return {
                {{"dV = P^T dO (one block per column tile)", 1, t.tc, "(T_c, B*H), column tile fastest"},
                 standard_dv_block,
                 true,
                 key_bwd_cols},
                {{"dP = dO V^T (one block per row tile), dP written to HBM", 1, t.tr, "(T_r, B*H), row tile fastest"},
                 standard_dp_block,
                 true,
                 key_bwd_rows},
                {{sh.whole_rows ? "dS = P o (dP - D), " + std::to_string(sh.group_rows) + " rows a block"
                                : "dS = P o (dP - D), one row a block in two passes",
                  1, sh.blocks, "(row groups, B*H)"},
                 standard_ds_block,
                 true,
                 key_ds_rows},
                {{"dQ = scale dS K (one block per row tile)", 1, t.tr, "(T_r, B*H), row tile fastest"},
                 standard_dq_block,
                 true,
                 key_bwd_rows},
                {{"dK = scale dS^T Q (one block per column tile)", 1, t.tc, "(T_c, B*H), column tile fastest"},
                 standard_dk_block,
                 true,
                 key_bwd_cols}};
        }
        case Algo::flash1:
            return {{{"flash1 backward (Algorithm 4: K/V blocks outer, dQ_i, O_i, l_i, m_i re-read in HBM)", 1, 1,
                      "(B*H): one block per head"},
                     flash1_backward_block,
                     true}};
        case Algo::flash2: {
            std::vector<KernelDef> ks{
                {{"flash2 backward pre: D = rowsum(dO o O), dQ accumulator zeroed", 1, t.tr,
                  "(T_r, B*H), row block fastest", true},
                 flash2_backward_pre_block,
                 true,
                 key_bwd_rows},
                {{"flash2 backward: dK, dV (K/V blocks outer), dQ accumulated in HBM", 1, t.tc,
                  "(T_c, B*H), column block fastest"},
                 flash2_backward_dkdv_block,
                 true,
                 key_bwd_cols_unmasked},
                {{"flash2 backward post: dQ float32 -> storage type", 1, t.tr, "(T_r, B*H), row block fastest", true},
                 flash2_backward_dq_block,
                 true,
                 key_bwd_rows}};
            if (t.dq_in_block_order) {
                ks[1].info.name = "flash2 backward: dK, dV (K/V blocks outer), dQ added in block order";
                ks[1].info.dq_in_order = true;
            }
            return ks;
        }
    }
    return {};
}
}  // namespace detail

}  // namespace sim
