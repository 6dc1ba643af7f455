// tests/cuda/test_kernels.cpp — GPU tests of the kernels (label gpu). Without a CUDA device the
// binary prints "SKIP: no CUDA device (reason)" and exits 77, which ctest counts as skipped.
//
//   * the device input generator equals sim::generate_inputs bit for bit (fp16, bf16);
//   * every variant's forward output vs the float64 reference (sim::attention_reference) on shapes
//     that are not block multiples, smaller than a block, causal and not; flash2's LSE too;
//     flash2h (Hopper only; said and skipped elsewhere) in both its schedules, over enough K/V
//     blocks that its 2-stage ring wraps around several times;
//   * backward (standard, flash2, flash2h in its atomic and deterministic dQ orders) vs the
//     float64 backward reference (cuda/reference_bwd.hpp); flash2h's deterministic mode gives
//     bit-identical dQ, dK, dV over 10 runs, and fcuda::run leaves none of its outputs poisoned;
//   * fcuda::run leaves no unwritten (NaN-poisoned) output and times something positive; its
//     in-process DRAM counters (CUPTI) see at least the inputs' bytes after an L2 flush.
#define DOCTEST_CONFIG_IMPLEMENT
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <initializer_list>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "cuda/reference_bwd.hpp"
#include "sim/reference.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "tests/cuda/same_bits.hpp"

namespace {

sim::Problem make(int64_t b, int64_t h, int64_t n, int64_t d, sim::DType dt, bool causal, uint64_t seed = 42) {
    sim::Problem p;
    p.batch = b;
    p.heads = h;
    p.seq = n;
    p.head_dim = d;
    p.dtype = dt;
    p.causal = causal;
    p.seed = seed;
    return p;
}

// Relative Frobenius error allowed against the float64 reference, from the storage type's unit
// roundoff u (bf16 keeps 8 significant bits: u = 2^-8 = 3.9e-3; fp16 11: u = 2^-11 = 4.9e-4) and the
// number of roundings to that type on the longest path from the inputs (which the reference sees
// rounded the same way) to an output:
//   forward, 3: S (standard stores it in the dtype; the flash kernels keep it in fp32), P before
//     O = P V, and O when stored;
//   backward, 4: P and dP (standard stores both; the flash kernels round P for dV = P^T dO), dS before
//     dQ = dS K and dK = dS^T Q, and the gradient when stored (O's rounding enters through
//     D = rowsum(dO o O) and is the same size as P's).
// Each rounding changes each term of a sum by at most u relatively; the generated inputs are
// independent and of zero mean, so the sums do not cancel beyond their terms' size, and k roundings
// stay within k u (their rms is about u / sqrt(3) each: the bound has room for the worst rows). The
// fp32 sums over fewer than 4096 keys (the longest case here: 2,056) add at most 4096 x 2^-24 = 2.4e-4.
double unit_roundoff(sim::DType dt) { return std::ldexp(1.0, dt == sim::DType::bf16 ? -8 : -11); }
constexpr double kFp32Sums = 4096 * 0x1p-24;
double tolerance(sim::DType dt) { return 3 * unit_roundoff(dt) + kFp32Sums; }           // forward
double backward_tolerance(sim::DType dt) { return 4 * unit_roundoff(dt) + kFp32Sums; }  // dQ, dK, dV

std::string describe(const sim::Problem& p) {
    char buf[160];
    std::snprintf(buf, sizeof buf, "B=%lld H=%lld N=%lld d=%lld %s %s", (long long)p.batch, (long long)p.heads,
                  (long long)p.seq, (long long)p.head_dim, std::string(sim::dtype_name(p.dtype)).c_str(),
                  p.causal ? "causal" : "full");
    return buf;
}

const sim::DType kTypes[] = {sim::DType::bf16, sim::DType::fp16};

// The variants this GPU runs (flash2h needs compute capability 9.0); each one left out is recorded
// as a part of the running case not run here, with the reason (gpu_cases.hpp).
std::vector<std::string> runnable(std::initializer_list<const char*> names) {
    std::vector<std::string> out;
    for (const char* v : names) {
        std::string why;
        if (fcuda::variant_available(v, &why))
            out.push_back(v);
        else
            gpu_cases::not_run(v, why);
    }
    return out;
}

// Can this card run `variant`? If not, the running case is recorded as skipped, with the reason.
bool runs_here(const char* variant) {
    std::string why;
    if (fcuda::variant_available(variant, &why)) return true;
    gpu_cases::skip(std::string(variant) + " does not run on this card: " + why);
    return false;
}

void check_lse(const fcuda::Outputs& out, const sim::Problem& p, const sim::Inputs& in) {
    const std::vector<double> lse = sim::lse_reference(p, in.Q, in.K);
    REQUIRE(out.LSE.size() == lse.size());
    double worst = 0;
    for (size_t k = 0; k < lse.size(); ++k)
        worst = std::max(worst, std::abs(double(out.LSE[k]) - lse[k]) / std::max(1.0, std::abs(lse[k])));
    CHECK(worst <= 1e-4);
}

// flash2h refuses the environment it was given: the call throws, and the message names the problem.
void check_refused(const sim::Problem& p, fcuda::Pass pass, const char* message) {
    CHECK_THROWS_WITH_AS(fcuda::compute(p, "flash2h", pass), doctest::Contains(message), std::runtime_error);
}

// One forward run of `variant` against the float64 reference: no NaN, relative error within the
// dtype's tolerance, and the log-sum-exp too for the variants that store it.
void check_forward(const sim::Problem& p, const std::string& variant) {
    INFO(describe(p));
    const fcuda::Outputs out = fcuda::compute(p, variant, fcuda::Pass::forward);
    const sim::Inputs in = sim::generate_inputs(p);
    const sim::ErrorStats e = sim::validate(out.O, sim::attention_reference(p, in.Q, in.K, in.V), p.dtype);
    INFO("max_abs " << e.max_abs << " rel " << e.rel_frobenius << " at " << e.where);
    CHECK(e.nonfinite == 0);
    CHECK(e.rel_frobenius <= tolerance(p.dtype));
    if (variant == "flash2" || variant == "flash2h") check_lse(out, p, in);
}

// The float64 backward reference of a problem's generated inputs (computed once, checked against
// as many runs as needed: it costs far more than a kernel run).
fcuda::GradsD backward_reference(const sim::Problem& p) {
    const sim::Inputs in = sim::generate_inputs(p);
    const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
    return fcuda::attention_backward_reference(p, in.Q, in.K, in.V, dO);
}

// One backward run of `variant` (its own forward gives O and LSE) against the float64 backward
// reference g: dQ, dK, dV without NaN and within the backward tolerance.
void check_backward(const sim::Problem& p, const std::string& variant, const fcuda::GradsD& g) {
    INFO(describe(p));
    const fcuda::Outputs out = fcuda::compute(p, variant, fcuda::Pass::backward);
    struct Pair {
        const sim::TensorF* got;
        const sim::TensorD* want;
        const char* name;
    };
    for (Pair x : {Pair{&out.dQ, &g.dQ, "dQ"}, Pair{&out.dK, &g.dK, "dK"}, Pair{&out.dV, &g.dV, "dV"}}) {
        const sim::ErrorStats e = sim::validate(*x.got, *x.want, p.dtype);
        INFO(x.name << " max_abs " << e.max_abs << " rel " << e.rel_frobenius << " at " << e.where);
        CHECK(e.nonfinite == 0);
        CHECK(e.rel_frobenius <= backward_tolerance(p.dtype));
    }
}
void check_backward(const sim::Problem& p, const std::string& variant) {
    check_backward(p, variant, backward_reference(p));
}

}  // namespace

