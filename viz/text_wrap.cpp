#include "viz/text_wrap.hpp"

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

}  // namespace viz
