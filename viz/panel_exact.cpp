// viz/panel_exact.cpp — exact, but in which sense: the three outputs computed for real, their
// distances from the float64 reference and from each other, a histogram of flash2's ulp distances
// from standard, and where in the N x d output they fall.
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <string>
#include <utility>
#include <vector>

#include "viz/panels.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {
std::string sci(double x) {
    char b[32];
    std::snprintf(b, sizeof b, "%.2e", x);
    return b;
}

// a share to one decimal that never rounds to "100.0%" or "0.0%" unless it is all or none
std::string share_text(int64_t part, int64_t whole) {
    if (whole <= 0) return "-";
    if (part == whole) return "100%";
    if (part == 0) return "0%";
    const double s = 100.0 * static_cast<double>(part) / static_cast<double>(whole);
    if (s > 99.9) return "> 99.9%";
    if (s < 0.1) return "< 0.1%";
    return ui::fixed(s, 1) + "%";
}

std::string bin_label(size_t k) {
    if (k == 0) return "0 (bit-identical)";
    if (k == 1) return "1";
    const int64_t lo = int64_t{1} << (k - 1), hi = (int64_t{1} << k) - 1;
    return ui::count(lo) + "-" + ui::count(hi);
}

// 0 ulp: the empty cell's grey; 1 ulp: blue; growing distances toward yellow and vermillion
ImU32 ulp_colour(int64_t ulp) {
    if (ulp <= 0) return ui::cell_empty;
    const int b = ulp_bin(ulp);
    if (b <= 1) return ui::okabe::blue;
    if (b == 2) return ui::okabe::sky;
    if (b <= 4) return ui::okabe::yellow;
    if (b <= 6) return ui::okabe::orange;
    return ui::okabe::vermillion;
}

// flash2 against standard: how many elements lie at each distance in ulps, in bars of doubling width (distances
// of 2^9 ulps and more in one bar), drawn `width` wide
void draw_ulp_histogram(const ExactTensor& t, float width) {
    const float fs = ImGui::GetFontSize();
    const int64_t total = static_cast<int64_t>(t.ulps.size());
    constexpr size_t kBars = 11;  // 0, 1, 2-3, ..., 256-511, then >= 512
    std::vector<int64_t> bars(kBars, 0);
    for (size_t k = 0; k < t.ulp_bins.size(); ++k) bars[std::min(k, kBars - 1)] += t.ulp_bins[k];
    while (bars.size() > 2 && bars.back() == 0) bars.pop_back();
    int64_t most = 1;
    for (int64_t c : bars) most = std::max(most, c);
    const float label_w = fs * 6.5f, num_w = fs * 7, bar_w = std::max(fs * 4, width - label_w - num_w), bh = fs * 0.9f;
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    for (size_t k = 0; k < bars.size(); ++k) {
        const float y = p0.y + static_cast<float>(k) * fs * 1.1f;
        const bool last = k + 1 == kBars;
        const std::string label = last     ? ">= " + ui::count(int64_t{1} << (k - 1))
                                  : k == 0 ? "0 (same bits)"
                                           : bin_label(k);
        dl->AddText(ImVec2(p0.x, y), ui::text_dim, label.c_str());
        const float len = bar_w * static_cast<float>(bars[k]) / static_cast<float>(most);
        const ImU32 c = k == 0 ? ui::okabe::grey : ulp_colour(int64_t{1} << (k - 1));
        dl->AddRectFilled(ImVec2(p0.x + label_w, y + fs * 0.1f), ImVec2(p0.x + label_w + len, y + fs * 0.1f + bh), c,
                          2);
        const std::string n = ui::count(bars[k]) + " (" + share_text(bars[k], total) + ")";
        dl->AddText(ImVec2(p0.x + label_w + len + 4, y), ui::text_col, n.c_str());
    }
    ImGui::Dummy(ImVec2(width, static_cast<float>(bars.size()) * fs * 1.1f));
}

