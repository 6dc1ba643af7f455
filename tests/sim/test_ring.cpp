// Ring attention (sim/ring.hpp): the layouts' work per GPU counted by hand, bytes per link from the
// formula, the break-even tokens per GPU and the efficiency there derived on paper (flops mode),
// the ring run on real numbers against one-device attention (forward and backward), bad input.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/reference.hpp"
#include "sim/ring.hpp"

using namespace sim;

namespace {
RingProblem ring(int64_t P, int64_t N, int64_t d, bool causal, RingLayout layout, Pass pass = Pass::forward,
                 int64_t heads = 1, DType dt = DType::fp16) {
    RingProblem p;
    p.gpus = P;
    p.attn.seq = N;
    p.attn.head_dim = d;
    p.attn.heads = heads;
    p.attn.causal = causal;
    p.attn.dtype = dt;
    p.layout = layout;
    p.pass = pass;
    return p;
}
// A model one can do by hand: compute = FLOPs / rate, no merge cost, no latency.
RingConfig by_hand(double rate, double link) {
    RingConfig c;
    c.compute = RingCompute::flops;
    c.flops_rate = rate;
    c.link_bandwidth = link;
    c.link_latency_s = 0;
    c.merge_cost = false;
    return c;
}
const Machine& h200() { return find_machine("H200"); }
}  // namespace

TEST_CASE("the presets carry their interconnect: NVLink 4 and 3 halved per direction, PCIe 4.0 x16") {
    // datasheets: H200/H100 NVLink 900 GB/s both ways together, A100 600 GB/s; PCIe 4.0 x16:
    // 16 GT/s x 16 lanes x 128/130 / 8 bits = 31.5 GB/s each way
    CHECK(find_machine("H200").link_bandwidth == doctest::Approx(900e9 / 2));
    CHECK(find_machine("H100-SXM").link_bandwidth == doctest::Approx(900e9 / 2));
    CHECK(find_machine("A100-80GB").link_bandwidth == doctest::Approx(600e9 / 2));
    CHECK(find_machine("RTX4090").link_bandwidth == doctest::Approx(16e9 * 16 * 128 / 130 / 8).epsilon(0.001));
    for (const auto& m : machine_presets()) {
        CHECK(m.link_latency_s > 0);
        CHECK(!m.link_source.empty());
    }
}

TEST_CASE("which chunks a GPU holds, and what a query chunk does with a key chunk") {
    const RingProblem b = ring(4, 64, 8, true, RingLayout::balanced);
    CHECK(ring_chunks(b, 0) == std::vector<int64_t>{0, 7});
    CHECK(ring_chunks(b, 3) == std::vector<int64_t>{3, 4});
    CHECK(ring_chunks(ring(4, 64, 8, true, RingLayout::contiguous), 2) == std::vector<int64_t>{2});
    CHECK(block_kind(true, 3, 1) == BlockKind::full);
    CHECK(block_kind(true, 3, 3) == BlockKind::diagonal);
    CHECK(block_kind(true, 1, 3) == BlockKind::none);
    CHECK(block_kind(false, 1, 3) == BlockKind::full);
    // step s: GPU i holds the slice of GPU i - s
    CHECK(ring_source(4, 0, 1) == 3);
    CHECK(ring_source(4, 2, 3) == 3);
    CHECK(ring_source(4, 1, 0) == 1);
}

