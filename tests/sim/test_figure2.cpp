// Figure 2 of the paper (sim/figure2.cpp): the eager PyTorch sequence's bytes counted by hand from
// the shapes, the FA1 kernel's loops against closed forms written here, and the timing rules.
#include <doctest/doctest.h>

#include <cmath>
#include <string>

#include "sim/figure2.hpp"

using namespace sim;

namespace {
Problem small(int64_t b, int64_t h, int64_t n, int64_t d, bool causal = false) {
    Problem p;
    p.batch = b;
    p.heads = h;
    p.seq = n;
    p.head_dim = d;
    p.dtype = DType::fp16;
    p.causal = causal;
    return p;
}

KernelRates rates() {  // round numbers, so the expected times are easy to write down
    KernelRates r;
    r.hbm = 1e12;
    r.l2 = 2e12;
    r.smem = 10e12;
    r.mma_sync = r.wgmma = r.gemm = 100e12;
    r.exp = 1e12;
    r.issue = 8e12;
    r.source = "test";
    return r;
}

Machine machine(int sms) {
    Machine m;
    m.name = "test";
    m.sm_count = sms;
    return m;
}

int64_t read_of(const Fig2Column& c, const std::string& tensor, int pass) {
    int64_t s = 0;
    for (const auto& k : c.kernels)
        if (k.pass == pass)
            if (const auto* t = k.find(tensor)) s += t->read;
    return s;
}
int64_t written_of(const Fig2Column& c, const std::string& tensor, int pass) {
    int64_t s = 0;
    for (const auto& k : c.kernels)
        if (k.pass == pass)
            if (const auto* t = k.find(tensor)) s += t->written;
    return s;
}
}  // namespace

TEST_CASE(
    "eager attention as HuggingFace's GPT-2 runs it: every op reads and writes its tensors in HBM, counted by hand") {
    const Problem p = small(2, 3, 40, 8);
    const int64_t BH = 6, e = 2, NN = 40 * 40, Nd = 40 * 8;
    const Fig2Column c = eager_attention(p, rates(), hf_gpt2_eager());
    // Forward, per head, in N x N tensors of e bytes: S = QK^T writes 1; the scale reads 1, writes 1;
    // the where reads 1, writes 1 (its bool causal buffer, N^2 bytes, once for all heads); softmax
    // reads 1, writes 1; dropout reads 1, writes 1 and a bool mask (N^2 bytes); O = P V reads 1.
    // That is 10 N^2 e + N^2 a head. Q, K, V read once each and O written: 4 N d e.
    const int64_t fwd = BH * (10 * NN * e + NN + 4 * Nd * e) + NN;
    // Backward: dP_d = dO V^T writes 1; dV = P_d^T dO reads 1; dropout's backward reads 1 and the
    // mask, writes 1; softmax's backward in PyTorch's two kernels: dPP = dP * P reads 2, writes 1,
    // then the row kernel reads dPP and P, writes dS (6 in all); the where reads 1, writes 1 (the
    // causal buffer once); the scale reads 1, writes 1; dQ = dS K and dK = dS^T Q read dS once each:
    // 16 N^2 e + N^2 a head. Nd tensors: dO twice, V, K, Q read, dQ, dK, dV written: 8 N d e (the
    // scale is its own op here, so no scaling of dQ, dK after their products).
    const int64_t bwd = BH * (16 * NN * e + NN + 8 * Nd * e) + NN;
    int64_t got_fwd = 0, got_bwd = 0;
    for (const auto& k : c.kernels) (k.pass ? got_bwd : got_fwd) += k.bytes();
    CHECK(got_fwd == fwd);
    CHECK(got_bwd == bwd);
    CHECK(c.hbm_bytes() == fwd + bwd);
    CHECK(c.kernels.size() == 15);  // 6 forward ops, 9 backward kernels
    // Every N x N intermediate written is read back later: what the sequence moves through HBM.
    for (const char* t : {"S", "S_scaled", "S_masked", "P_d", "dP_d", "dP", "dPP", "dS_masked", "dS_scaled"})
        CHECK(written_of(c, t, 0) + written_of(c, t, 1) == BH * NN * e);
    CHECK(read_of(c, "dS", 1) == 2 * BH * NN * e);                      // by the dQ and the dK products
    CHECK(read_of(c, "P", 0) + read_of(c, "P", 1) == 3 * BH * NN * e);  // dropout, softmax's two backward kernels
    // Six N x N x d products of 2 FLOPs a multiply-add.
    CHECK(c.matmul_flops() == doctest::Approx(6.0 * 2 * BH * NN * 8));

    // Left out ops take their kernels (and bytes) with them.
    EagerOptions o;
    o.dropout = false;
    o.separate_scale = false;
    o.mask = EagerMask::none;
    const Fig2Column bare = eager_attention(p, rates(), o);
    // QK^T, softmax, PV; dP, dV, the softmax backward's two kernels, dQ and its scaling, dK and its
    CHECK(bare.kernels.size() == 11);
    // forward 1 + 2 + 1 = 4, backward 1 + 1 + 3 + 3 + 1 + 1 = 10 N x N passes; N x d: the 12 of
    // the products and 4 of the two scalings (each reads and writes one)
    CHECK(bare.hbm_bytes() == BH * (14 * NN * e + 16 * Nd * e));
    o.softmax_backward_kernels = 1;  // one fused kernel: three passes fewer
    CHECK(eager_attention(p, rates(), o).hbm_bytes() == BH * (11 * NN * e + 16 * Nd * e));
    o.softmax_backward_kernels = 3;
    CHECK_THROWS_AS(eager_attention(p, rates(), o), Error);
}

