// Counted traffic == closed forms, derived here independently of the simulator's loops.
#include <doctest/doctest.h>

#include <limits>

#include "sim/simulate.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

namespace {
// Counts only, on the H200 preset (SRAM 227 KiB unless `sram` is given).
Result run(Algo a, int64_t n, int64_t d, int64_t br, int64_t bc, int64_t batch = 1, int64_t heads = 1,
           int64_t sram = 0) {
    Config c = counting(a, br, bc);
    c.sram_bytes = sram;
    return simulate(with_heads(shape(n, d), batch, heads), find_machine("H200"), c);
}

struct Shape {
    int64_t n, d, br, bc;
};
// 24 shapes: N a multiple of the block, not a multiple, smaller than a block, N = 1, odd d.
const Shape kShapes[] = {{1, 64, 64, 64},     {7, 16, 64, 64},      {64, 64, 64, 64},     {100, 64, 64, 64},
                         {128, 128, 64, 32},  {129, 128, 64, 32},   {255, 32, 16, 48},    {256, 33, 32, 32},
                         {1000, 64, 128, 96}, {1024, 128, 128, 64}, {1031, 128, 96, 80},  {2048, 64, 128, 128},
                         {3, 5, 2, 2},        {17, 7, 4, 3},        {500, 80, 50, 70},    {4096, 128, 128, 128},
                         {4097, 64, 64, 128}, {333, 96, 32, 64},    {8192, 128, 128, 64}, {60, 64, 128, 16},
                         {513, 16, 512, 1},   {777, 48, 1, 256},    {96, 24, 96, 96},     {10000, 64, 64, 64}};
}  // namespace

TEST_CASE("flash2 forward traffic equals its closed form on 24 shapes") {
    for (const auto& s : kShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        CAPTURE(s.br);
        CAPTURE(s.bc);
        const int64_t e = 2, tr = cdiv(s.n, s.br), nd = s.n * s.d;
        const Result r = run(Algo::flash2, s.n, s.d, s.br, s.bc);
        // Q_i once per row block; K_j and V_j once per (row block, column block); O and LSE written once.
        CHECK(r.totals[Tensor::Q].read_bytes == nd * e);
        CHECK(r.totals[Tensor::K].read_bytes == tr * nd * e);
        CHECK(r.totals[Tensor::V].read_bytes == tr * nd * e);
        CHECK(r.totals[Tensor::O] == Traffic{0, nd * e});
        CHECK(r.totals[Tensor::LSE] == Traffic{0, 4 * s.n});
        CHECK(r.totals.hbm_total().total() == nd * e * (2 + 2 * tr) + 4 * s.n);
        CHECK(r.totals[Tensor::S].total() == 0);
        CHECK(r.totals[Tensor::P].total() == 0);
        CHECK(r.totals.steps == tr * cdiv(s.n, s.bc));
        CHECK(r.totals.flops.matmul == 4 * s.n * s.n * s.d);
    }
}

TEST_CASE("flash1 (Algorithm 1) traffic equals its closed form on 24 shapes") {
    for (const auto& s : kShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        const int64_t e = 2, tc = cdiv(s.n, s.bc), nd = s.n * s.d;
        const Result r = run(Algo::flash1, s.n, s.d, s.br, s.bc);
        CHECK(r.totals[Tensor::K].read_bytes == nd * e);
        CHECK(r.totals[Tensor::V].read_bytes == nd * e);
        CHECK(r.totals[Tensor::Q].read_bytes == tc * nd * e);
        // O (float32), l, m: initialised once, then read and written back on each of the T_c passes.
        CHECK(r.totals[Tensor::O] == Traffic{tc * nd * 4, (tc + 1) * nd * 4});
        CHECK(r.totals[Tensor::l] == Traffic{tc * s.n * 4, (tc + 1) * s.n * 4});
        CHECK(r.totals[Tensor::m] == Traffic{tc * s.n * 4, (tc + 1) * s.n * 4});
        CHECK(r.totals.steps == tc * cdiv(s.n, s.br));
        CHECK(r.totals.flops.matmul == 4 * s.n * s.n * s.d);
    }
}

