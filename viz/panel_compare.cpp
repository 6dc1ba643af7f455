// viz/panel_compare.cpp — standard, flash1 and flash2 on the same problem and the same modelled
// clock: the standard path writes its N x N matrices while flash never does.
#include <algorithm>
#include <cstdio>
#include <string>
#include <vector>

#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

void draw_compare_panel(const RunSet& rs, ReplayCache& cache, ViewState& v) {
    if (v.design_shown) draw_design_strip(*v.design_shown, rs);
    const sim::Algo drv = driver(rs, Panel::compare, v.algo, v.columns);
    const double t = clock_of(rs.timeline(drv), v.cursor);
    ImGui::TextUnformatted("Same problem, same clock");
    ui::help("clock");
    const std::string when = "(one head, a step at a time; not the predicted time): t = " + ui::seconds(t);
    ui::same_line_if_fits(ImGui::CalcTextSize(when.c_str()).x);
    ImGui::TextUnformatted(when.c_str());
    problem_line(rs);
    const float fs = ImGui::GetFontSize();
    column_toggles(v, rs);
    // the shared clock: each algorithm's whole run as a bar on one time axis, the cursor at t
    {
        // Bars are whole runs (a capped trace's rest estimated from the complete totals); the part
        // the trace keeps, and so the cursor can reach, is solid, the rest hatched.
        double t_max = 0;
        for (sim::Algo a : kAlgos) t_max = std::max(t_max, rs.timeline(a).whole_time);
        ImDrawList* dl = ImGui::GetWindowDrawList();
        // room after the longest bar for its time ("about 508.78 us  done")
        float end_w = fs * 4;
        for (sim::Algo a : kAlgos) {
            const Timeline& tl = rs.timeline(a);
            const std::string e = (tl.whole_is_estimate() ? "about " : "") + ui::seconds(tl.whole_time) + "  done";
            end_w = std::max(end_w, ImGui::CalcTextSize(e.c_str()).x + 8);
        }
        const float label_w = fs * 5.5f, w = ImGui::GetContentRegionAvail().x - label_w - end_w, bh = fs * 0.9f;
        const ImVec2 p0 = ImGui::GetCursorScreenPos();
        for (int i = 0; i < 3; ++i) {
            const sim::Algo a = kAlgos[static_cast<size_t>(i)];
            const Timeline& tl = rs.timeline(a);
            const float y = p0.y + static_cast<float>(i) * fs * 1.15f;
            dl->AddText(ImVec2(p0.x, y), ui::algo_colour(a), std::string(sim::algo_name(a)).c_str());
            const float x0 = p0.x + label_w;
            const float len = t_max > 0 ? static_cast<float>(tl.whole_time / t_max) * w : 0;
            const float kept = t_max > 0 ? static_cast<float>(tl.total_time() / t_max) * w : 0;
            const float now = t_max > 0 ? static_cast<float>(std::min(t, tl.total_time()) / t_max) * w : 0;
            const float y0 = y + fs * 0.15f, y1 = y0 + bh;
            dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + kept, y1), ui::with_alpha(ui::algo_colour(a), 70), 2);
            if (len > kept + 1) {  // beyond the trace: hatched
                dl->AddRect(ImVec2(x0 + kept, y0), ImVec2(x0 + len, y1), ui::with_alpha(ui::algo_colour(a), 110), 2);
                dl->PushClipRect(ImVec2(x0 + kept, y0), ImVec2(x0 + len, y1), true);
                for (float hx = x0 + kept; hx < x0 + len + bh; hx += 6)
                    dl->AddLine(ImVec2(hx, y1), ImVec2(hx - bh, y0), ui::with_alpha(ui::algo_colour(a), 90));
                dl->PopClipRect();
            }
            dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + now, y1), ui::algo_colour(a), 2);
            const bool done = !tl.whole_is_estimate() && t >= tl.total_time();
            const std::string end =
                (tl.whole_is_estimate() ? "about " : "") + ui::seconds(tl.whole_time) + (done ? "  done" : "");
            dl->AddText(ImVec2(x0 + len + 6, y), ui::text_col, end.c_str());
        }
        const float xt = p0.x + label_w + (t_max > 0 ? static_cast<float>(t / t_max) * w : 0);
        dl->AddLine(ImVec2(xt, p0.y - 2), ImVec2(xt, p0.y + fs * 3.4f), IM_COL32(255, 255, 255, 220), 2);
        ImGui::Dummy(ImVec2(label_w + w, fs * 3.45f));
        bool capped = false;
        for (sim::Algo a : kAlgos) capped = capped || rs.timeline(a).whole_is_estimate();
        if (capped) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
            ui::wrapped(
                "Hatched: beyond the trace the app keeps (its first %s events a run). Bar lengths and the times "
                "after them are whole runs from the complete totals; the pictures show the kept part only.",
                ui::count(kAppEventCap).c_str());
            ImGui::PopStyleColor();
            ui::help("event cap");
        }
    }
    std::vector<sim::Algo> cols;  // the algorithms shown (a lesson's compare list may narrow them)
    for (sim::Algo a : kAlgos)
        if (v.columns[static_cast<size_t>(algo_index(a))]) cols.push_back(a);
    if (cols.empty()) cols.assign(kAlgos.begin(), kAlgos.end());
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float col_w = (avail.x - 8 * static_cast<float>(cols.size() - 1)) / static_cast<float>(cols.size());
    // Each column: its heading line, the hierarchy, the counters under it. The columns are at least as
    // tall as the hierarchy needs (the view scrolls down when they do not fit): at 2x zoom a squeezed
    // SRAM box drew its tiles over the counters.
    const float counter_h = fs * 4.6f, pad = ImGui::GetStyle().WindowPadding.y * 2;
    float col_h = avail.y;
    for (sim::Algo a : cols)
        col_h = std::max(
            col_h, pad + ImGui::GetTextLineHeightWithSpacing() + counter_h +
                       hierarchy_least_height(cache.get(rs, a), true, col_w - ImGui::GetStyle().WindowPadding.x * 2));
    const double std_total = static_cast<double>(rs.result(sim::Algo::standard).totals.hbm_total().total()) /
                             std::max<int64_t>(1, rs.problem.heads_total());
    for (size_t i = 0; i < cols.size(); ++i) {
        const sim::Algo a = cols[i];
        const Timeline& tl = rs.timeline(a);
        const Cursor c = cursor_at(tl, t);
        const bool finished = t >= tl.total_time();  // at or past the last kept step
        const bool cut = finished && tl.whole_is_estimate();
        Replay& rp = cache.get(rs, a);
        if (i) ImGui::SameLine(0, 8);
        ImGui::BeginChild((std::string("col") + std::to_string(i)).c_str(), ImVec2(col_w, col_h), true,
                          ImGuiWindowFlags_NoScrollbar);
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::algo_colour(a)), "%s",
                           std::string(sim::algo_name(a)).c_str());
        ui::help(std::string(sim::algo_name(a)));
        ImGui::SameLine();
        if (cut)
            ImGui::Text("trace ends: step %lld / %lld", static_cast<long long>(tl.steps_kept),
                        static_cast<long long>(tl.steps_total));
        else if (finished)
            ImGui::Text("done at %s", ui::seconds(tl.total_time()).c_str());
        else
            ImGui::Text("step %lld / %lld", static_cast<long long>(c.step + 1), static_cast<long long>(tl.steps_total));
        const ImVec2 p = ImGui::GetCursorScreenPos(), sz = ImGui::GetContentRegionAvail();
        draw_hierarchy(ImGui::GetWindowDrawList(), p, ImVec2(p.x + sz.x, p.y + sz.y - counter_h), rs, a, rp,
                       finished ? Cursor{last_step(tl), 1.0} : c, true, v);
        ImGui::Dummy(ImVec2(sz.x, sz.y - counter_h));
        const sim::Traffic so_far = rp.totals().hbm_total();
        const sim::Traffic s_w = rp.totals()[sim::Tensor::S] + rp.totals()[sim::Tensor::P] +
                                 rp.totals()[sim::Tensor::dP] + rp.totals()[sim::Tensor::dS];
        ImGui::Text("HBM so far: %s", ui::bytes(static_cast<double>(so_far.total())).c_str());
        ImGui::Text("%s moved: %s", rs.params.pass == sim::Pass::forward ? "S and P" : "S, P, dP, dS",
                    ui::bytes(static_cast<double>(s_w.total())).c_str());
        // bar against standard's whole run
        const float w = ImGui::GetContentRegionAvail().x, h = fs * 1.1f;
        const ImVec2 q = ImGui::GetCursorScreenPos();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        ImGui::Dummy(ImVec2(w, h));
        dl->AddRectFilled(q, ImVec2(q.x + w, q.y + h), ui::cell_empty, 3);
        const float f =
            std_total > 0 ? static_cast<float>(std::min(1.0, static_cast<double>(so_far.total()) / std_total)) : 0;
        const double mine = static_cast<double>(rs.result(a).totals.hbm_total().total()) /
                            std::max<int64_t>(1, rs.problem.heads_total());
        const float fe = std_total > 0 ? static_cast<float>(std::min(1.0, mine / std_total)) : 0;
        dl->AddRectFilled(q, ImVec2(q.x + w * fe, q.y + h), ui::with_alpha(ui::algo_colour(a), 70), 3);
        dl->AddRectFilled(q, ImVec2(q.x + w * f, q.y + h), ui::algo_colour(a), 3);
        // the longest wording that fits the column (at 2x zoom the whole sentence did not)
        const std::string pct = ui::fixed(100.0 * mine / std::max(1.0, std_total), 0) + "%";
        std::string said = pct;
        for (const std::string& words :
             {"whole run: " + pct + " of standard's bytes", pct + " of standard's bytes", pct + " of standard's"})
            if (ImGui::CalcTextSize(words.c_str()).x <= w - fs * 0.5f) {
                said = words;
                break;
            }
        ui::text_centred(dl, q, ImVec2(q.x + w, q.y + h), IM_COL32(255, 255, 255, 255), said);
        ImGui::EndChild();
    }
}

}  // namespace viz
