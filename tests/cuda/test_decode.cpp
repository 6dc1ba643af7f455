// tests/cuda/test_decode.cpp — GPU tests (part of test_cuda_gpu, which skips without a device) of
// the decode kernel (cuda/decode.cu) and of the memory probes behind `flashsim bench --fit`:
//   * O and LSE vs the float64 reference (sim::decode_reference) at odd cache lengths
//     (1, 7, 130, 193, 385, 1000, 4097: shorter than a tile, one past the 3-stage ring at d = 128
//     and the 6-stage one at d = 64, many times round it), d 64 and 128, bf16 and fp16, groups of
//     4 (GQA 32/8), 1 (MHA), 8, 2 and 16 (which runs in two chunks of 8), with the chosen split
//     count, one split and forced splits (the fused merge);
//   * 128-key ring stages at d = 64 (FLASHSIM_DECODE_STAGE_KEYS=128): splits cut in whole stages, and
//     the same bits as 64-key ones wherever both cut the splits alike;
//   * TMA loads (FLASHSIM_DECODE_LOAD=tma): the same bits as the cp.async copies;
//   * the L2 prefetch hints (FLASHSIM_DECODE_PREFETCH=128|256): the same bits as the plain copies;
//   * the cluster merge (FLASHSIM_DECODE_MERGE=cluster): the fused merge's LSE bits, O vs the reference;
//   * decode is timed after a read flush unless FLASHSIM_L2_FLUSH=write, and says which;
//   * the merge as a second kernel (more splits than the fused merge takes), MQA;
//   * repeated launches: the fused merge's counters are back at zero after every launch;
//   * fcuda::run_decode leaves nothing unwritten, times something and counts K and V once per KV head;
//   * a traced run (bench --decode --trace): every block stamped, the stamps in the kernel's order,
//     the blocks inside the events' time, the merge stamped where the splits are merged;
//   * the fit's workspace table equals what the kernels allocate, and a probe's N fits.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <cstdlib>
#include <cstring>
#include <string>

#include "cuda/api.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "sim/decode.hpp"
#include "sim/footprint.hpp"
#include "sim/reference.hpp"

namespace {
sim::DecodeProblem decode_shape(int64_t b, int64_t hq, int64_t hkv, int64_t L, int64_t d, sim::DType dt) {
    sim::DecodeProblem p;
    p.batch = b;
    p.q_heads = hq;
    p.kv_heads = hkv;
    p.kv_len = L;
    p.head_dim = d;
    p.dtype = dt;
    return p;
}
double decode_tolerance(sim::DType dt) { return dt == sim::DType::bf16 ? 1.5e-2 : 4e-3; }

// Two runs of the kernel that must agree to the bit (O and LSE), the second also checked against
// the float64 reference as every kernel is
void check_same_bits(const fcuda::DecodeOutputs& a, const fcuda::DecodeOutputs& b, const sim::DecodeProblem& p) {
    CHECK(a.splits == b.splits);
    REQUIRE(a.O.data.size() == b.O.data.size());
    int64_t differ = 0;
    for (size_t k = 0; k < a.O.data.size(); ++k) differ += std::memcmp(&a.O.data[k], &b.O.data[k], sizeof(float)) != 0;
    CHECK(differ == 0);
    REQUIRE(a.LSE.size() == b.LSE.size());
    CHECK(std::memcmp(a.LSE.data(), b.LSE.data(), a.LSE.size() * sizeof(float)) == 0);
    const sim::DecodeInputs in = sim::generate_decode_inputs(p);
    const sim::ErrorStats e = sim::validate(b.O, sim::decode_reference(p, in), p.dtype);
    CHECK(e.nonfinite == 0);
    CHECK(e.rel_frobenius < decode_tolerance(p.dtype));
}
}  // namespace