TEST_CASE("device generator is bit-identical to sim::generate_inputs") {
    for (sim::DType dt : kTypes) {
        const sim::Problem p = make(2, 3, 37, 64, dt, false, 1234);
        for (auto which : {sim::InputTensor::Q, sim::InputTensor::K, sim::InputTensor::V, sim::InputTensor::dO}) {
            const sim::TensorF host = sim::generate_input(p, which);
            const sim::TensorF dev = fcuda::device_input(p, which);
            REQUIRE(host.size() == dev.size());
            CHECK(std::memcmp(host.data.data(), dev.data.data(), host.data.size() * sizeof(float)) == 0);
        }
    }
}

TEST_CASE("forward: every variant vs the float64 reference") {
    const int64_t seqs[] = {1, 77, 128, 300};
    for (const std::string& variant : runnable({"standard", "flash1", "flash2", "flash2h"}))
        for (sim::DType dt : kTypes)
            for (int64_t d : {64, 128})
                for (int64_t n : seqs)
                    for (bool causal : {false, true}) {
                        CAPTURE(variant);
                        check_forward(make(1, 2, n, d, dt, causal, 42 + n), variant);
                    }
}

// standard's softmax kernels (cuda/standard.cu): rows of N % 8 == 0 take the one-pass kernels, a
// group of 8-512 threads a row (forward 8 vectors of 8 a thread, backward 4 of P and 4 of dP); other
// N, or FLASHSIM_STANDARD_SOFTMAX=rows, the two-pass ones. Row lengths where a group is part of a warp
// (N = 520: 16 threads), two warps (2056 forward, 1032 backward: the last vectors of a thread
// partly past the row's end), and, against the two-pass kernels only (the float64 reference costs
// too much there), eight (8200) warps forward and four (4104) backward.
double rel_diff(const std::vector<float>& a, const std::vector<float>& b) {
    REQUIRE(a.size() == b.size());
    double num = 0, den = 0;
    for (size_t k = 0; k < a.size(); ++k) {
        num += (double(a[k]) - b[k]) * (double(a[k]) - b[k]);
        den += double(b[k]) * b[k];
    }
    return std::sqrt(num / std::max(den, 1e-300));
}

TEST_CASE("standard: the one-pass softmax kernels against the float64 reference and the two-pass kernels") {
    if (runnable({"standard"}).empty()) return;
    unsetenv("FLASHSIM_STANDARD_SOFTMAX");
    for (sim::DType dt : kTypes)
        for (bool causal : {false, true}) {
            for (int64_t n : {520, 2056}) check_forward(make(1, 2, n, 64, dt, causal, 11 + n), "standard");
            for (int64_t n : {520, 1032}) check_backward(make(1, 1, n, 64, dt, causal, 13 + n), "standard");
            for (int64_t n : {8200, 4104}) {
                const sim::Problem p = make(1, 2, n, 64, dt, causal, 17 + n);
                const fcuda::Pass pass = n == 8200 ? fcuda::Pass::forward : fcuda::Pass::backward;
                INFO(describe(p) << (n == 8200 ? " forward" : " backward"));
                const fcuda::Outputs one = fcuda::compute(p, "standard", pass);
                setenv("FLASHSIM_STANDARD_SOFTMAX", "rows", 1);
                const fcuda::Outputs two = fcuda::compute(p, "standard", pass);
                unsetenv("FLASHSIM_STANDARD_SOFTMAX");
                // the same products; P (or dS) rounded from an exponential computed two ways
                if (pass == fcuda::Pass::forward) {
                    CHECK(rel_diff(one.O.data, two.O.data) <= tolerance(dt) / 4);
                } else {
                    CHECK(rel_diff(one.dQ.data, two.dQ.data) <= tolerance(dt) / 2);
                    CHECK(rel_diff(one.dK.data, two.dK.data) <= tolerance(dt) / 2);
                    CHECK(rel_diff(one.dV.data, two.dV.data) <= tolerance(dt) / 4);
                }
            }
        }
    setenv("FLASHSIM_STANDARD_SOFTMAX", "bogus", 1);
    CHECK_THROWS_WITH_AS(fcuda::compute(make(1, 1, 64, 64, sim::DType::bf16, false), "standard", fcuda::Pass::forward),
                         doctest::Contains("FLASHSIM_STANDARD_SOFTMAX=bogus"), std::runtime_error);
    unsetenv("FLASHSIM_STANDARD_SOFTMAX");
}

TEST_CASE("flash2h: both schedules, many K/V blocks, against the float64 reference") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (const char* schedule : {"overlapped", "plain"}) {
        setenv("FLASHSIM_FLASH2H", schedule, 1);
        for (sim::DType dt : kTypes)
            for (int64_t d : {64, 128})
                for (int64_t n : {129, 640, 1000})
                    for (bool causal : {false, true}) {
                        CAPTURE(schedule);
                        check_forward(make(2, 3, n, d, dt, causal, 5 + n), "flash2h");
                    }
    }
    unsetenv("FLASHSIM_FLASH2H");
}

