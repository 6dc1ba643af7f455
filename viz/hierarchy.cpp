// viz/hierarchy.cpp — HBM, L2 and SRAM drawn as places; tensors as grids of tiles; the step's loads
// and stores animated between them. Shared by the memory view and the side-by-side view.
// [SECTIONS]  replay cache · captions and verbs · draw_hierarchy(): HBM · L2 · SRAM (slots, the tile
// in flight, this step's events, the caption)
#include <algorithm>
#include <array>
#include <cmath>
#include <string>
#include <vector>

#include "viz/hierarchy_layout.hpp"
#include "viz/panels.hpp"
#include "viz/text_wrap.hpp"
#include "viz/ui.hpp"

namespace viz {

using sim::EventKind;
using sim::Tensor;

Replay& ReplayCache::get(const RunSet& set, sim::Algo a) {
    if (rs != &set) {
        for (auto& r : replays) r.reset();
        rs = &set;
    }
    auto& slot = replays[static_cast<size_t>(algo_index(a))];
    if (!slot) slot = std::make_unique<Replay>(set.result(a));
    return *slot;
}

size_t events_done(const Timeline& tl, Cursor c) {
    if (tl.steps_kept == 0) return 0;
    const int64_t s = std::clamp<int64_t>(c.step, 0, tl.steps_kept - 1);
    const size_t first = tl.step_first[static_cast<size_t>(s)], last = tl.step_first[static_cast<size_t>(s) + 1];
    const double k = static_cast<double>(last - first) * std::clamp(c.frac, 0.0, 1.0);
    return first + static_cast<size_t>(std::floor(k + 1e-9));
}

namespace {

bool square(Tensor t) { return t == Tensor::S || t == Tensor::P || t == Tensor::dP || t == Tensor::dS; }

std::string tile_name(const sim::Event& e) {
    std::string s(sim::tensor_name(e.tensor));
    // dK_j, dV_j accumulate over query blocks i: the compute's column index is i, not a tile of dK
    const bool acc = e.tensor == Tensor::dK || e.tensor == Tensor::dV || e.tensor == Tensor::dQ;
    if (e.row_tile >= 0 && e.col_tile >= 0 && !acc)
        return s + "_" + std::to_string(e.row_tile) + "," + std::to_string(e.col_tile);
    if (e.row_tile >= 0) return s + "_" + std::to_string(e.row_tile);
    return s;
}

float ease(float u) { return u * u * (3.0f - 2.0f * u); }

ImVec2 lerp(ImVec2 a, ImVec2 b, float t) { return ImVec2(a.x + (b.x - a.x) * t, a.y + (b.y - a.y) * t); }

std::string phase_caption(const sim::Result& r, int32_t phase, uint8_t pass) {
    if (pass == 1) {  // the backward's kernels, named by the simulator
        int first_bwd = 0, n_bwd = 0;
        for (size_t k = 0; k < r.kernels.size(); ++k)
            if (r.kernels[k].pass == 1) {
                if (n_bwd == 0) first_bwd = static_cast<int>(k);
                ++n_bwd;
            }
        if (phase >= 0 && phase < static_cast<int32_t>(r.kernels.size()))
            return "backward, kernel " + std::to_string(phase - first_bwd + 1) + " of " + std::to_string(n_bwd) + ": " +
                   r.kernels[static_cast<size_t>(phase)].name;
        return "backward";
    }
    if (r.algo == sim::Algo::standard) {
        switch (phase) {
            case 0:
                return "phase 1 of 3: S = QK^T, written to HBM";
            case 1:
                return "phase 2 of 3: P = softmax(S), read S, write P";
            default:
                return "phase 3 of 3: O = PV, read P";
        }
    }
    return r.algo == sim::Algo::flash1 ? "Algorithm 1: K_j, V_j outer; Q_i, O_i, l, m inner"
                                       : "FA2: Q_i stays; K_j, V_j stream past";
}

std::vector<Tensor> inputs_of(const sim::Event& e) {
    if (e.kind == EventKind::rescale) return {Tensor::O};
    switch (e.tensor) {
        case Tensor::S:
            return {Tensor::Q, Tensor::K};
        case Tensor::P:
            return {Tensor::S, Tensor::LSE, Tensor::l, Tensor::m};
        case Tensor::O:
            return {Tensor::P, Tensor::V};
        case Tensor::l:
            return {Tensor::S};
        case Tensor::dV:
            return {Tensor::P, Tensor::dO};
        case Tensor::dP:
            return {Tensor::dO, Tensor::V};
        case Tensor::D:
            return {Tensor::dO, Tensor::O, Tensor::P, Tensor::dP};
        case Tensor::dS:
            return {Tensor::P, Tensor::dP, Tensor::D};
        case Tensor::dQ:
            return {Tensor::dS, Tensor::K};
        case Tensor::dK:
            return {Tensor::dS, Tensor::Q};
        default:
            return {};
    }
}

std::string verb(const sim::Event& e) {
    const std::string t = tile_name(e);
    switch (e.kind) {
        case EventKind::load:
            return "load " + t + " (" + ui::bytes(static_cast<double>(e.bytes)) + "): HBM -> SRAM";
        case EventKind::store:
            return "store " + t + " (" + ui::bytes(static_cast<double>(e.bytes)) + "): SRAM -> HBM";
        case EventKind::rescale:
            return "rescale O by e^(m_old - m_new)";
        case EventKind::compute:
            switch (e.tensor) {
                case Tensor::S:
                    return "compute " + t + " = Q K^T tile";
                case Tensor::P:
                    return "compute " + t + " = exp(S - m)";
                case Tensor::O:
                    return e.col_tile < 0 ? "finish O: divide by l" : "compute O += P V";
                case Tensor::l:
                    return "row max and sum";
                case Tensor::dV:
                    return e.col_tile < 0 ? "finish " + t : "compute " + t + " += P^T dO";
                case Tensor::dP:
                    return "compute " + t + " = dO V^T";
                case Tensor::D:
                    return "compute " + t + " = rowsum(dO o O)";
                case Tensor::dS:
                    return "compute " + t + " = P o (dP - D)";
                case Tensor::dQ:
                    return e.col_tile < 0 ? "finish " + t + ": times the softmax scale" : "compute " + t + " += dS K";
                case Tensor::dK:
                    return e.col_tile < 0 ? "finish " + t + ": times the softmax scale" : "compute " + t + " += dS^T Q";
                default:
                    return "compute " + t;
            }
    }
    return {};
}

// What the sections of one drawing share: the inputs, where the cursor is, and what each section
// places for the ones after it (tensors in HBM, the boxes' edges, the slots in SRAM).
struct Frame {
    ImDrawList* dl;
    ImVec2 a, b;
    const RunSet& rs;
    const sim::Result& r;
    const Timeline& tl;
    const Layout& L;
    Replay& rp;
    Cursor c;
    bool compact;
    const ViewState& v;
    float fs = 0, W = 0, H = 0;
    const std::vector<sim::Event>& ev;
    float hbm_max = 0;  // HBM's height at most: L2 and SRAM keep the least they need below it
    int64_t step = 0;
    size_t first = 0, last = 0, done = 0;
    double kpos = 0;
    // placed by the sections
    std::array<ImVec2, sim::kTensorCount> t0{}, t1{};  // tensors in HBM
    ImVec2 h1{}, l1{}, s0{}, s1{};                     // HBM's and L2's bottom right; SRAM's box
    int32_t phase = 0;
    std::array<ImVec2, sim::kTensorCount> q0{}, q1{};  // slots in SRAM
    std::array<bool, sim::kTensorCount> has_slot{};
    float slots_bottom = 0;
    size_t inflight = 0;
    bool animating = false;
    std::vector<std::string> caption{};  // the memory view's caption lines at the SRAM box's foot
};

// The names the sections below use, bound to the frame's (not every section uses each).
#define FLASHSIM_FRAME_NAMES                                                     \
    [[maybe_unused]] ImDrawList* dl = f.dl;                                      \
    [[maybe_unused]] const ImVec2 a = f.a, b = f.b;                              \
    [[maybe_unused]] const sim::Result& r = f.r;                                 \
    [[maybe_unused]] const Timeline& tl = f.tl;                                  \
    [[maybe_unused]] const Layout& L = f.L;                                      \
    [[maybe_unused]] Replay& rp = f.rp;                                          \
    [[maybe_unused]] const Cursor c = f.c;                                       \
    [[maybe_unused]] const bool compact = f.compact;                             \
    [[maybe_unused]] const ViewState& v = f.v;                                   \
    [[maybe_unused]] const float fs = f.fs, W = f.W, H = f.H;                    \
    [[maybe_unused]] const auto& ev = f.ev;                                      \
    [[maybe_unused]] const int64_t step = f.step;                                \
    [[maybe_unused]] const size_t first = f.first, last = f.last, done = f.done; \
    [[maybe_unused]] const double kpos = f.kpos;

// A tile's rectangle in its tensor in HBM.
void hbm_rect(const Frame& f, const sim::Event& e, ImVec2* p0, ImVec2* p1) {
    const size_t k = static_cast<size_t>(e.tensor);
    const ElemRect er = f.L.rect(e);
    const float R = static_cast<float>(std::max<int64_t>(1, f.L.rows[k])),
                C = static_cast<float>(std::max<int64_t>(1, f.L.cols[k]));
    const float w = f.t1[k].x - f.t0[k].x;
    const float th = f.t1[k].y - f.t0[k].y;
    *p0 = ImVec2(f.t0[k].x + w * er.c0 / C, f.t0[k].y + th * er.r0 / R);
    *p1 = ImVec2(f.t0[k].x + w * er.c1 / C, std::max(f.t0[k].y + th * er.r1 / R, f.t0[k].y + th * er.r0 / R + 2));
}

void draw_hbm(Frame& f) {
    FLASHSIM_FRAME_NAMES
    const int64_t highlight_row = v.highlight_row;
    // ---------------------------------------------------------------- HBM
    std::vector<Tensor> shown;
    for (Tensor t : {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::dO, Tensor::dQ, Tensor::dK, Tensor::dV,
                     Tensor::S, Tensor::P, Tensor::dP, Tensor::dS, Tensor::m, Tensor::l, Tensor::LSE, Tensor::D})
        if (L.shown(t)) shown.push_back(t);
    const float gap = fs * (compact ? 0.5f : 0.9f);
    int n_nd = 0, n_nn = 0, n_st = 0;
    for (Tensor t : shown) {
        if (square(t))
            ++n_nn;
        else if (L.cols[static_cast<size_t>(t)] == 1)
            ++n_st;
        else
            ++n_nd;
    }
    // never taller than L2 and SRAM leave (their least heights), never shorter than its own least
    const float hbm_cap = std::max(f.hbm_max, hbm_least_height(n_nn > 0, fs));
    float hbm_h = std::min(hbm_cap, H * (n_nn ? 0.55f : (compact ? 0.5f : 0.42f)));
    const float head = fs * 2.6f, foot = fs * 0.5f;
    float ht = hbm_h - head - foot;
    float wc = compact ? fs * 2.2f : fs * 3.2f;        // N x d column width
    const float ws = compact ? fs * 0.9f : fs * 1.2f;  // statistics column width
    const float avail = W - 16 - gap * static_cast<float>(shown.size() - 1) - wc * n_nd - ws * n_st;
    const float side = n_nn ? std::min(ht, avail / n_nn) : 0;
    // compact (three columns side by side), or many tensors (the backward's): the N x N matrices go
    // on a second row, large enough to see
    const bool two_rows = n_nn > 0 && (compact || n_nd + n_nn > 6 || side < fs * 5.0f);
    float row1 = compact ? fs * 4.0f : std::max(fs * 4.0f, H * 0.16f);
    const float label_h = fs * 1.3f;
    float side2 = 0;
    if (two_rows) {
        // the N x d columns share the first row with the statistics
        wc = std::min(wc, std::max(fs * 1.0f, (W - 16 - gap * static_cast<float>(n_nd + n_st) - ws * n_st) /
                                                  static_cast<float>(std::max(1, n_nd))));
        side2 = std::max(fs * 2.0f, std::min((W - 16 - gap * static_cast<float>(n_nn - 1)) / static_cast<float>(n_nn),
                                             hbm_h - head - row1 - label_h - foot));
        // still too tall for the room SRAM leaves: the N x d columns give way too (to two lines)
        row1 = std::max(fs * 2.0f, std::min(row1, hbm_cap - head - label_h - side2 - foot));
        ht = row1;
        hbm_h = head + row1 + label_h + side2 + foot;
    } else if (n_nn && side < ht) {  // square N x N matrices set the height; SRAM gets the rest
        ht = side;
        hbm_h = head + ht + foot;
    }
    if (!n_nn)  // no N x N matrix: spread the columns a little wider
        wc = std::min(fs * (compact ? 3.0f : 5.0f),
                      (W - 16 - gap * static_cast<float>(shown.size())) / std::max(1, n_nd + n_st));
    const ImVec2 h0 = a, h1(b.x, a.y + hbm_h);
    const ImU32 hbm_fill = IM_COL32(34, 38, 52, 255);  // opaque: the tensors' grid lines are drawn in it
    dl->AddRectFilled(h0, h1, hbm_fill, 6.0f);
    dl->AddRect(h0, h1, IM_COL32(110, 120, 150, 255), 6.0f);
    {
        std::string t = compact ? "HBM"
                                : "HBM  (" + ui::bytes(r.machine.hbm_bytes) + ", " +
                                      ui::fixed(r.machine.hbm_bandwidth / 1e12, 2) + " TB/s)";
        dl->AddText(ImVec2(h0.x + 8, h0.y + 4), ui::text_col, t.c_str());
    }
    const float top = h0.y + head;
    auto& t0 = f.t0;
    auto& t1 = f.t1;
    float x = h0.x + 8, x2 = h0.x + 8;
    float label_end = -1e9f, label_y = -1e9f;  // the last label drawn on this row of tensors
    for (Tensor t : shown) {
        const size_t k = static_cast<size_t>(t);
        const bool nn = square(t);
        const float w = nn ? (two_rows ? side2 : side) : (L.cols[k] == 1 ? ws : wc);
        if (two_rows && nn) {
            t0[k] = ImVec2(x2, top + row1 + label_h);
            t1[k] = ImVec2(x2 + w, top + row1 + label_h + side2);
            x2 += w + gap;
        } else {
            t0[k] = ImVec2(x, top);
            t1[k] = ImVec2(x + w, top + ht);
            x += w + gap;
        }
        const float th = t1[k].y - t0[k].y;
        const Grid& g = rp.grid(t);
        const ImU32 col = ui::tensor_colour(t);
        const float cw = w / static_cast<float>(std::max(1, g.cols)), ch = th / static_cast<float>(std::max(1, g.rows));
        // One rectangle a block of cells of one shade, not one a cell (llvmpipe's time went to the
        // backward's 32,768 cell triangles a frame). Cells wider and taller than 3 px are parted by
        // 1 px lines in the HBM box's colour, drawn over the blocks where the gaps between cells
        // drawn one by one were: the same pixels.
        const ImU32 shade_col[3] = {ui::cell_empty, ui::mix(ui::cell_empty, col, 0.45f), col};
        for (const CellBlock& cb : shade_blocks(g))
            dl->AddRectFilled(ImVec2(t0[k].x + cw * cb.c0, t0[k].y + ch * cb.r0),
                              ImVec2(t0[k].x + cw * cb.c1, t0[k].y + ch * cb.r1), shade_col[cb.shade]);
        if (cw > 3 && ch > 3) {
            const float gx1 = t0[k].x + cw * g.cols, gy1 = t0[k].y + ch * g.rows;
            for (int j = 1; j <= g.cols; ++j) {
                const float xj = t0[k].x + cw * j;
                dl->AddRectFilled(ImVec2(xj - 1, t0[k].y), ImVec2(xj, gy1), hbm_fill);
            }
            for (int i = 1; i <= g.rows; ++i) {
                const float yi = t0[k].y + ch * i;
                dl->AddRectFilled(ImVec2(t0[k].x, yi - 1), ImVec2(gx1, yi), hbm_fill);
            }
        }
        // inputs Q, K, V start in HBM: drawn filled with a light tint so "already there" reads clearly
        dl->AddRect(t0[k], t1[k], ui::with_alpha(col, 200), 0, 0, 1.5f);
        std::string label(sim::tensor_name(t));
        if (!compact && L.cols[k] != 1 && (nn || wc > fs * 4.5f)) label += nn ? "  N x N" : "  N x d";
        // narrow neighbours (LSE, D): a label starts after the one before it ends
        if (t0[k].y != label_y) label_end = -1e9f, label_y = t0[k].y;
        const float lx = std::max(t0[k].x, label_end + fs * 0.3f), lw = ImGui::CalcTextSize(label.c_str()).x;
        if (lx + lw > b.x) continue;  // pushed past the box's edge (narrow panes at 2x zoom): its colour names it
        dl->AddText(ImVec2(lx, t0[k].y - fs * 1.25f), col, label.c_str());
        label_end = lx + lw;
    }
    if (highlight_row >= 0 && highlight_row < L.n) {
        for (Tensor t : shown) {
            const size_t k = static_cast<size_t>(t);
            const float y =
                t0[k].y + (t1[k].y - t0[k].y) * (static_cast<float>(highlight_row) + 0.5f) / static_cast<float>(L.n);
            dl->AddLine(ImVec2(t0[k].x - 2, y), ImVec2(t1[k].x + 2, y), IM_COL32(255, 255, 255, 220), 2.0f);
        }
    }

    // a lesson's highlighted tile: S_ij where S is in HBM, and the Q_i and K_j tiles it is made from
    if (v.highlight_tile_row >= 0 && v.highlight_tile_col >= 0) {
        const int64_t i = v.highlight_tile_row, j = v.highlight_tile_col;
        const auto mark = [&](Tensor t, int64_t r0, int64_t r1, int64_t c0, int64_t c1) {
            const size_t k = static_cast<size_t>(t);
            if (!L.shown(t) || r0 >= L.rows[k]) return;
            const float R = static_cast<float>(L.rows[k]), C = static_cast<float>(std::max<int64_t>(1, L.cols[k]));
            const float w = t1[k].x - t0[k].x;
            const float th = t1[k].y - t0[k].y;
            const ImVec2 q0(t0[k].x + w * static_cast<float>(c0) / C, t0[k].y + th * static_cast<float>(r0) / R);
            const ImVec2 q1(t0[k].x + w * static_cast<float>(std::min(c1, L.cols[k])) / C,
                            std::max(q0.y + 3, t0[k].y + th * static_cast<float>(std::min(r1, L.rows[k])) / R));
            dl->AddRect(ImVec2(q0.x - 2, q0.y - 2), ImVec2(q1.x + 2, q1.y + 2), ui::okabe::yellow, 0, 0, 2.5f);
        };
        const int64_t br = r.block_rows, bc = r.block_cols;
        mark(Tensor::Q, i * br, (i + 1) * br, 0, L.d);
        mark(Tensor::K, j * bc, (j + 1) * bc, 0, L.d);
        mark(Tensor::S, i * br, (i + 1) * br, j * bc, (j + 1) * bc);
    }
    f.h1 = h1;
}

void draw_l2(Frame& f) {
    FLASHSIM_FRAME_NAMES
    const ImVec2 h1 = f.h1;
    // ---------------------------------------------------------------- L2
    const float l2_h = fs * (compact ? 1.6f : 1.9f);
    const ImVec2 l0(a.x, h1.y + fs * 0.5f), l1(b.x, h1.y + fs * 0.5f + l2_h);
    dl->AddRectFilled(l0, l1, IM_COL32(44, 44, 56, 255), 4.0f);
    dl->AddRect(l0, l1, IM_COL32(120, 120, 140, 200), 4.0f);
    {
        std::string t;
        if (r.l2.simulated) {  // the simulator's LRU model of the L2 (whole run)
            const std::string hit = ui::fixed(100.0 * r.l2.hit_rate, 0) + "%";
            // the walk replays the capacity a re-read finds (measured on the H200), not always the datasheet's
            const double walk = static_cast<double>(r.l2.capacity_bytes);
            const std::string size = walk > 0 && walk < r.machine.l2_bytes
                                         ? ui::bytes(walk) + " of " + ui::bytes(r.machine.l2_bytes)
                                         : ui::bytes(r.machine.l2_bytes);
            t = compact ? "L2 " + size + ": " + hit + " hits"
                        : "L2 (" + size + ", LRU model): " + hit + " of loads hit; HBM after L2 " +
                              ui::bytes(static_cast<double>(r.l2.hbm_total().total()));
        } else {
            t = compact ? "L2 " + ui::bytes(r.machine.l2_bytes) + ": no model run"
                        : "L2 cache (" + ui::bytes(r.machine.l2_bytes) + "): no model run" +
                              (r.l2.note.empty() ? std::string() : " (" + in_screen_words(r.l2.note) + ")");
        }
        // a line wider than the box: its reason (in brackets) gives way to "hover: why", shown on hover
        const bool fits = ImGui::CalcTextSize(t.c_str()).x + 8 <= l1.x - l0.x;
        std::string line = t;
        const std::string lead = "no model run";
        if (const size_t cut = t.find(lead + " ("); !fits && cut != std::string::npos)
            line = t.substr(0, cut + lead.size()) + " (hover: why)";
        // the line in fewer words where the box is narrow (2x zoom), never cut at its edge
        if (!fits && !r.l2.simulated && ImGui::CalcTextSize(line.c_str()).x + 8 > l1.x - l0.x)
            for (const std::string& shorter : {"L2 " + ui::bytes(r.machine.l2_bytes) + ": no model run",
                                               std::string("L2: no model run"), std::string("L2: no model")})
                if (line = shorter; ImGui::CalcTextSize(line.c_str()).x + 8 <= l1.x - l0.x) break;
        if (!fits && r.l2.simulated) {
            const std::string hit = ui::fixed(100.0 * r.l2.hit_rate, 0) + "% hits",
                              after = ui::bytes(static_cast<double>(r.l2.hbm_total().total()));
            for (const std::string& shorter :
                 {"L2 model: " + hit + "; HBM after L2 " + after, "L2: " + hit + ", " + after, "L2: " + hit})
                if (line = shorter; ImGui::CalcTextSize(line.c_str()).x + 8 <= l1.x - l0.x) break;
        }
        dl->PushClipRect(l0, l1, true);
        dl->AddText(ImVec2(l0.x + 8, l0.y + (l2_h - fs) * 0.5f), ui::text_dim, line.c_str());
        dl->PopClipRect();
        const ImVec2 mp = ImGui::GetIO().MousePos;  // clipped: the whole line on hover
        if (!fits && mp.x >= l0.x && mp.x < l1.x && mp.y >= l0.y && mp.y < l1.y && ImGui::IsWindowHovered()) {
            ImGui::BeginTooltip();  // wrapped: at 2x zoom the whole line ran off the screen
            ImGui::PushTextWrapPos(ImGui::GetFontSize() * 35.0f);
            ImGui::TextUnformatted(t.c_str());
            ImGui::PopTextWrapPos();
            ImGui::EndTooltip();
        }
    }
    f.l1 = l1;
}

void draw_sram_bar(Frame& f) {
    FLASHSIM_FRAME_NAMES
    const ImVec2 l1 = f.l1;
    // ---------------------------------------------------------------- SRAM
    const ImVec2 s0(a.x, l1.y + fs * 0.5f), s1 = b;
    dl->AddRectFilled(s0, s1, IM_COL32(30, 46, 42, 255), 6.0f);
    dl->AddRect(s0, s1, IM_COL32(100, 150, 130, 255), 6.0f);
    {
        const std::string m = ui::bytes(static_cast<double>(r.sram_bytes));
        std::string t = compact ? "SRAM  M = " + m : "SRAM, one thread block  (budget M = " + m + ")";
        if (ImGui::CalcTextSize(t.c_str()).x + 16 > s1.x - s0.x) t = "SRAM  M = " + m;  // a narrow box (2x zoom)
        dl->AddText(ImVec2(s0.x + 8, s0.y + 4), ui::text_col, t.c_str());
    }
    // capacity bar: the buffers this algorithm allocates (standard: those of the running GEMM)
    const float bar_y = s0.y + fs * 1.5f, bar_h = fs * (compact ? 0.9f : 1.1f);
    const ImVec2 cb0(s0.x + 8, bar_y), cb1(s1.x - 8, bar_y + bar_h);
    dl->AddRectFilled(cb0, cb1, ui::cell_empty);
    const int32_t phase = (first < ev.size()) ? ev[first].phase : 0;
    int64_t used = 0;
    {
        struct Seg {
            std::string name;
            int64_t bytes;
            Tensor t;
        };
        std::vector<Seg> segs;
        auto tensor_of = [](const std::string& n) {
            // first match wins: the gradients' names contain their inputs' ("dK_j" holds "K_j")
            for (auto [key, t] : {std::pair{"dK_j", Tensor::dK},
                                  {"dQ_i", Tensor::dQ},
                                  {"dP_ij", Tensor::dP},
                                  {"dV_j", Tensor::dV},
                                  {"Q_i", Tensor::Q},
                                  {"dO_i", Tensor::dO},
                                  {"K_j", Tensor::K},
                                  {"V_j", Tensor::V},
                                  {"O_i", Tensor::O},
                                  {"S_ij", Tensor::S},
                                  {"P_ij", Tensor::P},
                                  {"LSE_i", Tensor::LSE},
                                  {"l_i", Tensor::l},
                                  {"m_i", Tensor::m}})
                if (n.find(key) != std::string::npos) return t;
            return Tensor::count;
        };
        const bool bwd_phase = first < ev.size() && ev[first].pass == 1;
        if (bwd_phase && r.algo == sim::Algo::standard) {
            // standard's backward kernels are GEMMs and a row kernel: the tiles this step holds
            for (const auto& rt : resident_tiles(r.trace, first, last))
                segs.push_back({std::string(sim::tensor_name(rt.tensor)), rt.bytes, rt.tensor});
        } else if (bwd_phase) {
            for (const auto& buf : r.bwd_sram_buffers) segs.push_back({buf.name, buf.bytes, tensor_of(buf.name)});
        } else if (r.algo == sim::Algo::standard && phase == 1) {
            if (first < last)
                segs.push_back({"rows of S", static_cast<int64_t>(ev[first].rows) * ev[first].cols * 4, Tensor::S});
        } else {
            for (const auto& buf : r.sram_buffers) {
                if (r.algo == sim::Algo::standard) {
                    const bool gemm1 = buf.name.rfind("S = QK^T", 0) == 0;
                    if (gemm1 != (phase == 0)) continue;
                }
                segs.push_back({buf.name, buf.bytes, tensor_of(buf.name)});
            }
        }
        const double M = static_cast<double>(std::max<int64_t>(1, r.sram_bytes));
        float bx = cb0.x;
        for (const auto& sg : segs) {
            const float w = static_cast<float>(sg.bytes / M) * (cb1.x - cb0.x);
            dl->AddRectFilled(ImVec2(bx, cb0.y), ImVec2(bx + w, cb1.y), ui::with_alpha(ui::tensor_colour(sg.t), 200));
            dl->AddLine(ImVec2(bx + w, cb0.y), ImVec2(bx + w, cb1.y), IM_COL32(20, 20, 20, 255));
            bx += w;
            used += sg.bytes;
        }
        const std::string cap =
            ui::bytes(static_cast<double>(used)) + " of " + ui::bytes(M) + (compact ? "" : " allocated");
        const float tw = ImGui::CalcTextSize(cap.c_str()).x;
        const ImVec2 tp(cb1.x - tw - 4, cb0.y + (bar_h - fs) * 0.5f);
        dl->AddRectFilled(ImVec2(tp.x - 3, cb0.y), cb1, IM_COL32(20, 22, 28, 220));
        dl->AddText(tp, ui::text_col, cap.c_str());
    }
    f.s0 = s0;
    f.s1 = s1;
    f.phase = phase;
}

// What is happening now, wrapped at spaces where the box is narrow (at 2x zoom it ran past the box's
// edge): the lines at the SRAM box's foot, which the slots and the events above keep clear of.
void make_caption(Frame& f) {
    FLASHSIM_FRAME_NAMES
    if (compact) return;
    const size_t inflight = done;  // the first event not yet done is the one in flight
    const bool animating = c.frac > 0 && c.frac < 1 && inflight < last;
    std::string now;
    if (animating)
        now = "now: " + verb(ev[inflight]);
    else if (first < last)
        now = c.frac <= 0 ? "about to start this step" : "step complete";
    now += "   |   " + phase_caption(r, f.phase, first < ev.size() ? ev[first].pass : 0);
    f.caption = wrap_at_spaces(now, f.s1.x - 4 - (f.s0.x + 8),
                               [](std::string_view t) { return ImGui::CalcTextSize(t.data(), t.data() + t.size()).x; });
}

// The caption's lines take fs * (lines + 0.5) at the box's foot; the slots keep fs * 3 there, and
// the boxes above leave room for a caption of four lines (the room SRAM is given, whatever the step).
float caption_allowance(float fs, bool compact) { return compact ? 0.0f : fs * 1.5f; }
float caption_overflow(const Frame& f) {
    return std::max(0.0f, f.fs * (static_cast<float>(f.caption.size()) + 0.5f) - f.fs * 3.0f);
}

void draw_slots(Frame& f) {
    FLASHSIM_FRAME_NAMES
    const ImVec2 s0 = f.s0, s1 = f.s1;
    // resident tiles: one slot per tensor
    const std::vector<Resident> res = resident_tiles(r.trace, first, last);
    const int nslots = std::max<int>(1, static_cast<int>(res.size()));
    // one row of slots, or several when they would be too narrow to name (the backward holds 13)
    const SlotLayout sl = slot_layout(nslots, W, s1.y - s0.y - caption_overflow(f), fs, compact);
    const float sy0 = s0.y + sl.top, gx = sl.gx, gy = sl.gy, slot_w = sl.w, slot_h = sl.h;
    const int slot_cols = sl.per_row;
    const float slots_bottom = s0.y + sl.bottom();
    auto& q0 = f.q0;
    auto& q1 = f.q1;
    auto& has_slot = f.has_slot;
    {
        int k_in_row = 0, row = 0;
        const auto row_start = [&](int row_) {
            const int in_row = std::min(slot_cols, nslots - row_ * slot_cols);
            return (s0.x + s1.x - (in_row * slot_w + (in_row - 1) * gx)) * 0.5f;
        };
        float sx = row_start(0);
        for (const auto& rt : res) {
            if (k_in_row == slot_cols) {
                k_in_row = 0;
                sx = row_start(++row);
            }
            const size_t k = static_cast<size_t>(rt.tensor);
            const float y = sy0 + static_cast<float>(row) * (slot_h + gy);
            q0[k] = ImVec2(sx, y);
            q1[k] = ImVec2(sx + slot_w, y + slot_h);
            has_slot[k] = true;
            sx += slot_w + gx;
            ++k_in_row;
        }
    }
    // which inputs the in-flight compute uses
    std::array<bool, sim::kTensorCount> busy{};
    const size_t inflight = done;  // the first event not yet done is the one in flight
    const bool animating = c.frac > 0 && c.frac < 1 && inflight < last;
    if (animating && (ev[inflight].kind == EventKind::compute || ev[inflight].kind == EventKind::rescale)) {
        busy[static_cast<size_t>(ev[inflight].tensor)] = true;
        for (Tensor t : inputs_of(ev[inflight])) busy[static_cast<size_t>(t)] = true;
    }
    // accumulators carried over from the previous step (flash2's O_i stays in SRAM across its row)
    std::array<bool, sim::kTensorCount> carried{};
    // (and the backward's dK_j, dV_j accumulators across the query blocks of their column)
    if (step > 0)
        for (const auto& p : resident_tiles(r.trace, tl.step_first[static_cast<size_t>(step) - 1], first))
            for (const auto& rt : res)
                if (!p.leaving && p.tensor == rt.tensor &&
                    (p.tensor == Tensor::O || p.tensor == Tensor::dK || p.tensor == Tensor::dV) &&
                    p.event.row_tile == rt.event.row_tile)
                    carried[static_cast<size_t>(p.tensor)] = true;
    for (const auto& rt : res) {
        const size_t k = static_cast<size_t>(rt.tensor);
        // arrival: the first load/compute of this tensor within the step; departure: its store
        size_t arrive = SIZE_MAX, depart = SIZE_MAX;
        for (size_t i = first; i < last; ++i)
            if (ev[i].tensor == rt.tensor) {
                if (arrive == SIZE_MAX && (ev[i].kind == EventKind::load || ev[i].kind == EventKind::compute))
                    arrive = i;
                if (ev[i].kind == EventKind::store) depart = i;
            }
        // Stored without a load or compute of its own (LSE_i, made by O_i's final compute): it is in
        // SRAM from the compute before its store, not from the start of the step.
        if (arrive == SIZE_MAX && depart != SIZE_MAX && !carried[k])
            for (size_t i = depart; i-- > first;)
                if (ev[i].kind == EventKind::compute) {
                    arrive = i;
                    break;
                }
        const bool present =
            (carried[k] || arrive == SIZE_MAX || done > arrive) && (depart == SIZE_MAX || done <= depart);
        const ImU32 col = ui::tensor_colour(rt.tensor);
        dl->AddRect(q0[k], q1[k], ui::with_alpha(col, 90), 4.0f, 0, 1.0f);
        if (present)
            dl->AddRectFilled(q0[k], q1[k], ui::with_alpha(col, 210), 4.0f);
        else if (busy[k])
            dl->AddRectFilled(q0[k], q1[k], ui::with_alpha(col, 110), 4.0f);  // being computed now
        if (busy[k])
            dl->AddRect(ImVec2(q0[k].x - 3, q0[k].y - 3), ImVec2(q1[k].x + 3, q1[k].y + 3),
                        IM_COL32(255, 255, 255, 255), 5.0f, 0, 3.0f);
        const std::string name = compact ? std::string(sim::tensor_name(rt.tensor)) : tile_name(rt.event);
        ui::text_centred(dl, q0[k], ImVec2(q1[k].x, q0[k].y + fs * 1.4f),
                         present ? IM_COL32(0, 0, 0, 255) : ui::text_dim, name);
        // flash's S_ij and P_ij are one buffer (P overwrites S in place): its bytes are counted once,
        // as in the capacity bar above
        const bool shared_sp = r.algo != sim::Algo::standard && rt.tensor == Tensor::P &&
                               has_slot[static_cast<size_t>(Tensor::S)] &&
                               q0[static_cast<size_t>(Tensor::S)].y == q0[k].y;  // side by side, one row
        if (shared_sp) {
            const size_t ks = static_cast<size_t>(Tensor::S);
            dl->AddRect(ImVec2(q0[ks].x - 4, q0[ks].y - 4), ImVec2(q1[k].x + 4, q1[k].y + 4),
                        ui::with_alpha(ui::tensor_colour(Tensor::P), 160), 6.0f, 0, 1.5f);
        }
        if (!compact && slot_w > ImGui::CalcTextSize("000.00 KiB").x) {
            // S and P in one buffer: one size under both slots; otherwise the tile's own size
            // (left out when the slots are too narrow for it, as in the backward's thirteen)
            const bool s_of_pair =
                r.algo != sim::Algo::standard && rt.tensor == Tensor::S && has_slot[static_cast<size_t>(Tensor::P)];
            const size_t kp = static_cast<size_t>(Tensor::P);
            if (s_of_pair)
                ui::text_centred(dl, ImVec2(q0[k].x, q1[k].y), ImVec2(q1[kp].x, q1[k].y + fs * 1.3f), ui::text_dim,
                                 ui::bytes(static_cast<double>(rt.bytes)) + ", one buffer");
            else if (!shared_sp)
                ui::text_centred(dl, ImVec2(q0[k].x, q1[k].y), ImVec2(q1[k].x, q1[k].y + fs * 1.3f), ui::text_dim,
                                 ui::bytes(static_cast<double>(rt.bytes)));
        }
    }
    f.slots_bottom = slots_bottom;
    f.inflight = inflight;
    f.animating = animating;
}

void draw_flight_and_events(Frame& f) {
    FLASHSIM_FRAME_NAMES
    const ImVec2 s0 = f.s0, s1 = f.s1;
    const auto& q0 = f.q0;
    const auto& q1 = f.q1;
    const auto& has_slot = f.has_slot;
    const float slots_bottom = f.slots_bottom;
    const size_t inflight = f.inflight;
    const bool animating = f.animating;
    // the event in flight: a tile moving between its place in HBM and its slot in SRAM
    if (animating) {
        const sim::Event& e = ev[inflight];
        const size_t k = static_cast<size_t>(e.tensor);
        const float u = ease(static_cast<float>(std::clamp(kpos - static_cast<double>(done - first), 0.0, 1.0)));
        if ((e.kind == EventKind::load || e.kind == EventKind::store) && has_slot[k]) {
            ImVec2 p0, p1;
            hbm_rect(f, e, &p0, &p1);
            dl->AddRect(ImVec2(p0.x - 2, p0.y - 2), ImVec2(p1.x + 2, p1.y + 2), IM_COL32(255, 255, 255, 255), 0, 0,
                        2.0f);
            const ImVec2 from0 = e.kind == EventKind::load ? p0 : q0[k], from1 = e.kind == EventKind::load ? p1 : q1[k];
            const ImVec2 to0 = e.kind == EventKind::load ? q0[k] : p0, to1 = e.kind == EventKind::load ? q1[k] : p1;
            const ImVec2 m0 = lerp(from0, to0, u), m1 = lerp(from1, to1, u);
            const ImVec2 c0((from0.x + from1.x) * 0.5f, (from0.y + from1.y) * 0.5f),
                c1((to0.x + to1.x) * 0.5f, (to0.y + to1.y) * 0.5f);
            dl->AddLine(c0, c1, IM_COL32(255, 255, 255, 70), 1.5f);
            dl->AddRectFilled(m0, m1, ui::tensor_colour(e.tensor), 3.0f);
            dl->AddRect(m0, m1, IM_COL32(255, 255, 255, 255), 3.0f, 0, 2.0f);
        }
    }
    const std::vector<std::string>& caption = f.caption;
    // the step's events, in order: done, in flight, to come (a window around the one in flight)
    const float events_end = s1.y - fs * 2.0f - fs * static_cast<float>(caption.empty() ? 0 : caption.size() - 1);
    if (!compact && first < last && slots_bottom + fs * 1.5f + fs * 2.3f <= events_end) {
        float y = slots_bottom + fs * 1.5f;
        const float x0 = s0.x + 12, lh = fs * 1.15f;
        const size_t rows = static_cast<size_t>(std::max(0.0f, (events_end - y) / lh));
        dl->AddText(ImVec2(x0, y), ui::text_dim, "this step:");
        y += lh;
        const size_t n = last - first;
        size_t room = rows > 1 ? rows - 1 : 0;  // lines left for events and "..." notes
        size_t start = first, stop = last;
        if (n > room && room >= 3) {
            const size_t cur = animating ? inflight : (c.frac >= 1 ? last - 1 : first);
            const size_t show = room - 2;  // leave a line for "... before" and "... more"
            start = std::min(cur > first ? cur - 1 : first, last - show);
            stop = start + show;
        } else if (n > room) {
            stop = first + room;
        }
        auto note = [&](const std::string& t) {
            dl->AddText(ImVec2(x0, y), ui::text_dim, t.c_str());
            y += lh;
        };
        if (start > first) note("  ... " + std::to_string(start - first) + " earlier");
        for (size_t i = start; i < stop; ++i) {
            const bool is_done = i < done, now_i = animating && i == inflight;
            const std::string line = std::string(is_done ? "  done  " : now_i ? "  now   " : "        ") + verb(ev[i]);
            dl->AddText(ImVec2(x0, y),
                        now_i     ? IM_COL32(255, 255, 255, 255)
                        : is_done ? ui::text_col
                                  : ui::text_dim,
                        line.c_str());
            y += lh;
        }
        if (stop < last) note("  ... " + std::to_string(last - stop) + " more");
    }
    // caption: what is happening now (its lines drawn at the box's foot, below the events)
    if (!compact) {
        dl->PushClipRect(s0, ImVec2(s1.x - 4, s1.y), true);
        for (size_t i = 0; i < caption.size(); ++i)
            dl->AddText(ImVec2(s0.x + 8, s1.y - fs * 1.5f - fs * static_cast<float>(caption.size() - 1 - i)),
                        ui::text_col, caption[i].c_str());
        dl->PopClipRect();
    }
}

#undef FLASHSIM_FRAME_NAMES

}  // namespace

float hierarchy_least_height(Replay& rp, bool compact, float w) {
    const float fs = ImGui::GetFontSize();
    const Layout& L = rp.layout();
    bool has_square = false;
    for (Tensor t : {Tensor::S, Tensor::P, Tensor::dP, Tensor::dS}) has_square = has_square || L.shown(t);
    return hbm_least_height(has_square, fs) + l2_band_height(fs, compact) +
           sram_least_height(rp.most_slots(), w, fs, compact) + caption_allowance(fs, compact);
}

void draw_hierarchy(ImDrawList* dl, ImVec2 a, ImVec2 b, const RunSet& rs, sim::Algo algo, Replay& rp, Cursor c,
                    bool compact, const ViewState& v) {
    const sim::Result& r = rs.result(algo);
    const Timeline& tl = rs.timeline(algo);
    Frame f{dl,          a,         b,
            rs,          r,         tl,
            rp.layout(), rp,        c,
            compact,     v,         ImGui::GetFontSize(),
            b.x - a.x,   b.y - a.y, r.trace.events};
    // Where the cursor is.
    int64_t step = tl.steps_kept ? std::clamp<int64_t>(c.step, 0, tl.steps_kept - 1) : 0;
    const size_t first = tl.steps_kept ? tl.step_first[static_cast<size_t>(step)] : 0;
    const size_t last = tl.steps_kept ? tl.step_first[static_cast<size_t>(step) + 1] : 0;
    const size_t done = events_done(tl, {step, c.frac});
    rp.advance_to(done);
    const double span = static_cast<double>(last - first);
    const double kpos = span * std::clamp(c.frac, 0.0, 1.0);
    f.hbm_max = f.H - l2_band_height(f.fs, compact) - sram_least_height(rp.most_slots(), f.W, f.fs, compact) -
                caption_allowance(f.fs, compact);
    f.step = step;
    f.first = first;
    f.last = last;
    f.done = done;
    f.kpos = kpos;
    draw_hbm(f);
    draw_l2(f);
    draw_sram_bar(f);
    make_caption(f);
    draw_slots(f);
    draw_flight_and_events(f);
}

}  // namespace viz
