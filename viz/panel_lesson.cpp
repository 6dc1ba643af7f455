// viz/panel_lesson.cpp — the current lesson step's text, with Back / Next and the lesson list.
#include <algorithm>
#include <string>
#include <vector>

#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

// The exercise box: the prompt, the answer field, Check (and for a prediction, Skip), the verdict.
void draw_exercise(const LessonDoc& L, ViewState& v) {
    const ExerciseDoc& ex = *L.exercise;
    ExerciseState& st = v.exercises[L.id];
    ImGui::Separator();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
    ui::wrapped("%s", ex.predict ? (st.answered || st.skipped ? "Your prediction"
                                                              : "Predict first: the next steps show the answer")
                                 : "Exercise");
    ImGui::PopStyleColor();
    ui::lesson_text(ex.prompt);
    char buf[256] = {};
    st.typed.copy(buf, sizeof buf - 1);
    ImGui::SetNextItemWidth(-ImGui::CalcTextSize("  Check  Skip  ").x - 16);
    const bool enter = ImGui::InputTextWithHint("##answer", answer_format(ex).c_str(), buf, sizeof buf,
                                                ImGuiInputTextFlags_EnterReturnsTrue);
    ui::mark_text_field();
    st.typed = buf;
    ImGui::SameLine();
    if (ImGui::Button("Check") || enter) {
        st = submit_answer(ex, st);
        // a checked design opens its own run beside the reference (the Compare view, design_strip)
        if (st.design) {
            v.design_shown = st.design;
            v.design_apply = true;
            v.edit = st.design->params;
        }
    }
    if (ex.predict && !st.answered && !st.skipped) {
        ImGui::SameLine();
        if (ImGui::Button("Skip")) st.skipped = true;
    }
    if (!st.message.empty()) {
        const ImU32 c = !st.answered ? ui::okabe::vermillion : st.passed ? ui::okabe::green : ui::okabe::yellow;
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(c));
        ui::wrapped("%s", st.message.c_str());
        ImGui::PopStyleColor();
    }
    if (ex.predict && !st.answered && !st.skipped)
        ImGui::TextDisabled("Next opens once you have made a prediction (or pressed Skip).");
}

}  // namespace

int draw_lesson_panel(const LessonLibrary& lib, ViewState& v) {
    int go = -1;
    if (lib.lessons.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("No lessons: %s", lib.error.c_str());
        ImGui::PopStyleColor();
        return go;
    }
    v.lesson = std::clamp(v.lesson, 0, static_cast<int>(lib.lessons.size()) - 1);
    const LessonDoc& L = lib.lessons[static_cast<size_t>(v.lesson)];
    ImGui::SetNextItemWidth(-1);
    // the list shows the number only (a title cut at the pane's edge read "10. Simulated against
    // measured, on a"); the title wraps under it
    const std::string preview = "Lesson " + std::to_string(v.lesson + 1) + " of " + std::to_string(lib.lessons.size());
    // HeightLargest: all twelve lessons in the list at 1280x800, no scrolling inside it
    if (ImGui::BeginCombo("##lesson", preview.c_str(), ImGuiComboFlags_HeightLargest)) {
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
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::sky));
    ui::wrapped("%s", L.title.c_str());
    ImGui::PopStyleColor();
    std::vector<int> steps;
    for (const auto& l : lib.lessons) steps.push_back(static_cast<int>(l.steps.size()));
    if (!L.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("This lesson could not be loaded:\n%s", L.error.c_str());
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
    // Back and Next cross into the previous / next lesson at a lesson's ends
    const bool first = v.lesson == 0 && v.lesson_step == 0;
    const bool last = v.lesson + 1 >= static_cast<int>(lib.lessons.size()) && v.lesson_step + 1 >= n;
    ImGui::BeginDisabled(first);
    // short labels: Back, Next and the counter fit the pane's width at 1280x800 and at 2x zoom
    if (ImGui::Button("< Back") && lesson_back(v.lesson, v.lesson_step, steps)) go = v.lesson_step;
    if (v.lesson_step == 0 && ImGui::IsItemHovered()) ImGui::SetTooltip("opens the previous lesson's last step");
    ImGui::EndDisabled();
    ImGui::SameLine();
    ImGui::Text("lesson step %d of %d", v.lesson_step + 1, n);
    ImGui::SameLine();
    // a prediction keeps the steps that reveal its number closed until the learner has predicted
    const ExerciseDoc* ex = L.exercise ? &*L.exercise : nullptr;
    const bool locked = !next_step_open(lib, v);
    ImGui::BeginDisabled(last || locked);
    if (ImGui::Button("Next >") && lesson_next(v.lesson, v.lesson_step, steps)) go = v.lesson_step;
    if (v.lesson_step + 1 >= n && !last && ImGui::IsItemHovered()) ImGui::SetTooltip("opens the next lesson");
    ImGui::EndDisabled();
    if (locked) {
        if (ImGui::IsItemHovered(ImGuiHoveredFlags_AllowWhenDisabled))
            ImGui::SetTooltip("Make your prediction first (below the step's text), or press Skip there.");
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
        const int asked = ex ? exercise_step(*ex, n) : 0;
        if (v.lesson_step == asked)
            ui::wrapped("Predict first: type your answer in the box below, then Next opens.");
        else  // reached past the question (Back from the next lesson, or --step): say where it is asked
            ui::wrapped(
                "Predict first: the question is on step %d of this lesson (Back to it, or Skip there); "
                "then Next opens.",
                asked + 1);
        ImGui::PopStyleColor();
    }
    // The step's text scrolls in a child of its own: the lesson list and Back / Next above it and the
    // answer field below it stay in view. A step opens with its text at the top.
    const bool asks = ex && v.lesson_step == exercise_step(*ex, n);
    const float fs = ImGui::GetFontSize();
    const float box_h = asks ? std::min(ImGui::GetContentRegionAvail().y * 0.55f, fs * 10.0f) : 0.0f;
    ImGui::BeginChild("step_text", ImVec2(0, asks ? -box_h : 0.0f), false, ImGuiWindowFlags_HorizontalScrollbar);
    if (v.text_lesson != v.lesson || v.text_step != v.lesson_step) {
        ImGui::SetScrollY(0);
        ImGui::SetScrollX(0);
        v.text_lesson = v.lesson;
        v.text_step = v.lesson_step;
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
    ui::wrapped("%s", s.title.c_str());
    ImGui::PopStyleColor();
    if (v.own_params && s.params) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::sky));
        ui::wrapped("The views show your own parameters, not this step's.");
        ImGui::PopStyleColor();
        if (ImGui::SmallButton("Back to the lesson's setup")) go = v.lesson_step;
    }
    ui::lesson_text(s.text);
    ImGui::EndChild();
    if (asks) {
        ImGui::BeginChild("answer_box", ImVec2(0, 0), false);
        draw_exercise(L, v);
        ImGui::EndChild();
    }
    return go;
}

}  // namespace viz
