// viz/panel_softmax.cpp — one query row's online softmax, block by block: scores as bars grouped by
// block, the running max as a line, the running sum, the rescale e^(m_old - m_new) applied to the
// carried sum and accumulator, and at the end the streamed result beside the plain softmax.
#include <imgui.h>
#include <imgui_stdlib.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/dtype.hpp"
#include "sim/softmax.hpp"
#include "viz/panels.hpp"
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
    size_t n = 0;
    double lo = 0, hi = 0;
    for (const auto& b : blocks)
        for (double s : b.scores) ++n, lo = std::min(lo, s), hi = std::max(hi, s);
    hi = std::max(hi, lo + 1.0) * 1.15;
    const float left = fs * 3.0f, top = fs * 2.4f, bottom = fs * 3.6f;
    const ImVec2 a(p0.x + left, p0.y + top), b(p1.x - fs, p1.y - bottom);
    auto ypx = [&](double v) { return b.y - static_cast<float>((v - lo) / (hi - lo)) * (b.y - a.y); };
    const float gap = fs * 0.8f;
    const float bw =
        (b.x - a.x - gap * static_cast<float>(blocks.size() - 1)) / static_cast<float>(std::max<size_t>(1, n));
    dl->AddLine(ImVec2(a.x, ypx(0)), ImVec2(b.x, ypx(0)), IM_COL32(255, 255, 255, 90));
    for (double v = std::ceil(lo); v <= hi; v += 1.0) {
        const std::string t = ui::fixed(v, 0);
        dl->AddText(ImVec2(a.x - ImGui::CalcTextSize(t.c_str()).x - 6, ypx(v) - fs * 0.5f), ui::text_dim, t.c_str());
        dl->AddLine(ImVec2(a.x, ypx(v)), ImVec2(b.x, ypx(v)), IM_COL32(255, 255, 255, 20));
    }
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
        for (size_t i = 0; i < B.scores.size(); ++i) {
            const double s = B.scores[i];
            const bool is_max = s == B.block_max;
            ImU32 col = is_max ? ui::okabe::vermillion : ui::okabe::blue;
            if (!seen) col = ui::with_alpha(col, 70);
            const float x0 = x + 2, x1 = x + bw - 2;
            dl->AddRectFilled(ImVec2(x0, std::min(ypx(s), ypx(0))), ImVec2(x1, std::max(ypx(s), ypx(0))), col, 2);
            const std::string t = ui::fixed(s, 2);
            ui::text_centred(dl, ImVec2(x0, ypx(std::max(s, 0.0)) - fs * 1.2f), ImVec2(x1, ypx(std::max(s, 0.0))),
                             seen ? ui::text_col : ui::text_dim, t);
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
        // per-block state below the axis
        const std::string l1 = "block " + std::to_string(j + 1);
        const std::string l2 = seen ? "m = " + ui::fixed(B.running_max_after, 2) : "m = ?";
        const std::string l3 = seen ? "l = " + ui::fixed(B.running_sum_after, 4) : "l = ?";
        dl->AddText(ImVec2(bx0, b.y + fs * 0.2f), ui::text_col, l1.c_str());
        dl->AddText(ImVec2(bx0, b.y + fs * 1.2f), seen ? ui::okabe::yellow : ui::text_dim, l2.c_str());
        dl->AddText(ImVec2(bx0, b.y + fs * 2.2f), seen ? ui::text_col : ui::text_dim, l3.c_str());
        x += gap;
    }
}

}  // namespace

void draw_softmax_panel(ViewState& v) {
    const float fs = ImGui::GetFontSize();
    ImGui::TextUnformatted("Scores of one query row:");
    ui::help("online softmax");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(fs * 10, ImGui::GetContentRegionAvail().x - fs * 19));
    if (ImGui::InputText("##scores", &v.scores_text)) {
        if (apply_scores_text(v)) v.softmax_focus = -1;
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 5);
    if (ImGui::SliderInt("block", &v.softmax_block, 1, 16)) v.softmax_focus = -1;
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
    if (ImGui::InputTextWithHint("##values", "e.g. 0,1; 1,0; 2,1; ...  (empty: the output is the weights)",
                                 &v.values_text))
        if (apply_scores_text(v)) v.softmax_focus = -1;
    if (!v.softmax_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ImGui::TextWrapped("Not applied: %s (showing the last good scores).", v.softmax_error.c_str());
        ImGui::PopStyleColor();
    }
    v.softmax_block = std::clamp(v.softmax_block, 1, 64);
    sim::StreamedSoftmax sm;
    try {
        sm = sim::stream_softmax(v.softmax_scores, v.softmax_block, v.softmax_values, sim::Precision::fp32);
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
        ImGui::Text("block %d of %d", v.softmax_focus + 1, nb);

    const ImVec2 avail = ImGui::GetContentRegionAvail();
    draw_bars(sm, v.softmax_focus, ImVec2(avail.x, std::max(fs * 12, avail.y * 0.42f)));

    const int j = v.softmax_focus < 0 ? nb - 1 : v.softmax_focus;
    const auto& B = sm.record.blocks[static_cast<size_t>(j)];
    ImGui::Spacing();
    ImGui::BeginChild("state", ImVec2(avail.x * 0.5f - 4, 0), true);
    ImGui::Text("Block %d: what the carried state goes through", j + 1);
    ui::help("rescale");
    double block_sum = 0;
    for (double s : B.scores) block_sum += std::exp(s - B.running_max_after);
    if (!std::isfinite(B.running_max_before)) {
        ImGui::TextWrapped("First block: nothing is carried yet. m = max of the block = %s, l = sum of e^(s - m) = %s.",
                           ui::fixed(B.running_max_after, 4).c_str(), ui::fixed(B.running_sum_after, 4).c_str());
    } else {
        ImGui::TextWrapped("running max m: %s -> %s", ui::fixed(B.running_max_before, 4).c_str(),
                           ui::fixed(B.running_max_after, 4).c_str());
        ui::help("running max");
        ImGui::TextWrapped("rescale factor e^(m_old - m_new) = e^(%s) = %s",
                           ui::fixed(B.running_max_before - B.running_max_after, 4).c_str(),
                           ui::fixed(B.rescale, 6).c_str());
        if (B.rescale == 1.0) ImGui::TextDisabled("(the max did not grow: nothing to correct)");
        ImGui::TextWrapped("running sum l: %s x %s = %s, plus this block's %s = %s",
                           ui::fixed(B.running_sum_before, 4).c_str(), ui::fixed(B.rescale, 4).c_str(),
                           ui::fixed(B.running_sum_before * B.rescale, 4).c_str(), ui::fixed(block_sum, 4).c_str(),
                           ui::fixed(B.running_sum_after, 4).c_str());
        ui::help("running sum");
    }
    ImGui::Spacing();
    ImGui::TextUnformatted(sm.with_values ? "accumulator (sum of e^(s - m) V_j so far)"
                                          : "accumulator (unnormalised weight of each key so far)");
    ui::help("accumulator");
    ImGui::TextWrapped("before: %s", vec_text(B.acc_before, 3).c_str());
    ImGui::TextWrapped("x %s: %s", ui::fixed(B.rescale, 4).c_str(), vec_text(B.acc_rescaled, 3).c_str());
    ImGui::TextWrapped("after:  %s", vec_text(B.acc_after, 3).c_str());
    ImGui::TextDisabled(sm.with_values ? "Final output = accumulator / l = softmax(s) V."
                                       : "Final output = accumulator / l: the softmax weights.");
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