TEST_CASE(
    "eager attention as the paper's authors' baseline runs it: the scale in the GEMM, an added mask with no backward") {
    const Problem p = small(2, 3, 40, 8);
    const int64_t BH = 6, e = 2, NN = 40 * 40, Nd = 40 * 8;
    const Fig2Column c = eager_attention(p, rates());  // the default
    // Forward, per head: S = scale Q K^T writes 1; S + M reads 1, writes 1 (M: an N x N tensor of
    // the dtype, once for all heads); softmax 2; dropout reads 1, writes 1 and the bool mask (N^2
    // bytes); O = P V reads 1: 8 N^2 e + N^2, and 4 N d e.
    const int64_t fwd = BH * (8 * NN * e + NN + 4 * Nd * e) + NN * e;
    // Backward: the sum hands its gradient to S as it is, so the kernels left are dP_d (writes 1),
    // dV (reads 1), dropout's backward (reads 1 and the mask, writes 1), softmax's backward (3 + 3:
    // PyTorch's product kernel and row kernel), dQ and dK (read dS once each): 12 N^2 e + N^2; N x d:
    // the 8 of the products and, since the scale was the forward GEMM's alpha, autograd's scaling of
    // dQ and of dK after their products (each reads and writes one): 12 N d e.
    const int64_t bwd = BH * (12 * NN * e + NN + 12 * Nd * e);
    int64_t got_fwd = 0, got_bwd = 0;
    for (const auto& k : c.kernels) (k.pass ? got_bwd : got_fwd) += k.bytes();
    CHECK(got_fwd == fwd);
    CHECK(got_bwd == bwd);
    CHECK(c.kernels.size() == 14);  // 5 forward, 9 backward
    CHECK(read_of(c, "dS", 1) == 2 * BH * NN * e);
    CHECK(written_of(c, "dS", 1) == BH * NN * e);  // softmax's backward writes dS itself
    CHECK(written_of(c, "S_masked", 0) == BH * NN * e);
    CHECK(read_of(c, "causal_mask", 0) == NN * e);
    CHECK(read_of(c, "causal_mask", 1) == 0);
    // The same six products; no separate scale or where, so fewer other FLOPs than HuggingFace's.
    CHECK(c.matmul_flops() == doctest::Approx(6.0 * 2 * BH * NN * 8));
    CHECK(c.flops() < eager_attention(p, rates(), hf_gpt2_eager()).flops());
}

