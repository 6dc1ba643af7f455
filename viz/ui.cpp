#include "viz/ui.hpp"

#include <cstdio>

#include "report/report.hpp"
#include "viz/glossary.hpp"

namespace viz::ui {

ImU32 tensor_colour(sim::Tensor t) {
    using sim::Tensor;
    switch (t) {
        case Tensor::Q:
            return okabe::blue;
        case Tensor::K:
            return okabe::sky;
        case Tensor::V:
            return okabe::green;
        case Tensor::O:
            return okabe::purple;
        case Tensor::S:
            return okabe::vermillion;
        case Tensor::P:
            return okabe::orange;
        case Tensor::m:
        case Tensor::l:
        case Tensor::LSE:
            return okabe::yellow;
        default:
            return okabe::grey;
    }
}

ImU32 algo_colour(sim::Algo a) {
    switch (a) {
        case sim::Algo::standard:
            return okabe::vermillion;
        case sim::Algo::flash1:
            return okabe::sky;
        case sim::Algo::flash2:
            return okabe::green;
    }
    return okabe::grey;
}

ImU32 with_alpha(ImU32 c, int alpha) {
    return (c & ~IM_COL32_A_MASK) | (static_cast<ImU32>(alpha) << IM_COL32_A_SHIFT);
}

ImU32 mix(ImU32 a, ImU32 b, float t) {
    auto ch = [&](int shift) {
        const float x = static_cast<float>((a >> shift) & 0xFF), y = static_cast<float>((b >> shift) & 0xFF);
        return static_cast<ImU32>(x + (y - x) * t + 0.5f) << shift;
    };
    return ch(IM_COL32_R_SHIFT) | ch(IM_COL32_G_SHIFT) | ch(IM_COL32_B_SHIFT) | ch(IM_COL32_A_SHIFT);
}

void help(std::string_view t) {
    ImGui::SameLine(0, 4);
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
        const std::string_view g = glossary(t);
        ImGui::TextUnformatted(t.data(), t.data() + t.size());
        ImGui::Separator();
        ImGui::TextUnformatted(g.data(), g.data() + g.size());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void term(const char* label, std::string_view t) {
    ImGui::TextUnformatted(label);
    help(t);
}

std::string bytes(double b) { return report::human_bytes(b); }
std::string flops(double f) { return report::human_flops(f); }
std::string count(int64_t v) { return report::group_digits(v); }
std::string fixed(double x, int digits) {
    char b[64];
    std::snprintf(b, sizeof b, "%.*f", digits, x);
    return b;
}
std::string seconds(double s) {
    char b[64];
    if (s < 1e-6)
        std::snprintf(b, sizeof b, "%.1f ns", s * 1e9);
    else if (s < 1e-3)
        std::snprintf(b, sizeof b, "%.2f us", s * 1e6);
    else if (s < 1)
        std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
    else
        std::snprintf(b, sizeof b, "%.2f s", s);
    return b;
}

void text_centred(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, const std::string& s) {
    const ImVec2 sz = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2((a.x + b.x - sz.x) * 0.5f, (a.y + b.y - sz.y) * 0.5f), col, s.c_str());
}

}  // namespace viz::ui