// Three consumer warpgroups (B_r = 192, FLASHSIM_FLASH2H_WG=3, d = 64): the same arithmetic on
// every row as two (each row meets the keys in the same 128-key blocks, in the same order), so O
// and LSE must be bit-identical to the two-warpgroup kernel's, in both schedules; sizes around
// 192 (the last query block partial, or the only one) and causal blocks that end mid-block.
TEST_CASE("flash2h: three consumer warpgroups give two's bits at d = 64") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (const char* schedule : {"overlapped", "plain"}) {
        setenv("FLASHSIM_FLASH2H", schedule, 1);
        for (sim::DType dt : kTypes)
            for (int64_t n : {1, 77, 191, 193, 600, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 3, n, 64, dt, causal, 11 + n);
                    CAPTURE(schedule);
                    INFO(describe(p));
                    setenv("FLASHSIM_FLASH2H_WG", "2", 1);
                    const fcuda::Outputs two = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    setenv("FLASHSIM_FLASH2H_WG", "3", 1);
                    check_forward(p, "flash2h");
                    const fcuda::Outputs three = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    REQUIRE(two.O.data.size() == three.O.data.size());
                    CHECK(std::memcmp(two.O.data.data(), three.O.data.data(), two.O.data.size() * sizeof(float)) == 0);
                    REQUIRE(two.LSE.size() == three.LSE.size());
                    CHECK(std::memcmp(two.LSE.data(), three.LSE.data(), two.LSE.size() * sizeof(float)) == 0);
                }
    }
    unsetenv("FLASHSIM_FLASH2H_WG");
    unsetenv("FLASHSIM_FLASH2H");
}

// The forward softmax's exponentials (FLASHSIM_FLASH2H_EXP): ftz (the default, ex2.approx.ftz),
// ieee (exp2f, the kernel's first form) and poly (a quarter of them by a polynomial on the FMA
// units). ftz and ieee differ only where 2^x is subnormal (below 2^-126); these inputs' scores lie
// within a few units of their row's maximum, so O and LSE must keep their bits. poly changes a
// quarter of P by up to 6e-6 relative: checked against the float64 reference like every forward.
TEST_CASE("flash2h: the softmax's exponentials, ftz, ieee and poly") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    // 128-key blocks for both forms (the default's 176 at d = 128 without a mask runs with ftz only):
    // the same blocks in the same order, so that only the exponentials differ
    setenv("FLASHSIM_FLASH2H_BC", "128", 1);
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {77, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 3, n, d, dt, causal, 31 + n);
                    INFO(describe(p));
                    unsetenv("FLASHSIM_FLASH2H_EXP");
                    const fcuda::Outputs ftz = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    setenv("FLASHSIM_FLASH2H_EXP", "ieee", 1);
                    const fcuda::Outputs ieee = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    REQUIRE(ftz.O.data.size() == ieee.O.data.size());
                    CHECK(std::memcmp(ftz.O.data.data(), ieee.O.data.data(), ftz.O.data.size() * sizeof(float)) == 0);
                    REQUIRE(ftz.LSE.size() == ieee.LSE.size());
                    CHECK(std::memcmp(ftz.LSE.data(), ieee.LSE.data(), ftz.LSE.size() * sizeof(float)) == 0);
                    setenv("FLASHSIM_FLASH2H_EXP", "poly", 1);
                    check_forward(p, "flash2h");
                }
    setenv("FLASHSIM_FLASH2H_EXP", "fast", 1);
    const sim::Problem p = make(1, 2, 200, 128, sim::DType::bf16, false, 3);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_EXP must be ftz, ieee or poly");
    setenv("FLASHSIM_FLASH2H_EXP", "poly", 1);
    setenv("FLASHSIM_FLASH2H", "plain", 1);  // d = 128's default is overlapped
    check_refused(p, fcuda::Pass::forward, "needs flash2h's default schedule and ring");
    unsetenv("FLASHSIM_FLASH2H");
    unsetenv("FLASHSIM_FLASH2H_EXP");
    unsetenv("FLASHSIM_FLASH2H_BC");
}

TEST_CASE("backward: standard and flash2 vs the float64 backward reference") {
    const int64_t seqs[] = {1, 77, 200};
    for (const std::string variant : {"standard", "flash2"})
        for (sim::DType dt : kTypes)
            for (int64_t d : {64, 128})
                for (int64_t n : seqs)
                    for (bool causal : {false, true}) {
                        CAPTURE(variant);
                        check_backward(make(2, 1, n, d, dt, causal, 7 + n), variant);
                    }
}

// flash2's backward with 64 or 128 keys a block (FLASHSIM_FLASH2_BWD_BC) at both head dims: each
// warp owns the same 16 key rows and walks the same query blocks in the same order either way (a
// 128-key block under the causal mask visits one query block more for its upper half, where every
// product adds exact zeros), so dK and dV keep their bits; dQ (float2 atomics in whatever order the
// blocks run) against the float64 reference. Sizes off both block edges and a single row.
TEST_CASE("flash2 backward: 64 or 128 keys a block give dK, dV the same bits") {
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 77, 200, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 2, n, d, dt, causal, 31 + n);
                    INFO(describe(p));
                    setenv("FLASHSIM_FLASH2_BWD_BC", "64", 1);
                    CHECK(fcuda::tile_config("flash2", p, fcuda::Pass::backward).block_cols == 64);
                    const fcuda::Outputs narrow = fcuda::compute(p, "flash2", fcuda::Pass::backward);
                    setenv("FLASHSIM_FLASH2_BWD_BC", "128", 1);
                    CHECK(fcuda::tile_config("flash2", p, fcuda::Pass::backward).block_cols == 128);
                    const fcuda::Outputs wide = fcuda::compute(p, "flash2", fcuda::Pass::backward);
                    CHECK(same_bits(wide.dK.data, narrow.dK.data));
                    CHECK(same_bits(wide.dV.data, narrow.dV.data));
                    check_backward(p, "flash2", backward_reference(p));
                }
    unsetenv("FLASHSIM_FLASH2_BWD_BC");
}

// flash2's backward with its key blocks' walks staggered (FLASHSIM_FLASH2_BWD_WALK=staggered, no mask):
// each key block visits every query block once, starting at its own and wrapping, so dK, dV and dQ
// sum the same terms in another order: against the float64 reference, at sizes off both block edges,
// with fewer query blocks than the start would pass (N = 200: 4 query blocks, 2 key blocks) and many.
TEST_CASE("flash2 backward: a staggered walk over the query blocks vs the float64 reference") {
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 77, 200, 1000, 2048}) {
                const sim::Problem p = make(2, 2, n, d, dt, false, 53 + n);
                INFO(describe(p));
                setenv("FLASHSIM_FLASH2_BWD_WALK", "staggered", 1);
                check_backward(p, "flash2", backward_reference(p));
            }
    setenv("FLASHSIM_FLASH2_BWD_WALK", "sideways", 1);
    const sim::Problem p = make(1, 1, 64, 64, sim::DType::bf16, false, 1);
    CHECK_THROWS_WITH_AS(fcuda::compute(p, "flash2", fcuda::Pass::backward),
                         doctest::Contains("FLASHSIM_FLASH2_BWD_WALK must be in-step or staggered (got 'sideways')"),
                         std::runtime_error);
    unsetenv("FLASHSIM_FLASH2_BWD_WALK");
}

