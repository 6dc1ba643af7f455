// Decoding with split-KV: the split/merge on real numbers against the float64 reference, the
// worked example's two blocks merged as two splits, the bytes against closed forms, the split count.
#include <doctest/doctest.h>

#include <cmath>
#include <limits>

#include "sim/decode.hpp"
#include "sim/reference.hpp"

using namespace sim;

namespace {
DecodeProblem make(int64_t b, int64_t hq, int64_t hkv, int64_t qlen, int64_t L, int64_t d, DType dt) {
    DecodeProblem p;
    p.batch = b;
    p.q_heads = hq;
    p.kv_heads = hkv;
    p.q_len = qlen;
    p.kv_len = L;
    p.head_dim = d;
    p.dtype = dt;
    return p;
}
}  // namespace

TEST_CASE("the worked example as two splits merges to the one-pass (m, l)") {
    const std::vector<double> a = {1.4, 3.9, 0.7, 2.2}, b = {4.6, 1.1, 3.1, 0.3};
    std::vector<double> all = a;
    all.insert(all.end(), b.begin(), b.end());
    const SoftmaxPartial pa = softmax_partial(a), pb = softmax_partial(b);
    // by hand: split 1 has max 3.9 and sum e^-2.5 + 1 + e^-3.2 + e^-1.7; split 2 max 4.6
    CHECK(pa.m == 3.9);
    CHECK(pa.l == doctest::Approx(std::exp(-2.5) + 1 + std::exp(-3.2) + std::exp(-1.7)).epsilon(1e-15));
    CHECK(pb.m == 4.6);
    CHECK(pb.l == doctest::Approx(1 + std::exp(-3.5) + std::exp(-1.5) + std::exp(-4.3)).epsilon(1e-15));
    const SoftmaxPartial merged = merge_partials(pa, pb), once = softmax_partial(all);
    CHECK(merged.m == once.m);
    CHECK(merged.m == 4.6);
    CHECK(merged.l == doctest::Approx(once.l).epsilon(1e-15));
    CHECK(std::round(merged.l * 1e4) / 1e4 == doctest::Approx(1.9152));  // the seeds' running sum
    // the order of the merge does not matter, nor an empty split
    CHECK(merge_partials(pb, pa).l == doctest::Approx(once.l).epsilon(1e-15));
    CHECK(merge_partials(SoftmaxPartial{}, once).l == once.l);
    CHECK(merged.lse() == doctest::Approx(once.lse()).epsilon(1e-15));
}

TEST_CASE("the worked example's two blocks as two splits (lesson 4's values): merged output equals softmax times V") {
    const std::vector<double> s = {1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3};
    const std::vector<std::vector<double>> v = {{0, 1}, {1, 0}, {2, 1}, {1, 2}, {3, 2}, {0, 3}, {2, 2}, {1, 1}};
    const RowSplitMerge r = split_merge_row(s, v, 4);
    REQUIRE(r.splits.size() == 2);
    // Independently: the plain softmax over the whole row, then P V.
    double mx = 4.6, sum = 0;
    for (double x : s) sum += std::exp(x - mx);
    double o0 = 0, o1 = 0;
    for (size_t j = 0; j < s.size(); ++j) {
        o0 += std::exp(s[j] - mx) / sum * v[j][0];
        o1 += std::exp(s[j] - mx) / sum * v[j][1];
    }
    CHECK(r.out[0] == doctest::Approx(o0).epsilon(1e-14));
    CHECK(r.out[1] == doctest::Approx(o1).epsilon(1e-14));
    CHECK(r.lse == doctest::Approx(mx + std::log(sum)).epsilon(1e-15));
    // each split alone: split 1 softmax over its own four keys (max 3.9), weights add up to 1
    double l1 = 0, a0 = 0;
    for (size_t j = 0; j < 4; ++j) l1 += std::exp(s[j] - 3.9);
    for (size_t j = 0; j < 4; ++j) a0 += std::exp(s[j] - 3.9) / l1 * v[j][0];
    CHECK(r.splits[0].out[0] == doctest::Approx(a0).epsilon(1e-14));
    CHECK(r.splits[0].lse == doctest::Approx(3.9 + std::log(l1)).epsilon(1e-15));
    CHECK(r.splits[0].weight + r.splits[1].weight == doctest::Approx(1).epsilon(1e-15));
    CHECK(r.splits[0].weight == doctest::Approx(l1 * std::exp(3.9 - mx) / sum).epsilon(1e-14));
    // three uneven splits (3, 3, 2) give the same output
    const RowSplitMerge r3 = split_merge_row(s, v, 3);
    REQUIRE(r3.splits.size() == 3);
    CHECK(r3.splits[2].count == 2);
    CHECK(r3.out[0] == doctest::Approx(o0).epsilon(1e-14));
    CHECK_THROWS_AS(split_merge_row(s, v, 0), Error);
    CHECK_THROWS_AS(split_merge_row(s, {{1, 0}}, 4), Error);
}

