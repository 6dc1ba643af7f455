#include "viz/chart.hpp"

#include <algorithm>
#include <cmath>
#include <limits>

#include "viz/ticks.hpp"
#include "viz/ui.hpp"

namespace viz::chart {

namespace {

struct Scale {
    double lo = 0, hi = 1;
    bool log = false;
    double t(double v) const {  // 0..1
        const double a = log ? std::log(v) : v, b = log ? std::log(lo) : lo, c = log ? std::log(hi) : hi;
        return c > b ? (a - b) / (c - b) : 0.5;
    }
};

std::vector<double> ticks(const Scale& s, int max_ticks, bool binary = false) {
    return axis_ticks(s.lo, s.hi, max_ticks, s.log ? TickKind::log2 : binary ? TickKind::binary : TickKind::decimal);
}

}  // namespace

namespace {
// A chart's title at its top left; where it is wider than the chart (2x zoom) without its part in
// brackets (then its last clause), and clipped to the chart, not drawn on into the next one.
void draw_title(ImDrawList* dl, ImVec2 p0, ImVec2 p1, const std::string& title) {
    std::string t = title;
    if (const size_t cut = t.find(" (");
        cut != std::string::npos && ImGui::CalcTextSize(t.c_str()).x + 16 > p1.x - p0.x)
        t.resize(cut);
    if (const size_t cut = t.rfind(", ");
        cut != std::string::npos && ImGui::CalcTextSize(t.c_str()).x + 16 > p1.x - p0.x)
        t.resize(cut);  // then without its last clause ("..., this problem")
    dl->PushClipRect(p0, p1, true);
    dl->AddText(ImVec2(p0.x + 8, p0.y + 4), ui::text_col, t.c_str());
    dl->PopClipRect();
}
}  // namespace

void lines(const char* id, ImVec2 size, const Axes& ax, const std::vector<Line>& ls) {
    ImGui::PushID(id);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("chart", size);
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    const ImVec2 p1(p0.x + size.x, p0.y + size.y);
    dl->AddRectFilled(p0, p1, ui::panel_bg, 4.0f);
    draw_title(dl, p0, p1, ax.title);
    // the legend, right of the title: as many rows of swatches as the labels need
    const float left = fs * 5.2f, bottom = fs * 2.6f, right = fs * 1.0f;
    const float title_w = ImGui::CalcTextSize(ax.title.c_str()).x + fs * 2.0f;
    std::vector<std::vector<size_t>> legend_rows;
    std::vector<float> legend_w;
    if (ax.legend) {
        const float room = size.x - right - title_w;
        for (size_t k = 0; k < ls.size(); ++k) {
            const float w = ImGui::CalcTextSize(ls[k].label.c_str()).x + fs * 2.0f;
            if (legend_rows.empty() || legend_w.back() + w > room) {
                legend_rows.push_back({});
                legend_w.push_back(0);
            }
            legend_rows.back().push_back(k);
            legend_w.back() += w;
        }
    }
    // plot rectangle: room for y labels on the left, x labels below, title and legend above
    const float top = fs * 2.8f + fs * 1.2f * static_cast<float>(std::max<size_t>(legend_rows.size(), 1) - 1);
    const ImVec2 a(p0.x + left, p0.y + top), b(p1.x - right, p1.y - bottom);
    Scale sx{std::numeric_limits<double>::max(), 0, ax.log_x}, sy{std::numeric_limits<double>::max(), 0, ax.log_y};
    bool any = false;
    for (const auto& l : ls)
        for (size_t i = 0; i < l.x.size(); ++i) {
            if (!std::isfinite(l.x[i]) || !std::isfinite(l.y[i])) continue;
            if ((ax.log_x && l.x[i] <= 0) || (ax.log_y && l.y[i] <= 0)) continue;
            sx.lo = std::min(sx.lo, l.x[i]);
            sx.hi = std::max(sx.hi, l.x[i]);
            sy.lo = std::min(sy.lo, l.y[i]);
            sy.hi = std::max(sy.hi, l.y[i]);
            any = true;
        }
    if (!any) {
        ui::text_centred(dl, a, b, ui::text_dim, "no data yet");
        ImGui::PopID();
        return;
    }
    if (!ax.log_y) sy.lo = std::min(0.0, sy.lo);
    if (sy.hi <= sy.lo) sy.hi = sy.lo * 2 + 1;
    if (sx.hi <= sx.lo) sx.hi = sx.lo * 2 + 1;
    if (ax.log_y) sy.lo /= 1.5, sy.hi *= 1.5;
    auto px = [&](double x, double y) {
        return ImVec2(a.x + static_cast<float>(sx.t(x)) * (b.x - a.x), b.y - static_cast<float>(sy.t(y)) * (b.y - a.y));
    };
    // grid and tick labels
    for (double v : ticks(sx, ticks_that_fit(b.x - a.x, fs * 5.5f))) {
        const float x = px(v, sy.lo).x;
        dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), IM_COL32(255, 255, 255, 25));
        const std::string s = ax.fmt_x ? ax.fmt_x(v) : ui::fixed(v, 0);
        const float w = ImGui::CalcTextSize(s.c_str()).x;
        dl->AddText(ImVec2(std::clamp(x - w * 0.5f, p0.x + 2, p1.x - w - 2), b.y + 3), ui::text_dim, s.c_str());
    }
    for (double v : ticks(sy, std::max(2, ticks_that_fit(b.y - a.y, fs * 2.2f)))) {
        const float y = px(sx.lo, v).y;
        dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), IM_COL32(255, 255, 255, 25));
        const std::string s = ax.fmt_y ? ax.fmt_y(v) : ui::fixed(v, 0);
        const float w = ImGui::CalcTextSize(s.c_str()).x;
        dl->AddText(ImVec2(a.x - w - 4, y - fs * 0.5f), ui::text_dim, s.c_str());
    }
    dl->AddRect(a, b, IM_COL32(255, 255, 255, 60));
    {
        const float w = ImGui::CalcTextSize(ax.x_label.c_str()).x;
        dl->AddText(ImVec2((a.x + b.x - w) * 0.5f, b.y + fs * 1.35f), ui::text_dim, ax.x_label.c_str());
        dl->AddText(ImVec2(p0.x + 8, p0.y + 4 + fs * 1.2f), ui::text_dim, ax.y_label.c_str());
    }
    if (ax.mark_x > 0 && ax.mark_x >= sx.lo && ax.mark_x <= sx.hi) {
        const float x = px(ax.mark_x, sy.lo).x;
        dl->AddLine(ImVec2(x, a.y), ImVec2(x, b.y), IM_COL32(255, 255, 255, 120), 1.5f);
        dl->AddText(ImVec2(x + 3, a.y + 2), ui::text_dim, ax.mark_label.c_str());
    }
    // lines, points, legend
    dl->PushClipRect(ImVec2(a.x - 4, a.y - 4), ImVec2(b.x + 4, b.y + 4), true);
    double best_d = 1e30;
    const Line* best_l = nullptr;
    size_t best_i = 0;
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    for (const auto& l : ls) {
        ImVec2 prev;
        bool have_prev = false;
        for (size_t i = 0; i < l.x.size(); ++i) {
            if ((ax.log_x && l.x[i] <= 0) || (ax.log_y && l.y[i] <= 0) || !std::isfinite(l.y[i])) {
                have_prev = false;
                continue;
            }
            const ImVec2 q = px(l.x[i], l.y[i]);
            if (l.points_only) {  // a ringed marker, so measurements stand apart from the lines' dots
                dl->AddCircleFilled(q, 5.5f, l.colour);
                dl->AddCircle(q, 6.5f, IM_COL32(255, 255, 255, 230), 0, 1.5f);
            } else if (have_prev) {
                if (l.dashed) {
                    for (int k = 0; k < 10; k += 2) {
                        const float t0 = k / 10.0f, t1 = (k + 1) / 10.0f;
                        dl->AddLine(ImVec2(prev.x + (q.x - prev.x) * t0, prev.y + (q.y - prev.y) * t0),
                                    ImVec2(prev.x + (q.x - prev.x) * t1, prev.y + (q.y - prev.y) * t1), l.colour, 1.5f);
                    }
                } else {
                    dl->AddLine(prev, q, l.colour, 2.5f);
                }
            }
            if (!l.dashed && !l.points_only) dl->AddCircleFilled(q, 3.5f, l.colour);
            prev = q;
            have_prev = true;
            const double dd = (q.x - mouse.x) * (q.x - mouse.x) + (q.y - mouse.y) * (q.y - mouse.y);
            if (!l.dashed && dd < best_d) best_d = dd, best_l = &l, best_i = i;
        }
    }
    dl->PopClipRect();
    for (size_t row = 0; row < legend_rows.size(); ++row) {
        float lx = std::max(p0.x + title_w, p1.x - right - legend_w[row]);
        const float ly = p0.y + 4 + fs * 1.2f * static_cast<float>(row);
        for (size_t k : legend_rows[row]) {
            const auto& l = ls[k];
            dl->AddRectFilled(ImVec2(lx, ly + fs * 0.35f), ImVec2(lx + fs * 0.8f, ly + fs * 0.75f), l.colour);
            dl->AddText(ImVec2(lx + fs, ly), ui::text_col, l.label.c_str());
            lx += ImGui::CalcTextSize(l.label.c_str()).x + fs * 2.0f;
        }
    }
    if (hovered && best_l && best_d < fs * fs * 4) {
        ImGui::BeginTooltip();
        const std::string xs = ax.fmt_x ? ax.fmt_x(best_l->x[best_i]) : ui::fixed(best_l->x[best_i], 0);
        const std::string ys = ax.fmt_y ? ax.fmt_y(best_l->y[best_i]) : ui::fixed(best_l->y[best_i], 2);
        ImGui::Text("%s: %s = %s, %s", best_l->label.c_str(), ax.x_label.c_str(), xs.c_str(), ys.c_str());
        ImGui::EndTooltip();
    }
    ImGui::PopID();
}