// flash2h's backward schedules (FLASHSIM_FLASH2H_BWD_SCHEDULE); "default" is what runs when the
// variable is unset (bulk-sum at d = 64, bulk-pipelined at d = 128); bulk-sum is written for d = 64
constexpr const char* kBwdSchedules[] = {"default",        "plain",     "pipelined", "bulk",
                                         "bulk-pipelined", "bulk-keys", "bulk-sum"};
bool runs_at(const char* schedule, int64_t d) { return d == 64 || std::string(schedule) != "bulk-sum"; }
// deterministic mode runs plain's or pipelined's code whatever the schedule: checked with those two
bool bulk_schedule(const char* schedule) { return std::string(schedule).rfind("bulk", 0) == 0; }

// flash2h's backward (wgmma + TMA, Hopper only) at sizes that are not block multiples (B_r = 64,
// B_c = 128), smaller than a block, and over enough blocks that its 2-stage ring wraps; in its
// default (atomic) and its deterministic dQ order, in every schedule (plain, pipelined, and the
// three that add dQ by bulk reduction; deterministic mode there runs plain / pipelined's code).
TEST_CASE("flash2h backward vs the float64 backward reference") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 63, 130, 257, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 2, n, d, dt, causal, 11 + n);
                    const fcuda::GradsD g = backward_reference(p);  // once for every schedule and mode
                    for (const char* schedule : kBwdSchedules)
                        for (const char* mode : {"atomic", "deterministic"}) {
                            if (!runs_at(schedule, d)) continue;
                            if (std::string(mode) == "deterministic" &&
                                (bulk_schedule(schedule) || std::string(schedule) == "default" ||
                                 (n != 63 && n != 1000)))
                                continue;
                            setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", schedule, 1);
                            setenv("FLASHSIM_FLASH2H_BWD", mode, 1);
                            CAPTURE(schedule);
                            CAPTURE(mode);
                            // the bulk schedules' dQ through both conversions of the tiled accumulator
                            for (const char* post : {"staged", "plain"}) {
                                if (std::string(post) == "plain" && !bulk_schedule(schedule) &&
                                    std::string(schedule) != "default")
                                    continue;
                                setenv("FLASHSIM_FLASH2H_BWD_POST", post, 1);
                                CAPTURE(post);
                                check_backward(p, "flash2h", g);
                            }
                        }
                }
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    unsetenv("FLASHSIM_FLASH2H_BWD_POST");
}

// FLASHSIM_FLASH2H_BWD_POST picks how the bulk schedules' tiled fp32 dQ accumulator becomes dQ: a
// shared-memory tile written out as whole rows (staged) or each thread's own stores (plain). Both
// convert the same sums in the same order, so dQ (and dK, dV, which the knob never touches) keep
// their bits; a conversion that dropped, doubled or misplaced a tile would change them.
TEST_CASE("flash2h backward: FLASHSIM_FLASH2H_BWD_POST: staged and plain give the same bits") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    for (int64_t d : {64, 128}) {
        CAPTURE(d);
        const sim::Problem p = make(2, 3, 1000, d, sim::DType::bf16, true, 19);
        setenv("FLASHSIM_FLASH2H_BWD_POST", "staged", 1);
        const fcuda::Outputs staged = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
        setenv("FLASHSIM_FLASH2H_BWD_POST", "plain", 1);
        const fcuda::Outputs plain = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
        CHECK(same_bits(staged.dQ.data, plain.dQ.data));
        CHECK(same_bits(staged.dK.data, plain.dK.data));
        CHECK(same_bits(staged.dV.data, plain.dV.data));
    }
    unsetenv("FLASHSIM_FLASH2H_BWD_POST");
}

TEST_CASE("flash2h backward, deterministic mode: dQ, dK, dV bit-identical over 10 runs") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    for (const char* schedule : {"plain", "pipelined"})
        for (int64_t d : {64, 128})
            for (bool causal : {false, true}) {
                setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", schedule, 1);
                const sim::Problem p = make(1, 8, 2048, d, sim::DType::bf16, causal, 99);
                CAPTURE(schedule);
                INFO(describe(p));
                const fcuda::Outputs first = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                int same = 0;
                for (int r = 1; r < 10; ++r) {
                    const fcuda::Outputs o = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                    const size_t bytes = first.dQ.data.size() * sizeof(float);
                    same += std::memcmp(o.dQ.data.data(), first.dQ.data.data(), bytes) == 0 &&
                            std::memcmp(o.dK.data.data(), first.dK.data.data(), bytes) == 0 &&
                            std::memcmp(o.dV.data.data(), first.dV.data.data(), bytes) == 0;
                }
                CHECK(same == 9);
            }
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
}

// The causal grids taken heaviest block first across heads (FLASHSIM_FLASH2H_ORDER=heavy), the
// backward's Q_i / dO_i ring and the forward's K_j / V_j ring at 2 stages or deeper
// (FLASHSIM_FLASH2H_BWD_STAGES, FLASHSIM_FLASH2H_STAGES =2|deep: 4 stages at d = 64, 3 at d = 128)
// change when work runs, not what a block computes: the forward's O and LSE and the
// backward's dK and dV (each summed inside one thread block in a fixed order) must keep their bits;
// dQ (added into HBM by bulk reductions in whatever order blocks finish) is checked against the
// float64 reference. Many heads (so that the order differs) and sizes off the block edges; the ring
// wraps several times at N = 1000.
TEST_CASE("flash2h: heaviest-first order and the ring depths keep the bits") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    // 128-key blocks throughout: what is compared is the same block computed in another order (the
    // default's 176-key blocks at d = 128 without a mask run on the static order only)
    setenv("FLASHSIM_FLASH2H_BC", "128", 1);
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 130, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 3, n, d, dt, causal, 23 + n);
                    INFO(describe(p));
                    unsetenv("FLASHSIM_FLASH2H_ORDER");
                    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
                    unsetenv("FLASHSIM_FLASH2H_STAGES");
                    const fcuda::Outputs fwd = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    const fcuda::Outputs bwd = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                    const fcuda::GradsD g = backward_reference(p);
                    for (const char* order : {"heads", "heavy"})
                        for (const char* stages : {"2", "deep"}) {
                            setenv("FLASHSIM_FLASH2H_ORDER", order, 1);
                            setenv("FLASHSIM_FLASH2H_BWD_STAGES", stages, 1);
                            setenv("FLASHSIM_FLASH2H_STAGES", stages, 1);
                            CAPTURE(order);
                            CAPTURE(stages);
                            const fcuda::Outputs f = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                            CHECK(same_bits(f.O.data, fwd.O.data));
                            CHECK(same_bits(f.LSE, fwd.LSE));
                            const fcuda::Outputs b = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                            CHECK(same_bits(b.dK.data, bwd.dK.data));
                            CHECK(same_bits(b.dV.data, bwd.dV.data));
                            check_backward(p, "flash2h", g);
                        }
                }
    unsetenv("FLASHSIM_FLASH2H_ORDER");
    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
    unsetenv("FLASHSIM_FLASH2H_STAGES");
    unsetenv("FLASHSIM_FLASH2H_BC");
}

