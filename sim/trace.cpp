#include "sim/trace.hpp"

#include <algorithm>

namespace sim {

std::string_view tensor_name(Tensor t) {
    static constexpr std::array<std::string_view, kTensorCount> names = {
        "Q", "K", "V", "O", "S", "P", "m", "l", "LSE", "dO", "dQ", "dK", "dV", "dS", "dP", "D"};
    const auto i = static_cast<size_t>(t);
    return i < names.size() ? names[i] : "?";
}

std::string_view level_name(Level l) {
    switch (l) {
        case Level::HBM:
            return "HBM";
        case Level::L2:
            return "L2";
        case Level::SRAM:
            return "SRAM";
    }
    return "?";
}

std::string_view event_kind_name(EventKind k) {
    switch (k) {
        case EventKind::load:
            return "load";
        case EventKind::store:
            return "store";
        case EventKind::compute:
            return "compute";
        case EventKind::rescale:
            return "rescale";
    }
    return "?";
}

Totals Trace::totals_of(size_t first, size_t last) const {
    Totals t;
    last = std::min(last, events.size());
    for (size_t i = first; i < last; ++i) {
        const Event& e = events[i];
        if (e.kind == EventKind::load) t[e.tensor].read_bytes += e.bytes;
        if (e.kind == EventKind::store) t[e.tensor].write_bytes += e.bytes;
        t.flops += e.flops;
        if (e.kind == EventKind::rescale) t.rescales += e.rows;
    }
    if (first < last) t.steps = events[last - 1].step - events[first].step + 1;
    return t;
}

size_t Trace::first_event_of_step(int64_t step) const {
    auto it =
        std::lower_bound(events.begin(), events.end(), step, [](const Event& e, int64_t s) { return e.step < s; });
    return static_cast<size_t>(it - events.begin());
}

}  // namespace sim
