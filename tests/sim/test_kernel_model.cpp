// tests/sim/test_kernel_model.cpp — the kernel model (sim/kernel_model.hpp). Each expectation is
// derived here from the problem's shape and the rates the test chooses: with every rate but one
// made effectively infinite, the prediction must be that one resource's time, placed in waves.
#include <doctest/doctest.h>

#include <algorithm>
#include <cmath>
#include <string>

#include "sim/kernel_model.hpp"
#include "tests/sim/support.hpp"

using namespace sim;
using sim::test::shape;
using sim::test::with_heads;

namespace {

constexpr double kHuge = 1e30;  // a rate so large that its resource costs nothing

// Every rate effectively infinite and no launch cost; tests then make one resource finite.
KernelRates free_rates() {
    KernelRates r;
    r.hbm = r.l2 = r.smem = r.mma_sync = r.wgmma = r.gemm = r.exp = r.issue = kHuge;
    r.launch_s = 0;
    r.source = "test";
    return r;
}

Machine sms(int n) {
    Machine m = find_machine("H200");
    m.sm_count = n;
    return m;
}

}  // namespace

TEST_CASE("kernel model: the tensor-core time of a non-causal forward is 4 N^2 d B H FLOPs at the path's rate") {
    const Problem p = with_heads(shape(1024, 128), 2, 4);
    const double flops = 4.0 * 1024 * 1024 * 128 * 2 * 4;
    KernelRates r = free_rates();
    r.mma_sync = 600e12;
    r.wgmma = 900e12;
    const Machine m = find_machine("H200");
    const auto f2 = predict_kernel(p, kernel_profile("flash2", Pass::forward, 128), r, m);
    const auto f2h = predict_kernel(p, kernel_profile("flash2h", Pass::forward, 128), r, m);
    auto comp = [](const KernelPrediction& k, const char* name) {
        for (const auto& c : k.components)
            if (c.name == name) return c.seconds;
        FAIL("no component " << name);
        return 0.0;
    };
    CHECK(comp(f2, "tensor") == doctest::Approx(flops / 600e12).epsilon(1e-12));
    CHECK(comp(f2h, "tensor") == doctest::Approx(flops / 900e12).epsilon(1e-12));
    // the same algorithm on the faster instruction path is faster, by the rates' ratio when only
    // the tensor cores cost anything (flash2 also stages operands through shared memory: free here)
    CHECK(f2h.predicted_ms < f2.predicted_ms);
    CHECK(f2.bound == "tensor");
}

TEST_CASE("kernel model: equal blocks fill whole waves (133 blocks on 132 SMs take two)") {
    // flash2h forward: B_r = 128, one block an SM; N = 128 gives one block a head, one K/V tile.
    const int64_t n = 128, d = 64;
    KernelRates r = free_rates();
    r.wgmma = 500e12;
    const Machine m = sms(132);
    const auto k = kernel_profile("flash2h", Pass::forward, d);
    // one block's time alone on its SM: its FLOPs at one SM's share of the rate
    const double block_s = 4.0 * n * n * d / (500e12 / 132);
    const auto full = predict_kernel(with_heads(shape(n, d), 1, 132), k, r, m);
    CHECK(full.predicted_ms == doctest::Approx(block_s * 1e3).epsilon(1e-9));
    const auto one_more = predict_kernel(with_heads(shape(n, d), 1, 133), k, r, m);
    CHECK(one_more.predicted_ms == doctest::Approx(2 * block_s * 1e3).epsilon(1e-9));
    CHECK(one_more.waves == doctest::Approx(133.0 / 132.0));
}

TEST_CASE("kernel model: exponentials count on the exp unit, at least one per visited score") {
    const Problem p = with_heads(shape(512, 64), 1, 8);
    KernelRates r = free_rates();
    r.exp = 1e12;
    const auto k = predict_kernel(p, kernel_profile("flash2h", Pass::forward, 64), r, find_machine("H200"));
    double t_exp = 0;
    for (const auto& c : k.components)
        if (c.name == "exp") t_exp = c.seconds;
    const double scores = 512.0 * 512 * 8;
    CHECK(t_exp >= scores / 1e12);
    CHECK(t_exp <= 1.1 * scores / 1e12);  // rescale factors: one per row per K/V block, B_c = 128 keys
    CHECK(k.bound == "exp");
}

