// FP8 (OCP E4M3, "e4m3fn"): the storage type's 256 bit patterns, its rounding, and the emulated FP8
// attention forward (sim/fp8_attention.hpp). Expected values come from the format's definition
// built by hand (the list of representable values, hand-picked ties), closed forms (a Hadamard
// matrix's orthogonality) and a float64 reference, never from the code's own output.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <limits>
#include <vector>

#include "sim/dtype.hpp"
#include "sim/footprint.hpp"
#include "sim/fp8_attention.hpp"
#include "sim/kernel_model.hpp"
#include "tests/sim/support.hpp"

using namespace sim;

namespace {
// The non-negative finite E4M3 values in ascending order, from the format's description alone: the
// subnormals m x 2^-9 (m = 0..7), then for each exponent e = -6..8 the eight values (8..15) x 2^(e-3),
// less the last one of e = 8 (15 x 2^5 = 480: that pattern is NaN). 8 + 15 x 8 - 1 = 127 values.
std::vector<double> e4m3_values_by_hand() {
    std::vector<double> v;
    for (int m = 0; m < 8; ++m) v.push_back(m * std::ldexp(1.0, -9));
    for (int e = -6; e <= 8; ++e)
        for (int q = 8; q < 16; ++q) v.push_back(q * std::ldexp(1.0, e - 3));
    v.pop_back();
    return v;
}
}  // namespace

TEST_CASE("fp8 e4m3: every one of the 256 bit patterns decodes to the format's value") {
    const std::vector<double> want = e4m3_values_by_hand();
    REQUIRE(want.size() == 127);
    CHECK(want.back() == 448.0);
    for (int b = 0; b < 127; ++b) {
        CAPTURE(b);
        CHECK(static_cast<double>(e4m3_decode(static_cast<uint8_t>(b))) == want[b]);
        // the sign bit negates (0x80 is -0)
        const float neg = e4m3_decode(static_cast<uint8_t>(b | 0x80));
        CHECK(static_cast<double>(neg) == -want[b]);
        CHECK(std::signbit(neg));
        // each finite pattern encodes back to itself (both signs)
        CHECK(e4m3_encode(static_cast<float>(want[b])) == b);
        CHECK(e4m3_encode(static_cast<float>(-want[b])) == (b | 0x80));
    }
    CHECK(std::isnan(e4m3_decode(0x7f)));
    CHECK(std::isnan(e4m3_decode(0xff)));
    CHECK(dtype_bytes(DType::fp8) == 1);
    CHECK(kE4m3Max == 448.0f);
}

TEST_CASE("fp8 e4m3: round to nearest, ties to even, in the normal and the subnormal range") {
    // between 1 (M = 0) and 1.125 (M = 1): the midpoint 1.0625 goes to the even 1
    CHECK(round_to(DType::fp8, 1.0625f) == 1.0f);
    CHECK(round_to(DType::fp8, 1.0626f) == 1.125f);
    // between 1.125 (M = 1) and 1.25 (M = 2): the midpoint 1.1875 goes to the even 1.25
    CHECK(round_to(DType::fp8, 1.1875f) == 1.25f);
    CHECK(round_to(DType::fp8, 1.1874f) == 1.125f);
    // a carry into the next exponent: 1.9375 is midway between 1.875 (M = 7, odd) and 2 (M = 0)
    CHECK(round_to(DType::fp8, 1.9375f) == 2.0f);
    // subnormals: spacing 2^-9; 2^-10 is midway between 0 and 2^-9: even is 0
    CHECK(round_to(DType::fp8, 0x1p-10f) == 0.0f);
    CHECK(round_to(DType::fp8, 3 * 0x1p-10f) == 0x1p-8f);  // between 1 and 2 x 2^-9: 2 is even
    CHECK(round_to(DType::fp8, 0x1p-9f) == 0x1p-9f);       // the smallest subnormal is exact
    CHECK(round_to(DType::fp8, 0x1p-12f) == 0.0f);         // below half of it: zero
    // the top of the subnormals carries into the smallest normal 2^-6: 7.5 x 2^-9 is midway between
    // 7 x 2^-9 (odd) and 8 x 2^-9 = 2^-6
    CHECK(round_to(DType::fp8, 7.5f * 0x1p-9f) == 0x1p-6f);
}