TEST_CASE("decode kernel vs the float64 reference: odd L, both d, both dtypes, groups of 1, 2, 4, 8 and 16") {
    struct Heads {
        int64_t q, kv;
    };
    // one block carries 4 (32/8), 1 (MHA), 8 (16/2) or 2 (16/8) query heads; 32/2 runs in two chunks of 8
    for (const Heads h : {Heads{32, 8}, Heads{8, 8}, Heads{16, 2}, Heads{16, 8}, Heads{32, 2}})
        for (int64_t L : {1, 7, 130, 193, 385, 1000, 4097})
            for (int64_t d : {64, 128})
                for (sim::DType dt : {sim::DType::bf16, sim::DType::fp16})
                    for (int64_t splits : {0, 1, 3}) {
                        const sim::DecodeProblem p = decode_shape(2, h.q, h.kv, L, d, dt);
                        CAPTURE(h.q);
                        CAPTURE(h.kv);
                        CAPTURE(L);
                        CAPTURE(d);
                        CAPTURE(std::string(sim::dtype_name(dt)));
                        CAPTURE(splits);
                        const fcuda::DecodeOutputs got = fcuda::compute_decode(p, splits);
                        const sim::DecodeInputs in = sim::generate_decode_inputs(p);
                        std::vector<double> lse;
                        const sim::TensorD ref = sim::decode_reference(p, in, &lse);
                        const sim::ErrorStats e = sim::validate(got.O, ref, dt);
                        CHECK(e.nonfinite == 0);
                        CHECK(e.rel_frobenius < decode_tolerance(dt));
                        REQUIRE(got.LSE.size() == lse.size());
                        double worst = 0;
                        for (size_t k = 0; k < lse.size(); ++k) worst = std::max(worst, std::abs(got.LSE[k] - lse[k]));
                        CHECK(worst < 1e-3);
                    }
}

namespace {
// O and LSE of one run against the float64 reference
void check_outputs_vs_reference(const fcuda::DecodeOutputs& got, const sim::DecodeProblem& p) {
    const sim::DecodeInputs in = sim::generate_decode_inputs(p);
    std::vector<double> lse;
    const sim::TensorD ref = sim::decode_reference(p, in, &lse);
    const sim::ErrorStats e = sim::validate(got.O, ref, p.dtype);
    CHECK(e.nonfinite == 0);
    CHECK(e.rel_frobenius < decode_tolerance(p.dtype));
    REQUIRE(got.LSE.size() == lse.size());
    double worst = 0;
    for (size_t k = 0; k < lse.size(); ++k) worst = std::max(worst, std::abs(got.LSE[k] - lse[k]));
    CHECK(worst < 1e-3);
}
void check_decode_vs_reference(const sim::DecodeProblem& p, int64_t splits, int64_t want_splits) {
    const fcuda::DecodeOutputs got = fcuda::compute_decode(p, splits);
    CHECK(got.splits == want_splits);
    check_outputs_vs_reference(got, p);
}
}  // namespace

TEST_CASE("decode: many splits, fused in the last block and as a second kernel (MQA, GQA)") {
    for (int64_t d : {64, 128}) {
        CAPTURE(d);
        // splits are cut in whole ring stages (128 keys at d = 64, 64 at d = 128), so a split is at
        // least one stage: 200 splits of one stage, the last one 61 keys: the last block merges 200 partials
        const int64_t sk = fcuda::decode_stage_keys(d);
        check_decode_vs_reference(decode_shape(1, 8, 2, 199 * sk + 61, d, sim::DType::bf16), 200, 200);
        // asking for more splits than stages gets one a stage
        check_decode_vs_reference(decode_shape(1, 8, 2, 99 * sk + 61, d, sim::DType::bf16), 200, 100);
        // 1100 one-stage splits: more than the fused merge takes, so the merge kernel runs (MQA, 4 heads)
        check_decode_vs_reference(decode_shape(1, 4, 1, 1099 * sk + 5, d, sim::DType::fp16), 1100, 1100);
    }
}