TEST_CASE("causal work per GPU: contiguous is uneven, balanced is even (counted by hand, P = 4, N = 32)") {
    const RingConfig c = by_hand(1e12, 1e12);
    // contiguous: n = 8 tokens a GPU; GPU i sees i earlier slices fully (64 pairs each) and its own
    // triangle (8*9/2 = 36): 36, 100, 164, 228; in blocks: i full + 1 diagonal, P(P+1)/2 = 10 in all
    const RingResult rc = simulate_ring(ring(4, 32, 8, true, RingLayout::contiguous), h200(), c);
    CHECK(rc.passes[0].pairs_per_device == std::vector<int64_t>{36, 100, 164, 228});
    int64_t blocks = 0;
    for (int64_t i = 0; i < 4; ++i) {
        int64_t full = 0, diag = 0;
        for (const auto& st : rc.passes[0].steps) {
            full += st.devices[size_t(i)].full_blocks;
            diag += st.devices[size_t(i)].diagonal_blocks;
        }
        CHECK(full == i);
        CHECK(diag == 1);
        blocks += full + diag;
    }
    CHECK(blocks == 4 * 5 / 2);
    CHECK(rc.passes[0].balance == doctest::Approx((528.0 / 4) / 228));
    // balanced: chunks of c = 4; chunk a sees 16a pairs before it and a 4*5/2 = 10 triangle;
    // GPU i holds a = i and 7 - i: 16*7 + 20 = 132 each (and 4 * 132 = 528 = 32*33/2)
    const RingResult rb = simulate_ring(ring(4, 32, 8, true, RingLayout::balanced), h200(), c);
    CHECK(rb.passes[0].pairs_per_device == std::vector<int64_t>{132, 132, 132, 132});
    CHECK(rb.passes[0].balance == 1.0);
    // every step: the same work on every GPU (step 0: two triangles and one full block: 10+10+16;
    // then two full blocks: 32)
    for (const auto& st : rb.passes[0].steps)
        for (const auto& ds : st.devices) CHECK(ds.pairs == (st.step == 0 ? 36 : 32));
    // with compute = FLOPs / rate and a free link, efficiency = mean work / slowest path:
    // contiguous waits for GPU 3 every step after the first: 36 + 3*64 = 228 pair-times against 132
    CHECK(rc.passes[0].efficiency == doctest::Approx(132.0 / 228.0));
    CHECK(rb.passes[0].efficiency == doctest::Approx(1.0));
}

// One GPU doing the P devices' work (the emulated rows of `bench --ring`): with compute = FLOPs / rate the
// blocks tile the whole problem, so it is the whole problem's FLOPs at the rate, whatever P or layout
// (4 d per pair forward, 2.5 x that backward); with one GPU it is the ring's own time.
TEST_CASE("the ring's work on one GPU: the whole problem's FLOPs at the rate (P = 1, 4, 8; both layouts)") {
    const double R = 1e12;
    const int64_t N = 64, d = 8;
    for (int64_t P : {1, 4, 8})
        for (const RingLayout layout : {RingLayout::balanced, RingLayout::contiguous})
            for (const bool causal : {true, false}) {
                CAPTURE(P);
                CAPTURE(causal);
                const RingResult r = simulate_ring(ring(P, N, d, causal, layout, Pass::both), h200(), by_hand(R, 1e12));
                const double pairs = causal ? N * (N + 1) / 2.0 : double(N * N);
                CHECK(r.passes[0].one_gpu_s == doctest::Approx(4.0 * d * pairs / R));
                CHECK(r.passes[1].one_gpu_s == doctest::Approx(2.5 * 4.0 * d * pairs / R));
                if (P == 1) CHECK(r.passes[0].one_gpu_s == doctest::Approx(r.passes[0].time_s));
            }
}

TEST_CASE("bytes over each link by hand (P = 4, N = 64, d = 8, H = 2, fp16)") {
    // n = 16 tokens a GPU; K and V of a slice: 2 * 16 * 8 * 2 B * 2 heads = 1024 B; forward: P-1 sends
    const RingResult f =
        simulate_ring(ring(4, 64, 8, true, RingLayout::balanced, Pass::both, 2), h200(), by_hand(1e12, 1e9));
    REQUIRE(f.passes.size() == 2);
    CHECK(f.passes[0].link_bytes == 3 * 1024);
    for (const auto& st : f.passes[0].steps) CHECK(st.send_bytes == (st.step < 3 ? 1024 : 0));
    // backward: K, V P-1 times, and the float32 dK, dV (2 * 16 * 8 * 4 B * 2 = 2048 B) P times,
    // the last one home after the last step
    CHECK(f.passes[1].link_bytes == 3 * 1024 + 4 * 2048);
    CHECK(f.passes[1].steps[0].send_bytes == 1024);
    CHECK(f.passes[1].steps[1].send_bytes == 1024 + 2048);
    CHECK(f.passes[1].steps[3].send_bytes == 2048);
    CHECK(f.passes[1].tail_s == doctest::Approx(2048 / 1e9));
    // step time = max(compute, transfer); at 1 GB/s the transfer of 1024 B (1.024 us) exceeds the
    // compute of a steady step: two 8 x 8 blocks (c = 64 / 8) = 128 pairs x 4 d FLOPs x 2 heads =
    // 8192 FLOP at 1 TFLOP/s (8.2 ns)
    CHECK(f.passes[0].steps[1].time_s == doctest::Approx(1024 / 1e9));
    CHECK(f.passes[0].steps[1].exposed_s == doctest::Approx(1024 / 1e9 - 4.0 * 8 * 2 * 128 / 1e12));
}