TEST_CASE("kernel model: ping-pong hides the softmax that a serial schedule adds") {
    const Problem p = with_heads(shape(2048, 128), 1, 16);
    KernelRates r = free_rates();
    r.wgmma = 800e12;
    r.exp = 4e12;
    const Machine m = find_machine("H200");
    KernelProfile serial = kernel_profile("flash2h", Pass::forward, 128);
    serial.overlap = Overlap::copy_behind_compute;
    KernelProfile pp = serial;
    pp.overlap = Overlap::ping_pong;
    const auto a = predict_kernel(p, serial, r, m), b = predict_kernel(p, pp, r, m);
    double t_tensor = 0, t_exp = 0;
    for (const auto& c : a.components) {
        if (c.name == "tensor") t_tensor = c.seconds;
        if (c.name == "exp") t_exp = c.seconds;
    }
    // 16 heads x 16 query blocks = 256 equal blocks on 132 SMs: two waves of blocks each doing
    // 1/256 of the work at 1/132 of the rate, so 2 x 132 / 256 of the whole-GPU time.
    const double waves = 2.0 * 132 / 256;
    CHECK(a.predicted_ms == doctest::Approx((t_tensor + t_exp) * waves * 1e3).epsilon(1e-9));
    CHECK(b.predicted_ms == doctest::Approx(std::max(t_tensor, t_exp) * waves * 1e3).epsilon(1e-9));
}

TEST_CASE("kernel model: flash1 pays a launch per K/V block, plus its init and final cast") {
    const Problem p = shape(1024, 64);  // B_c = 256: T_c = 4 launches
    KernelRates r = free_rates();
    r.launch_s = 5e-6;
    const auto k = predict_kernel(p, kernel_profile("flash1", Pass::forward, 64), r, find_machine("H200"));
    CHECK(k.predicted_ms == doctest::Approx((4 + 2) * 5e-6 * 1e3).epsilon(1e-6));
    CHECK(k.bound == "launches");
}

TEST_CASE("kernel model: a backward pays a launch for its passes before and after the main kernel") {
    // Both backwards zero the fp32 accumulator in their D pass: that pass, the main kernel and the
    // dQ conversion (3). The forwards launch once. Only launches cost.
    KernelRates r = free_rates();
    r.launch_s = 5e-6;
    const Machine m = find_machine("H200");
    for (int64_t d : {64, 128}) {
        CAPTURE(d);
        CHECK(predict_kernel(shape(1024, d), kernel_profile("flash2", Pass::backward, d), r, m).predicted_ms ==
              doctest::Approx(3 * 5e-6 * 1e3).epsilon(1e-6));
        CHECK(predict_kernel(shape(1024, d), kernel_profile("flash2h", Pass::backward, d), r, m).predicted_ms ==
              doctest::Approx(3 * 5e-6 * 1e3).epsilon(1e-6));
        CHECK(predict_kernel(shape(1024, d), kernel_profile("flash2h", Pass::forward, d), r, m).predicted_ms ==
              doctest::Approx(5e-6 * 1e3).epsilon(1e-6));
    }
}

TEST_CASE("kernel model: standard's forward moves S and P through HBM twice each, kernel after kernel") {
    // S written by the first GEMM and read by the softmax, P written by it and read by the second
    // GEMM: 4 N^2 B H e bytes; Q, K, V read and O written: 4 N d B H e. With only HBM finite (and
    // launches), and no one-way rates measured (the copy rate bounds every kernel), that is the time.
    Problem p = with_heads(shape(2048, 64), 2, 8);
    p.dtype = DType::bf16;
    KernelRates r = free_rates();
    r.hbm = 2e12;
    r.launch_s = 1e-6;
    const auto k = predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, find_machine("H200"));
    const double bytes = (4.0 * 2048 * 2048 + 4.0 * 2048 * 64) * 16 * 2;
    CHECK(k.predicted_ms == doctest::Approx((bytes / 2e12 + 3 * 1e-6) * 1e3).epsilon(1e-9));
    CHECK_FALSE(k.uncertain);  // its kernels move their counted bytes near the ceilings (one-pass softmax)
}

TEST_CASE("kernel model: standard's causal softmax reads only the visible columns of S") {
    // cuda/standard.cu's softmax reads columns [0, n] of row n under the mask and writes the whole
    // row of P: S written N^2, read N (N + 1) / 2, P written and read N^2 a head; Q, K, V, O 4 N d.
    Problem p = with_heads(shape(2048, 64, true), 2, 8);
    p.dtype = DType::bf16;
    KernelRates r = free_rates();
    r.hbm = 2e12;
    const auto k = predict_kernel(p, kernel_profile("standard", Pass::forward, 64, true), r, find_machine("H200"));
    const double head = 2048.0 * 2048 * 2, visible = 2048.0 * 2049 / 2 * 2, nd = 2048.0 * 64 * 2;
    CHECK(k.predicted_ms == doctest::Approx(16 * (3 * head + visible + 4 * nd) / 2e12 * 1e3).epsilon(1e-9));
}