// where flash2 and standard differ in the N x d tensor: a cell per element (rows and columns grouped to fit), its
// colour the largest distance among the elements it covers, with a key beside it
void draw_ulp_map(const ExactTensor& t, const sim::Problem& p) {
    const float fs = ImGui::GetFontSize();
    const int64_t n = p.seq, d = p.head_dim;
    // say what a cell shows: when a cell covers several elements its colour is their worst, so the
    // map reads redder than the histogram's count of elements
    const int64_t rows_fit =
        std::max<int64_t>(1, static_cast<int64_t>(std::max(fs * 6, ImGui::GetContentRegionAvail().y) / 2));
    const int64_t per_cell = std::max<int64_t>(1, (n + rows_fit - 1) / rows_fit);
    if (per_cell > 1)
        ui::wrapped(
            "A cell covers about %lld rows; its colour is the largest distance among them (the histogram "
            "counts single elements).",
            static_cast<long long>(per_cell));
    else
        ImGui::TextDisabled("A cell is one element.");
    const float legend_w = fs * 6;
    const float w = std::max(fs * 4, ImGui::GetContentRegionAvail().x - legend_w - fs);
    const float h = std::max(fs * 6, ImGui::GetContentRegionAvail().y - fs * 0.5f);
    const int64_t rows = std::max<int64_t>(1, std::min<int64_t>(n, static_cast<int64_t>(h / 2)));
    const int64_t cols = std::max<int64_t>(1, std::min<int64_t>(d, static_cast<int64_t>(w / 2)));
    const float cw = w / static_cast<float>(cols), ch = h / static_cast<float>(rows);
    ImDrawList* dl = ImGui::GetWindowDrawList();
    const ImVec2 p0 = ImGui::GetCursorScreenPos();
    for (int64_t r = 0; r < rows; ++r) {
        const int64_t r0 = r * n / rows, r1 = std::max(r0 + 1, (r + 1) * n / rows);
        for (int64_t c = 0; c < cols; ++c) {
            const int64_t c0 = c * d / cols, c1 = std::max(c0 + 1, (c + 1) * d / cols);
            int64_t worst = 0;
            for (int64_t i = r0; i < r1; ++i)
                for (int64_t k = c0; k < c1; ++k) worst = std::max(worst, t.ulps[static_cast<size_t>(i * d + k)]);
            const ImVec2 a(p0.x + static_cast<float>(c) * cw, p0.y + static_cast<float>(r) * ch);
            dl->AddRectFilled(a, ImVec2(a.x + cw, a.y + ch), ulp_colour(worst));
        }
    }
    dl->AddRect(p0, ImVec2(p0.x + w, p0.y + h), ui::text_dim);
    const float lx = p0.x + w + fs * 0.6f;
    const std::pair<int64_t, const char*> keys[] = {{0, "same bits"}, {1, "1 ulp"},  {2, "2-3"},
                                                    {4, "4-15"},      {16, "16-63"}, {64, ">= 64"}};
    for (size_t i = 0; i < std::size(keys); ++i) {
        const float y = p0.y + static_cast<float>(i) * fs * 1.2f;
        dl->AddRectFilled(ImVec2(lx, y + 2), ImVec2(lx + fs * 0.9f, y + fs * 0.9f), ulp_colour(keys[i].first));
        dl->AddText(ImVec2(lx + fs * 1.3f, y), ui::text_col, keys[i].second);
    }
    if (rows < n || cols < d)
        dl->AddText(ImVec2(lx, p0.y + fs * 7.6f), ui::text_dim,
                    (ui::count((n + rows - 1) / rows) + " rows a cell").c_str());
    ImGui::Dummy(ImVec2(w + legend_w, h));
}
}  // namespace

