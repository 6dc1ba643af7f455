// viz/panel_charts.cpp — HBM bytes against N, the block size and the SRAM size (log-log, each point
// a simulation), and the current problem's bytes per tensor.
#include <algorithm>
#include <cmath>
#include <string>

#include "viz/chart.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

std::vector<chart::Line> to_lines(const std::vector<Series>& ss, Count c) {
    std::vector<chart::Line> out;
    for (const auto& s : ss)
        out.push_back({std::string(sim::algo_name(s.algo)), ui::algo_colour(s.algo), s.x, s.counted(c), false, false});
    return out;
}

// Log-log slope between the last two points of a series (how the bytes grow at the large end),
// over the points that have a count.
std::string slope(const Series& s, Count c, bool at_start = false) {
    std::vector<double> x, y;
    const auto& ys = s.counted(c);
    for (size_t i = 0; i < s.x.size() && i < ys.size(); ++i)
        if (std::isfinite(ys[i]) && ys[i] > 0) x.push_back(s.x[i]), y.push_back(ys[i]);
    if (x.size() < 2) return "-";
    const size_t k = at_start ? 1 : x.size() - 1;
    const double v = std::log(y[k] / y[k - 1]) / std::log(x[k] / x[k - 1]);
    return ui::fixed(std::fabs(v) < 0.005 ? 0.0 : v, 2);  // no "-0.00" for a flat line
}

std::string pow2(double x) {
    const double l = std::log2(x);
    if (std::fabs(l - std::round(l)) < 1e-9 && x >= 1024) return std::to_string(static_cast<long long>(x / 1024)) + "K";
    return std::to_string(static_cast<long long>(x));
}

}  // namespace

