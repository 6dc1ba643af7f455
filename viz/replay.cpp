#include "viz/replay.hpp"

#include <algorithm>

#include "sim/mask.hpp"

namespace viz {

using sim::Tensor;

namespace {
size_t ti(Tensor t) { return static_cast<size_t>(t); }
bool kv_like(size_t k) {  // tiled by key blocks along N
    return k == ti(Tensor::K) || k == ti(Tensor::V) || k == ti(Tensor::dK) || k == ti(Tensor::dV);
}
bool backward_only(size_t k) {
    return k == ti(Tensor::dO) || k == ti(Tensor::dQ) || k == ti(Tensor::dK) || k == ti(Tensor::dV) ||
           k == ti(Tensor::dP) || k == ti(Tensor::dS) || k == ti(Tensor::D);
}
bool square(Tensor t) { return t == Tensor::S || t == Tensor::P || t == Tensor::dP || t == Tensor::dS; }
bool statistic(Tensor t) { return t == Tensor::m || t == Tensor::l || t == Tensor::LSE || t == Tensor::D; }
int64_t block_rows_of(const sim::Result& r, size_t k) {
    const bool bwd = backward_only(k) && r.bwd_block_rows > 0;
    if (kv_like(k)) return bwd ? r.bwd_block_cols : r.block_cols;
    return bwd ? r.bwd_block_rows : r.block_rows;
}
int64_t block_cols_of(const sim::Result& r, size_t k) {
    return backward_only(k) && r.bwd_block_cols > 0 ? r.bwd_block_cols : r.block_cols;
}
}  // namespace

ScoreGrid make_score_grid(const sim::Problem& p, int64_t block_rows, int64_t block_cols) {
    ScoreGrid g;
    if (block_rows <= 0 || block_cols <= 0 || p.seq <= 0) return g;
    const int64_t n = p.seq;
    g.B_r = block_rows;
    g.B_c = block_cols;
    g.T_r = (n + block_rows - 1) / block_rows;
    g.T_c = (n + block_cols - 1) / block_cols;
    g.f_r = (g.T_r + kMaxScoreCells - 1) / kMaxScoreCells;
    g.f_c = (g.T_c + kMaxScoreCells - 1) / kMaxScoreCells;
    g.rows = static_cast<int>((g.T_r + g.f_r - 1) / g.f_r);
    g.cols = static_cast<int>((g.T_c + g.f_c - 1) / g.f_c);
    const size_t cells = static_cast<size_t>(g.rows) * static_cast<size_t>(g.cols);
    g.tiles.assign(cells, 0);
    g.skipped.assign(cells, 0);
    g.visited.assign(cells, 0);
    g.stored.assign(cells, 0);
    const bool any_mask = p.causal || p.window > 0 || p.pad_left > 0;
    for (int a = 0; a < g.rows; ++a)
        for (int b = 0; b < g.cols; ++b) {
            const int64_t i0 = a * g.f_r, i1 = std::min(g.T_r, i0 + g.f_r);
            const int64_t j0 = b * g.f_c, j1 = std::min(g.T_c, j0 + g.f_c);
            g.tiles[g.idx(a, b)] = static_cast<uint32_t>((i1 - i0) * (j1 - j0));
            if (!any_mask) continue;
            uint32_t m = 0;
            for (int64_t i = i0; i < i1; ++i)
                for (int64_t j = j0; j < j1; ++j)
                    m += sim::tile_masked(p, i * block_rows, std::min(n, (i + 1) * block_rows), j * block_cols,
                                          std::min(n, (j + 1) * block_cols));
            g.skipped[g.idx(a, b)] = m;
            g.n_skipped += m;
        }
    return g;
}

int group_factor(int cells, float side_px, float min_px) {
    if (cells <= 1 || side_px <= 0) return 1;
    for (int k = 1; k < cells; ++k)
        if (side_px / static_cast<float>((cells + k - 1) / k) > min_px) return k;
    return cells;  // even one cell is too narrow: the whole side as one
}

ScoreGrid group_cells(const ScoreGrid& g, int k_r, int k_c) {
    k_r = std::max(1, k_r);
    k_c = std::max(1, k_c);
    if ((k_r == 1 && k_c == 1) || g.rows == 0 || g.cols == 0) return g;
    ScoreGrid o = g;
    o.f_r = g.f_r * k_r;
    o.f_c = g.f_c * k_c;
    o.rows = (g.rows + k_r - 1) / k_r;
    o.cols = (g.cols + k_c - 1) / k_c;
    const size_t cells = static_cast<size_t>(o.rows) * static_cast<size_t>(o.cols);
    for (auto* v : {&o.tiles, &o.skipped, &o.visited, &o.stored}) v->assign(cells, 0);
    for (int a = 0; a < g.rows; ++a)
        for (int b = 0; b < g.cols; ++b) {
            const size_t from = g.idx(a, b), to = o.idx(a / k_r, b / k_c);
            o.tiles[to] += g.tiles[from];
            o.skipped[to] += g.skipped[from];
            o.visited[to] += g.visited[from];
            o.stored[to] += g.stored[from];
        }
    return o;
}

bool score_visit(sim::Algo a, const sim::Event& e) {
    if (e.kind != sim::EventKind::compute || e.row_tile < 0 || e.col_tile < 0) return false;
    if (e.tensor == Tensor::S) return true;
    return a == sim::Algo::standard && e.pass == 1 && e.tensor == Tensor::dP;
}

CellState cell_state(const ScoreGrid& g, int a, int b) {
    const size_t c = g.idx(a, b);
    if (g.cur_i >= 0 && g.cell_row(g.cur_i) == a && g.cell_col(g.cur_j) == b) return CellState::current;
    const uint32_t tiles = g.tiles[c], skip = g.skipped[c], vis = g.visited[c];
    if (vis == 0) return skip == tiles ? CellState::skipped : CellState::untouched;
    if (skip == tiles) return CellState::visited_masked;  // (stored or not: the mask empties it)
    if (g.stored[c] > 0 && g.stored[c] >= vis && vis >= tiles - skip) return CellState::stored;
    return vis >= tiles - skip ? CellState::visited : CellState::partial;
}

std::string sweep_order(const ScoreGrid& g) {
    if (g.row_major == g.col_major) return {};
    return g.row_major ? "row by row (query tile outer)" : "column by column (key tile outer)";
}

bool score_store(const sim::Event& e) {
    return e.kind == sim::EventKind::store && e.row_tile >= 0 && e.col_tile >= 0 &&
           (e.tensor == Tensor::S || e.tensor == Tensor::dP);
}

Layout make_layout(const sim::Result& r) {
    Layout L;
    L.n = r.problem.seq;
    L.d = r.problem.head_dim;
    const int64_t n = L.n, d = L.d;
    for (Tensor t : {Tensor::Q, Tensor::K, Tensor::V, Tensor::O}) L.rows[ti(t)] = n, L.cols[ti(t)] = d;
    for (Tensor t : {Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = d;
    for (Tensor t : {Tensor::dP, Tensor::dS})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = n;
    if (r.totals[Tensor::D].total() > 0) L.rows[ti(Tensor::D)] = n, L.cols[ti(Tensor::D)] = 1;
    // Statistics and score matrices appear when the run moves them to or from HBM: the complete
    // totals say so even when a capped trace ends before they move (standard's P at large N).
    for (Tensor t : {Tensor::S, Tensor::P})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = n;
    for (Tensor t : {Tensor::m, Tensor::l, Tensor::LSE})
        if (r.totals[t].total() > 0) L.rows[ti(t)] = n, L.cols[ti(t)] = 1;
    for (const auto& e : r.trace.events) {
        const size_t k = ti(e.tensor);
        if (L.rows[k] > 0 || (e.kind != sim::EventKind::load && e.kind != sim::EventKind::store)) continue;
        if (square(e.tensor))
            L.rows[k] = n, L.cols[k] = n;
        else if (statistic(e.tensor))
            L.rows[k] = n, L.cols[k] = 1;
        else
            L.rows[k] = n, L.cols[k] = d;
    }
    // Default strides from the block sizes; then the trace's own tile-0 extents per phase.
    for (size_t k = 0; k < L.stride.size(); ++k)
        for (int ph = 0; ph < kMaxPhases; ++ph) L.stride[k][ph] = {block_rows_of(r, k), block_cols_of(r, k)};
    std::array<std::array<std::array<bool, 2>, kMaxPhases>, sim::kTensorCount> seen{};
    for (const auto& e : r.trace.events) {
        const size_t k = ti(e.tensor);
        if (e.kind != sim::EventKind::load && e.kind != sim::EventKind::store) continue;  // only moves are drawn
        const int ph = std::clamp(e.phase, 0, kMaxPhases - 1);
        if (e.row_tile == 0 && !seen[k][ph][0]) seen[k][ph][0] = true, L.stride[k][ph][0] = std::max(1, e.rows);
        if (e.col_tile == 0 && !seen[k][ph][1]) seen[k][ph][1] = true, L.stride[k][ph][1] = std::max(1, e.cols);
    }
    return L;
}

ElemRect Layout::rect(const sim::Event& e) const {
    const size_t k = ti(e.tensor);
    const int ph = std::clamp(e.phase, 0, kMaxPhases - 1);
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

Replay::Replay(const sim::Result& r) : r_(&r), layout_(make_layout(r)) {
    reset();
    std::array<bool, sim::kTensorCount> seen{};
    int in_phase = 0;
    const auto& ev = r.trace.events;
    for (size_t i = 0; i < ev.size(); ++i) {
        if (i > 0 && ev[i].phase != ev[i - 1].phase) seen = {}, in_phase = 0;
        if (ev[i].kind == sim::EventKind::rescale || seen[ti(ev[i].tensor)]) continue;
        seen[ti(ev[i].tensor)] = true;
        most_slots_ = std::max(most_slots_, ++in_phase);
    }
}

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
        const int64_t rs = std::max<int64_t>(1, block_rows_of(*r_, k));
        const int64_t cs = std::max<int64_t>(1, block_cols_of(*r_, k));
        g.rows = static_cast<int>(std::clamp<int64_t>((n + rs - 1) / rs, 1, kMaxCells));
        g.cols = layout_.cols[k] == n ? static_cast<int>(std::clamp<int64_t>((n + cs - 1) / cs, 1, kMaxCells)) : 1;
        g.cell.assign(static_cast<size_t>(g.rows * g.cols), 0);
    }
    scores_[0] = make_score_grid(r_->problem, r_->block_rows, r_->block_cols);
    scores_[1] =
        r_->bwd_block_rows > 0 ? make_score_grid(r_->problem, r_->bwd_block_rows, r_->bwd_block_cols) : ScoreGrid{};
}

std::vector<CellBlock> shade_blocks(const Grid& g) {
    std::vector<CellBlock> out;
    size_t band = 0;  // the first block of the rows that are cut as the current row is
    for (int i = 0; i < g.rows; ++i) {
        std::vector<CellBlock> row;
        for (int j = 0; j < g.cols;) {
            const int shade = cell_shade(g.at(i, j));
            int k = j + 1;
            while (k < g.cols && cell_shade(g.at(i, k)) == shade) ++k;
            row.push_back({i, i + 1, j, k, shade});
            j = k;
        }
        const bool same = i > 0 && out.size() - band == row.size() &&
                          std::equal(row.begin(), row.end(), out.begin() + static_cast<std::ptrdiff_t>(band),
                                     [](const CellBlock& a, const CellBlock& b) {
                                         return a.c0 == b.c0 && a.c1 == b.c1 && a.shade == b.shade;
                                     });
        if (same) {
            for (size_t k = band; k < out.size(); ++k) out[k].r1 = i + 1;
        } else {
            band = out.size();
            out.insert(out.end(), row.begin(), row.end());
        }
    }
    return out;
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

int Replay::pass_now() const {
    const auto& ev = r_->trace.events;
    if (ev.empty()) return r_->pass == sim::Pass::backward ? 1 : 0;
    return ev[pos_ > 0 ? pos_ - 1 : 0].pass;
}

void Replay::apply(const sim::Event& e) {
    if (score_visit(r_->algo, e) || score_store(e)) {
        ScoreGrid& sg = scores_[e.pass == 1 ? 1 : 0];
        if (e.row_tile < sg.T_r && e.col_tile < sg.T_c) {
            const size_t c = sg.idx(sg.cell_row(e.row_tile), sg.cell_col(e.col_tile));
            if (score_store(e)) {
                ++sg.stored[c];
                ++sg.n_stored;
            } else {
                ++sg.visited[c];
                ++sg.n_visited;
                const int64_t n = r_->problem.seq;
                if (sim::tile_masked(r_->problem, e.row_tile * sg.B_r, std::min(n, (e.row_tile + 1) * sg.B_r),
                                     e.col_tile * sg.B_c, std::min(n, (e.col_tile + 1) * sg.B_c)))
                    ++sg.n_visited_masked;
                if (sg.cur_i >= 0) {
                    const int64_t i = e.row_tile, j = e.col_tile;
                    if (!(i > sg.cur_i || (i == sg.cur_i && j > sg.cur_j))) sg.row_major = false;
                    if (!(j > sg.cur_j || (j == sg.cur_j && i > sg.cur_i))) sg.col_major = false;
                }
                sg.cur_i = e.row_tile;
                sg.cur_j = e.col_tile;
                sg.cur_event = pos_ + 1;
            }
        }
    }
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
