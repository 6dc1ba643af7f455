// viz/panel_lesson.cpp — the current lesson step's text, with Back / Next and the lesson list.
#include <algorithm>
#include <string>

#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

int draw_lesson_panel(const LessonLibrary& lib, ViewState& v) {
    int go = -1;
    if (lib.lessons.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ImGui::TextWrapped("No lessons: %s", lib.error.c_str());
        ImGui::PopStyleColor();
        return go;
    }
    v.lesson = std::clamp(v.lesson, 0, static_cast<int>(lib.lessons.size()) - 1);
    const LessonDoc& L = lib.lessons[static_cast<size_t>(v.lesson)];
    ImGui::SetNextItemWidth(-1);
    const std::string preview = std::to_string(v.lesson + 1) + ". " + L.title;
    if (ImGui::BeginCombo("##lesson", preview.c_str())) {
        for (int i = 0; i < static_cast<int>(lib.lessons.size()); ++i) {
            const std::string name = std::to_string(i + 1) + ". " + lib.lessons[static_cast<size_t>(i)].title;
            if (ImGui::Selectable(name.c_str(), i == v.lesson) && i != v.lesson) {
                v.lesson = i;
                v.lesson_step = 0;
                go = 0;
            }
        }
        ImGui::EndCombo();
    }
    if (!L.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ImGui::TextWrapped("This lesson could not be loaded:\n%s", L.error.c_str());
        ImGui::PopStyleColor();
        return go;
    }
    const int n = static_cast<int>(L.steps.size());
    if (n == 0) {
        ImGui::TextDisabled("(this lesson has no steps)");
        return go;
    }
    v.lesson_step = std::clamp(v.lesson_step, 0, n - 1);
    const LessonStep& s = L.steps[static_cast<size_t>(v.lesson_step)];
    ImGui::BeginDisabled(v.lesson_step == 0);
    if (ImGui::Button("< Back")) go = --v.lesson_step;
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Text("step %d of %d", v.lesson_step + 1, n);
    ImGui::SameLine();
    ImGui::BeginDisabled(v.lesson_step + 1 >= n);
    if (ImGui::Button("Next >")) go = ++v.lesson_step;
    ImGui::EndDisabled();
    ImGui::Spacing();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
    ImGui::TextWrapped("%s", s.title.c_str());
    ImGui::PopStyleColor();
    if (v.own_params && s.params) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::sky));
        ImGui::TextWrapped("The views show your own parameters, not this step's.");
        ImGui::PopStyleColor();
        if (ImGui::SmallButton("Back to the lesson's setup")) go = v.lesson_step;
    }
    ImGui::TextWrapped("%s", s.text.c_str());
    return go;
}

}  // namespace viz
