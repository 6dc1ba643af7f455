// lessons/lib/expr.cpp — placeholders: find them, parse and evaluate their expressions, format
// the value with a filter. A small recursive-descent parser; every error carries an offset.
#include "lessons/lib/expr.hpp"

#include <cctype>
#include <cmath>
#include <cstdio>
#include <cstdlib>

#include "report/report.hpp"

namespace lessons::detail {

namespace {

bool name_start(char c) { return std::isalpha(static_cast<unsigned char>(c)) || c == '_'; }
bool name_char(char c) { return std::isalnum(static_cast<unsigned char>(c)) || c == '_'; }

class Parser {
public:
    Parser(std::string_view s, const Lookup* lookup) : s_(s), lookup_(lookup) {}

    Value parse_all() {
        skip();
        if (at_end()) throw ExprError("empty expression", pos_);
        const size_t start = pos_;
        Value v = sum();
        skip();
        if (!at_end())
            throw ExprError(std::string("unexpected '") + s_[pos_] + "' (an operator + - * / or the end was expected)",
                            pos_);
        if (v.is_number && !std::isfinite(v.num)) throw ExprError("the value is not a finite number", start);
        return v;
    }
    std::vector<std::pair<std::string, size_t>> paths;

private:
    std::string_view s_;
    const Lookup* lookup_;  // null: only parse (collect paths)
    size_t pos_ = 0;
    int depth_ = 0;

    bool at_end() const { return pos_ >= s_.size(); }
    void skip() {
        while (!at_end() && std::isspace(static_cast<unsigned char>(s_[pos_]))) ++pos_;
    }
    static double need_number(const Value& v, size_t pos) {
        if (!v.is_number)
            throw ExprError("'" + v.str.substr(0, 40) + "' is text; only numbers can be combined with + - * /", pos);
        return v.num;
    }
    struct DepthGuard {
        int& depth;
        DepthGuard(int& counter, size_t pos) : depth(counter) {
            if (++depth > 64) throw ExprError("expression nested too deeply", pos);
        }
        ~DepthGuard() { --depth; }
    };

