// viz/visible_area.hpp — a view's body sized to what the window shows, not to its content size.
// Below a minimum size the app gives the views' window a larger content size and scrolls it (the
// HBM boxes and side-by-side panes keep their room); a view of text and tables wraps to what is on
// screen instead, so that at 2x zoom nothing runs under the window's right edge.
#pragma once
#include <imgui.h>

#include <algorithm>

namespace viz {

// Begins a child of the visible part of the current window from the cursor (it scrolls itself);
// pair with ImGui::EndChild().
inline void begin_visible_area(const char* id) {
    const ImGuiStyle& st = ImGui::GetStyle();
    const ImVec2 win = ImGui::GetWindowPos(), size = ImGui::GetWindowSize(), at = ImGui::GetCursorScreenPos();
    const float w = size.x - (at.x - win.x) - st.WindowPadding.x - st.ScrollbarSize;
    const float h = size.y - (at.y - win.y) - st.WindowPadding.y - st.ScrollbarSize;
    const float fs = ImGui::GetFontSize();
    ImGui::BeginChild(id, ImVec2(std::max(w, fs * 10), std::max(h, fs * 6)), false);
}

}  // namespace viz