TEST_CASE("kernel model: standard's kernels are bounded by the one-way HBM rates where they are measured") {
    // A write stream slower than the copy: the GEMM that writes S (reads Q, K) and the softmax (reads
    // S, writes P) each take their written bytes at the write rate when that exceeds the copy's time
    // for both ways; the second GEMM (reads P and V, writes O) its reads at the read rate.
    Problem p = with_heads(shape(2048, 64), 2, 8);
    p.dtype = DType::bf16;
    KernelRates r = free_rates();
    r.hbm = 4e12;
    r.hbm_write = 1e12;
    r.hbm_read = 3e12;
    const double bh = 16, nn = bh * 2048.0 * 2048 * 2, nd = bh * 2048.0 * 64 * 2;
    const double gemm_s = std::max({2 * nd / 3e12, nn / 1e12, (2 * nd + nn) / 4e12});     // nn / 1e12
    const double softmax = std::max({nn / 3e12, nn / 1e12, 2 * nn / 4e12});               // nn / 1e12
    const double gemm_o = std::max({(nn + nd) / 3e12, nd / 1e12, (nn + 2 * nd) / 4e12});  // (nn + nd) / 3e12
    const auto k = predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, find_machine("H200"));
    CHECK(k.predicted_ms == doctest::Approx((gemm_s + softmax + gemm_o) * 1e3).epsilon(1e-9));
    // unmeasured one-way rates: the copy rate alone
    r.hbm_write = r.hbm_read = 0;
    const auto c = predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, find_machine("H200"));
    CHECK(c.predicted_ms == doctest::Approx((2 * nn + 2 * nn + 4 * nd) / 4e12 * 1e3).epsilon(1e-9));
}

TEST_CASE("kernel model: standard's S and dP are written at the library GEMM's own rate for their d") {
    // Everything free but HBM: the copy rate 4e12, reads and writes one way 4e12, and the GEMM of
    // depth 64 writing its N x N output at 1e12. Forward: S = Q K^T reads Q, K (2 nd) and writes S
    // (nn) at the GEMM's rate; the softmax reads S and writes P (both nn) and O = P V reads P and V
    // and writes O, neither at the GEMM's rate.
    Problem p = with_heads(shape(1024, 64), 1, 8);
    p.dtype = DType::bf16;
    KernelRates r = free_rates();
    r.hbm = r.hbm_read = r.hbm_write = 4e12;
    r.gemm_write_d64 = 1e12;
    r.gemm_write_d128 = 1e15;  // another d's rate must not be taken
    const double nn = 8 * 1024.0 * 1024 * 2, nd = 8 * 1024.0 * 64 * 2;
    const double s_gemm = nn / 1e12;       // > (2 nd + nn) / 4e12
    const double softmax = 2 * nn / 4e12;  // both ways at the copy rate
    const double o_gemm = (nn + 2 * nd) / 4e12;
    const auto f = predict_kernel(p, kernel_profile("standard", Pass::forward, 64), r, find_machine("H200"));
    CHECK(f.predicted_ms == doctest::Approx((s_gemm + softmax + o_gemm) * 1e3).epsilon(1e-9));
    // Backward: dP = dO V^T is the same call (reads dO, V; writes dP) at the GEMM's rate; dV, dQ, dK
    // read an N x N tensor and an N x d one and write N x d; dS reads P and dP and writes dS.
    const double dp_gemm = nn / 1e12, small_gemm = (nn + 2 * nd) / 4e12, ds = 3 * nn / 4e12;
    const auto b = predict_kernel(p, kernel_profile("standard", Pass::backward, 64), r, find_machine("H200"));
    CHECK(b.predicted_ms == doctest::Approx((dp_gemm + ds + 3 * small_gemm) * 1e3).epsilon(1e-9));
    // at d = 128 with no rate measured for it, the write-stream rate stands in
    r.gemm_write_d128 = 0;
    Problem q = with_heads(shape(1024, 128), 1, 8);
    q.dtype = DType::bf16;
    const double nd128 = 8 * 1024.0 * 128 * 2;
    const auto g = predict_kernel(q, kernel_profile("standard", Pass::forward, 128), r, find_machine("H200"));
    CHECK(g.predicted_ms == doctest::Approx(((nn + 2 * nd128) + 2 * nn + (nn + 2 * nd128)) / 4e12 * 1e3).epsilon(1e-9));
}

