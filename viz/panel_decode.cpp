// viz/panel_decode.cpp — decoding: one new token a sequence against a long KV cache, split-KV as
// sim::simulate_decode walks it. The cache cut into splits (each split's keys and bytes), the merge,
// the step's time on the timing ladder's rungs beside the recorded row, and the worked row's split
// and merge (each split's max, sum and partial output, then the weights that join them).
#include <algorithm>
#include <cmath>
#include <string>

#include "viz/decode_view.hpp"
#include "viz/rungs.hpp"
#include "viz/panels.hpp"
#include "viz/ui.hpp"
#include "viz/visible_area.hpp"

namespace viz {

namespace {
// The step's shape, editable: a field applies on Enter (or when left) within the simulator's limits.
void shape_fields(ViewState& v) {
    const float fs = ImGui::GetFontSize();
    DecodeShape& d = v.decode;
    auto field = [&](const char* label, int64_t& x, int64_t lo, const char* term) {
        int val = static_cast<int>(std::min<int64_t>(x, 1 << 30));
        ImGui::SetNextItemWidth(fs * 6);
        if (ImGui::InputInt(label, &val, 0, 0, ImGuiInputTextFlags_EnterReturnsTrue) ||
            ImGui::IsItemDeactivatedAfterEdit())
            x = std::max<int64_t>(lo, val);
        if (term) ui::help(term);
    };
    // the next field on this line where it fits, else on the next (at 2x zoom the three do not)
    auto next = [&](const char* label) {
        const float need = fs * 6 + ImGui::GetStyle().ItemInnerSpacing.x + ImGui::CalcTextSize(label).x + fs * 3;
        const float right = ImGui::GetWindowPos().x + ImGui::GetWindowContentRegionMax().x;
        if (ImGui::GetItemRectMax().x + fs * 1.5f + need <= right) ImGui::SameLine(0, fs * 1.5f);
    };
    field("sequences B", d.batch, 1, nullptr);
    next("cached keys L");
    field("cached keys L", d.kv_len, 1, "KV cache");
    next("splits (0: the model's)");
    field("splits (0: the model's)", d.splits, 0, "split-KV");
}

// The cache of one (sequence, KV head) as a bar cut into its splits.
void split_bar(const DecodeView& dv) {
    const float fs = ImGui::GetFontSize();
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    const float w = std::max(fs * 10, ImGui::GetContentRegionAvail().x - fs), h = fs * 1.6f;
    const double L = static_cast<double>(dv.result.problem.kv_len);
    for (const auto& s : dv.splits) {
        const float x0 = p0.x + static_cast<float>(s.first_key / L) * w;
        const float x1 = p0.x + static_cast<float>((s.first_key + s.keys) / L) * w;
        const ImU32 col = s.index % 2 ? ui::okabe::blue : ui::okabe::sky;
        dl->AddRectFilled(ImVec2(x0, p0.y), ImVec2(std::max(x1, x0 + 1), p0.y + h), ui::with_alpha(col, 190));
        dl->AddLine(ImVec2(x0, p0.y), ImVec2(x0, p0.y + h), IM_COL32(20, 20, 20, 255));
        const std::string n = std::to_string(s.index + 1);
        if (x1 - x0 > ImGui::CalcTextSize(n.c_str()).x + 4)
            ui::text_centred(dl, ImVec2(x0, p0.y), ImVec2(x1, p0.y + h), IM_COL32(0, 0, 0, 255), n);
    }
    dl->AddText(ImVec2(p0.x, p0.y + h + 2), ui::text_dim, "key 0");
    const std::string end = "key " + ui::count(dv.result.problem.kv_len - 1);
    dl->AddText(ImVec2(p0.x + w - ImGui::CalcTextSize(end.c_str()).x, p0.y + h + 2), ui::text_dim, end.c_str());
    ImGui::Dummy(ImVec2(w, h + fs * 1.3f));
}

// Each split's keys and bytes (all its blocks), then the merge and the sum.
void split_table(const DecodeView& dv) {
    const float fs = ImGui::GetFontSize();
    const sim::DecodeResult& r = dv.result;
    const bool several = r.split.splits > 1;
    // columns as wide as their figures; a narrow window scrolls the table sideways instead of cutting them
    const ImGuiTableFlags tf = ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_ScrollY |
                               ImGuiTableFlags_ScrollX | ImGuiTableFlags_SizingFixedFit;
    const float rows_shown = static_cast<float>(std::min<size_t>(dv.splits.size(), 6)) + 1.5f;
    if (ImGui::BeginTable("decode_splits", 6, tf, ImVec2(0, ImGui::GetTextLineHeightWithSpacing() * rows_shown + fs))) {
        ImGui::TableSetupScrollFreeze(0, 1);
        ImGui::TableSetupColumn("split");
        ImGui::TableSetupColumn("keys");
        ImGui::TableSetupColumn("reads K, V");
        ImGui::TableSetupColumn("reads Q");
        ImGui::TableSetupColumn(several ? "writes O_s, LSE_s" : "writes O");
        ImGui::TableSetupColumn("moves");
        ImGui::TableHeadersRow();
        ImGuiListClipper clip;
        clip.Begin(static_cast<int>(dv.splits.size()));
        while (clip.Step())
            for (int i = clip.DisplayStart; i < clip.DisplayEnd; ++i) {
                const DecodeSplitRow& s = dv.splits[static_cast<size_t>(i)];
                ImGui::TableNextRow();
                ImGui::TableNextColumn();
                ImGui::Text("%lld", static_cast<long long>(s.index + 1));
                ImGui::TableNextColumn();
                ImGui::TextUnformatted((ui::count(s.first_key) + " to " + ui::count(s.first_key + s.keys - 1)).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(ui::bytes(double(s.kv_bytes)).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(ui::bytes(double(s.q_bytes)).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(ui::bytes(double(s.out_bytes)).c_str());
                ImGui::TableNextColumn();
                ImGui::TextUnformatted(ui::bytes(double(s.total())).c_str());
            }
        ImGui::EndTable();
    }
    int64_t splits_total = 0;
    for (const auto& s : dv.splits) splits_total += s.total();
    if (several)
        ui::wrapped(
            "The merge, one block per (sequence, query head): reads every partial back (%s) and writes O (%s). "
            "All splits and the merge: %s, of which K and V %s.",
            ui::bytes(double(r.merge_read_bytes)).c_str(), ui::bytes(double(r.o_write_bytes)).c_str(),
            ui::bytes(double(splits_total + r.merge_read_bytes + r.o_write_bytes)).c_str(),
            ui::bytes(double(r.kv_read_bytes)).c_str());
    else
        ui::wrapped("One split: each block writes O itself and there is no merge. In all: %s, of which K and V %s.",
                    ui::bytes(double(splits_total)).c_str(), ui::bytes(double(r.kv_read_bytes)).c_str());
}

// The step's time: rung 1 (bytes bound), the decode model, the recorded row.
void decode_times(const DecodeView& dv) {
    const sim::DecodeResult& r = dv.result;
    ImGui::TextUnformatted("Time for the step:");
    ui::help("predicted time");
    ui::wrapped("%s (rung 1): all %s at %s (%s) = %s.", kRungBytes, ui::bytes(double(r.total_bytes())).c_str(),
                (ui::fixed(r.bandwidth / 1e12, 2) + " TB/s").c_str(), r.bandwidth_source.c_str(),
                ui::seconds(dv.bytes_bound_s).c_str());
    ui::wrapped(
        "the decode model (this kernel's splits): the split kernel %s (its %lld blocks reach %s of the bandwidth)"
        " + the merge %s + %s of launches = %s.",
        ui::seconds(r.split_kernel_s).c_str(), static_cast<long long>(r.split.blocks),
        (ui::fixed(r.fill * 100, 0) + "%").c_str(), ui::seconds(r.merge_s).c_str(), ui::seconds(r.launch_s).c_str(),
        ui::seconds(r.total_s).c_str());
    if (dv.recorded) {
        const DecodeRecorded& m = *dv.recorded;
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::orange));
        ui::wrapped(
            "measured (results/%s, %s): median %s with %lld splits, K and V read at %s TB/s; the model's "
            "prediction recorded beside it %s (one launch: the kernel merges in its last blocks).",
            m.file.c_str(), m.device.c_str(), ui::seconds(m.ms * 1e-3).c_str(), static_cast<long long>(m.splits),
            ui::fixed(m.tbps, 2).c_str(), m.sim_ms > 0 ? ui::seconds(m.sim_ms * 1e-3).c_str() : "not recorded");
        ImGui::PopStyleColor();
    } else {
        ImGui::TextDisabled("measured: none (%s)", dv.recorded_note.c_str());
    }
}

// The worked row (the softmax view's scores and values) cut into splits of its block size.
void worked_row(const ViewState& v) {
    if (v.softmax_scores.empty()) return;
    std::vector<std::vector<double>> values = v.softmax_values;
    const bool have_v = !values.empty();
    if (!have_v) values.assign(v.softmax_scores.size(), std::vector<double>{1.0});
    sim::RowSplitMerge sm;
    try {
        sm = sim::split_merge_row(scores_for_sim(v.softmax_scores), values, std::max(1, v.softmax_block_good));
    } catch (const std::exception& e) {
        ui::wrapped("The worked row: %s", e.what());
        return;
    }
    ImGui::TextUnformatted("One row, split as the cache is (the online softmax view's scores; a split a block):");
    ui::help("merge");
    const ImGuiTableFlags tf =
        ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV | ImGuiTableFlags_SizingStretchProp;
    if (ImGui::BeginTable("decode_row", have_v ? 7 : 6, tf)) {
        for (const char* h : {"split", "keys", "max m_s", "sum l_s", "LSE_s", "weight"}) ImGui::TableSetupColumn(h);
        if (have_v) ImGui::TableSetupColumn("output O_s");
        ImGui::TableHeadersRow();
        auto vec = [](const std::vector<double>& x) {
            std::string s = "(";
            for (size_t i = 0; i < x.size(); ++i) s += (i ? ", " : "") + ui::fixed(x[i], 4);
            return s + ")";
        };
        for (size_t i = 0; i < sm.splits.size(); ++i) {
            const sim::RowSplit& s = sm.splits[i];
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::Text("%zu", i + 1);
            ImGui::TableNextColumn();
            ImGui::Text("%lld to %lld", static_cast<long long>(s.first + 1), static_cast<long long>(s.first + s.count));
            const bool empty = !(s.state.l > 0) || s.state.m < -1e29;  // every score of the split masked
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(empty ? "-inf" : ui::fixed(s.state.m, 3).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(empty ? "0" : ui::fixed(s.state.l, 4).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(empty ? "-inf" : ui::fixed(s.lse, 4).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::fixed(s.weight, 4).c_str());
            if (have_v) {
                ImGui::TableNextColumn();
                ui::text_clipped(vec(s.out));
            }
        }
        ImGui::EndTable();
    }
    ui::wrapped("The merge: LSE = log(sum of e^LSE_s) = %s; each split's weight is e^(LSE_s - LSE), its share of the "
                "row's exp-sum%s%s.",
                ui::fixed(sm.lse, 4).c_str(), have_v ? "; O = the weighted sum of the O_s = " : "",
                have_v ? [&] {
                    std::string s = "(";
                    for (size_t i = 0; i < sm.out.size(); ++i) s += (i ? ", " : "") + ui::fixed(sm.out[i], 4);
                    return s + ")";
                }().c_str()
                       : "");
}
void draw_decode_panel_body(const RunSet& rs, ViewState& v) {
    const DecodeView dv = decode_view(v.decode, rs.machine);
    const DecodeShape& d = v.decode;
    ui::wrapped(
        "One decoding step: %s sequence%s, a cache of %s keys each, %lld query heads sharing %lld KV heads, "
        "d = %lld, %s, on the %s%s",
        ui::count(d.batch).c_str(), d.batch == 1 ? "" : "s", ui::count(d.kv_len).c_str(),
        static_cast<long long>(d.q_heads), static_cast<long long>(d.kv_heads), static_cast<long long>(d.head_dim),
        std::string(sim::dtype_name(d.dtype)).c_str(), rs.machine.name.c_str(),
        d.name.empty() ? "" : (" (the lesson's [decode." + d.name + "])").c_str());
    shape_fields(v);
    if (!dv.error.empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not simulated: %s", dv.error.c_str());
        ImGui::PopStyleColor();
        return;
    }
    const sim::DecodeResult& r = dv.result;
    ImGui::Separator();
    ui::wrapped(
        "Each (sequence, KV head)'s cache cut into %lld split%s of up to %s keys: %lld thread blocks "
        "(%lld (sequence, KV head) pairs x %lld splits) against the %lld the model wants (%d an SM).",
        static_cast<long long>(r.split.splits), r.split.splits == 1 ? "" : "s",
        ui::count(r.split.keys_per_split).c_str(), static_cast<long long>(r.split.blocks),
        static_cast<long long>(d.batch * d.kv_heads), static_cast<long long>(r.split.splits),
        static_cast<long long>(r.split.target_blocks), sim::DecodeConfig{}.blocks_per_sm);
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::text_dim));
    ui::wrapped("Why: %s", r.split.why.c_str());
    ImGui::PopStyleColor();
    split_bar(dv);
    split_table(dv);
    ImGui::Separator();
    decode_times(dv);
    ImGui::Separator();
    worked_row(v);
}

}  // namespace

void draw_decode_panel(const RunSet& rs, ViewState& v) {
    begin_visible_area("decoding");
    draw_decode_panel_body(rs, v);
    ImGui::EndChild();
}

}  // namespace viz
