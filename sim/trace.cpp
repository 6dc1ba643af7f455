#include "sim/trace.hpp"

#include <algorithm>

namespace sim {

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
