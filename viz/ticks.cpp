#include "viz/ticks.hpp"

#include <algorithm>
#include <cmath>

namespace viz {

int ticks_that_fit(float length, float per_label) {
    if (!(length > 0) || !(per_label > 0) || !std::isfinite(length)) return 0;
    const double n = std::floor(static_cast<double>(length) / static_cast<double>(per_label));
    return static_cast<int>(std::clamp(n, 0.0, static_cast<double>(kMaxTicks)));
}

std::vector<double> axis_ticks(double lo, double hi, int max_ticks, TickKind kind) {
    std::vector<double> t;
    if (!std::isfinite(lo) || !std::isfinite(hi) || hi < lo) return t;
    if (kind == TickKind::log2 && lo <= 0) return t;
    if (hi == lo) return {lo};
    const int most = std::clamp(max_ticks, 1, kMaxTicks);
    if (kind == TickKind::log2) {
        const double la = std::floor(std::log2(lo)), lb = std::ceil(std::log2(hi));  // both finite: lo, hi > 0
        const int a = static_cast<int>(std::clamp(la, -1100.0, 1100.0));
        const int b = static_cast<int>(std::clamp(lb, -1100.0, 1100.0));
        const int every = std::max(1, (b - a + most - 1) / most);
        for (int k = a; k <= b; ++k) {
            // multiples of `every` (counted from a multiple, so the labels do not shift when the range does)
            if (((k % every) + every) % every != 0) continue;
            const double v = std::ldexp(1.0, k);
            if (v >= lo * 0.999 && v <= hi * 1.001) t.push_back(v);
        }
        return t;
    }
    const double span = hi - lo;  // > 0; may be +inf for |lo|, |hi| near DBL_MAX
    if (!std::isfinite(span)) return {lo, hi};
    const double raw = span / most;
    double step = 0;
    if (kind == TickKind::binary) {
        step = std::exp2(std::ceil(std::log2(raw)));
    } else {
        const double mag = std::pow(10.0, std::floor(std::log10(raw)));
        step = mag * 10;
        for (double m : {1.0, 2.0, 2.5, 5.0})
            if (mag * m >= raw * (1 - 1e-12)) {
                step = mag * m;
                break;
            }
    }
    if (!(step > 0) || !std::isfinite(step)) return {lo, hi};
    // v = (k0 + i) * step, counted by index so a step below the values' resolution cannot stall
    const double k0 = std::ceil(lo / step - 1e-9);
    for (int i = 0; i <= most; ++i) {
        const double v = (k0 + i) * step;
        if (v > hi + step * 1e-9) break;
        if (!t.empty() && v <= t.back()) break;  // no progress at this magnitude: stop
        t.push_back(std::abs(v) < step * 1e-9 ? 0.0 : v);
    }
    return t;
}

}  // namespace viz
