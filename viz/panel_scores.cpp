// viz/panel_scores.cpp — the score matrix as the FlashAttention paper draws it: N x N scores cut into
// B_r x B_c tiles, one grid per algorithm on the same modelled clock, so the loop orders show as
// sweeps (standard and FA2 row by row, FA1 column by column; the flash backward column by column),
// the causal mask's skipped tiles stay dark and standard's tiles are written to HBM.
#include <algorithm>
#include <string>
#include <vector>

#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

constexpr ImU32 kSkipped = IM_COL32(24, 24, 30, 255);
constexpr ImU32 kStored = IM_COL32(150, 162, 196, 255);  // the HBM box's colour family: written to HBM

ImU32 state_colour(CellState s, sim::Algo a) {
    switch (s) {
        case CellState::untouched:
            return ui::cell_empty;
        case CellState::skipped:
            return kSkipped;
        case CellState::partial:
            return ui::mix(ui::cell_empty, ui::algo_colour(a), 0.45f);
        case CellState::visited:
            return ui::algo_colour(a);
        case CellState::visited_masked:
            return ui::mix(ui::algo_colour(a), kSkipped, 0.55f);
        case CellState::stored:
            return kStored;
        case CellState::current:
            return IM_COL32(255, 255, 255, 255);
    }
    return ui::cell_empty;
}

void legend_swatch(ImU32 col, const char* text) {
    const float fs = ImGui::GetFontSize();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + fs * 0.2f), ImVec2(p.x + fs * 0.8f, p.y + fs), col, 2);
    ImGui::Dummy(ImVec2(fs * 0.9f, fs));
    ImGui::SameLine();
    ImGui::TextUnformatted(text);
}
// how wide legend_swatch(col, text) draws: the swatch, the gap, the text
float legend_swatch_width(const char* text) {
    return ImGui::GetFontSize() * 0.9f + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(text).x;
}

// One algorithm's grid in [p0, p0 + side]: runs of equal cells drawn as one rectangle when cells are
// small (a 256 x 256 grid stays a few hundred rectangles a frame), one rectangle a cell otherwise.
void draw_grid(ImDrawList* dl, ImVec2 p0, float side_w, float side_h, const ScoreGrid& g, sim::Algo a, int64_t n,
               const ViewState& v) {
    if (g.rows == 0 || g.cols == 0 || n <= 0) return;
    // Cells sit where their elements are: the last tile of a side may be narrower (N = 256 in tiles
    // of 114 leaves 28 columns), as in the paper's picture of S.
    const auto xs = [&](int64_t b) {  // left edge of cell column b
        return p0.x + side_w * static_cast<float>(std::min(n, b * g.f_c * g.B_c)) / static_cast<float>(n);
    };
    const auto ys = [&](int64_t a_) {
        return p0.y + side_h * static_cast<float>(std::min(n, a_ * g.f_r * g.B_r)) / static_cast<float>(n);
    };
    const bool gaps =
        side_w / static_cast<float>(g.cols) > kMinCellPx && side_h / static_cast<float>(g.rows) > kMinCellPx;
    const float gp = gaps ? 1.0f : 0.0f;
    for (int i = 0; i < g.rows; ++i) {
        const float y0 = ys(i), y1 = ys(i + 1) - gp;
        int j = 0;
        while (j < g.cols) {
            const CellState s = cell_state(g, i, j);
            int k = j + 1;
            if (!gaps)
                while (k < g.cols && cell_state(g, i, k) == s) ++k;
            dl->AddRectFilled(ImVec2(xs(j), y0), ImVec2(xs(k) - gp, std::max(y0 + 1, y1)), state_colour(s, a));
            j = k;
        }
    }
    dl->AddRect(p0, ImVec2(p0.x + side_w, p0.y + side_h), ui::with_alpha(ui::algo_colour(a), 200), 0, 0, 1.5f);
    if (g.n_skipped > 0)  // the diagonal query = key that the causal mask cuts along
        dl->AddLine(p0, ImVec2(p0.x + side_w, p0.y + side_h), IM_COL32(255, 255, 255, 90), 1.0f);
    if (g.cur_i >= 0) {  // the tile being computed, outlined so it shows even on a fine grid
        const int b = g.cell_col(g.cur_j), c = g.cell_row(g.cur_i);
        dl->AddRect(ImVec2(xs(b) - 2, ys(c) - 2),
                    ImVec2(std::max(xs(b + 1), xs(b) + 3) + 2, std::max(ys(c + 1), ys(c) + 3) + 2), ui::okabe::yellow,
                    0, 0, 2.0f);
    }
    if (v.highlight_tile_row >= 0 && v.highlight_tile_col >= 0 && v.highlight_tile_row < g.T_r &&
        v.highlight_tile_col < g.T_c) {  // a lesson's tile
        const int b = g.cell_col(v.highlight_tile_col), c = g.cell_row(v.highlight_tile_row);
        dl->AddRect(ImVec2(xs(b) - 3, ys(c) - 3), ImVec2(xs(b + 1) + 3, ys(c + 1) + 3), IM_COL32(255, 255, 255, 230), 0,
                    0, 2.5f);
    }
}

