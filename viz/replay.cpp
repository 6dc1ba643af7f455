#include "viz/replay.hpp"

#include <algorithm>

namespace viz {

using sim::Tensor;

namespace {
size_t ti(Tensor t) { return static_cast<size_t>(t); }
}  // namespace

Layout make_layout(const sim::Result& r) {
    Layout L;
    L.n = r.problem.seq;
    L.d = r.problem.head_dim;
    const int64_t n = L.n, d = L.d;
    for (Tensor t : {Tensor::Q, Tensor::K, Tensor::V, Tensor::O}) L.rows[ti(t)] = n, L.cols[ti(t)] = d;
    // Statistics and score matrices appear when the run moves them to or from HBM: the complete
    // totals say so even when a capped trace ends before they move (standard's P at large N).
    for (Tensor t : {Tensor::S, Tensor::P})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = n;
    for (Tensor t : {Tensor::m, Tensor::l, Tensor::LSE})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = 1;
    for (const auto& e : r.trace.events) {
        const size_t k = ti(e.tensor);
        if (L.rows[k] > 0 || (e.kind != sim::EventKind::load && e.kind != sim::EventKind::store)) continue;
        if (e.tensor == Tensor::S || e.tensor == Tensor::P)
            L.rows[k] = n, L.cols[k] = n;
        else if (e.tensor == Tensor::m || e.tensor == Tensor::l || e.tensor == Tensor::LSE)
            L.rows[k] = n, L.cols[k] = 1;
    }
    // Default strides from the block sizes; then the trace's own tile-0 extents per phase.
    for (size_t k = 0; k < L.stride.size(); ++k)
        for (int ph = 0; ph < 3; ++ph) {
            const bool kv = k == ti(Tensor::K) || k == ti(Tensor::V);
            L.stride[k][ph] = {kv ? r.block_cols : r.block_rows, r.block_cols};
        }
    std::array<std::array<std::array<bool, 2>, 3>, sim::kTensorCount> seen{};
    for (const auto& e : r.trace.events) {
        const size_t k = ti(e.tensor);
        const int ph = std::clamp(e.phase, 0, 2);
        if (e.row_tile == 0 && !seen[k][ph][0]) seen[k][ph][0] = true, L.stride[k][ph][0] = std::max(1, e.rows);
        if (e.col_tile == 0 && !seen[k][ph][1]) seen[k][ph][1] = true, L.stride[k][ph][1] = std::max(1, e.cols);
    }
    return L;
}

ElemRect Layout::rect(const sim::Event& e) const {
    const size_t k = ti(e.tensor);
    const int ph = std::clamp(e.phase, 0, 2);
    ElemRect x;
    const int64_t R = rows[k], C = cols[k];
    if (e.row_tile >= 0) x.r0 = e.row_tile * stride[k][ph][0];
    x.r1 = std::min(R, x.r0 + std::max(1, e.rows));
    if (e.col_tile >= 0) {
        x.c0 = e.col_tile * stride[k][ph][1];
        x.c1 = std::min(C, x.c0 + std::max(1, e.cols));
    } else {
        x.c0 = 0;
        x.c1 = C;
    }
    x.r0 = std::min(x.r0, R);
    x.c0 = std::min(x.c0, C);
    return x;
}

Replay::Replay(const sim::Result& r) : r_(&r), layout_(make_layout(r)) { reset(); }

void Replay::reset() {
    totals_ = {};
    pos_ = 0;
    const int64_t n = layout_.n;
    for (size_t k = 0; k < grids_.size(); ++k) {
        Grid& g = grids_[k];
        if (!layout_.rows[k]) {
            g = {};
            continue;
        }
        const bool kv = k == ti(Tensor::K) || k == ti(Tensor::V);
        const int64_t rs = kv ? r_->block_cols : r_->block_rows;
        g.rows = static_cast<int>(std::clamp<int64_t>((n + rs - 1) / rs, 1, kMaxCells));
        g.cols = layout_.cols[k] == n
                     ? static_cast<int>(std::clamp<int64_t>((n + r_->block_cols - 1) / r_->block_cols, 1, kMaxCells))
                     : 1;
        g.cell.assign(static_cast<size_t>(g.rows * g.cols), 0);
    }
}

void Replay::cells_of(Tensor t, const ElemRect& e, int* r0, int* r1, int* c0, int* c1) const {
    const size_t k = ti(t);
    const Grid& g = grids_[k];
    const int64_t R = std::max<int64_t>(1, layout_.rows[k]), C = std::max<int64_t>(1, layout_.cols[k]);
    *r0 = static_cast<int>(e.r0 * g.rows / R);
    *r1 = std::max(*r0 + 1, static_cast<int>((e.r1 * g.rows + R - 1) / R));
    *c0 = static_cast<int>(e.c0 * g.cols / C);
    *c1 = std::max(*c0 + 1, static_cast<int>((e.c1 * g.cols + C - 1) / C));
    *r1 = std::min(*r1, g.rows);
    *c1 = std::min(*c1, g.cols);
}

void Replay::apply(const sim::Event& e) {
    if (e.kind == sim::EventKind::load) totals_[e.tensor].read_bytes += e.bytes;
    if (e.kind == sim::EventKind::store) totals_[e.tensor].write_bytes += e.bytes;
    totals_.flops += e.flops;
    if (e.kind == sim::EventKind::rescale) totals_.rescales += e.rows;
    if (e.kind != sim::EventKind::load && e.kind != sim::EventKind::store) return;
    Grid& g = grids_[ti(e.tensor)];
    if (g.cell.empty()) return;
    int r0, r1, c0, c1;
    cells_of(e.tensor, layout_.rect(e), &r0, &r1, &c0, &c1);
    const uint8_t bit = e.kind == sim::EventKind::load ? 1 : 2;
    for (int a = r0; a < r1; ++a)
        for (int b = c0; b < c1; ++b) g.cell[static_cast<size_t>(a * g.cols + b)] |= bit;
}

void Replay::advance_to(size_t end) {
    const auto& ev = r_->trace.events;
    end = std::min(end, ev.size());
    if (end < pos_) reset();
    for (; pos_ < end; ++pos_) apply(ev[pos_]);
}

std::vector<Resident> resident_tiles(const sim::Trace& tr, size_t first, size_t last, size_t scan_limit) {
    std::vector<Resident> out;
    const auto& ev = tr.events;
    last = std::min(last, ev.size());
    if (first >= last) return out;
    const int32_t phase = ev[first].phase;
    std::array<bool, sim::kTensorCount> decided{};
    auto sram_bytes = [](const sim::Event& e) {
        return e.kind == sim::EventKind::load ? e.bytes : int64_t{4} * e.rows * e.cols;
    };
    // This step's own events, latest first: a store marks a tile leaving (it was in SRAM).
    for (size_t i = last; i-- > first;) {
        const sim::Event& e = ev[i];
        const size_t k = ti(e.tensor);
        if (decided[k]) continue;
        if (e.kind == sim::EventKind::rescale) continue;
        decided[k] = true;
        Resident r{e.tensor, e, sram_bytes(e), e.kind == sim::EventKind::store};
        if (r.leaving) {  // find what it was before leaving (a load or compute this step), for its size
            for (size_t j = i; j-- > first;)
                if (ev[j].tensor == e.tensor && ev[j].kind != sim::EventKind::store &&
                    ev[j].kind != sim::EventKind::rescale) {
                    r.bytes = sram_bytes(ev[j]);
                    break;
                }
            if (r.bytes == 0) r.bytes = e.bytes;
        }
        out.push_back(r);
    }
    // Earlier steps of the same phase: tiles loaded or computed and not yet stored.
    const size_t stop = first > scan_limit ? first - scan_limit : 0;
    for (size_t i = first; i-- > stop;) {
        const sim::Event& e = ev[i];
        if (e.phase != phase) break;
        const size_t k = ti(e.tensor);
        if (decided[k] || e.kind == sim::EventKind::rescale) continue;
        decided[k] = true;
        if (e.kind == sim::EventKind::store) continue;  // written back earlier: no longer resident
        out.push_back({e.tensor, e, sram_bytes(e), false});
    }
    std::sort(out.begin(), out.end(), [](const Resident& a, const Resident& b) { return a.tensor < b.tensor; });
    return out;
}

}  // namespace viz