TEST_CASE("standard attention traffic equals its closed form: S and P go through HBM") {
    for (const auto& s : kShapes) {
        CAPTURE(s.n);
        CAPTURE(s.d);
        const int64_t e = 2, tr = cdiv(s.n, s.br), nd = s.n * s.d, nn = s.n * s.n;
        const Result r = run(Algo::standard, s.n, s.d, s.br, s.bc);
        const int64_t passes = s.n * 4 <= 227 * 1024 ? 1 : 2;  // a row of S fits in SRAM or not
        CHECK(r.totals[Tensor::Q].read_bytes == nd * e);
        CHECK(r.totals[Tensor::K].read_bytes == tr * nd * e);
        CHECK(r.totals[Tensor::S] == Traffic{passes * nn * e, nn * e});
        CHECK(r.totals[Tensor::P] == Traffic{nn * e, nn * e});
        CHECK(r.totals[Tensor::V].read_bytes == tr * nd * e);
        CHECK(r.totals[Tensor::O] == Traffic{0, nd * e});
    }
}

TEST_CASE("batch and heads multiply every count") {
    const Result one = run(Algo::flash2, 1000, 64, 64, 64);
    const Result many = run(Algo::flash2, 1000, 64, 64, 64, 3, 5);
    CHECK(many.totals.hbm_total().total() == 15 * one.totals.hbm_total().total());
    CHECK(many.totals.flops.matmul == 15 * one.totals.flops.matmul);
    CHECK(many.totals.flops.exp == 15 * one.totals.flops.exp);
    CHECK(many.totals.steps == 15 * one.totals.steps);
}

TEST_CASE("the seed's table: N = 8192, d = 128, fp16") {
    const Result r = run(Algo::standard, 8192, 128, 0, 0);
    // 8192^2 = 67,108,864 scores of 2 bytes = 128 MiB, written once as S and once as P.
    CHECK(r.totals[Tensor::S].write_bytes == 67108864LL * 2);
    CHECK(r.totals[Tensor::S].write_bytes == 128LL * 1024 * 1024);
    CHECK(r.totals[Tensor::P].write_bytes == 128LL * 1024 * 1024);
    // Q, K, V and O together: 4 * 8192 * 128 * 2 bytes = 8 MiB, 1/16 of the score matrix.
    const Result f = run(Algo::flash2, 8192, 128, 0, 0);
    CHECK(f.totals[Tensor::Q].read_bytes + f.totals[Tensor::O].write_bytes == 2LL * 8192 * 128 * 2);
    // flash2 with one query block (B_r = N, so T_r = 1, in an SRAM that holds it) reads Q, K and V
    // once each and writes O once: the 8 MiB of Q, K, V and O, plus N float32 LSE values.
    const Result once = run(Algo::flash2, 8192, 128, 8192, 128, 1, 1, int64_t{1} << 30);
    REQUIRE(once.T_r == 1);
    const Traffic qkvo =
        once.totals[Tensor::Q] + once.totals[Tensor::K] + once.totals[Tensor::V] + once.totals[Tensor::O];
    CHECK(qkvo.total() == 8LL * 1024 * 1024);
    CHECK(once.totals.hbm_total().total() == 8LL * 1024 * 1024 + 8192 * 4);
    // Doubling N quadruples the score matrix.
    const Result r2 = run(Algo::standard, 16384, 128, 0, 0);
    CHECK(r2.totals[Tensor::S].write_bytes == 4 * r.totals[Tensor::S].write_bytes);
}

TEST_CASE("a 128 x 128 fp16 tile of scores is 32 KiB") {
    const Result r = run(Algo::standard, 256, 64, 128, 128);
    bool found = false;
    for (const auto& ev : r.trace.events)
        if (ev.kind == EventKind::store && ev.tensor == Tensor::S) {
            CHECK(ev.rows == 128);
            CHECK(ev.cols == 128);
            CHECK(ev.bytes == 32 * 1024);
            found = true;
            break;
        }
    CHECK(found);
}

