// viz/panel_measured.cpp — the CUDA kernels' recorded measurements (results/*.json) beside the
// simulator's count for the same tiling: bytes and their ratio, time, TFLOP/s, and PyTorch's own
// kernels on the same shapes; which GPU and when. Optionally a live run (viz/live_run.hpp).
// GCC 12 at -O3 warns -Wrestrict on the short string assignments below (GCC bug 105329, a false
// positive inside <string>); other compilers and versions keep the warning.
#if defined(__GNUC__) && !defined(__clang__) && __GNUC__ == 12
#pragma GCC diagnostic ignored "-Wrestrict"
#endif

#include <algorithm>
#include <cmath>
#include <set>
#include <string>

#include "viz/chart.hpp"
#include "viz/live_run.hpp"
#include "viz/panels.hpp"
#include "viz/rungs.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {
ImVec4 st_disabled() { return ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]; }
}  // namespace

namespace {

std::string opt_bytes(const std::optional<double>& b) { return b ? ui::bytes(*b) : "-"; }
std::string opt_fixed(const std::optional<double>& x, int digits) { return x ? ui::fixed(*x, digits) : "-"; }

ImU32 variant_colour(const std::string& v) {
    if (v == "standard") return ui::algo_colour(sim::Algo::standard);
    if (v == "flash1") return ui::algo_colour(sim::Algo::flash1);
    if (v == "flash2") return ui::algo_colour(sim::Algo::flash2);
    return ui::okabe::purple;
}

bool keep(const MeasuredRow& r, const ViewState& v) {
    if (r.pass.rfind("ring", 0) == 0) return true;  // a ring row is its own kind: no pass or mask splits it
    if (r.pass != (v.measured_pass == 0 ? "forward" : "backward")) return false;
    if (v.measured_d > 0 && r.head_dim != v.measured_d) return false;
    return r.causal == (v.measured_mask == 1);
}

// Rung 3 for a measured row: the kernel model of its kernel at its shape, on the preset of the GPU
// it ran on (datasheet ceilings); null for a ring row, a kernel the model does not know, or a GPU
// without a preset.
void table(const MeasuredFile& f, const ViewState& v, float height) {
    const float fs = ImGui::GetFontSize();
    const char* heads[] = {"kernel",
                           "N",
                           "d",
                           "BxH",
                           "ms",
                           "this kernel ms",
                           "measured / this kernel",
                           "TFLOP/s",
                           "DRAM (counters)",
                           "sim: DRAM, L2 model",
                           "counters / L2 model",
                           "counters / L2 model as counted",
                           "sim: HBM<->SRAM, no L2",
                           "SDPA-flash ms",
                           "speed vs SDPA-flash",
                           "speed vs cuDNN"};
    if (!ImGui::BeginTable(f.path.c_str(), 16,
                           ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                               ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit,
                           ImVec2(0, std::max(height, fs * 5))))
        return;
    ImGui::TableSetupScrollFreeze(1, 1);  // the kernel's name and the header stay when scrolling
    for (const char* h : heads) ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const auto& r : f.rows) {
        if (!keep(r, v)) continue;
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(variant_colour(r.variant)), "%s", r.label().c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r.seq));
        ImGui::TableNextColumn();
        ImGui::Text("%lld", static_cast<long long>(r.head_dim));
        ImGui::TableNextColumn();
        ImGui::Text("%lldx%lld", static_cast<long long>(r.batch), static_cast<long long>(r.heads));
        if (!r.error.empty()) {
            ImGui::TableNextColumn();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "failed");
            if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.error.c_str());
            continue;
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_fixed(r.ms, 3).c_str());
        const bool visible = ImGui::IsItemVisible();  // rung 3 is computed for the rows on screen only
        {
            const std::optional<KernelRung> k = visible ? rung_of_row(r) : std::nullopt;
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(k ? ui::fixed(k->seconds * 1e3, 3).c_str() : "-");
            if (k && ImGui::IsItemHovered())
                ImGui::SetTooltip("rung 3, this kernel: the kernel model for %s (%s), bound by %s", r.variant.c_str(),
                                  k->rates.c_str(), k->bound.c_str());
            ImGui::TableNextColumn();
            const double ratio = k && r.ms ? rung_ratio(*r.ms / 1e3, k->seconds) : 0;
            if (ratio > 0)
                ImGui::TextColored(
                    ImGui::ColorConvertU32ToFloat4(std::abs(ratio - 1) <= 0.15 ? ui::okabe::green : ui::okabe::orange),
                    "%s", ui::fixed(ratio, 2).c_str());
            else
                ImGui::TextUnformatted("-");
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_fixed(r.tflops, 0).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_bytes(r.dram_total()).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_bytes(r.sim_l2_total()).c_str());
        ImGui::TableNextColumn();
        // The counters see DRAM, behind the L2: compare them with the simulator's L2 model, and show
        // the count without L2 (the paper's HBM<->SRAM bytes) beside it for what L2 saved.
        const auto d = r.dram_total(), s = r.sim_total(), s2 = r.sim_l2_total();
        if (d && s2 && *s2 > 0) {
            ImGui::TextUnformatted(ui::fixed(*d / *s2, 2).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "counters' DRAM bytes / the simulator's DRAM bytes through its L2 model = %s\n"
                    "counters' DRAM bytes / HBM<->SRAM bytes without L2 = %s\n"
                    "Near 1: the L2 model explains the measured traffic. Below the second ratio's 1: "
                    "re-reads of K and V (or Q, O) were served by the L2 cache.",
                    ui::fixed(*d / *s2, 2).c_str(), s && *s > 0 ? ui::fixed(*d / *s, 2).c_str() : "-");
        } else if (d && s && *s > 0) {
            ImGui::TextDisabled("(no L2) %s", ui::fixed(*d / *s, 2).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "This row has no L2-model count; the ratio shown is against the HBM<->SRAM count "
                    "without L2, which re-reads served by the L2 cache make larger than DRAM's.");
        } else {
            ImGui::TextDisabled("-");
        }
        ImGui::TableNextColumn();  // the same, against the walk as a counted range sees it
        if (d && r.sim_l2_counters_view && *r.sim_l2_counters_view > 0) {
            ImGui::TextUnformatted(ui::fixed(*d / *r.sim_l2_counters_view, 2).c_str());
            if (ImGui::IsItemHovered())
                ImGui::SetTooltip(
                    "counters' DRAM bytes / (the L2 model's bytes less the dirty lines it leaves in L2 at the end\n"
                    "+ the %s MiB of writes the counters count in every range for no work)\n"
                    "The counters miss the lines a kernel leaves dirty (they reach DRAM after the range) and\n"
                    "count dirty lines that belong to no work (bench --counters-probe); lesson 10 explains.",
                    ui::fixed(r.counters_residue.value_or(0) / (1 << 20), 1).c_str());
        } else {
            ImGui::TextDisabled("-");
        }
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_bytes(r.sim_total()).c_str());
        const auto fl = r.anchor_ms("sdpa_flash"), cu = r.anchor_ms("sdpa_cudnn");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(opt_fixed(fl, 3).c_str());
        ImGui::TableNextColumn();  // their time / ours: 1 = as fast, 0.5 = half as fast
        if (fl && r.ms && *r.ms > 0)
            ImGui::TextUnformatted(ui::fixed(*fl / *r.ms, 2).c_str());
        else
            ImGui::TextDisabled("-");
        ImGui::TableNextColumn();
        if (cu && r.ms && *r.ms > 0)
            ImGui::TextUnformatted(ui::fixed(*cu / *r.ms, 2).c_str());
        else
            ImGui::TextDisabled("-");
    }
    ImGui::EndTable();
}

