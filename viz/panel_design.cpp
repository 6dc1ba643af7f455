// viz/panel_design.cpp — a checked design answer's run beside the exercise's reference: the tiles,
// the HBM bytes, the steps and the ideal machine's time of each, with bars on one scale; drawn at
// the top of the Compare view, whose columns then animate the answer's run.
#include <algorithm>
#include <string>

#include "viz/design_run.hpp"
#include "viz/panels.hpp"
#include "viz/rungs.hpp"
#include "viz/ui.hpp"

namespace viz {

void draw_design_strip(const DesignRun& d, const RunSet& rs) {
    const float fs = ImGui::GetFontSize();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
    ui::wrapped("Your design beside the reference (the exercise's starting configuration), on the same problem:");
    ImGui::PopStyleColor();
    const ImGuiTableFlags tf =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
    const double most_bytes = double(std::max(d.reference.hbm_bytes, d.yours.hbm_bytes));
    const double most_s = std::max(d.reference.predicted_s, d.yours.predicted_s);
    if (ImGui::BeginTable("design_vs_reference", 6, tf)) {
        ImGui::TableSetupColumn("run", ImGuiTableColumnFlags_WidthStretch, 1.4f);
        ImGui::TableSetupColumn("tiles B_r x B_c", ImGuiTableColumnFlags_WidthStretch, 1.4f);
        ImGui::TableSetupColumn("HBM bytes", ImGuiTableColumnFlags_WidthStretch, 2.2f);
        ImGui::TableSetupColumn("steps", ImGuiTableColumnFlags_WidthStretch, 1);
        ImGui::TableSetupColumn((std::string("time, ") + kRungIdeal).c_str(), ImGuiTableColumnFlags_WidthStretch, 2.2f);
        ImGui::TableSetupColumn("vs reference", ImGuiTableColumnFlags_WidthStretch, 1.6f);
        // headers wrap at spaces (narrow columns at 2x zoom)
        ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
        for (const std::string& head :
             {std::string("run"), std::string("tiles B_r x B_c"), std::string("HBM bytes"), std::string("steps"),
              std::string("time, ") + kRungIdeal, std::string("vs reference")}) {
            ImGui::TableNextColumn();
            ui::wrapped("%s", head.c_str());
        }
        auto row = [&](const char* name, const DesignSide& s, ImU32 col) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(col), "%s", name);
            ImGui::TableNextColumn();
            ImGui::Text("%s %lld x %lld", std::string(sim::algo_name(s.algo)).c_str(),
                        static_cast<long long>(s.block_rows), static_cast<long long>(s.block_cols));
            // a value with a bar under it, on the larger of the two's scale
            auto bar = [&](const std::string& text, double x, double most) {
                ImGui::TextUnformatted(text.c_str());
                const ImVec2 p = ImGui::GetItemRectMin();
                const float w = ImGui::GetContentRegionAvail().x;
                const float len = most > 0 ? static_cast<float>(x / most) * w : 0;
                ImGui::GetWindowDrawList()->AddRectFilled(
                    ImVec2(p.x, p.y + fs * 1.05f), ImVec2(p.x + len, p.y + fs * 1.25f), ui::with_alpha(col, 200));
                ImGui::Dummy(ImVec2(1, fs * 0.3f));
            };
            ImGui::TableNextColumn();
            bar(ui::bytes(double(s.hbm_bytes)), double(s.hbm_bytes), most_bytes);
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::count(s.steps).c_str());
            ImGui::TableNextColumn();
            bar(s.predicted_s > 0 ? ui::seconds(s.predicted_s) : "not timed", s.predicted_s, most_s);
            ImGui::TableNextColumn();
            if (&s == &d.yours && d.reference.hbm_bytes > 0 && d.reference.predicted_s > 0 && s.predicted_s > 0)
                ui::wrapped("%sx the bytes, %sx the time",
                            ui::fixed(double(s.hbm_bytes) / double(d.reference.hbm_bytes), 2).c_str(),
                            ui::fixed(s.predicted_s / d.reference.predicted_s, 2).c_str());
        };
        row("reference", d.reference, ui::okabe::grey);
        row("yours", d.yours, ui::okabe::orange);
        ImGui::EndTable();
    }
    if (rs.params == d.params)
        ImGui::TextDisabled("The views below run your design (every algorithm on your tiles where it takes them).");
    else
        ImGui::TextDisabled("The views below show other parameters than your design's.");
    ImGui::Separator();
}

}  // namespace viz
