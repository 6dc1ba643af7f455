#include "viz/text_wrap.hpp"

#include <algorithm>

#include "lessons/lib/lesson.hpp"

namespace viz {

std::vector<std::string> wrap_at_spaces(std::string_view text, float max_width,
                                        const std::function<float(std::string_view)>& width) {
    std::vector<std::string> lines;
    size_t p = 0;
    while (true) {  // paragraph by paragraph
        const size_t nl = text.find('\n', p);
        const std::string_view para = text.substr(p, nl == std::string_view::npos ? std::string_view::npos : nl - p);
        std::string line;
        size_t w = 0;
        bool any = false;
        while (w <= para.size()) {
            const size_t sp = para.find(' ', w);
            const std::string_view word =
                para.substr(w, sp == std::string_view::npos ? std::string_view::npos : sp - w);
            if (!word.empty() || !any) {
                const std::string cand = line.empty() ? std::string(word) : line + " " + std::string(word);
                if (!line.empty() && width(cand) > max_width) {
                    lines.push_back(line);
                    line = std::string(word);
                } else {
                    line = cand;
                }
                any = true;
            }
            if (sp == std::string_view::npos) break;
            w = sp + 1;
        }
        lines.push_back(line);
        if (nl == std::string_view::npos) break;
        p = nl + 1;
    }
    return lines;
}

namespace {
bool starts_pre(std::string_view line) { return !line.empty() && (line[0] == ' ' || line[0] == '\t'); }
size_t leading_blanks(std::string_view line) {
    const size_t at = line.find_first_not_of(" \t");
    return at == std::string_view::npos ? line.size() : at;
}
}  // namespace

std::vector<LaidLine> lay_out_text(std::string_view text, float max_width,
                                   const std::function<float(std::string_view)>& width) {
    std::vector<std::string_view> lines;
    for (size_t p = 0;;) {
        const size_t nl = text.find('\n', p);
        lines.push_back(text.substr(p, nl == std::string_view::npos ? std::string_view::npos : nl - p));
        if (nl == std::string_view::npos) break;
        p = nl + 1;
    }
    std::vector<LaidLine> out;
    for (size_t k = 0; k < lines.size();) {
        if (!starts_pre(lines[k])) {
            for (auto& l : wrap_at_spaces(lines[k], max_width, width)) out.push_back({{{std::move(l), 0.0f}}, false});
            ++k;
            continue;
        }
        size_t end = k;
        size_t indent = std::string_view::npos;
        while (end < lines.size() && starts_pre(lines[end])) indent = std::min(indent, leading_blanks(lines[end++]));
        const float indent_x = width(std::string(indent, ' '));
        std::vector<std::vector<std::string>> rows;
        int multi = 0;
        for (size_t r = k; r < end; ++r) {
            std::string_view body = lines[r].substr(indent);
            while (!body.empty() && (body.back() == ' ' || body.back() == '\t')) body.remove_suffix(1);
            rows.push_back(lessons::table_cells(body));
            multi += rows.back().size() >= 2;
        }
        if (multi < 2) {  // a formula, a single line: kept whole
            for (size_t r = k; r < end; ++r) {
                std::string_view body = lines[r].substr(indent);
                out.push_back({{{std::string(body), indent_x}}, true});
            }
        } else {
            std::vector<float> col;
            for (const auto& row : rows)
                for (size_t c = 0; c + 1 < row.size(); ++c) {  // a row's last cell sets no width
                    if (col.size() <= c) col.resize(c + 1, 0.0f);
                    col[c] = std::max(col[c], width(row[c]));
                }
            const float gap = width("   ");
            for (auto& row : rows) {
                LaidLine line;
                line.pre = true;
                float x = indent_x;
                for (size_t c = 0; c < row.size(); ++c) {
                    if (!row[c].empty()) line.cells.push_back({std::move(row[c]), x});
                    if (c < col.size()) x += col[c] + gap;
                }
                out.push_back(std::move(line));
            }
        }
        k = end;
    }
    return out;
}

}  // namespace viz
