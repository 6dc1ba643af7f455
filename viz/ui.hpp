// viz/ui.hpp — small drawing helpers shared by the panels: the Okabe–Ito palette, tensor colours,
// "(?)" help markers from the glossary, number formatting.
#pragma once
#include <imgui.h>

#include <array>
#include <string>
#include <string_view>
#include <vector>

#include "sim/simulate.hpp"
#include "sim/trace.hpp"

namespace viz::ui {

// Okabe & Ito's colour-blind-safe palette.
namespace okabe {
inline constexpr ImU32 orange = IM_COL32(230, 159, 0, 255);
inline constexpr ImU32 sky = IM_COL32(86, 180, 233, 255);
inline constexpr ImU32 green = IM_COL32(0, 158, 115, 255);
inline constexpr ImU32 yellow = IM_COL32(240, 228, 66, 255);
inline constexpr ImU32 blue = IM_COL32(0, 114, 178, 255);
inline constexpr ImU32 vermillion = IM_COL32(213, 94, 0, 255);
inline constexpr ImU32 purple = IM_COL32(204, 121, 167, 255);
inline constexpr ImU32 grey = IM_COL32(153, 153, 153, 255);
}  // namespace okabe

ImU32 tensor_colour(sim::Tensor t);
ImU32 algo_colour(sim::Algo a);
ImU32 with_alpha(ImU32 c, int alpha);
ImU32 mix(ImU32 a, ImU32 b, float t);  // t = 0: a, 1: b
inline constexpr ImU32 text_dim = IM_COL32(170, 170, 180, 255);
inline constexpr ImU32 text_col = IM_COL32(235, 235, 240, 255);
inline constexpr ImU32 panel_bg = IM_COL32(40, 42, 50, 255);
inline constexpr ImU32 cell_empty = IM_COL32(62, 64, 74, 255);

// SameLine when an item `w` pixels wide still fits on the line (after `spacing`; < 0: the style's);
// otherwise the item starts the next line (a line of controls at 2x zoom wraps instead of being cut).
void same_line_if_fits(float w, float spacing = -1);
// A "(?)" after the last item (on the next line where it does not fit), showing the glossary entry
// for `term` on hover.
void help(std::string_view term);
// Text followed by its "(?)".
void term(const char* label, std::string_view term);

std::string bytes(double b);    // "128.00 MiB"
std::string flops(double f);    // "8.59 GFLOP"
std::string count(int64_t v);   // "1,234,567"
std::string seconds(double s);  // "12.3 µs"
std::string fixed(double x, int digits);

// ImGui::TextWrapped, but lines break at spaces only (never inside "168.6" or "8,192"); a word
// wider than the region is clipped and the whole text shows in a tooltip on hover.
void wrapped(const char* fmt, ...) IM_FMTARGS(1);
// A lesson's text: prose wrapped as `wrapped` does, its preformatted blocks (lines that start with a
// space) kept as written and its tables' columns placed at measured widths (text_wrap.hpp).
void lesson_text(const std::string& text);
// A line that may be clipped (a fixed-width column, a narrow window): the full text on hover.
void text_clipped(const std::string& s);

// A text field whose text may be longer than the field (it scrolls to the cursor as fields do): call
// right after the field; the tour's check for cut text (cut_text.hpp) leaves the field's text out.
void mark_text_field();
// The fields marked since the last call, as screen rectangles (x0, y0, x1, y1); clears them.
std::vector<std::array<float, 4>> take_text_fields();

// Draw text centred in [a, b] on a draw list.
void text_centred(ImDrawList* dl, ImVec2 a, ImVec2 b, ImU32 col, const std::string& s);

// A time axis along [x0, x1] at height y for [0, t_max] seconds, ticks labelled in `unit` seconds
// (1e-6: µs) as many as fit, labels kept inside [x0, x1]; the unit's name after the axis's end
// (unit_below = false) or under its last label (true).
void time_axis(ImDrawList* dl, float x0, float x1, float y, double t_max, double unit, const char* unit_name,
               bool unit_below);

}  // namespace viz::ui
