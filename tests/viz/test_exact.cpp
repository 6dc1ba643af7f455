// The exactness view's numbers (viz/exact_view.hpp): the outputs it compares, the ulp distances it
// draws, its limit and its job, checked without GL against float32 facts derived here.
#include <doctest/doctest.h>

#include <bit>
#include <cstdint>
#include <cstdlib>
#include <string>

#include "sim/dtype.hpp"
#include "sim/machine.hpp"
#include "viz/exact_view.hpp"
#include "viz/lessons_view.hpp"

using namespace viz;

namespace {
// lessons/11-exact.toml's flash32: N = 256, d = 64, float32 storage, 32 x 32 tiles
Params lesson_params(sim::DType t = sim::DType::fp32) {
    Params p;
    p.seq = 256;
    p.head_dim = 64;
    p.dtype = t;
    p.block_rows = 32;
    p.block_cols = 32;
    return p;
}

// The distance between two float32 values in float32 ulps, from their bit patterns: the patterns
// mapped to a line on which adjacent floats are adjacent integers (negatives mirrored below zero).
int64_t ulps32(float a, float b) {
    auto line = [](float x) {
        const auto u = std::bit_cast<uint32_t>(x);
        return (u & 0x80000000u) ? -static_cast<int64_t>(u & 0x7fffffffu) : static_cast<int64_t>(u);
    };
    return std::llabs(line(a) - line(b));
}

const sim::TensorF& out(const ExactTensor& x, sim::Algo a) { return x.output[static_cast<size_t>(algo_index(a))]; }
const sim::TensorF& out(const Exactness& x, sim::Algo a) { return out(x.output(), a); }
}  // namespace

TEST_CASE("ulp bins: 0, 1, 2-3, 4-7, ... as the histogram labels them") {
    CHECK(ulp_bin(0) == 0);
    CHECK(ulp_bin(1) == 1);
    CHECK(ulp_bin(2) == 2);
    CHECK(ulp_bin(3) == 2);
    CHECK(ulp_bin(4) == 3);
    CHECK(ulp_bin(7) == 3);
    CHECK(ulp_bin(8) == 4);
    CHECK(ulp_bin(1023) == 10);
    CHECK(ulp_bin(1024) == 11);
}

TEST_CASE("exactness in float32: every pair within float32 rounding, the ulps as the bit patterns count them") {
    const Exactness ex = compute_exactness(lesson_params());
    REQUIRE(ex.tensors.size() == 1);  // forward: O only
    const ExactTensor& x = ex.output();
    CHECK(x.name == "O");
    const int64_t n = 256 * 64;
    REQUIRE(x.pairs.size() == 5);
    for (const ExactPair& e : x.pairs) {
        CAPTURE(e.actual);
        CAPTURE(e.expected);
        CHECK(e.stats.count == n);
        CHECK(e.stats.nonfinite == 0);
        // |O| < 1 and a softmax-weighted sum of 256 terms: a few dozen float32 roundings (6e-8) at most
        CHECK(e.stats.max_abs < 1e-5);
        CHECK(e.stats.rel_frobenius < 1e-5);
    }
    // each algorithm is off the float64 reference somewhere (float32 cannot hold it exactly)
    for (size_t k = 0; k < 3; ++k) CHECK(x.pairs[k].stats.max_abs > 0);
    // flash2 against standard, element by element, recounted from the bits
    const sim::TensorF& f2 = out(x, sim::Algo::flash2);
    const sim::TensorF& sd = out(x, sim::Algo::standard);
    REQUIRE(static_cast<int64_t>(x.ulps.size()) == n);
    int64_t same_bits = 0, most = 0, binned = 0;
    for (size_t i = 0; i < x.ulps.size(); ++i) {
        const int64_t u = ulps32(f2.data[i], sd.data[i]);
        CHECK(x.ulps[i] == u);
        same_bits += std::bit_cast<uint32_t>(f2.data[i]) == std::bit_cast<uint32_t>(sd.data[i]);
        most = std::max(most, u);
    }
    for (int64_t c : x.ulp_bins) binned += c;
    CHECK(binned == n);
    REQUIRE(!x.ulp_bins.empty());
    CHECK(x.ulp_bins[0] == same_bits);
    CHECK(same_bits > 0);
    CHECK(same_bits < n);  // the orders of addition differ: not every element agrees
    CHECK(x.pairs[3].actual == "flash2");
    CHECK(x.pairs[3].expected == "standard");
    CHECK(x.pairs[3].stats.max_ulp == most);
    CHECK(x.pairs[3].stats.identical == same_bits);
    CHECK(!ex.approximation);  // no window, no approximation row
}