TEST_CASE("break-even tokens per GPU and the efficiency there, derived on paper") {
    // no mask, forward: a step computes 4 d n^2 FLOPs (per head) at rate R and sends 2 n d e bytes at
    // bandwidth W; equal at n* = e R / (2 W). With e = 2, R = 1e12, W = 1e9: n* = 1000.
    const double R = 1e12, W = 1e9;
    const RingConfig c = by_hand(R, W);
    const RingResult at = simulate_ring(ring(4, 4000, 16, false, RingLayout::contiguous), h200(), c);
    CHECK(at.passes[0].break_even_tokens == 1000);
    // with no fixed costs the search and the bandwidth-only figure agree
    CHECK(at.passes[0].break_even_bandwidth_tokens == doctest::Approx(1000));
    // at n*, every transfer hides exactly: the ring runs as fast as P GPUs alone
    CHECK(at.passes[0].efficiency == doctest::Approx(1.0));
    // at n*/2: the compute is a quarter, the transfer a half, so each of the P-1 first steps takes
    // twice its compute: P C / ((P-1) 2C + C) = 4/7
    const RingResult half = simulate_ring(ring(4, 2000, 16, false, RingLayout::contiguous), h200(), c);
    CHECK(half.passes[0].efficiency == doctest::Approx(4.0 / 7.0));
    // causal, balanced: a steady step does half the pairs of a full n x n block (two c x c blocks,
    // c = n/2), so n* doubles: e R / W = 2000
    const RingResult cb = simulate_ring(ring(4, 8000, 16, true, RingLayout::balanced), h200(), c);
    CHECK(cb.passes[0].break_even_tokens == 2000);
    CHECK(cb.passes[0].break_even_bandwidth_tokens == doctest::Approx(2000));
    // backward, no mask: 2.5 x the forward's FLOPs against K, V (e) and dK, dV (4 B) sent:
    // 10 d n^2 / R = 2 n d (e + 4) / W  =>  n* = (e + 4) R / (5 W) = 1200
    const RingResult bw = simulate_ring(ring(4, 4800, 16, false, RingLayout::contiguous, Pass::backward), h200(), c);
    CHECK(bw.passes[0].break_even_tokens == 1200);
    CHECK(bw.passes[0].break_even_bandwidth_tokens == doctest::Approx(1200));
    // one GPU has nothing to send: no break-even
    CHECK(simulate_ring(ring(1, 64, 16, false, RingLayout::contiguous), h200(), c).passes[0].break_even_tokens == 0);
}