TEST_CASE("split and merge equal the float64 reference (GQA, MQA, MHA; several splits; odd L)") {
    struct Case {
        int64_t b, hq, hkv, qlen, L, d;
    };
    for (const Case c : {Case{1, 8, 2, 1, 1, 16}, Case{1, 8, 2, 1, 7, 16}, Case{2, 4, 1, 1, 130, 32},
                         Case{1, 4, 4, 3, 257, 64}, Case{1, 32, 8, 1, 1000, 128}, Case{1, 6, 3, 2, 65, 8}})
        for (DType dt : {DType::bf16, DType::fp16, DType::fp32})
            for (int64_t splits : {1, 2, 3, 7, 64}) {
                const DecodeProblem p = make(c.b, c.hq, c.hkv, c.qlen, c.L, c.d, dt);
                CAPTURE(c.L);
                CAPTURE(c.qlen);
                CAPTURE(splits);
                const DecodeInputs in = generate_decode_inputs(p);
                std::vector<double> lse_ref, lse;
                const TensorD ref = decode_reference(p, in, &lse_ref);
                const TensorF got = decode_split_merge(p, in, splits, 16, &lse);
                const ErrorStats e = validate(got, ref, dt);
                CHECK(e.nonfinite == 0);
                // float32 arithmetic, output rounded once to the storage type
                CHECK(e.rel_frobenius < (dt == DType::bf16 ? 8e-3 : dt == DType::fp16 ? 1e-3 : 1e-5));
                for (size_t k = 0; k < lse.size(); ++k) CHECK(lse[k] == doctest::Approx(lse_ref[k]).epsilon(1e-5));
            }
}

TEST_CASE("the reference on a decode shape equals attention_reference with the heads repeated") {
    // MHA with q_len = L: decoding every position is plain causal attention
    const DecodeProblem p = make(1, 2, 2, 9, 9, 8, DType::fp32);
    const DecodeInputs in = generate_decode_inputs(p);
    Problem full = p.kv_shape();
    full.causal = true;
    TensorF Q = in.Q;  // (1, 2, 9, 8): same shape as K here
    const TensorD a = attention_reference(full, Q, in.K, in.V);
    const TensorD b = decode_reference(p, in);
    for (int64_t k = 0; k < a.size(); ++k)
        CHECK(a.data[size_t(k)] == doctest::Approx(b.data[size_t(k)]).epsilon(1e-12));
}

