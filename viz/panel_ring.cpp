// viz/panel_ring.cpp — ring attention over P GPUs (issue 16), as sim::simulate_ring models it: the
// GPUs in a ring, each with the chunks of the sequence it holds and the K/V slice it attends to in
// the step shown, the slice it sends on to the next GPU; the chunk grid (query chunks x key chunks)
// coloured by the GPU that computes each block, numbered by the step; the overlap of each step's
// send with its compute; and the ring's totals. Every number comes from the RingResult.
#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "viz/panels.hpp"
#include "viz/ring_view.hpp"
#include "viz/ui.hpp"

namespace viz {

namespace {

constexpr ImU32 kSkipped = IM_COL32(24, 24, 30, 255);
constexpr ImU32 kWhite = IM_COL32(255, 255, 255, 255);
constexpr ImU32 kBlack = IM_COL32(0, 0, 0, 255);

// One colour a GPU: Okabe & Ito's for rings of up to eight, evenly spaced hues beyond.
ImU32 device_colour(int64_t i, int64_t gpus) {
    static constexpr ImU32 k8[] = {
        ui::okabe::orange, ui::okabe::sky,        ui::okabe::green,  ui::okabe::yellow,
        ui::okabe::blue,   ui::okabe::vermillion, ui::okabe::purple, IM_COL32(205, 205, 210, 255)};
    if (gpus <= 8) return k8[static_cast<size_t>(i % 8)];
    const float h = static_cast<float>(i) / static_cast<float>(gpus);
    return ImColor::HSV(h, 0.55f, 0.92f);
}

// Text that reads on a colour: black on light colours, white on dark ones.
ImU32 ink_on(ImU32 c) {
    const float r = static_cast<float>((c >> IM_COL32_R_SHIFT) & 0xFF),
                g = static_cast<float>((c >> IM_COL32_G_SHIFT) & 0xFF),
                b = static_cast<float>((c >> IM_COL32_B_SHIFT) & 0xFF);
    return 0.299f * r + 0.587f * g + 0.114f * b > 120.0f ? kBlack : kWhite;
}

// A "(?)" whose tooltip holds the view's own note (terms the glossary has use ui::help instead).
void note_marker(const char* text) {
    ImGui::TextDisabled("(?)");
    if (ImGui::IsItemHovered()) {
        ImGui::BeginTooltip();
        ImGui::PushTextWrapPos(ImGui::GetFontSize() * 28.0f);
        ImGui::TextUnformatted(text);
        ImGui::PopTextWrapPos();
        ImGui::EndTooltip();
    }
}

// The marker after what was just drawn.
void note(const char* text) {
    ImGui::SameLine();
    note_marker(text);
}

// The marker in front of a paragraph (after a wrapped paragraph, SameLine would put it past the
// paragraph's widest line, beyond the window's edge).
void note_before(const char* text) {
    note_marker(text);
    ImGui::SameLine();
}

void swatch(ImU32 col, const char* text) {
    const float fs = ImGui::GetFontSize();
    const ImVec2 p = ImGui::GetCursorScreenPos();
    ImGui::GetWindowDrawList()->AddRectFilled(ImVec2(p.x, p.y + fs * 0.2f), ImVec2(p.x + fs * 0.8f, p.y + fs), col, 2);
    ImGui::Dummy(ImVec2(fs * 0.9f, fs));
    ImGui::SameLine();
    ImGui::TextUnformatted(text);
}

std::string join_chunks(const std::vector<int64_t>& cs) {
    std::string s;
    for (int64_t c : cs) s += (s.empty() ? "" : ", ") + std::to_string(c);
    return s;
}

const char* pass_of(const sim::RingPassResult& p) { return p.pass == 0 ? "forward" : "backward"; }

// ---------------------------------------------------------------- inputs
void inputs(ViewState& v) {
    const float fs = ImGui::GetFontSize();
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("GPUs P");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 6.5f);
    int g = static_cast<int>(std::clamp<int64_t>(v.ring.gpus, -1000, 1000));
    if (ImGui::InputInt("##gpus", &g)) v.ring.gpus = g;
    ImGui::SameLine(0, fs * 1.2f);
    ImGui::TextUnformatted("layout");
    ImGui::SameLine();
    if (ImGui::RadioButton("balanced", v.ring.layout == sim::RingLayout::balanced))
        v.ring.layout = sim::RingLayout::balanced;
    ImGui::SameLine();
    if (ImGui::RadioButton("contiguous", v.ring.layout == sim::RingLayout::contiguous))
        v.ring.layout = sim::RingLayout::contiguous;
    note(
        "Balanced: the sequence is cut into 2P chunks and GPU i holds chunks i and 2P-1-i, an early chunk with "
        "little to attend to beside a late one with much, so under a causal mask every GPU does the same work. "
        "Contiguous: GPU i holds the i-th stretch of N/P tokens; under a causal mask the last GPU does most.");
    ImGui::AlignTextToFramePadding();
    ImGui::TextUnformatted("pass");
    for (sim::Pass p : {sim::Pass::forward, sim::Pass::backward, sim::Pass::both}) {
        ImGui::SameLine();
        const char* name = p == sim::Pass::forward ? "forward" : p == sim::Pass::backward ? "backward" : "both";
        if (ImGui::RadioButton(name, v.ring.pass == p)) v.ring.pass = p;
    }
    ImGui::SameLine(0, fs * 1.2f);
    ImGui::TextUnformatted("heads H");
    ImGui::SameLine();
    ImGui::SetNextItemWidth(fs * 6.5f);
    int h = static_cast<int>(std::clamp<int64_t>(v.ring.heads, -1000, 100000));
    if (ImGui::InputInt("##heads", &h)) v.ring.heads = h;
}

// ---------------------------------------------------------------- the ring of GPUs
struct DeviceBox {
    ImVec2 centre;
    ImVec2 half;
};

void draw_ring(ImDrawList* dl, ImVec2 a, ImVec2 b, const sim::RingResult& r, const RingCursor& cur) {
    const float fs = ImGui::GetFontSize();
    const sim::RingProblem& p = r.problem;
    const int64_t P = p.gpus;
    const sim::RingPassResult& pr = r.passes[static_cast<size_t>(cur.pass_index)];
    const sim::RingStep& st = pr.steps[static_cast<size_t>(cur.step)];
    const ImVec2 c((a.x + b.x) * 0.5f, (a.y + b.y) * 0.5f);
    const float w = b.x - a.x, h = b.y - a.y;
    // How much a box can say: full boxes where neighbours do not overlap, numbered tiles, else dots.
    const auto place = [&](ImVec2 half) {
        const float rx = std::max(fs, w * 0.5f - half.x - 2), ry = std::max(fs, h * 0.5f - half.y - 2);
        std::vector<DeviceBox> out(static_cast<size_t>(P));
        for (int64_t i = 0; i < P; ++i) {
            const float th = -1.5707963f + 6.2831853f * static_cast<float>(i) / static_cast<float>(P);
            out[static_cast<size_t>(i)] = {ImVec2(c.x + rx * std::cos(th), c.y + ry * std::sin(th)), half};
        }
        return out;
    };
    const auto apart = [&](const std::vector<DeviceBox>& bs, float gap) {
        for (size_t i = 0; i + 1 < bs.size(); ++i)
            for (size_t j = i + 1; j < bs.size(); ++j)
                if (std::abs(bs[i].centre.x - bs[j].centre.x) < 2 * bs[i].half.x + gap &&
                    std::abs(bs[i].centre.y - bs[j].centre.y) < 2 * bs[i].half.y + gap)
                    return false;
        return true;
    };
    int detail = 0;
    std::vector<DeviceBox> boxes;
    if (P <= 16) {
        boxes = place(ImVec2(fs * 3.6f, fs * 1.75f));
        if (apart(boxes, fs * 1.2f)) detail = 2;
    }
    if (detail == 0) {
        boxes = place(ImVec2(fs * 0.85f, fs * 0.85f));
        if (apart(boxes, fs * 0.4f)) detail = 1;
    }
    if (detail == 0) {
        const float d = std::clamp(1.3f * std::min(w, h) / static_cast<float>(P), 3.0f, fs * 0.85f);
        boxes = place(ImVec2(d * 0.5f, d * 0.5f));
    }
    const ImVec2 half = boxes.empty() ? ImVec2(fs, fs) : boxes.front().half;
    const float rx = std::max(fs, w * 0.5f - half.x - 2), ry = std::max(fs, h * 0.5f - half.y - 2);
    // the sends of this step: GPU i -> GPU i+1, the slice it holds (with dK, dV in the backward)
    if (P > 1 && st.send_bytes > 0) {
        for (int64_t i = 0; i < P; ++i) {
            const DeviceBox& f = boxes[static_cast<size_t>(i)];
            const DeviceBox& t = boxes[static_cast<size_t>((i + 1) % P)];
            ImVec2 d(t.centre.x - f.centre.x, t.centre.y - f.centre.y);
            const float len = std::max(1.0f, std::sqrt(d.x * d.x + d.y * d.y));
            d = ImVec2(d.x / len, d.y / len);
            // leave each box at its edge along the line between centres
            auto edge = [&](const DeviceBox& bx, float sgn) {
                const float tx = std::abs(d.x) > 1e-4f ? bx.half.x / std::abs(d.x) : 1e9f;
                const float ty = std::abs(d.y) > 1e-4f ? bx.half.y / std::abs(d.y) : 1e9f;
                const float k = std::min(tx, ty) + 3.0f;
                return ImVec2(bx.centre.x + sgn * d.x * k, bx.centre.y + sgn * d.y * k);
            };
            const ImVec2 s0 = edge(f, 1.0f), s1 = edge(t, -1.0f);
            const float seg = (s1.x - s0.x) * d.x + (s1.y - s0.y) * d.y;
            if (seg <= 4) continue;  // boxes touch: no room for an arrow
            const ImU32 col = ui::with_alpha(ui::text_dim, 200);
            dl->AddLine(s0, s1, col, 1.5f);
            const float ah = std::min(fs * 0.45f, seg * 0.4f);
            const ImVec2 n(-d.y, d.x);
            dl->AddTriangleFilled(s1, ImVec2(s1.x - d.x * ah + n.x * ah * 0.5f, s1.y - d.y * ah + n.y * ah * 0.5f),
                                  ImVec2(s1.x - d.x * ah - n.x * ah * 0.5f, s1.y - d.y * ah - n.y * ah * 0.5f), col);
            // the slice on its way, coloured by its owner, as far along as the step is
            const int64_t owner = sim::ring_source(P, i, cur.step);
            const float f01 = static_cast<float>(std::clamp(cur.frac, 0.0, 1.0));
            const ImVec2 at(s0.x + (s1.x - s0.x) * f01, s0.y + (s1.y - s0.y) * f01);
            const float ps = std::clamp(seg * 0.12f, 2.5f, fs * 0.42f);
            dl->AddRectFilled(ImVec2(at.x - ps, at.y - ps), ImVec2(at.x + ps, at.y + ps), device_colour(owner, P), 2);
            dl->AddRect(ImVec2(at.x - ps, at.y - ps), ImVec2(at.x + ps, at.y + ps), kBlack, 2);
        }
    }
    // the GPUs
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    for (int64_t i = 0; i < P; ++i) {
        const DeviceBox& bx = boxes[static_cast<size_t>(i)];
        const ImVec2 p0(bx.centre.x - bx.half.x, bx.centre.y - bx.half.y),
            p1(bx.centre.x + bx.half.x, bx.centre.y + bx.half.y);
        const ImU32 col = device_colour(i, P);
        const int64_t src = sim::ring_source(P, i, cur.step);
        const sim::RingDeviceStep& ds = st.devices[static_cast<size_t>(i)];
        const bool works = ds.full_blocks + ds.diagonal_blocks > 0;
        if (detail == 2) {
            dl->AddRectFilled(p0, p1, ui::panel_bg, 4);
            dl->AddRect(p0, p1, col, 4, 0, works ? 2.0f : 1.0f);
            const float x = p0.x + fs * 0.3f;
            float y = p0.y + fs * 0.1f;
            const std::string title = "GPU " + std::to_string(i);
            dl->AddText(ImVec2(x, y), col, title.c_str());
            y += fs * 1.05f;
            const std::string q =
                "Q: chunk" + std::string(p.chunks_per_gpu() > 1 ? "s " : " ") + join_chunks(sim::ring_chunks(p, i));
            dl->AddText(ImVec2(x, y), ui::text_col, q.c_str());
            y += fs * 1.05f;
            // the K/V slice held now: a swatch in its owner's colour
            dl->AddRectFilled(ImVec2(x, y + fs * 0.15f), ImVec2(x + fs * 0.75f, y + fs * 0.9f), device_colour(src, P),
                              2);
            const std::string kv = "K/V of GPU " + std::to_string(src);
            dl->AddText(ImVec2(x + fs * 0.95f, y), works ? ui::text_col : ui::text_dim, kv.c_str());
        } else {
            // a tile in the GPU's colour with its number; a corner in the colour of the slice it holds
            dl->AddRectFilled(p0, p1, col, 3);
            const float k = std::min(bx.half.x, bx.half.y) * 0.9f;
            dl->AddTriangleFilled(ImVec2(p1.x - k, p1.y), p1, ImVec2(p1.x, p1.y - k), device_colour(src, P));
            dl->AddRect(p0, p1, works ? kWhite : kBlack, 3, 0, 1.0f);
            if (detail == 1) ui::text_centred(dl, p0, p1, ink_on(col), std::to_string(i));
        }
        if (ImGui::IsWindowHovered() && mouse.x >= p0.x && mouse.x <= p1.x && mouse.y >= p0.y && mouse.y <= p1.y) {
            ImGui::BeginTooltip();
            ImGui::Text("GPU %lld: query chunk%s %s (tokens %s a GPU)", static_cast<long long>(i),
                        p.chunks_per_gpu() > 1 ? "s" : "", join_chunks(sim::ring_chunks(p, i)).c_str(),
                        ui::count(p.tokens_per_gpu()).c_str());
            ImGui::Text("%s step %lld: the K/V slice of GPU %lld (chunk%s %s)", pass_of(pr),
                        static_cast<long long>(cur.step), static_cast<long long>(src),
                        p.chunks_per_gpu() > 1 ? "s" : "", join_chunks(sim::ring_chunks(p, src)).c_str());
            ImGui::Text("blocks: %lld full, %lld diagonal; %s query-key pairs a head",
                        static_cast<long long>(ds.full_blocks), static_cast<long long>(ds.diagonal_blocks),
                        ui::count(ds.pairs).c_str());
            ImGui::Text("compute %s, merge %s", ui::seconds(ds.compute_s).c_str(), ui::seconds(ds.merge_s).c_str());
            ImGui::EndTooltip();
        }
    }
    // in the middle, when there is room: what every GPU does in this step
    // the steps are numbered from 0, as the timeline's boxes and "GPU i-s" are: s = 0 .. steps - 1
    std::vector<std::string> lines = {std::string(pass_of(pr)) + " step s = " + std::to_string(cur.step) + " (" +
                                          std::to_string(cur.step + 1) + " of " + std::to_string(pr.steps.size()) + ")",
                                      cur.step == 0 ? std::string("each GPU attends to its own K/V")
                                                    : "GPU i attends to GPU i-" + std::to_string(cur.step) + "'s K/V"};
    if (P > 1 && st.send_bytes > 0)
        lines.push_back("sends " + ui::bytes(static_cast<double>(st.send_bytes)) +
                        " on: " + ui::seconds(st.transfer_s));
    else if (P > 1)
        lines.push_back("nothing left to send");
    lines.push_back("compute " + ui::seconds(st.compute_s) + " (slowest)");
    float tw = 0;
    for (const auto& l : lines) tw = std::max(tw, ImGui::CalcTextSize(l.c_str()).x);
    const float th = fs * 1.15f * static_cast<float>(lines.size());
    if (tw < 2 * (rx - half.x) - fs && th < 2 * (ry - half.y) - fs * 0.5f) {
        float y = c.y - th * 0.5f;
        for (size_t k = 0; k < lines.size(); ++k) {
            const float lw = ImGui::CalcTextSize(lines[k].c_str()).x;
            dl->AddText(ImVec2(c.x - lw * 0.5f, y), k == 0 ? ui::text_col : ui::text_dim, lines[k].c_str());
            y += fs * 1.15f;
        }
    }
}

// ---------------------------------------------------------------- the chunk grid
void draw_grid(ImDrawList* dl, ImVec2 p0, float side, const sim::RingResult& r, const RingCursor& cur) {
    const float fs = ImGui::GetFontSize();
    const sim::RingProblem& p = r.problem;
    const int64_t n = ring_parts(p), P = p.gpus;
    const float strip = std::max(3.0f, fs * 0.45f);
    const ImVec2 g0(p0.x + strip + 2, p0.y + strip + 2);
    const float cell = (side - strip - 2) / static_cast<float>(n);
    const float gap = cell > 6 ? 1.0f : 0.0f;
    const ImVec2 mouse = ImGui::GetIO().MousePos;
    // who owns each row (queries) and each column (keys)
    for (int64_t k = 0; k < n; ++k) {
        const ImU32 col = device_colour(chunk_device(p, k), P);
        const float o = static_cast<float>(k) * cell;
        dl->AddRectFilled(ImVec2(p0.x, g0.y + o), ImVec2(p0.x + strip, g0.y + o + cell - gap), col);
        dl->AddRectFilled(ImVec2(g0.x + o, p0.y), ImVec2(g0.x + o + cell - gap, p0.y + strip), col);
    }
    const bool numbers = cell >= fs * 1.15f;
    for (int64_t a = 0; a < n; ++a)
        for (int64_t b = 0; b < n; ++b) {
            const RingCell rc = ring_cell(p, a, b);
            const ImVec2 c0(g0.x + static_cast<float>(b) * cell, g0.y + static_cast<float>(a) * cell);
            const ImVec2 c1(c0.x + cell - gap, c0.y + cell - gap);
            if (rc.kind == sim::BlockKind::none) {
                dl->AddRectFilled(c0, c1, kSkipped);
                continue;
            }
            const ImU32 dev = device_colour(rc.device, P);
            const ImU32 col = rc.step <= cur.step ? dev : ui::mix(ui::cell_empty, dev, 0.3f);
            if (rc.kind == sim::BlockKind::diagonal) {  // queries see keys up to themselves: the lower triangle
                dl->AddRectFilled(c0, c1, kSkipped);
                dl->AddTriangleFilled(c0, ImVec2(c0.x, c1.y), c1, col);
            } else {
                dl->AddRectFilled(c0, c1, col);
            }
            if (numbers) {
                const std::string s = std::to_string(rc.step);
                const ImVec2 ts = ImGui::CalcTextSize(s.c_str());
                const ImVec2 at = rc.kind == sim::BlockKind::diagonal
                                      ? ImVec2(c0.x + cell * 0.08f, c1.y - ts.y - cell * 0.02f)
                                      : ImVec2((c0.x + c1.x - ts.x) * 0.5f, (c0.y + c1.y - ts.y) * 0.5f);
                dl->AddText(at, rc.step <= cur.step ? ink_on(dev) : ui::text_dim, s.c_str());
            }
            if (rc.step == cur.step) dl->AddRect(c0, c1, kWhite, 0, 0, cell > 8 ? 1.5f : 1.0f);
            if (ImGui::IsWindowHovered() && mouse.x >= c0.x && mouse.x < c1.x + gap && mouse.y >= c0.y &&
                mouse.y < c1.y + gap) {
                ImGui::BeginTooltip();
                ImGui::Text("query chunk %lld (GPU %lld's) x key chunk %lld (GPU %lld's)", static_cast<long long>(a),
                            static_cast<long long>(rc.device), static_cast<long long>(b),
                            static_cast<long long>(chunk_device(p, b)));
                ImGui::Text("%s block of %s x %s tokens, computed by GPU %lld in step %lld",
                            rc.kind == sim::BlockKind::full ? "a full" : "a diagonal (causal)",
                            ui::count(p.chunk()).c_str(), ui::count(p.chunk()).c_str(),
                            static_cast<long long>(rc.device), static_cast<long long>(rc.step));
                ImGui::EndTooltip();
            }
        }
}

// ---------------------------------------------------------------- the overlap timeline
// Returns the height drawn.
float draw_overlap(ImDrawList* dl, ImVec2 p0, float width, const sim::RingResult& r, const RingCursor& cur) {
    const float fs = ImGui::GetFontSize();
    const float label_w = fs * 9.0f, lh = fs * 1.25f;
    const float x0 = p0.x + label_w, w = std::max(fs * 6, width - label_w - fs * 2.0f);
    double t_max = 0;
    for (const auto& pr : r.passes) t_max += pr.time_s;
    if (!(t_max > 0)) t_max = 1e-9;
    const auto X = [&](double t) { return x0 + static_cast<float>(t / t_max) * w; };
    const float yc = p0.y, ys = p0.y + lh + 2;
    dl->AddText(ImVec2(p0.x, yc), ui::text_col, "compute");
    dl->AddText(ImVec2(p0.x, ys), ui::text_col, "send to next");
    dl->AddRectFilled(ImVec2(x0, yc), ImVec2(x0 + w, yc + lh), IM_COL32(36, 38, 46, 255));
    dl->AddRectFilled(ImVec2(x0, ys), ImVec2(x0 + w, ys + lh), IM_COL32(36, 38, 46, 255));
    const ImU32 c_comp = ui::okabe::blue, c_send = ui::okabe::sky, c_exp = ui::okabe::vermillion;
    double t = 0;
    for (size_t pi = 0; pi < r.passes.size(); ++pi) {
        const sim::RingPassResult& pr = r.passes[pi];
        if (pi > 0) {  // where the backward starts
            dl->AddLine(ImVec2(X(t), yc - fs * 0.3f), ImVec2(X(t), ys + lh + fs * 0.3f), kWhite, 2.0f);
        }
        const float pass_label_x = X(t) + 3;
        for (size_t s = 0; s < pr.steps.size(); ++s) {
            const sim::RingStep& st = pr.steps[s];
            const float a = X(t), bc = X(t + st.compute_s), bt = X(t + st.transfer_s), be = X(t + st.time_s);
            dl->AddRectFilled(ImVec2(a, yc + 1), ImVec2(std::max(a + 1, bc), yc + lh - 1), c_comp);
            if (st.exposed_s > 0)
                dl->AddRectFilled(ImVec2(bc, yc + 1), ImVec2(std::max(bc + 1, be), yc + lh - 1), c_exp);
            if (st.transfer_s > 0)
                dl->AddRectFilled(ImVec2(a, ys + 1), ImVec2(std::max(a + 1, bt), ys + lh - 1), c_send);
            if (be - a > 2.5f) dl->AddLine(ImVec2(a, yc), ImVec2(a, ys + lh), IM_COL32(20, 20, 24, 255));
            const std::string num = std::to_string(s);
            if (bc - a > ImGui::CalcTextSize(num.c_str()).x + 4)
                ui::text_centred(dl, ImVec2(a, yc), ImVec2(bc, yc + lh), kWhite, num);
            if (static_cast<int>(pi) == cur.pass_index && static_cast<int64_t>(s) == cur.step)
                dl->AddRect(ImVec2(a - 1, yc - 2), ImVec2(std::max(a + 3, be) + 1, ys + lh + 2), ui::okabe::yellow, 0,
                            0, 2.0f);
            t += st.time_s;
        }
        if (pr.tail_s > 0) {  // the backward's last dK, dV going home, after the last compute
            dl->AddRectFilled(ImVec2(X(t), ys + 1), ImVec2(std::max(X(t) + 1, X(t + pr.tail_s)), ys + lh - 1), c_send);
            dl->AddRectFilled(ImVec2(X(t), yc + 1), ImVec2(std::max(X(t) + 1, X(t + pr.tail_s)), yc + lh - 1), c_exp);
            t += pr.tail_s;
        }
        if (r.passes.size() > 1) {
            const char* name = pass_of(pr);
            if (X(t) - pass_label_x > ImGui::CalcTextSize(name).x + 4)
                dl->AddText(ImVec2(pass_label_x, ys + lh + 3), ui::text_dim, name);
        }
    }
    const float axis_y = ys + lh + (r.passes.size() > 1 ? fs * 1.3f : 4.0f);
    const bool us = t_max < 2e-3;
    ui::time_axis(dl, x0, x0 + w, axis_y, t_max, us ? 1e-6 : 1e-3, us ? "us" : "ms", false);
    return axis_y + fs * 1.4f + 5 - p0.y;
}

void totals(const sim::RingResult& r) {
    const sim::RingProblem& p = r.problem;
    const ImGuiTableFlags fl = ImGuiTableFlags_SizingFixedFit | ImGuiTableFlags_RowBg | ImGuiTableFlags_BordersInnerV;
    if (!ImGui::BeginTable("ringtotals", 7, fl)) return;
    for (const char* h : {"pass", "time", "ideal", "efficiency", "link adds", "over each link", "break-even"})
        ImGui::TableSetupColumn(h);
    ImGui::TableHeadersRow();
    for (const auto& pr : r.passes) {
        const double exposed = std::max(0.0, pr.time_s - pr.compute_only_s);
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(pass_of(pr));
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::seconds(pr.time_s).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::seconds(pr.ideal_s).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%s%%", ui::fixed(100.0 * pr.efficiency, 1).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(exposed > 0 ? ui::seconds(exposed).c_str() : "nothing");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::bytes(static_cast<double>(pr.link_bytes)).c_str());
        ImGui::TableNextColumn();
        if (pr.break_even_tokens > 0)
            ImGui::Text("%s tokens a GPU", ui::count(pr.break_even_tokens).c_str());
        else
            ImGui::TextUnformatted(pr.break_even_tokens < 0 ? "none below the cap" : "none");
        if (ImGui::IsItemHovered() && !pr.break_even_note.empty()) ImGui::SetTooltip("%s", pr.break_even_note.c_str());
    }
    if (r.passes.size() > 1) {
        ImGui::TableNextRow();
        ImGui::TableNextColumn();
        ImGui::TextUnformatted("both");
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::seconds(r.time_s).c_str());
        ImGui::TableNextColumn();
        ImGui::TextUnformatted(ui::seconds(r.ideal_s).c_str());
        ImGui::TableNextColumn();
        ImGui::Text("%s%%", ui::fixed(100.0 * r.efficiency, 1).c_str());
    }
    ImGui::EndTable();
    // where this ring stands against the break-even (the first pass's)
    const sim::RingPassResult& f = r.passes.front();
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    if (p.gpus == 1)
        ui::wrapped(
            "One GPU: there is no link, so nothing waits for one. The gap to the ideal (one GPU's time on its "
            "share, N / P tokens, as one kernel call) is the ring's own way of working: the GPU's query chunks "
            "(%lld with the %s layout) meet its key chunks as separate kernel calls, each a launch and a fill of "
            "the GPU, and their partial results are merged in HBM.",
            static_cast<long long>(p.chunks_per_gpu()),
            p.layout == sim::RingLayout::balanced ? "balanced" : "contiguous");
    if (f.break_even_tokens > 0)
        ui::wrapped("This ring holds %s tokens a GPU: %s the %s break-even, %s.", ui::count(p.tokens_per_gpu()).c_str(),
                    p.tokens_per_gpu() >= f.break_even_tokens ? "at or above" : "below", pass_of(f),
                    p.tokens_per_gpu() >= f.break_even_tokens ? "so a steady step's send hides behind its compute"
                                                              : "so the link shows in every steady step");
    ImGui::PopStyleColor();
}