void bars(const char* id, ImVec2 size, const std::string& title, const std::vector<std::string>& series,
          const std::vector<ImU32>& colours, const std::vector<BarGroup>& groups,
          const std::function<std::string(double)>& fmt_y, const std::string& empty) {
    ImGui::PushID(id);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    ImGui::InvisibleButton("bars", size);
    const bool hovered = ImGui::IsItemHovered();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    const ImVec2 p1(p0.x + size.x, p0.y + size.y);
    dl->AddRectFilled(p0, p1, ui::panel_bg, 4.0f);
    draw_title(dl, p0, p1, title);
    const float left = fs * 5.2f, bottom = fs * 1.6f, top = fs * 2.6f, right = fs * 1.0f;
    const ImVec2 a(p0.x + left, p0.y + top), b(p1.x - right, p1.y - bottom);
    double hi = 0;
    for (const auto& g : groups)
        for (double v : g.values) hi = std::max(hi, v);
    if (hi <= 0 || groups.empty()) {
        ui::text_centred(dl, a, b, ui::text_dim, empty);
        ImGui::PopID();
        return;
    }
    Scale sy{0, hi * 1.08, false};
    for (double v : ticks(sy, std::max(2, ticks_that_fit(b.y - a.y, fs * 2.2f)), true)) {
        const float y = b.y - static_cast<float>(sy.t(v)) * (b.y - a.y);
        dl->AddLine(ImVec2(a.x, y), ImVec2(b.x, y), IM_COL32(255, 255, 255, 25));
        const std::string s = fmt_y ? fmt_y(v) : ui::fixed(v, 0);
        dl->AddText(ImVec2(a.x - ImGui::CalcTextSize(s.c_str()).x - 4, y - fs * 0.5f), ui::text_dim, s.c_str());
    }
    const float gw = (b.x - a.x) / static_cast<float>(groups.size());
    const float bw = gw * 0.8f / static_cast<float>(std::max<size_t>(1, series.size()));
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    for (size_t g = 0; g < groups.size(); ++g) {
        const float gx = a.x + gw * static_cast<float>(g) + gw * 0.1f;
        for (size_t k = 0; k < groups[g].values.size() && k < series.size(); ++k) {
            const double v = groups[g].values[k];
            const float y = b.y - static_cast<float>(sy.t(v)) * (b.y - a.y);
            const ImVec2 q0(gx + bw * static_cast<float>(k), y), q1(gx + bw * static_cast<float>(k + 1) - 1, b.y);
            dl->AddRectFilled(q0, q1, colours[k % colours.size()]);
            if (hovered && mouse.x >= q0.x && mouse.x < q1.x && mouse.y >= a.y && mouse.y <= b.y) {
                ImGui::BeginTooltip();
                ImGui::Text("%s, %s: %s", groups[g].label.c_str(), series[k].c_str(),
                            (fmt_y ? fmt_y(v) : ui::fixed(v, 0)).c_str());
                ImGui::EndTooltip();
            }
        }
        const float w = ImGui::CalcTextSize(groups[g].label.c_str()).x;
        dl->AddText(ImVec2(gx + gw * 0.4f - w * 0.5f, b.y + 3), ui::text_col, groups[g].label.c_str());
    }
    dl->AddLine(ImVec2(a.x, b.y), ImVec2(b.x, b.y), IM_COL32(255, 255, 255, 90));
    ImGui::PopID();
}

void legend(const std::vector<std::string>& names, const std::vector<ImU32>& colours) {
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const float fs = ImGui::GetFontSize();
    ImVec2 p = ImGui::GetCursorScreenPos();
    float w = 0;
    for (size_t k = 0; k < names.size(); ++k) {
        dl->AddRectFilled(ImVec2(p.x + w, p.y + fs * 0.3f), ImVec2(p.x + w + fs * 1.4f, p.y + fs * 0.8f),
                          colours[k % colours.size()]);
        dl->AddText(ImVec2(p.x + w + fs * 1.7f, p.y), ui::text_col, names[k].c_str());
        w += fs * 3.0f + ImGui::CalcTextSize(names[k].c_str()).x;
    }
    ImGui::Dummy(ImVec2(w, fs));
}

}  // namespace viz::chart