TEST_CASE("HBM traffic of flash falls like N^2 d^2 / M as SRAM grows") {
    // With B_r = ceil(M/4d) < d, K/V re-reads scale with T_r = N / B_r ~ 4 N d / M.
    const int64_t n = 16384, d = 128;
    const Result small = run(Algo::flash2, n, d, 0, 0, 1, 1, 64 * 1024);
    const Result big = run(Algo::flash2, n, d, 0, 0, 1, 1, 128 * 1024);
    const double kv_small =
        static_cast<double>(small.totals[Tensor::K].read_bytes + small.totals[Tensor::V].read_bytes);
    const double kv_big = static_cast<double>(big.totals[Tensor::K].read_bytes + big.totals[Tensor::V].read_bytes);
    CHECK(kv_small / kv_big == doctest::Approx(2.0).epsilon(0.1));
    // Quadratic in N at fixed M.
    const Result n2 = run(Algo::flash2, 2 * n, d, 0, 0, 1, 1, 64 * 1024);
    const double kv_n2 = static_cast<double>(n2.totals[Tensor::K].read_bytes + n2.totals[Tensor::V].read_bytes);
    CHECK(kv_n2 / kv_small == doctest::Approx(4.0).epsilon(0.02));
    // flash1: Q and O re-reads scale with T_c = N / B_c ~ 4 N d / M.
    const Result f1s = run(Algo::flash1, n, d, 0, 0, 1, 1, 64 * 1024);
    const Result f1b = run(Algo::flash1, n, d, 0, 0, 1, 1, 128 * 1024);
    CHECK(static_cast<double>(f1s.totals[Tensor::O].read_bytes) / f1b.totals[Tensor::O].read_bytes ==
          doctest::Approx(2.0).epsilon(0.1));
}

TEST_CASE("causal flash skips exactly the tiles above the diagonal") {
    for (const auto& s : kShapes) {
        CAPTURE(s.n);
        const Problem p = shape(s.n, s.d, true);
        Config c = counting(Algo::flash2, s.br, s.bc);
        const Result r = simulate(p, find_machine("H200"), c);
        // Row block i (queries up to min(N, (i+1) B_r) - 1) needs key blocks 0 .. ceil(min(N,(i+1)B_r)/B_c) - 1.
        const int64_t tr = cdiv(s.n, s.br), tc = cdiv(s.n, s.bc);
        int64_t visible = 0, kv_rows = 0;
        for (int64_t i = 0; i < tr; ++i) {
            const int64_t last = std::min(s.n, (i + 1) * s.br);
            const int64_t blocks = cdiv(last, s.bc);
            visible += blocks;
            kv_rows += std::min(s.n, blocks * s.bc);
        }
        CHECK(r.totals.steps == visible);
        // skipped = the triangle's tiles, counted one by one: tile (i, j) is skipped when its first
        // key j B_c comes after its last query min(N, (i+1) B_r) - 1
        int64_t skipped = 0;
        for (int64_t i = 0; i < tr; ++i)
            for (int64_t j = 0; j < tc; ++j) skipped += j * s.bc > std::min(s.n, (i + 1) * s.br) - 1;
        CHECK(tr * tc - r.totals.steps == skipped);
        CHECK(r.totals[Tensor::K].read_bytes == kv_rows * s.d * 2);
        // Standard attention gets no saving from the mask in what it writes: S and P whole.
        c.algo = Algo::standard;
        const Result st = simulate(p, find_machine("H200"), c);
        CHECK(st.totals[Tensor::S].write_bytes == s.n * s.n * 2);
        CHECK(st.totals[Tensor::P].write_bytes == s.n * s.n * 2);
    }
}

TEST_CASE("causal standard: the softmax reads only each row's visible columns of S") {
    // cuda/standard.cu's softmax_rows reads columns [0, a] of row a under the mask, in both of its
    // passes when a row does not fit in SRAM: N (N + 1) / 2 elements a pass, against N^2 without it.
    for (const int64_t n : {1LL, 7LL, 100LL, 1031LL, 4096LL, 70000LL}) {
        CAPTURE(n);
        const int64_t passes = n * 4 <= 227 * 1024 ? 1 : 2;  // a row of S fits in SRAM or not
        Config c = counting(Algo::standard, 64, 64);
        const Result causal = simulate(shape(n, 64, true), find_machine("H200"), c);
        const Result full = simulate(shape(n, 64), find_machine("H200"), c);
        CHECK(causal.totals[Tensor::S].read_bytes == passes * n * (n + 1) / 2 * 2);
        CHECK(full.totals[Tensor::S].read_bytes == passes * n * n * 2);
        CHECK(causal.totals[Tensor::S].write_bytes == n * n * 2);  // the scores product writes all of S
    }
}

