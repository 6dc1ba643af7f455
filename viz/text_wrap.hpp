// viz/text_wrap.hpp — breaking text into lines at spaces only, and laying out a lesson's
// preformatted lines (tables) for a proportional font (no GL: unit-tested).
//
// ImGui's own TextWrapped may break after '.' or ',', which splits numbers ("168." / "6 us",
// "8," / "192"). Here a line ends only at a space or a newline; a word wider than the line stays
// whole on a line of its own (and the caller shows the full text in a tooltip when it is clipped).
//
// A lesson's text (lessons/lib/render.cpp's reflow) keeps lines that start with a space as
// written and lines up a table's columns with spaces, which holds in a terminal's fixed-width font
// and not in the app's proportional one (where wrapping also collapsed the runs of spaces, and the
// columns ran together). So the app cuts such a block into the same cells (runs of two or more
// spaces) and places each column at a measured x.
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace viz {

// `width(s)`: how wide s draws. Lines keep their words' order; spaces at a break are dropped.
std::vector<std::string> wrap_at_spaces(std::string_view text, float max_width,
                                        const std::function<float(std::string_view)>& width);

// One drawn line: its cells, each at x from the line's start.
struct LaidCell {
    std::string text;
    float x = 0;
};
struct LaidLine {
    std::vector<LaidCell> cells;
    bool pre = false;  // from a preformatted line (not wrapped; may be wider than max_width)
};
// Lesson text for the app: prose lines wrapped at spaces to max_width (one cell each); a block of
// consecutive lines that start with a space is a table when at least two of its lines have two or
// more cells (cells split at runs of two or more spaces; each column as wide as its widest cell but
// a row's last, a gap of three spaces' width between columns, the block's indentation kept),
// otherwise each of its lines is kept whole at the block's indentation.
std::vector<LaidLine> lay_out_text(std::string_view text, float max_width,
                                   const std::function<float(std::string_view)>& width);

}  // namespace viz