// The merges as cuda/ring.cu runs them, one after each block, counted here from its kernels: ring_merge
// reads a block's output O_b (e bytes a value) and LSE_b and keeps a running fp32 O and LSE (first:
// copy in; middle: merge; last: merge into the chunk's output in e bytes); a chunk of one block is the
// kernel's own output. ring_add adds each block's dQ_b, dK_b, dV_b into fp32 (read, add, write), and the
// backward zeroes dQ and the travelling dK, dV (fp32) before its first step.
TEST_CASE("merge bytes: one merge a block, as the GPU ring does them (P = 1 and 2, balanced, causal)") {
    const int64_t d = 64, H = 2, e = 2;  // fp16
    RingConfig c = by_hand(1e15, 1e12);
    c.merge_cost = true;
    {
        // P = 1, N = 64: chunks 0 and 1 of 32 rows; chunk 0 sees key chunk 0 only (its block is the
        // answer), chunk 1 sees keys 0 (full) and 1 (diagonal): a first and a last merge.
        const int64_t rows = 32, values = H * rows * d, lse = H * rows * 4;
        const RingResult r = simulate_ring(ring(1, 64, d, true, RingLayout::balanced, Pass::both, H), h200(), c);
        REQUIRE(r.passes.size() == 2);
        const double first = double(values * (e + 4) + 2 * lse), last = double(values * (4 + 2 * e) + 3 * lse);
        CHECK(r.passes[0].steps[0].devices[0].merge_s * r.hbm_bandwidth == doctest::Approx(first + last));
        // backward: three blocks, three fp32 accumulations each, and dQ, dK, dV zeroed for 64 rows
        const double adds = 3.0 * 3 * double(values * (8 + e)), zeroed = 3.0 * 64 * d * 4 * H;
        CHECK(r.passes[1].steps[0].devices[0].merge_s * r.hbm_bandwidth == doctest::Approx(adds + zeroed));
    }
    {
        // P = 2, N = 64: chunks of 16 rows; GPU 0 holds 0 and 3, GPU 1 holds 1 and 2. Chunk 3 sees four
        // key chunks: step 0 (GPU 0's own 0, 3) first and middle, step 1 (GPU 1's 1, 2) middle and last.
        // Chunk 1 sees 0 and 1 (GPU 1 step 0: key 1, diagonal, first; step 1: key 0, last), chunk 2 sees
        // 0, 1, 2 (step 0: keys 1, 2: first, middle; step 1: key 0: last).
        const int64_t rows = 16, values = H * rows * d, lse = H * rows * 4;
        const double first = double(values * (e + 4) + 2 * lse), middle = double(values * (8 + e) + 3 * lse),
                     last = double(values * (4 + 2 * e) + 3 * lse);
        const RingResult r = simulate_ring(ring(2, 64, d, true, RingLayout::balanced, Pass::forward, H), h200(), c);
        const auto& st = r.passes[0].steps;
        CHECK(st[0].devices[0].merge_s * r.hbm_bandwidth == doctest::Approx(first + middle));
        CHECK(st[1].devices[0].merge_s * r.hbm_bandwidth == doctest::Approx(middle + last));
        CHECK(st[0].devices[1].merge_s * r.hbm_bandwidth == doctest::Approx(first + first + middle));
        CHECK(st[1].devices[1].merge_s * r.hbm_bandwidth == doctest::Approx(last + last));
    }
}

TEST_CASE("with the simulator's timing on the H200 preset: balanced beats contiguous, long slices hide the link") {
    RingConfig c;  // simulate mode, measured ceilings, merge cost on
    const RingResult b = simulate_ring(ring(4, 32768, 128, true, RingLayout::balanced, Pass::forward, 8), h200(), c);
    const RingResult k = simulate_ring(ring(4, 32768, 128, true, RingLayout::contiguous, Pass::forward, 8), h200(), c);
    CHECK(b.efficiency > k.efficiency);
    CHECK(b.efficiency <= 1.05);
    // 8192 tokens a GPU is well past the break-even: no step after the first waits for the link
    REQUIRE(b.passes[0].break_even_tokens > 0);
    CHECK(b.passes[0].break_even_tokens < 8192);
    for (const auto& st : b.passes[0].steps) {
        CHECK(st.time_s >= st.compute_s);
        CHECK(st.exposed_s == 0);
    }
    // the contiguous layout's slowest GPU does a full block every step after the first (P - 1/2
    // blocks' time) where the balanced does P/2: about (2P - 1)/P = 1.75 times the time
    CHECK(k.time_s / b.time_s == doctest::Approx(7.0 / 4.0).epsilon(0.15));
}

TEST_CASE("kernel mode: a CUDA kernel's model times the blocks (flash2h, datasheet rates)") {
    RingConfig c;
    c.compute = RingCompute::kernel;
    c.kernel = "flash2h";
    const RingResult r = simulate_ring(ring(4, 65536, 128, true, RingLayout::balanced, Pass::both, 8), h200(), c);
    REQUIRE(r.passes.size() == 2);
    // the ring's compute is the sum of the kernel model's block times: every GPU does equal work
    for (const auto& st : r.passes[0].steps) CHECK(st.devices[0].compute_s == st.devices[3].compute_s);
    CHECK(r.passes[0].single_gpu_s > 0);
    CHECK(r.efficiency > 0.5);
    c.kernel = "flash9";
    CHECK_THROWS_AS(simulate_ring(ring(2, 1024, 64, true, RingLayout::balanced), h200(), c), Error);
}

