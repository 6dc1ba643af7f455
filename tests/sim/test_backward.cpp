// The backward pass: counted traffic == closed forms derived here; gradients == a float64
// reference, itself checked against finite differences of an independent float64 forward.
#include <doctest/doctest.h>

#include <Eigen/Core>
#include <cmath>

#include "sim/reference.hpp"
#include "sim/simulate.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

namespace {
struct BwdShape {
    int64_t n, d, br, bc;
};
const BwdShape kBwdShapes[] = {{1, 16, 16, 16},     {7, 16, 4, 4},      {64, 64, 32, 32},   {100, 64, 32, 48},
                               {129, 32, 64, 32},   {255, 32, 16, 48},  {256, 33, 32, 32},  {1000, 64, 64, 96},
                               {1031, 128, 64, 32}, {2048, 64, 64, 64}, {3, 5, 2, 2},       {17, 7, 4, 3},
                               {4097, 64, 64, 128}, {513, 16, 128, 1},  {8192, 128, 64, 64}};
}  // namespace

TEST_CASE("flash2 backward traffic equals its closed form (FA2: K/V blocks outer, dQ accumulated in HBM)") {
    for (const auto& s : kBwdShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        CAPTURE(s.br);
        CAPTURE(s.bc);
        Config c = counting(Algo::flash2, s.br, s.bc, Pass::backward);
        c.sram_bytes = int64_t{1} << 30;  // the explicit blocks always fit
        const Result r = simulate(shape(s.n, s.d), find_machine("H200"), c);
        const int64_t e = 2, nd = s.n * s.d, tr = cdiv(s.n, s.br), tc = cdiv(s.n, s.bc);
        // pre-kernel reads O and dO once, writes D (fp32) and zeroes dQ (fp32);
        // main kernel: per column block, K_j, V_j once; per (j, i): Q_i, dO_i, LSE_i, D_i, and dQ_i read+written;
        // post-kernel: dQ read as fp32, written in the storage type.
        CHECK(r.totals[Tensor::Q] == Traffic{tc * nd * e, 0});
        CHECK(r.totals[Tensor::K] == Traffic{nd * e, 0});
        CHECK(r.totals[Tensor::V] == Traffic{nd * e, 0});
        CHECK(r.totals[Tensor::O] == Traffic{nd * e, 0});
        CHECK(r.totals[Tensor::dO] == Traffic{(tc + 1) * nd * e, 0});
        CHECK(r.totals[Tensor::LSE] == Traffic{tc * 4 * s.n, 0});
        CHECK(r.totals[Tensor::D] == Traffic{tc * 4 * s.n, 4 * s.n});
        CHECK(r.totals[Tensor::dQ] == Traffic{(tc + 1) * nd * 4, nd * 4 + tc * nd * 4 + nd * e});
        CHECK(r.totals[Tensor::dK] == Traffic{0, nd * e});
        CHECK(r.totals[Tensor::dV] == Traffic{0, nd * e});
        CHECK(r.totals[Tensor::S].total() == 0);
        CHECK(r.totals[Tensor::P].total() == 0);
        CHECK(r.totals.steps == tr + tr * tc + tr);
        // five GEMMs of 2 n^2 d each (S recomputed, dV, dP, dK, dQ); exp only to recompute P
        CHECK(r.totals.flops.matmul == 10 * s.n * s.n * s.d);
        CHECK(r.totals.flops.exp == s.n * s.n);
        CHECK(r.forward_totals.hbm_total().total() == 0);
        CHECK(r.backward_totals.hbm == r.totals.hbm);
    }
}