// flash2h's backward with its dQ tiles added by the consumer warpgroups themselves or handed to
// writer warps of the producer warpgroup (FLASHSIM_FLASH2H_BWD_FLUSH): in every bulk schedule,
// against the float64 reference at sizes off the blocks and over enough query blocks that each
// tile is handed over many times; dK and dV (summed inside the block, whoever adds dQ) keep their
// bits; and the writers refused where dQ does not go out as bulk reductions.
TEST_CASE("flash2h backward: dQ tiles by the consumers or by writer warps") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 63, 130, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 2, n, d, dt, causal, 41 + n);
                    const fcuda::GradsD g = backward_reference(p);
                    for (const char* schedule : {"default", "bulk", "bulk-pipelined", "bulk-keys"}) {
                        // d = 64's default (bulk-sum) adds its summed tiles through the writer only
                        // (refused with the consumers below)
                        if (d == 64 && std::string(schedule) == "default") continue;
                        setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", schedule, 1);
                        CAPTURE(schedule);
                        setenv("FLASHSIM_FLASH2H_BWD_FLUSH", "consumers", 1);
                        const fcuda::Outputs c = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                        setenv("FLASHSIM_FLASH2H_BWD_FLUSH", "writers", 1);
                        const fcuda::Outputs w = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                        INFO(describe(p));
                        CHECK(same_bits(c.dK.data, w.dK.data));
                        CHECK(same_bits(c.dV.data, w.dV.data));
                        check_backward(p, "flash2h", g);  // the writers, against the reference
                    }
                }
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    const sim::Problem p = make(1, 2, 200, 64, sim::DType::bf16, true, 5);
    setenv("FLASHSIM_FLASH2H_BWD_FLUSH", "writers", 1);
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "plain", 1);
    check_refused(p, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_FLUSH=writers needs a bulk schedule");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    check_refused(p, fcuda::Pass::backward, "not deterministic mode");
    unsetenv("FLASHSIM_FLASH2H_BWD");
    setenv("FLASHSIM_FLASH2H_BWD_FLUSH", "sometimes", 1);
    check_refused(p, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_FLUSH must be consumers or writers");
    // bulk-sum's summed tiles go out only through the writer warp
    setenv("FLASHSIM_FLASH2H_BWD_FLUSH", "consumers", 1);
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "bulk-sum", 1);
    check_refused(p, fcuda::Pass::backward, "bulk-sum hands its summed tiles to a writer warp");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    unsetenv("FLASHSIM_FLASH2H_BWD_FLUSH");
}

// flash2h's backward at d = 64 with 128 query rows a step (the default; FLASHSIM_FLASH2H_BWD_BR=64|128: bulk-sum's
// products twice as wide, two summed dQ tiles a step): dK_j and dV_j run through the same 16-query
// wgmma steps in the same order as at 64 rows a step, so they keep their bits; dQ (added by bulk
// reductions in whatever order blocks finish) against the float64 reference. Sizes off both block
// edges, a single row, and enough query blocks that the ring and the summed tiles wrap many times;
// and the knob refused where it is not written to run.
TEST_CASE("flash2h backward: 128 query rows a step at d = 64") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (sim::DType dt : kTypes)
        for (int64_t n : {1, 63, 130, 257, 1000, 1153})
            for (bool causal : {false, true}) {
                const sim::Problem p = make(2, 2, n, 64, dt, causal, 61 + n);
                INFO(describe(p));
                setenv("FLASHSIM_FLASH2H_BWD_BR", "64", 1);
                const fcuda::Outputs rows64 = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                unsetenv("FLASHSIM_FLASH2H_BWD_BR");  // the default at d = 64: 128
                const fcuda::Outputs rows128 = fcuda::compute(p, "flash2h", fcuda::Pass::backward);
                CHECK(same_bits(rows128.dK.data, rows64.dK.data));
                CHECK(same_bits(rows128.dV.data, rows64.dV.data));
                check_backward(p, "flash2h", backward_reference(p));
            }
    const sim::Problem p64 = make(1, 2, 200, 64, sim::DType::bf16, true, 9);
    setenv("FLASHSIM_FLASH2H_BWD_BR", "96", 1);
    check_refused(p64, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_BR must be 64 or 128");
    setenv("FLASHSIM_FLASH2H_BWD_BR", "128", 1);
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    check_refused(p64, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_BR=128 is written for d = 64's default");
    unsetenv("FLASHSIM_FLASH2H_BWD");
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "bulk-keys", 1);
    check_refused(p64, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_BR=128 is written for d = 64's default");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    check_refused(make(1, 2, 200, 128, sim::DType::bf16, false, 9), fcuda::Pass::backward,
                  "FLASHSIM_FLASH2H_BWD_BR=128 is written for d = 64's default");
    unsetenv("FLASHSIM_FLASH2H_BWD_BR");
}