TEST_CASE("the ring on real numbers equals one-device attention (every P, both layouts, both masks)") {
    for (int64_t P : {1, 2, 3, 4})
        for (bool causal : {false, true})
            for (RingLayout layout : {RingLayout::contiguous, RingLayout::balanced}) {
                CAPTURE(P);
                CAPTURE(causal);
                const RingProblem p = ring(P, 48, 16, causal, layout, Pass::forward, 2, DType::fp32);
                const Inputs in = generate_inputs(p.attn);
                const RingNumerics out = run_ring(p, in, 5);  // tiles of 5 keys: not a divisor of a slice
                const ErrorStats vs = validate(out.O, attention_reference(p.attn, in.Q, in.K, in.V), DType::fp32);
                CHECK(vs.ok(2e-6));
                const std::vector<double> lse = lse_reference(p.attn, in.Q, in.K);
                double worst = 0;
                for (size_t r = 0; r < lse.size(); ++r) worst = std::max(worst, std::abs(lse[r] - out.lse[r]));
                CHECK(worst < 1e-5);
                // LSE merges: a row merges once per slice it sees after its first; 2 heads, N = 48
                int64_t want = 0;
                if (!causal)
                    want = 2 * 48 * (P - 1);  // every row sees every slice
                else if (layout == RingLayout::contiguous)
                    want = 2 * (48 / P) * (P * (P - 1) / 2);  // GPU i's rows see i + 1 slices
                else
                    want = 2 * (48 / (2 * P)) * (3 * P * (P - 1) / 2);  // low chunk i: i merges; high: P - 1
                CHECK(out.merges == want);
            }
}

TEST_CASE("the ring backward: dK, dV travel with their slice and come home equal to one-device gradients") {
    for (int64_t P : {1, 2, 3})
        for (bool causal : {false, true}) {
            CAPTURE(P);
            CAPTURE(causal);
            const RingProblem p = ring(P, 24, 8, causal, RingLayout::balanced, Pass::backward, 2, DType::fp32);
            Inputs in = generate_inputs(p.attn);
            in.dO = generate_input(p.attn, InputTensor::dO);
            const RingNumerics fwd = run_ring(p, in);
            const RingGradients g = run_ring_backward(p, in, fwd);
            const Gradients ref = attention_backward_reference(p.attn, in.Q, in.K, in.V, in.dO);
            auto worst = [](const TensorD& a, const TensorD& b) {
                double w = 0;
                for (size_t i = 0; i < a.data.size(); ++i) w = std::max(w, std::abs(a.data[i] - b.data[i]));
                return w;
            };
            CHECK(worst(g.dQ, ref.dQ) < 1e-5);
            CHECK(worst(g.dK, ref.dK) < 1e-5);
            CHECK(worst(g.dV, ref.dV) < 1e-5);
            CHECK(g.kv_sends == P * (P - 1));
            CHECK(g.grad_sends == (P > 1 ? P * P : 0));
        }
}

TEST_CASE("bad ring input is refused with what to do") {
    const RingConfig c;
    CHECK_THROWS_WITH_AS(simulate_ring(ring(0, 64, 8, true, RingLayout::balanced), h200(), c),
                         doctest::Contains("--gpus must be >= 1"), Error);
    // balanced needs N a multiple of 2P = 8; the next is 72
    CHECK_THROWS_WITH_AS(simulate_ring(ring(4, 68, 8, true, RingLayout::balanced), h200(), c),
                         doctest::Contains("pad the sequence to N = 72"), Error);
    CHECK_NOTHROW(ring(4, 68, 8, true, RingLayout::contiguous).validate());
    CHECK_THROWS_WITH_AS(ring(2048, 4096, 8, true, RingLayout::balanced).validate(), doctest::Contains("at most 1024"),
                         Error);
    RingProblem w = ring(2, 64, 8, true, RingLayout::balanced);
    w.attn.window = 8;
    CHECK_THROWS_AS(w.validate(), Error);
}