// time against N for each kernel and PyTorch's, under the filters (one line per kernel and d)
void time_chart(const MeasuredFile& f, const ViewState& v, ImVec2 size) {
    std::vector<chart::Line> lines;
    auto line_for = [&](const std::string& name, ImU32 col, bool dashed) -> chart::Line& {
        for (auto& l : lines)
            if (l.label == name) return l;
        lines.push_back({name, col, {}, {}, dashed, false});
        return lines.back();
    };
    std::set<std::pair<std::string, int64_t>> anchors_done;
    // a line a kernel and tag; the rounds of a side-by-side stage share their value's line (both
    // points at each N), and a tagged line is named by its tag alone, in a shade of the kernel's colour
    auto line_tag = [](const MeasuredRow& r) {
        std::string t = r.tag;
        if (const size_t p = t.rfind("round "); p != std::string::npos) t.erase(p >= 2 ? p - 2 : 0);
        return t;
    };
    std::vector<std::string> tags;
    auto colour_of = [&](const MeasuredRow& r, const std::string& tag) {
        if (tag.empty()) return variant_colour(r.variant);
        auto it = std::find(tags.begin(), tags.end(), tag);
        if (it == tags.end()) it = tags.insert(tags.end(), tag);
        const size_t k = static_cast<size_t>(it - tags.begin()) % 3 + 1;  // never the untagged line's own colour
        const ImU32 base = variant_colour(r.variant);
        return k == 0   ? base
               : k == 1 ? ui::mix(base, IM_COL32(255, 255, 255, 255), 0.5f)
               : k == 2 ? ui::mix(base, IM_COL32(0, 0, 0, 255), 0.45f)
                        : ui::mix(base, IM_COL32(255, 255, 255, 255), 0.8f);
    };
    std::set<std::string> tagged_kernels;  // more than one: a tagged line names its kernel too
    for (const auto& r : f.rows)
        if (!r.tag.empty()) tagged_kernels.insert(r.variant);
    for (const auto& r : f.rows) {
        if (!keep(r, v) || !r.ms || !r.error.empty()) continue;
        if (r.pass.rfind("ring", 0) == 0) continue;  // P devices' tokens, not one kernel against N: the table's
        const std::string suffix = v.measured_d == 0 ? " d=" + std::to_string(r.head_dim) : "";
        const std::string tag = line_tag(r);
        const std::string name = tag.empty() ? r.variant : tagged_kernels.size() > 1 ? r.variant + " " + tag : tag;
        auto& l = line_for(name + suffix, colour_of(r, tag), false);
        l.x.push_back(static_cast<double>(r.seq));
        l.y.push_back(*r.ms);
        if (auto fl = r.anchor_ms("sdpa_flash"); fl && anchors_done.insert({"f" + suffix, r.seq}).second) {
            auto& a = line_for("SDPA-flash" + suffix, ui::okabe::yellow, true);
            a.x.push_back(static_cast<double>(r.seq));
            a.y.push_back(*fl);
        }
    }
    for (auto& l : lines) {  // rows come in any order
        std::vector<size_t> idx(l.x.size());
        for (size_t i = 0; i < idx.size(); ++i) idx[i] = i;
        std::sort(idx.begin(), idx.end(), [&](size_t a, size_t b) { return l.x[a] < l.x[b]; });
        std::vector<double> x, y;
        for (size_t i : idx) x.push_back(l.x[i]), y.push_back(l.y[i]);
        l.x = x;
        l.y = y;
    }
    if (lines.empty()) {  // e.g. a ring file: its rows are the table's
        ImGui::TextDisabled("No timed row of one kernel against N here: the table above is the file's.");
        return;
    }
    chart::Axes ax;
    ax.title = "measured time (median)";
    ax.x_label = "N";
    ax.y_label = "ms (log); dashed: PyTorch SDPA-flash";
    ax.fmt_x = [](double x) {
        return x >= 1024 ? std::to_string(static_cast<long long>(x / 1024)) + "K" : ui::fixed(x, 0);
    };
    ax.fmt_y = [](double y) { return ui::fixed(y, y < 1 ? 2 : 1); };
    chart::lines("mtime", size, ax, lines);
}