// FLASHSIM_DECODE_STAGE_KEYS=128 at d = 64: the ring's stages hold two 64-key tiles and the warps
// walk them in the same order, so O and LSE must match the 64-key stages bit for bit, including
// splits that end mid-stage (the second tile all past the split's end: an all-masked tile).
TEST_CASE("decode: 128-key ring stages at d = 64 give the bits of 64-key stages") {
    struct Heads {
        int64_t q, kv;
    };
    for (const Heads h : {Heads{32, 8}, Heads{16, 2}, Heads{32, 2}})
        for (int64_t L : {1, 7, 65, 130, 193, 385, 1000, 4097, 199 * 64 + 61})
            for (sim::DType dt : {sim::DType::bf16, sim::DType::fp16})
                for (int64_t splits : {0, 1, 3, 200}) {
                    if (splits == 200 && L < 199 * 64) continue;
                    const sim::DecodeProblem p = decode_shape(2, h.q, h.kv, L, 64, dt);
                    CAPTURE(h.q);
                    CAPTURE(h.kv);
                    CAPTURE(L);
                    CAPTURE(std::string(sim::dtype_name(dt)));
                    CAPTURE(splits);
                    setenv("FLASHSIM_DECODE_STAGE_KEYS", "64", 1);
                    const fcuda::DecodeOutputs a = fcuda::compute_decode(p, splits);
                    setenv("FLASHSIM_DECODE_STAGE_KEYS", "128", 1);
                    const fcuda::DecodeOutputs b = fcuda::compute_decode(p, splits);
                    unsetenv("FLASHSIM_DECODE_STAGE_KEYS");
                    CHECK(a.stage_keys == 64);
                    CHECK(b.stage_keys == 128);
                    // splits are cut in whole ring stages: 128-key stages may cut them elsewhere
                    // (L = 385, 3 splits asked: 3 of 192 keys at 64, 2 of 256 at 128); where the cuts
                    // agree the arithmetic is the same to the bit, else each stands against the reference
                    CHECK(a.keys_per_split % 64 == 0);
                    CHECK(b.keys_per_split % 128 == 0);
                    if (a.keys_per_split == b.keys_per_split) {
                        check_same_bits(a, b, p);
                    } else {
                        check_outputs_vs_reference(a, p);
                        check_outputs_vs_reference(b, p);
                    }
                }
    unsetenv("FLASHSIM_DECODE_STAGE_KEYS");
}

// TMA loads (FLASHSIM_DECODE_LOAD=tma, sm_90): the same tiles in the ring, another layout at d = 128
// (two 64-column panels) and real keys instead of zeros past a split's end (masked), so the same bits
// as the cp.async copies: both d, both stage sizes at d = 64, both dtypes, head groups carried whole
// and in chunks, caches shorter than a box, caches ending mid-stage, and the float64 reference
TEST_CASE("decode: TMA loads give the bits of the cp.async copies") {
    if (!fcuda::variant_available("flash2h")) {  // the Hopper kernels run where TMA does
        gpu_cases::skip("TMA needs compute capability 9.0");
        return;
    }
    struct Heads {
        int64_t q, kv;
    };
    struct Shape {
        int64_t d;
        const char* stage_keys;
    };
    for (const Shape sh : {Shape{128, "64"}, Shape{64, "128"}, Shape{64, "64"}})
        for (const Heads h : {Heads{32, 8}, Heads{16, 2}, Heads{32, 2}})
            for (int64_t L : {1, 7, 65, 193, 1000, 4097, 199 * 64 + 61})
                for (sim::DType dt : {sim::DType::bf16, sim::DType::fp16})
                    for (int64_t splits : {0, 1, 3, 200}) {
                        if (splits == 200 && L < 199 * 64) continue;
                        const sim::DecodeProblem p = decode_shape(2, h.q, h.kv, L, sh.d, dt);
                        CAPTURE(sh.d);
                        CAPTURE(std::string(sh.stage_keys));
                        CAPTURE(h.q);
                        CAPTURE(h.kv);
                        CAPTURE(L);
                        CAPTURE(std::string(sim::dtype_name(dt)));
                        CAPTURE(splits);
                        setenv("FLASHSIM_DECODE_STAGE_KEYS", sh.stage_keys, 1);
                        setenv("FLASHSIM_DECODE_LOAD", "cp.async", 1);
                        const fcuda::DecodeOutputs a = fcuda::compute_decode(p, splits);
                        setenv("FLASHSIM_DECODE_LOAD", "tma", 1);
                        const fcuda::DecodeOutputs b = fcuda::compute_decode(p, splits);
                        unsetenv("FLASHSIM_DECODE_LOAD");
                        unsetenv("FLASHSIM_DECODE_STAGE_KEYS");
                        CHECK(a.kv_load == "cp.async");
                        CHECK(b.kv_load == "tma");
                        check_same_bits(a, b, p);
                    }
    // unasked, a Hopper GPU gets the TMA loads
    unsetenv("FLASHSIM_DECODE_LOAD");
    CHECK(fcuda::compute_decode(decode_shape(1, 32, 8, 100, 128, sim::DType::bf16)).kv_load == "tma");
    // the prefetch hint belongs to the cp.async copies: asking for both is refused with the fix
    setenv("FLASHSIM_DECODE_LOAD", "tma", 1);
    setenv("FLASHSIM_DECODE_PREFETCH", "128", 1);
    CHECK_THROWS_WITH_AS(fcuda::compute_decode(decode_shape(1, 32, 8, 100, 128, sim::DType::bf16)),
                         doctest::Contains("FLASHSIM_DECODE_PREFETCH applies to the cp.async copies"),
                         std::runtime_error);
    unsetenv("FLASHSIM_DECODE_PREFETCH");
    unsetenv("FLASHSIM_DECODE_LOAD");
}

