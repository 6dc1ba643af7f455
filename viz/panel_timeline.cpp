// viz/panel_timeline.cpp — where an SM's time goes: the timing model's per-step copy time, tensor-core
// product time and exp/softmax (scalar) time for the first blocks of a kernel, laid out twice: serial
// (each step copies, then computes) and overlapped (the next step's copy runs under this step's
// arithmetic, the FlashAttention-3 idea). Below, the whole GPU: the model's time for the bench's
// shape, serial and overlapped, beside the kernels' measured times from results.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <vector>

#include "viz/panels.hpp"
#include "viz/rungs.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

using Kind = sim::TimelineSegment::Kind;

ImU32 kind_colour(Kind k) {
    switch (k) {
        case Kind::copy:
            return ui::okabe::sky;
        case Kind::matmul:
            return ui::okabe::blue;
        case Kind::scalar:
            return ui::okabe::orange;
    }
    return ui::okabe::grey;
}

void swatch(ImU32 col, const char* text) {
    const float fs = ImGui::GetFontSize();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + fs * 0.2f), ImVec2(p.x + fs * 0.8f, p.y + fs), col, 2);
    ImGui::Dummy(ImVec2(fs * 0.9f, fs));
    ImGui::SameLine();
    ImGui::TextUnformatted(text);
}
// how wide swatch(col, text) draws: the swatch, the gap, the text
float swatch_width(const char* text) {
    return ImGui::GetFontSize() * 0.9f + ImGui::GetStyle().ItemSpacing.x + ImGui::CalcTextSize(text).x;
}

struct BlockLanes {
    int sm = 0;
    std::vector<const sim::TimelineSegment*> serial, overlapped;
    double serial_end = 0, overlapped_end = 0;
};

// The segments grouped by block: the model writes each block's serial segments, then its overlapped
// ones, block after block.
std::vector<BlockLanes> by_block(const std::vector<sim::TimelineSegment>& segs) {
    std::vector<BlockLanes> out;
    bool prev_overlapped = true;
    for (const auto& s : segs) {
        if (out.empty() || (!s.overlapped && prev_overlapped)) {
            out.push_back({});
            out.back().sm = s.sm;
        }
        BlockLanes& b = out.back();
        (s.overlapped ? b.overlapped : b.serial).push_back(&s);
        (s.overlapped ? b.overlapped_end : b.serial_end) =
            std::max(s.overlapped ? b.overlapped_end : b.serial_end, s.end);
        prev_overlapped = s.overlapped;
    }
    return out;
}

void lane(ImDrawList* dl, const std::vector<const sim::TimelineSegment*>& segs, bool copies, float x0, float w,
          float y0, float h, double t_max) {
    dl->AddRectFilled(ImVec2(x0, y0), ImVec2(x0 + w, y0 + h), IM_COL32(36, 38, 46, 255));
    const float fs = ImGui::GetFontSize();
    for (const auto* s : segs) {
        if ((s->kind == Kind::copy) != copies) continue;
        const float a = x0 + static_cast<float>(s->start / t_max) * w, b = x0 + static_cast<float>(s->end / t_max) * w;
        dl->AddRectFilled(ImVec2(a, y0 + 1), ImVec2(std::max(a + 1, b), y0 + h - 1), kind_colour(s->kind));
        if (b - a > 1.5f) dl->AddLine(ImVec2(a, y0 + 1), ImVec2(a, y0 + h - 1), IM_COL32(20, 20, 24, 255));
        if (copies && b - a > fs * 1.6f) {  // the step's number on its copy
            const std::string t = std::to_string(s->step + 1);
            ui::text_centred(dl, ImVec2(a, y0), ImVec2(b, y0 + h), IM_COL32(0, 0, 0, 255), t);
        }
    }
}

// One horizontal bar with its label and value, on an axis of `t_max` seconds.
void bar(ImDrawList* dl, ImVec2 p, float label_w, float w, float h, const std::string& label, double s, double t_max,
         ImU32 col) {
    dl->AddText(ImVec2(p.x, p.y), ui::text_col, label.c_str());
    const float len = t_max > 0 ? static_cast<float>(s / t_max) * w : 0;
    dl->AddRectFilled(ImVec2(p.x + label_w, p.y + 2), ImVec2(p.x + label_w + len, p.y + h - 2), col, 2);
    const std::string v = ui::seconds(s);
    dl->AddText(ImVec2(p.x + label_w + len + 6, p.y), ui::text_col, v.c_str());
}

}  // namespace

