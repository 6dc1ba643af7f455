// viz/panel_measured.cpp — the CUDA kernels' recorded measurements (cuda/results/*.json) beside the
// simulator's count for the same tiling: bytes, their ratio, time, TFLOP/s, PyTorch's kernels.
#include <cmath>
#include <string>

#include "viz/live_run.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {
std::string opt_bytes(const std::optional<double>& b) { return b ? ui::bytes(*b) : "-"; }
std::string opt_fixed(const std::optional<double>& x, int digits) { return x ? ui::fixed(*x, digits) : "-"; }

void draw_file(const MeasuredFile& f) {
    const float fs = ImGui::GetFontSize();
    ImGui::Separator();
    if (!f.error.empty()) {
        ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "%s", f.error.c_str());
        return;
    }
    ImGui::Text("%s", f.path.c_str());
    ImGui::Text("GPU: %s   driver: %s   measured: %s   commit: %s", f.device.empty() ? "?" : f.device.c_str(),
                f.driver.empty() ? "?" : f.driver.c_str(), f.date.empty() ? "?" : f.date.c_str(),
                f.commit.empty() ? "?" : f.commit.substr(0, 12).c_str());
    const int cols = 12;
    if (ImGui::BeginTable(f.path.c_str(), cols,
                          ImGuiTableFlags_RowBg | ImGuiTableFlags_Borders | ImGuiTableFlags_ScrollY | ImGuiTableFlags_SizingFixedFit,
                          ImVec2(0, std::min(ImGui::GetContentRegionAvail().y, fs * 1.6f * (static_cast<float>(f.rows.size()) + 2.0f))))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        for (const char* h : {"kernel", "pass", "N", "d", "BxH", "mask", "ms", "TFLOP/s", "simulated", "DRAM measured",
                              "DRAM / sim", "vs PyTorch"})
            ImGui::TableSetupColumn(h);
        ImGui::TableHeadersRow();
        for (const auto& r : f.rows) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.variant.c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.pass.c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%lld", static_cast<long long>(r.seq));
            ImGui::TableNextColumn();
            ImGui::Text("%lld", static_cast<long long>(r.head_dim));
            ImGui::TableNextColumn();
            ImGui::Text("%lldx%lld", static_cast<long long>(r.batch), static_cast<long long>(r.heads));
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(r.causal ? "causal" : "none");
            if (!r.error.empty()) {
                ImGui::TableNextColumn();
                ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion), "failed");
                if (ImGui::IsItemHovered()) ImGui::SetTooltip("%s", r.error.c_str());
                return;
            }
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(opt_fixed(r.ms, 3).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(opt_fixed(r.tflops, 1).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(opt_bytes(r.sim_total()).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(opt_bytes(r.dram_total()).c_str());
            ImGui::TableNextColumn();
            const auto d = r.dram_total(), s = r.sim_total();
            if (d && s && *s > 0) ImGui::TextUnformatted(ui::fixed(*d / *s, 2).c_str());
            else ImGui::TextDisabled("-");
            ImGui::TableNextColumn();
            if (r.vs_torch.empty()) {
                ImGui::TextDisabled("-");
            } else {
                std::string t;
                for (const auto& [k, x] : r.vs_torch) t += (t.empty() ? "" : ", ") + k + " " + ui::fixed(x, 2);
                ImGui::TextUnformatted(t.c_str());
            }
        }
        ImGui::EndTable();
    }
    }
}  // namespace

void draw_measured_panel(const MeasuredSet& ms, const RunSet* rs, LiveRun* live, ViewState& v) {
    (void)v;
    ImGui::TextWrapped("Simulated HBM bytes beside the DRAM bytes the GPU's counters saw, for the kernels in cuda/. "
                       "A ratio near 1 means the simulator's tile loop is the kernel's traffic.");
    ui::help("DRAM bytes");
    if (!ms.note.empty()) {
        ImGui::Spacing();
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
        ImGui::TextWrapped("%s", ms.note.c_str());
        ImGui::PopStyleColor();
        ImGui::TextDisabled("The simulator's own numbers are in the other views; they need no GPU.");
    }
    for (const auto& f : ms.files) draw_file(f);
    // a live measurement on this machine's GPU, when the build and the machine have one
    ImGui::Separator();
    std::string why;
    if (live && LiveRun::available(&why)) {
        ImGui::BeginDisabled(live->running() || !rs);
        if (ImGui::Button("Measure the three kernels on this GPU (current N, d, dtype)") && rs) live->start(rs->problem, rs->machine.name);
        ImGui::EndDisabled();
        if (live->running()) ImGui::ProgressBar(live->progress(), ImVec2(-1, 0), "running on the GPU...");
        if (live->has_result()) draw_file(live->result());
    } else {
        ImGui::TextDisabled("Live run: %s", why.c_str());
    }
    ImGui::Spacing();
    ImGui::TextDisabled("\"-\": not recorded (DRAM bytes come from an Nsight Compute run; see scripts/gpu_session.sh).");
    ui::help("TFLOP/s");
    ImGui::SameLine();
    ImGui::TextDisabled("PyTorch");
    ui::help("SDPA");
}

}  // namespace viz
