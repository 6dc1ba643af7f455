// The lab's tile machine: bytes, FLOPs and SRAM counted by hand, refusals that name the step.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>
#include <vector>

#include "sim/simulate.hpp"
#include "sim/tile_machine.hpp"

using namespace sim;

namespace {
std::vector<float> iota(int64_t n, float step) {
    std::vector<float> v(static_cast<size_t>(n));
    for (int64_t a = 0; a < n; ++a) v[a] = step * static_cast<float>(a % 17) - 1.0f;
    return v;
}
std::string refusal(auto&& f) {
    try {
        f();
    } catch (const Error& e) { return e.what(); }
    return "";
}
}  // namespace

TEST_CASE("tile machine: a tile copy moves rows*cols*2 bytes each way in fp16 and rounds on load") {
    TileMachine tm(1 << 20);
    const auto q = iota(8 * 4, 0.1f);
    tm.add_tensor("Q", 8, 4, DType::fp16, LabRole::input, q.data());
    tm.add_tensor("O", 8, 4, DType::fp16, LabRole::output);
    const int h = tm.load("Q", 2, 0, 3, 4);
    // hand count: 3 rows x 4 cols x 2 bytes = 24 B in SRAM and read from HBM
    CHECK(tm.sram_used() == 24);
    tm.store(h, "O", 5, 0);
    CHECK(tm.totals()[Tensor::Q].read_bytes == 24);
    CHECK(tm.totals()[Tensor::O].write_bytes == 24);
    CHECK(tm.totals().flops.total() == 0);
    // the stored values are the inputs rounded to fp16 (0.1 steps are not exact in binary)
    CHECK(tm.tensor("O").data[5 * 4 + 1] == round_to(DType::fp16, q[2 * 4 + 1]));
    CHECK(tm.tensor("O").data[5 * 4 + 1] != q[2 * 4 + 1]);
    tm.free(h);
    CHECK(tm.sram_used() == 0);
    CHECK(tm.sram_peak() == 24);
    REQUIRE(tm.trace().events.size() == 2);
    CHECK(tm.trace().events[0].kind == EventKind::load);
    CHECK(tm.trace().events[1].tensor == Tensor::O);
}

TEST_CASE("tile machine: product FLOPs 2mkn, a scale adds m*n, exp one an element, row ops one an element") {
    TileMachine tm(1 << 20);
    const auto a = iota(6 * 5, 0.25f), b = iota(7 * 5, 0.5f);
    tm.add_tensor("Q", 6, 5, DType::fp32, LabRole::input, a.data());
    tm.add_tensor("K", 7, 5, DType::fp32, LabRole::input, b.data());
    const int Q = tm.load("Q", 0, 0, 6, 5), K = tm.load("K", 0, 0, 7, 5);
    const int S = tm.matmul(Q, K, false, true, 0.5f, -1);  // (6 x 5)(5 x 7): 2*6*7*5 = 420
    CHECK(tm.totals().flops.matmul == 420);
    CHECK(tm.totals().flops.other == 42);  // the scale: 6*7
    // S[1][2] = 0.5 * sum_k Q[1][k] K[2][k], summed here in double
    double s12 = 0;
    for (int k = 0; k < 5; ++k) s12 += static_cast<double>(a[1 * 5 + k]) * b[2 * 5 + k];
    CHECK(tm.tile(S).at(1, 2) == doctest::Approx(0.5 * s12).epsilon(1e-6));
    const int m = tm.row_max(S);      // 42 more
    const int P = tm.exp(S, m, {S});  // 42 exp, in place
    const int l = tm.row_sum(P);      // 42 more
    CHECK(tm.totals().flops.exp == 42);
    CHECK(tm.totals().flops.other == 42 * 3);
    double row0 = 0;
    for (int c = 0; c < 7; ++c) row0 += tm.tile(P).at(0, c);
    CHECK(tm.tile(l).at(0, 0) == doctest::Approx(row0).epsilon(1e-6));
    // SRAM: Q 6*5*4 + K 7*5*4 + S 6*7*4 + m 6*4 + l 6*4 = 120 + 140 + 168 + 24 + 24
    CHECK(tm.sram_used() == 476);
    const int V = tm.load("K", 0, 0, 7, 5);
    const int acc = tm.fill(6, 5, 0.0f);
    tm.matmul(P, V, false, false, 1.0f, acc);  // accumulate in place: 2*6*5*7 = 420, no new SRAM
    CHECK(tm.totals().flops.matmul == 840);
    CHECK(tm.sram_used() == 476 + 140 + 120);
    tm.rows_op(LabRowOp::div, acc, l, {acc});  // 30
    CHECK(tm.totals().flops.other == 42 * 3 + 30);
}

