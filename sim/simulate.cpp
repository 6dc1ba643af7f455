// sim/simulate.cpp — the tile loops of standard attention, FlashAttention-1 (the paper's
// Algorithm 1) and FlashAttention-2, each counting what it moves and, with numerics on, computing
// the output the way it tiles it.
//
// [SECTIONS]  names and parsing · block sizes and SRAM budget · the walker (counting) ·
//             standard · flash1 · flash2 · simulate()
#include "sim/simulate.hpp"

#include <Eigen/Core>
#include <algorithm>
#include <cmath>
#include <limits>
#include <sstream>

#include "sim/mask.hpp"

namespace sim {

// ---------------------------------------------------------------- [names and parsing]
std::string_view algo_name(Algo a) {
    switch (a) {
        case Algo::standard: return "standard";
        case Algo::flash1: return "flash1";
        case Algo::flash2: return "flash2";
    }
    return "?";
}

std::optional<Algo> parse_algo(std::string_view s) {
    if (s == "standard") return Algo::standard;
    if (s == "flash1") return Algo::flash1;
    if (s == "flash2") return Algo::flash2;
    return std::nullopt;
}

// ---------------------------------------------------------------- [block sizes and SRAM budget]
namespace {

constexpr int64_t kF32 = 4;  // accumulators, scores and statistics live in SRAM as float32

int64_t ceil_div(int64_t a, int64_t b) { return (a + b - 1) / b; }

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
        b = {{"Q_i (B_r x d, " + dt + ")", br * d * e},
             {"K_j (B_c x d, " + dt + ")", bc * d * e},
             {"V_j (B_c x d, " + dt + ")", bc * d * e},
             {"O_i accumulator (B_r x d, fp32)", br * d * kF32},
             {"S_ij / P_ij (B_r x B_c, fp32)", br * bc * kF32},
             {"m_i, l_i (2 x B_r, fp32)", 2 * br * kF32}};
        *total = 0;
        for (const auto& x : b) *total += x.bytes;
    }
    return b;
}

std::string describe_overflow(const std::vector<SramBuffer>& b, int64_t total, int64_t sram) {
    std::ostringstream o;
    for (size_t i = 0; i < b.size(); ++i) o << (i ? " + " : "") << b[i].name << " " << group(b[i].bytes) << " B";
    o << " = " << group(total) << " B needed, but the SRAM budget M is " << group(sram) << " B";
    return o.str();
}

}  // namespace

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
    int64_t total = 0;
    auto bufs = buffers_for(p, a, br, bc, &total);
    if (total > sram && br_in && bc_in)
        throw Error("tiles do not fit in SRAM: " + describe_overflow(bufs, total, sram) +
                    ". Use smaller --block-rows/--block-cols or a larger --sram.");
    // The paper's rule sizes Q_i, K_j, V_j, O_i to a quarter of M each and leaves out the score
    // tile and the float32 accumulator; when that overflows, halve the rule-chosen blocks until
    // everything fits, and say so.
    bool halved = false;
    while (total > sram) {
        const bool can_cols = !bc_in && bc > 1, can_rows = !br_in && br > 1;
        if (!can_cols && !can_rows)
            throw Error("tiles do not fit in SRAM: " + describe_overflow(bufs, total, sram) +
                        ". Use a larger --sram or smaller blocks.");
        if (can_cols && (bc >= br || !can_rows)) bc = ceil_div(bc, 2);
        else br = ceil_div(br, 2);
        halved = true;
        bufs = buffers_for(p, a, br, bc, &total);
    }
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

// ---------------------------------------------------------------- [the walker (counting)]
namespace {

using MatF = Eigen::Matrix<float, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
using VecF = Eigen::VectorXf;
using MapF = Eigen::Map<const MatF>;
constexpr float kNegInf = -std::numeric_limits<float>::infinity();

// Counts events for head 0 (the other heads walk identical loops and are multiplied in at the
// end); keeps the first `cap` events in the trace.
struct Walker {
    bool counting = true;
    int64_t cap = 0;
    Totals totals;
    Trace trace;
    int64_t steps = 0;   // steps begun so far
    int64_t step = 0;    // index of the current step
    int32_t phase = 0;
    int64_t peak = 0;