TEST_CASE(
    "kernel model: the deterministic backward's dQ atomics lie in series with each step, and it stays uncertain") {
    // flash2h backward, dQ in block order, N = 1024, B_r = 64, B_c = 128: 8 key blocks a head of 16
    // steps; 33 heads give 264 blocks, two full rounds of the 132 SMs' one block each. Everything free
    // but the atomics: a step adds 32 KiB of fp32 at either d (d = 64: each warpgroup a 64 x 64 part
    // over its own keys, two a step; d = 128: each half the columns, one 64 x 128 tile a step), at the
    // SM's 1/132 share of the measured rate: 2 rounds of 16 steps, and once the fill of the chain the
    // turns make of a head's 8 key blocks (the last starts 7 steps after the first): 39 steps.
    KernelRates r = free_rates();
    r.l2_red = 1e12;
    for (const int64_t d : {int64_t{64}, int64_t{128}}) {
        CAPTURE(d);
        KernelProfile k = kernel_profile("flash2h", Pass::backward, d);
        k.dq = DqAccumulation::ordered;
        const auto kp = predict_kernel(with_heads(shape(1024, d), 1, 33), k, r, find_machine("H200"), 64, 128);
        const double step_s = 32768 / (1e12 / 132);
        CHECK(kp.predicted_ms == doctest::Approx(39 * step_s * 1e3).epsilon(1e-6));
        CHECK(kp.uncertain);  // the fence's and the turn's round trips are not charged
        CHECK(kp.uncertain_why.find("32 KiB a step") != std::string::npos);
        CHECK(kp.uncertain_why.find("lower bound") != std::string::npos);
        // a measured fence adds its round trip once a step, in each of the 39
        KernelRates f = r;
        f.red_fence_s = 1e-6;
        const auto kf = predict_kernel(with_heads(shape(1024, d), 1, 33), k, f, find_machine("H200"), 64, 128);
        CHECK(kf.predicted_ms == doctest::Approx(39 * (step_s + 1e-6) * 1e3).epsilon(1e-6));
        CHECK(kf.uncertain_why.find("1.00 us, measured") != std::string::npos);
        CHECK(kf.uncertain_why.find("lower bound") != std::string::npos);
    }
}

TEST_CASE(
    "kernel model: flash1's round trip moves at the measured rate of its access pattern, and flash1 stays uncertain") {
    // N = 4096, d = 64: B_r = 128, B_c = 256, so 32 x 16 = 512 steps a head, 32 heads. A step reads
    // and writes O_i (128 x 64 fp32) and l_i, m_i (128 fp32 each): 2 (128 * 64 * 4 + 2 * 128 * 4) bytes.
    const Problem p = with_heads(shape(4096, 64), 2, 16);
    KernelRates r = free_rates();
    r.hbm_rmw_d64 = 1e11;  // everything else free: the round trip alone sets every step
    const double trip = 2.0 * (128 * 64 * 4 + 2 * 128 * 4), steps = 512.0 * 32;
    const auto k = predict_kernel(p, kernel_profile("flash1", Pass::forward, 64), r, find_machine("H200"));
    // A launch runs G = 132 / 32 = 4 blocks a head (128 blocks, one wave), each 8 of the 32 query
    // blocks, and each block pays one round trip before its first step (the model's fill) besides
    // its 8 steps: 9/8 of the steps' round trips, at the rate given.
    CHECK(k.predicted_ms == doctest::Approx(9.0 / 8 * steps * trip / 1e11 * 1e3).epsilon(1e-6));
    // the rate of d = 128's pattern is not d = 64's
    r.hbm_rmw_d64 = 0;
    r.hbm_rmw_d128 = 1e11;
    const auto free = predict_kernel(p, kernel_profile("flash1", Pass::forward, 64), r, find_machine("H200"));
    CHECK(free.predicted_ms < 1e-3 * k.predicted_ms);
    // uncertain either way (the softmax's overlap with other warps' products is not modelled); the
    // reason names the round trip's measured rate, or says it was not measured
    CHECK(k.uncertain);
    CHECK(k.uncertain_why.find("0.10 TB/s") != std::string::npos);
    CHECK(free.uncertain);
    CHECK(free.uncertain_why.find("not measured") != std::string::npos);
}