// The cluster merge (FLASHSIM_DECODE_MERGE=cluster, sm_90): a head's splits are the blocks of one
// cluster and merge through each other's shared memory. At the splits the fused merge gets, the LSE
// is computed by the same arithmetic in the same order (its bits equal the fused merge's); O sums the
// same weighted partials in another order, so it stands against the float64 reference. Both d, both
// dtypes, groups carried whole and in chunks, a cache shorter than a split, splits ending mid-stage,
// 16 splits (a non-portable cluster); more than 16 and the cp.async copies are refused with the fix.
TEST_CASE("decode: the cluster merge through shared memory gives the fused merge's LSE and the reference's O") {
    if (!fcuda::variant_available("flash2h")) {  // clusters and TMA: compute capability 9.0
        gpu_cases::skip("the cluster merge needs compute capability 9.0");
        return;
    }
    struct Heads {
        int64_t q, kv;
    };
    for (const char* ring : {"192", "96"})  // one block an SM with the deep ring, or two
        for (int64_t d : {64, 128})
            for (const Heads h : {Heads{32, 8}, Heads{16, 2}, Heads{32, 2}})
                for (int64_t L : {1, 7, 193, 1000, 4097, 199 * 64 + 61})
                    for (sim::DType dt : {sim::DType::bf16, sim::DType::fp16})
                        for (int64_t splits : {0, 3, 16}) {
                            const sim::DecodeProblem p = decode_shape(2, h.q, h.kv, L, d, dt);
                            CAPTURE(std::string(ring));
                            CAPTURE(d);
                            CAPTURE(h.q);
                            CAPTURE(h.kv);
                            CAPTURE(L);
                            CAPTURE(std::string(sim::dtype_name(dt)));
                            CAPTURE(splits);
                            setenv("FLASHSIM_DECODE_MERGE", "cluster", 1);
                            setenv("FLASHSIM_DECODE_CLUSTER_RING", ring, 1);
                            const fcuda::DecodeOutputs c = fcuda::compute_decode(p, splits);
                            unsetenv("FLASHSIM_DECODE_MERGE");
                            unsetenv("FLASHSIM_DECODE_CLUSTER_RING");
                            CHECK(c.splits <= 16);
                            CHECK(c.merge == (c.splits > 1 ? "cluster" : "none"));
                            check_outputs_vs_reference(c, p);
                            if (c.splits > 1) {  // the fused merge at the same splits: the same LSE bits
                                const fcuda::DecodeOutputs f = fcuda::compute_decode(p, c.splits);
                                CHECK(f.merge == "fused");
                                REQUIRE(f.LSE.size() == c.LSE.size());
                                CHECK(std::memcmp(f.LSE.data(), c.LSE.data(), c.LSE.size() * sizeof(float)) == 0);
                            }
                        }
    setenv("FLASHSIM_DECODE_MERGE", "cluster", 1);
    const sim::DecodeProblem big = decode_shape(1, 32, 8, 32768, 128, sim::DType::bf16);
    CHECK(fcuda::compute_decode(big).splits == 16);  // the rule would take more: the largest cluster
    CHECK_THROWS_WITH_AS(fcuda::compute_decode(big, 17), doctest::Contains("at most 16 blocks (got --splits 17)"),
                         std::runtime_error);
    setenv("FLASHSIM_DECODE_LOAD", "cp.async", 1);
    CHECK_THROWS_WITH_AS(fcuda::compute_decode(big), doctest::Contains("runs with the TMA loads"), std::runtime_error);
    unsetenv("FLASHSIM_DECODE_LOAD");
    // timed runs leave nothing unwritten
    fcuda::RunOptions o;
    o.repeats = 3;
    o.warmup = 1;
    o.input_copies = 1;
    const fcuda::DecodeMeasurement m = fcuda::run_decode(decode_shape(2, 32, 8, 3500, 64, sim::DType::bf16), o, 0);
    unsetenv("FLASHSIM_DECODE_MERGE");
    CHECK(m.merge == "cluster");
    CHECK(m.unwritten == 0);
    CHECK(m.vs_reference.count > 0);
    CHECK(m.vs_reference.rel_frobenius < decode_tolerance(sim::DType::bf16));
}

