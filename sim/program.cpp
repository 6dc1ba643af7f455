// sim/program.cpp — helpers the kernel bodies of both passes share (sim/program.hpp): standard
// attention's GEMMs over a stored N x N matrix, the element-wise mask of a score tile, and the shape
// and block keys of standard's row-wise kernels.
#include <algorithm>

#include "sim/mask.hpp"
#include "sim/program.hpp"

namespace sim {

namespace detail {

MatF stored_gemm_rows(Ctx& ctx, const Tiling& t, int64_t i, Walker& w, Tensor stored_t, const MatF& stored,
                      Tensor input_t, const MapF& input, Tensor out) {
    const int64_t d = ctx.p.head_dim, e = ctx.p.elem_bytes(), r0 = t.r0(i), r = t.rows(i);
    MatF acc;
    if (ctx.h) acc = MatF::Zero(r, d);
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), cc = t.cols(j);
        w.begin_step();
        w.load(stored_t, i, j, r0, c0, r, cc, r * cc * e);
        w.load(input_t, j, -1, c0, 0, cc, d, cc * d * e);
        w.compute(out, i, j, r, d, {2 * r * cc * d, 0, 0});
        w.in_sram(r * cc * e + cc * d * e + r * d * kF32);
        if (ctx.h) acc.noalias() += stored.block(r0, c0, r, cc) * input.middleRows(c0, cc);
    }
    return acc;
}

MatF stored_gemm_cols(Ctx& ctx, const Tiling& t, int64_t j, Walker& w, Tensor stored_t, const MatF& stored,
                      Tensor input_t, const MapF& input, Tensor out) {
    const int64_t d = ctx.p.head_dim, e = ctx.p.elem_bytes(), c0 = t.c0(j), cc = t.cols(j);
    MatF acc;
    if (ctx.h) acc = MatF::Zero(cc, d);
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        w.begin_step();
        w.load(stored_t, i, j, r0, c0, r, cc, r * cc * e);
        w.load(input_t, i, -1, r0, 0, r, d, r * d * e);
        w.compute(out, j, i, cc, d, {2 * r * cc * d, 0, 0});
        w.in_sram(r * cc * e + r * d * e + cc * d * kF32);
        if (ctx.h) acc.noalias() += stored.block(r0, c0, r, cc).transpose() * input.middleRows(r0, r);
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

int64_t key_softmax_rows(const Ctx& ctx, int64_t g) {
    if (has_mask(ctx.p)) return -1;  // under the mask each row reads its own visible columns
    const RowKernelShape sh = row_kernel_shape(ctx.t.n, ctx.sram, 1, ctx.t.bc);
    return sh.whole_rows ? std::min(ctx.t.n, (g + 1) * sh.group_rows) - g * sh.group_rows : 0;
}
int64_t key_ds_rows(const Ctx& ctx, int64_t g) {
    const RowKernelShape sh = row_kernel_shape(ctx.t.n, ctx.sram, 2, ctx.t.bc);
    return sh.whole_rows ? std::min(ctx.t.n, (g + 1) * sh.group_rows) - g * sh.group_rows : 0;
}

}  // namespace detail

}  // namespace sim