void draw_file(const MeasuredFile& f, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    if (!f.error.empty()) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "%s", f.error.c_str());
        return;
    }
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::sky), "%s",
                       f.device.empty() ? "unknown GPU" : f.device.c_str());
    ImGui::SameLine();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyle().Colors[ImGuiCol_TextDisabled]);
    ui::wrapped("measured %s, driver %s, commit %s  (%s, %zu rows)", f.date.empty() ? "?" : f.date.c_str(),
                f.driver.empty() ? "?" : f.driver.c_str(), f.commit.empty() ? "?" : f.commit.substr(0, 12).c_str(),
                f.path.substr(f.path.find_last_of('/') + 1).c_str(), f.rows.size());
    ImGui::PopStyleColor();
    if (!f.anchor_note.empty()) ImGui::TextDisabled("%s", f.anchor_note.c_str());
    ImGui::PushID(f.path.c_str());
    const char* passes[] = {"forward", "backward"};
    const char* masks[] = {"no mask", "causal"};
    std::set<int64_t> dims;
    for (const auto& r : f.rows) dims.insert(r.head_dim);
    if (v.measured_d < 0) v.measured_d = dims.empty() ? 0 : static_cast<int>(*dims.begin());
    ImGui::SetNextItemWidth(fs * 7);
    ImGui::Combo("pass", &v.measured_pass, passes, 2);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 7);
    ImGui::Combo("mask", &v.measured_mask, masks, 2);
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 6);
    const std::string dl = v.measured_d ? "d = " + std::to_string(v.measured_d) : "all d";
    if (ImGui::BeginCombo("head dim", dl.c_str())) {
        if (ImGui::Selectable("all d", v.measured_d == 0)) v.measured_d = 0;
        for (int64_t d : dims)
            if (ImGui::Selectable(("d = " + std::to_string(d)).c_str(), v.measured_d == d))
                v.measured_d = static_cast<int>(d);
        ImGui::EndCombo();
    }
    ImGui::PopID();
    const float h = ImGui::GetContentRegionAvail().y;
    table(f, v, h * 0.5f);
    time_chart(f, v, ImVec2(ImGui::GetContentRegionAvail().x, std::max(fs * 10, h * 0.5f - fs * 4.5f)));
}

}  // namespace

