// viz/panel_roofline.cpp — the roofline, log-log: matrix FLOPs per byte that crossed HBM on x,
// FLOP/s on y; the card's roofs (the datasheet's, and the measured ceilings' where the preset has
// them), the ridge where each roof turns flat; each kernel placed as the simulator models it (hollow)
// and as a recorded row measured it (filled), numbered, and the numbers listed under the plot with
// what each point counts. The numbers are roofline_view.hpp's.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viz/measurement.hpp"
#include "viz/panels.hpp"
#include "viz/roofline_view.hpp"
#include "viz/rungs.hpp"
#include "viz/ui.hpp"
#include "viz/visible_area.hpp"

namespace viz {

namespace {
ImU32 kernel_colour(const std::string& k) {
    if (auto a = sim::parse_algo(k)) return ui::algo_colour(*a);
    if (k == "flash2h") return ui::okabe::yellow;
    if (k == "decode") return ui::okabe::purple;
    return ui::okabe::grey;
}

// "0.1", "1", "10", "1k", "10k" for a power of ten
std::string decade_label(double x) {
    const int e = static_cast<int>(std::lround(std::log10(x)));
    if (e < 0) return ui::fixed(x, -e);
    if (e < 3) return std::to_string(static_cast<long long>(std::llround(x)));
    if (e < 6) return std::to_string(static_cast<long long>(std::llround(x / 1e3))) + "k";
    return std::to_string(static_cast<long long>(std::llround(x / 1e6))) + "M";
}

void draw_roofline_panel_body(const RunSet& rs, const MeasuredSet& ms, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    std::string note;
    const std::vector<RoofPoint> pts = roof_points(rs, ms, v.decode, note);
    const std::vector<RoofCeiling> roofs = roof_ceilings(rs.machine);
    const sim::Problem& bp = rs.bench_problem;
    ImGui::TextUnformatted("Roofline");
    ui::help("roofline");  // beside a one-line item: after wrapped text it would sit past the region's edge
    ui::wrapped(
        "The %s's roofline: matrix FLOPs per byte that crossed HBM (x) against FLOP/s (y), both log. "
        "Each kernel at N = %s, d = %s, B = %s, H = %s (the shape results measured), %s%s.",
        rs.machine.name.c_str(), ui::count(bp.seq).c_str(), ui::count(bp.head_dim).c_str(), ui::count(bp.batch).c_str(),
        ui::count(bp.heads).c_str(), pass_words(rs.params.pass), mask_words(bp).c_str());
    // the plot: labels of the y axis on the left, of the x axis underneath; whole decades around
    // every roof and point (roof_axes)
    const ImVec2 o = ImGui::GetCursorScreenPos(), avail = ImGui::GetContentRegionAvail();
    const RoofPlotLayout lay = roof_plot_layout(o.x, o.y, avail.x, avail.y, fs, ImGui::CalcTextSize("10000").x);
    const RoofAxes ax = roof_axes(roofs, pts, lay.plot);
    const double x_lo = ax.x_lo, x_hi = ax.x_hi, y_lo = ax.y_lo, y_hi = ax.y_hi;
    const float w = lay.outer.x1 - lay.outer.x0, h = lay.outer.y1 - lay.outer.y0;
    const ImVec2 a(lay.plot.x0, lay.plot.y0), b(lay.plot.x1, lay.plot.y1);
    auto X = [&](double x) { return ax.x(x); };
    auto Y = [&](double y) { return ax.y(y); };
    ImDrawList* dl = ImGui::GetWindowDrawList();
    dl->AddRectFilled(a, b, ui::panel_bg);
    for (double x = x_lo; x <= x_hi * 1.0001; x *= 10) {
        dl->AddLine(ImVec2(X(x), a.y), ImVec2(X(x), b.y), IM_COL32(255, 255, 255, 30));
        const std::string s = decade_label(x);
        const float tw = ImGui::CalcTextSize(s.c_str()).x;
        dl->AddText(ImVec2(std::clamp(X(x) - tw / 2, a.x, b.x - tw), b.y + 2), ui::text_dim, s.c_str());
    }
    for (double y = y_lo; y <= y_hi * 1.0001; y *= 10) {
        dl->AddLine(ImVec2(a.x, Y(y)), ImVec2(b.x, Y(y)), IM_COL32(255, 255, 255, 30));
        const std::string s = decade_label(y / 1e12);
        const float tw = ImGui::CalcTextSize(s.c_str()).x;
        dl->AddText(ImVec2(a.x - tw - 4, std::clamp(Y(y) - fs / 2, a.y, b.y - fs)), ui::text_dim, s.c_str());
    }
    const char* xt = "FLOPs per byte of HBM";
    dl->AddText(ImVec2((a.x + b.x - ImGui::CalcTextSize(xt).x) / 2, b.y + fs * 1.2f), ui::text_col, xt);
    const char* yt = "TFLOP/s";
    const ImVec2 yt_at(a.x + 4, a.y + 2), yt_size = ImGui::CalcTextSize(yt);
    dl->AddText(yt_at, ui::text_dim, yt);
    // the roofs: the sloping memory line up to the ridge, then the flat compute roof
    dl->PushClipRect(a, b, true);
    for (size_t k = 0; k < roofs.size(); ++k) {
        const RoofCeiling& r = roofs[k];
        const ImU32 col = k == 0 ? IM_COL32(235, 235, 240, 230) : ui::with_alpha(ui::okabe::orange, 230);
        const double xr = r.ridge();
        dl->AddLine(ImVec2(X(x_lo), Y(r.attainable(x_lo))), ImVec2(X(xr), Y(r.flops)), col, 2);
        dl->AddLine(ImVec2(X(xr), Y(r.flops)), ImVec2(X(x_hi), Y(r.flops)), col, 2);
        for (float yy = Y(r.flops); yy < b.y; yy += 8)  // the ridge, dotted down to the axis
            dl->AddLine(ImVec2(X(xr), yy), ImVec2(X(xr), std::min(b.y, yy + 3)), ui::with_alpha(col, 140));
    }
    // the points: hollow = simulated, filled = measured; a recorded row's two joined by a thin line
    const float mr = fs * 0.38f;  // a circle's radius
    std::vector<size_t> shown;    // the points with a place on the axes
    std::vector<PlotPt> anchors, sizes;
    for (size_t i = 0; i < pts.size(); ++i) {
        const RoofPoint& p = pts[i];
        if (!(p.intensity() > 0 && p.rate() > 0)) continue;
        const ImVec2 c(X(p.intensity()), Y(p.rate()));
        const ImU32 col = kernel_colour(p.kernel);
        if (p.measured) {
            for (size_t j = 0; j < pts.size(); ++j)
                if (!pts[j].measured && pts[j].kernel == p.kernel && pts[j].pass == p.pass &&
                    pts[j].time_what == kRungKernel)
                    dl->AddLine(c, ImVec2(X(pts[j].intensity()), Y(pts[j].rate())), ui::with_alpha(col, 120));
            dl->AddCircleFilled(c, mr, col);
        } else if (p.kernel == "decode") {
            dl->AddTriangleFilled(ImVec2(c.x, c.y - fs * 0.45f), ImVec2(c.x - fs * 0.4f, c.y + fs * 0.3f),
                                  ImVec2(c.x + fs * 0.4f, c.y + fs * 0.3f), col);
        } else {
            dl->AddCircle(c, mr, col, 0, 2);
        }
        shown.push_back(i);
        anchors.push_back({c.x, c.y});
        const ImVec2 ts = ImGui::CalcTextSize(std::to_string(i + 1).c_str());
        sizes.push_back({ts.x, ts.y});
        if (ImGui::IsMouseHoveringRect(ImVec2(c.x - fs / 2, c.y - fs / 2), ImVec2(c.x + fs / 2, c.y + fs / 2)))
            ImGui::SetTooltip("%zu: %s\n%s FLOPs per byte, %s TFLOP/s", i + 1, p.label().c_str(),
                              ui::fixed(p.intensity(), 1).c_str(), ui::fixed(p.rate() / 1e12, 1).c_str());
    }
    // the numbers: none over another or over a marker, all inside the plot (place_labels); one set
    // away from its marker gets a line to it
    const std::vector<PlacedLabel> labels = place_labels(
        anchors, sizes, lay.plot, fs * 0.45f, {Box{yt_at.x, yt_at.y, yt_at.x + yt_size.x, yt_at.y + yt_size.y}});
    for (size_t k = 0; k < shown.size(); ++k) {
        const PlacedLabel& L = labels[k];
        const ImU32 col = kernel_colour(pts[shown[k]].kernel);
        if (!L.placed) continue;  // no room left in a plot this small; the table lists it
        if (L.leader) {
            const ImVec2 c(anchors[k].x, anchors[k].y);
            const ImVec2 e(std::clamp(c.x, L.box.x0, L.box.x1), std::clamp(c.y, L.box.y0, L.box.y1));
            const float dx = e.x - c.x, dy = e.y - c.y, len = std::sqrt(dx * dx + dy * dy);
            if (len > mr) dl->AddLine(ImVec2(c.x + dx / len * mr, c.y + dy / len * mr), e, ui::with_alpha(col, 170));
        }
        dl->AddText(ImVec2(L.box.x0, L.box.y0), col, std::to_string(shown[k] + 1).c_str());
    }
    dl->PopClipRect();
    ImGui::Dummy(ImVec2(w, h));
    // the roofs in words
    for (size_t k = 0; k < roofs.size(); ++k) {
        const RoofCeiling& r = roofs[k];
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(k == 0 ? ui::text_col : ui::okabe::orange), "%s roof",
                           r.name.c_str());
        if (k == 0) ui::help("ridge point");
        ImGui::SameLine();
        ui::wrapped("%s TB/s of HBM up to %s TFLOP/s on the tensor cores; the ridge at %s FLOPs per byte.",
                    ui::fixed(r.bandwidth / 1e12, 2).c_str(), ui::fixed(r.flops / 1e12, 0).c_str(),
                    ui::fixed(r.ridge(), 0).c_str());
    }
    if (!note.empty()) ui::wrapped("%s", note.c_str());
    // the points in words: which is simulated, which measured, and what each counts
    const ImGuiTableFlags tf =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
    if (ImGui::BeginTable("roof_points", 6, tf)) {
        ImGui::TableSetupColumn("#", ImGuiTableColumnFlags_WidthFixed, ImGui::CalcTextSize("00").x);
        ImGui::TableSetupColumn("kernel, pass: placed", ImGuiTableColumnFlags_WidthStretch, 2.4f);
        ImGui::TableSetupColumn("FLOPs a byte", ImGuiTableColumnFlags_WidthStretch, 1.3f);
        ImGui::TableSetupColumn("TFLOP/s", ImGuiTableColumnFlags_WidthStretch, 1.4f);
        ImGui::TableSetupColumn("bytes from", ImGuiTableColumnFlags_WidthStretch, 1.6f);
        ImGui::TableSetupColumn("time from", ImGuiTableColumnFlags_WidthStretch, 1.6f);
        // headers and cells wrap at spaces (at 2x zoom the columns are narrow; nothing is cut)
        ImGui::TableNextRow(ImGuiTableRowFlags_Headers);
        for (const char* head : {"#", "kernel, pass: placed", "FLOPs a byte", "TFLOP/s", "bytes from", "time from"}) {
            ImGui::TableNextColumn();
            ui::wrapped("%s", head);
        }
        for (size_t i = 0; i < pts.size(); ++i) {
            const RoofPoint& p = pts[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%zu", i + 1);
            ImGui::TableNextColumn();
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(kernel_colour(p.kernel)));
            ui::wrapped("%s", p.label().c_str());
            ImGui::PopStyleColor();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::fixed(p.intensity(), p.intensity() < 10 ? 1 : 0).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::fixed(p.rate() / 1e12, 1).c_str());
            ImGui::TableNextColumn();
            ui::wrapped("%s", p.bytes_what.c_str());
            ImGui::TableNextColumn();
            ui::wrapped("%s", p.time_what.c_str());
        }
        ImGui::EndTable();
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::text_dim));
    ui::wrapped(
        "Hollow: simulated (the model); filled: measured (a recorded row), joined to its row's model; "
        "triangle: the Decoding view's step.");
    ImGui::PopStyleColor();
}

}  // namespace

void draw_roofline_panel(const RunSet& rs, const MeasuredSet& ms, ViewState& v) {
    begin_visible_area("roofline");
    draw_roofline_panel_body(rs, ms, v);
    ImGui::EndChild();
}

}  // namespace viz