// Bad values of the two knobs are refused with a message naming the variable, and the deep ring
// with a schedule whose tiles leave it no room (or deterministic mode) is refused, not run.
TEST_CASE("flash2h: FLASHSIM_FLASH2H_ORDER and the ring depths refuse what they cannot do") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    const sim::Problem p = make(1, 2, 200, 128, sim::DType::bf16, true, 3);
    setenv("FLASHSIM_FLASH2H_ORDER", "sideways", 1);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_ORDER must be heads or heavy");
    unsetenv("FLASHSIM_FLASH2H_ORDER");
    setenv("FLASHSIM_FLASH2H_BWD_STAGES", "5", 1);
    check_refused(p, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_STAGES must be 2 or deep");
    setenv("FLASHSIM_FLASH2H_BWD_STAGES", "deep", 1);
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "bulk-keys", 1);  // not d = 128's default
    check_refused(p, fcuda::Pass::backward, "needs the default schedule");
    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "bulk-sum", 1);  // d = 64 only
    check_refused(p, fcuda::Pass::backward, "bulk-sum is written for d = 64");
    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", "bulk-sideways", 1);
    check_refused(p, fcuda::Pass::backward, "FLASHSIM_FLASH2H_BWD_SCHEDULE must be default, plain");
    setenv("FLASHSIM_FLASH2H_BWD_STAGES", "deep", 1);
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
    setenv("FLASHSIM_FLASH2H_BWD", "deterministic", 1);
    check_refused(p, fcuda::Pass::backward, "not deterministic mode");
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_STAGES");
    setenv("FLASHSIM_FLASH2H_STAGES", "3", 1);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_STAGES must be 2 or deep");
    setenv("FLASHSIM_FLASH2H_STAGES", "deep", 1);
    setenv("FLASHSIM_FLASH2H", "plain", 1);  // d = 128's default is overlapped
    check_refused(p, fcuda::Pass::forward, "needs flash2h's default schedule");
    unsetenv("FLASHSIM_FLASH2H");
    unsetenv("FLASHSIM_FLASH2H_STAGES");
}

// flash2h's forward on its persistent grids (FLASHSIM_FLASH2H_GRID=static|persistent: a block an SM
// looping over units of query blocks, the next tile's loads under the current one's end) against
// one block a tile (tiles, the default): each tile is computed by the same code in the same order, so O and
// LSE keep their bits. Enough heads that every block runs several units (the Q_i buffer and the K/V
// ring handed from tile to tile many times), causal with an odd number of query blocks (two heads'
// middle blocks a unit) and an even one, an odd number of heads (the last head's middle block a
// unit alone, cuda/units.hpp), and sizes off the block edges.
TEST_CASE("flash2h: the persistent grid keeps the bits of one block a tile") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    // 128-key blocks throughout: what is compared is the same block computed in another order (the
    // default's 176-key blocks at d = 128 without a mask run on the static order only)
    setenv("FLASHSIM_FLASH2H_BC", "128", 1);
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 130, 1000, 1300})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(3, n == 1300 ? 49 : 50, n, d, dt, causal, 61 + n);
                    INFO(describe(p));
                    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
                    const fcuda::Outputs persistent = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find("persistent grid") !=
                          std::string::npos);
                    // timed runs on one workspace (one unit counter): outputs poisoned before each, all
                    // written after the last, so every launch found the counter at zero
                    if (n == 1000) {
                        fcuda::RunOptions o;
                        o.repeats = 4;
                        o.check_reference = false;
                        o.check_standard = false;
                        o.counters = false;
                        const fcuda::Measurement m = fcuda::run(p, "flash2h", o);
                        CHECK(m.unwritten == 0);
                    }
                    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
                    const fcuda::Outputs in_turn = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find(", in turn)") != std::string::npos);
                    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
                    const fcuda::Outputs tiles = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find("persistent") == std::string::npos);
                    CHECK(same_bits(persistent.O.data, tiles.O.data));
                    CHECK(same_bits(persistent.LSE, tiles.LSE));
                    CHECK(same_bits(in_turn.O.data, tiles.O.data));
                    CHECK(same_bits(in_turn.LSE, tiles.LSE));
                    // every output written (compute poisons them with NaN first): equal bits of two
                    // unwritten outputs would prove nothing
                    CHECK(std::all_of(persistent.O.data.begin(), persistent.O.data.end(),
                                      [](float x) { return std::isfinite(x); }));
                    unsetenv("FLASHSIM_FLASH2H_GRID");
                }
    // bad values, and a persistent grid asked for with what it does not run
    const sim::Problem p = make(1, 2, 200, 128, sim::DType::bf16, true, 3);
    setenv("FLASHSIM_FLASH2H_GRID", "sometimes", 1);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_GRID must be static, persistent or tiles");
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    setenv("FLASHSIM_FLASH2H", "plain", 1);  // d = 128's default is overlapped
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_GRID=persistent needs flash2h's default schedule");
    unsetenv("FLASHSIM_FLASH2H");
    setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
    setenv("FLASHSIM_FLASH2H_ORDER", "heavy", 1);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_GRID=static needs flash2h's default schedule");
    // without the explicit ask: the tiles grid
    unsetenv("FLASHSIM_FLASH2H_GRID");
    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find("persistent") == std::string::npos);
    unsetenv("FLASHSIM_FLASH2H_ORDER");
    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find(", in turn)") !=
          std::string::npos);  // d = 128's default
    unsetenv("FLASHSIM_FLASH2H_BC");
}

// flash2h's forward with its consumer warpgroups taking turns to issue their products
// (FLASHSIM_FLASH2H_PINGPONG=on, named barriers; the default at d = 128) against no turns (off):
// only when each product is issued changes, not what it adds in which order, so O and LSE keep
// their bits. Both head dims (two warpgroups at d = 128, three at d = 64: a turn goes round three),
// one key block and many, sizes off the block edges, causal and not; the static order with turns
// (d = 128, many units a block: the turns run on from tile to tile); then repeated timed launches
// (a barrier left unbalanced by one launch would hang or misorder the next).
// flash2h's forward at d = 128 without a mask on 176-key blocks (the default; FLASHSIM_FLASH2H_BC): against
// the float64 reference at sizes off both block edges (176 and 128 query rows), a single key, and
// enough key blocks that the ring wraps; many heads so that every block of the static order runs
// several tiles; and the knob refused where it is not written to run.
TEST_CASE("flash2h forward: 176-key blocks at d = 128") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (sim::DType dt : kTypes)
        for (int64_t n : {1, 130, 177, 353, 1000, 2048}) {
            const sim::Problem p = make(2, n >= 1000 ? 3 : 40, n, 128, dt, false, 83 + n);
            CHECK(fcuda::tile_config("flash2h", p).block_cols == 176);  // the default here
            check_forward(p, "flash2h");
        }
    const sim::Problem causal = make(1, 2, 300, 128, sim::DType::bf16, true, 3);
    const sim::Problem d64 = make(1, 2, 300, 64, sim::DType::bf16, false, 3);
    sim::Problem full = causal;
    full.causal = false;
    setenv("FLASHSIM_FLASH2H_BC", "176", 1);
    check_refused(causal, fcuda::Pass::forward, "FLASHSIM_FLASH2H_BC=176 is written for d = 128 without a mask");
    check_refused(d64, fcuda::Pass::forward, "FLASHSIM_FLASH2H_BC=176 is written for d = 128 without a mask");
    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
    check_refused(full, fcuda::Pass::forward, "FLASHSIM_FLASH2H_BC=176 runs with flash2h's default kernel");
    unsetenv("FLASHSIM_FLASH2H_GRID");
    setenv("FLASHSIM_FLASH2H_BC", "160", 1);
    check_refused(full, fcuda::Pass::forward, "FLASHSIM_FLASH2H_BC must be 128 or 176");
    unsetenv("FLASHSIM_FLASH2H_BC");
}