void draw_exact_panel(const ExactJob& job, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    if (!job.refusal().empty()) {
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not computed: %s", job.refusal().c_str());
        ImGui::PopStyleColor();
        if (job.current()) ImGui::TextDisabled("below: the last problem computed");
    }
    if (!job.last_error().empty()) ui::wrapped("%s", job.last_error().c_str());
    const Exactness* x = job.current().get();
    if (job.busy())
        ImGui::TextDisabled(x ? "computing the new problem's outputs; below: the last ones computed"
                              : "computing the outputs (seconds at N = 8,192, d = 128)...");
    if (!x) return;
    const sim::Problem& p = x->problem;
    const char* dt = sim::dtype_name(p.dtype).data();
    v.exact_tensor = std::clamp(v.exact_tensor, 0, static_cast<int>(x->tensors.size()) - 1);
    const ExactTensor& t = x->tensors[static_cast<size_t>(v.exact_tensor)];
    const bool grad = v.exact_tensor > 0;
    if (x->tensors.size() > 1) {  // with a backward pass: the output or one of the gradients
        ImGui::TextUnformatted("Tensor:");
        for (size_t k = 0; k < x->tensors.size(); ++k) {
            ImGui::SameLine();
            ImGui::RadioButton(x->tensors[k].name.c_str(), &v.exact_tensor, static_cast<int>(k));
        }
        ImGui::SameLine();
        ImGui::TextDisabled("(the gradients of L = sum(O o dO), dO from the inputs' generator)");
    }
    if (grad)
        ImGui::Text("The gradients themselves: %s computed for real by each algorithm's backward pass", t.name.c_str());
    else
        ImGui::Text("The outputs themselves: O computed for real by each algorithm");
    ImGui::TextDisabled("N = %lld, d = %lld, %s%s, one head, seed %llu", static_cast<long long>(p.seq),
                        static_cast<long long>(p.head_dim), dt, mask_words(p).c_str(),
                        static_cast<unsigned long long>(p.seed));
    ui::wrapped(
        "Inputs Q, K, V stored in %s, arithmetic in float32 (as on a GPU), outputs rounded to %s. The yardstick is "
        "the same attention in float64, far closer to exact than any of them. Flash attention is exact as a "
        "formula: tiles and the online softmax change only the order of the additions and add rescales, so in "
        "exact arithmetic all three agree. In floating point each addition rounds, a different order rounds "
        "differently, and the outputs differ in their last bits, by about as much as each differs from the "
        "reference. (flash1 keeps O in float32 between its steps and rounds it once at the end, as cuda/flash1.cu "
        "does; standard runs on its own tiles, as its cuBLAS products do.)%s",
        dt, dt,
        grad ? " The backward adds its own orders: flash recomputes S and P tile by tile and adds each key block's "
               "share of dQ in turn; standard reads the P and dP it stored, rounded to the storage type."
             : "");
    ImGui::Spacing();
    // the comparisons
    // wider than the view (2x zoom, the window's row): the table scrolls sideways, its columns whole
    constexpr ImGuiTableFlags tf =
        ImGuiTableFlags_Borders | ImGuiTableFlags_RowBg | ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_ScrollX;
    const size_t rows = t.pairs.size() + (x->approximation && !grad ? 1 : 0) + 1;  // and the header
    const float table_h =
        static_cast<float>(rows) * (ImGui::GetTextLineHeight() + ImGui::GetStyle().CellPadding.y * 2 + 1) +
        ImGui::GetStyle().ScrollbarSize + 4;
    if (ImGui::BeginTable("exact_pairs", 5, tf, ImVec2(0, table_h))) {
        ImGui::TableSetupColumn("compared");
        ImGui::TableSetupColumn("max abs diff");
        ImGui::TableSetupColumn("relative");
        ImGui::TableSetupColumn("max ulp");
        ImGui::TableSetupColumn("bit-identical");
        ImGui::TableHeadersRow();
        auto row = [&](const std::string& what, const sim::ErrorStats& s, ImU32 col) {
            ImGui::TableNextRow();
            ImGui::TableNextColumn();
            ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(col));
            ImGui::TextUnformatted(what.c_str());
            ImGui::PopStyleColor();
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(sci(s.max_abs).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(sci(s.rel_frobenius).c_str());
            ImGui::TableNextColumn();
            ImGui::TextUnformatted(ui::count(s.max_ulp).c_str());
            ImGui::TableNextColumn();
            ImGui::Text("%s of %s", share_text(s.identical, s.count).c_str(), ui::count(s.count).c_str());
        };
        for (const ExactPair& e : t.pairs) {
            const auto a = sim::parse_algo(e.actual);
            row(e.actual + " vs " + (e.expected == "reference" ? "float64" : e.expected), e.stats,
                a ? ui::algo_colour(*a) : ui::text_col);
        }
        if (x->approximation && !grad)
            row("flash2, window " + ui::count(p.window) + ", vs exact causal (float64)", *x->approximation,
                ui::okabe::vermillion);
        ImGui::EndTable();
    }
    if (grad && t.name == "dQ" && p.dtype != sim::DType::fp32)
        ui::wrapped(
            "flash1's dQ is the float32 accumulator Algorithm 4 keeps in HBM, handed back as it is (the simulator's "
            "flash1 converts only O), so its rows show float32's error, not %s's.",
            dt);
    for (const ExactPair& e : t.pairs)  // the largest difference between the two algorithms, digit by digit
        if (e.expected == "standard" && e.stats.first_bad >= 0 && e.stats.max_abs > 0) {
            const auto i = static_cast<size_t>(e.stats.first_bad);
            const int64_t d = p.head_dim;
            ui::wrapped(
                "The largest difference between flash2 and standard: row %lld, column %lld, flash2 %.9g against "
                "standard %.9g (9 significant digits, all a float32 holds).",
                static_cast<long long>(e.stats.first_bad / d), static_cast<long long>(e.stats.first_bad % d),
                static_cast<double>(t.output[static_cast<size_t>(algo_index(sim::Algo::flash2))].data[i]),
                static_cast<double>(t.output[static_cast<size_t>(algo_index(sim::Algo::standard))].data[i]));
        }
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::wrapped(
        "max abs (difference) and relative (in the Frobenius norm) are against the float64 values; max ulp and "
        "bit-identical compare after rounding both "
        "to %s. ulps look large near zero (an ulp there is tiny): max abs and relative are the fair sizes",
        dt);
    ImGui::PopStyleColor();
    ui::term("ulp: unit in the last place", "ulp");
    if (p.window > 0 && p.window >= p.seq && !grad)
        ui::wrapped(
            "The window of %s keys is as long as N = %s: no query has a key beyond it, so it leaves nothing out "
            "here and there is no approximation to compare.",
            ui::count(p.window).c_str(), ui::count(p.seq).c_str());
    if (x->approximation && !grad)
        ui::wrapped(
            "The window row is an approximation, not rounding: it leaves keys out, so its error stays the same size "
            "at any precision (%s here, %s times flash2's own rounding error on this windowed problem, %s).",
            sci(x->approximation->max_abs).c_str(),
            ui::count(x->output().pairs.front().stats.max_abs > 0
                          ? static_cast<int64_t>(x->approximation->max_abs / x->output().pairs.front().stats.max_abs)
                          : 0)
                .c_str(),
            sci(x->output().pairs.front().stats.max_abs).c_str());
    ImGui::Spacing();
    const float avail_w = ImGui::GetContentRegionAvail().x;
    const float half = std::max(fs * 16, avail_w * 0.5f - fs);
    // left: the histogram of flash2 against standard, element by element (distances of 2^9 ulps and
    // more in one bar)
    ImGui::BeginGroup();
    ImGui::Text("flash2 against standard, element by element");
    ImGui::TextDisabled("distance in %s ulps: elements", dt);
    draw_ulp_histogram(t, half);
    ImGui::EndGroup();
    ImGui::SameLine(0, fs * 2);
    // right: where they differ in the N x d output, a cell per element (rows and columns grouped to
    // fit), its colour the largest distance among the elements it covers
    ImGui::BeginGroup();
    ImGui::Text("Where: the N x d %s", grad ? t.name.c_str() : "output");
    ImGui::TextDisabled("query rows down (row 0 at the top), d across");
    draw_ulp_map(t, p);
    ImGui::EndGroup();
}

}  // namespace viz