// An L2 prefetch-size hint changes how much L2 fetches on a miss, not what lands in shared memory:
// every hint gives the plain copies' bits (both d, both dtypes, a split ending mid-tile)
TEST_CASE("decode: the L2 prefetch hints on the K/V copies give the bits of the plain copies") {
    for (int64_t d : {64, 128})
        for (int64_t L : {7, 193, 4097, 199 * 64 + 61})
            for (sim::DType dt : {sim::DType::bf16, sim::DType::fp16})
                for (int64_t splits : {0, 3}) {
                    const sim::DecodeProblem p = decode_shape(2, 32, 8, L, d, dt);
                    CAPTURE(d);
                    CAPTURE(L);
                    CAPTURE(std::string(sim::dtype_name(dt)));
                    CAPTURE(splits);
                    unsetenv("FLASHSIM_DECODE_PREFETCH");
                    // (the default on sm_90 is tma, which takes no hint)
                    setenv("FLASHSIM_DECODE_LOAD", "cp.async", 1);
                    const fcuda::DecodeOutputs plain = fcuda::compute_decode(p, splits);
                    unsetenv("FLASHSIM_DECODE_LOAD");
                    CHECK(plain.l2_prefetch == 0);
                    CHECK(plain.kv_load == "cp.async");
                    for (const char* pf : {"128", "256"}) {
                        CAPTURE(std::string(pf));
                        setenv("FLASHSIM_DECODE_PREFETCH", pf, 1);
                        const fcuda::DecodeOutputs hinted = fcuda::compute_decode(p, splits);
                        unsetenv("FLASHSIM_DECODE_PREFETCH");
                        CHECK(hinted.l2_prefetch == std::atoi(pf));
                        CHECK(hinted.kv_load == "cp.async");  // a hint asked for picks the copies it applies to
                        REQUIRE(hinted.O.data.size() == plain.O.data.size());
                        CHECK(std::memcmp(hinted.O.data.data(), plain.O.data.data(),
                                          plain.O.data.size() * sizeof(float)) == 0);
                        CHECK(std::memcmp(hinted.LSE.data(), plain.LSE.data(), plain.LSE.size() * sizeof(float)) == 0);
                    }
                }
    unsetenv("FLASHSIM_DECODE_PREFETCH");
}

// the decode rows are timed after a read flush (L2 left clean), unless FLASHSIM_L2_FLUSH=write asks
// for the training rows' memset; either way the measurement says which
TEST_CASE("decode: timed after a read flush unless FLASHSIM_L2_FLUSH says write; the row says which") {
    const sim::DecodeProblem p = decode_shape(1, 32, 8, 5000, 128, sim::DType::fp16);
    fcuda::RunOptions o;
    o.repeats = 3;
    o.warmup = 1;
    unsetenv("FLASHSIM_L2_FLUSH");
    const fcuda::DecodeMeasurement a = fcuda::run_decode(p, o);
    setenv("FLASHSIM_L2_FLUSH", "write", 1);
    const fcuda::DecodeMeasurement b = fcuda::run_decode(p, o);
    unsetenv("FLASHSIM_L2_FLUSH");
    CHECK(a.l2_flush == "read");
    CHECK(b.l2_flush == "write");
    for (const fcuda::DecodeMeasurement* m : {&a, &b}) {
        CHECK(m->unwritten == 0);
        CHECK(m->ms_median > 0);
        CHECK(m->vs_reference.rel_frobenius < decode_tolerance(p.dtype));
    }
}

TEST_CASE("decode: repeated launches with the fused merge (its counters return to zero)") {
    // a counter left non-zero would make no block the last one on the next launch, and the timed
    // runs would leave O poisoned (unwritten > 0)
    // 3,500 keys: 28 stages of 128, 4 a split for the 7 splits asked
    const sim::DecodeProblem p = decode_shape(2, 32, 8, 3500, 64, sim::DType::bf16);
    fcuda::RunOptions o;
    o.repeats = 4;
    o.warmup = 2;
    o.input_copies = 1;
    const fcuda::DecodeMeasurement m = fcuda::run_decode(p, o, 7);
    CHECK(m.splits == 7);
    CHECK(m.unwritten == 0);
    CHECK(m.vs_reference.count > 0);
    CHECK(m.vs_reference.rel_frobenius < decode_tolerance(p.dtype));
}