// A kernel that keeps C copies of the fp32 dQ accumulator (flash2h at d = 64: one a consumer
// warpgroup's keys) zeroes C, adds into C at every (j, i) step and reads C back; nothing else moves.
TEST_CASE("flash2 backward with dQ accumulator copies: each copy zeroed, added into, read back") {
    for (const auto& s : kBwdShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        const int64_t e = 2, nd = s.n * s.d, tc = cdiv(s.n, s.bc);
        for (int64_t copies : {1, 2, 3}) {
            CAPTURE(copies);
            Config c = counting(Algo::flash2, s.br, s.bc, Pass::backward);
            c.sram_bytes = int64_t{1} << 30;
            c.dq_copies = copies;
            const Result r = simulate(shape(s.n, s.d), find_machine("H200"), c);
            // reads: every copy's (j, i) adds and the post pass; writes: the zeroing, the adds, dQ itself
            CHECK(r.totals[Tensor::dQ] == Traffic{copies * (tc + 1) * nd * 4, copies * (1 + tc) * nd * 4 + nd * e});
            CHECK(r.totals[Tensor::Q] == Traffic{tc * nd * e, 0});
            CHECK(r.totals[Tensor::dK] == Traffic{0, nd * e});
            CHECK(r.totals.flops.matmul == 10 * s.n * s.n * s.d);
        }
    }
    Config c = counting(Algo::flash2, 64, 64, Pass::backward);
    c.dq_copies = 0;
    CHECK_THROWS_WITH_AS(simulate(shape(256, 64), find_machine("H200"), c),
                         doctest::Contains("dq_copies must be 1 or more"), Error);
}

TEST_CASE("flash1 backward (Algorithm 4) traffic equals its closed form") {
    for (const auto& s : kBwdShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        Config c = counting(Algo::flash1, s.br, s.bc, Pass::backward);
        c.sram_bytes = int64_t{1} << 30;
        const Result r = simulate(shape(s.n, s.d), find_machine("H200"), c);
        const int64_t e = 2, nd = s.n * s.d, tr = cdiv(s.n, s.br), tc = cdiv(s.n, s.bc);
        CHECK(r.totals[Tensor::K] == Traffic{nd * e, 0});
        CHECK(r.totals[Tensor::V] == Traffic{nd * e, 0});
        CHECK(r.totals[Tensor::Q] == Traffic{tc * nd * e, 0});
        CHECK(r.totals[Tensor::O] == Traffic{tc * nd * 4, 0});  // O in float32, as Algorithm 1 stored it
        CHECK(r.totals[Tensor::dO] == Traffic{tc * nd * e, 0});
        CHECK(r.totals[Tensor::l] == Traffic{tc * 4 * s.n, 0});
        CHECK(r.totals[Tensor::m] == Traffic{tc * 4 * s.n, 0});
        // line 5 zeroes dQ, dK, dV in HBM; dQ_i is read and written back in every inner step;
        // dK_j, dV_j are written at the end of each outer step.
        CHECK(r.totals[Tensor::dQ] == Traffic{tc * nd * 4, (tc + 1) * nd * 4});
        CHECK(r.totals[Tensor::dK] == Traffic{0, 2 * nd * e});
        CHECK(r.totals[Tensor::dV] == Traffic{0, 2 * nd * e});
        CHECK(r.totals[Tensor::LSE].total() == 0);
        CHECK(r.totals.steps == tr * tc);
        CHECK(r.totals.flops.matmul == 10 * s.n * s.n * s.d);
    }
}

TEST_CASE("standard backward traffic equals its closed form: P read, dP and dS through HBM") {
    for (const auto& s : kBwdShapes) {
        if (s.br > 128 || s.bc > 128) continue;
        CAPTURE(s.n);
        CAPTURE(s.d);
        const Result r =
            simulate(shape(s.n, s.d), find_machine("H200"), counting(Algo::standard, s.br, s.bc, Pass::backward));
        const int64_t e = 2, nd = s.n * s.d, nn = s.n * s.n, tr = cdiv(s.n, s.br), tc = cdiv(s.n, s.bc);
        const int64_t passes = 2 * s.n * 4 <= 227 * 1024 ? 1 : 2;  // a row of P and of dP (fp32) fit in SRAM or not
        CHECK(r.totals[Tensor::P] == Traffic{nn * e + passes * nn * e, 0});  // dV = P^T dO, then dS
        CHECK(r.totals[Tensor::dO] == Traffic{tc * nd * e + nd * e, 0});
        CHECK(r.totals[Tensor::V] == Traffic{tr * nd * e, 0});
        CHECK(r.totals[Tensor::dP] == Traffic{passes * nn * e, nn * e});
        CHECK(r.totals[Tensor::dS] == Traffic{2 * nn * e, nn * e});  // read by dQ = dS K and dK = dS^T Q
        CHECK(r.totals[Tensor::K] == Traffic{tr * nd * e, 0});
        CHECK(r.totals[Tensor::Q] == Traffic{tc * nd * e, 0});
        CHECK(r.totals[Tensor::dQ] == Traffic{0, nd * e});
        CHECK(r.totals[Tensor::dK] == Traffic{0, nd * e});
        CHECK(r.totals[Tensor::dV] == Traffic{0, nd * e});
        CHECK(r.totals.flops.matmul == 8 * s.n * s.n * s.d);  // four GEMMs, nothing recomputed
        CHECK(r.totals.flops.exp == 0);
    }
}