TEST_CASE("tile machine: refusals name the step and the mistake") {
    TileMachine tm(100);
    const auto q = iota(16 * 4, 0.1f);
    tm.add_tensor("Q", 16, 4, DType::fp16, LabRole::input, q.data());
    tm.add_tensor("O", 16, 4, DType::fp16, LabRole::output);
    const int h = tm.load("Q", 0, 0, 8, 4);  // step 1: 64 B
    tm.free(h);                              // step 2
    const std::string freed = refusal([&] { tm.store(h, "O", 0, 0); });
    CHECK(freed.find("step 3 (store)") != std::string::npos);
    CHECK(freed.find("freed at step 2") != std::string::npos);
    const int a = tm.load("Q", 0, 0, 8, 4);  // step 4: 64 B
    const std::string over = refusal([&] { tm.load("Q", 8, 0, 8, 4); });
    CHECK(over.find("step 5 (load)") != std::string::npos);
    CHECK(over.find("SRAM overflow: 64 B in use + 64 B = 128 B, over the capacity of 100 B") != std::string::npos);
    CHECK(refusal([&] { tm.load("Q", 12, 0, 8, 4); }).find("outside Q") != std::string::npos);
    CHECK(refusal([&] { tm.store(a, "Q", 0, 0); }).find("is an input") != std::string::npos);
    CHECK(refusal([&] { tm.load("X", 0, 0, 1, 1); }).find("no tensor named X") != std::string::npos);
    CHECK(refusal([] {
              TileMachine t(10);
              t.add_tensor("Q_x", 1, 1, DType::fp16, LabRole::input);
          }).empty());
    CHECK(refusal([] {
              TileMachine t(10);
              t.add_tensor("Z", 1, 1, DType::fp16, LabRole::input);
          }).find("names none of the simulator's tensors") != std::string::npos);
}