TEST_CASE(
    "eager attention at the paper's shape: 18 N x N round trips a head, every kernel bound by HBM on the A100 preset") {
    const Problem p = figure2_problem();
    const Machine& m = find_machine("A100-40GB");
    const KernelRates r = datasheet_rates(m);
    const int64_t BH = 1024, NN = int64_t{1024} * 1024, Nd = 1024 * 64, e = 2;
    const Fig2Column c = eager_attention(p, r);
    // 20 N x N tensors of 2 bytes and the 1-byte dropout mask twice, 16 N x d tensors, and the fp16
    // causal mask once: 47.25 GB (what ncu counted on an H100 running these kernels: 47.05 GB,
    // results/h100/eager_authors.json). With one fused softmax backward kernel, three N x N
    // passes fewer: 40.80 GB, the count the paper's 40.3 GB agrees with (1.01).
    CHECK(c.hbm_bytes() == BH * (20 * NN * e + 2 * NN + 16 * Nd * e) + NN * e);
    EagerOptions fused;
    fused.softmax_backward_kernels = 1;
    CHECK(eager_attention(p, r, fused).hbm_bytes() == BH * (17 * NN * e + 2 * NN + 16 * Nd * e) + NN * e);
    const Fig2Column hf = eager_attention(p, r, hf_gpt2_eager());
    CHECK(hf.hbm_bytes() == BH * (26 * NN * e + 2 * NN + 12 * Nd * e) + 2 * NN);
    // A GEMM with K = 64 writes 2^31 bytes (1.4 ms at 1,555 GB/s) and does 2^37 FLOPs (0.44 ms at
    // 312 TFLOP/s): every kernel is bound by its bytes, so the time is the bytes over the rate.
    for (const auto* col : {&c, &hf}) {
        for (const auto& k : col->kernels) CHECK(k.bound == "hbm");
        CHECK(col->seconds() == doctest::Approx(static_cast<double>(col->hbm_bytes()) / r.hbm).epsilon(1e-12));
    }
}

TEST_CASE("FA1 loops: each tensor's bytes against the closed forms of the kernel's loops") {
    const Problem p = small(2, 2, 1024, 64);
    const int64_t BH = 4, N = 1024, d = 64, e = 2, acc = 4, Tc = 4, Nd = N * d;
    const Fig2Column c = fa1_attention(p, machine(8), rates());
    REQUIRE(c.kernels.size() == 2);
    CHECK(fa1_block_cols(p) == 256);
    // Forward: K_j, V_j once each; Q_i once per key block; the fp32 partial output read at every key
    // block but the first and written at every one but the last (then O in fp16); one fp32
    // statistic a row read T_c - 1 times and written T_c times.
    CHECK(read_of(c, "K", 0) == BH * Nd * e);
    CHECK(read_of(c, "V", 0) == BH * Nd * e);
    CHECK(read_of(c, "Q", 0) == BH * Tc * Nd * e);
    CHECK(read_of(c, "o_tmp", 0) == BH * (Tc - 1) * Nd * acc);
    CHECK(written_of(c, "o_tmp", 0) == BH * (Tc - 1) * Nd * acc);
    CHECK(written_of(c, "O", 0) == BH * Nd * e);
    CHECK(read_of(c, "softmax_lse", 0) == BH * (Tc - 1) * N * 4);
    CHECK(written_of(c, "softmax_lse", 0) == BH * Tc * N * 4);
    // Backward: Q_i and dO_i at every key block, O_i once (D_i = rowsum(dO_i o O_i) at the first),
    // dq_tmp as o_tmp above, dQ once, K, V read and dK, dV written once.
    CHECK(read_of(c, "Q", 1) == BH * Tc * Nd * e);
    CHECK(read_of(c, "dO", 1) == BH * Tc * Nd * e);
    CHECK(read_of(c, "O", 1) == BH * Nd * e);
    CHECK(read_of(c, "dq_tmp", 1) == BH * (Tc - 1) * Nd * acc);
    CHECK(written_of(c, "dq_tmp", 1) == BH * (Tc - 1) * Nd * acc);
    CHECK(written_of(c, "dQ", 1) == BH * Nd * e);
    CHECK(written_of(c, "dK", 1) == BH * Nd * e);
    CHECK(written_of(c, "dV", 1) == BH * Nd * e);
    CHECK(read_of(c, "softmax_d", 1) == BH * (Tc - 1) * N * 4);
    CHECK(written_of(c, "softmax_d", 1) == BH * N * 4);
    // The products: 4 N^2 d forward, 10 N^2 d backward (S recomputed): 14 against eager's 12.
    CHECK(c.kernels[0].matmul_flops == doctest::Approx(4.0 * BH * N * N * d));
    CHECK(c.kernels[1].matmul_flops == doctest::Approx(10.0 * BH * N * N * d));
    CHECK(c.kernels[0].exps == doctest::Approx(1.0 * BH * N * N));
}

TEST_CASE("FA1 at the paper's shape with 2-byte partial buffers: 33 N d elements a head, plus statistics") {
    // Counted in elements of 2 bytes: forward Q 4, K 1, V 1, o_tmp 3 + 3, O 1 = 13 N d; backward
    // K, V 2, Q 4, dO 4, O 1, dq_tmp 3 + 3, dQ 1, dK, dV 2 = 20 N d; the fp32 statistics add 28 N
    // bytes forward (lse: 3 reads, 4 writes) and 32 N backward (lse 4 reads, D 1 write, 3 reads).
    const Problem p = figure2_problem();
    Fa1Options o;
    o.accum_bytes = 2;
    const Fig2Column c = fa1_attention(p, find_machine("A100-40GB"), datasheet_rates(find_machine("A100-40GB")), o);
    const int64_t BH = 1024, N = 1024, d = 64;
    CHECK(c.hbm_bytes() == BH * (33 * N * d * 2 + 60 * N));
}

