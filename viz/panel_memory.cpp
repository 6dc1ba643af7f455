// viz/panel_memory.cpp — one algorithm on the memory hierarchy: tiles in HBM, tiles in SRAM, this
// step's transfers, and running byte counters beside standard attention's total.
#include <algorithm>
#include <cstdio>
#include <string>

#include "viz/rungs.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

void counters(const RunSet& rs, sim::Algo algo, const Replay& rp, const Timeline& tl, Cursor c) {
    const sim::Result& r = rs.result(algo);
    const sim::Totals& so_far = rp.totals();
    const int64_t heads = std::max<int64_t>(1, r.problem.heads_total());
    ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::algo_colour(algo)), "%s",
                       std::string(sim::algo_name(algo)).c_str());
    ui::help(std::string(sim::algo_name(algo)));
    // counted from 1, with the index the event lists and the lessons' text use (from 0) beside it
    const int64_t at = std::min(c.step, tl.steps_kept - 1);
    ImGui::Text("step %lld of %lld (s = %lld)", static_cast<long long>(at + 1), static_cast<long long>(tl.steps_total),
                static_cast<long long>(at));
    ui::help("step");
    // the blocks of each pass walked (the backward halves its blocks until its buffers fit)
    auto blocks = [&](const char* pass, int64_t br, int64_t bc, int64_t tr, int64_t tc) {
        if (pass) ImGui::TextDisabled("%s", pass);
        ImGui::Text("B_r = %lld", static_cast<long long>(br));
        ui::help("B_r");
        ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
        ImGui::Text("B_c = %lld", static_cast<long long>(bc));
        ui::help("B_c");
        ImGui::Text("T_r = %lld", static_cast<long long>(tr));
        ui::help("T_r");
        ImGui::SameLine(0, ImGui::GetFontSize() * 1.5f);
        ImGui::Text("T_c = %lld", static_cast<long long>(tc));
        ui::help("T_c");
    };
    const bool bwd = r.bwd_block_rows > 0, fwd = rs.params.pass != sim::Pass::backward || !bwd;
    const bool differ = bwd && fwd && (r.bwd_block_rows != r.block_rows || r.bwd_block_cols != r.block_cols);
    if (fwd) blocks(differ ? "forward pass:" : nullptr, r.block_rows, r.block_cols, r.T_r, r.T_c);
    if (bwd && (!fwd || differ))
        blocks(fwd ? "backward pass:" : nullptr, r.bwd_block_rows, r.bwd_block_cols, r.bwd_T_r, r.bwd_T_c);
    ImGui::Separator();
    ImGui::TextUnformatted("HBM traffic so far (head 0)");
    ui::help("HBM");
    if (ImGui::BeginTable("tensors", 3, ImGuiTableFlags_SizingStretchProp | ImGuiTableFlags_RowBg)) {
        ImGui::TableSetupColumn("tensor");
        ImGui::TableSetupColumn("read");
        ImGui::TableSetupColumn("written");
        ImGui::TableHeadersRow();
        for (int k = 0; k < sim::kTensorCount; ++k) {
            const auto t = static_cast<sim::Tensor>(k);
            const sim::Traffic whole = r.totals[t];
            if (whole.total() == 0) continue;  // tensors this algorithm never moves
            const sim::Traffic& x = so_far[t];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::TextColored(ImGui::ColorConvertU32ToFloat4(ui::tensor_colour(t)), "%s",
                               std::string(sim::tensor_name(t)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::bytes(static_cast<double>(x.read_bytes)).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::bytes(static_cast<double>(x.write_bytes)).c_str());
        }
        const sim::Traffic tot = so_far.hbm_total();
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted("total");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::bytes(static_cast<double>(tot.read_bytes)).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::bytes(static_cast<double>(tot.write_bytes)).c_str());
        ImGui::EndTable();
    }
    ImGui::Text("FLOPs so far: %s", ui::flops(static_cast<double>(so_far.flops.total())).c_str());
    ui::help("FLOPs");
    if (algo != sim::Algo::standard) {
        ImGui::Text("rescales (a row a key block): %s", ui::count(so_far.rescales).c_str());
        ui::help("rescale");
    }
    // bytes so far against standard attention's whole run (head 0)
    const double std_total = static_cast<double>(rs.result(sim::Algo::standard).totals.hbm_total().total()) / heads;
    const double mine_total = static_cast<double>(r.totals.hbm_total().total()) / heads;
    const double now = static_cast<double>(so_far.hbm_total().total());
    ImGui::Spacing();
    ImGui::TextUnformatted("moved so far vs standard's total");
    ui::help("vs standard");
    {
        const float w = ImGui::GetContentRegionAvail().x, h = ImGui::GetFontSize() * 1.4f;
        const ImVec2 p = ImGui::GetCursorScreenPos();
        ImDrawList* dl = ImGui::GetWindowDrawList();
        ImGui::Dummy(ImVec2(w, h));
        dl->AddRectFilled(p, ImVec2(p.x + w, p.y + h), ui::cell_empty, 3);
        const float f = std_total > 0 ? static_cast<float>(std::min(1.0, now / std_total)) : 0;
        dl->AddRectFilled(p, ImVec2(p.x + w * f, p.y + h), ui::algo_colour(algo), 3);
        const float fe = std_total > 0 ? static_cast<float>(std::min(1.0, mine_total / std_total)) : 0;
        dl->AddLine(ImVec2(p.x + w * fe, p.y - 2), ImVec2(p.x + w * fe, p.y + h + 2), IM_COL32(255, 255, 255, 230), 2);
        const std::string s =
            ui::fixed(std_total > 0 ? 100.0 * now / std_total : 0, 1) + "% of " + ui::bytes(std_total);
        ui::text_centred(dl, p, ImVec2(p.x + w, p.y + h), IM_COL32(255, 255, 255, 255), s);
    }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::wrapped("white tick: where %s ends (%s)", std::string(sim::algo_name(algo)).c_str(),
                ui::bytes(mine_total).c_str());
    ImGui::PopStyleColor();
    ImGui::Separator();
    ImGui::Text("Whole run, %lld head%s:", static_cast<long long>(heads), heads > 1 ? "s" : "");
    ImGui::BulletText("HBM: %s", ui::bytes(static_cast<double>(r.totals.hbm_total().total())).c_str());
    ImGui::BulletText("FLOPs: %s", ui::flops(static_cast<double>(r.totals.flops.total())).c_str());
    ImGui::BulletText("SRAM peak: %s", ui::bytes(static_cast<double>(r.sram_peak_bytes)).c_str());
    if (r.l2.simulated) {
        ImGui::BulletText("HBM after L2: %s", ui::bytes(static_cast<double>(r.l2.hbm_total().total())).c_str());
        ui::help("L2");
        ImGui::BulletText("L2 hits: %s%% of bytes loaded", ui::fixed(100.0 * r.l2.hit_rate, 0).c_str());
    }
    if (r.timing.computed) {
        ImGui::Bullet();
        ui::wrapped("%s (rung 2): %s", kRungIdeal, ui::seconds(r.timing.predicted_ms / 1e3).c_str());
        ui::help(kRungIdeal);
    }
    ImGui::Bullet();
    if (tl.whole_is_estimate())  // the kept steps are a prefix: print the whole run, say what the prefix is
        ui::wrapped("app's clock, one head: about %s (the animated first %s steps: %s)",
                    ui::seconds(tl.whole_time).c_str(), ui::count(tl.steps_kept).c_str(),
                    ui::seconds(tl.total_time()).c_str());
    else
        ui::wrapped("app's clock, one head: %s", ui::seconds(tl.whole_time).c_str());
    ui::help("clock");
    if (tl.truncated) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::yellow));
        ui::wrapped(
            "The trace keeps the first %s of %s events, so the animation stops at step %s of %s. "
            "The whole-run figures above still count everything.",
            ui::count(static_cast<int64_t>(r.trace.events.size())).c_str(), ui::count(r.trace.events_total).c_str(),
            ui::count(tl.steps_kept).c_str(), ui::count(tl.steps_total).c_str());
        ImGui::PopStyleColor();
        ui::help("event cap");
    }
}

}  // namespace