TEST_CASE("recompute trades arithmetic for traffic: flash2 backward does more FLOPs, moves far fewer bytes") {
    const Problem p = shape(4096, 64);
    Config sc = counting(Algo::standard, 128, 128, Pass::both), fc = counting(Algo::flash2, 0, 0, Pass::both);
    fc.bwd_block_rows = fc.bwd_block_cols = 0;
    const Result st = simulate(p, find_machine("H200"), sc);
    const Result fl = simulate(p, find_machine("H200"), fc);
    // backward GEMMs: standard 4 (8 n^2 d), flash2 5 (10 n^2 d); forward 2 each.
    CHECK(st.backward_totals.flops.matmul == 8LL * 4096 * 4096 * 64);
    CHECK(fl.backward_totals.flops.matmul == 10LL * 4096 * 4096 * 64);
    CHECK(st.totals.flops.matmul == 12LL * 4096 * 4096 * 64);  // 2 forward + 4 backward GEMMs
    CHECK(fl.totals.flops.matmul == 14LL * 4096 * 4096 * 64);  // 2 forward + 5 backward GEMMs
    CHECK(fl.totals.hbm_total().total() * 2 < st.totals.hbm_total().total());
    // both = forward + backward
    CHECK((fl.forward_totals + fl.backward_totals).hbm == fl.totals.hbm);
}

TEST_CASE("causal backward: flash skips exactly the tiles above the diagonal; standard saves nothing") {
    for (const auto& s : kBwdShapes) {
        CAPTURE(s.n);
        CAPTURE(s.br);
        CAPTURE(s.bc);
        const Problem p = shape(s.n, s.d, true);
        const int64_t tr = cdiv(s.n, s.br), tc = cdiv(s.n, s.bc), e = 2;
        // Column block j (keys from j*B_c) is seen by the row blocks from the one holding row j*B_c onwards.
        int64_t visible = 0, skipped = 0, q_rows = 0;
        for (int64_t j = 0; j < tc; ++j) {
            const int64_t first = (j * s.bc) / s.br;
            visible += tr - first;
            skipped += first;
            q_rows += s.n - first * s.br;
        }
        Config c = counting(Algo::flash2, s.br, s.bc, Pass::backward);
        c.sram_bytes = int64_t{1} << 30;
        const Result f2 = simulate(p, find_machine("H200"), c);
        CHECK(f2.totals.steps == tr + visible + tr);
        CHECK(tr * tc - (f2.totals.steps - 2 * tr) == skipped);
        CHECK(f2.totals[Tensor::Q].read_bytes == q_rows * s.d * e);
        CHECK(f2.totals[Tensor::dQ].read_bytes == q_rows * s.d * 4 + s.n * s.d * 4);
        c.algo = Algo::flash1;
        const Result f1 = simulate(p, find_machine("H200"), c);
        CHECK(f1.totals.steps == visible);
        CHECK(f1.totals[Tensor::O].read_bytes == q_rows * s.d * 4);
        if (s.br <= 128 && s.bc <= 128) {
            const Result st = simulate(p, find_machine("H200"), counting(Algo::standard, s.br, s.bc, Pass::backward));
            CHECK(st.totals[Tensor::dS].write_bytes == s.n * s.n * e);
        }
    }
}

namespace {
using MatD = Eigen::Matrix<double, Eigen::Dynamic, Eigen::Dynamic, Eigen::RowMajor>;
// An independent float64 forward: L = sum(O o dO), O = softmax(scale Q K^T, causal) V.
double loss(const MatD& q, const MatD& k, const MatD& v, const MatD& dout, double scale, bool causal) {
    const int64_t n = q.rows();
    MatD s = scale * q * k.transpose();
    double L = 0;
    for (int64_t i = 0; i < n; ++i) {
        double m = -INFINITY;
        for (int64_t j = 0; j < n; ++j)
            if (!causal || j <= i) m = std::max(m, s(i, j));
        double z = 0;
        for (int64_t j = 0; j < n; ++j)
            if (!causal || j <= i) z += std::exp(s(i, j) - m);
        for (int64_t j = 0; j < n; ++j) {
            if (causal && j > i) continue;
            const double pij = std::exp(s(i, j) - m) / z;
            for (int64_t t = 0; t < v.cols(); ++t) L += pij * v(j, t) * dout(i, t);
        }
    }
    return L;
}
MatD as_mat(const TensorF& t) {
    MatD m(t.rows, t.cols);
    for (int64_t i = 0; i < t.rows * t.cols; ++i) m.data()[i] = t.data[static_cast<size_t>(i)];
    return m;
}
}  // namespace

