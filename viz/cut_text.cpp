// viz/cut_text.cpp — lines of text cut by their clip rectangle (see cut_text.hpp).
#include "viz/cut_text.hpp"

#include <cmath>

namespace viz {

namespace {
void append_utf8(std::string& s, unsigned c) {
    if (c < 0x80) {
        s += static_cast<char>(c);
    } else if (c < 0x800) {
        s += static_cast<char>(0xC0 | (c >> 6));
        s += static_cast<char>(0x80 | (c & 0x3F));
    } else {
        s += static_cast<char>(0xE0 | (c >> 12));
        s += static_cast<char>(0x80 | ((c >> 6) & 0x3F));
        s += static_cast<char>(0x80 | (c & 0x3F));
    }
}
}  // namespace

std::vector<std::string> cut_lines(const std::vector<DrawnGlyph>& glyphs, float tolerance) {
    std::vector<std::string> out;
    size_t i = 0;
    while (i < glyphs.size()) {
        // one line of text: [i, j)
        size_t j = i + 1;
        while (j < glyphs.size()) {
            const DrawnGlyph &p = glyphs[j - 1], &g = glyphs[j];
            const bool same_line = g.list == p.list && std::fabs(g.top - p.top) < 0.5f && g.size == p.size &&
                                   g.x0 >= p.x0 && g.x0 - p.x1 < p.size * 2;
            if (!same_line) break;
            ++j;
        }
        bool cut = false;
        for (size_t k = i; k < j && !cut; ++k) {
            const DrawnGlyph& g = glyphs[k];
            cut = !g.in_field && (g.trimmed || (g.x0 < g.clip_x0 - tolerance && g.x1 > g.clip_x0) ||
                                  (g.x0 < g.clip_x1 && g.x1 > g.clip_x1 + tolerance));
        }
        if (cut) {
            std::string text;
            for (size_t k = i; k < j; ++k) {
                if (k > i && glyphs[k].x0 - glyphs[k - 1].x1 > glyphs[k].size * 0.2f) text += ' ';
                append_utf8(text, glyphs[k].codepoint);
            }
            out.push_back(text);
        }
        i = j;
    }
    return out;
}

}  // namespace viz
