// tests/viz/lab_fa2.hpp — a learner's FlashAttention-2 forward written on the lab's tile machine in
// C++ (query blocks outer, as lab/solutions/06_fa2_forward.py writes it in Python), for the tests
// of the app's replay of lab traces. Inputs are any values: the tests count bytes, not outputs.
#pragma once
#include <algorithm>
#include <cmath>
#include <cstdint>
#include <limits>
#include <vector>

#include "sim/tile_machine.hpp"

namespace lab_test {

inline void fa2_forward(sim::TileMachine& tm, int64_t n, int64_t d, int64_t br, int64_t bc) {
    using sim::LabOut;
    using sim::Tensor;
    const float scale = 1.0f / std::sqrt(static_cast<float>(d));
    const float ninf = -std::numeric_limits<float>::infinity();
    for (int64_t r0 = 0; r0 < n; r0 += br) {
        const int64_t r = std::min(br, n - r0);
        int q = -1;
        const int acc = tm.fill(r, d, 0.0f), l = tm.fill(r, 1, 0.0f);
        int m = tm.fill(r, 1, ninf);
        for (int64_t c0 = 0; c0 < n; c0 += bc) {
            const int64_t c = std::min(bc, n - c0);
            tm.step();
            if (q < 0) q = tm.load("Q", r0, 0, r, d);
            const int k = tm.load("K", c0, 0, c, d), v = tm.load("V", c0, 0, c, d);
            const int s = tm.matmul(q, k, false, true, scale, -1, {-1, Tensor::S});
            const int m_new = tm.row_max(s, {-1, Tensor::m});
            tm.binary(sim::LabBinary::max, m_new, m, {m_new, Tensor::m});
            const int alpha = tm.exp(m, m_new, {-1, Tensor::P});
            tm.exp(s, m_new, {s, Tensor::P});
            const int ls = tm.row_sum(s, {-1, Tensor::l});
            tm.binary(sim::LabBinary::mul, l, alpha, {l, Tensor::l});
            tm.binary(sim::LabBinary::add, l, ls, {l, Tensor::l});
            tm.rows_op(sim::LabRowOp::mul, acc, alpha, {acc, Tensor::O});
            tm.matmul(s, v, false, false, 1.0f, acc, {acc, Tensor::O});
            for (int t : {k, v, s, m, alpha, ls}) tm.free(t);
            m = m_new;
        }
        tm.rows_op(sim::LabRowOp::div, acc, l, {acc, Tensor::O});
        tm.log(l, m, {l, Tensor::LSE});
        tm.store(acc, "O", r0, 0);
        tm.store(l, "LSE", r0, 0);
        for (int t : {acc, l, m, q}) tm.free(t);
    }
}

// A tile machine holding Q, K, V (N x d, dtype) with small values, O and LSE, SRAM `sram` bytes,
// after the forward above has run on it.
inline sim::TileMachine fa2_run(int64_t n, int64_t d, int64_t br, int64_t bc, sim::DType dt, int64_t sram) {
    sim::TileMachine tm(sram);
    std::vector<float> x(static_cast<size_t>(n * d));
    for (const char* name : {"Q", "K", "V"}) {
        for (size_t i = 0; i < x.size(); ++i) x[i] = static_cast<float>((i * 37 + name[0]) % 17) / 16.0f - 0.5f;
        tm.add_tensor(name, n, d, dt, sim::LabRole::input, x.data());
    }
    tm.add_tensor("O", n, d, dt, sim::LabRole::output);
    tm.add_tensor("LSE", n, 1, sim::DType::fp32, sim::LabRole::output);
    fa2_forward(tm, n, d, br, bc);
    return tm;
}

}  // namespace lab_test