    [[gnu::always_inline]] void event(EventKind k, Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, int64_t bytes, Flops f) {
        if (!counting) return;
        if (k == EventKind::load) totals[t].read_bytes += bytes;
        else if (k == EventKind::store) totals[t].write_bytes += bytes;
        totals.flops += f;
        if (k == EventKind::rescale) totals.rescales += rows;
        ++trace.events_total;
        if (static_cast<int64_t>(trace.events.size()) < cap)
            trace.events.push_back({k, t, static_cast<int32_t>(rt), static_cast<int32_t>(ct), static_cast<int32_t>(rows),
                                    static_cast<int32_t>(cols), bytes, f, step, phase, 0});
        else
            trace.truncated = true;
    }
    void load(Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, int64_t bytes) {
        event(EventKind::load, t, rt, ct, rows, cols, bytes, {});
    }
    void store(Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, int64_t bytes) {
        event(EventKind::store, t, rt, ct, rows, cols, bytes, {});
    }
    void compute(Tensor t, int64_t rt, int64_t ct, int64_t rows, int64_t cols, Flops f) {
        event(EventKind::compute, t, rt, ct, rows, cols, 0, f);
    }
    void rescale(int64_t rt, int64_t rows, int64_t cols, Flops f) {
        event(EventKind::rescale, Tensor::O, rt, -1, rows, cols, 0, f);
    }
    void begin_step() {
        step = steps++;
        if (counting) ++totals.steps;
    }
    void in_sram(int64_t bytes) { peak = std::max(peak, bytes); }
};

struct Tiling {
    int64_t n, br, bc, tr, tc;
    int64_t r0(int64_t i) const { return i * br; }
    int64_t rows(int64_t i) const { return std::min(n, (i + 1) * br) - i * br; }
    int64_t c0(int64_t j) const { return j * bc; }
    int64_t cols(int64_t j) const { return std::min(n, (j + 1) * bc) - j * bc; }
};

// Per-head views of the inputs (numerics only).
struct HeadData {
    MapF Q, K, V;
    float* O;
};

void apply_mask(const Problem& p, MatF& s, int64_t r0, int64_t c0) {
    if (tile_unmasked(p, r0, r0 + s.rows(), c0, c0 + s.cols())) return;
    for (int64_t a = 0; a < s.rows(); ++a)
        for (int64_t b = 0; b < s.cols(); ++b)
            if (!key_visible(p, r0 + a, c0 + b)) s(a, b) = kNegInf;
}

std::vector<double> to_doubles(const float* x, int64_t n) { return std::vector<double>(x, x + n); }

// ---------------------------------------------------------------- [standard]
// Phase 0: S = scale * Q K^T, tiled (B_r x B_c output tiles; Q_i stays in SRAM across its row).
// Phase 1: P = softmax(S) row by row (several rows at once when they fit; two passes over S when
//          one row does not fit in SRAM). Phase 2: O = P V, tiled (O_i accumulates over j).
void run_standard(const Problem& p, const Tiling& t, int64_t sram, Walker& w, const HeadData* h) {
    const int64_t d = p.head_dim, e = p.elem_bytes(), n = p.seq;
    const float scale = static_cast<float>(p.softmax_scale());
    MatF S, P;
    if (h) {
        S.resize(n, n);
        P.resize(n, n);
    }
    w.phase = 0;
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        for (int64_t j = 0; j < t.tc; ++j) {
            const int64_t c0 = t.c0(j), c = t.cols(j);
            w.begin_step();
            if (j == 0) w.load(Tensor::Q, i, -1, r, d, r * d * e);
            w.load(Tensor::K, j, -1, c, d, c * d * e);
            w.compute(Tensor::S, i, j, r, c, {2 * r * c * d, 0, r * c});
            w.store(Tensor::S, i, j, r, c, r * c * e);
            w.in_sram(r * d * e + c * d * e + r * c * kF32);
            if (h) {
                MatF s = (h->Q.middleRows(r0, r) * h->K.middleRows(c0, c).transpose()) * scale;
                for (int64_t a = 0; a < s.size(); ++a) s.data()[a] = round_to(p.dtype, s.data()[a]);
                S.block(r0, c0, r, c) = s;
            }
        }
    }
    w.phase = 1;
    const int64_t row_bytes = n * kF32;
    if (row_bytes <= sram) {
        const int64_t group_rows = std::min(n, sram / row_bytes);
        for (int64_t g = 0; g * group_rows < n; ++g) {
            const int64_t r0 = g * group_rows, r = std::min(n, r0 + group_rows) - r0;
            w.begin_step();
            w.load(Tensor::S, g, -1, r, n, r * n * e);
            w.compute(Tensor::P, g, -1, r, n, {0, r * n, 3 * r * n});
            w.store(Tensor::P, g, -1, r, n, r * n * e);
            w.in_sram(r * row_bytes);
        }
    } else {  // a row does not fit: pass 1 streams it for max and sum, pass 2 re-reads and writes P
        const int64_t chunk = sram / kF32;
        for (int64_t row = 0; row < n; ++row)
            for (int pass = 0; pass < 2; ++pass)
                for (int64_t k0 = 0, q = 0; k0 < n; k0 += chunk, ++q) {
                    const int64_t c = std::min(n, k0 + chunk) - k0;
                    w.begin_step();
                    w.load(Tensor::S, row, q, 1, c, c * e);
                    if (pass == 0) {
                        w.compute(Tensor::l, row, q, 1, c, {0, c, 2 * c});
                    } else {
                        w.compute(Tensor::P, row, q, 1, c, {0, c, 2 * c});
                        w.store(Tensor::P, row, q, 1, c, c * e);
                    }
                    w.in_sram(c * kF32);
                }
    }
    if (h) {
        for (int64_t row = 0; row < n; ++row) {
            for (int64_t k = 0; k < n; ++k)
                if (!key_visible(p, row, k)) S(row, k) = kNegInf;
            const float m = S.row(row).maxCoeff();
            if (m == kNegInf) {
                P.row(row).setZero();
                continue;
            }
            P.row(row) = (S.row(row).array() - m).exp().matrix();
            const float l = P.row(row).sum();
            for (int64_t k = 0; k < n; ++k) P(row, k) = round_to(p.dtype, P(row, k) / l);
        }
    }
    w.phase = 2;
    for (int64_t i = 0; i < t.tr; ++i) {
        const int64_t r0 = t.r0(i), r = t.rows(i);
        MatF acc;
        if (h) acc = MatF::Zero(r, d);
        for (int64_t j = 0; j < t.tc; ++j) {
            const int64_t c0 = t.c0(j), c = t.cols(j);
            w.begin_step();
            w.load(Tensor::P, i, j, r, c, r * c * e);
            w.load(Tensor::V, j, -1, c, d, c * d * e);
            w.compute(Tensor::O, i, j, r, d, {2 * r * c * d, 0, 0});
            w.in_sram(r * c * e + c * d * e + r * d * kF32);
            if (h) acc.noalias() += P.block(r0, c0, r, c) * h->V.middleRows(c0, c);
        }
        w.store(Tensor::O, i, -1, r, d, r * d * e);
        if (h)
            for (int64_t a = 0; a < r * d; ++a) h->O[r0 * d + a] = round_to(p.dtype, acc.data()[a]);
    }
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
void run_flash1(const Problem& p, const Tiling& t, Walker& w, const HeadData* h, SoftmaxRecord* rec) {
    const int64_t d = p.head_dim, e = p.elem_bytes(), n = p.seq;
    const float scale = static_cast<float>(p.softmax_scale());
    MatF O_hbm;       // (N, d) float32 in HBM
    VecF l_hbm, m_hbm;  // (N) float32 in HBM
    if (h) {
        O_hbm = MatF::Zero(n, d);
        l_hbm = VecF::Zero(n);
        m_hbm = VecF::Constant(n, kNegInf);
    }
    for (int64_t i = 0; i < t.tr; ++i) {  // line 2: initialise O, l, m in HBM
        const int64_t r = t.rows(i);
        w.store(Tensor::O, i, -1, r, d, r * d * kF32);
        w.store(Tensor::l, i, -1, r, 1, r * kF32);
        w.store(Tensor::m, i, -1, r, 1, r * kF32);
    }
    for (int64_t j = 0; j < t.tc; ++j) {
        const int64_t c0 = t.c0(j), c = t.cols(j);
        bool kv_loaded = false;
        for (int64_t i = 0; i < t.tr; ++i) {
            const int64_t r0 = t.r0(i), r = t.rows(i);
            if (tile_masked(p, r0, r0 + r, c0, c0 + c)) continue;
            w.begin_step();
            if (!kv_loaded) {
                w.load(Tensor::K, j, -1, c, d, c * d * e);
                w.load(Tensor::V, j, -1, c, d, c * d * e);
                kv_loaded = true;
            }
            w.load(Tensor::Q, i, -1, r, d, r * d * e);
            w.load(Tensor::O, i, -1, r, d, r * d * kF32);
            w.load(Tensor::l, i, -1, r, 1, r * kF32);
            w.load(Tensor::m, i, -1, r, 1, r * kF32);
            w.compute(Tensor::S, i, j, r, c, {2 * r * c * d, 0, r * c});
            w.compute(Tensor::P, i, j, r, c, {0, r * c + 2 * r, 2 * r * c + 6 * r});
            w.rescale(i, r, d, {0, 0, 3 * r * d});
            w.compute(Tensor::O, i, j, r, d, {2 * r * c * d, 0, 0});
            w.store(Tensor::O, i, -1, r, d, r * d * kF32);
            w.store(Tensor::l, i, -1, r, 1, r * kF32);
            w.store(Tensor::m, i, -1, r, 1, r * kF32);
            w.in_sram(r * d * e + 2 * c * d * e + r * d * kF32 + r * c * kF32 + 2 * r * kF32);
            if (!h) continue;
            MatF S = (h->Q.middleRows(r0, r) * h->K.middleRows(c0, c).transpose()) * scale;  // (B_r, B_c)
            apply_mask(p, S, r0, c0);
            MatF Pt(r, c);
            VecF mt(r), lt(r), m_new(r), l_new(r), a_old(r), a_new(r);
            for (int64_t a = 0; a < r; ++a) {
                mt(a) = S.row(a).maxCoeff();
                const float ms = mt(a) == kNegInf ? 0.0f : mt(a);
                Pt.row(a) = (S.row(a).array() - ms).exp().matrix();
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
    }
    if (h) {
        for (int64_t a = 0; a < n * d; ++a) h->O[a] = O_hbm.data()[a];  // O stays float32 in HBM
        if (rec) rec->output = to_doubles(O_hbm.row(rec->row).data(), d);
    }
}

// ---------------------------------------------------------------- [flash2]
// FlashAttention-2 order: the outer loop runs over Q blocks i (each independent: one thread block
// each on a GPU), the inner streams K_j, V_j. m_i, l_i and the unnormalised accumulator O_i stay in
// SRAM; each step rescales O_i by e^(m_old - m_new); one division by l_i at the end; O_i and the
// log-sum-exp LSE_i = m_i + log l_i are written once.
void run_flash2(const Problem& p, const Tiling& t, Walker& w, const HeadData* h, SoftmaxRecord* rec) {
    const int64_t d = p.head_dim, e = p.elem_bytes();
    const float scale = static_cast<float>(p.softmax_scale());
    for (int64_t i = 0; i < t.tr; ++i) {
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
                w.load(Tensor::Q, i, -1, r, d, r * d * e);
                q_loaded = true;
            }
            w.load(Tensor::K, j, -1, c, d, c * d * e);
            w.load(Tensor::V, j, -1, c, d, c * d * e);
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
                P.row(a) = (S.row(a).array() - ms).exp().matrix();
                l(a) = alpha(a) * l(a) + P.row(a).sum();
                m(a) = m_new;
            }
            acc = alpha.asDiagonal() * acc;
            Eigen::RowVectorXf rescaled;
            if (rec_local >= 0) rescaled = acc.row(rec_local);
            acc.noalias() += P * h->V.middleRows(c0, c);
            if (rec_local >= 0) {
                Eigen::RowVectorXf sc = S.row(rec_local), after = acc.row(rec_local);
                record_block(*rec, j, c0, sc.data(), c, m_before, m(rec_local), l_before, l(rec_local),
                             alpha(rec_local), before.data(), rescaled.data(), after.data(), d);
            }
        }
        w.compute(Tensor::O, i, -1, r, d, {0, r, r * d});  // the one final rescale: O_i / l_i, LSE_i
        w.store(Tensor::O, i, -1, r, d, r * d * e);
        w.store(Tensor::LSE, i, -1, r, 1, r * kF32);
        if (h) {
            for (int64_t a = 0; a < r; ++a) {
                const float inv = l(a) > 0 ? 1.0f / l(a) : 0.0f;
                for (int64_t k = 0; k < d; ++k) h->O[(r0 + a) * d + k] = round_to(p.dtype, acc(a, k) * inv);
                if (a == rec_local) {
                    rec->output.resize(static_cast<size_t>(d));
                    for (int64_t k = 0; k < d; ++k) rec->output[static_cast<size_t>(k)] = acc(a, k) * inv;
                }
            }
        }
    }
}

}  // namespace