TEST_CASE("the float64 backward reference matches finite differences") {
    for (bool causal : {false, true}) {
        CAPTURE(causal);
        Problem p = shape(5, 3, causal);
        p.dtype = DType::fp32;
        p.seed = 11;
        const Inputs in = generate_inputs(p);
        const TensorF dO = generate_input(p, InputTensor::dO);
        const Gradients g = attention_backward_reference(p, in.Q, in.K, in.V, dO);
        MatD q = as_mat(in.Q), k = as_mat(in.K), v = as_mat(in.V);
        const MatD dout = as_mat(dO);
        const double scale = p.softmax_scale(), h = 1e-6;
        auto fd = [&](MatD& x, int64_t i) {
            const double keep = x.data()[i];
            x.data()[i] = keep + h;
            const double up = loss(q, k, v, dout, scale, causal);
            x.data()[i] = keep - h;
            const double down = loss(q, k, v, dout, scale, causal);
            x.data()[i] = keep;
            return (up - down) / (2 * h);
        };
        for (int64_t i = 0; i < 15; ++i) {
            CHECK(g.dQ.data[static_cast<size_t>(i)] == doctest::Approx(fd(q, i)).epsilon(1e-6).scale(1e-6));
            CHECK(g.dK.data[static_cast<size_t>(i)] == doctest::Approx(fd(k, i)).epsilon(1e-6).scale(1e-6));
            CHECK(g.dV.data[static_cast<size_t>(i)] == doctest::Approx(fd(v, i)).epsilon(1e-6).scale(1e-6));
        }
    }
}

TEST_CASE("simulated gradients match the float64 reference (fp32 storage: float32 rounding only)") {
    struct Case {
        int64_t n, d, br, bc;
        bool causal;
    };
    const Case cases[] = {{1, 8, 4, 4, false},    {7, 5, 4, 3, false},      {33, 17, 8, 16, true},
                          {64, 64, 16, 16, true}, {100, 33, 32, 24, false}, {130, 64, 64, 32, true}};
    for (const auto& k : cases) {
        CAPTURE(k.n);
        CAPTURE(k.d);
        CAPTURE(k.causal);
        Problem p = shape(k.n, k.d, k.causal);
        p.batch = 2;
        p.dtype = DType::fp32;
        p.seed = 3 + static_cast<uint64_t>(k.n);
        Inputs in = generate_inputs(p);
        in.dO = generate_input(p, InputTensor::dO);
        const Gradients g = attention_backward_reference(p, in.Q, in.K, in.V, in.dO);
        for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
            CAPTURE(algo_name(a));
            const Result r = simulate(p, find_machine("H200"), numeric(a, k.br, k.bc, Pass::both));
            REQUIRE(r.dQ);
            for (auto [got, want] : {std::pair{&*r.dQ, &g.dQ}, {&*r.dK, &g.dK}, {&*r.dV, &g.dV}}) {
                const ErrorStats st = validate(*got, *want, DType::fp32);
                CHECK(st.nonfinite == 0);
                CHECK(st.max_abs < 2e-6);  // gradients here are O(0.1); a few float32 roundings
            }
        }
    }
}

