// viz/panel_footprint.cpp — the memory wall: what one attention layer holds in HBM at once, per
// algorithm, against the card's memory, and the longest N that fits (sim/footprint.hpp).
#include <algorithm>
#include <string>

#include "sim/footprint.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

void draw_footprint_panel(const RunSet& rs, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    // the pass held: a training step (forward and backward) by default, as the memory wall lesson counts
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("held during:");
    const char* names[] = {"forward", "backward", "a training step (both)"};
    for (int k = 0; k < 3; ++k) {
        ImGui::SameLine();
        if (ImGui::RadioButton(names[k], v.footprint_pass == k)) v.footprint_pass = k;
    }
    // one layer as the lessons measure it: batch 1, 16 heads, the app's N, d and storage type
    sim::Problem p = rs.problem;
    p.batch = 1;
    p.heads = 16;
    const sim::Pass pass = static_cast<sim::Pass>(std::clamp(v.footprint_pass, 0, 2));
    const double card = sim::usable_memory(rs.machine);
    ui::wrapped("Held in HBM at once by one attention layer: batch 1, 16 heads, N = %s, d = %lld, %s, %s",
                ui::count(p.seq).c_str(), static_cast<long long>(p.head_dim),
                std::string(sim::dtype_name(p.dtype)).c_str(), pass_words(pass));
    ImGui::TextDisabled("against the %s's %s", rs.machine.name.c_str(), ui::bytes(card).c_str());
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float label_w = fs * 6.5f;
    const float w = std::max(fs * 10, ImGui::GetContentRegionAvail().x - label_w - fs * 9);
    const float bh = fs * 1.6f;
    double most = card;
    std::vector<sim::Footprint> fps;
    for (sim::Algo a : kAlgos) {
        try {
            fps.push_back(sim::footprint(p, a, pass));
            most = std::max(most, fps.back().total_bytes);
        } catch (const std::exception& e) {
            ui::wrapped("%s: %s", std::string(sim::algo_name(a)).c_str(), e.what());
            return;
        }
    }
    // the scale: the card's memory, or the largest footprint when one overflows it (capped at 4x the
    // card so the others stay visible; a longer bar is cut and says so)
    const double scale = std::min(most, card * 4);
    ImGui::Spacing();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    float y = p0.y;
    for (const auto& f : fps) {
        const ImU32 col = ui::algo_colour(f.algo);
        dl->AddText(ImVec2(p0.x, y + (bh - fs) * 0.5f), col, std::string(sim::algo_name(f.algo)).c_str());
        float x = p0.x + label_w;
        const float x_end = p0.x + label_w + w;
        for (const auto& t : f.tensors) {
            const float tw = static_cast<float>(t.bytes / scale) * w;
            const float x1 = std::min(x + tw, x_end);
            if (x1 > x) {
                const bool quad = t.shape.find("N, N") != std::string::npos;
                dl->AddRectFilled(ImVec2(x, y), ImVec2(x1, y + bh), ui::with_alpha(col, quad ? 255 : 140));
                dl->AddLine(ImVec2(x1, y), ImVec2(x1, y + bh), IM_COL32(20, 20, 20, 255));
                if (x1 - x > ImGui::CalcTextSize(t.name.c_str()).x + 6)
                    dl->AddText(ImVec2(x + 3, y + (bh - fs) * 0.5f), IM_COL32(0, 0, 0, 255), t.name.c_str());
            }
            x += tw;
        }
        const std::string total = ui::bytes(f.total_bytes) + (f.total_bytes > card ? "  does not fit" : "");
        dl->AddText(ImVec2(std::min(x, x_end) + 6, y + (bh - fs) * 0.5f),
                    f.total_bytes > card ? ui::okabe::vermillion : ui::text_col, total.c_str());
        y += bh + fs * 0.6f;
    }
    // the card's memory as a line across the bars
    const float xc = p0.x + label_w + static_cast<float>(card / scale) * w;
    dl->AddLine(ImVec2(xc, p0.y - 4), ImVec2(xc, y), IM_COL32(255, 255, 255, 220), 2);
    // its name right of the line, or left of it where the view ends first
    const std::string card_text = "the card: " + ui::bytes(card);
    const float card_w = ImGui::CalcTextSize(card_text.c_str()).x,
                right = ImGui::GetCursorScreenPos().x + ImGui::GetContentRegionAvail().x;
    dl->AddText(ImVec2(xc + 4 + card_w <= right ? xc + 4 : std::max(p0.x, xc - 4 - card_w), y), ui::text_dim,
                card_text.c_str());
    ImGui::Dummy(ImVec2(label_w + w, y - p0.y + fs * 1.6f));
    ImGui::TextDisabled("Dark: grows with N^2 (S, P and their gradients); light: grows with N.");
    ImGui::Separator();
    ui::wrapped("The longest N that fits on this card (the grid of eighths of a power of two):");
    for (sim::Algo a : kAlgos) {
        try {
            const sim::FitResult fit = sim::longest_fit(p, a, pass, card);
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::algo_colour(a)), "%-9s",
                               std::string(sim::algo_name(a)).c_str());
            ImGui::SameLine(fs * 6);
            if (fit.at_limit)
                ImGui::Text("N = %s and beyond (the longest the simulator takes)", ui::count(fit.longest_n).c_str());
            else
                ImGui::Text("N = %s (%s); N = %s needs %s", ui::count(fit.longest_n).c_str(),
                            ui::bytes(fit.bytes_at_longest).c_str(), ui::count(fit.next_n).c_str(),
                            ui::bytes(fit.bytes_at_next).c_str());
        } catch (const std::exception& e) { ui::wrapped("%s: %s", std::string(sim::algo_name(a)).c_str(), e.what()); }
    }
}

}  // namespace viz
