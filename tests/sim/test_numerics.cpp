// Every algorithm computes its output the way it tiles it; all agree with the float64 reference
// within the rounding their storage type implies.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/reference.hpp"
#include "sim/simulate.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

namespace {
// The forward with numerics on the H200 preset, recording the online softmax of `record_row`.
Result run(const Problem& p, Algo a, int64_t br, int64_t bc, int64_t record_row = 0) {
    Config c = numeric(a, br, bc);
    c.record_row = record_row;
    return simulate(p, find_machine("H200"), c);
}
struct Case {
    int64_t n, d, br, bc;
    bool causal;
};
const Case kCases[] = {{1, 8, 4, 4, false},    {7, 5, 4, 3, false},     {33, 17, 8, 16, false},
                       {64, 64, 16, 16, true}, {100, 33, 32, 24, true}, {130, 64, 64, 32, false},
                       {3, 64, 16, 16, true},  {257, 16, 64, 64, true}};
}  // namespace

TEST_CASE("fp32 storage: all three algorithms match the float64 reference to float32 rounding") {
    for (const auto& k : kCases) {
        CAPTURE(k.n);
        CAPTURE(k.d);
        CAPTURE(k.causal);
        Problem p = with_heads(shape(k.n, k.d, k.causal), 2, 1);
        p.dtype = DType::fp32;
        p.seed = 7 + static_cast<uint64_t>(k.n);
        const Inputs in = generate_inputs(p);
        const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
        for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
            const Result r = run(p, a, k.br, k.bc);
            REQUIRE(r.output);
            const ErrorStats st = validate(*r.output, ref, DType::fp32);
            CAPTURE(algo_name(a));
            CHECK(st.nonfinite == 0);
            CHECK(st.max_abs < 2e-6);  // |O| <= 1; a few float32 roundings of ~6e-8 each
            CHECK(st.rel_frobenius < 1e-6);
        }
    }
}

TEST_CASE("fp16 storage: flash rounds only its output; standard also rounds S and P") {
    Problem p = shape(200, 64);
    p.dtype = DType::fp16;
    const Inputs in = generate_inputs(p);
    const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
    const ErrorStats f2 = validate(*run(p, Algo::flash2, 64, 32).output, ref, DType::fp16);
    const ErrorStats f1 = validate(*run(p, Algo::flash1, 64, 32).output, ref, DType::fp16);
    const ErrorStats sd = validate(*run(p, Algo::standard, 64, 32).output, ref, DType::fp16);
    // Output rounding to fp16 is at most half an ulp: 2^-12 relative, |O| < 1 -> < 2.5e-4 absolute.
    CHECK(f2.max_abs < 2.5e-4);
    CHECK(f2.max_ulp <= 1);
    CHECK(f1.max_abs < 1e-5);  // flash1 keeps O in float32 in HBM (Algorithm 1 rewrites it each step)
    // Standard stores S and P in fp16 too: a larger, but still rounding-sized, error.
    CHECK(sd.max_abs < 2e-3);
    CHECK(sd.max_abs >= f2.max_abs);
}

TEST_CASE("flash1 as cuda/flash1.cu launches it hands O back in the storage type its last launch writes") {
    Problem p = shape(200, 64);
    p.dtype = DType::fp16;
    const Inputs in = generate_inputs(p);
    const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
    Config c = numeric(Algo::flash1, 64, 32);
    c.launch_per_kv_block = true;  // init, a launch a K/V block, then O converted fp32 -> fp16
    const Result r = simulate(p, find_machine("H200"), c);
    REQUIRE(r.output);
    int64_t off_grid = 0;  // elements that are not fp16 values
    for (float x : r.output->data) off_grid += round_to(DType::fp16, x) != x;
    CHECK(off_grid == 0);
    const ErrorStats st = validate(*r.output, ref, DType::fp16);
    CHECK(st.max_ulp <= 1);      // the float32 result, rounded once
    CHECK(st.max_abs > 1e-6);    // ... which float32 alone would not reach (the paper's shape: < 1e-5)
    CHECK(st.max_abs < 2.5e-4);  // half an fp16 ulp of |O| < 1
}