TEST_CASE("fp16 storage: gradients within fp16 rounding of the reference; standard also rounds P, dP, dS") {
    Problem p = shape(200, 64);
    Inputs in = generate_inputs(p);
    in.dO = generate_input(p, InputTensor::dO);
    const Gradients g = attention_backward_reference(p, in.Q, in.K, in.V, in.dO);
    double worst[3] = {0, 0, 0};
    int idx = 0;
    for (Algo a : {Algo::flash2, Algo::flash1, Algo::standard}) {
        const Result r = simulate(p, find_machine("H200"), numeric(a, 0, 0, Pass::both));
        const ErrorStats q = validate(*r.dQ, g.dQ, DType::fp16), kk = validate(*r.dK, g.dK, DType::fp16),
                         v = validate(*r.dV, g.dV, DType::fp16);
        CAPTURE(algo_name(a));
        CHECK(q.nonfinite + kk.nonfinite + v.nonfinite == 0);
        worst[idx++] = std::max({q.max_abs, kk.max_abs, v.max_abs});
    }
    // |gradients| < 1 here: fp16 output rounding is < 2^-11; flash2 also rounds O (used in D) to fp16.
    CHECK(worst[0] < 2e-3);
    CHECK(worst[1] < 2e-3);
    CHECK(worst[2] < 1e-2);
}

TEST_CASE("fully masked rows (left padding + causal) give 0 output, 0 gradients, no NaN") {
    Problem p = shape(40, 8, true);
    p.pad_left = 12;  // queries 0..11 see no key at all
    p.dtype = DType::fp32;
    Inputs in = generate_inputs(p);
    in.dO = generate_input(p, InputTensor::dO);
    const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
    const Gradients g = attention_backward_reference(p, in.Q, in.K, in.V, in.dO);
    for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
        CAPTURE(algo_name(a));
        const Result r = simulate(p, find_machine("H200"), numeric(a, 8, 8, Pass::both));
        CHECK(validate(*r.output, ref, DType::fp32).max_abs < 1e-6);
        for (int64_t row = 0; row < 12; ++row)
            for (int64_t k = 0; k < 8; ++k) {
                CHECK(r.output->at(0, row, k) == 0.0f);
                CHECK(r.dQ->at(0, row, k) == 0.0f);
                CHECK(r.dK->at(0, row, k) == 0.0f);  // padding keys get no gradient
            }
        for (auto [got, want] : {std::pair{&*r.dQ, &g.dQ}, {&*r.dK, &g.dK}, {&*r.dV, &g.dV}}) {
            const ErrorStats st = validate(*got, *want, DType::fp32);
            CHECK(st.nonfinite == 0);
            CHECK(st.max_abs < 2e-6);
        }
    }
}

TEST_CASE("backward blocks: halved to fit, or refused by name when requested and too big") {
    const Problem p = shape(4096, 128);
    const BlockChoice b = choose_backward_blocks(p, Algo::flash2, 227 * 1024, 128, 114, 0, 0);
    CHECK(b.bytes <= 227 * 1024);
    CHECK(b.note.find("halved") != std::string::npos);
    CHECK_THROWS_WITH_AS(choose_backward_blocks(p, Algo::flash2, 227 * 1024, 128, 114, 128, 128),
                         doctest::Contains("backward tiles do not fit"), Error);
}

TEST_CASE("sliding window: the backward skips tiles older than every window and still matches the reference") {
    Problem p = shape(97, 16, true);
    p.window = 20;
    p.dtype = DType::fp32;
    Inputs in = generate_inputs(p);
    in.dO = generate_input(p, InputTensor::dO);
    const Gradients g = attention_backward_reference(p, in.Q, in.K, in.V, in.dO);
    for (Algo a : {Algo::flash1, Algo::flash2, Algo::standard}) {
        CAPTURE(algo_name(a));
        const Result r = simulate(p, find_machine("H200"), numeric(a, 16, 8, Pass::backward));
        for (auto [got, want] : {std::pair{&*r.dQ, &g.dQ}, {&*r.dK, &g.dK}, {&*r.dV, &g.dV}})
            CHECK(validate(*got, *want, DType::fp32).max_abs < 2e-6);
        if (a == Algo::standard) continue;
        // tiles (i, j) visited: rows [16i, 16i+16) see keys (n-20, n]; independent count of the tiles
        // with at least one visible pair
        int64_t visible = 0;
        for (int64_t j = 0; j < 13; ++j)
            for (int64_t i = 0; i < 7; ++i) {
                bool any = false;
                for (int64_t n = 16 * i; n < std::min<int64_t>(97, 16 * i + 16) && !any; ++n)
                    for (int64_t k = 8 * j; k < std::min<int64_t>(97, 8 * j + 8); ++k)
                        if (k <= n && k > n - 20) any = true;
                visible += any;
            }
        CHECK(r.totals.steps == (a == Algo::flash2 ? visible + 2 * 7 : visible));
    }
}