TEST_CASE("decode bytes: K and V once per KV head, partials and merge as counted by hand") {
    const Machine& m = find_machine("H200");
    for (const int64_t L : {1, 100, 32768, 131072}) {
        const DecodeProblem p = make(1, 32, 8, 1, L, 128, DType::bf16);
        const DecodeResult r = simulate_decode(p, m, DecodeConfig{});
        const int64_t S = r.split.splits, e = 2;
        CAPTURE(L);
        CHECK(r.kv_read_bytes == 2 * 1 * 8 * L * 128 * e);        // K and V of each KV head, once
        CHECK(r.kv_bytes_per_query_head == 4 * r.kv_read_bytes);  // 32/8 query heads each
        CHECK(r.q_read_bytes == 8 * S * 4 * 128 * e);             // each block reads its group's Q
        if (S > 1) {
            CHECK(r.partial_write_bytes == 8 * S * 4 * (128 * 4 + 4));  // O_s fp32 + LSE_s per query head
            CHECK(r.merge_read_bytes == r.partial_write_bytes);         // read back once by the merge
        } else {
            CHECK(r.partial_write_bytes == 0);
            CHECK(r.merge_read_bytes == 0);
        }
        CHECK(r.o_write_bytes == 32 * 128 * e);
        CHECK(r.total_s > 0);
    }
}

TEST_CASE("a fused merge moves the same bytes with one launch fewer, and only up to its split limit") {
    const Machine& m = find_machine("H200");
    const DecodeProblem p = make(1, 32, 8, 1, 32768, 128, DType::bf16);  // 32 splits (below)
    const DecodeConfig sep;                                              // the merge as a second kernel
    DecodeConfig fused;
    fused.fused_merge_max_splits = 1024;
    const DecodeResult a = simulate_decode(p, m, sep), b = simulate_decode(p, m, fused);
    REQUIRE(a.split.splits == 32);
    CHECK_FALSE(a.merge_fused);
    CHECK(b.merge_fused);
    // 8 KV heads x 32 splits x 4 query heads x (128 x 4 + 4) bytes written, and read back once
    CHECK(b.partial_write_bytes == 8 * 32 * 4 * 516);
    CHECK(b.merge_read_bytes == b.partial_write_bytes);
    CHECK(b.total_bytes() == a.total_bytes());
    CHECK(a.launch_s == doctest::Approx(2 * 3e-6));
    CHECK(b.launch_s == doctest::Approx(3e-6));
    CHECK(a.total_s - b.total_s == doctest::Approx(3e-6));
    // more splits than the limit: a separate merge again; one split: no merge at all
    fused.fused_merge_max_splits = 31;
    CHECK_FALSE(simulate_decode(p, m, fused).merge_fused);
    fused.fused_merge_max_splits = 1024;
    const DecodeResult one = simulate_decode(make(64, 32, 8, 1, 8192, 128, DType::bf16), m, fused);
    CHECK(one.split.splits == 1);
    CHECK_FALSE(one.merge_fused);
    CHECK(one.launch_s == doctest::Approx(3e-6));
    fused.fused_merge_max_splits = -1;
    CHECK_THROWS_AS(simulate_decode(p, m, fused), Error);
}

