// sim/timing.cpp — the timing model's last stage: each kernel's blocks, in launch order, go to the
// slot (SM x blocks-per-SM) that frees first (a persistent grid's static order: each slot its own
// units in turn); kernels run one after another. Also the per-SM
// timeline of the first blocks' first steps, for the app.
#include <algorithm>
#include <functional>
#include <queue>

#include "sim/program.hpp"

namespace sim {

namespace detail {

// Greedy list scheduling: block g starts on the slot that is free first. Returns the makespan of
// the `total` blocks; with `at` > 0, also the makespan of the first `at` of them (*at_end), which
// the same pass reaches on its way.
double list_makespan(int64_t total, int64_t slots, const std::function<double(int64_t)>& dur, int64_t at,
                     double* at_end) {
    if (total <= 0) return 0;
    if (slots <= 0) slots = 1;
    std::priority_queue<double, std::vector<double>, std::greater<>> free_at;
    for (int64_t s = 0; s < std::min(slots, total); ++s) free_at.push(0.0);
    double end = 0;
    for (int64_t g = 0; g < total; ++g) {
        if (g == at && at_end) *at_end = end;
        const double t0 = free_at.top();
        free_at.pop();
        const double t1 = t0 + dur(g);
        end = std::max(end, t1);
        free_at.push(t1);
    }
    return end;
}

double list_makespan(const std::vector<double>& durations, int64_t slots) {
    return list_makespan(static_cast<int64_t>(durations.size()), slots,
                         [&](int64_t g) { return durations[static_cast<size_t>(g)]; });
}

namespace {

// The makespan of `total` blocks that repeat head after head (nb a head). Up to kExactBlocks it is
// the list schedule itself; beyond, the schedule of the first 2 h heads is run (h heads of about
// kExactBlocks / 2 blocks) and the rest extrapolated at the rate of its second half, where the
// slots are long past their first wave: a very large problem (millions of heads) then costs
// seconds, not hours, and moves the makespan by the tail of one wave at most.
constexpr int64_t kExactBlocks = int64_t{1} << 23;
double makespan_of_heads(int64_t total, int64_t nb, int64_t slots, const std::function<double(int64_t)>& dur) {
    if (total <= kExactBlocks || nb <= 0 || nb > kExactBlocks / 4) return list_makespan(total, slots, dur);
    const int64_t h = std::max<int64_t>(1, kExactBlocks / 2 / nb), heads = total / nb;
    if (2 * h >= heads) return list_makespan(total, slots, dur);
    double m1 = 0;
    const double m2 = list_makespan(2 * h * nb, slots, dur, h * nb, &m1);
    return m2 + (m2 - m1) * static_cast<double>(heads - 2 * h) / static_cast<double>(h);
}

}  // namespace

// The static order's makespan (GridOrder::static_units): G = min(slots, units) slots, slot s
// running units s, s + G, ... one after another; the longest slot's sum.
double makespan_in_turn(const StaticUnits& su, int64_t slots, const std::function<double(int64_t)>& dur) {
    const int64_t units = su.count();
    if (units <= 0) return 0;
    const int64_t G = std::max<int64_t>(1, std::min(slots, units));
    std::vector<double> busy(static_cast<size_t>(G), 0.0);
    int64_t b[2];
    for (int64_t u = 0; u < units; ++u) {
        const int n = su.blocks(u, b);
        for (int i = 0; i < n; ++i) busy[static_cast<size_t>(u % G)] += dur(b[i]);
    }
    return *std::max_element(busy.begin(), busy.end());
}

void schedule(Timing& out, const std::vector<KernelInfo>& kernels,
              const std::vector<std::vector<BlockTime>>& kernel_blocks, int64_t heads_known, int64_t heads_total,
              const std::vector<int64_t>& kernel_slots, int blocks_per_sm,
              const std::vector<std::vector<StepCost>>& timeline, double flops) {
    out.slots = kernel_slots.empty() ? 0 : *std::max_element(kernel_slots.begin(), kernel_slots.end());
    out.serial_s = out.overlapped_s = 0;
    out.kernels.clear();
    for (size_t k = 0; k < kernels.size() && k < kernel_blocks.size(); ++k) {
        const auto& v = kernel_blocks[k];
        const int64_t nb = kernels[k].blocks_per_head, total = nb * heads_total;
        const int64_t slots = k < kernel_slots.size() ? kernel_slots[k] : 1;
        if (nb <= 0 || v.empty()) continue;
        const int64_t known = static_cast<int64_t>(v.size());
        const int64_t last_head0 = std::max<int64_t>(0, (std::min(heads_known, known / nb) - 1) * nb);
        auto pick = [&](int64_t g) -> const BlockTime& {
            if (g < known) return v[static_cast<size_t>(g)];
            return v[static_cast<size_t>(std::min(known - 1, last_head0 + g % nb))];
        };
        KernelTime kt;
        kt.name = kernels[k].name;
        kt.blocks = total;
        if (kernels[k].static_units) {
            const StaticUnits su{nb, heads_total, kernels[k].unit_pairs, kernels[k].lone_middles};
            kt.serial_s = makespan_in_turn(su, slots, [&](int64_t g) { return pick(g).serial; });
            kt.overlapped_s = makespan_in_turn(su, slots, [&](int64_t g) { return pick(g).overlapped; });
        } else {
            kt.serial_s = makespan_of_heads(total, nb, slots, [&](int64_t g) { return pick(g).serial; });
            kt.overlapped_s = makespan_of_heads(total, nb, slots, [&](int64_t g) { return pick(g).overlapped; });
        }
        out.serial_s += kt.serial_s;
        out.overlapped_s += kt.overlapped_s;
        out.kernels.push_back(std::move(kt));
    }
    out.predicted_ms = out.overlapped_s * 1e3;
    out.predicted_tflops = out.overlapped_s > 0 ? flops / out.overlapped_s / 1e12 : 0;
    // Timeline: block b of the first kernel starts at 0 on slot b, i.e. SM b / blocks_per_sm.
    out.timeline.clear();
    using K = TimelineSegment::Kind;
    for (size_t b = 0; b < timeline.size(); ++b) {
        const int32_t sm = static_cast<int32_t>(static_cast<int64_t>(b) / std::max(1, blocks_per_sm));
        const auto& steps = timeline[b];
        double t = 0;
        for (size_t s = 0; s < steps.size(); ++s) {  // serial: copy, then matmul, then scalar
            const auto& c = steps[s];
            const int32_t si = static_cast<int32_t>(s);
            if (c.copy > 0) out.timeline.push_back({sm, t, t + c.copy, K::copy, si, false});
            t += c.copy;
            if (c.matmul > 0) out.timeline.push_back({sm, t, t + c.matmul, K::matmul, si, false});
            t += c.matmul;
            if (c.scalar > 0) out.timeline.push_back({sm, t, t + c.scalar, K::scalar, si, false});
            t += c.scalar;
        }
        // overlapped: step s's copy starts when step s-1's arithmetic starts (prefetch); its
        // arithmetic starts when both its copy and the previous arithmetic are done.
        double compute_start_prev = 0, compute_end_prev = 0;
        for (size_t s = 0; s < steps.size(); ++s) {
            const auto& c = steps[s];
            const int32_t si = static_cast<int32_t>(s);
            const double copy_start = compute_start_prev;
            const double copy_end = copy_start + c.copy;
            if (c.copy > 0) out.timeline.push_back({sm, copy_start, copy_end, K::copy, si, true});
            const double cs = std::max(copy_end, compute_end_prev);
            if (c.matmul > 0) out.timeline.push_back({sm, cs, cs + c.matmul, K::matmul, si, true});
            if (c.scalar > 0)
                out.timeline.push_back({sm, cs + c.matmul, cs + c.matmul + c.scalar, K::scalar, si, true});
            compute_start_prev = cs;
            compute_end_prev = cs + c.matmul + c.scalar;
        }
    }
}

}  // namespace detail
}  // namespace sim