TEST_CASE("exactness: standard runs on its own tiles, flash1 hands back O in the storage type") {
    const Params p = lesson_params(sim::DType::fp16);
    const Exactness ex = compute_exactness(p);
    const ExactTensor& x = ex.output();
    // standard's output is the one its block rule gives, not one with the flash tiles (B_r, B_c = 32)
    sim::Config rule;
    rule.algo = sim::Algo::standard;
    rule.numerics = sim::Numerics::on;
    rule.l2 = sim::L2Mode::off;
    const sim::Result own = sim::simulate(problem_of(p), sim::find_machine(p.gpu), rule);
    REQUIRE(own.output);
    CHECK(own.output->data == out(x, sim::Algo::standard).data);
    // every output is an fp16 value, flash1's included (rounded once after its float32 steps)
    for (sim::Algo a : kAlgos) {
        int64_t off_grid = 0;
        for (float v : out(x, a).data) off_grid += sim::round_to(sim::DType::fp16, v) != v;
        CAPTURE(sim::algo_name(a));
        CHECK(off_grid == 0);
    }
    // fp16 storage: the flash outputs are the float32 results rounded once (at most 1 ulp from the
    // rounded reference); standard also rounds S and P, so it strays further
    CHECK(x.pairs[0].stats.max_ulp <= 1);
    CHECK(x.pairs[1].stats.max_ulp <= 1);
    CHECK(x.pairs[2].stats.max_ulp > 1);
    CHECK(x.pairs[0].stats.max_abs < 2.5e-4);  // half an fp16 ulp of |O| < 1
}

TEST_CASE("exactness with a sliding window: the approximation's error dwarfs rounding") {
    Params p = lesson_params();
    p.causal = true;
    p.window = 64;
    const Exactness x = compute_exactness(p);
    REQUIRE(x.approximation);
    CHECK(x.approximation->count == 256 * 64);
    // late rows lose 3/4 of their keys: outputs (averages of values in [-1, 1)) move by O(0.1)
    CHECK(x.approximation->max_abs > 0.01);
    CHECK(x.approximation->max_abs > 1000 * x.output().pairs[0].stats.max_abs);
    // rows 0..63 see every key they would see anyway: there the window changes nothing but rounding
    const Exactness full = [&] {
        Params c = p;
        c.window = 0;
        return compute_exactness(c);
    }();
    double early = 0;
    for (int64_t i = 0; i < 64 * 64; ++i)
        early =
            std::max(early, static_cast<double>(std::abs(out(x, sim::Algo::flash2).data[static_cast<size_t>(i)] -
                                                         out(full, sim::Algo::flash2).data[static_cast<size_t>(i)])));
    CHECK(early < 1e-5);
}

TEST_CASE("exactness with a backward pass: the gradients against the float64 backward, within float32 rounding") {
    Params p = lesson_params();
    p.pass = sim::Pass::backward;
    const Exactness ex = compute_exactness(p);
    REQUIRE(ex.tensors.size() == 4);
    CHECK(ex.tensors[1].name == "dQ");
    CHECK(ex.tensors[2].name == "dK");
    CHECK(ex.tensors[3].name == "dV");
    for (const ExactTensor& t : ex.tensors) {
        CAPTURE(t.name);
        REQUIRE(t.pairs.size() == 5);
        for (const ExactPair& e : t.pairs) {
            CAPTURE(e.actual);
            CAPTURE(e.expected);
            CHECK(e.stats.count == 256 * 64);
            CHECK(e.stats.nonfinite == 0);
            // the gradients are sums over 256 rows or keys of products of O(1) terms: float32
            // rounding leaves them within 1e-5 of each other relative to their size
            CHECK(e.stats.rel_frobenius < 1e-5);
        }
        for (size_t k = 0; k < 3; ++k) CHECK(t.pairs[k].stats.max_abs > 0);  // not the float64 numbers
        int64_t binned = 0;
        for (int64_t c : t.ulp_bins) binned += c;
        CHECK(binned == 256 * 64);
    }
    // the forward's O is the same whether or not a backward follows
    const Exactness fwd = compute_exactness(lesson_params());
    CHECK(out(fwd, sim::Algo::flash2).data == out(ex, sim::Algo::flash2).data);
    // a gradient is not the output: dV = P^T dO differs from O
    CHECK(out(ex.tensors[3], sim::Algo::flash2).data != out(ex, sim::Algo::flash2).data);
}

