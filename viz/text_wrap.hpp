// viz/text_wrap.hpp — breaking text into lines at spaces only (no GL: unit-tested).
//
// ImGui's own TextWrapped may break after '.' or ',', which splits numbers ("168." / "6 us",
// "8," / "192"). Here a line ends only at a space or a newline; a word wider than the line stays
// whole on a line of its own (and the caller shows the full text in a tooltip when it is clipped).
#pragma once
#include <functional>
#include <string>
#include <string_view>
#include <vector>

namespace viz {

// `width(s)`: how wide s draws. Lines keep their words' order; spaces at a break are dropped.
std::vector<std::string> wrap_at_spaces(std::string_view text, float max_width,
                                        const std::function<float(std::string_view)>& width);

}  // namespace viz