void draw_ring_contents(const RingJob& job, ViewState& v);
}  // namespace

void draw_ring_panel(const RingJob& job, ViewState& v) {
    // Its own child: a view taller than the window scrolls vertically, nothing scrolls sideways. The
    // scrollbar is always there, so the text wraps the same whether or not it is needed (otherwise
    // the height measured below would flip between two values, frame after frame).
    ImGui::BeginChild("ringview", ImVec2(0, 0), false, ImGuiWindowFlags_AlwaysVerticalScrollbar);
    draw_ring_contents(job, v);
    ImGui::EndChild();
}

namespace {
void draw_ring_contents(const RingJob& job, ViewState& v) {
    const float fs = ImGui::GetFontSize();
    inputs(v);
    const std::string& why = !job.refusal().empty() ? job.refusal() : job.last_error();
    const RingRun* run = job.current().get();
    if (!why.empty()) {  // a refusal, where the learner looks after changing an input
        ImGui::PushStyleColor(ImGuiCol_Text, ImGui::ColorConvertU32ToFloat4(ui::okabe::vermillion));
        ui::wrapped("Not applied: %s", why.c_str());
        ImGui::PopStyleColor();
        if (run)
            ImGui::TextDisabled("the view still shows the last ring the simulator accepted (P = %lld, %s)",
                                static_cast<long long>(run->inputs.gpus),
                                std::string(sim::name_of(run->inputs.layout)).c_str());
    }
    if (!run) {
        ImGui::TextDisabled(job.busy() ? "simulating the ring..."
                                       : "No ring to show until the simulator accepts one: change the inputs above.");
        return;
    }
    const sim::RingResult& r = run->result;
    const sim::RingProblem& p = r.problem;
    const int64_t total = ring_step_count(r);
    if (total == 0 || r.passes.empty()) {
        ImGui::TextDisabled("the ring has no steps");
        return;
    }
    v.ring_pos = std::clamp(std::isfinite(v.ring_pos) ? v.ring_pos : 0.0, 0.0, static_cast<double>(total));
    const RingCursor cur = ring_cursor(r, v.ring_pos);
    int64_t index = cur.step;  // across passes
    for (int k = 0; k < cur.pass_index; ++k)
        index += static_cast<int64_t>(r.passes[static_cast<size_t>(k)].steps.size());

    // what is shown, then the step controls (as the memory view's: first, back, play, next, last, scrub)
    note_before(
        "The ring takes N, d, the data type, the mask and the GPU preset from the parameters on the left (press "
        "Simulate there to change them); GPUs, layout, pass and heads are the ring's own, above.");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::wrapped(
        "%lld %s GPU%s, %s layout: %s tokens a GPU in %s of %s. N = %s, d = %lld, %s%s, %lld head%s (N, d, "
        "dtype, mask and GPU are the problem's)%s",
        static_cast<long long>(p.gpus), r.machine.name.c_str(), p.gpus == 1 ? "" : "s",
        std::string(sim::name_of(p.layout)).c_str(), ui::count(p.tokens_per_gpu()).c_str(),
        p.chunks_per_gpu() > 1 ? "2 chunks" : "1 chunk", ui::count(p.chunk()).c_str(), ui::count(p.attn.seq).c_str(),
        static_cast<long long>(p.attn.head_dim), std::string(sim::dtype_name(p.attn.dtype)).c_str(),
        p.attn.causal ? ", causal" : ", no mask", static_cast<long long>(p.attn.heads), p.attn.heads == 1 ? "" : "s",
        job.busy() ? "; simulating the new ring..." : "");
    ImGui::PopStyleColor();
    if (ImGui::Button("|<")) {
        v.ring_pos = 0;
        v.ring_playing = false;
    }
    ImGui::SameLine();
    if (ImGui::Button("<")) {
        v.ring_pos = index > 0 ? ring_pos_of_step(r, index - 1) : 0.0;
        v.ring_playing = false;
    }
    ImGui::SameLine();
    if (ImGui::Button(v.ring_playing ? "Pause" : "Play ")) {
        if (!v.ring_playing && v.ring_pos >= static_cast<double>(total)) v.ring_pos = 0;
        v.ring_playing = !v.ring_playing;
    }
    ImGui::SameLine();
    if (ImGui::Button(">")) {
        v.ring_pos = cur.frac < 1.0 ? ring_pos_of_step(r, index) : ring_pos_of_step(r, index + 1);
        v.ring_playing = false;
    }
    ImGui::SameLine();
    if (ImGui::Button(">|")) {
        v.ring_pos = static_cast<double>(total);
        v.ring_playing = false;
    }
    ImGui::SameLine();
    ImGui::SetNextItemWidth(std::max(fs * 6, std::min(fs * 16, ImGui::GetContentRegionAvail().x - fs * 14)));
    int s = static_cast<int>(index);
    char fmt[128];
    // s counts from 0, as the ring's text does ("step s = 1 (2 of 8)")
    std::snprintf(fmt, sizeof fmt, "%s step s = %lld (%lld of %lld)",
                  pass_of(r.passes[static_cast<size_t>(cur.pass_index)]), static_cast<long long>(cur.step),
                  static_cast<long long>(cur.step + 1),
                  static_cast<long long>(r.passes[static_cast<size_t>(cur.pass_index)].steps.size()));
    if (ImGui::SliderInt("##ringstep", &s, 0, static_cast<int>(total - 1), fmt, ImGuiSliderFlags_AlwaysClamp)) {
        v.ring_pos = ring_pos_of_step(r, s);
        v.ring_playing = false;
    }
    ImGui::SameLine();
    ImGui::TextDisabled("%lld step%s in all", static_cast<long long>(total), total == 1 ? "" : "s");

    // the ring and the chunk grid side by side
    ImDrawList* dl = ImGui::GetWindowDrawList();
    ImVec2 avail = ImGui::GetContentRegionAvail();
    // what goes below (legend, timeline, totals, the note) as tall as it was last frame
    static float below = fs * 16.0f;
    const float main_h = std::max(fs * 12.0f, avail.y - below - 4);
    const float grid_side = std::min(main_h - fs * 1.3f, avail.x * 0.42f);
    const ImVec2 m0 = ImGui::GetCursorScreenPos();
    const float ring_w = avail.x - grid_side - fs * 1.5f;
    draw_ring(dl, m0, ImVec2(m0.x + ring_w, m0.y + main_h), r, cur);
    const ImVec2 g0(m0.x + ring_w + fs * 1.5f, m0.y + fs * 1.3f);
    {
        const char* label = "rows: query chunks, columns: key chunks";
        if (ImGui::CalcTextSize(label).x > grid_side) label = "queries x keys";
        dl->AddText(ImVec2(g0.x, m0.y), ui::text_dim, label);
    }
    draw_grid(dl, g0, grid_side, r, cur);
    ImGui::Dummy(ImVec2(avail.x, main_h + fs * 0.3f));
    const float below_y0 = ImGui::GetCursorPosY();
    note_before(
        "Ring: each GPU holds its query chunks for the whole pass; the K/V slice it holds changes every step (the "
        "swatch, or the tile's corner, in the colour of the GPU it came from). Grid: rows are query chunks, columns "
        "key chunks; the strips say whose chunk a row or column is. A block is coloured by the GPU that computes it "
        "and numbered by the step in which it does; later steps are faint, blocks the causal mask skips are dark, "
        "and a diagonal block (queries and keys of the same chunk) is a triangle.");
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::wrapped(
        "Squares on the arrows: K/V slices on their way, in their owner's colour. Grid: each block in the "
        "colour of the GPU that computes it, numbered by its step; outlined: this step.");
    ImGui::PopStyleColor();
    ImGui::Separator();

    // the overlap, step by step
    note_before(
        "A GPU can compute on the slice it holds while it sends that slice on and receives the next one. If "
        "the send takes longer than the compute, the difference is exposed: every GPU waits for the link.");
    ui::wrapped("Overlap: each step lasts max(compute of the slowest GPU, send of the next slice)");
    swatch(ui::okabe::blue, "compute");
    ImGui::SameLine(0, fs);
    swatch(ui::okabe::sky, "send");
    ImGui::SameLine(0, fs);
    swatch(ui::okabe::vermillion, "exposed: waiting for the link");
    ImGui::SameLine(0, fs);
    swatch(ui::okabe::yellow, "this step");
    const ImVec2 t0 = ImGui::GetCursorScreenPos();
    const float th = draw_overlap(dl, ImVec2(t0.x, t0.y + 2), avail.x, r, cur);
    ImGui::Dummy(ImVec2(avail.x, th + 4));
    totals(r);
    const std::string how =
        "How the simulator times it: " + r.compute_note + ". Link figures: " + r.machine.link_source +
        ". Ideal: P GPUs each as fast as one GPU on its own " + ui::count(p.tokens_per_gpu()) + " tokens alone.";
    note_before(how.c_str());
    ImGui::PushStyleColor(ImGuiCol_Text, ImGui::GetStyleColorVec4(ImGuiCol_TextDisabled));
    ui::wrapped(
        "Simulated: every figure here is the simulator's model. Nothing is measured on several GPUs: no machine "
        "with several has been lent (the ring emulated on one H200 in results checks the kernels and the "
        "schedule, not the link). The link: %s, %s GB/s each way.",
        r.machine.link_name.empty() ? "the preset's" : r.machine.link_name.c_str(),
        ui::fixed(r.link_bandwidth / 1e9, 0).c_str());
    ImGui::PopStyleColor();
    below = std::max(fs * 6.0f, ImGui::GetCursorPosY() - below_y0 + ImGui::GetStyle().ItemSpacing.y);
}

}  // namespace

}  // namespace viz
