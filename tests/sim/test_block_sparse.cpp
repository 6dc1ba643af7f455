// Block-sparse attention: a block mask skips whole tiles. Skipped tiles move no K/V bytes and do no
// arithmetic; the output is the softmax over the kept blocks alone, as the float64 reference with the
// same mask computes it; density 1 is the dense walk to the byte.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/mask.hpp"
#include "sim/reference.hpp"
#include "sim/simulate.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

namespace {

Problem sparse(int64_t n, int64_t d, double density, bool causal = false) {
    Problem p = shape(n, d, causal);
    p.block_density = density;
    return p;
}

// Tiles (i, j) of B_r x B_c in which at least one query sees one key, found element by element through
// key_visible (the reference's rule), independently of the walkers' tile loops. kv_bytes: the K and V
// bytes those tiles' columns hold (2 c d e each); rows: query blocks with at least one such tile.
struct Visible {
    int64_t tiles = 0, kv_bytes = 0, rows = 0;
};
Visible visible_tiles(const Problem& p, int64_t br, int64_t bc) {
    Visible v;
    const int64_t n = p.seq;
    for (int64_t r0 = 0; r0 < n; r0 += br) {
        bool any_in_row = false;
        for (int64_t c0 = 0; c0 < n; c0 += bc) {
            bool any = false;
            for (int64_t q = r0; q < std::min(n, r0 + br) && !any; ++q)
                for (int64_t k = c0; k < std::min(n, c0 + bc) && !any; ++k) any = key_visible(p, q, k);
            if (!any) continue;
            ++v.tiles;
            v.kv_bytes += 2 * (std::min(n, c0 + bc) - c0) * p.head_dim * p.elem_bytes();
            any_in_row = true;
        }
        v.rows += any_in_row;
    }
    return v;
}

const Machine& h200() { return find_machine("H200"); }

}  // namespace

TEST_CASE("block-sparse flash2: K/V bytes and FLOPs count the kept tiles, by hand") {
    // N = 256, d = 16, fp16, 64 x 64 tiles: T_r = T_c = 4. Density 1/2 keeps round(0.5 x 4) = 2 key blocks
    // of every query block: 4 x 2 = 8 tiles of 16 kept. Each kept tile reads K_j and V_j once,
    // 2 x 64 x 16 x 2 = 4,096 bytes: 32,768 bytes; every query block keeps a tile, so Q is read once,
    // 256 x 16 x 2 = 8,192 bytes. Each kept tile does S = Q K^T and P V: 2 x (2 x 64 x 64 x 16) = 262,144
    // matmul FLOPs, 8 tiles 2,097,152.
    const Problem p = sparse(256, 16, 0.5);
    const Result r = simulate(p, h200(), counting(Algo::flash2, 64, 64));
    CHECK(r.problem.mask_block_rows == 64);  // the mask takes the tiles
    CHECK(r.problem.mask_block_cols == 64);
    CHECK(mask_kept_blocks(r.problem) == 2);
    CHECK(r.totals[Tensor::K].read_bytes + r.totals[Tensor::V].read_bytes == 32768);
    CHECK(r.totals[Tensor::Q].read_bytes == 8192);
    CHECK(r.totals.flops.matmul == 2097152);
    // the walk skips exactly the tiles in which no query sees a key (found element by element)
    const Visible v = visible_tiles(r.problem, 64, 64);
    CHECK(v.tiles == 8);
    CHECK(v.kv_bytes == 32768);
}

TEST_CASE("block-sparse: K/V bytes equal the visible tiles' for ragged shapes, densities and both orders") {
    struct Case {
        int64_t n, d, br, bc;
        double density;
        bool causal;
    };
    const Case cases[] = {{200, 16, 64, 32, 0.25, false},
                          {333, 8, 32, 32, 0.4, false},
                          {256, 16, 32, 64, 0.5, true},
                          {100, 4, 16, 16, 0.1, false},
                          {96, 8, 32, 16, 0.75, true}};
    for (const auto& k : cases) {
        CAPTURE(k.n);
        CAPTURE(k.density);
        CAPTURE(k.causal);
        Problem p = sparse(k.n, k.d, k.density, k.causal);
        p.seed = 3 + static_cast<uint64_t>(k.n);
        const Result f2 = simulate(p, h200(), counting(Algo::flash2, k.br, k.bc));
        const Visible v = visible_tiles(f2.problem, k.br, k.bc);
        // flash2 (query blocks outer) reads K_j and V_j for every visible tile, Q_i once a visible row
        CHECK(f2.totals[Tensor::K].read_bytes + f2.totals[Tensor::V].read_bytes == v.kv_bytes);
        CHECK(f2.totals[Tensor::Q].read_bytes <= v.rows * k.br * k.d * 2);
        // flash1 (key blocks outer, Algorithm 1) reads Q_i for every visible tile
        const Result f1 = simulate(p, h200(), counting(Algo::flash1, k.br, k.bc));
        int64_t q_bytes = 0;
        for (int64_t r0 = 0; r0 < k.n; r0 += k.br)
            for (int64_t c0 = 0; c0 < k.n; c0 += k.bc) {
                bool any = false;
                for (int64_t q = r0; q < std::min(k.n, r0 + k.br); ++q)
                    for (int64_t kk = c0; kk < std::min(k.n, c0 + k.bc); ++kk)
                        any = any || key_visible(f1.problem, q, kk);
                if (any) q_bytes += (std::min(k.n, r0 + k.br) - r0) * k.d * 2;
            }
        CHECK(f1.totals[Tensor::Q].read_bytes == q_bytes);
    }
}

