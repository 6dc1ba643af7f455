// viz/contact_sheet.cpp — a lesson's steps on one picture (see contact_sheet.hpp).
#include "viz/contact_sheet.hpp"

#include <algorithm>

namespace viz {

RgbImage shrink(const RgbImage& im, int k) {
    k = std::max(1, k);
    RgbImage out;
    out.w = im.w / k;
    out.h = im.h / k;
    out.px.assign(static_cast<size_t>(out.w) * out.h * 3, 0);
    for (int y = 0; y < out.h; ++y)
        for (int x = 0; x < out.w; ++x)
            for (int c = 0; c < 3; ++c) {
                unsigned sum = 0;
                for (int dy = 0; dy < k; ++dy)
                    for (int dx = 0; dx < k; ++dx)
                        sum += im.px[(static_cast<size_t>(y * k + dy) * im.w + (x * k + dx)) * 3 + c];
                const unsigned n = static_cast<unsigned>(k * k);
                out.px[(static_cast<size_t>(y) * out.w + x) * 3 + c] = static_cast<uint8_t>((sum + n / 2) / n);
            }
    return out;
}

RgbImage contact_sheet(const std::vector<RgbImage>& frames, int cols, int gap) {
    RgbImage out;
    if (frames.empty() || cols < 1) return out;
    const int fw = frames[0].w, fh = frames[0].h, n = static_cast<int>(frames.size());
    const int c = std::min(cols, n), rows = (n + cols - 1) / cols;
    out.w = c * fw + (c + 1) * gap;
    out.h = rows * fh + (rows + 1) * gap;
    out.px.assign(static_cast<size_t>(out.w) * out.h * 3, 8);  // darker than the app's own background
    for (int i = 0; i < n; ++i) {
        const RgbImage& f = frames[static_cast<size_t>(i)];
        const int x0 = gap + (i % cols) * (fw + gap), y0 = gap + (i / cols) * (fh + gap);
        for (int y = 0; y < std::min(fh, f.h); ++y)
            std::copy_n(f.px.data() + static_cast<size_t>(y) * f.w * 3, std::min(fw, f.w) * 3,
                        out.px.data() + (static_cast<size_t>(y0 + y) * out.w + x0) * 3);
    }
    return out;
}

}  // namespace viz
