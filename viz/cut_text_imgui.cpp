// viz/cut_text_imgui.cpp — a frame's glyphs read back from Dear ImGui's draw data (cut_text.hpp).
//
// ImGui draws a glyph as one quad (four vertices, indices a, a+1, a+2, a, a+2, a+3) whose texture
// coordinates lie in the glyph's rectangle of the font atlas; a filled rectangle's lie on the
// atlas's white pixel, outside every glyph. So a quad is a glyph when its texture coordinates fall
// in a glyph's rectangle, and that glyph names the character; where ImGui clipped it on the CPU the
// quad covers only part of the rectangle.
#include <imgui.h>
#include <imgui_internal.h>

#include <cmath>
#include <map>
#include <set>
#include <utility>

#include "viz/cut_text.hpp"

namespace viz {

namespace {
struct AtlasGlyph {
    const ImFontGlyph* g;
    float font_size;  // on screen: the font's size at the frame's zoom
    float scale;      // from the atlas's glyph to the screen
};
}  // namespace

std::vector<DrawnGlyph> drawn_glyphs(const ImDrawData& dd, const std::vector<std::array<float, 4>>& fields) {
    std::vector<AtlasGlyph> atlas;
    const ImGuiIO& io = ImGui::GetIO();
    for (const ImFont* f : io.Fonts->Fonts)
        for (const ImFontGlyph& g : f->Glyphs)
            if (g.Visible && g.U1 > g.U0 && g.V1 > g.V0)
                atlas.push_back({&g, f->FontSize * f->Scale * io.FontGlobalScale, f->Scale * io.FontGlobalScale});
    std::map<std::pair<float, float>, size_t> by_corner;
    for (size_t i = 0; i < atlas.size(); ++i) by_corner.emplace(std::pair{atlas[i].g->U0, atlas[i].g->V0}, i);
    // the lists of windows that scroll sideways (a table with its own scrollbar, the lesson pane, the
    // views below their least size): they show a scrollbar, or will from the next frame on (their
    // content this frame is wider than they are: a table drawn for the first time)
    std::set<const ImDrawList*> scrolled;
    const ImGuiContext& ctx = *ImGui::GetCurrentContext();
    for (const ImGuiWindow* w : ctx.Windows)
        if (w->LastFrameActive == ctx.FrameCount && (w->Flags & ImGuiWindowFlags_HorizontalScrollbar) &&
            (w->ScrollbarX || w->DC.CursorMaxPos.x > w->InnerClipRect.Max.x + 1))
            scrolled.insert(w->DrawList);
    // a table that scrolls sideways (its own window), from its first frame on
    ImGuiContext& c = *ImGui::GetCurrentContext();
    for (int t = 0; t < c.Tables.GetMapSize(); ++t)
        if (const ImGuiTable* tb = c.Tables.TryGetMapData(t);
            tb && (tb->Flags & ImGuiTableFlags_ScrollX) && tb->InnerWindow && tb->LastFrameActive == c.FrameCount)
            scrolled.insert(tb->InnerWindow->DrawList);
    // A window inside one that scrolls sideways (the memory view's counters in the views at 2x zoom)
    // is cut by that window's visible edge only until the learner scrolls: those edges do not count
    // (its own edges do).
    std::map<const ImDrawList*, std::vector<float>> reachable;  // a list's edges that scrolling moves
    for (const ImGuiWindow* w : ctx.Windows) {
        if (w->LastFrameActive != ctx.FrameCount) continue;
        for (const ImGuiWindow* up = w->ParentWindow; up; up = up->ParentWindow)
            if (scrolled.count(up->DrawList)) {
                reachable[w->DrawList].push_back(up->InnerClipRect.Min.x);
                reachable[w->DrawList].push_back(up->InnerClipRect.Max.x);
            }
    }
    auto moved_by_scrolling = [&](const ImDrawList* dl, float edge) {
        const auto it = reachable.find(dl);
        if (it == reachable.end()) return false;
        for (float e : it->second)
            if (std::fabs(e - edge) < 1.0f) return true;
        return false;
    };
    constexpr float kFar = 1e30f;  // an edge that cuts nothing
    std::vector<DrawnGlyph> out;
    for (int n = 0; n < dd.CmdListsCount; ++n) {
        const ImDrawList* dl = dd.CmdLists[n];
        if (scrolled.count(dl)) continue;
        const ImDrawIdx* idx = dl->IdxBuffer.Data;
        const ImDrawVert* vtx = dl->VtxBuffer.Data;
        for (const ImDrawCmd& cmd : dl->CmdBuffer) {
            if (cmd.UserCallback) continue;
            const unsigned end = cmd.IdxOffset + cmd.ElemCount;
            for (unsigned k = cmd.IdxOffset; k + 6 <= end;) {
                const ImDrawIdx a = idx[k];
                const bool quad = idx[k + 1] == a + 1 && idx[k + 2] == a + 2 && idx[k + 3] == a &&
                                  idx[k + 4] == a + 2 && idx[k + 5] == a + 3;
                if (!quad) {
                    k += 3;  // every primitive is whole triangles
                    continue;
                }
                k += 6;
                const ImDrawVert& v0 = vtx[cmd.VtxOffset + a];
                const ImDrawVert& v2 = vtx[cmd.VtxOffset + a + 2];
                if (!(v2.uv.x > v0.uv.x && v2.uv.y > v0.uv.y && v2.pos.x > v0.pos.x && v2.pos.y > v0.pos.y)) continue;
                const float u = (v0.uv.x + v2.uv.x) / 2, v = (v0.uv.y + v2.uv.y) / 2;
                // a whole glyph by its corner at once; a trimmed one by the rectangle it lies in
                const auto hit = by_corner.find({v0.uv.x, v0.uv.y});
                const size_t from = hit != by_corner.end() ? hit->second : 0;
                for (size_t ai = from; ai < atlas.size(); ++ai) {
                    const AtlasGlyph& ag = atlas[ai];
                    const ImFontGlyph& g = *ag.g;
                    if (u < g.U0 || u > g.U1 || v < g.V0 || v > g.V1) continue;
                    DrawnGlyph d;
                    d.x0 = v0.pos.x;
                    d.x1 = v2.pos.x;
                    d.top = v0.pos.y -
                            g.Y0 * ag.scale;  // (a glyph trimmed at its top is rare: it reads as a line of its own)
                    d.size = ag.font_size;
                    d.clip_x0 = moved_by_scrolling(dl, cmd.ClipRect.x) ? -kFar : cmd.ClipRect.x;
                    d.clip_x1 = moved_by_scrolling(dl, cmd.ClipRect.z) ? kFar : cmd.ClipRect.z;
                    d.codepoint = g.Codepoint;
                    d.trimmed = (v2.uv.x - v0.uv.x) < (g.U1 - g.U0) * 0.98f;
                    d.list = n;
                    const float cx = (v0.pos.x + v2.pos.x) / 2, cy = (v0.pos.y + v2.pos.y) / 2;
                    for (const auto& f : fields)
                        d.in_field = d.in_field || (cx >= f[0] && cx <= f[2] && cy >= f[1] && cy <= f[3]);
                    out.push_back(d);
                    break;
                }
            }
        }
    }
    return out;
}

}  // namespace viz