TEST_CASE("block-sparse at density 1 is the dense walk, byte for byte") {
    for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
        CAPTURE(algo_name(a));
        for (bool causal : {false, true}) {
            Problem dense = shape(300, 32, causal);
            Problem full = dense;
            full.block_density = 1.0;
            full.mask_block_rows = 64;  // a mask with blocks of its own, all kept
            full.mask_block_cols = 16;
            // Through the block-sparse path with every block kept: T_c = ceil(300 / 32) = 10 key blocks,
            // round(0.99 x 10) = 10 kept, yet the walk goes the masked way (no block shortcuts).
            Problem all_kept = dense;
            all_kept.block_density = 0.99;
            const Result rd = simulate(dense, h200(), counting(a, 64, 32, Pass::both));
            for (const Problem& q : {full, all_kept}) {
                const Result rf = simulate(q, h200(), counting(a, 64, 32, Pass::both));
                for (size_t t = 0; t < static_cast<size_t>(kTensorCount); ++t) {
                    CHECK(rf.totals.hbm[t].read_bytes == rd.totals.hbm[t].read_bytes);
                    CHECK(rf.totals.hbm[t].write_bytes == rd.totals.hbm[t].write_bytes);
                }
                CHECK(rf.totals.flops.total() == rd.totals.flops.total());
                CHECK(rf.totals.steps == rd.totals.steps);
            }
        }
    }
}

TEST_CASE("block-sparse output: the softmax over the kept blocks, as the masked float64 reference") {
    struct Case {
        int64_t n, d, br, bc;
        double density;
        bool causal;
    };
    const Case cases[] = {{256, 16, 64, 64, 0.5, false}, {200, 33, 32, 24, 0.3, false}, {130, 8, 16, 16, 0.6, true}};
    for (const auto& k : cases) {
        CAPTURE(k.n);
        Problem p = with_heads(sparse(k.n, k.d, k.density, k.causal), 2, 1);
        p.dtype = DType::fp32;
        const Inputs in = generate_inputs(p);
        for (Algo a : {Algo::flash1, Algo::flash2, Algo::standard}) {
            CAPTURE(algo_name(a));
            const Result r = simulate(p, h200(), numeric(a, k.br, k.bc));
            REQUIRE(r.output);
            const TensorD ref = attention_reference(r.problem, in.Q, in.K, in.V);
            const ErrorStats st = validate(*r.output, ref, DType::fp32);
            CHECK(st.nonfinite == 0);
            CHECK(st.max_abs < 2e-6);  // as the dense paths: |O| <= 1, a few float32 roundings of ~6e-8 each
            // the mask is really applied: the dense answer is far from it
            Problem unmasked = p;
            unmasked.block_density = 1.0;
            const TensorD dense = attention_reference(unmasked, in.Q, in.K, in.V);
            CHECK(validate(*r.output, dense, DType::fp32).max_abs > 1e-3);
        }
    }
}

TEST_CASE("block-sparse gradients: flash2's backward matches the masked float64 reference") {
    Problem p = sparse(192, 16, 0.5);
    p.dtype = DType::fp32;
    Inputs in = generate_inputs(p);
    in.dO = generate_input(p, InputTensor::dO);
    for (Algo a : {Algo::flash1, Algo::flash2}) {
        CAPTURE(algo_name(a));
        const Result r = simulate(p, h200(), numeric(a, 64, 64, Pass::both));
        REQUIRE(r.dQ);
        const Gradients g = attention_backward_reference(r.problem, in.Q, in.K, in.V, in.dO);
        // the gradients sum up to N products of values of order 1: float32 rounding ~6e-8 each
        CHECK(validate(*r.dQ, g.dQ, DType::fp32).max_abs < 1e-5);
        CHECK(validate(*r.dK, g.dK, DType::fp32).max_abs < 1e-5);
        CHECK(validate(*r.dV, g.dV, DType::fp32).max_abs < 1e-5);
    }
}