TEST_CASE("block sizes: the paper's rule, and refusals that name the buffers") {
    const Problem p = shape(4096, 64);
    // M = 100,000 B of fp16 = 50,000 elements: B_c = ceil(50000/256) = 196, B_r = min(196, 64) = 64.
    const BlockChoice c = choose_blocks(p, Algo::flash2, 100000, 0, 0);
    CHECK(c.bytes <= 100000);
    CHECK(c.block_rows == 64);
    CHECK(c.block_cols <= 196);
    // M = 4 MiB = 2^21 fp16 elements: the rule gives B_c = 2^21 / 256 = 8192, B_r = 64. K_j and V_j
    // then fill M/2 and the fp32 score tile (64 x 8192 x 4 B) another M/2, so Q_i and O_i cannot fit:
    // B_c is halved once, to 4096, and the note says so.
    const BlockChoice big = choose_blocks(p, Algo::flash2, 4 << 20, 0, 0);
    CHECK(big.block_cols == 4096);
    CHECK(big.block_rows == 64);
    CHECK(big.note.find("B_c = ceil(M/4d) = 8192") != std::string::npos);
    CHECK(big.note.find("halved") != std::string::npos);
    try {
        choose_blocks(p, Algo::flash2, 16384, 256, 256);
        FAIL("expected a refusal");
    } catch (const Error& e) {
        const std::string msg = e.what();
        CHECK(msg.find("do not fit") != std::string::npos);
        CHECK(msg.find("K_j (B_c x d, fp16) 32,768 B") != std::string::npos);
        CHECK(msg.find("16,384 B") != std::string::npos);
    }
}

TEST_CASE("bad problems are refused with a clear message") {
    Problem p;
    p.seq = 0;
    p.head_dim = 64;
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("sequence length N must be a positive integer"), Error);
    p.seq = 10;
    p.head_dim = 0;
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("--head-dim"), Error);
    CHECK_THROWS_WITH_AS(find_machine("Z80"), doctest::Contains("known presets: H200"), Error);
    // sizes past what the int64 byte counts hold, or heads past what is walked, are refused, not
    // wrapped into negative bytes (the CLI saturates an out-of-range --batch to INT64_MAX)
    p.head_dim = 64;
    p.seq = 1024;
    p.batch = std::numeric_limits<int64_t>::max();
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("above the supported 16,777,216 heads"), Error);
    p.batch = 4096;
    p.heads = 4097;  // each alone is fine, their product is not
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("heads in one problem"), Error);
    p.batch = p.heads = 1;
    p.seq = int64_t{1} << 24;
    CHECK_NOTHROW(p.validate());  // one head at the longest N: 2^48 scores
    p.batch = 4096;               // 2^60 scores
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("lower --batch, --heads or --seq"), Error);
    // the FLOPs, 4 B H N^2 d: N = 2^20, d = 128, B H = 2^14 is 2^61 B H N^2 d, whose 4x would wrap
    // int64 into negative FLOPs; refused below 2^58 scores too
    p.seq = int64_t{1} << 20;
    p.head_dim = 128;
    p.batch = 16;
    p.heads = 1024;
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("B H N^2 d = 2.31e+18 is above what flashsim counts"), Error);
    p.heads = 16;  // 2^55
    CHECK_NOTHROW(p.validate());
    Config c;
    c.numerics = Numerics::off;
    c.l2 = L2Mode::off;
    c.event_cap = 0;
    const Result r = simulate(p, find_machine("H200"), c);
    CHECK(r.totals.flops.matmul > 0);  // 4 B H N^2 d = 2^57, counted, not wrapped
    CHECK(r.totals.flops.matmul == int64_t{4} * 256 * (int64_t{1} << 40) * 128);
}

TEST_CASE("totals add and subtract; the trace sums to the head's totals") {
    const Result r = run(Algo::flash2, 300, 32, 64, 64);
    const Totals all = r.trace.totals_of(0, r.trace.events.size());
    CHECK_FALSE(r.trace.truncated);
    CHECK(all.hbm == r.totals.hbm);
    CHECK(all.flops == r.totals.flops);
    const size_t mid = r.trace.first_event_of_step(7);
    CHECK((r.trace.totals_of(0, mid) + r.trace.totals_of(mid, r.trace.events.size())).hbm == all.hbm);
    CHECK((all - r.trace.totals_of(0, mid)).hbm == r.trace.totals_of(mid, r.trace.events.size()).hbm);
}

TEST_CASE("large problems keep a bounded trace") {
    Config c;  // the defaults: numerics and the L2 model automatic
    c.algo = Algo::flash2;
    c.event_cap = 1000;
    const Result r = simulate(shape(65536, 128), find_machine("H200"), c);
    CHECK(r.trace.events.size() == 1000);
    CHECK(r.trace.truncated);
    CHECK_FALSE(r.numerics);
    CHECK(r.totals.hbm_total().total() > 0);
}