// flash2h's forward with the static order's last round split along the keys (FLASHSIM_FLASH2H_TAIL=split,
// d = 128 without a mask; sim/tail_plan.hpp): against the float64 reference where the units
// left over spread over every block, fewer units than blocks included (every unit in pieces, most
// shared by two or three blocks), at sizes off the block edges; too little left over to split (the
// whole kernel runs); repeated timed launches, each after the outputs are poisoned (a unit's count
// left non-zero by one launch would leave the next launch's rows of that unit unwritten); and the knob
// refused where it is not written to run.
TEST_CASE("flash2h forward: the last round split along the keys") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    setenv("FLASHSIM_FLASH2H_TAIL", "split", 1);
    struct Shape {
        int64_t b, h, n;
    };
    for (sim::DType dt : kTypes)
        for (const Shape s :
             {Shape{2, 40, 1000}, Shape{1, 20, 2048}, Shape{1, 11, 4000}, Shape{1, 1, 8192}, Shape{2, 2, 130}}) {
            const sim::Problem p = make(s.b, s.h, s.n, 128, dt, false, 91 + s.n);
            const std::string layout = fcuda::tile_config("flash2h", p).layout;
            CHECK(layout.find(s.n == 130 ? "the last round whole" : "units split along the keys") != std::string::npos);
            check_forward(p, "flash2h");
        }
    {
        const sim::Problem p = make(1, 20, 2048, 128, sim::DType::bf16, false, 5);
        fcuda::RunOptions o;
        o.repeats = 5;
        o.check_standard = false;
        o.counters = false;
        const fcuda::Measurement m = fcuda::run(p, "flash2h", o);
        CHECK(m.unwritten == 0);
        CHECK(m.vs_reference.count > 0);
        CHECK(m.vs_reference.rel_frobenius <= tolerance(p.dtype));
    }
    check_refused(make(1, 2, 300, 128, sim::DType::bf16, true, 3), fcuda::Pass::forward,
                  "FLASHSIM_FLASH2H_TAIL=split runs with flash2h's default kernel at d = 128 without a mask");
    check_refused(make(1, 2, 300, 64, sim::DType::bf16, false, 3), fcuda::Pass::forward,
                  "FLASHSIM_FLASH2H_TAIL=split runs with flash2h's default kernel at d = 128 without a mask");
    setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
    check_refused(make(1, 2, 300, 128, sim::DType::bf16, false, 3), fcuda::Pass::forward,
                  "FLASHSIM_FLASH2H_TAIL=split runs with flash2h's default kernel");
    unsetenv("FLASHSIM_FLASH2H_GRID");
    setenv("FLASHSIM_FLASH2H_TAIL", "halves", 1);
    check_refused(make(1, 2, 300, 128, sim::DType::bf16, false, 3), fcuda::Pass::forward,
                  "FLASHSIM_FLASH2H_TAIL must be whole or split (got 'halves')");
    unsetenv("FLASHSIM_FLASH2H_TAIL");
}

TEST_CASE("flash2h: taking turns (ping-pong) keeps the bits of the forward without") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    // 128-key blocks throughout: what is compared is the same block computed in another order (the
    // default's 176-key blocks at d = 128 without a mask run on the static order only)
    setenv("FLASHSIM_FLASH2H_BC", "128", 1);
    for (sim::DType dt : kTypes)
        for (int64_t d : {64, 128})
            for (int64_t n : {1, 130, 1000})
                for (bool causal : {false, true}) {
                    const sim::Problem p = make(2, 9, n, d, dt, causal, 71 + n);
                    INFO(describe(p));
                    setenv("FLASHSIM_FLASH2H_GRID", "tiles",
                           1);  // one block a tile (the default is mostly the static order)
                    setenv("FLASHSIM_FLASH2H_PINGPONG", "off", 1);
                    const fcuda::Outputs plain = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find("ping-pong") == std::string::npos);
                    setenv("FLASHSIM_FLASH2H_PINGPONG", "on", 1);
                    const fcuda::Outputs turns = fcuda::compute(p, "flash2h", fcuda::Pass::forward);
                    CHECK(std::string(fcuda::tile_config("flash2h", p).layout).find("ping-pong") != std::string::npos);
                    CHECK(same_bits(turns.O.data, plain.O.data));
                    CHECK(same_bits(turns.LSE, plain.LSE));
                    if (d == 128) {  // the static order with turns, 40 heads: several units a block
                        const sim::Problem many = make(2, 20, n, d, dt, causal, 79 + n);
                        const fcuda::Outputs one_a_tile = fcuda::compute(many, "flash2h", fcuda::Pass::forward);
                        setenv("FLASHSIM_FLASH2H_GRID", "static", 1);
                        const fcuda::Outputs in_turn = fcuda::compute(many, "flash2h", fcuda::Pass::forward);
                        CHECK(std::string(fcuda::tile_config("flash2h", many).layout).find("ping-pong") !=
                              std::string::npos);
                        setenv("FLASHSIM_FLASH2H_GRID", "tiles", 1);
                        CHECK(same_bits(in_turn.O.data, one_a_tile.O.data));
                        CHECK(same_bits(in_turn.LSE, one_a_tile.LSE));
                    }
                    CHECK(std::all_of(turns.O.data.begin(), turns.O.data.end(),
                                      [](float x) { return std::isfinite(x); }));
                    if (n == 1000) {
                        fcuda::RunOptions o;
                        o.repeats = 4;
                        o.check_reference = false;
                        o.check_standard = false;
                        o.counters = false;
                        const fcuda::Measurement m = fcuda::run(p, "flash2h", o);
                        CHECK(m.unwritten == 0);
                    }
                    unsetenv("FLASHSIM_FLASH2H_PINGPONG");
                    unsetenv("FLASHSIM_FLASH2H_GRID");
                }
    const sim::Problem p = make(1, 2, 200, 128, sim::DType::bf16, true, 3);
    setenv("FLASHSIM_FLASH2H_PINGPONG", "sometimes", 1);
    check_refused(p, fcuda::Pass::forward, "FLASHSIM_FLASH2H_PINGPONG must be on or off");
    setenv("FLASHSIM_FLASH2H_PINGPONG", "on", 1);
    setenv("FLASHSIM_FLASH2H_GRID", "persistent", 1);
    check_refused(p, fcuda::Pass::forward, "runs on the tiles grid, or at d = 128 the static order");
    unsetenv("FLASHSIM_FLASH2H_GRID");
    unsetenv("FLASHSIM_FLASH2H_PINGPONG");
    unsetenv("FLASHSIM_FLASH2H_BC");
}