TEST_CASE("FA1 with a causal mask skips the query steps above the diagonal, and ragged edges still cover N") {
    // Key block j (256 keys) is seen by query rows from 256 j on: 64 - 16 j steps of 16 rows.
    const Problem p = small(1, 1, 1024, 64, true);
    const Fig2Column c = fa1_attention(p, machine(4), rates());
    CHECK(read_of(c, "Q", 0) == (64 + 48 + 32 + 16) * 16 * 64 * 2);
    CHECK(written_of(c, "O", 0) == 1024 * 64 * 2);  // every row finishes once
    CHECK(c.kernels[0].matmul_flops == doctest::Approx(4.0 * (64 + 48 + 32 + 16) * 16 * 256 * 64));

    const Problem q = small(1, 1, 300, 64);  // 300 keys: blocks of 256 and 44; 19 steps, the last of 12 rows
    const Fig2Column r = fa1_attention(q, machine(4), rates());
    CHECK(read_of(r, "Q", 0) == 2 * 300 * 64 * 2);
    CHECK(read_of(r, "K", 0) == 300 * 64 * 2);
    CHECK(read_of(r, "o_tmp", 0) == 300 * 64 * 4);
    CHECK(r.kernels[0].matmul_flops == doctest::Approx(4.0 * 300 * 300 * 64));
}

TEST_CASE("FA1 timing: blocks in waves, HBM-bound with small key blocks, compute-bound with large ones") {
    const Problem p = figure2_problem();
    const Machine& m = find_machine("A100-40GB");
    const Figure2 f = figure2(p, m, datasheet_rates(m));
    REQUIRE(f.sweep.size() == 4);
    for (size_t i = 1; i < f.sweep.size(); ++i) {
        CHECK(f.sweep[i].hbm_bytes < f.sweep[i - 1].hbm_bytes);  // fewer passes over Q and o_tmp
        CHECK(f.sweep[i].seconds <= f.sweep[i - 1].seconds * (1 + 1e-12));
    }
    CHECK(f.sweep.front().bound == "hbm");
    CHECK(f.sweep.back().bound == "compute");
    // Past the point where the steps become compute-bound, halving the HBM bytes moves the time by
    // less than 5%; before it, by more than 20% (the paper's "up to a point").
    CHECK(f.sweep[3].seconds > 0.95 * f.sweep[2].seconds);
    CHECK(f.sweep[1].seconds < 0.8 * f.sweep[0].seconds);

    // One head on one SM, a single key block: no waves, no overlap to speak of; the time is the K, V
    // load plus each step's larger of arithmetic and bytes. Counted by hand for N = 256, d = 64, fp16
    // (2 bytes), B_c = 256 (FA1's key block for d <= 64), B_r = 16: one key block, 16 query steps.
    const Problem one = small(1, 1, 256, 64);
    Fa1Options o;
    o.backward = false;
    o.fwd_ctas_per_sm = 1;
    const Fig2Column c = fa1_attention(one, machine(1), rates(), o);
    // One step, 16 query rows against 256 keys (4,096 scores):
    //   products: S = Q_i K^T and O_i = P V, each 2 x 16 x 256 x 64 = 524,288 FLOPs: 1,048,576.
    //   shared memory: S is split over 4 warps of 64 keys each; a warp reads its 16 x 64 Q_i tile and
    //     its 64 x 64 slice of K: 4 x (16 + 64) x 64 x 2 = 40,960 bytes. P V keeps P in registers and
    //     reads all of V_j once: 256 x 64 x 2 = 32,768 bytes. 73,728 bytes in all.
    //   exponentials: one a score, 4,096.
    //   other work: scale, max, subtract, sum and dropout on each score (5 x 4,096 = 20,480), and the
    //     rescale of O_i's 16 x 64 (2 x 1,024 = 2,048): 22,528.
    //   HBM: Q_i in (2,048 bytes), O_i out (2,048) and one fp32 statistic a row out (64): 4,160 bytes;
    //     with a single key block there is no o_tmp to read or write.
    // At the test rates (tensor 100e12, shared memory 10e12 B/s, exp 1e12, issue 8e12, HBM 1e12 B/s):
    const double step_arith = 1048576 / 100e12 + 73728 / 10e12 + 4096 / 1e12 + 22528 / 8e12;  // 24.77 ns
    const double step_bytes = 4160 / 1e12;                                                    // 4.16 ns
    const double kv = 2.0 * 256 * 64 * 2 / 1e12;  // K_j and V_j once, 65,536 bytes
    const double expect = kv + 16 * std::max(step_arith, step_bytes);
    // Both sides add the same terms in a different order: agreement to rounding.
    CHECK(c.seconds() == doctest::Approx(expect).epsilon(1e-12));
    CHECK(c.kernels.front().bound == "compute");  // 24.77 ns of arithmetic against 4.16 ns of bytes a step
}