TEST_CASE("the split count fills the SMs, keeps splits long enough, and says why") {
    const Machine& m = find_machine("H200");  // 132 SMs
    DecodeConfig c;                           // 64-key tiles, >= 4 tiles a split, 2 blocks per SM
    // B=1, H_kv=8: 8 blocks; 264 wanted -> 33 splits; 512 tiles / 33 = 16 tiles a split -> 32 splits
    DecodeSplit s = choose_splits(make(1, 32, 8, 1, 32768, 128, DType::bf16), m, c);
    CHECK(s.splits == 32);
    CHECK(s.tiles_per_split == 16);
    CHECK(s.blocks == 256);
    CHECK(s.why.find("264") != std::string::npos);
    // B=8, H_kv=8: 64 blocks; 264 wanted -> 5 splits = 320 blocks, a second wave; 4 splits = 256
    // blocks fit one wave of 264 slots, 97% busy >= 90%: 4 splits
    s = choose_splits(make(8, 32, 8, 1, 32768, 128, DType::bf16), m, c);
    CHECK(s.splits == 4);
    CHECK(s.blocks == 256);
    CHECK(s.why.find("97%") != std::string::npos);
    CHECK(s.why.find("one wave") != std::string::npos);
    // B=7: 56 blocks; 4 splits = 224 blocks = 85% of one wave (< 90%), so whole waves: 5 splits =
    // 280 of 528 slots (53%) ... 9 splits = 504 of 528 (95%) >= 90%: 9 splits
    s = choose_splits(make(7, 32, 8, 1, 32768, 128, DType::bf16), m, c);
    CHECK(s.splits == 9);
    CHECK(s.blocks == 504);
    CHECK(s.why.find("53%") != std::string::npos);
    CHECK(s.why.find("95%") != std::string::npos);
    // B=64: 512 blocks already fill 264 slots: no split, no merge
    s = choose_splits(make(64, 32, 8, 1, 8192, 128, DType::bf16), m, c);
    CHECK(s.splits == 1);
    // a short cache: 130 keys = 3 tiles < 2 x 4: one split
    s = choose_splits(make(1, 32, 8, 1, 130, 128, DType::bf16), m, c);
    CHECK(s.splits == 1);
    // L = 1000: 16 tiles allow 4 splits of 4 tiles
    s = choose_splits(make(1, 32, 8, 1, 1000, 128, DType::bf16), m, c);
    CHECK(s.splits == 4);
    // every key in exactly one split
    for (int64_t L : {1, 63, 64, 65, 4097, 100000}) {
        s = choose_splits(make(1, 32, 8, 1, L, 128, DType::bf16), m, c);
        CHECK((s.splits - 1) * s.keys_per_split < L);
        CHECK(s.splits * s.keys_per_split >= L);
    }
}

TEST_CASE("decode refuses bad shapes with a message") {
    const Machine& m = find_machine("H200");
    CHECK_THROWS_WITH_AS(simulate_decode(make(1, 32, 5, 1, 100, 128, DType::bf16), m, {}),
                         doctest::Contains("must divide"), Error);
    CHECK_THROWS_AS(simulate_decode(make(1, 32, 8, 1, 0, 128, DType::bf16), m, {}), Error);
    CHECK_THROWS_AS(simulate_decode(make(1, 32, 8, 5, 4, 128, DType::bf16), m, {}), Error);
    DecodeConfig c;
    c.splits = -1;
    CHECK_THROWS_AS(simulate_decode(make(1, 32, 8, 1, 4, 128, DType::bf16), m, c), Error);
    // a cache past what int64 bytes count is refused (the CLI saturates an out-of-range --batch)
    CHECK_THROWS_WITH_AS(
        simulate_decode(make(std::numeric_limits<int64_t>::max(), 32, 8, 1, 32768, 128, DType::bf16), m, {}),
        doctest::Contains("above what flashsim counts"), Error);
}

TEST_CASE("decode: the bytes of B sequences are B times one sequence's, and a huge batch is counted at once") {
    // every (sequence, KV head) block moves the same bytes, so the counts scale exactly with B;
    // a batch of 10^8 (3.2 billion query heads) comes back without walking each one
    const Machine& m = find_machine("H200");
    DecodeConfig c;
    c.splits = 4;
    const DecodeResult one = simulate_decode(make(1, 32, 8, 1, 32768, 128, DType::bf16), m, c);
    const DecodeResult many = simulate_decode(make(100000000, 32, 8, 1, 32768, 128, DType::bf16), m, c);
    CHECK(many.kv_read_bytes == one.kv_read_bytes * 100000000);
    CHECK(many.partial_write_bytes == one.partial_write_bytes * 100000000);
    CHECK(many.merge_read_bytes == one.merge_read_bytes * 100000000);
    CHECK(many.o_write_bytes == one.o_write_bytes * 100000000);
    // one sequence by hand: K and V, 32768 keys x 128 x 2 bytes each, for each of 8 KV heads
    CHECK(one.kv_read_bytes == 2LL * 32768 * 128 * 2 * 8);
}