TEST_CASE("kernel model: the backward's dQ accumulation is a read and a write of the fp32 tile per step in L2") {
    // flash2 backward at d = 128, B_r = 64, N = 1024: T_r = 16 query blocks; B_c = 128 (the default)
    // gives T_c = 8 key blocks, 128 steps a head; B_c = 64 (FLASHSIM_FLASH2_BWD_BC=64) 16, 256 steps.
    const int64_t n = 1024, d = 128, heads = 4;
    KernelRates r = free_rates();
    r.l2 = 5e12;
    for (const int64_t bc : {int64_t{0}, int64_t{64}}) {
        CAPTURE(bc);
        const auto k = predict_kernel(with_heads(shape(n, d), 1, heads), kernel_profile("flash2", Pass::backward, d), r,
                                      find_machine("H200"), 0, bc);
        double t_l2 = -1;
        for (const auto& c : k.components)
            if (c.name == "l2") t_l2 = c.seconds;
        const double steps = 16.0 * (bc == 64 ? 16 : 8) * heads;
        CHECK(t_l2 == doctest::Approx(steps * 2 * 64 * d * 4 / 5e12).epsilon(1e-12));
        CHECK(k.uncertain);  // all of the step: the serial charge decides the time, and the model says so
        // the block the kernel runs: 16 key rows a warp; one block an SM at 128 keys, two at 64
        CHECK(k.profile.threads == (bc == 64 ? 128 : 256));
        CHECK(k.profile.ctas_per_sm == (bc == 64 ? 2 : 1));
    }
}

TEST_CASE("kernel model: refusals name what is wrong") {
    CHECK_THROWS_WITH_AS(kernel_profile("flash3", Pass::forward, 128), doctest::Contains("unknown kernel 'flash3'"),
                         Error);
    CHECK_THROWS_WITH_AS(kernel_profile("flash1", Pass::backward, 128), doctest::Contains("no backward"), Error);
    CHECK_THROWS_WITH_AS(kernel_profile("flash2", Pass::forward, 96), doctest::Contains("64 or 128"), Error);
    Problem f32 = shape(256, 64);
    f32.dtype = DType::fp32;
    CHECK_THROWS_WITH_AS(
        predict_kernel(f32, kernel_profile("flash2", Pass::forward, 64), free_rates(), find_machine("H200")),
        doctest::Contains("fp16 or bf16"), Error);
    KernelRates r = free_rates();
    r.wgmma = 0;
    CHECK_THROWS_WITH_AS(
        predict_kernel(shape(256, 64), kernel_profile("flash2h", Pass::forward, 64), r, find_machine("H200")),
        doctest::Contains("wgmma"), Error);
}