void draw_charts_panel(const RunSet& rs, const ChartData* cd, float progress, bool busy, const MeasuredSet& ms,
                       ViewState& v) {
    const float fs = ImGui::GetFontSize();
    v.chart = std::clamp(v.chart, 0, 1);
    const Count count = static_cast<Count>(v.chart);
    ImGui::Text("Traffic of one head (d = %lld, %s, %s%s); every point is one simulation",
                static_cast<long long>(rs.problem.head_dim), std::string(sim::dtype_name(rs.problem.dtype)).c_str(),
                rs.machine.name.c_str(), mask_words(rs.problem).c_str());
    ui::help("HBM");
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("Count:");
    for (int k = 0; k < 2; ++k) {
        ui::same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize(kCountNames[k]).x +
                              ImGui::GetStyle().ItemInnerSpacing.x);
        ImGui::RadioButton(kCountNames[k], &v.chart, k);
    }
    ui::help("L2");
    ui::same_line_if_fits(ImGui::GetFrameHeight() + ImGui::CalcTextSize("measured points").x +
                          ImGui::GetStyle().ItemInnerSpacing.x);
    ImGui::Checkbox("measured points", &v.chart_measured);
    // the counters' DRAM bytes compare with the L2 model's count, not with every tile load and store
    const std::vector<MeasuredPoints> mp =
        v.chart_measured && count == Count::l2_model ? measured_points(ms, rs.params) : std::vector<MeasuredPoints>{};
    {  // one line: what each series is
        std::string what = count == Count::paper
                               ? "Lines: bytes between HBM and SRAM, every tile load and store (no cache between)."
                               : "Lines: DRAM bytes after the simulator's LRU model of the " + rs.machine.name +
                                     "'s L2 filters the tile loads and stores.";
        if (count == Count::l2_model && cd) {
            size_t gaps = 0;
            for (const auto* group : {&cd->vs_seq, &cd->vs_block, &cd->vs_sram})
                for (const auto& sr : *group)
                    for (double y : sr.y_l2) gaps += std::isfinite(y) ? 0 : 1;
            if (gaps)
                what += " " + std::to_string(gaps) +
                        " points have no L2 count (gaps): their walk exceeds the L2 model's budget of " +
                        ui::count(kChartL2Budget) + " lookups.";
        }
        if (count == Count::l2_model)
            for (sim::Algo a : kAlgos)
                if (!rs.result(a).l2.simulated)
                    what += " Per tensor: " + std::string(sim::algo_name(a)) +
                            " has no L2 model run for this problem (its own run, at the simulator's automatic "
                            "budget, not the points' larger one: " +
                            in_screen_words(rs.result(a).l2.note) + ").";
        if (!mp.empty())
            what +=
                " Dots: DRAM bytes per head the counters measured (" + mp.front().source + "; the kernels' own tiles).";
        else if (v.chart_measured && count == Count::paper)
            what += " The measured DRAM bytes are drawn with the L2 count, the one they compare with.";
        else if (v.chart_measured)
            what += " No measured DRAM bytes match this d, dtype, mask and GPU.";
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::text_dim));
        ui::wrapped("%s", what.c_str());
        ImGui::PopStyleColor();
    }
    if (busy) {
        ImGui::SameLine();
        ImGui::ProgressBar(progress, ImVec2(fs * 10, 0), "simulating...");
    }
    {
        std::vector<std::string> names;
        std::vector<ImU32> cols;
        for (sim::Algo a : kAlgos) names.emplace_back(sim::algo_name(a)), cols.push_back(ui::algo_colour(a));
        chart::legend(names, cols);
    }
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    // at least about 9 lines tall each: in a small window the view scrolls rather than flattening the plots
    const float w = (avail.x - 8) * 0.5f, h = std::max(fs * 9.0f, (avail.y - fs * 5.0f - 8) * 0.5f);
    if (!cd) {
        ImGui::TextDisabled("computing the series in the background...");
        return;
    }
    auto bytes_fmt = [](double b) { return ui::bytes(b); };
    chart::Axes ax;
    ax.title = cd->params.block_rows || cd->params.block_cols ? "vs sequence length N (blocks as set)"
                                                              : "vs sequence length N";
    ax.x_label = "N (tokens)";
    ax.y_label = count == Count::paper ? "HBM<->SRAM bytes (log)" : "DRAM bytes, L2 model (log)";
    ax.fmt_x = pow2;
    ax.fmt_y = bytes_fmt;
    ax.mark_x = static_cast<double>(rs.problem.seq);
    ax.mark_label = "now";
    ax.legend = false;
    {
        std::vector<chart::Line> ls = to_lines(cd->vs_seq, count);
        for (const auto& m : mp) {
            chart::Line l{
                "measured " + std::string(sim::algo_name(m.algo)), ui::algo_colour(m.algo), m.x, m.y, false, true};
            ls.push_back(std::move(l));
        }
        chart::lines("vsN", ImVec2(w, h), ax, ls);
    }
    ImGui::SameLine(0, 8);
    chart::Axes bx = ax;
    bx.title = "vs block size B_c (N = " + std::to_string(cd->params.seq) + ")";
    bx.x_label = "B_c (standard: B_r = B_c)";
    bx.mark_x = static_cast<double>(rs.result(v.algo).block_cols);
    chart::lines("vsB", ImVec2(w, h), bx, to_lines(cd->vs_block, count));
    chart::Axes mx = ax;
    mx.title = "vs SRAM size M (N = " + std::to_string(cd->params.seq) + ", blocks by the rule)";
    mx.x_label = "M (bytes of SRAM per thread block)";
    mx.fmt_x = [](double x) { return ui::bytes(x); };
    mx.mark_x = static_cast<double>(rs.result(v.algo).sram_bytes);
    chart::lines("vsM", ImVec2(w, h), mx, to_lines(cd->vs_sram, count));
    ImGui::SameLine(0, 8);
    {
        std::vector<std::string> names;
        std::vector<ImU32> cols;
        for (sim::Algo a : kAlgos) names.emplace_back(sim::algo_name(a)), cols.push_back(ui::algo_colour(a));
        std::vector<chart::BarGroup> groups;
        for (int k = 0; k < sim::kTensorCount; ++k) {
            const auto t = static_cast<sim::Tensor>(k);
            chart::BarGroup g{std::string(sim::tensor_name(t)), {}};
            bool any = false;
            for (sim::Algo a : kAlgos) {
                const sim::Result& r = rs.result(a);
                const double b = static_cast<double>(count == Count::paper ? r.totals[t].total()
                                                     : r.l2.simulated      ? r.l2.hbm[static_cast<size_t>(k)].total()
                                                                           : 0);
                g.values.push_back(b);
                any = any || b > 0;
            }
            if (any) groups.push_back(g);
        }
        chart::bars(
            "tensors", ImVec2(w, h),
            std::string(count == Count::paper ? "HBM<->SRAM" : "DRAM (L2 model)") +
                " bytes per tensor, this problem (N = " + std::to_string(rs.problem.seq) + ")",
            names, cols, groups, [](double b) { return ui::bytes(b); },
            count == Count::l2_model ? "no L2 model run for this problem (the line above says why)" : "no data yet");
    }
    // what the slopes say, measured from the points
    if (cd->vs_seq.size() == 3) {
        ui::wrapped(
            "Growth at large N (log-log slope of the last two points): standard %s, flash1 %s, flash2 %s "
            "(2 = quadratic in N).",
            slope(cd->vs_seq[0], count).c_str(), slope(cd->vs_seq[1], count).c_str(),
            slope(cd->vs_seq[2], count).c_str());
        // standard's slope above 2: between its last two points a row of float32 scores (N x 4 B; in
        // the backward dP and dS together, N x 8 B) outgrew one block's SRAM, and its row kernels went
        // from whole rows to one row a block in two passes (sim/program.cpp's row_kernel_shape)
        {
            const Series& st = cd->vs_seq[0];
            std::vector<double> xs;
            const auto& ys = st.counted(count);
            for (size_t i = 0; i < st.x.size() && i < ys.size(); ++i)
                if (std::isfinite(ys[i]) && ys[i] > 0) xs.push_back(st.x[i]);
            const sim::Machine& m = sim::find_machine(cd->params.gpu);
            const int64_t sram = cd->params.sram_bytes > 0 ? cd->params.sram_bytes : m.sram_bytes;
            if (xs.size() >= 2) {
                const auto a = static_cast<int64_t>(xs[xs.size() - 2]), b = static_cast<int64_t>(xs.back());
                const bool fwd = cd->params.pass != sim::Pass::backward, bwd = cd->params.pass != sim::Pass::forward;
                auto fits = [&](int64_t n, int64_t floats) { return sim::standard_rows_fit(n, sram, floats); };
                const bool p_row = fwd && fits(a, 1) && !fits(b, 1);
                const bool ds_row = bwd && fits(a, 2) && !fits(b, 2);
                if (count == Count::l2_model)
                    ui::wrapped(
                        "Through the L2 model the slopes are not the paper count's (%s, %s, %s there): while the "
                        "data a head re-reads fits the L2 the walk replays (%s of the %s), DRAM sees each byte about "
                        "once (flash's bytes grow like N, standard's still like N^2: its S and P are bytes of their "
                        "own); once it outgrows it, every re-read misses and the growth turns toward the paper "
                        "count's, steeply where that happens between the last two points.",
                        slope(cd->vs_seq[0], Count::paper).c_str(), slope(cd->vs_seq[1], Count::paper).c_str(),
                        slope(cd->vs_seq[2], Count::paper).c_str(), ui::bytes(m.l2_walk_bytes()).c_str(),
                        ui::bytes(m.l2_bytes).c_str());
                if (p_row || ds_row)
                    ui::wrapped(
                        "Why standard's last slope is above 2: between N = %s and %s a row of float32 %s (%s) outgrew "
                        "one thread block's SRAM (%s), so its row kernel now takes one row a block in two passes "
                        "(the max and sum, then the result), reading the N x N matrix twice: a step on top of N^2.",
                        ui::count(a).c_str(), ui::count(b).c_str(), p_row ? "scores S" : "dP and dS together",
                        ui::bytes(static_cast<double>(b) * (p_row ? 4.0 : 8.0)).c_str(),
                        ui::bytes(static_cast<double>(sram)).c_str());
            }
        }
        ui::wrapped(
            "Against M (slope between the two smallest M): standard %s, flash1 %s, flash2 %s "
            "(-1 = halves when M doubles).",
            slope(cd->vs_sram[0], count, true).c_str(), slope(cd->vs_sram[1], count, true).c_str(),
            slope(cd->vs_sram[2], count, true).c_str());
        ui::help("M");
    }
    size_t skipped = 0;
    for (const auto* group : {&cd->vs_seq, &cd->vs_block, &cd->vs_sram})
        for (const auto& s : *group) skipped += s.skipped.size();
    if (skipped) {
        ImGui::TextDisabled("(%zu points refused by the simulator)", skipped);
        if (ImGui::IsItemHovered()) {
            ImGui::BeginTooltip();
            for (const auto* group : {&cd->vs_seq, &cd->vs_block, &cd->vs_sram})
                for (const auto& s : *group)
                    for (const auto& why : s.skipped)
                        ImGui::Text("%s at %s", std::string(sim::algo_name(s.algo)).c_str(), why.c_str());
            ImGui::EndTooltip();
        }
    }
}

}  // namespace viz
