// viz/chart.hpp — the app's two chart types, drawn with ImGui draw lists: lines on (log) axes and
// grouped bars. All chart code lives here.
#pragma once
#include <imgui.h>

#include <functional>
#include <string>
#include <vector>

namespace viz::chart {

struct Line {
    std::string label;
    ImU32 colour;
    std::vector<double> x, y;  // same length; only finite, positive values on log axes
    bool dashed = false;
    bool points_only = false;  // markers without lines (e.g. measurements beside simulated lines)
};

struct Axes {
    std::string title, x_label, y_label;
    bool log_x = true, log_y = true;
    std::function<std::string(double)> fmt_x, fmt_y;
    double mark_x = -1;  // a vertical marker (e.g. the current N), < 0: none
    std::string mark_label;
    bool legend = true;  // false: the caller draws one shared legend
};

// A row of coloured swatches with labels at the cursor (a legend shared by several charts).
void legend(const std::vector<std::string>& names, const std::vector<ImU32>& colours);

// Draws in a region of `size` at the cursor (advances it). Hovering shows the nearest point.
void lines(const char* id, ImVec2 size, const Axes& ax, const std::vector<Line>& ls);

struct BarGroup {
    std::string label;           // category, e.g. a tensor name
    std::vector<double> values;  // one per series
};
// Grouped bars on a linear axis from 0; `series` names and colours; `empty`: what the box says
// when there is nothing to draw.
void bars(const char* id, ImVec2 size, const std::string& title, const std::vector<std::string>& series,
          const std::vector<ImU32>& colours, const std::vector<BarGroup>& groups,
          const std::function<std::string(double)>& fmt_y, const std::string& empty = "no data yet");

}  // namespace viz::chart