TEST_CASE("fp8 e4m3: 448 is the largest; beyond it saturates; NaN stays NaN") {
    CHECK(round_to(DType::fp8, 448.0f) == 448.0f);
    CHECK(round_to(DType::fp8, 449.0f) == 448.0f);
    CHECK(round_to(DType::fp8, 1e6f) == 448.0f);
    CHECK(round_to(DType::fp8, -1e6f) == -448.0f);
    CHECK(round_to(DType::fp8, std::numeric_limits<float>::infinity()) == 448.0f);
    CHECK(round_to(DType::fp8, -std::numeric_limits<float>::infinity()) == -448.0f);
    CHECK(std::isnan(round_to(DType::fp8, std::numeric_limits<float>::quiet_NaN())));
    // 416 = 1.625 x 2^8 and 448 neighbour; 432 is their midpoint: even is 448 (M = 6)
    CHECK(round_to(DType::fp8, 432.0f) == 448.0f);
    CHECK(round_to(DType::fp8, 431.0f) == 416.0f);
}

TEST_CASE("fp8 e4m3: relative rounding error at most the unit roundoff 2^-4 in the normal range") {
    // 3 mantissa bits: neighbours 2^-3 apart relative to the exponent's power, so half of that
    for (int k = 0; k < 4000; ++k) {
        const float x = std::ldexp(1.0f + static_cast<float>(k) / 4000.0f, (k % 15) - 6);  // 2^-6 .. 2^8
        if (x > 448.0f) continue;
        CAPTURE(x);
        CHECK(std::fabs(round_to(DType::fp8, x) - x) <= 0x1p-4f * x);
    }
}

TEST_CASE("fp8 e4m3: ulp distance counts representable values between two numbers") {
    CHECK(ulp_distance(DType::fp8, 1.0f, 1.0f) == 0);
    CHECK(ulp_distance(DType::fp8, 1.0f, 1.125f) == 1);
    CHECK(ulp_distance(DType::fp8, 1.0f, 2.0f) == 8);         // the eight values 1, 1.125, ..., 1.875 and then 2
    CHECK(ulp_distance(DType::fp8, -0x1p-9f, 0x1p-9f) == 2);  // through zero
    CHECK(ulp_distance(DType::fp8, 0.0f, 448.0f) == 126);     // the 127 non-negative finite values
    CHECK(ulp_distance(DType::fp8, std::nanf(""), 1.0f) == std::numeric_limits<int64_t>::max());
}

TEST_CASE("fp8: the names the command and files use") {
    CHECK(parse_dtype("fp8") == DType::fp8);
    CHECK(parse_dtype("e4m3") == DType::fp8);
    CHECK(dtype_name(DType::fp8) == "fp8");
    CHECK_FALSE(parse_dtype("e5m2").has_value());  // not supported: refused, not mistaken for e4m3
}

// ---------------------------------------------------------------- the emulated FP8 forward

TEST_CASE("fp8 attention: the Hadamard rotation is orthogonal and leaves Q K^T unchanged") {
    for (const int64_t d : {2, 8, 64, 128}) {
        CAPTURE(d);
        const Eigen::MatrixXd M = hadamard_rotation(d, 7);
        // orthogonal: M M^T = I (float64; entries are +-1/sqrt(d), sums of d of their products)
        CHECK((M * M.transpose() - Eigen::MatrixXd::Identity(d, d)).cwiseAbs().maxCoeff() < 1e-12);
        // a channel alone (a unit vector) is spread over all d channels at 1/sqrt(d)
        for (int64_t c = 0; c < d; ++c)
            CHECK(M.row(c).cwiseAbs().maxCoeff() == doctest::Approx(1.0 / std::sqrt(double(d))).epsilon(1e-15));
    }
    Fp8Options o;
    o.seq = 96;
    o.head_dim = 64;
    o.outliers = 3;
    const Fp8Inputs in = fp8_inputs(o);
    const Eigen::MatrixXd M = hadamard_rotation(64, o.seed);
    const Eigen::MatrixXd S = in.Q * in.K.transpose(), S_rot = (in.Q * M) * (in.K * M).transpose();
    // exact arithmetic: (Q M)(K M)^T = Q M M^T K^T = Q K^T; float64 rounding of sums of 64 products of
    // size up to (10 x 5)^2: well under 1e-12 relative to the largest score
    CHECK((S - S_rot).cwiseAbs().maxCoeff() <= 1e-12 * S.cwiseAbs().maxCoeff());
    // the outlier channels are 10x (the default): K's largest entry comes down once they are spread
    CHECK((in.K * M).cwiseAbs().maxCoeff() < in.K.cwiseAbs().maxCoeff());
}

