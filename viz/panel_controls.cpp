// viz/panel_controls.cpp — play / pause, step, scrub, speed; the problem's parameters with the
// simulator's refusal shown inline (the last good simulation stays on screen).
#include <string>

#include "sim/dtype.hpp"
#include "sim/machine.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {
// A whole-number field whose - button stops at `lo`, the smallest legal value (d stepped below
// zero by 16 before). Sets `enter` when the learner pressed Enter in it.
bool input_i64(const char* label, int64_t* v, int64_t step, int64_t lo, bool& enter) {
    const bool changed = ImGui::InputScalar(label, ImGuiDataType_S64, v, &step, &step, "%lld");
    if (*v < lo) *v = lo;
    if (ImGui::IsItemDeactivated() && ImGui::IsKeyPressed(ImGui::GetKeyIndex(ImGuiKey_Enter))) enter = true;
    return changed;
}
}  // namespace

bool draw_controls_panel(const RunSet* rs, bool busy, float progress, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    bool apply = false;
    if (rs && animated(v.panel)) {
        const Timeline& tl = rs->timeline(driver(*rs, v.panel, v.algo, v.columns));
        if (v.answer_hidden) {
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
            ui::wrapped("Predict first (in the lesson pane): the animation moves on once you have.");
            ImGui::PopStyleColor();
        }
        ImGui::BeginDisabled(v.answer_hidden);
        if (ImGui::Button("|<")) go_home(v);
        ImGui::SameLine();
        if (ImGui::Button("<")) step_back(v, tl);
        ImGui::SameLine();
        if (ImGui::Button(v.playing ? "Pause" : "Play", ImVec2(fs * 4, 0))) {
            if (!v.playing && v.cursor.step >= last_step(tl) && v.cursor.frac >= 1.0) v.cursor = {0, 0.0};
            v.playing = !v.playing;
        }
        ImGui::SameLine();
        if (ImGui::Button(">")) step_forward(v, tl);
        ImGui::SameLine();
        if (ImGui::Button(">|")) go_end(v, tl);
        ImGui::SameLine();
        ImGui::TextDisabled("F1: keys");
        int64_t s = v.cursor.step + 1, lo = 1, hi = last_step(tl) + 1;  // counted from 1 on screen
        // the shared-clock views count the steps of the longest column shown: name it
        const bool shared = v.panel == Panel::compare || v.panel == Panel::scores;
        // named above the slider, which shows the numbers only (a slider's text does not wrap: at 2x zoom
        // "standard animation step 1 of 936" was cut)
        if (shared)
            ui::wrapped("Animation step, in %s's steps (the longest shown):",
                        std::string(sim::algo_name(driver(*rs, v.panel, v.algo, v.columns))).c_str());
        else
            ImGui::TextUnformatted("Animation step:");
        const std::string fmt = "%lld of " + ui::count(tl.steps_total);
        ImGui::SetNextItemWidth(-fs * 2.2f);
        if (ImGui::SliderScalar("##step", ImGuiDataType_S64, &s, &lo, &hi, fmt.c_str(), ImGuiSliderFlags_AlwaysClamp))
            user_scrub(v, tl, s - 1);
        ImGui::EndDisabled();
        ui::help("step");
        float sp = static_cast<float>(v.speed);
        ImGui::SetNextItemWidth(-fs * 3.5f);
        // AlwaysClamp: a value typed with Ctrl+click stays in range too (a negative speed stuck Play)
        if (ImGui::SliderFloat("speed", &sp, kMinSpeed, kMaxSpeed, "%.2f steps/s",
                               ImGuiSliderFlags_Logarithmic | ImGuiSliderFlags_AlwaysClamp))
            v.speed = clamp_speed(sp);
    } else if (v.panel == Panel::softmax) {
        ImGui::TextDisabled("Left/right arrows step through the blocks.");
    }
    ImGui::Separator();
    // The button and any refusal first: at 1280x800 the fields below reach past the fold, and a
    // refusal under them went unseen.
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Problem");
    ImGui::SameLine();
    if (ImGui::Button("Simulate", ImVec2(fs * 6, 0))) apply = true;
    if (busy) {
        ImGui::SameLine();
        ImGui::ProgressBar(progress, ImVec2(-1, 0), "simulating...");
    } else if (rs) {
        ImGui::SameLine();
        ImGui::TextDisabled("took %s", ui::seconds(rs->seconds).c_str());
    }
    if (!v.param_error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not applied: %s", v.param_error.c_str());
        ImGui::PopStyleColor();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
        ui::wrapped("(the views still show the last good simulation)");
        ImGui::PopStyleColor();
    }
    Params& p = v.edit;
    // fields differ from what the views show: say so until Simulate or Enter applies them
    Params shown = rs ? rs->params : p;
    shown.algo = p.algo;  // the algorithm shown is a view choice: all three are simulated
    if (rs && !(p == shown) && !busy) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
        ui::wrapped("Not applied yet: press Enter in a field or Simulate.");
        ImGui::PopStyleColor();
    }
    ImGui::PushItemWidth(fs * 8);
    bool enter = false;
    input_i64("N (tokens)", &p.seq, 256, 1, enter);
    ui::help("N");
    input_i64("d (head dim)", &p.head_dim, 16, 1, enter);
    ui::help("d");
    input_i64("B_r (0: rule)", &p.block_rows, 16, 0, enter);
    ui::help("B_r");
    input_i64("B_c (0: rule)", &p.block_cols, 16, 0, enter);
    ui::help("B_c");
    int64_t kib = p.sram_bytes / 1024;
    if (input_i64("SRAM KiB (0: GPU's)", &kib, 16, 0, enter)) p.sram_bytes = kib * 1024;
    if (enter) apply = true;
    ui::help("M");
    const char* dtypes[] = {"fp32", "fp16", "bf16"};
    int dt = static_cast<int>(p.dtype);
    if (ImGui::Combo("dtype", &dt, dtypes, 3)) p.dtype = static_cast<sim::DType>(dt);
    ui::help("dtype");
    const auto& presets = sim::machine_presets();
    if (ImGui::BeginCombo("GPU", p.gpu.c_str())) {
        for (const auto& m : presets)
            if (ImGui::Selectable(m.name.c_str(), m.name == p.gpu)) p.gpu = m.name;
        ImGui::EndCombo();
    }
    ui::help("GPU preset");
    int al = static_cast<int>(v.algo);
    const char* algos[] = {"standard", "flash1", "flash2"};
    if (ImGui::Combo("algorithm", &al, algos, 3)) {
        switch_algo(v, rs, static_cast<sim::Algo>(al));
        p.algo = v.algo;
    }
    ui::help(algos[al]);
    if (ImGui::Checkbox("causal", &p.causal) && !p.causal) p.window = 0;  // a window is a causal mask
    ui::help("causal");
    if (p.window > 0) {  // set by a lesson's config: no field of its own, but shown and removable
        ImGui::TextDisabled("sliding window: %lld keys", static_cast<long long>(p.window));
        ImGui::SameLine();
        if (ImGui::SmallButton("no window")) p.window = 0;
    }
    {
        ImGui::AlignTextToFramePadding();
        ImGui::TextUnformatted("pass:");
        const char* names[] = {"forward", "backward", "both"};
        for (int k = 0; k < 3; ++k) {
            ImGui::SameLine();
            if (ImGui::RadioButton(names[k], static_cast<int>(p.pass) == k)) {
                p.pass = static_cast<sim::Pass>(k);
                apply = true;  // a pass is a view choice: simulate it at once
            }
        }
        ui::help("dO");
    }
    ImGui::PopItemWidth();
    return apply;
}