TEST_CASE("exactness refuses a problem too large to compute, and says what to change") {
    ::unsetenv("FLASHSIM_EXACT_LIMIT");
    CHECK(exact_work_limit() == int64_t{1} << 33);
    Params p = lesson_params();
    p.head_dim = 128;
    p.block_rows = p.block_cols = 0;
    p.seq = 8192;  // the app's default problem: 8192^2 x 128 = 2^33, computed
    CHECK(validate_exact(p).empty());
    p.seq = 8200;
    std::string e = validate_exact(p);
    CHECK(e.find("N = 8,200") != std::string::npos);
    CHECK(e.find("N = 8,192 at d = 128, 11,585 at d = 64") != std::string::npos);  // sqrt(2^33 / 64) = 11,585.2
    CHECK(e.find("smaller N") != std::string::npos);
    // a smaller limit from the environment, named in the refusal
    ::setenv("FLASHSIM_EXACT_LIMIT", "268435456", 1);
    p.seq = 1448;  // 1448^2 x 128 = 268,374,016 <= 2^28
    CHECK(validate_exact(p).empty());
    p.seq = 1456;
    e = validate_exact(p);
    CHECK(e.find("N = 1,448 at d = 128, 2,048 at d = 64, set by FLASHSIM_EXACT_LIMIT") != std::string::npos);
    // anything but a whole number >= 1: refused with what to set
    for (const char* bad : {"0", "-5", "2^28", "1e9", "12abc", "99999999999999999999999"}) {
        ::setenv("FLASHSIM_EXACT_LIMIT", bad, 1);
        e = validate_exact(p);
        CHECK_MESSAGE(e.find("is not a whole number of at least 1") != std::string::npos, bad);
        CHECK_THROWS_AS(compute_exactness(p), sim::Error);
    }
    ::unsetenv("FLASHSIM_EXACT_LIMIT");
    p.seq = 0;  // the app's own refusal comes first
    CHECK(!validate_exact(p).empty());
    CHECK_THROWS_AS(compute_exactness(p), sim::Error);
}

TEST_CASE("the exactness job: computes in the background, keeps the last good result on a refusal") {
    ExactJob job;
    job.request(lesson_params());
    job.wait();
    REQUIRE(job.current());
    CHECK(job.refusal().empty());
    CHECK(job.current()->problem.seq == 256);
    Params big = lesson_params();
    big.seq = 16384;
    big.head_dim = 64;  // 2^34, twice the limit
    job.request(big);
    job.wait();
    CHECK(!job.refusal().empty());
    REQUIRE(job.current());
    CHECK(job.current()->problem.seq == 256);  // still the last one computed
    // the shown algorithm and pass do not change the outputs: no new run
    Params other = lesson_params();
    other.algo = sim::Algo::standard;
    job.request(other);
    CHECK(job.refusal().empty());
    job.wait();
    CHECK(job.current()->problem.seq == 256);
}

TEST_CASE("lesson 11's measured steps open the exactness view on their configs") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    ::unsetenv("FLASHSIM_LESSONS");
    const int k = lib.find("exact");
    REQUIRE(k >= 0);
    int exact = 0;
    for (const LessonStep& s : lib.lessons[static_cast<size_t>(k)].steps)
        if (s.panel && *s.panel == Panel::exact) {
            ++exact;
            REQUIRE(s.params);
            CHECK(s.params->seq == 256);
            CHECK(s.params->block_rows == 32);
            CHECK(validate_exact(*s.params).empty());
        }
    CHECK(exact == 3);
}
