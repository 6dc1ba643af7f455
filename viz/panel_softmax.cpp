// viz/panel_softmax.cpp — one query row's online softmax, block by block: scores as bars grouped by
// block, the running max as a line, the running sum, the rescale e^(m_old - m_new) applied to the
// carried sum and accumulator, and at the end the streamed result beside the plain softmax.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <array>
#include <cmath>
#include <limits>
#include <string>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/softmax.hpp"
#include "viz/panels.hpp"
#include "viz/ticks.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

std::string vec_text(const std::vector<double>& x, int digits, size_t max_items = 12) {
    std::string s = "(";
    for (size_t i = 0; i < x.size() && i < max_items; ++i) s += (i ? ", " : "") + ui::fixed(x[i], digits);
    if (x.size() > max_items) s += ", ...";
    return s + ")";
}

void draw_bars(const sim::StreamedSoftmax& sm, int focus, ImVec2 size) {
    const auto& blocks = sm.record.blocks;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::Dummy(size);
    const ImVec2 p1(p0.x + size.x, p0.y + size.y);
    dl->AddRectFilled(p0, p1, ui::panel_bg, 4);
    // The y range is the data's (masked scores aside): 999, 1000, 1001 get ticks around 1000, not
    // a label for every integer from 0. Zero joins the range when it is near it.
    size_t n = 0;
    double lo = std::numeric_limits<double>::infinity(), hi = -lo;
    for (const auto& b : blocks)
        for (double s : b.scores) {
            ++n;
            if (s <= kMaskedScore * 0.5) continue;  // masked
            lo = std::min(lo, s), hi = std::max(hi, s);
        }
    if (!(lo <= hi)) lo = 0, hi = 1;
    const double span0 = std::max(hi - lo, 1e-9 * std::max(1.0, std::abs(hi)));
    if (lo > 0 && lo < span0 * 2) lo = 0;
    if (hi < 0 && -hi < span0 * 2) hi = 0;
    const double span = std::max(hi - lo, 1e-9 * std::max(1.0, std::abs(hi)));
    lo -= (lo == 0 ? 0 : 0.1 * span);
    hi += 0.2 * span;
    const double base = std::clamp(0.0, lo, hi);  // bars grow from 0, or from the axis' end
    const float left = fs * 4.0f, top = fs * 2.4f, bottom = fs * 3.6f;
    const ImVec2 a(p0.x + left, p0.y + top), b(p1.x - fs, p1.y - bottom);
    auto ypx = [&](double v) {
        return b.y - static_cast<float>((std::clamp(v, lo, hi) - lo) / (hi - lo)) * (b.y - a.y);
    };
    const float gap = fs * 0.8f;
    const float bw = std::max(
        1.0f, (b.x - a.x - gap * static_cast<float>(blocks.size() - 1)) / static_cast<float>(std::max<size_t>(1, n)));
    dl->AddLine(ImVec2(a.x, ypx(base)), ImVec2(b.x, ypx(base)), IM_COL32(255, 255, 255, 90));
    const auto yt = axis_ticks(lo, hi, std::max(2, ticks_that_fit(b.y - a.y, fs * 1.8f)), TickKind::decimal);
    const double tick_step = yt.size() > 1 ? yt[1] - yt[0] : 1.0;
    int tick_digits = 0;  // as many decimals as the step needs (2.5 -> 1, 0.25 -> 2, 5 -> 0)
    while (tick_digits < 6 && std::abs(tick_step * std::pow(10.0, tick_digits) -
                                       std::round(tick_step * std::pow(10.0, tick_digits))) > 1e-6)
        ++tick_digits;
    for (double v : yt) {
        const std::string t = ui::fixed(v, tick_digits);
        dl->AddText(ImVec2(a.x - ImGui::CalcTextSize(t.c_str()).x - 6, ypx(v) - fs * 0.5f), ui::text_dim, t.c_str());
        dl->AddLine(ImVec2(a.x, ypx(v)), ImVec2(b.x, ypx(v)), IM_COL32(255, 255, 255, 20));
    }
    // a score's label needs about "-20.00" of room: with many scores, label every k-th bar
    const float label_w = ImGui::CalcTextSize("-20.00").x + 4;
    const size_t every = static_cast<size_t>(std::max(1.0f, std::ceil(label_w / bw)));
    size_t bar_index = 0;
    struct Label {
        float cx, y;  // centre x, bottom y
        std::string text;
        bool seen, is_max;
    };
    std::vector<Label> labels;  // drawn after the bars: block maxima first, then others that do not overlap
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    dl->AddText(ImVec2(p0.x + 8, p0.y + 4), ui::text_col, "scores of one query row, in blocks");
    // legend
    {
        const char* l1 = "running max m";
        const char* l2 = "block max";
        float x = p1.x - fs - ImGui::CalcTextSize(l1).x - ImGui::CalcTextSize(l2).x - fs * 4;
        dl->AddLine(ImVec2(x, p0.y + fs * 0.9f), ImVec2(x + fs * 1.2f, p0.y + fs * 0.9f), ui::okabe::yellow, 3);
        dl->AddText(ImVec2(x + fs * 1.5f, p0.y + 4), ui::text_col, l1);
        x += fs * 1.5f + ImGui::CalcTextSize(l1).x + fs;
        dl->AddRectFilled(ImVec2(x, p0.y + fs * 0.5f), ImVec2(x + fs * 0.8f, p0.y + fs * 1.2f), ui::okabe::vermillion);
        dl->AddText(ImVec2(x + fs * 1.1f, p0.y + 4), ui::text_col, l2);
    }
    float x = a.x;
    float prev_m_y = -1, prev_x = 0;
    for (size_t j = 0; j < blocks.size(); ++j) {
        const auto& B = blocks[j];
        const bool seen = focus < 0 || static_cast<int>(j) <= focus;
        const bool cur = static_cast<int>(j) == focus;
        const float bx0 = x, bx1 = x + bw * static_cast<float>(B.scores.size());
        dl->AddRectFilled(ImVec2(bx0 - 3, a.y - fs * 0.2f), ImVec2(bx1 + 3, b.y + fs * 3.4f),
                          cur ? IM_COL32(80, 80, 110, 255) : IM_COL32(52, 54, 64, 255), 4);
        for (size_t i = 0; i < B.scores.size(); ++i, ++bar_index) {
            const double s = B.scores[i];
            const bool masked = s <= kMaskedScore * 0.5;
            const bool is_max = !masked && s == B.block_max;
            ImU32 col = masked ? ui::okabe::grey : is_max ? ui::okabe::vermillion : ui::okabe::blue;
            if (!seen) col = ui::with_alpha(col, 70);
            const float pad = bw > 6 ? 2.0f : 0.0f;
            const float x0 = x + pad, x1 = std::max(x + pad + 1, x + bw - pad);
            const float ys = masked ? b.y : ypx(s), y0 = ypx(base);
            if (masked)  // a masked score: an outline at the floor, weight 0
                dl->AddRect(ImVec2(x0, b.y - fs * 0.5f), ImVec2(x1, b.y), col, 2);
            else
                dl->AddRectFilled(ImVec2(x0, std::min(ys, y0)), ImVec2(x1, std::max(ys, y0) + (ys == y0 ? 1 : 0)), col,
                                  2);
            const float label_y = masked ? b.y - fs * 0.5f : std::min(ys, y0);
            if (bar_index % every == 0 || is_max) {
                const std::string t = masked               ? "-inf"
                                      : s == 0.0           ? "0"
                                      : s == std::round(s) ? ui::fixed(s, 0)
                                                           : ui::fixed(s, std::abs(s) >= 100 ? 1 : 2);
                labels.push_back({(x0 + x1) * 0.5f, label_y, t, seen, is_max});
            }
            if (mouse.x >= x && mouse.x < x + bw && mouse.y >= a.y && mouse.y <= b.y && ImGui::IsWindowHovered())
                ImGui::SetTooltip("score %zu: %s%s", bar_index + 1, masked ? "-inf" : ui::fixed(s, 4).c_str(),
                                  masked ? " (masked: weight 0)" : "");
            x += bw;
        }
        // running max after this block
        if (seen) {
            const float my = ypx(B.running_max_after);
            if (prev_m_y >= 0)
                dl->AddLine(ImVec2(prev_x, prev_m_y), ImVec2(bx0 - 3, my), ui::with_alpha(ui::okabe::yellow, 160), 2);
            dl->AddLine(ImVec2(bx0 - 3, my), ImVec2(bx1 + 3, my), ui::okabe::yellow, 3);
            prev_m_y = my;
            prev_x = bx1 + 3;
        }
        // per-block state below the axis, as much of it as the block's width holds
        const bool placeholder = B.running_max_after <= kMaskedScore * 0.5;  // masked scores only so far
        const std::string l1 = "block " + std::to_string(j + 1) + " (j = " + std::to_string(j) + ")";
        const std::string l2 = !seen ? "m = ?" : placeholder ? "m = -inf" : "m = " + ui::fixed(B.running_max_after, 2);
        const std::string l3 = !seen ? "l = ?" : placeholder ? "l = 0" : "l = " + ui::fixed(B.running_sum_after, 4);
        const float room = bx1 - bx0 + gap * 0.8f;
        auto put = [&](const std::string& t, float dy, ImU32 c) {
            if (ImGui::CalcTextSize(t.c_str()).x <= room) dl->AddText(ImVec2(bx0, b.y + dy), c, t.c_str());
        };
        put(ImGui::CalcTextSize(l1.c_str()).x <= room ? l1 : std::to_string(j + 1), fs * 0.2f, ui::text_col);
        put(l2, fs * 1.2f, seen ? ui::okabe::yellow : ui::text_dim);
        put(l3, fs * 2.2f, seen ? ui::text_col : ui::text_dim);
        x += gap;
    }
    std::stable_sort(labels.begin(), labels.end(), [](const Label& p, const Label& q) { return p.is_max > q.is_max; });
    std::vector<std::array<float, 3>> taken;  // x0, x1, y of drawn labels
    for (const auto& l : labels) {
        const float w = ImGui::CalcTextSize(l.text.c_str()).x, lx0 = l.cx - w * 0.5f - 2, lx1 = l.cx + w * 0.5f + 2;
        bool clash = false;
        for (const auto& t : taken) clash = clash || (lx0 < t[1] && t[0] < lx1 && std::abs(l.y - t[2]) < fs * 1.1f);
        if (clash) continue;
        taken.push_back({lx0, lx1, l.y});
        dl->AddText(ImVec2(l.cx - w * 0.5f, l.y - fs * 1.15f), l.seen ? ui::text_col : ui::text_dim, l.text.c_str());
    }
}

}  // namespace