void draw_help_overlay(ViewState& v) {
    if (!v.show_help) return;
    const ImGuiViewport* vp = ImGui::GetMainViewport();
    ImGui::SetNextWindowPos(ImVec2(vp->WorkPos.x + vp->WorkSize.x * 0.5f, vp->WorkPos.y + vp->WorkSize.y * 0.5f),
                            ImGuiCond_Always, ImVec2(0.5f, 0.5f));
    ImGui::SetNextWindowBgAlpha(0.96f);
    if (ImGui::Begin("Keyboard", &v.show_help, ImGuiWindowFlags_AlwaysAutoResize | ImGuiWindowFlags_NoCollapse)) {
        ImGui::PushStyleVar(ImGuiStyleVar_CellPadding, ImVec2(ImGui::GetFontSize() * 0.6f, 2));
        if (ImGui::BeginTable("keys", 2, ImGuiTableFlags_RowBg)) {
            const char* rows[][2] = {{"Space", "play / pause"},
                                     {"Right arrow", "next step (softmax view: next block)"},
                                     {"Left arrow", "previous step (softmax view: previous block)"},
                                     {"Home / End", "first / last step"},
                                     {"Page Down / Page Up", "next / previous lesson step"},
                                     {"F1 or ?", "this help"},
                                     {"Esc", "close this help"},
                                     {"F11 or Alt+Enter", "full screen"},
                                     {"Ctrl + / Ctrl - / Ctrl 0", "zoom in / out / back to 100%"},
                                     {"H", "hide / show the lesson and the controls"},
                                     {"P", "save the view as a PNG, copy the command that reopens it"},
                                     {"Q", "quit"}};
            for (auto& r : rows) {
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(r[0]);
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(r[1]);
            }
            ImGui::EndTable();
        }
        // the views: the number row, 1-9, 0, - and = (panel_of_key), three key-and-view pairs a row
        ImGui::TextUnformatted("The views (the keys of the number row):");
        if (ImGui::BeginTable("view keys", 3, ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit)) {
            for (int k = 0; k < kPanelCount; ++k) {
                const Panel p = static_cast<Panel>(k);
                ImGui::TableNextColumn();
                ImGui::Text("%c  %s", panel_key(p), std::string(panel_title(p)).c_str());
            }
            ImGui::EndTable();
        }
        ImGui::PopStyleVar();
        ImGui::TextDisabled("Hover any (?) for what a term means.");
    }
    ImGui::End();
}

}  // namespace viz