TEST_CASE("fp8 attention: bad options are refused in the user's words") {
    Fp8Options o;
    o.seq = 0;
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("sequence length N"), Error);
    o.seq = 64;
    o.head_dim = 96;
    o.incoherent = true;
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("power of two"), Error);
    o.incoherent = false;
    CHECK_NOTHROW(o.validate());  // d = 96 is fine without the transform
    o.outliers = 97;
    CHECK_THROWS_WITH_AS(o.validate(), doctest::Contains("--outliers"), Error);
}

namespace {
// The largest |O - O_ref| the FP8 forward may show, from e4m3's unit roundoff u = 2^-4 (first order,
// worst case, each step's bound added):
//   inputs: |dx| <= u (|x| + 2^-6 s) (relative u in the normal range; below 2^-6 s the absolute
//     half-spacing 2^-10 s = u 2^-6 s), so |dS_ij| <= scale ((2u + u^2) + d 2^-24) sum_c a_ic b_jc
//     with a = |q| + 2^-6 s_Q, b = |k| + 2^-6 s_K (the last term: float32 sums of d products);
//   softmax: with |dS| <= E over a row, each p changes by at most a factor e^(+-2E): sum |dp| <= e^(2E) - 1;
//   P: |dP| <= u P + 2^-18 (P x 256 in e4m3; l >= 1 as the row's largest exponential is 1), over l:
//     at most u + N 2^-18;
//   V: |dv| <= u (max|V| + 2^-6 s_V); O: bf16's half ulp 2^-9 relative, |O| <= max|V|.
// Everything times max|V|, and a stated factor 1.25 for the second-order products of these terms.
double fp8_error_bound(const Fp8Inputs& in, const Fp8Options& o) {
    const double u = 0x1p-4, d = double(o.head_dim), n = double(o.seq);
    const double scale = 1.0 / std::sqrt(d);
    const double sq = in.Q.cwiseAbs().maxCoeff() / 448,
                 sk = in.K.cwiseAbs().maxCoeff() / 448;  // per-tensor: the largest
    const Eigen::MatrixXd a = (in.Q.cwiseAbs().array() + 0x1p-6 * sq).matrix();
    const Eigen::MatrixXd b = (in.K.cwiseAbs().array() + 0x1p-6 * sk).matrix();
    const double E = scale * ((2 * u + u * u) + d * 0x1p-24) * (a * b.transpose()).maxCoeff();
    const double vmax = in.V.cwiseAbs().maxCoeff();
    const double rel = (std::exp(2 * E) - 1) + (u + n * 0x1p-18) + u * (1 + 0x1p-6) + 0x1p-9;
    return 1.25 * rel * vmax;
}
}  // namespace

TEST_CASE("fp8 attention: the error stays under the bound from e4m3's unit roundoff, and above bf16's") {
    for (const auto scales : {Fp8Scales::tensor, Fp8Scales::block}) {
        Fp8Options o;
        o.seq = 200;  // not a multiple of the 64-row tiles: a short last tile
        o.head_dim = 64;
        o.block_rows = o.block_cols = 64;
        o.scales = scales;
        const Fp8Inputs in = fp8_inputs(o);
        const Eigen::MatrixXd ref = attention_reference64(in.Q, in.K, in.V);
        const Fp8Error e8 = fp8_error(lowp_forward(in, DType::fp8, o), ref);
        const Fp8Error e16 = fp8_error(lowp_forward(in, DType::bf16, o), ref);
        const double bound = fp8_error_bound(in, o);
        CAPTURE(e8.max_abs);
        CAPTURE(bound);
        CHECK(e8.max_abs <= bound);
        // e4m3 keeps 3 mantissa bits to bf16's 7 (unit roundoffs 2^-4 and 2^-8): its error must be
        // clearly larger; a forward that skipped the e4m3 rounding would come out at bf16's
        CHECK(e8.rms > 2 * e16.rms);
    }
}

