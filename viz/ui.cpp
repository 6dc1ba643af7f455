#include "viz/ui.hpp"

#include <algorithm>
#include <cstdarg>
#include <cstdio>
#include <string_view>

#include "lessons/lib/glossary.hpp"
#include "report/report.hpp"
#include "viz/ticks.hpp"
#include "viz/text_wrap.hpp"

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
        // the backward's tensors: the colour of what each is the gradient of, lightened
        case Tensor::dO:
            return mix(okabe::purple, IM_COL32(255, 255, 255, 255), 0.45f);
        case Tensor::dQ:
            return mix(okabe::blue, IM_COL32(255, 255, 255, 255), 0.45f);
        case Tensor::dK:
            return mix(okabe::sky, IM_COL32(255, 255, 255, 255), 0.5f);
        case Tensor::dV:
            return mix(okabe::green, IM_COL32(255, 255, 255, 255), 0.45f);
        case Tensor::dP:
            return mix(okabe::orange, IM_COL32(255, 255, 255, 255), 0.45f);
        case Tensor::dS:
            return mix(okabe::vermillion, IM_COL32(255, 255, 255, 255), 0.45f);
        case Tensor::D:
            return mix(okabe::yellow, IM_COL32(255, 255, 255, 255), 0.4f);
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

void same_line_if_fits(float w, float spacing) {
    if (spacing < 0) spacing = ImGui::GetStyle().ItemSpacing.x;
    const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
    if (ImGui::GetItemRectMax().x + spacing + w <= right) ImGui::SameLine(0, spacing);
}

void help(std::string_view t) {
    same_line_if_fits(ImGui::CalcTextSize("(?)").x, 4);  // at the window's edge: under the item, not cut
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
        const std::string_view g = lessons::glossary(t);
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
    if (s > 0 && s < 0.05e-9)  // below a tenth of a nanosecond: picoseconds, never "0.0 ns" for a nonzero time
        std::snprintf(b, sizeof b, "%.3g ps", s * 1e12);
    else if (s < 1e-6)
        std::snprintf(b, sizeof b, "%.1f ns", s * 1e9);
    else if (s < 1e-3)
        std::snprintf(b, sizeof b, "%.2f us", s * 1e6);
    else if (s < 1)
        std::snprintf(b, sizeof b, "%.2f ms", s * 1e3);
    else
        std::snprintf(b, sizeof b, "%.2f s", s);
    return b;
}

void wrapped(const char* fmt, ...) {
    va_list ap;
    va_start(ap, fmt);
    va_list ap2;
    va_copy(ap2, ap);
    const int n = std::vsnprintf(nullptr, 0, fmt, ap);
    va_end(ap);
    std::string text(static_cast<size_t>(std::max(0, n)), '\0');
    std::vsnprintf(text.data(), text.size() + 1, fmt, ap2);
    va_end(ap2);
    const float max_w = std::max(1.0f, ImGui::GetContentRegionAvail().x);
    const auto lines = wrap_at_spaces(
        text, max_w, [](std::string_view s) { return ImGui::CalcTextSize(s.data(), s.data() + s.size()).x; });
    bool clipped = false;
    ImGui::BeginGroup();
    for (const auto& l : lines) {
        ImGui::TextUnformatted(l.c_str(), l.c_str() + l.size());
        clipped = clipped || ImGui::CalcTextSize(l.c_str()).x > max_w;
    }
    ImGui::EndGroup();
    if (clipped && ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 35.0f);
        ImGui::TextUnformatted(text.c_str());
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

void lesson_text(const std::string& text) {
    const float max_w = std::max(1.0f, ImGui::GetContentRegionAvail().x);
    const auto lines = lay_out_text(
        text, max_w, [](std::string_view s) { return ImGui::CalcTextSize(s.data(), s.data() + s.size()).x; });
    const float x0 = ImGui::GetCursorPosX();
    bool clipped = false;
    ImGui::BeginGroup();
    for (const auto& l : lines) {
        if (l.cells.empty()) {  // a blank line
            ImGui::TextUnformatted("");
            continue;
        }
        for (size_t c = 0; c < l.cells.size(); ++c) {
            const auto& cell = l.cells[c];
            if (c == 0)
                ImGui::SetCursorPosX(x0 + cell.x);
            else
                ImGui::SameLine(x0 + cell.x);
            ImGui::TextUnformatted(cell.text.c_str(), cell.text.c_str() + cell.text.size());
            clipped = clipped || cell.x + ImGui::CalcTextSize(cell.text.c_str()).x > max_w;
        }
    }
    ImGui::EndGroup();
    if (clipped && ImGui::IsItemHovered()) {  // a table wider than the pane: the whole text, fixed-width
        ImGui::BeginTooltip();
        ImGui::TextUnformatted(text.c_str());
        ImGui::EndTooltip();
    }
}

void text_clipped(const std::string& s) {
    const float avail = ImGui::GetContentRegionAvail().x;
    ImGui::TextUnformatted(s.c_str());
    if (ImGui::CalcTextSize(s.c_str()).x > avail && ImGui::IsItemHovered()) ImGui::SetTooltip("%s", s.c_str());
}

namespace {
std::vector<std::array<float, 4>>& text_fields() {
    static std::vector<std::array<float, 4>> f;
    return f;
}
}  // namespace
void mark_text_field() {
    const ImVec2 a = ImGui::GetItemRectMin(), b = ImGui::GetItemRectMax();
    text_fields().push_back({a.x, a.y, b.x, b.y});
}
std::vector<std::array<float, 4>> take_text_fields() { return std::exchange(text_fields(), {}); }

void text_centred(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, const std::string& s) {
    const ImVec2 sz = ImGui::CalcTextSize(s.c_str());
    dl->AddText(ImVec2((a.x + b.x - sz.x) * 0.5f, (a.y + b.y - sz.y) * 0.5f), col, s.c_str());
}

void time_axis(ImDrawList* dl, float x0, float x1, float y, double t_max, double unit, const char* unit_name,
               bool unit_below) {
    const float fs = ImGui::GetFontSize();
    dl->AddLine(ImVec2(x0, y), ImVec2(x1, y), text_dim);
    const double hi = t_max / unit;
    for (double v : axis_ticks(0, hi, ticks_that_fit(x1 - x0, fs * 4.5f), TickKind::decimal)) {
        const float x = x0 + static_cast<float>(v / hi) * (x1 - x0);
        dl->AddLine(ImVec2(x, y), ImVec2(x, y + 4), text_dim);
        char b[32];
        std::snprintf(b, sizeof b, "%g", v);
        const float tw = ImGui::CalcTextSize(b).x;
        dl->AddText(ImVec2(std::max(x0, std::min(x - tw * 0.5f, x1 - tw)), y + 5), text_dim, b);
    }
    if (unit_below)
        dl->AddText(ImVec2(x1 - ImGui::CalcTextSize(unit_name).x, y + 5 + fs), text_dim, unit_name);
    else
        dl->AddText(ImVec2(x1 + fs * 0.4f, y + 5), text_dim, unit_name);
}

}  // namespace viz::ui