TEST_CASE("run(): flash2h backward leaves no poisoned output and agrees with standard") {
    if (!runs_here("flash2h")) return;  // recorded and printed as a skip, with the reason
    for (const char* schedule : kBwdSchedules)
        for (const char* mode : {"atomic", "deterministic"})
            for (int64_t d : {64, 128})
                for (bool causal : {false, true}) {
                    if (!runs_at(schedule, d)) continue;
                    const bool is_default = std::string(schedule) == "default";
                    if (std::string(mode) == "deterministic" && (bulk_schedule(schedule) || is_default)) continue;
                    setenv("FLASHSIM_FLASH2H_BWD_SCHEDULE", schedule, 1);
                    setenv("FLASHSIM_FLASH2H_BWD", mode, 1);
                    const sim::Problem p = make(2, 4, 520, d, sim::DType::bf16, causal);
                    fcuda::RunOptions o;
                    o.pass = fcuda::Pass::backward;
                    o.repeats = 3;
                    o.warmup = 1;
                    o.counters = false;
                    // the float64 reference for the default schedule (the others were checked
                    // against it in the test above); every schedule against standard
                    o.check_reference = is_default;
                    const fcuda::Measurement m = fcuda::run(p, "flash2h", o);
                    CAPTURE(schedule);
                    CAPTURE(mode);
                    INFO(describe(p));
                    CHECK(m.ms_median > 0);
                    CHECK(m.unwritten == 0);
                    CHECK(m.note.empty());
                    if (is_default) {
                        CHECK(m.vs_reference.count > 0);
                        CHECK(m.vs_reference.rel_frobenius <= backward_tolerance(p.dtype));
                    }
                    CHECK(m.vs_standard.count > 0);
                    CHECK(m.vs_standard.rel_frobenius <= backward_tolerance(p.dtype));
                }
    unsetenv("FLASHSIM_FLASH2H_BWD");
    unsetenv("FLASHSIM_FLASH2H_BWD_SCHEDULE");
}

TEST_CASE("run(): a training step (forward then backward, timed as one) for every pairing") {
    for (const char* pairing : {"standard", "flash2", "flash2h+flash2", "flash2h", "flash2+flash2h"}) {
        std::string why;
        if (!fcuda::variant_available(pairing, &why)) {
            gpu_cases::not_run(pairing, why);
            continue;
        }
        for (bool causal : {false, true}) {
            const sim::Problem p = make(2, 2, 300, 64, sim::DType::bf16, causal);
            fcuda::RunOptions o;
            o.pass = fcuda::Pass::step;
            o.repeats = 3;
            o.warmup = 1;
            o.counters = false;
            const fcuda::Measurement m = fcuda::run(p, pairing, o);
            CAPTURE(pairing);
            INFO(describe(p));
            CHECK(m.pass == fcuda::Pass::step);
            CHECK(m.ms_median > 0);
            CHECK(m.unwritten == 0);  // O, dQ, dK, dV all written
            CHECK(m.note.empty());
            // O and the three gradients, against the float64 reference: 4 tensors of B H N d
            CHECK(m.vs_reference.count == 4 * p.heads_total() * p.seq * p.head_dim);
            CHECK(m.vs_reference.rel_frobenius <= backward_tolerance(p.dtype));
            CHECK(m.tflops > 0);
            CHECK(fcuda::attention_flops(p, fcuda::Pass::step) ==
                  doctest::Approx(3.5 * fcuda::attention_flops(p, fcuda::Pass::forward)));
        }
    }
    // a pairing whose backward cannot read what the forward left is refused, with the reason
    CHECK_FALSE(fcuda::supports("standard+flash2", fcuda::Pass::step));
    CHECK_FALSE(fcuda::supports("flash1", fcuda::Pass::step));
    CHECK_FALSE(fcuda::supports("flash2h+flash2", fcuda::Pass::forward));
}

TEST_CASE("run(): timed, every output written, agrees with standard") {
    for (const std::string& variant : runnable({"flash1", "flash2", "flash2h"})) {
        const sim::Problem p = make(2, 4, 520, 128, sim::DType::bf16, true);
        fcuda::RunOptions o;
        o.repeats = 5;
        o.warmup = 1;
        const fcuda::Measurement m = fcuda::run(p, variant, o);
        CAPTURE(variant);
        CHECK(m.ms_median > 0);
        CHECK(m.unwritten == 0);
        CHECK(m.note.empty());
        CHECK(m.vs_reference.count > 0);
        CHECK(m.vs_reference.rel_frobenius <= tolerance(p.dtype));
        CHECK(m.vs_standard.rel_frobenius <= tolerance(p.dtype));
        // counters (CUPTI, in process), read on a run after an L2 flush: Q, K and V had to come
        // from DRAM at least once, and every DRAM byte passed through L2
        if (m.dram_read_bytes >= 0) {
            const double inputs = 3.0 * double(p.heads_total() * p.seq * p.head_dim * p.elem_bytes());
            INFO(m.counters_note << ": DRAM read " << m.dram_read_bytes << ", L2 " << m.l2_bytes << ", inputs "
                                 << inputs);
            CHECK(double(m.dram_read_bytes) >= 0.9 * inputs);
            CHECK(m.l2_bytes >= m.dram_read_bytes);
        } else {
            MESSAGE("counters not read: " << m.counters_note);
            CHECK(m.counters_note.find("ncu") != std::string::npos);  // says how to measure instead
        }
    }
}

int main(int argc, char** argv) {
    std::string why;
    if (!fcuda::device_available(&why)) {
        std::printf("SKIP: no CUDA device (%s)\n", why.c_str());
        return 77;
    }
    std::printf("device: %s\n", fcuda::device_name().c_str());
    doctest::Context ctx(argc, argv);
    const int rc = ctx.run();
    if (ctx.shouldExit()) return rc;  // --help, --list-test-cases and the like: no run to sum up
    // The cases that ran, those skipped and the parts not run on this card, by name; a case that
    // ran zero assertions without recording a skip fails the binary.
    const int empty = gpu_cases::summarize(fcuda::device_name());
    return rc != 0 ? rc : empty;
}