// ---------------------------------------------------------------- [simulate()]
namespace {
Result simulate_impl(const Problem& p, const Machine& m, const Config& c, const Inputs* given) {
    p.validate();
    const int64_t sram = c.sram_bytes > 0 ? c.sram_bytes : m.sram_bytes;
    if (c.sram_bytes < 0) throw Error("--sram must be a positive number of bytes");
    const BlockChoice bc = choose_blocks(p, c.algo, sram, c.block_rows, c.block_cols);

    Result res;
    res.problem = p;
    res.machine = m;
    res.algo = c.algo;
    res.block_rows = bc.block_rows;
    res.block_cols = bc.block_cols;
    res.sram_bytes = sram;
    res.sram_buffers = bc.buffers;
    res.block_note = bc.note;
    const Tiling t{p.seq, bc.block_rows, bc.block_cols, ceil_div(p.seq, bc.block_rows), ceil_div(p.seq, bc.block_cols)};
    res.tiles_rows = t.tr;
    res.tiles_cols = t.tc;

    const double work = static_cast<double>(p.heads_total()) * p.seq * p.seq * p.head_dim;
    res.numerics = c.numerics == Numerics::on ||
                   (c.numerics == Numerics::automatic && (given || work <= static_cast<double>(c.numerics_auto_limit)));
    if (given && c.numerics == Numerics::off) res.numerics = false;
    if (res.numerics && c.algo == Algo::standard && p.seq > 32768)
        throw Error("numerics for standard attention at N = " + std::to_string(p.seq) +
                    " would hold an N x N matrix per head in memory; run without numerics or with N <= 32768");

    Walker w;
    w.cap = c.event_cap;
    if (!res.numerics) {
        switch (c.algo) {
            case Algo::standard: run_standard(p, t, sram, w, nullptr); break;
            case Algo::flash1: run_flash1(p, t, w, nullptr, nullptr); break;
            case Algo::flash2: run_flash2(p, t, w, nullptr, nullptr); break;
        }
    } else {
        Inputs generated;
        if (!given) generated = generate_inputs(p);
        const Inputs& in = given ? *given : generated;
        auto check = [&](const TensorF& x, const char* name) {
            if (x.batch != p.batch || x.heads != p.heads || x.rows != p.seq || x.cols != p.head_dim)
                throw Error(std::string("input ") + name + " has shape (" + std::to_string(x.batch) + ", " +
                            std::to_string(x.heads) + ", " + std::to_string(x.rows) + ", " + std::to_string(x.cols) +
                            ") but the problem is (B, H, N, d) = (" + std::to_string(p.batch) + ", " +
                            std::to_string(p.heads) + ", " + std::to_string(p.seq) + ", " +
                            std::to_string(p.head_dim) + ")");
        };
        check(in.Q, "Q");
        check(in.K, "K");
        check(in.V, "V");
        TensorF out(p.batch, p.heads, p.seq, p.head_dim);
        SoftmaxRecord rec;
        const bool want_rec = c.algo != Algo::standard && c.record_row >= 0 && c.record_row < p.seq;
        rec.row = c.record_row;
        for (int64_t bh = 0; bh < p.heads_total(); ++bh) {
            w.counting = bh == 0;
            HeadData hd{MapF(in.Q.head(bh), p.seq, p.head_dim), MapF(in.K.head(bh), p.seq, p.head_dim),
                        MapF(in.V.head(bh), p.seq, p.head_dim), out.head(bh)};
            SoftmaxRecord* r = (want_rec && bh == 0) ? &rec : nullptr;
            switch (c.algo) {
                case Algo::standard: run_standard(p, t, sram, w, &hd); break;
                case Algo::flash1: run_flash1(p, t, w, &hd, r); break;
                case Algo::flash2: run_flash2(p, t, w, &hd, r); break;
            }
        }
        res.output = std::move(out);
        if (want_rec) res.record = std::move(rec);
    }
    res.trace = std::move(w.trace);
    res.trace.steps_per_head = w.totals.steps;
    res.totals = w.totals.scaled(p.heads_total());
    res.sram_peak_bytes = w.peak;
    return res;
}
}  // namespace

Result simulate(const Problem& p, const Machine& m, const Config& c) { return simulate_impl(p, m, c, nullptr); }
Result simulate(const Problem& p, const Machine& m, const Config& c, const Inputs& inputs) {
    return simulate_impl(p, m, c, &inputs);
}

}  // namespace sim