void draw_measured_panel(const MeasuredSet& ms, const RunSet* rs, LiveRun* live, ViewState& v) {
    ui::wrapped(
        "The kernels in cuda/ timed on a real GPU. For each kernel's own tiling, the simulator's DRAM bytes "
        "through its L2 model and its HBM<->SRAM bytes without L2 (as the paper counts) stand beside the DRAM "
        "bytes the hardware counters saw (where they were read); the ratio compares the counters with the L2 "
        "model, and the next one with the L2 model as a counted range sees it (lesson 10, step 4).");
    ui::help("DRAM bytes");
    if (!ms.note.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
        ui::wrapped("%s", ms.note.c_str());
        ImGui::PopStyleColor();
        ImGui::TextDisabled("The simulator's own numbers are in the other views; they need no GPU.");
    }
    // one results file in full: the largest, or the one picked from the list (or a lesson step names)
    if (!ms.files.empty()) {
        // one list of the files, largest first (a button each took half the view at 24 files)
        std::vector<size_t> order(ms.files.size());
        for (size_t i = 0; i < order.size(); ++i) order[i] = i;
        std::stable_sort(order.begin(), order.end(),
                         [&](size_t a, size_t b) { return ms.files[a].rows.size() > ms.files[b].rows.size(); });
        auto name_of = [&](size_t i) {  // card/kind.json, as lessons name it ("h200/decode.json")
            const std::string& path = ms.files[i].path;
            const size_t last = path.find_last_of('/');
            const size_t prev =
                last == std::string::npos || last == 0 ? std::string::npos : path.find_last_of('/', last - 1);
            return prev == std::string::npos ? path.substr(last + 1) : path.substr(prev + 1);
        };
        auto label_of = [&](size_t i) {
            return name_of(i) + "  (" + std::to_string(ms.files[i].rows.size()) + " rows)";
        };
        if (!v.measured_open.empty()) v.measured_file = v.measured_open;
        size_t shown = order[0];
        for (size_t i : order)
            if (name_of(i) == v.measured_file) shown = i;
        ImGui::SetNextItemWidth(std::min(ImGui::GetContentRegionAvail().x, 28 * ImGui::GetFontSize()));
        if (ImGui::BeginCombo("results file", label_of(shown).c_str())) {
            for (size_t i : order)
                if (ImGui::Selectable(label_of(i).c_str(), i == shown)) v.measured_file = name_of(i);
            ImGui::EndCombo();
        }
        if (ImGui::IsItemHovered())
            ImGui::SetTooltip("%zu results files, the largest first; results/README.md says what each holds",
                              ms.files.size());
        draw_file(ms.files[shown], v);
        v.measured_open.clear();
    }
    // a live measurement on this machine's GPU, when the build and the machine have one
    std::string why;
    if (live && LiveRun::available(&why)) {
        ImGui::BeginDisabled(live->running() || !rs);
        if (ImGui::Button("Measure the three kernels on this GPU (current N, d, dtype)") && rs)
            live->start(rs->problem, rs->machine.name);
        ImGui::EndDisabled();
        if (live->running()) ImGui::ProgressBar(live->progress(), ImVec2(-1, 0), "running on the GPU...");
        if (live->has_result()) draw_file(live->result(), v);
    } else {
        ImGui::PushStyleColor(ImGuiCol_Text, st_disabled());
        ui::wrapped("Live run: %s.", why.c_str());
        ImGui::PopStyleColor();
    }
    ImGui::PushStyleColor(ImGuiCol_Text, st_disabled());
    ui::wrapped("\"-\": not recorded. Speed vs SDPA = PyTorch's time / this kernel's time (1 = as fast).");
    ImGui::PopStyleColor();
    ui::help("SDPA");
}

}  // namespace viz