TEST_CASE("tile machine: FA2's forward written with its ops counts what the flash2 walker counts") {
    // N = 96, d = 16, B_r = 32, B_c = 48: T_r = 3, T_c = 2, tiles that do not divide evenly.
    Problem p;
    p.seq = 96;
    p.head_dim = 16;
    p.dtype = DType::fp16;
    Config cfg;
    cfg.algo = Algo::flash2;
    cfg.block_rows = 32;
    cfg.block_cols = 48;
    cfg.numerics = Numerics::off;
    cfg.l2 = L2Mode::off;
    cfg.timing = false;
    const Result r = simulate(p, find_machine("H200"), cfg);
    const int64_t n = 96, d = 16, br = 32, bc = 48;
    std::vector<float> x(static_cast<size_t>(n * d));
    for (size_t a = 0; a < x.size(); ++a) x[a] = std::sin(0.37f * static_cast<float>(a));
    TileMachine tm(1 << 20);
    for (const char* t : {"Q", "K", "V"}) tm.add_tensor(t, n, d, DType::fp16, LabRole::input, x.data());
    tm.add_tensor("O", n, d, DType::fp16, LabRole::output);
    tm.add_tensor("LSE", n, 1, DType::fp32, LabRole::output);
    const float scale = static_cast<float>(p.softmax_scale());
    for (int64_t i = 0; i < n / br; ++i) {
        const int Q = tm.load("Q", i * br, 0, br, d);
        const int acc = tm.fill(br, d, 0.0f), l = tm.fill(br, 1, 0.0f);
        int m = tm.fill(br, 1, -INFINITY);
        for (int64_t j = 0; j < n / bc; ++j) {
            tm.step();
            const int K = tm.load("K", j * bc, 0, bc, d), V = tm.load("V", j * bc, 0, bc, d);
            const int S = tm.matmul(Q, K, false, true, scale, -1, {-1, Tensor::S});
            const int mn = tm.row_max(S);
            tm.binary(LabBinary::max, mn, m, {mn});
            const int alpha = tm.exp(m, mn);
            tm.exp(S, mn, {S, Tensor::P});
            const int ls = tm.row_sum(S);
            tm.binary(LabBinary::mul, l, alpha, {l});
            tm.binary(LabBinary::add, l, ls, {l});
            tm.rows_op(LabRowOp::mul, acc, alpha, {acc});
            tm.matmul(S, V, false, false, 1.0f, acc);
            for (int h : {K, V, S, m, alpha, ls}) tm.free(h);
            m = mn;  // the new running max
        }
        tm.rows_op(LabRowOp::div, acc, l, {acc});
        tm.log(l, m, {l});
        tm.store(acc, "O", i * br, 0);
        tm.store(l, "LSE", i * br, 0);
        for (int h : {Q, acc, m, l}) tm.free(h);
    }
    for (Tensor t : {Tensor::Q, Tensor::K, Tensor::V, Tensor::O, Tensor::LSE}) {
        CAPTURE(tensor_name(t));
        CHECK(tm.totals()[t] == r.totals[t]);
    }
    CHECK(tm.totals().flops == r.totals.flops);
    // and by hand: per step 2*br*bc*d twice (S and PV), 6 steps
    CHECK(tm.totals().flops.matmul == 6 * 2 * (2 * br * bc * d));
}

TEST_CASE("tile machine: writing float32 results into a loaded fp16 tile grows it to 4 bytes an element") {
    TileMachine tm(1000);
    const auto q = iota(4 * 8, 0.5f);
    tm.add_tensor("Q", 4, 8, DType::fp16, LabRole::input, q.data());
    const int h = tm.load("Q", 0, 0, 4, 8);  // 4*8*2 = 64 B
    CHECK(tm.sram_used() == 64);
    tm.scale(h, 2.0f, {h});  // the result is float32: 4*8*4 = 128 B, in the same tile
    CHECK(tm.sram_used() == 128);
    CHECK(tm.live_tiles() == 1);
    CHECK(tm.tile(h).at(1, 3) == 2.0f * round_to(DType::fp16, q[1 * 8 + 3]));
    // steps group the trace: two marked steps, the second's events carry index 1
    tm.step();
    tm.step();
    const int g = tm.load("Q", 0, 0, 1, 8);
    CHECK(tm.totals().steps == 2);
    CHECK(tm.trace().events.back().step == 1);
    // a tile that does not fit the output's shape is refused
    CHECK(refusal([&] { tm.row_sum(h, {g}); }).find("the output tile is 1 x 8 but the result is 4 x 1") !=
          std::string::npos);
}

TEST_CASE("tile machine: a last, shorter tile keeps its tile index in the trace") {
    // N = 200 rows in tiles of 64: rows 0..63, 64..127, 128..191 and the short 192..199 are tiles 0..3
    // (as the walkers number them); 192 / 8 would have called the last one tile 24
    TileMachine tm(1 << 20);
    tm.add_tensor("Q", 200, 16, DType::fp16, LabRole::input);
    tm.add_tensor("O", 200, 16, DType::fp16, LabRole::output);
    for (int64_t r0 = 0; r0 < 200; r0 += 64) {
        const int64_t r = std::min<int64_t>(64, 200 - r0);
        const int t = tm.load("Q", r0, 0, r, 16);
        tm.store(t, "O", r0, 0);
        tm.free(t);
    }
    std::vector<int32_t> loads, stores;
    for (const Event& e : tm.trace().events) (e.kind == EventKind::load ? loads : stores).push_back(e.row_tile);
    CHECK(loads == std::vector<int32_t>{0, 1, 2, 3});
    CHECK(stores == std::vector<int32_t>{0, 1, 2, 3});
}