TEST_CASE(
    "kernel model: flash2h's backward sums a step's parts, its warpgroups in lock step (d = 128) or offset (d = 64)") {
    // N = 1024, B_c = 128: 8 key blocks, one head on 8 SMs (one wave; every rate below is the whole
    // GPU's, so 1/8 of it an SM). d = 128 (B_r = 64, 16 steps a key block), per step: 5 products of
    // 2 B_r B_c d FLOPs, B_r B_c = 8192 exponentials, stores of dS^T (128 x 64 x 2 bytes) and of the
    // dQ tiles (fp32, 32 KiB a step), 4 waits on wgmma groups. HBM, L2, the bulk reduction and fp32
    // issue free.
    KernelRates r = free_rates();
    r.wgmma = 8e12;  // 1e12 FLOP/s an SM
    r.exp = 8e9;     // 1e9 exponentials/s an SM
    r.smem = 8e10;   // 1e10 B/s an SM
    r.wgmma_wait_s = 1e-6;
    const Machine m = sms(8);
    const double stores = 128.0 * 64 * 2 + 32768, exp_s = 8192 / 1e9, st_s = stores / 1e10;
    {  // d = 128, lock step: everything in series
        const double tensor_s = 10.0 * 64 * 128 * 128 / 1e12;
        const auto k = predict_kernel(shape(1024, 128), kernel_profile("flash2h", Pass::backward, 128), r, m);
        CHECK(k.predicted_ms == doctest::Approx(16 * (tensor_s + exp_s + st_s + 4e-6) * 1e3).epsilon(1e-9));
        CHECK_FALSE(k.uncertain);
    }
    {  // d = 64, offset by half a step, B_r = 128: 8 steps a key block, each with 5 products of
        // 2 x 128 x 128 x 64 FLOPs, 16,384 exponentials, stores of dS^T (128 x 128 x 2 bytes) and of
        // the two warpgroups' 128 x 64 fp32 dQ parts, 5 waits (S^T, dP^T, dV and dK, the two dQ
        // halves). Measured on the H200, the offset hides nothing: all of it in series, as at d = 128
        // (10.5 + 16.4 + 9.8 + 5 = 41.7 us a step)
        const double tensor_s = 10.0 * 128 * 128 * 64 / 1e12, exp64 = 16384 / 1e9;
        const double st64 = (128.0 * 128 * 2 + 2 * 128 * 64 * 4) / 1e10;
        const auto prof = kernel_profile("flash2h", Pass::backward, 64);
        CHECK(prof.block_rows == 128);
        const auto k = predict_kernel(shape(1024, 64), prof, r, m);
        CHECK(k.predicted_ms == doctest::Approx(8 * (tensor_s + exp64 + st64 + 5e-6) * 1e3).epsilon(1e-9));
        CHECK_FALSE(k.uncertain);
        // a row run with B_r = 64 (16 steps): half the stores and the exponentials a step, as many waits
        const auto k64 = predict_kernel(shape(1024, 64), prof, r, m, 64, 0);
        CHECK(k64.predicted_ms ==
              doctest::Approx(16 * (tensor_s / 2 + exp64 / 2 + st64 / 2 + 5e-6) * 1e3).epsilon(1e-9));
        // the bulk reduction at 0.5e9 B/s an SM: the summed 128 x 64 fp32 tiles (32 KiB) a step, read
        // from a ring of 4 tiles, so only its rate bounds the step (65.5 us against the chain's 41.7)
        r.bulk_reduce = 4e9;
        const auto slow = predict_kernel(shape(1024, 64), prof, r, m);
        CHECK(slow.predicted_ms == doctest::Approx(8 * (32768 / 0.5e9) * 1e3).epsilon(1e-9));
        r.bulk_reduce = 8e9;
        // d = 128 reuses its tile every step: the reduction (16 KiB, one column half a warpgroup),
        // then the dQ product (a fifth of the products), the tile's stores and a wait, in series
        const double tensor128 = 10.0 * 64 * 128 * 128 / 1e12;
        const auto slow128 = predict_kernel(shape(1024, 128), kernel_profile("flash2h", Pass::backward, 128), r, m);
        const double red128 = 16384.0 * 2 / 1e9 + (tensor128 / 5 + 32768 / 1e10) + 1e-6;
        CHECK(slow128.predicted_ms ==
              doctest::Approx(16 * std::max(red128, tensor128 + exp_s + st_s + 4e-6) * 1e3).epsilon(1e-9));
        // the producer's copies of the next Q_i, dO_i (64 x 128 x 2 bytes each) and LSE_i, D_i (64 x 4
        // each), 33,280 bytes a step, share the SM's bulk-copy unit with the reduction but are not on
        // the tile's path: at 1e10 B/s an SM (3.3 us) they cost the step nothing (36.1 us of the unit's
        // work against the path's 39.1)...
        const double loads = 2.0 * 64 * 128 * 2 + 8.0 * 64;
        r.l2 = 8e10;
        const auto beside = predict_kernel(shape(1024, 128), kernel_profile("flash2h", Pass::backward, 128), r, m);
        CHECK(beside.predicted_ms == doctest::Approx(slow128.predicted_ms).epsilon(1e-9));
        // ...and at 1e9 B/s an SM (33.3 us) the unit's throughput, reduction plus loads, bounds the step
        r.l2 = 8e9;
        const auto busy_unit = predict_kernel(shape(1024, 128), kernel_profile("flash2h", Pass::backward, 128), r, m);
        CHECK(busy_unit.predicted_ms == doctest::Approx(16 * (16384.0 * 2 / 1e9 + loads / 1e9) * 1e3).epsilon(1e-9));
        r.l2 = kHuge;
    }
}