TEST_CASE("fp8 attention: per-block scales are never worse than one scale for the tensor") {
    // Constructed so that only Q's scales differ between the two: every 64-row tile of K and V has the
    // same largest magnitude (entries clamped to [-3, 3], one entry of each tile set to 3), and one
    // tile of Q (rows 64..127) is 2^12 times larger. One scale for Q then pushes the other tiles' Q
    // into e4m3's subnormals (|q| / s below 2^-6), while their own scales keep them normal; the large
    // tile has the same scale either way, so its rows come out bit-identical.
    Fp8Options o;
    o.seq = 256;
    o.head_dim = 64;
    o.block_rows = o.block_cols = 64;
    Fp8Inputs in = fp8_inputs(o);
    for (Eigen::MatrixXd* X : {&in.K, &in.V}) {
        *X = X->cwiseMax(-3.0).cwiseMin(3.0);
        for (int64_t r0 = 0; r0 < o.seq; r0 += 64) (*X)(r0, 0) = 3.0;
    }
    in.Q.middleRows(64, 64) *= 4096.0;
    const Eigen::MatrixXd ref = attention_reference64(in.Q, in.K, in.V);
    o.scales = Fp8Scales::tensor;
    const Eigen::MatrixXd Ot = lowp_forward(in, DType::fp8, o);
    o.scales = Fp8Scales::block;
    const Eigen::MatrixXd Ob = lowp_forward(in, DType::fp8, o);
    CHECK(Ot.middleRows(64, 64) == Ob.middleRows(64, 64));
    for (const int64_t r0 : {0, 128, 192}) {
        CAPTURE(r0);
        const Fp8Error et = fp8_error(Ot.middleRows(r0, 64), ref.middleRows(r0, 64));
        const Fp8Error eb = fp8_error(Ob.middleRows(r0, 64), ref.middleRows(r0, 64));
        CHECK(eb.rms < et.rms);
        CHECK(eb.max_abs <= et.max_abs);
    }
}

TEST_CASE("fp8 attention: with outlier channels in Q and K, the transform lowers the error") {
    // e4m3 rounds each value relative to itself, so a score's rounding error grows with
    // sqrt(sum_c (q_c k_c)^2). Four channels 10x in both Q and K (d = 64): that sum is about
    // 4 x 10^4 + 60; spread by the rotation, about |q|^2 |k|^2 / d = (60 + 400)^2 / 64 = 3.3e3, so the
    // scores' error falls by about sqrt(40060 / 3306) = 3.5. Checked with a margin of nearly 2: the
    // output's error at least halves. bf16's path takes no rotation: the same error both times.
    Fp8Options o;
    o.seq = 256;
    o.head_dim = 64;
    o.block_rows = o.block_cols = 64;
    o.outliers = 4;
    o.outlier_scale = 10;
    const Fp8Study plain = fp8_study(o);
    o.incoherent = true;
    const Fp8Study rotated = fp8_study(o);
    CHECK(rotated.amax_k < plain.amax_k);
    CHECK(rotated.fp8.rms < 0.5 * plain.fp8.rms);
    CHECK(rotated.bf16.rms == plain.bf16.rms);
}

// ---------------------------------------------------------------- the walk and the kernel model