TEST_CASE("decode: run_decode writes every output, times it, and reads K and V once per KV head") {
    const sim::DecodeProblem p = decode_shape(1, 32, 8, 32768, 128, sim::DType::bf16);
    fcuda::RunOptions o;
    o.repeats = 5;
    o.warmup = 1;
    const fcuda::DecodeMeasurement m = fcuda::run_decode(p, o);
    CHECK(m.unwritten == 0);
    CHECK(m.ms_median > 0);
    CHECK(m.splits > 1);  // B * H_kv = 8 blocks cannot fill the SMs
    CHECK(m.kv_bytes == 2 * 8 * 32768 * 128 * 2);
    CHECK(m.vs_reference.count > 0);
    CHECK(m.vs_reference.rel_frobenius < decode_tolerance(p.dtype));
    CHECK(m.peak_bytes >= m.kv_bytes);
    MESSAGE("decode B=1 L=32768: ", m.ms_median, " ms, ", m.kv_tbps, " TB/s, ", m.splits, " splits");
}

TEST_CASE("decode: a traced run stamps every block in the kernel's order, inside the call's events") {
    // B = 1, L = 32768: many splits, fused merge; the trace runs after the timed calls
    const sim::DecodeProblem p = decode_shape(1, 32, 8, 32768, 128, sim::DType::bf16);
    fcuda::RunOptions o;
    o.repeats = 3;
    o.warmup = 1;
    o.trace_runs = 3;
    const fcuda::DecodeMeasurement m = fcuda::run_decode(p, o);
    const fcuda::DecodeTrace& t = m.trace;
    CHECK(m.unwritten == 0);
    CHECK(m.vs_reference.rel_frobenius < decode_tolerance(p.dtype));
    REQUIRE(t.runs == 3);
    CHECK(t.start_med_us >= 0);
    CHECK(t.start_med_us <= t.start_max_us);
    CHECK(t.start_med_us <= t.first_tile_med_us);
    CHECK(t.first_tile_med_us <= t.stream_med_us);
    CHECK(t.stream_med_us <= t.written_med_us);
    CHECK(t.written_max_us <= t.span_us);
    CHECK(t.merge_us > 0);  // the last block of each KV head merged, and stamped it
    CHECK(t.first_tile_wait_us > 0);
    // the blocks ran inside the call: the events bracket the kernel (1 us for the events' resolution)
    CHECK(t.span_us > 0);
    CHECK(t.span_us <= t.event_us + 1.0);
    CHECK(t.sm_clock_ghz > 0.5);
    CHECK(t.sm_clock_ghz < 3.0);
    MESSAGE("decode trace B=1 L=32768: event ", t.event_us, " us, span ", t.span_us, " us, first tile ",
            t.first_tile_wait_us, " us, merge ", t.merge_us, " us, timer step ", t.timer_step_ns, " ns");
}

TEST_CASE("fit: the workspace table equals the kernels' own, and the probed N fits") {
    for (const char* v : {"standard", "flash2", "flash2h"}) {
        std::string why;
        if (!fcuda::variant_available(v, &why)) {
            gpu_cases::not_run(v, why);
            continue;
        }
        for (int64_t n : {77, 300, 1000}) {
            sim::Problem p;
            p.batch = 1;
            p.heads = 2;
            p.seq = n;
            p.head_dim = 64;
            p.dtype = sim::DType::bf16;
            CAPTURE(v);
            CAPTURE(n);
            CHECK(fcuda::step_workspace_bytes(v, p) == fcuda::step_workspace_after_run(v, p));
        }
    }
    sim::Problem shape;
    shape.batch = 1;
    shape.heads = 16;
    shape.head_dim = 128;
    shape.dtype = sim::DType::bf16;
    const fcuda::FitProbe r = fcuda::probe_fit("flash2", shape);
    CHECK(r.longest_n > 0);
    CHECK(r.next_n == sim::grid_point(sim::grid_index_at_most(r.longest_n) + 1));
    CHECK(double(r.peak_bytes_at_longest) <= r.free_bytes);
    MESSAGE("flash2 step fits N = ", r.longest_n, " (", r.peak_bytes_at_longest, " bytes) in ", r.free_bytes,
            " free bytes, ", r.probes, " probes");
}
