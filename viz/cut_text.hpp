// viz/cut_text.hpp — finding the text a frame draws cut by its clip rectangle, GL-free (unit-tested;
// the app's --tour runs it on every lesson step's frame, tests/viz/test_app_smoke.cpp checks none).
//
// Dear ImGui draws a glyph only where it meets the clip rectangle: a line of text running past a
// window's, a child's or a table cell's edge leaves a glyph straddling that edge (or, where ImGui
// clips on the CPU, in buttons, combo boxes and sliders, a glyph trimmed to it). The app reads the
// glyphs back from the frame's draw data (viz/cut_text_imgui.cpp) and asks here which lines of text
// have such a glyph, and what those lines say.
#pragma once
#include <array>
#include <string>
#include <vector>

struct ImDrawData;  // imgui.h

namespace viz {

struct DrawnGlyph {
    float x0 = 0, x1 = 0;            // the glyph's quad on screen, horizontally
    float top = 0, size = 0;         // the top of its line of text and the font's size (its line height)
    float clip_x0 = 0, clip_x1 = 0;  // the draw command's clip rectangle, horizontally
    unsigned codepoint = 0;
    bool trimmed = false;   // cut to a clip rectangle on the CPU (the quad shows part of the glyph)
    int list = 0;           // the draw list (one a window) it belongs to
    bool in_field = false;  // inside a text field (which scrolls to its cursor): never counted as cut
};

// Glyphs in drawing order. A glyph (not in a field) is cut when it crosses its clip rectangle's left or right edge by
// more than `tolerance` pixels, or was trimmed. A line of text is a run of consecutive glyphs of one
// list on one line (the same top), each starting after the previous one; a space is put where the
// gap between two glyphs is wider than a fifth of the font's size (a space is not drawn). Returns
// the text of every line with a cut glyph, in drawing order.
std::vector<std::string> cut_lines(const std::vector<DrawnGlyph>& glyphs, float tolerance = 1.5f);

// (In the app only: viz/cut_text_imgui.cpp.) The glyphs of a frame's draw data, read back from its
// quads through the font atlas, less those of windows that scroll sideways (their text is reached by
// scrolling, not cut); those inside one of `fields` (x0, y0, x1, y1) marked in_field.
std::vector<DrawnGlyph> drawn_glyphs(const ImDrawData& dd, const std::vector<std::array<float, 4>>& fields);

}  // namespace viz