std::string what_is_visited(sim::Algo a, int pass) {
    if (pass == 0)
        return a == sim::Algo::standard ? "S_ij = Q_i K_j^T computed, then written to HBM"
                                        : "S_ij computed in SRAM, never written";
    switch (a) {
        case sim::Algo::standard:
            return "dP_ij = dO_i V_j^T computed and written (P read back from HBM)";
        case sim::Algo::flash1:
            return "S_ij and P_ij recomputed in SRAM from Q, K and the stored l, m";
        case sim::Algo::flash2:
            return "S_ij and P_ij recomputed in SRAM from Q, K and the stored LSE";
    }
    return {};
}

}  // namespace

void column_toggles(ViewState& v, const RunSet& rs) {
    ImGui::TextUnformatted("Show:");
    int on = 0;
    for (bool b : v.columns) on += b;
    for (sim::Algo a : kAlgos) {
        bool& b = v.columns[static_cast<size_t>(algo_index(a))];
        ImGui::SameLine();
        bool x = b;
        if (ImGui::Checkbox((std::string(sim::algo_name(a)) + "##col").c_str(), &x) && (x || on > 1)) {
            // the step bar counts the longest column shown: hold the clock where it is
            const Timeline& from = rs.timeline(driver(rs, v.panel, v.algo, v.columns));
            b = x;
            const Timeline& to = rs.timeline(driver(rs, v.panel, v.algo, v.columns));
            if (&from != &to) v.cursor = cursor_at(to, clock_of(from, v.cursor));
        }
    }
}

const char* pass_words(sim::Pass p) {
    return p == sim::Pass::both       ? "forward, then backward"
           : p == sim::Pass::backward ? "backward pass"
                                      : "forward pass";
}

std::string mask_words(const sim::Problem& p) {
    if (p.window > 0) return ", causal, window " + std::to_string(p.window);
    return p.causal ? ", causal" : "";
}

void problem_line(const RunSet& rs) {
    char what[256];
    std::snprintf(what, sizeof what, "N = %lld, d = %lld, %s, %s%s, %s", static_cast<long long>(rs.problem.seq),
                  static_cast<long long>(rs.problem.head_dim), std::string(sim::dtype_name(rs.problem.dtype)).c_str(),
                  rs.machine.name.c_str(), mask_words(rs.problem).c_str(), pass_words(rs.params.pass));
    ui::same_line_if_fits(ImGui::CalcTextSize(what).x, ImGui::GetFontSize() * 2);
    ImGui::TextDisabled("%s", what);
}