void draw_memory_panel(const RunSet& rs, ReplayCache& cache, ViewState& v) {
    const sim::Algo algo = v.algo;
    const Timeline& tl = rs.timeline(algo);
    Replay& rp = cache.get(rs, algo);
    // algorithm switch (all three are already simulated: switching is instant)
    ImGui::TextUnformatted("Algorithm:");
    for (sim::Algo a : kAlgos) {
        ImGui::SameLine();
        if (ImGui::RadioButton(std::string(sim::algo_name(a)).c_str(), v.algo == a)) switch_algo(v, &rs, a);
        ui::help(std::string(sim::algo_name(a)));
    }
    problem_line(rs);
    const ImVec2 avail = ImGui::GetContentRegionAvail();
    const float side = std::max(ImGui::GetFontSize() * 17.0f, avail.x * 0.3f);
    // never shorter than the hierarchy needs (the view scrolls down instead of boxes overlapping)
    const float hier_w = avail.x - side - 8;
    ImGui::BeginChild("hier", ImVec2(hier_w, std::max(avail.y, hierarchy_least_height(rp, false, hier_w))), false,
                      ImGuiWindowFlags_NoScrollbar);
    {
        const ImVec2 p = ImGui::GetCursorScreenPos(), sz = ImGui::GetContentRegionAvail();
        draw_hierarchy(ImGui::GetWindowDrawList(), p, ImVec2(p.x + sz.x, p.y + sz.y), rs, algo, rp, v.cursor, false, v);
        // legend for the HBM cells
        ImGui::Dummy(sz);
    }
    ImGui::EndChild();
    ImGui::SameLine();
    ImGui::BeginChild("counters", ImVec2(side, avail.y), false);
    counters(rs, algo, rp, tl, v.cursor);
    ImGui::Separator();
    ImGui::TextDisabled("HBM tiles: dark = untouched,");
    ImGui::TextDisabled("tinted = read, full colour = written.");
    ImGui::TextDisabled("SRAM: tiles resident this step");
    ui::help("resident");
    ImGui::EndChild();
}

}  // namespace viz