TEST_CASE("figure 2: the paper's figures are stored as the paper's, and the columns keep their order") {
    const auto& paper = paper_figure2();
    CHECK(paper.standard_hbm_gb > paper.flash_hbm_gb);
    CHECK(paper.flash_gflops > paper.standard_gflops);  // recomputation: more FLOPs, fewer bytes
    const Machine& m = find_machine("A100-40GB");
    const Figure2 f = figure2(figure2_problem(), m, datasheet_rates(m));
    // The model keeps the paper's ordering: FA1 does more FLOPs, moves fewer bytes and runs faster.
    CHECK(f.flash.flops() > f.standard.flops());
    CHECK(f.flash.hbm_bytes() * 5 < f.standard.hbm_bytes());
    CHECK(f.flash.seconds() * 2 < f.standard.seconds());
    CHECK(f.flash.matmul_flops() / f.standard.matmul_flops() == doctest::Approx(14.0 / 12.0));
}

TEST_CASE(
    "eager kernels at measured fractions of the HBM rate: each named kernel slowed by its own, the rest at the rate") {
    const Problem p = small(2, 3, 40, 8);
    const KernelRates r = rates();  // 1e12 B/s; the products and exponentials are far below their rates here
    const Fig2Column plain = eager_attention(p, r);
    EagerOptions o;
    o.hbm_fraction["P = softmax(S)"] = 0.5;
    o.hbm_fraction["dK = dS^T Q (GEMM)"] = 0.8;
    o.hbm_fraction_source = "test";
    const Fig2Column c = eager_attention(p, r, o);
    REQUIRE(c.kernels.size() == plain.kernels.size());
    for (size_t i = 0; i < c.kernels.size(); ++i) {
        const auto& k = c.kernels[i];
        const double f = k.name == "P = softmax(S)" ? 0.5 : k.name == "dK = dS^T Q (GEMM)" ? 0.8 : 1.0;
        CHECK(k.hbm_fraction == f);
        CHECK(k.bytes() == plain.kernels[i].bytes());  // the bytes do not change, only their rate
        CHECK(k.seconds == doctest::Approx(static_cast<double>(k.bytes()) / (1e12 * f)).epsilon(1e-12));
    }
    CHECK(c.notes.back().find("12 kernel(s) not measured run at the rate") != std::string::npos);  // 14 - 2
    o.hbm_fraction["P = softmax(S)"] = 0;
    CHECK_THROWS_AS(eager_attention(p, r, o), Error);
    o.hbm_fraction["P = softmax(S)"] = std::nan("");
    CHECK_THROWS_AS(eager_attention(p, r, o), Error);

    // figure2() hands the fractions to every eager program and keeps the rate-bound one as a variant
    EagerRates e;
    e.fraction["P = softmax(S)"] = 0.5;
    e.source = "test";
    const Machine& m = find_machine("A100-40GB");
    const Figure2 f = figure2(figure2_problem(), m, datasheet_rates(m), e);
    const Figure2 g = figure2(figure2_problem(), m, datasheet_rates(m));
    CHECK(f.standard.hbm_bytes() == g.standard.hbm_bytes());
    const double softmax_bytes = 2.0 * 1024 * (1024.0 * 1024) * 2;  // reads S, writes P: 2 passes of BH N^2 e
    CHECK(f.standard.seconds() - g.standard.seconds() ==
          doctest::Approx(softmax_bytes / m.hbm_bandwidth).epsilon(1e-9));  // twice the time: one more at the rate
    CHECK(f.variants.size() == g.variants.size() + 1);
    CHECK(f.variants.back().label == "standard with every kernel at the HBM rate");
    CHECK(f.variants.back().seconds == doctest::Approx(g.standard.seconds()));
}
