// lessons/lib/render.cpp — lesson prose: placeholders ({{ expr | filter }}) replaced by values from
// the lesson's context, with errors pointing at the placeholder's line and column in the file, and
// paragraphs reflowed. Also the public evaluate() and render().
#include <cstdio>

#include "lessons/lib/internal.hpp"

namespace lessons {

using detail::ExprError;
using detail::lookup_in;
using detail::Missing;
using detail::render_node_text;
using detail::Source;
using detail::Value;

namespace detail {

std::string join(const std::vector<std::string>& v) {
    std::string o;
    for (const auto& x : v) o += (o.empty() ? "" : ", ") + x;
    return o;
}

std::string num_text(double x) {
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.10g", x);
    return buf;
}

namespace {
size_t display_width(const std::string& s) {
    size_t w = 0;
    for (unsigned char c : s) w += (c & 0xC0) != 0x80;  // UTF-8 code points
    return w;
}

// A table written in a lesson lines up where the teacher wrote it, in the file; once placeholders
// are replaced by numbers of other widths it no longer does. So a block of preformatted lines whose
// lines are cut into cells by runs of two or more spaces is laid out again: each column as wide as
// its widest cell, three spaces between columns, the block's indentation kept. A block with fewer
// than two such lines (a formula, a single line) is kept as written.
std::string align_columns(const std::vector<std::string>& block) {
    std::string out;
    size_t indent = std::string::npos;
    for (const auto& ln : block) indent = std::min(indent, ln.find_first_not_of(" \t"));
    std::vector<std::vector<std::string>> rows;
    int multi = 0;
    for (const auto& ln : block) {
        std::string body = ln.substr(indent);
        while (!body.empty() && (body.back() == ' ' || body.back() == '\t')) body.pop_back();
        // A row indented further than the block starts with one empty cell (a continuation row
        // under the previous row's second column).
        rows.push_back(table_cells(body));
        multi += rows.back().size() >= 2;
    }
    if (multi < 2 || block.empty()) {
        for (const auto& ln : block) out += ln + '\n';
        return out;
    }
    std::vector<size_t> width;
    for (const auto& r : rows)
        for (size_t c = 0; c + 1 < r.size(); ++c) {  // the last cell of a row sets no width
            if (width.size() <= c) width.resize(c + 1, 0);
            width[c] = std::max(width[c], display_width(r[c]));
        }
    const std::string pad = block.front().substr(0, indent);
    for (const auto& r : rows) {
        std::string line = pad;
        for (size_t c = 0; c < r.size(); ++c) {
            line += r[c];
            if (c + 1 < r.size()) line += std::string(width[c] - display_width(r[c]) + 3, ' ');
        }
        out += line + '\n';
    }
    return out;
}
}  // namespace

// Paragraphs: lines of one paragraph are joined with a space; a blank line separates paragraphs;
// a line that starts with a space or tab is kept as written (event lists, formulas), except that a
// block of them written as a table has its columns aligned (align_columns). The app wraps
// paragraphs to its width, the terminal to 88 columns.
std::string reflow(const std::string& text) {
    std::vector<std::string> lines;
    {
        std::string cur;
        for (char c : text) {
            if (c == '\n') {
                lines.push_back(cur);
                cur.clear();
            } else if (c != '\r')
                cur += c;
        }
        lines.push_back(cur);
    }
    std::string out;
    bool in_para = false;
    std::vector<std::string> pre_block;  // consecutive preformatted lines, laid out together
    auto flush_pre = [&] {
        if (!pre_block.empty()) out += align_columns(pre_block);
        pre_block.clear();
    };
    for (const auto& ln : lines) {
        const bool blank = ln.find_first_not_of(" \t") == std::string::npos;
        const bool pre = !blank && (ln[0] == ' ' || ln[0] == '\t');
        if (!pre) flush_pre();
        if (blank) {
            if (in_para) out += '\n';
            if (!out.empty() && (out.size() < 2 || out.substr(out.size() - 2) != "\n\n")) out += '\n';
            in_para = false;
        } else if (pre) {
            if (in_para) out += '\n';
            pre_block.push_back(ln);
            in_para = false;
        } else {
            std::string t = ln;
            while (!t.empty() && (t.back() == ' ' || t.back() == '\t')) t.pop_back();
            if (in_para) out += ' ';
            out += t;
            in_para = true;
        }
    }
    flush_pre();
    if (in_para) out += '\n';
    while (out.size() >= 2 && out.substr(out.size() - 2) == "\n\n") out.pop_back();
    size_t a = 0;
    while (a < out.size() && out[a] == '\n') ++a;
    return out.substr(a);
}

// Render `text` (the value of node `n` in the file); errors point at the placeholder's place.
std::string render_node_text(const Source& s, const Context& ctx, const std::string& text, Pos node_pos) {
    std::vector<detail::Placeholder> phs;
    const size_t base = s.offset(node_pos);
    auto raw_pos = [&](size_t decoded_off, const std::string& anchor, size_t anchor_decoded) -> Pos {
        // Find the anchor (a placeholder's raw text) in the file after the value's start.
        const size_t found = anchor.empty() ? std::string::npos : s.text.find(anchor, base);
        if (found == std::string::npos) return node_pos;
        return s.pos(found + (decoded_off - anchor_decoded));
    };
    try {
        phs = detail::find_placeholders(text);
    } catch (const ExprError& e) {
        const size_t a = e.pos >= 2 ? e.pos - 2 : 0;
        const std::string anchor = text.substr(a, std::min<size_t>(8, text.size() - a));
        s.fail(raw_pos(e.pos, anchor, a), e.what());
    }
    std::string out;
    size_t prev = 0;
    for (const auto& ph : phs) {
        out += text.substr(prev, ph.begin - prev);
        prev = ph.end;
        const std::string anchor = text.substr(ph.begin, ph.end - ph.begin);
        detail::Lookup lk = [&](const std::string& p) { return lookup_in(ctx, nullptr, p); };
        Value v;
        try {
            v = detail::eval_expr(ph.expr, lk);
        } catch (const ExprError& e) {
            s.fail(raw_pos(ph.expr_pos + e.pos, anchor, ph.begin),
                   std::string("in {{ ") + ph.expr + " }}: " + e.what());
        } catch (const Missing&) {
            // Not an error: the value is legitimately absent (still check the filter).
            std::string why;
            if (!ph.filter.empty() && !detail::filter_known(ph.filter, &why))
                s.fail(raw_pos(ph.filter_pos, anchor, ph.begin), why);
            out += "n/a";
            continue;
        }
        try {
            out += detail::apply_filter(v, ph.filter);
        } catch (const ExprError& e) {
            s.fail(raw_pos(ph.filter_pos + e.pos, anchor, ph.begin),
                   std::string("in {{ ") + ph.expr + " | " + ph.filter + " }}: " + e.what());
        }
    }
    out += text.substr(prev);
    return out;
}

std::string render_with_answer(const Context& ctx, const nlohmann::json& answer, const std::string& text) {
    std::string out;
    size_t prev = 0;
    for (const auto& ph : detail::find_placeholders(text)) {
        out += text.substr(prev, ph.begin - prev);
        prev = ph.end;
        try {
            const Value v =
                detail::eval_expr(ph.expr, [&](const std::string& p) { return lookup_in(ctx, &answer, p); });
            out += detail::apply_filter(v, ph.filter);
        } catch (const std::exception&) { out += "?"; }
    }
    std::string r = reflow(out + text.substr(prev));
    while (!r.empty() && (r.back() == '\n' || r.back() == ' ')) r.pop_back();
    return r;
}

bool condition_holds(const Context& ctx, const nlohmann::json& answer, const AnswerCondition& c) {
    const Value v = detail::eval_expr(c.expr, [&](const std::string& p) { return lookup_in(ctx, &answer, p); });
    return (!c.at_least || v.num >= *c.at_least) && (!c.at_most || v.num <= *c.at_most);
}

}  // namespace detail

// ---------------------------------------------------------------- [public: evaluate, render]
double evaluate(const Lesson& lesson, const std::string& expr) {
    if (!lesson.context) throw LoadError(lesson.file, 0, 0, "the lesson was not loaded");
    try {
        const Value v =
            detail::eval_expr(expr, [&](const std::string& p) { return lookup_in(*lesson.context, nullptr, p); });
        if (!v.is_number) throw LoadError(lesson.file, 0, 0, "'" + expr + "' is text, not a number");
        return v.num;
    } catch (const ExprError& e) {
        throw LoadError(lesson.file, 0, 0,
                        "in '" + expr + "' at character " + std::to_string(e.pos + 1) + ": " + e.what());
    } catch (const Missing& e) { throw LoadError(lesson.file, 0, 0, std::string("no value: ") + e.what()); }
}

std::string render(const Lesson& lesson, const std::string& text) {
    if (!lesson.context) throw LoadError(lesson.file, 0, 0, "the lesson was not loaded");
    const Source s(lesson.file + " (text)", text);
    return render_node_text(s, *lesson.context, text, {1, 1});
}

std::vector<std::string> table_cells(std::string_view row) {
    std::vector<std::string> cells;
    size_t at = 0;
    while (at < row.size()) {
        size_t gap = row.find("  ", at);
        if (gap == std::string_view::npos) gap = row.size();
        cells.emplace_back(row.substr(at, gap - at));
        at = row.find_first_not_of(' ', gap);
        if (at == std::string_view::npos) break;
    }
    return cells;
}

}  // namespace lessons