TEST_CASE("an all-masked row (density 0, or a query block whose kept blocks are all in its future) outputs 0") {
    // Density 0 keeps no block: no K or V byte moves, no product is computed, every output row is 0
    // (the reference's convention for a row that sees no key), and nothing is NaN.
    Problem p = sparse(128, 16, 0.0);
    p.dtype = DType::fp32;
    for (Algo a : {Algo::flash1, Algo::flash2}) {
        CAPTURE(algo_name(a));
        const Result r = simulate(p, h200(), numeric(a, 32, 32));
        CHECK(r.totals[Tensor::K].read_bytes == 0);
        CHECK(r.totals[Tensor::V].read_bytes == 0);
        CHECK(r.totals.flops.matmul == 0);
        REQUIRE(r.output);
        int64_t nonzero = 0;
        for (float x : r.output->data) nonzero += !(x == 0.0f);  // a NaN counts as nonzero
        CHECK(nonzero == 0);
    }
    // Causal and sparse: query block 0 sees key block 0 only; with a seed whose mask drops that block,
    // the first B_r rows see no key at all and come out 0, while later rows do not.
    Problem c = sparse(256, 16, 0.5, true);
    c.dtype = DType::fp32;
    c.mask_block_rows = c.mask_block_cols = 64;
    for (c.seed = 1; block_kept(c, 0, 0); ++c.seed) REQUIRE(c.seed < 1000);
    const Inputs in = generate_inputs(c);
    const TensorD ref = attention_reference(c, in.Q, in.K, in.V);
    for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
        CAPTURE(algo_name(a));
        const Result r = simulate(c, h200(), numeric(a, 64, 64));
        REQUIRE(r.output);
        const ErrorStats st = validate(*r.output, ref, DType::fp32);
        CHECK(st.nonfinite == 0);
        CHECK(st.max_abs < 2e-6);
        double first_rows = 0, rest = 0;
        for (int64_t i = 0; i < 256 * 16; ++i) (i < 64 * 16 ? first_rows : rest) += std::abs(r.output->data[i]);
        CHECK(first_rows == 0.0);
        CHECK(rest > 0.0);
    }
}

TEST_CASE("block-sparse: predicted time follows the kept fraction") {
    // 64 x 64 tiles, T_c = 8192 / 64 = 128 key blocks. Every query block keeps the same number k of
    // them, so every block of the grid takes the same time: k tile steps plus c, its time outside the
    // tile loop, the same dense or sparse. So time(k) / time(T_c) = (k t + c) / (T_c t + c) >= k / T_c.
    // And c is at most two steps: Q_i in and O_i out move B_r d + B_r d bytes, one step's K_j, V_j
    // (B_r = B_c), and the pipeline's fill and drain (the first copy, the last arithmetic, not
    // overlapped) cost at most one step more. So the ratio is at most (k + 2) / T_c.
    Problem p = with_heads(sparse(8192, 128, 1.0), 1, 16);
    Config c = counting(Algo::flash2, 64, 64);
    const Result dense = simulate(p, h200(), c);
    REQUIRE(dense.timing.computed);
    for (double s : {0.5, 0.25, 0.125}) {
        CAPTURE(s);
        p.block_density = s;
        const Result r = simulate(p, h200(), c);
        const double t_c = static_cast<double>(r.T_c), k = static_cast<double>(mask_kept_blocks(r.problem));
        CHECK(t_c == 128);
        CHECK(k == s * t_c);  // s T_c is a whole number: the kept fraction is exactly s
        const double ratio = r.timing.predicted_ms / dense.timing.predicted_ms;
        CHECK(ratio >= k / t_c);
        CHECK(ratio <= (k + 2) / t_c);
        const double kv = static_cast<double>(r.totals[Tensor::K].read_bytes + r.totals[Tensor::V].read_bytes);
        CHECK(kv == s * static_cast<double>(dense.totals[Tensor::K].read_bytes + dense.totals[Tensor::V].read_bytes));
    }
}

TEST_CASE("block-sparse: bad densities and a reference without the mask's blocks are refused") {
    Problem p = sparse(128, 16, -0.5);
    CHECK_THROWS_WITH_AS(p.validate(), doctest::Contains("from 0 to 1"), Error);
    p.block_density = 1.5;
    CHECK_THROWS_AS(p.validate(), Error);
    p.block_density = std::nan("");
    CHECK_THROWS_AS(p.validate(), Error);
    p.block_density = 0.5;  // valid, but its blocks are not known until simulate() picks the tiles
    const Inputs in = generate_inputs(p);
    CHECK_THROWS_WITH_AS(attention_reference(p, in.Q, in.K, in.V), doctest::Contains("Result's problem"), Error);
}