TEST_CASE(
    "kernel model: flash2h's backward is uncertain where its measured fixed cost a block would move it by a tenth") {
    // One head on 8 SMs, HBM and launches free: the model charges a block no fixed work at all, so all
    // of the 18.5 us measured on the H200 (a key block's cost besides its steps) is what it lacks.
    // N = 1024: 8 key blocks, one wave, 16 steps a block.
    KernelRates r = free_rates();
    r.wgmma = 8e13;
    r.exp = 8e10;
    r.smem = 8e11;
    r.wgmma_wait_s = 1e-7;
    const Machine m = sms(8);
    const auto prof = kernel_profile("flash2h", Pass::backward, 128);
    const auto short_walk = predict_kernel(shape(1024, 128), prof, r, m);
    const double t_short = short_walk.predicted_ms * 1e-3, share_short = 18.5e-6 / t_short;  // one wave
    REQUIRE(share_short > 0.10);
    CHECK(short_walk.uncertain);
    CHECK(short_walk.uncertain_why.find("short walks") != std::string::npos);
    CHECK(short_walk.uncertain_why.find("charges 0.0 us") != std::string::npos);
    const std::string pct = "would add " + std::to_string(static_cast<int>(std::lround(100 * share_short))) + "%";
    CHECK(short_walk.uncertain_why.find(pct) != std::string::npos);
    // N = 16384: 128 key blocks of 256 steps, 16 waves: the same 18.5 us a block is 16 x 18.5 us of the
    // whole, under a tenth of it, and the prediction stays certain
    const auto long_walk = predict_kernel(shape(16384, 128), prof, r, m);
    const double share_long = 16 * 18.5e-6 / (long_walk.predicted_ms * 1e-3);
    REQUIRE(share_long < 0.10);
    CHECK_FALSE(long_walk.uncertain);
    // d = 64 has its own measured figure, 10.1 us a block: N = 1024 is 8 key blocks of 8 steps (B_r =
    // 128), one wave, and the model charges no fixed work here either
    const auto d64 = predict_kernel(shape(1024, 64), kernel_profile("flash2h", Pass::backward, 64), r, m);
    const double share64 = 10.1e-6 / (d64.predicted_ms * 1e-3);
    REQUIRE(share64 > 0.10);
    CHECK(d64.uncertain);
    CHECK(d64.uncertain_why.find("10.1 us at d = 64") != std::string::npos);
    const std::string pct64 = "would add " + std::to_string(static_cast<int>(std::lround(100 * share64))) + "%";
    CHECK(d64.uncertain_why.find(pct64) != std::string::npos);
    // and at N = 16384 (16 waves of 128-step blocks) it is under a tenth: certain
    const auto d64_long = predict_kernel(shape(16384, 64), kernel_profile("flash2h", Pass::backward, 64), r, m);
    REQUIRE(16 * 10.1e-6 / (d64_long.predicted_ms * 1e-3) < 0.10);
    CHECK_FALSE(d64_long.uncertain);
}

TEST_CASE("kernel model: flash2h's forward grid follows the kernel's rule, and its static order places units in turn") {
    // cuda/flash2h.cu (grid_mode): the static order without a mask at any N; under the causal mask
    // while T_r = ceil(N / B_r) <= 95 at d = 128 (B_r = 128: N <= 12,160) and <= 22 at d = 64 (B_r =
    // 192: N <= 4,224); one block a tile beyond. Backward kernels have no such order.
    auto order = [](int64_t n, int64_t d, bool causal) {
        return grid_order(kernel_profile("flash2h", Pass::forward, d, causal), shape(n, d, causal));
    };
    CHECK(order(12160, 128, true) == GridOrder::static_units);
    CHECK(order(12161, 128, true) == GridOrder::launch);
    CHECK(order(4224, 64, true) == GridOrder::static_units);
    CHECK(order(4225, 64, true) == GridOrder::launch);
    CHECK(order(65536, 64, false) == GridOrder::static_units);
    CHECK(order(65536, 128, false) == GridOrder::static_units);
    CHECK(grid_order(kernel_profile("flash2h", Pass::backward, 128), shape(1024, 128)) == GridOrder::launch);
    CHECK(grid_order(kernel_profile("flash2", Pass::forward, 128), shape(1024, 128)) == GridOrder::launch);

    // 2 heads of N = 384 at d = 128, causal (B_r = B_c = 128): query block i walks i + 1 tiles. On two
    // SMs, only the tensor cores finite: in turn, slot 0 runs units 0 and 2 (blocks 2 and 0 of each
    // head, 4 tiles a unit), 8 tiles; launch order would give the blocks (1, 2, 3, 1, 2, 3 tiles) to
    // whichever SM frees first, 7 tiles.
    const int64_t n = 384, d = 128;
    KernelRates r = free_rates();
    r.wgmma = 500e12;
    const double tile_s = 4.0 * 128 * 128 * d / (500e12 / 2);
    auto k = kernel_profile("flash2h", Pass::forward, d, true);
    const auto in_turn = predict_kernel(with_heads(shape(n, d, true), 1, 2), k, r, sms(2));
    CHECK(in_turn.grid == GridOrder::static_units);
    CHECK(in_turn.predicted_ms == doctest::Approx(8 * tile_s * 1e3).epsilon(1e-9));
    k.grid = GridOrder::launch;
    const auto launch = predict_kernel(with_heads(shape(n, d, true), 1, 2), k, r, sms(2));
    CHECK(launch.predicted_ms == doctest::Approx(7 * tile_s * 1e3).epsilon(1e-9));
}

