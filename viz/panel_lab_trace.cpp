// viz/panel_lab_trace.cpp — a learner's recorded tile-machine run (flashsim-app --trace FILE) in the
// memory view, beside the built-in algorithm at the same problem and tiles.
#include <imgui.h>

#include <algorithm>
#include <string>
#include <utility>

#include "viz/lab_trace.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

int64_t steps_of(const Timeline& tl) { return std::max<int64_t>(1, tl.steps_kept); }

// |< < > >| and a slider over the learner's steps (counted from 1 on screen).
void step_controls(LabTraceState& s, int64_t n) {
    int64_t& k = s.step;
    if (k < 0 || k >= n) k = n - 1;
    if (!ImGui::GetIO().WantTextInput) {  // the memory view's keys: Left/Right a step, Home/End
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_LeftArrow))) k = std::max<int64_t>(0, k - 1);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_RightArrow))) k = std::min(n - 1, k + 1);
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Home))) k = 0;
        if (ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_End))) k = n - 1;
    }
    if (ImGui::SmallButton("|<")) k = 0;
    ImGui::SameLine();
    if (ImGui::SmallButton("<")) k = std::max<int64_t>(0, k - 1);
    ImGui::SameLine();
    if (ImGui::SmallButton(">")) k = std::min(n - 1, k + 1);
    ImGui::SameLine();
    if (ImGui::SmallButton(">|")) k = n - 1;
    ImGui::SameLine();
    int shown = static_cast<int>(k + 1);
    ImGui::SetNextItemWidth(ImGui::GetFontSize() * 16);
    if (ImGui::SliderInt("step", &shown, 1, static_cast<int>(n))) k = shown - 1;
    ui::help("step");
}

// Per tensor, whole runs: the learner's reads and writes beside the built-in's; a row that differs
// in vermillion.
void counts_table(const LabRun& r) {
    const sim::Totals &a = r.trace.totals, &b = r.builtin_result().totals;
    if (!ImGui::BeginTable("labcounts", 5, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) return;
    for (const char* h : {"tensor", "yours: read", "written", "built-in: read", "written"}) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    auto row = [](const char* name, ImU32 colour, const sim::Traffic& x, const sim::Traffic& y) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colour), "%s", name);
        const bool same = x == y;
        for (int64_t v : {x.read_bytes, x.write_bytes, y.read_bytes, y.write_bytes}) {
            ImGui::TableNextColumn();
            if (same)
                ImGui::TextUnformatted(ui::count(v).c_str());
            else
                ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "%s", ui::count(v).c_str());
        }
    };
    for (int k = 0; k < sim::kTensorCount; ++k) {
        const auto t = static_cast<sim::Tensor>(k);
        if (a[t].total() == 0 && b[t].total() == 0) continue;
        row(std::string(sim::tensor_name(t)).c_str(), ui::tensor_colour(t), a[t], b[t]);
    }
    row("total (B)", ui::text_col, a.hbm_total(), b.hbm_total());
    ImGui::EndTable();
}

// One side: its title, its bytes so far, and the hierarchy at its step.
void side(const char* title, ImU32 colour, const RunSet& rs, sim::Algo algo, Replay& rp, int64_t step, ImVec2 size,
          const ViewState& v) {
    ImGui::BeginChild(title, size, false, ImGuiWindowFlags_NoScrollbar);
    const Timeline& tl = rs.timeline(algo);
    const int64_t k = std::min(step, steps_of(tl) - 1);
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(colour), "%s", title);
    ImGui::TextDisabled("step %lld of %lld, %s B moved so far", static_cast<long long>(k + 1),
                        static_cast<long long>(steps_of(tl)), ui::count(rp.totals().hbm_total().total()).c_str());
    const ImVec2 p = ImGui::GetCursorScreenPos(), sz = ImGui::GetContentRegionAvail();
    draw_hierarchy(ImGui::GetWindowDrawList(), p, ImVec2(p.x + sz.x, p.y + sz.y), rs, algo, rp, {k, 1.0}, true, v);
    ImGui::Dummy(sz);
    ImGui::EndChild();
}

}  // namespace

void draw_lab_trace_panel(LabTraceState& s, ViewState& v) {
    const LabRun& r = *s.run;
    const sim::Problem& p = r.trace.info.problem;
    const sim::Algo algo = r.trace.info.algo;
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::orange), "Lab trace");
    ImGui::SameLine();
    ui::text_clipped(r.trace.path);
    ImGui::SameLine();
    ImGui::TextDisabled("N = %lld, d = %lld, %s%s", static_cast<long long>(p.seq), static_cast<long long>(p.head_dim),
                        std::string(sim::dtype_name(p.dtype)).c_str(), mask_words(p).c_str());
    ImGui::SameLine();
    if (ImGui::SmallButton("Close")) {
        s.close();
        return;
    }
    step_controls(s, steps_of(r.mine_timeline()));
    for (const auto& [line, colour] :
         {std::pair{&r.mine_line, ui::okabe::orange}, {&r.builtin_line, ui::algo_colour(algo)}}) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(colour));
        ui::wrapped("%s", line->c_str());
        ImGui::PopStyleColor();
    }
    counts_table(r);
    ImGui::TextDisabled("Whole runs, bytes between HBM and SRAM; a row in red differs. Below: both at the same step.");
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const ImVec2 half((avail.x - 8) * 0.5f, std::max(avail.y, ImGui::GetFontSize() * 16));
    side("yours", ui::okabe::orange, r.mine, algo, *s.mine_rp, s.step, half, v);
    ImGui::SameLine();
    side(r.builtin_name().c_str(), ui::algo_colour(algo), r.builtin, algo, *s.builtin_rp, s.step, half, v);
}

bool draw_lab_trace_opener(LabTraceState& s) {
    bool opened = false;
    if (!ImGui::CollapsingHeader("Lab trace", s.shown() || !s.error.empty() ? ImGuiTreeNodeFlags_DefaultOpen : 0))
        return false;
    ImGui::TextDisabled("a run saved by TileMachine.save_trace");
    char buf[512] = {};
    s.path.copy(buf, sizeof buf - 1);
    ImGui::SetNextItemWidth(-ImGui::CalcTextSize(" Open ").x - 16);
    const bool enter =
        ImGui::InputTextWithHint("##tracepath", "run.json", buf, sizeof buf, ImGuiInputTextFlags_EnterReturnsTrue);
    s.path = buf;
    ImGui::SameLine();
    if ((ImGui::Button("Open") || enter) && !s.path.empty()) opened = s.open(s.path);
    if (!s.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("%s", s.error.c_str());
        ImGui::PopStyleColor();
    }
    return opened;
}

}  // namespace viz
