// sim/trace.hpp — what a simulation returns: ordered, value-typed events and totals that add.
//
// Totals are plain structs with operator+ and operator- so the totals of any range of steps can be
// formed; the UI reads a const Trace& and a step index and never re-runs the simulator to draw.
#pragma once
#include <array>
#include <cstdint>
#include <string_view>
#include <vector>

#include "sim/enum_names.hpp"

namespace sim {

// The tensors whose bytes are counted. Statistics: m (running max), l (running sum), LSE
// (log-sum-exp, m + log l, what FA2 stores for the backward pass), D = rowsum(dO * O).
enum class Tensor : uint8_t { Q, K, V, O, S, P, m, l, LSE, dO, dQ, dK, dV, dS, dP, D, count };
inline constexpr int kTensorCount = static_cast<int>(Tensor::count);
template <>
struct EnumNames<Tensor> {
    static constexpr std::array<EnumName<Tensor>, kTensorCount> table{{{Tensor::Q, "Q"},
                                                                       {Tensor::K, "K"},
                                                                       {Tensor::V, "V"},
                                                                       {Tensor::O, "O"},
                                                                       {Tensor::S, "S"},
                                                                       {Tensor::P, "P"},
                                                                       {Tensor::m, "m"},
                                                                       {Tensor::l, "l"},
                                                                       {Tensor::LSE, "LSE"},
                                                                       {Tensor::dO, "dO"},
                                                                       {Tensor::dQ, "dQ"},
                                                                       {Tensor::dK, "dK"},
                                                                       {Tensor::dV, "dV"},
                                                                       {Tensor::dS, "dS"},
                                                                       {Tensor::dP, "dP"},
                                                                       {Tensor::D, "D"}}};
};
inline std::string_view tensor_name(Tensor t) { return name_of(t); }

// Where bytes are: off-chip HBM, the L2 cache between, on-chip SRAM (shared memory / registers).
enum class Level : uint8_t { HBM, L2, SRAM };
template <>
struct EnumNames<Level> {
    static constexpr std::array<EnumName<Level>, 3> table{
        {{Level::HBM, "HBM"}, {Level::L2, "L2"}, {Level::SRAM, "SRAM"}}};
};
inline std::string_view level_name(Level l) { return name_of(l); }

struct Traffic {
    int64_t read_bytes = 0;
    int64_t write_bytes = 0;
    int64_t total() const { return read_bytes + write_bytes; }
    Traffic& operator+=(const Traffic& o) {
        read_bytes += o.read_bytes;
        write_bytes += o.write_bytes;
        return *this;
    }
    Traffic& operator-=(const Traffic& o) {
        read_bytes -= o.read_bytes;
        write_bytes -= o.write_bytes;
        return *this;
    }
    friend Traffic operator+(Traffic a, const Traffic& b) { return a += b; }
    friend Traffic operator-(Traffic a, const Traffic& b) { return a -= b; }
    friend bool operator==(const Traffic&, const Traffic&) = default;
};

struct Flops {
    int64_t matmul = 0;  // 2 per multiply-add in S = QK^T, O += PV (and the backward GEMMs)
    int64_t exp = 0;     // exponentials evaluated (scores and rescale factors)
    int64_t other = 0;   // max, sum, scale, rescale multiplies, division
    int64_t total() const { return matmul + exp + other; }
    Flops& operator+=(const Flops& o) {
        matmul += o.matmul;
        exp += o.exp;
        other += o.other;
        return *this;
    }
    Flops& operator-=(const Flops& o) {
        matmul -= o.matmul;
        exp -= o.exp;
        other -= o.other;
        return *this;
    }
    friend Flops operator+(Flops a, const Flops& b) { return a += b; }
    friend Flops operator-(Flops a, const Flops& b) { return a -= b; }
    friend bool operator==(const Flops&, const Flops&) = default;
};

// Bytes between HBM and SRAM, per tensor. (The L2 level of issue 3 adds its own view.)
struct Totals {
    std::array<Traffic, kTensorCount> hbm{};  // per tensor, bytes read from / written to HBM
    Flops flops{};
    int64_t steps = 0;     // inner-loop steps walked
    int64_t rescales = 0;  // row rescalings by e^(m_old - m_new) applied to O (flash only)

    Traffic& operator[](Tensor t) { return hbm[static_cast<size_t>(t)]; }
    const Traffic& operator[](Tensor t) const { return hbm[static_cast<size_t>(t)]; }
    Traffic hbm_total() const {
        Traffic t;
        for (const auto& x : hbm) t += x;
        return t;
    }
    Totals& operator+=(const Totals& o) {
        for (int i = 0; i < kTensorCount; ++i) hbm[i] += o.hbm[i];
        flops += o.flops;
        steps += o.steps;
        rescales += o.rescales;
        return *this;
    }
    Totals& operator-=(const Totals& o) {
        for (int i = 0; i < kTensorCount; ++i) hbm[i] -= o.hbm[i];
        flops -= o.flops;
        steps -= o.steps;
        rescales -= o.rescales;
        return *this;
    }
    friend Totals operator+(Totals a, const Totals& b) { return a += b; }
    friend Totals operator-(Totals a, const Totals& b) { return a -= b; }
    Totals scaled(int64_t k) const {  // k identical copies (e.g. B*H heads)
        Totals r = *this;
        for (auto& x : r.hbm) {
            x.read_bytes *= k;
            x.write_bytes *= k;
        }
        r.flops.matmul *= k;
        r.flops.exp *= k;
        r.flops.other *= k;
        r.steps *= k;
        r.rescales *= k;
        return r;
    }
};

enum class EventKind : uint8_t {
    load,     // tile HBM -> SRAM
    store,    // tile SRAM -> HBM
    compute,  // arithmetic on tiles resident in SRAM (flops filled)
    rescale,  // online-softmax correction of carried state by e^(m_old - m_new)
};
template <>
struct EnumNames<EventKind> {
    static constexpr std::array<EnumName<EventKind>, 4> table{{{EventKind::load, "load"},
                                                               {EventKind::store, "store"},
                                                               {EventKind::compute, "compute"},
                                                               {EventKind::rescale, "rescale"}}};
};
inline std::string_view event_kind_name(EventKind k) { return name_of(k); }

struct Event {
    EventKind kind = EventKind::compute;
    Tensor tensor = Tensor::Q;  // for compute: the tensor produced (S, P, O, ...)
    int32_t row_tile = -1;      // tile coordinates in that tensor (-1: not tiled that way)
    int32_t col_tile = -1;
    int32_t rows = 0;  // tile extent in elements
    int32_t cols = 0;
    int64_t bytes = 0;  // load/store: bytes moved
    Flops flops{};      // compute/rescale
    int64_t step = 0;   // inner-loop step this event belongs to
    int32_t phase = 0;  // algorithm phase (standard: 0 = S=QK^T, 1 = softmax, 2 = O=PV)
    int32_t head = 0;   // (batch*heads) index; the event list covers head 0 only
    uint8_t pass = 0;   // 0: forward pass, 1: backward pass
};

// The event list is bounded: only the first `event_cap` events of head 0 are kept (the totals
// always cover everything). `truncated` says whether events were dropped.
struct Trace {
    std::vector<Event> events;
    bool truncated = false;
    int64_t events_total = 0;  // events one head produced, kept or not
    int64_t steps_per_head = 0;

    // Totals of events [first, last): what moved during that stretch of the trace.
    Totals totals_of(size_t first, size_t last) const;
    // Index of the first event of the given step (events.size() if past the end).
    size_t first_event_of_step(int64_t step) const;
};

}  // namespace sim