void draw_timeline_panel(const RunSet& rs, const MeasuredSet& ms, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    ImGui::TextUnformatted("Algorithm:");
    for (sim::Algo a : kAlgos) {
        ImGui::SameLine();
        if (ImGui::RadioButton(std::string(sim::algo_name(a)).c_str(), v.algo == a)) switch_algo(v, &rs, a);
    }
    char what[256];
    std::snprintf(what, sizeof what, "N = %lld, d = %lld, %s, %s%s", static_cast<long long>(rs.problem.seq),
                  static_cast<long long>(rs.problem.head_dim), rs.machine.name.c_str(), pass_words(rs.params.pass),
                  mask_words(rs.problem).c_str());
    ui::same_line_if_fits(ImGui::CalcTextSize(what).x, fs * 2);
    ImGui::TextDisabled("%s", what);
    const sim::Result& r = rs.result(v.algo);
    const sim::Timing& tm = r.timing;
    if (!tm.computed || tm.timeline.empty()) {
        ui::wrapped("The timing model did not run for this simulation%s.",
                    tm.ceilings_note.empty() ? "" : (" (" + tm.ceilings_note + ")").c_str());
        return;
    }
    // the kernel the lanes show: the pass's first that is not a short helper pass (flash2's backward:
    // its main kernel, not the D pre-pass)
    const std::string kernel = !tm.timeline_kernel.empty() ? tm.timeline_kernel
                               : r.kernels.empty()         ? std::string("?")
                                                           : r.kernels.front().name;
    const std::vector<BlockLanes> blocks = by_block(tm.timeline);
    size_t steps = 0;
    for (const auto& b : blocks)
        for (const auto* s : b.serial) steps = std::max(steps, static_cast<size_t>(s->step) + 1);
    ui::wrapped(
        "Kernel \"%s\": its first %zu thread blocks, first %zu steps each. Each SM holds %lld block%s at "
        "once, each with an equal share of the SM's copy bandwidth and arithmetic.",
        kernel.c_str(), blocks.size(), steps, static_cast<long long>(r.machine.blocks_per_sm),
        r.machine.blocks_per_sm == 1 ? "" : "s");
    swatch(kind_colour(Kind::copy), "copies HBM/L2 -> SRAM");
    const char* tc = v.algo == sim::Algo::standard ? "tensor cores (the library GEMM)" : "tensor cores (mma.sync)";
    ui::same_line_if_fits(swatch_width(tc), fs);
    swatch(kind_colour(Kind::matmul), tc);
    ui::help("tensor cores");
    // the longer name where it fits on a line, the shorter where not (2x zoom)
    const char* ex = "exp and softmax (charged on fp32 lanes)";
    if (swatch_width(ex) > ImGui::GetContentRegionAvail().x) ex = "exp, softmax (fp32 lanes)";
    ui::same_line_if_fits(swatch_width(ex), fs);
    swatch(kind_colour(Kind::scalar), ex);
    ui::help("special-function units");

    double t_max = 0;
    for (const auto& b : blocks) t_max = std::max({t_max, b.serial_end, b.overlapped_end});
    if (t_max <= 0) t_max = 1e-9;
    const double unit = t_max < 2e-3 ? 1e-6 : 1e-3;
    const char* unit_name = t_max < 2e-3 ? "µs" : "ms";

    // lanes: per block, serial (copy, arithmetic) then overlapped (copy, arithmetic)
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 avail = ImGui::GetContentRegionAvail();
    avail.x -= ImGui::GetStyle().ScrollbarSize;  // room for a vertical scrollbar in a small window
    const float summary_h = fs * 23.0f;          // the text under the lanes and the whole-GPU bars
    const float label_w = fs * 10.0f, end_w = fs * 5.5f;
    const float w = std::max(fs * 6, avail.x - label_w - end_w);
    const float lanes_h = std::max(fs * 8, avail.y - summary_h - fs * 2.5f);
    const float per_block = lanes_h / static_cast<float>(std::max<size_t>(1, blocks.size()));
    const float lh = std::clamp((per_block - fs * 0.6f) / 4.0f, 3.0f, fs * 1.1f);
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    float y = p0.y;
    for (size_t bi = 0; bi < blocks.size(); ++bi) {
        const BlockLanes& b = blocks[bi];
        const float x0 = p0.x + label_w;
        for (int sched = 0; sched < 2; ++sched) {
            const auto& segs = sched ? b.overlapped : b.serial;
            const double end = sched ? b.overlapped_end : b.serial_end;
            const std::string label =
                sched ? "  overlapped" : "block " + std::to_string(bi) + ", SM " + std::to_string(b.sm) + ": serial";
            if (lh >= fs * 0.5f)
                dl->AddText(ImGui::GetFont(), std::min(fs, lh * 2.0f), ImVec2(p0.x, y),
                            sched ? ui::text_col : ui::text_dim, label.c_str());
            lane(dl, segs, true, x0, w, y, lh, t_max);
            lane(dl, segs, false, x0, w, y + lh, lh, t_max);
            const float xe = x0 + static_cast<float>(end / t_max) * w;
            dl->AddLine(ImVec2(xe, y), ImVec2(xe, y + 2 * lh), IM_COL32(255, 255, 255, 200), 1.5f);
            if (lh >= fs * 0.45f)
                dl->AddText(ImGui::GetFont(), std::min(fs, lh * 2.0f), ImVec2(x0 + w + 6, y), ui::text_col,
                            ui::seconds(end).c_str());
            y += 2 * lh + (sched ? fs * 0.6f : 2.0f);
        }
    }
    ui::time_axis(dl, p0.x + label_w, p0.x + label_w + w, y + 2, t_max, unit, unit_name, true);
    ImGui::Dummy(ImVec2(avail.x, y - p0.y + fs * 2.4f));
    if (!blocks.empty() && blocks.front().overlapped_end > 0)
        ui::wrapped(
            "These %zu steps: serial %s, overlapped %s (%sx). The copy of step k+1 runs under step k's "
            "arithmetic, so a step costs about max(copy, arithmetic) instead of their sum. White ticks: where each "
            "block's last step shown ends.",
            steps, ui::seconds(blocks.front().serial_end).c_str(), ui::seconds(blocks.front().overlapped_end).c_str(),
            ui::fixed(blocks.front().serial_end / blocks.front().overlapped_end, 2).c_str());
    ImGui::Separator();

    // whole GPU: the model at the bench's shape beside the measured kernels
    const sim::Problem& bp = rs.bench_problem;
    const sim::Timing& bt = rs.bench_timing[static_cast<size_t>(algo_index(v.algo))];
    ImGui::Text("Whole GPU, B = %lld, H = %lld (the shape results measured):", static_cast<long long>(bp.batch),
                static_cast<long long>(bp.heads));
    ui::help("predicted time");
    struct Row {
        std::string label;
        double s;
        ImU32 col;
    };
    std::vector<Row> rows;
    if (bt.computed) {
        // rung 2 of the timing ladder: the step model at peak rates (its serial form for contrast)
        rows.push_back(
            {std::string(kRungIdeal) + ", in series", bt.serial_s, ui::with_alpha(ui::algo_colour(v.algo), 110)});
        rows.push_back({kRungIdeal, bt.overlapped_s, ui::algo_colour(v.algo)});
    }
    // measured: forward and backward rows of each variant (both: their sum, when both were measured)
    std::vector<std::string> passes;
    if (rs.params.pass != sim::Pass::backward) passes.push_back("forward");
    if (rs.params.pass != sim::Pass::forward) passes.push_back("backward");
    std::vector<std::pair<std::string, double>> measured;  // variant, seconds
    std::vector<std::pair<std::string, int>> found;        // variant, passes found
    std::string device;                                    // the GPU the rows shown ran on
    std::vector<double> recorded;  // the rows' own rung-3 predictions, summed over passes (< 0: a row has none)
    for (const auto& pass : passes)
        for (const MeasuredRow* m :
             rows_at(ms, pass, bp.seq, bp.head_dim, bp.causal, bp.batch, bp.heads, rs.params.gpu)) {
            if (device.empty()) device = m->device;
            const std::optional<KernelRung> own = rung_of_row(*m);
            const double pred = own && m->predicted_ms ? own->seconds : -1.0;
            auto it = std::find_if(measured.begin(), measured.end(), [&](auto& x) { return x.first == m->variant; });
            if (it == measured.end()) {
                measured.push_back({m->variant, *m->ms / 1e3});
                found.push_back({m->variant, 1});
                recorded.push_back(pred);
            } else {
                const size_t i = static_cast<size_t>(it - measured.begin());
                it->second += *m->ms / 1e3;
                ++found[i].second;
                recorded[i] = recorded[i] < 0 || pred < 0 ? -1.0 : recorded[i] + pred;
            }
        }
    // rung 3, this kernel: the kernel model of each measured kernel (measured in bf16), beside its row
    sim::Problem kp = bp;
    kp.dtype = sim::DType::bf16;
    std::vector<std::string> verdicts;  // "flash2: this kernel 3.41 ms, measured 3.34 ms (measured / this kernel 0.98)"
    for (size_t k = 0; k < measured.size(); ++k) {
        if (found[k].second != static_cast<int>(passes.size())) continue;  // a pass missing: no sum
        const bool mine = measured[k].first == sim::algo_name(v.algo);
        // the rows' own predictions (their recorded tiles and schedule) where they have them; else the
        // kernel's default profile at this problem
        KernelRung kr = kernel_rung(kp, rs.params.pass, measured[k].first, rs.machine);
        if (recorded[k] > 0) {
            kr.seconds = recorded[k];
            kr.error.clear();
        }
        if (kr.error.empty() && kr.seconds > 0) {
            rows.push_back({std::string(kRungKernel) + ": " + measured[k].first, kr.seconds,
                            mine ? ui::okabe::yellow : ui::with_alpha(ui::okabe::yellow, 120)});
            verdicts.push_back(measured[k].first + ": " + kRungKernel + " " + ui::seconds(kr.seconds) + ", measured " +
                               ui::seconds(measured[k].second) + " (measured / " + kRungKernel + " " +
                               ui::fixed(rung_ratio(measured[k].second, kr.seconds), 2) + ")");
        }
        rows.push_back({"measured " + measured[k].first, measured[k].second,
                        mine ? ui::mix(ui::algo_colour(v.algo), IM_COL32(255, 255, 255, 255), 0.35f)
                             : IM_COL32(120, 124, 140, 255)});
    }
    double g_max = 0;
    for (const auto& x : rows) g_max = std::max(g_max, x.s);
    const float bl = fs * 10.5f, bw = std::max(fs * 5, avail.x - bl - fs * 6);
    const float bh = fs * 1.2f;
    const ImVec2 q = ImGui::GetCursorScreenPos();
    for (size_t k = 0; k < rows.size(); ++k)
        bar(dl, ImVec2(q.x, q.y + bh * static_cast<float>(k)), bl, bw, bh, rows[k].label, rows[k].s, g_max,
            rows[k].col);
    ImGui::Dummy(ImVec2(bl + bw, bh * static_cast<float>(rows.size())));
    for (const auto& line : verdicts) ui::wrapped("%s", line.c_str());
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (!verdicts.empty())
        ui::wrapped(
            "Rungs: %s = bytes and FLOPs at peak rates, overlapped (the limit); %s = the kernel model (its "
            "tiles, instruction path and schedule, %s ceilings).",
            kRungIdeal, kRungKernel, "datasheet");
    if (measured.empty())
        ui::wrapped(
            "No row measured on an %s at N = %lld, d = %lld%s, B = %lld, H = %lld in %s: the bench ran other "
            "shapes or GPUs (lesson 10 lists them).",
            rs.params.gpu.c_str(), static_cast<long long>(bp.seq), static_cast<long long>(bp.head_dim),
            bp.causal ? ", causal" : "", static_cast<long long>(bp.batch), static_cast<long long>(bp.heads),
            ms.dir.empty() ? "results" : ms.dir.c_str());
    else
        ui::wrapped(
            "Measured on %s in bf16 (the model's %s moves the same bytes); flash2h is the Hopper kernel "
            "whose producer warpgroup overlaps copies with arithmetic.",
            device.empty() ? "the GPU" : device.c_str(), std::string(sim::dtype_name(rs.problem.dtype)).c_str());
    ImGui::PopStyleColor();
}

}  // namespace viz