void draw_softmax_panel(ViewState& v) {
    const float fs = ImGui::GetFontSize();
    ImGui::TextUnformatted("Scores of one query row:");
    ui::help("online softmax");
    ImGui::SameLine();
    // Fields apply when the learner presses Enter or leaves them (not at every keystroke, which drew
    // half-typed rows), so the chart shows the last good input until then.
    ImGui::SetNextItemWidth(std::max(fs * 10, ImGui::GetContentRegionAvail().x - fs * 21));
    ImGui::InputText("##scores", &v.scores_text);
    ui::mark_text_field();
    if (ImGui::IsItemDeactivatedAfterEdit() && apply_scores_text(v, true)) v.softmax_focus = -1;
    if (ImGui::IsItemHovered()) ImGui::SetTooltip("Enter applies; -inf masks a score (its weight is 0)");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 6);
    if (ImGui::InputInt("block", &v.softmax_block) && apply_scores_text(v)) v.softmax_focus = -1;
    ImGui::SameLine();
    if (ImGui::Button("Example")) {
        v.scores_text = "1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3";
        v.values_text.clear();
        v.softmax_block = 4;
        v.softmax_focus = -1;
        apply_scores_text(v);
    }
    ImGui::TextUnformatted("Values V (optional, one row per score):");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(-1);
    ImGui::InputTextWithHint("##values", "e.g. 0,1; 1,0; 2,1; ...  (empty: the output is the weights)", &v.values_text);
    ui::mark_text_field();
    if (ImGui::IsItemDeactivatedAfterEdit() && apply_scores_text(v)) v.softmax_focus = -1;
    if (!v.softmax_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not applied: %s (showing the last good input).", v.softmax_error.c_str());
        ImGui::PopStyleColor();
    } else if (!v.softmax_note.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::sky));
        ui::wrapped("%s.", v.softmax_note.c_str());
        ImGui::PopStyleColor();
    }
    sim::StreamedSoftmax sm;
    try {
        sm = sim::stream_softmax(scores_for_sim(v.softmax_scores), std::max(1, v.softmax_block_good), v.softmax_values,
                                 sim::Precision::fp32);
    } catch (const sim::Error& e) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "%s", e.what());
        return;
    }
    const int nb = static_cast<int>(sm.record.blocks.size());
    if (v.softmax_focus >= nb) v.softmax_focus = -1;
    // block stepping
    if (ImGui::Button("< block")) v.softmax_focus = v.softmax_focus < 0 ? nb - 1 : std::max(0, v.softmax_focus - 1);
    ImGui::SameLine();
    if (ImGui::Button("block >"))
        v.softmax_focus = v.softmax_focus < 0 ? -1 : (v.softmax_focus + 1 >= nb ? -1 : v.softmax_focus + 1);
    ImGui::SameLine();
    if (v.softmax_focus < 0)
        ImGui::Text("all %d blocks done: the final result", nb);
    else
        ImGui::Text("block %d of %d (key block j = %d)", v.softmax_focus + 1, nb, v.softmax_focus);

    const ImVec2 avail = ImGui::GetContentRegionAvail();
    draw_bars(sm, v.softmax_focus, ImVec2(avail.x, std::max(fs * 12, avail.y * 0.42f)));

    const int j = v.softmax_focus < 0 ? nb - 1 : v.softmax_focus;
    const auto& B = sm.record.blocks[static_cast<size_t>(j)];
    ImGui::Spacing();
    ImGui::BeginChild("state", ImVec2(avail.x * 0.5f - 4, 0), true);
    ImGui::Text("Block %d (j = %d)", j + 1, j);
    ui::help("rescale");
    ui::wrapped("What the carried state goes through:");
    const SoftmaxStepShown st = softmax_step_shown(B);
    double block_sum = 0;  // this block's sum of e^(s - m); a masked score adds exactly 0
    if (!st.masked_so_far)
        for (double s : B.scores) block_sum += std::exp(s - B.running_max_after);
    if (st.masked_so_far) {
        ui::wrapped("Every score so far is masked (-inf): nothing is carried yet (m = -inf, l = 0, accumulator 0).");
    } else if (st.nothing_carried) {
        ui::wrapped("Nothing is carried yet (%s). m = max of the block = %s, l = sum of e^(s - m) = %s.",
                    j == 0 ? "first block" : "every earlier score is masked", ui::fixed(st.m_after, 4).c_str(),
                    ui::fixed(st.l_after, 4).c_str());
    } else {
        ui::wrapped("running max m: %s -> %s", ui::fixed(st.m_before, 4).c_str(), ui::fixed(st.m_after, 4).c_str());
        ui::help("running max");
        ui::wrapped("rescale factor e^(m_old - m_new) = e^(%s) = %s", ui::fixed(st.m_before - st.m_after, 4).c_str(),
                    ui::fixed(st.rescale, 6).c_str());
        if (st.rescale == 1.0) ImGui::TextDisabled("(the max did not grow: nothing to correct)");
        ui::wrapped("running sum l: %s x %s = %s, plus this block's %s = %s", ui::fixed(st.l_before, 4).c_str(),
                    ui::fixed(st.rescale, 4).c_str(), ui::fixed(st.l_before * st.rescale, 4).c_str(),
                    ui::fixed(block_sum, 4).c_str(), ui::fixed(st.l_after, 4).c_str());
        ui::help("running sum");
    }
    ImGui::Spacing();
    ImGui::TextUnformatted(sm.with_values ? "accumulator (sum of e^(s - m) V_j so far)"
                                          : "accumulator (unnormalised weight of each key so far)");
    ui::help("accumulator");
    ui::wrapped("before: %s", vec_text(st.acc_before, 3).c_str());
    ui::wrapped("x %s: %s", ui::fixed(st.rescale, 4).c_str(), vec_text(st.acc_rescaled, 3).c_str());
    ui::wrapped("after:  %s", vec_text(st.acc_after, 3).c_str());
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ui::wrapped("%s", sm.with_values ? "Final output = accumulator / l = softmax(s) V."
                                     : "Final output = accumulator / l: the softmax weights.");
    ImGui::PopStyleColor();
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("result", ImVec2(0, 0), true);
    ImGui::TextUnformatted("Streamed vs plain softmax (float32)");
    ui::help("online softmax");
    int64_t ulp_max = 0;
    double abs_max = 0;
    if (ImGui::BeginTable("cmp", 5, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_ScrollY,
                          ImVec2(0, ImGui::GetContentRegionAvail().y - fs * 2.6f))) {
        ImGui::TableSetupColumn(sm.with_values ? "output" : "key");
        ImGui::TableSetupColumn("plain");
        ImGui::TableSetupColumn("streamed");
        ImGui::TableSetupColumn("|diff|");
        ImGui::TableSetupColumn("ulp");
        ImGui::TableHeadersRow();
        for (size_t k = 0; k < sm.plain.size(); ++k) {
            const double d = std::fabs(sm.plain[k] - sm.streamed[k]);
            const int64_t u = sim::ulp_distance(sim::DType::fp32, static_cast<float>(sm.plain[k]),
                                                static_cast<float>(sm.streamed[k]));
            abs_max = std::max(abs_max, d);
            ulp_max = std::max(ulp_max, u);
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%zu", k + 1);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::fixed(sm.plain[k], 7).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::fixed(sm.streamed[k], 7).c_str());
            ImGui::TableNextColumn();
            char b[32];
            std::snprintf(b, sizeof b, "%.1e", d);
            ImGui::TextUnformatted(d == 0 ? "0" : b);
            ImGui::TableNextColumn();
            ImGui::Text("%lld", static_cast<long long>(u));
        }
        ImGui::EndTable();
    }
    char b[64];
    std::snprintf(b, sizeof b, "%.2e", sm.max_abs_diff);
    ImGui::Text("max abs difference: %s", sm.max_abs_diff == 0 ? "0" : b);
    ui::help("max abs");
    ImGui::SameLine(0, fs * 2);
    ImGui::Text("max ulp: %lld", static_cast<long long>(sm.max_ulp));
    ui::help("ulp");
    ImGui::EndChild();
}

}  // namespace viz