void draw_scores_panel(const RunSet& rs, ReplayCache& cache, ViewState& v) {
    const sim::Algo drv = driver(rs, Panel::scores, v.algo, v.columns);
    const double t = clock_of(rs.timeline(drv), v.cursor);
    const float fs = ImGui::GetFontSize();
    ImGui::Text("The score matrix S (N x N) in B_r x B_c tiles, same clock: t = %s", ui::seconds(t).c_str());
    ui::help("tile");
    column_toggles(v, rs);
    ImGui::SameLine(0, fs * 2);
    ImGui::TextDisabled("N = %lld, d = %lld, %s, %s%s", static_cast<long long>(rs.problem.seq),
                        static_cast<long long>(rs.problem.head_dim), rs.machine.name.c_str(),
                        pass_words(rs.params.pass), mask_words(rs.problem).c_str());
    legend_swatch(ui::cell_empty, "not yet");
    ui::same_line_if_fits(legend_swatch_width("computed"), fs);
    legend_swatch(ui::okabe::green, "computed");
    ui::same_line_if_fits(legend_swatch_width("written to HBM"), fs);
    legend_swatch(kStored, "written to HBM");
    ui::same_line_if_fits(legend_swatch_width("masked: skipped"), fs);
    legend_swatch(kSkipped, "masked: skipped");
    ui::help("causal");
    ui::same_line_if_fits(legend_swatch_width("masked, computed anyway"), fs);
    legend_swatch(ui::mix(ui::algo_colour(sim::Algo::standard), kSkipped, 0.55f), "masked, computed anyway");
    ui::same_line_if_fits(legend_swatch_width("now"), fs);
    legend_swatch(IM_COL32(255, 255, 255, 255), "now");

    std::vector<sim::Algo> cols;
    for (sim::Algo a : kAlgos)
        if (v.columns[static_cast<size_t>(algo_index(a))]) cols.push_back(a);
    if (cols.empty()) cols.assign(kAlgos.begin(), kAlgos.end());
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float n = static_cast<float>(cols.size());
    const float col_w = (avail.x - 8 * (n - 1)) / n;
    const float text_h = fs * 8.6f;
    for (size_t c = 0; c < cols.size(); ++c) {
        const sim::Algo a = cols[c];
        const Timeline& tl = rs.timeline(a);
        const bool finished = t >= tl.total_time();
        const Cursor cur = finished ? Cursor{last_step(tl), 1.0} : cursor_at(tl, t);
        Replay& rp = cache.get(rs, a);
        rp.advance_to(events_done(tl, cur));
        const int pass = rp.pass_now();
        const ScoreGrid& fine = rp.scores(pass);
        if (c) ImGui::SameLine(0, 8);
        ImGui::BeginChild((std::string("scol") + std::to_string(c)).c_str(), ImVec2(col_w, avail.y), true,
                          ImGuiWindowFlags_NoScrollbar);
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::algo_colour(a)), "%s",
                           std::string(sim::algo_name(a)).c_str());
        ui::help(std::string(sim::algo_name(a)));
        ImGui::SameLine();
        ImGui::TextUnformatted(pass ? "backward" : "forward");
        ImGui::Text("step %lld / %lld", static_cast<long long>(std::min(cur.step, tl.steps_kept - 1) + 1),
                    static_cast<long long>(tl.steps_total));
        const ImVec2 room = ImGui::GetContentRegionAvail();
        const auto side_for = [&](float under) { return std::max(fs * 3.0f, std::min(room.x, room.y - under)); };
        float side = side_for(text_h);
        // Tiles too narrow to be parted by a gap are grouped into coarser cells, which the lines under
        // the grid say (two more lines: the grid gives way to them, and is grouped at its new size).
        const bool grouped =
            fine.f_r > 1 || fine.f_c > 1 || group_factor(fine.rows, side) > 1 || group_factor(fine.cols, side) > 1;
        if (grouped) side = side_for(text_h + fs * 2.4f);
        const int k_r = group_factor(fine.rows, side), k_c = group_factor(fine.cols, side);
        ScoreGrid coarse;  // drawn in place of the fine grid only when grouped (no copy a frame otherwise)
        if (k_r > 1 || k_c > 1) coarse = group_cells(fine, k_r, k_c);
        const ScoreGrid& g = k_r > 1 || k_c > 1 ? coarse : fine;
        const ImVec2 p0 = ImGui::GetCursorScreenPos();
        const float gx = p0.x + (room.x - side) * 0.5f;
        draw_grid(ImGui::GetWindowDrawList(), ImVec2(gx, p0.y), side, side, g, a, rs.problem.seq, v);
        ImGui::Dummy(ImVec2(room.x, side + fs * 0.3f));
        const int64_t tiles = g.T_r * g.T_c;
        // wrapped at spaces: a narrow pane never clips a count into another number
        ui::wrapped("T_r x T_c = %s x %s tiles of %lld x %lld", ui::count(g.T_r).c_str(), ui::count(g.T_c).c_str(),
                    static_cast<long long>(g.B_r), static_cast<long long>(g.B_c));
        ui::wrapped("computed: %s of %s", ui::count(g.n_visited).c_str(), ui::count(tiles).c_str());
        if (g.n_skipped > 0) {
            if (g.n_visited_masked > 0)
                ui::wrapped("masked: %s, computed anyway: %s", ui::count(g.n_skipped).c_str(),
                            ui::count(g.n_visited_masked).c_str());
            else
                ui::wrapped("skipped (masked): %s", ui::count(g.n_skipped).c_str());
        }
        if (g.n_stored > 0) ui::wrapped("written to HBM: %s", ui::count(g.n_stored).c_str());
        if (g.cur_i >= 0)
            ImGui::Text("now: tile (%lld, %lld)", static_cast<long long>(g.cur_i), static_cast<long long>(g.cur_j));
        const std::string order = sweep_order(g);
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        if (!order.empty()) ui::wrapped("sweep: %s", order.c_str());
        ui::wrapped("%s", what_is_visited(a, pass).c_str());
        if (g.f_r > 1 || g.f_c > 1)  // the counts above are per tile
            ui::wrapped("too many tiles to draw singly: one cell = %lld x %lld tiles", static_cast<long long>(g.f_r),
                        static_cast<long long>(g.f_c));
        if (tl.whole_is_estimate() && finished)
            ui::wrapped("the trace ends at step %s of %s: tiles after it are not drawn",
                        ui::count(tl.steps_kept).c_str(), ui::count(tl.steps_total).c_str());
        ImGui::PopStyleColor();
        ImGui::EndChild();
    }
}

}  // namespace viz