TEST_CASE("fp8 walk: Q, K, V at one byte, O at two (bf16), LSE at four; forward flash2 only") {
    Problem p = sim::test::with_heads(sim::test::shape(512, 128), 2, 3);
    p.dtype = DType::fp8;
    const Config c = sim::test::counting(Algo::flash2, 128, 64);
    const Result r = simulate(p, find_machine("H100-SXM"), c);
    const double BH = 6, N = 512, d = 128, Tr = 4;
    // hand counts: Q_i read once, K_j and V_j once for each of the T_r = 512 / 128 query blocks
    CHECK(double(r.totals[Tensor::Q].read_bytes) == BH * N * d * 1);
    CHECK(double(r.totals[Tensor::K].read_bytes) == BH * Tr * N * d * 1);
    CHECK(double(r.totals[Tensor::V].read_bytes) == BH * Tr * N * d * 1);
    CHECK(double(r.totals[Tensor::O].write_bytes) == BH * N * d * 2);
    CHECK(double(r.totals[Tensor::LSE].write_bytes) == BH * N * 4);
    // the memory it holds: Q, K, V at 1 byte an element, O at 2, LSE at 4 (hand count, B H N d elements)
    for (const auto& t : footprint(p, Algo::flash2, Pass::forward).tensors) {
        CAPTURE(t.name);
        const double want = t.name == "O" ? BH * N * d * 2 : t.name == "LSE" ? BH * N * 4 : BH * N * d;
        CHECK(t.bytes == want);
    }
    // the ideal machine (rung 2) multiplies e4m3 at the datasheet's dense FP8 rate, 1,979 TFLOP/s on the H100
    Config timed = c;
    timed.timing = true;
    CHECK(simulate(p, find_machine("H100-SXM"), timed).timing.matmul_flops == doctest::Approx(1978.9e12));
    Config bwd = c;
    bwd.pass = Pass::backward;
    CHECK_THROWS_WITH_AS(simulate(p, find_machine("H100-SXM"), bwd), doctest::Contains("forward only"), Error);
    Config num = c;
    num.numerics = Numerics::on;
    CHECK_THROWS_WITH_AS(simulate(p, find_machine("H100-SXM"), num), doctest::Contains("numerics --dtype fp8"), Error);
}

TEST_CASE("fp8 kernel model: products at twice the rate, the same exponentials, one more instruction a score") {
    for (const char* gpu : {"H100-SXM", "H200"}) {
        CAPTURE(gpu);
        const Machine& m = find_machine(gpu);
        Problem p = sim::test::with_heads(sim::test::shape(8192, 128), 2, 16);
        p.dtype = DType::bf16;
        const KernelRates r = datasheet_rates(m);
        const KernelProfile k = kernel_profile("flash2h", Pass::forward, 128);
        const KernelPrediction b = predict_kernel(p, k, r, m);
        p.dtype = DType::fp8;
        const KernelPrediction f = predict_kernel(p, k, r, m);
        auto comp = [](const KernelPrediction& x, const char* name) {
            for (const auto& c : x.components)
                if (c.name == name) return c.seconds;
            FAIL("no component " << name);
            return 0.0;
        };
        // the datasheet's dense FP8 rate over its dense bf16 rate (1,979 / 989.4 TFLOP/s)
        CHECK(comp(f, "tensor") == doctest::Approx(comp(b, "tensor") * 989.4 / 1978.9).epsilon(1e-12));
        CHECK(comp(f, "exp") == doctest::Approx(comp(b, "exp")).epsilon(1e-12));
        // one conversion an element of P: B H N^2 more fp32-lane instructions at 8 x the ex2 rate
        const double extra = 2.0 * 16 * 8192.0 * 8192.0 / (8 * m.exp_rate);
        CHECK(comp(f, "issue") - comp(b, "issue") == doctest::Approx(extra).epsilon(1e-9));
        CHECK(comp(f, "hbm") < comp(b, "hbm"));
        // faster, but less than 2x: the exponentials and the other fp32 work do not speed up
        CHECK(f.predicted_ms < b.predicted_ms);
        CHECK(b.predicted_ms / f.predicted_ms < 2.0);
    }
}

TEST_CASE("fp8 kernel model: refused where it is not modelled") {
    Problem p = sim::test::shape(1024, 128);
    p.dtype = DType::fp8;
    const Machine& h = find_machine("H100-SXM");
    CHECK_THROWS_WITH_AS(predict_kernel(p, kernel_profile("flash2h", Pass::backward, 128), datasheet_rates(h), h),
                         doctest::Contains("forward only"), Error);
    CHECK_THROWS_WITH_AS(predict_kernel(p, kernel_profile("flash2", Pass::forward, 128), datasheet_rates(h), h),
                         doctest::Contains("--kernel flash2h"), Error);
    const Machine& a = find_machine("A100-80GB");
    CHECK_THROWS_AS(predict_kernel(p, kernel_profile("flash2", Pass::forward, 128), datasheet_rates(a), a), Error);
}