TEST_CASE("the recorded online-softmax row is consistent with its own definition") {
    Problem p = shape(96, 8);
    p.dtype = DType::fp32;
    const Result r = run(p, Algo::flash2, 32, 16, 40);
    REQUIRE(r.record);
    const auto& rec = *r.record;
    CHECK(rec.blocks.size() == 6);
    double m = -INFINITY;
    for (const auto& b : rec.blocks) {
        CHECK(b.running_max_before == m);
        m = std::max(m, b.block_max);
        CHECK(b.running_max_after == doctest::Approx(m));
        CHECK(b.rescale == doctest::Approx(std::exp(b.running_max_before - b.running_max_after)));
        double s = 0;
        for (double x : b.scores) s += std::exp(x - b.running_max_after);
        CHECK(b.running_sum_after == doctest::Approx(b.rescale * b.running_sum_before + s).epsilon(1e-5));
        for (size_t k = 0; k < b.acc_before.size(); ++k)
            CHECK(b.acc_rescaled[k] == doctest::Approx(b.acc_before[k] * b.rescale).epsilon(1e-5));
    }
    const Inputs in = generate_inputs(p);
    const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
    for (int64_t k = 0; k < 8; ++k) CHECK(rec.output[k] == doctest::Approx(ref.at(0, 40, k)).epsilon(1e-5));
}

TEST_CASE("a fully masked row gives 0 and no NaN") {
    // Causal with 10 keys of left padding: query n sees keys k with 10 <= k <= n, so queries 0..9 see
    // none. With 8 x 8 tiles, rows 0..7 form a tile row every one of whose tiles is skipped, and rows
    // 8, 9 share a tile with rows that do see keys (the element-wise mask's path). By convention a
    // row that sees no key has output 0 (softmax over an empty set has no weights to sum); a
    // computation of exp(-inf - (-inf)) or 0 / 0 shows as NaN instead.
    Problem p = shape(40, 8, true);
    p.dtype = DType::fp32;
    p.pad_left = 10;
    for (int64_t n = 0; n < p.seq; ++n) {  // the setup leaves exactly queries 0..9 without keys
        int64_t seen = 0;
        for (int64_t k = 0; k < p.seq; ++k) seen += (k >= 10 && k <= n) ? 1 : 0;
        CHECK((seen == 0) == (n < 10));
    }
    const Inputs in = generate_inputs(p);
    const TensorD ref = attention_reference(p, in.Q, in.K, in.V);
    for (Algo a : {Algo::standard, Algo::flash1, Algo::flash2}) {
        CAPTURE(static_cast<int>(a));
        const Result r = run(p, a, 8, 8);
        REQUIRE(r.output);
        const TensorF& out = *r.output;
        for (int64_t n = 0; n < 10; ++n)
            for (int64_t k = 0; k < p.head_dim; ++k) {
                CAPTURE(n);
                CHECK(std::isfinite(out.at(0, n, k)));
                CHECK(out.at(0, n, k) == 0.0f);  // exactly 0: no key contributes anything
            }
        // The rows that do see keys still match the reference to float32 rounding (fp32 storage,
        // at most 30 keys: a few ulps of the largest value, 1e-6 is far above it and far below the
        // values' size of order 1).
        const ErrorStats st = validate(out, ref, DType::fp32);
        CHECK(st.nonfinite == 0);
        CHECK(st.max_abs < 1e-6);
    }
}

TEST_CASE("validate reports NaN, the worst element and ulps") {
    TensorF a(1, 1, 2, 2);
    TensorD e(1, 1, 2, 2);
    a.data = {1.0f, 2.0f, 3.0f, 4.0f};
    e.data = {1.0, 2.0, 3.0, 4.0};
    ErrorStats st = validate(a, e, DType::fp32);
    CHECK(st.max_abs == 0);
    CHECK(st.identical == 4);
    a.data[3] = std::nextafter(4.0f, 5.0f);
    st = validate(a, e, DType::fp32);
    CHECK(st.max_ulp == 1);
    CHECK(st.first_bad == 3);
    CHECK(st.where == "(bh=0, n=1, k=1)");
    a.data[1] = NAN;
    st = validate(a, e, DType::fp32);
    CHECK(st.nonfinite == 1);
    CHECK_FALSE(st.ok(1.0));
}