    Value sum() {
        const size_t start = pos_;
        Value v = product();
        for (;;) {
            skip();
            if (at_end() || (s_[pos_] != '+' && s_[pos_] != '-')) return v;
            const char op = s_[pos_];
            const size_t op_pos = pos_++;
            double a = need_number(v, start);
            const size_t rhs_pos = pos_;
            Value r = product();
            double b = need_number(r, rhs_pos);
            (void)op_pos;
            v = Value{true, op == '+' ? a + b : a - b, {}};
        }
    }
    Value product() {
        const size_t start = pos_;
        Value v = unary();
        for (;;) {
            skip();
            if (at_end() || (s_[pos_] != '*' && s_[pos_] != '/')) return v;
            const char op = s_[pos_];
            const size_t op_pos = pos_++;
            double a = need_number(v, start);
            const size_t rhs_pos = pos_;
            Value r = unary();
            double b = need_number(r, rhs_pos);
            if (op == '/' && b == 0 && lookup_) throw ExprError("division by zero", op_pos);
            v = Value{true, op == '*' ? a * b : (lookup_ ? a / b : 0.0), {}};
        }
    }
    Value unary() {
        DepthGuard g(depth_, pos_);
        skip();
        if (!at_end() && s_[pos_] == '-') {
            const size_t p = pos_++;
            Value v = unary();
            return Value{true, -need_number(v, p), {}};
        }
        return atom();
    }
    Value atom() {
        skip();
        if (at_end()) throw ExprError("a number or a name was expected here", pos_);
        const char c = s_[pos_];
        if (c == '(') {
            ++pos_;
            Value v = sum();
            skip();
            if (at_end() || s_[pos_] != ')') throw ExprError("')' expected", pos_);
            ++pos_;
            return v;
        }
        if (std::isdigit(static_cast<unsigned char>(c)) || c == '.') return number();
        if (name_start(c)) return name();
        throw ExprError(std::string("unexpected '") + c + "' (a number, a name or '(' was expected)", pos_);
    }
    Value number() {
        const size_t start = pos_;
        while (!at_end() && (std::isdigit(static_cast<unsigned char>(s_[pos_])) || s_[pos_] == '.')) ++pos_;
        if (!at_end() && (s_[pos_] == 'e' || s_[pos_] == 'E')) {
            size_t p = pos_ + 1;
            if (p < s_.size() && (s_[p] == '+' || s_[p] == '-')) ++p;
            if (p < s_.size() && std::isdigit(static_cast<unsigned char>(s_[p]))) {
                pos_ = p;
                while (!at_end() && std::isdigit(static_cast<unsigned char>(s_[pos_]))) ++pos_;
            }
        }
        const std::string text(s_.substr(start, pos_ - start));
        char* end = nullptr;
        const double v = std::strtod(text.c_str(), &end);
        if (end != text.c_str() + text.size() || !std::isfinite(v))
            throw ExprError("'" + text + "' is not a number", start);
        if (!at_end() && name_char(s_[pos_]))
            throw ExprError("'" + text + s_[pos_] + "...' is neither a number nor a name (names start with a letter)",
                            start);
        return Value{true, v, {}};
    }
    Value name() {
        const size_t start = pos_;
        while (!at_end() && name_char(s_[pos_])) ++pos_;
        const std::string first(s_.substr(start, pos_ - start));
        skip();
        if (!at_end() && s_[pos_] == '(') return call(first, start);
        pos_ = start + first.size();
        std::string path = first;
        while (!at_end() && s_[pos_] == '.') {
            ++pos_;
            const size_t seg = pos_;
            while (!at_end() && name_char(s_[pos_])) ++pos_;
            if (seg == pos_) throw ExprError("a name or an index was expected after '.' in '" + path + ".'", seg);
            path += '.';
            path += s_.substr(seg, pos_ - seg);
        }
        paths.emplace_back(path, start);
        if (!lookup_) return Value{true, 1.0, {}};
        try {
            return (*lookup_)(path);
        } catch (ExprError& e) { throw ExprError(e.what(), start); }
    }
    Value call(const std::string& f, size_t start) {
        static const char* known[] = {"min", "max", "abs", "sqrt", "log2", "ceil", "floor"};
        bool ok = false;
        for (const char* k : known) ok |= f == k;
        if (!ok) throw ExprError("unknown function '" + f + "' (known: min, max, abs, sqrt, log2, ceil, floor)", start);
        ++pos_;  // '('
        std::vector<double> args;
        for (;;) {
            const size_t p = pos_;
            Value v = sum();
            args.push_back(need_number(v, p));
            skip();
            if (!at_end() && s_[pos_] == ',') {
                ++pos_;
                continue;
            }
            if (!at_end() && s_[pos_] == ')') {
                ++pos_;
                break;
            }
            throw ExprError("',' or ')' expected in the call of " + f, pos_);
        }
        const bool two = f == "min" || f == "max";
        if (two ? args.size() < 2 : args.size() != 1)
            throw ExprError(f + (two ? " takes two or more arguments" : " takes one argument"), start);
        double r = args[0];
        if (f == "min")
            for (double a : args) r = std::min(r, a);
        else if (f == "max")
            for (double a : args) r = std::max(r, a);
        else if (f == "abs")
            r = std::abs(r);
        else if (f == "ceil")
            r = std::ceil(r);
        else if (f == "floor")
            r = std::floor(r);
        else if (f == "sqrt") {
            if (r < 0 && lookup_) throw ExprError("sqrt of a negative number", start);
            r = lookup_ ? std::sqrt(r) : 0;
        } else if (f == "log2") {
            if (r <= 0 && lookup_) throw ExprError("log2 of a number that is not positive", start);
            r = lookup_ ? std::log2(r) : 0;
        }
        return Value{true, r, {}};
    }
};

std::string trim(std::string_view s) {
    size_t a = 0, b = s.size();
    while (a < b && std::isspace(static_cast<unsigned char>(s[a]))) ++a;
    while (b > a && std::isspace(static_cast<unsigned char>(s[b - 1]))) --b;
    return std::string(s.substr(a, b - a));
}

std::string fixed(double v, int n) {
    char buf[128];
    std::snprintf(buf, sizeof buf, "%.*f", n, v);
    std::string s = buf;
    if (s == "-0" || s.rfind("-0.", 0) == 0) {  // never print "-0.00"
        bool zero = true;
        for (char c : s) zero &= c == '-' || c == '0' || c == '.';
        if (zero) s.erase(0, 1);
    }
    return s;
}
// Up to `n` decimals, trailing zeros removed: 128 -> "128", 4.53125 -> "4.53".
std::string trimmed(double v, int n) {
    std::string s = fixed(v, n);
    if (s.find('.') != std::string::npos) {
        while (s.back() == '0') s.pop_back();
        if (s.back() == '.') s.pop_back();
    }
    return s;
}
std::string grouped_fixed(double v, int n) {  // 67108864 -> "67,108,864"; 1234.5 (n=1) -> "1,234.5"
    std::string s = fixed(v, n);
    const bool neg = !s.empty() && s[0] == '-';
    if (neg) s.erase(0, 1);
    const size_t dot = s.find('.');
    std::string ip = s.substr(0, dot), rest = dot == std::string::npos ? "" : s.substr(dot);
    std::string out;
    for (size_t i = 0; i < ip.size(); ++i) {
        if (i > 0 && (ip.size() - i) % 3 == 0) out += ',';
        out += ip[i];
    }
    return (neg ? "-" : "") + out + rest;
}

std::string default_format(double v) {
    if (v == std::floor(v) && std::abs(v) < 1e15) return grouped_fixed(v, 0);
    char buf[64];
    std::snprintf(buf, sizeof buf, "%.6g", v);
    return buf;
}

struct FilterSpec {
    std::string name;
    int arg = -1;  // -1: none given
};

FilterSpec parse_filter(std::string_view f) {
    FilterSpec spec;
    const size_t colon = f.find(':');
    spec.name = trim(f.substr(0, colon));
    if (colon != std::string_view::npos) {
        const std::string a = trim(f.substr(colon + 1));
        if (a.empty() || a.size() > 2 || a.find_first_not_of("0123456789") != std::string::npos)
            throw ExprError("the filter argument after ':' must be a number of digits 0-15, got '" + a + "'",
                            colon + 1);
        spec.arg = std::atoi(a.c_str());
        if (spec.arg > 15) throw ExprError("at most 15 digits, got " + a, colon + 1);
    }
    return spec;
}

const char* kFilterList =
    "int, fixed:N, sig:N, sci:N, percent:N, times:N (or ratio:N), bytes, KiB, MiB, GiB, KB, MB, GB, TBps, GBps, "
    "TFLOPs, flops, ms:N, us:N, side, str";

}  // namespace

Value eval_expr(std::string_view expr, const Lookup& lookup) {
    Parser p(expr, &lookup);
    return p.parse_all();
}

std::vector<std::pair<std::string, size_t>> expr_paths(std::string_view expr) {
    Parser p(expr, nullptr);
    p.parse_all();
    return p.paths;
}

bool filter_known(std::string_view filter, std::string* why) {
    try {
        apply_filter(Value{true, 1.0, {}}, filter);
        return true;
    } catch (const ExprError& e) {
        if (why) *why = e.what();
        return false;
    }
}

std::string apply_filter(const Value& v, std::string_view filter) {
    const FilterSpec f = parse_filter(filter);
    const std::string& n = f.name;
    auto digits = [&](int dflt) { return f.arg >= 0 ? f.arg : dflt; };
    if (n.empty() || n == "str") {
        if (f.arg >= 0) throw ExprError("this filter takes no ':N'", 0);
        return v.is_number ? default_format(v.num) : v.str;
    }
    static const char* numeric[] = {"int",   "fixed", "sig",    "sci",   "percent", "times", "ratio",
                                    "bytes", "KiB",   "MiB",    "GiB",   "KB",      "MB",    "GB",
                                    "TBps",  "GBps",  "TFLOPs", "flops", "ms",      "us",    "side"};
    bool known = false;
    for (const char* k : numeric) known |= n == k;
    if (!known) throw ExprError("unknown filter '" + n + "' (known: " + kFilterList + ")", 0);
    if (!v.is_number) throw ExprError("filter '" + n + "' needs a number, but the value is text", 0);
    const double x = v.num;
    if (!std::isfinite(x)) throw ExprError("the value is not a finite number", 0);
    if (n == "int") return grouped_fixed(std::round(x), 0);
    if (n == "side") {  // a kernel's FLOPs per byte divided by the ridge point's
        if (f.arg >= 0) throw ExprError("'side' takes no ':N'", 0);
        return x < 1 ? "left (memory-bound)" : "right (compute-bound)";
    }
    if (n == "fixed") return grouped_fixed(x, digits(2));
    if (n == "sig") {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*g", std::max(1, digits(3)), x);
        return buf;
    }
    if (n == "sci") {
        char buf[64];
        std::snprintf(buf, sizeof buf, "%.*e", digits(2), x);
        return buf;
    }
    if (n == "percent") return fixed(100.0 * x, digits(1)) + "%";
    if (n == "times" || n == "ratio") return trimmed(x, digits(2)) + "x";
    if (n == "bytes") {
        if (f.arg >= 0) throw ExprError("'bytes' takes no ':N' (it picks B, KiB, MiB or GiB itself)", 0);
        return report::human_bytes(x);
    }
    if (n == "KiB") return trimmed(x / 1024.0, digits(2)) + " KiB";
    if (n == "MiB") return trimmed(x / (1024.0 * 1024.0), digits(2)) + " MiB";
    if (n == "GiB") return trimmed(x / (1024.0 * 1024.0 * 1024.0), digits(2)) + " GiB";
    if (n == "KB") return trimmed(x / 1e3, digits(2)) + " kB";
    if (n == "MB") return trimmed(x / 1e6, digits(2)) + " MB";
    if (n == "GB") return trimmed(x / 1e9, digits(2)) + " GB";
    if (n == "TBps") return trimmed(x / 1e12, digits(2)) + " TB/s";
    if (n == "GBps") return trimmed(x / 1e9, digits(1)) + " GB/s";
    if (n == "TFLOPs") return trimmed(x / 1e12, digits(1)) + " TFLOP/s";
    if (n == "flops") {
        if (f.arg >= 0) throw ExprError("'flops' takes no ':N'", 0);
        return report::human_flops(x);
    }
    if (n == "ms") return fixed(x * 1e3, digits(3)) + " ms";
    if (n == "us") return fixed(x * 1e6, digits(1)) + " us";
    return default_format(x);
}

std::vector<Placeholder> find_placeholders(std::string_view text) {
    std::vector<Placeholder> out;
    size_t i = 0;
    for (;;) {
        const size_t open = text.find("{{", i);
        const size_t stray = text.find("}}", i);
        if (stray != std::string_view::npos && (open == std::string_view::npos || stray < open))
            throw ExprError("'}}' without an opening '{{'", stray);
        if (open == std::string_view::npos) break;
        const size_t close = text.find("}}", open + 2);
        const size_t nested = text.find("{{", open + 2);
        if (close == std::string_view::npos) throw ExprError("'{{' is never closed with '}}'", open);
        if (nested != std::string_view::npos && nested < close)
            throw ExprError("'{{' inside another placeholder (close the first with '}}')", nested);
        Placeholder p;
        p.begin = open;
        p.end = close + 2;
        const std::string_view inner = text.substr(open + 2, close - open - 2);
        const size_t bar = inner.find('|');
        const std::string_view e = inner.substr(0, bar);
        p.expr = trim(e);
        size_t lead = 0;
        while (lead < e.size() && std::isspace(static_cast<unsigned char>(e[lead]))) ++lead;
        p.expr_pos = open + 2 + lead;
        if (p.expr.empty())
            throw ExprError("empty placeholder: write a value inside, e.g. {{ standard.hbm.total | MiB }}", open);
        if (bar != std::string_view::npos) {
            const std::string_view fv = inner.substr(bar + 1);
            if (fv.find('|') != std::string_view::npos)
                throw ExprError("only one filter per placeholder", open + 2 + bar + 1 + fv.find('|'));
            p.filter = trim(fv);
            size_t fl = 0;
            while (fl < fv.size() && std::isspace(static_cast<unsigned char>(fv[fl]))) ++fl;
            p.filter_pos = open + 2 + bar + 1 + fl;
            if (p.filter.empty()) throw ExprError("empty filter after '|' (e.g. MiB, int, fixed:2)", open + 2 + bar);
        }
        out.push_back(std::move(p));
        i = close + 2;
    }
    return out;
}

}  // namespace lessons::detail