TEST_CASE("kernel model: dQ in block order pays the chain of a head's key blocks filling, once") {
    // flash2h backward, d = 128 (B_r = 64, B_c = 128), one head of N = 1024: 8 key blocks of 16 steps
    // each, all resident at once, only the tensor cores finite. Each block adds into dQ_i after the
    // one before it, so block j takes its first step when block j - 1 has taken its own at that
    // query block: the last of 8 starts 7 steps late and ends at 16 + 7 = 23 steps. Causal, block j
    // walks query blocks 2j .. 15 (16 - 2j steps) and waits for block j - 1 to pass 2j, which that
    // block reaches at its third step: block j starts 3 steps after block j - 1 and ends at 3j + 16 -
    // 2j = 16 + j steps, again 23 for the last. A step: the five 64 x 128 x 128 products.
    const int64_t n = 1024, d = 128;
    KernelRates r = free_rates();
    r.wgmma = 500e12;
    const double step_s = 5 * 2.0 * 64 * 128 * d / (500e12 / 132);
    auto k = kernel_profile("flash2h", Pass::backward, d);
    k.dq = DqAccumulation::ordered;
    for (bool causal : {false, true}) {
        CAPTURE(causal);
        const auto kp = predict_kernel(shape(n, d, causal), k, r, sms(132));
        CHECK(kp.predicted_ms == doctest::Approx(23 * step_s * 1e3).epsilon(1e-6));
    }
}

TEST_CASE("estimated ceilings: a measured card's shares of its datasheet carried to another of its architecture") {
    // Two made-up presets of one architecture: the target has twice the HBM bandwidth, three times the
    // L2 estimate and half the tensor rate of the measured one. Every rate must move by the ratio of
    // the figure that governs it; latencies must not move.
    Machine measured_on = find_machine("H200");
    Machine target = measured_on;
    target.name = "target";
    target.hbm_bandwidth = 2 * measured_on.hbm_bandwidth;
    target.l2_bandwidth = 3 * measured_on.l2_bandwidth;
    target.matmul_flops = 0.5 * measured_on.matmul_flops;
    KernelRates r;
    r.hbm = 4e12, r.hbm_read = 3.9e12, r.gemm_write_d128 = 2.8e12, r.hbm_rmw_d64 = 3.7e12;
    r.softmax_rows_fwd = {{1000, 1e12}};
    r.l2 = 7e12, r.l2_red = 2e12, r.bulk_reduce = 3.8e12;
    r.smem = 32e12, r.mma_sync = 634e12, r.wgmma = 940e12, r.wgmma_fp8 = 1839e12, r.gemm = 788e12;
    r.exp = 4.1e12, r.issue = 33e12;
    r.launch_s = 4e-6, r.wgmma_wait_s = 1e-7, r.red_fence_s = 2e-6;
    r.source = "file";
    const KernelRates e = estimated_rates(target, measured_on, r);
    CHECK(e.hbm == doctest::Approx(8e12));
    CHECK(e.hbm_read == doctest::Approx(7.8e12));
    CHECK(e.gemm_write_d128 == doctest::Approx(5.6e12));
    CHECK(e.hbm_rmw_d64 == doctest::Approx(7.4e12));
    CHECK(e.softmax_rows_fwd.at(0).second == doctest::Approx(2e12));
    CHECK(e.l2 == doctest::Approx(21e12));
    CHECK(e.l2_red == doctest::Approx(6e12));
    CHECK(e.bulk_reduce == doctest::Approx(11.4e12));
    CHECK(e.smem == doctest::Approx(16e12));
    CHECK(e.mma_sync == doctest::Approx(317e12));
    CHECK(e.wgmma == doctest::Approx(470e12));
    CHECK(e.wgmma_fp8 == doctest::Approx(919.5e12));
    CHECK(e.gemm == doctest::Approx(394e12));
    CHECK(e.exp == doctest::Approx(2.05e12));
    CHECK(e.issue == doctest::Approx(16.5e12));
    CHECK(e.launch_s == 4e-6);
    CHECK(e.wgmma_wait_s == 1e-7);
    CHECK(e.red_fence_s == 2e-6);
    CHECK(e.source.find("estimated for the target from the H200") != std::string::npos);
    // another architecture: refused, in words that name both and the way out
    Machine other = target;
    other.compute_capability = 80;
    try {
        (void)estimated_rates(other, measured_on, r);
        FAIL("an estimate across architectures must be refused");
    } catch (const Error& err) {
        CHECK(std::string(err.what()).find("different architectures") != std::string::npos);
        CHECK(std::string(err.what()).find("datasheet") != std::string::npos);
    }
}
