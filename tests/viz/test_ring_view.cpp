// The ring view's logic without GL (viz/ring_view.hpp): which GPU computes each block of the chunk
// grid and in which step, the step cursor across passes, refusals in the screen's words, the
// background job, and the lesson steps that open the view.
#include <doctest/doctest.h>

#include <cstdlib>
#include <map>
#include <string>
#include <utility>

#include "viz/app_args.hpp"
#include "viz/lessons_view.hpp"
#include "viz/ring_view.hpp"

using namespace viz;

namespace {
sim::RingProblem ring(int64_t seq, int64_t gpus, sim::RingLayout layout, bool causal) {
    sim::RingProblem p;
    p.attn.seq = seq;
    p.attn.head_dim = 64;
    p.attn.causal = causal;
    p.gpus = gpus;
    p.layout = layout;
    return p;
}
}  // namespace

TEST_CASE("ring grid: P = 2, balanced, causal, worked by hand") {
    // 4 chunks: GPU 0 holds chunks 0 and 3, GPU 1 chunks 1 and 2. GPU i holds GPU (i - s) mod 2's
    // K/V in step s: its own in step 0, the other's in step 1.
    const sim::RingProblem p = ring(64, 2, sim::RingLayout::balanced, true);
    CHECK(ring_parts(p) == 4);
    CHECK(chunk_device(p, 0) == 0);
    CHECK(chunk_device(p, 1) == 1);
    CHECK(chunk_device(p, 2) == 1);
    CHECK(chunk_device(p, 3) == 0);
    // query chunk 3 (GPU 0) x key chunk 1 (GPU 1): keys earlier than the queries, a full block,
    // computed by GPU 0 when it holds GPU 1's slice, in step 1
    RingCell c = ring_cell(p, 3, 1);
    CHECK(c.kind == sim::BlockKind::full);
    CHECK(c.device == 0);
    CHECK(c.step == 1);
    // query chunk 2 x key chunk 2: the diagonal, GPU 1 on its own slice, step 0
    c = ring_cell(p, 2, 2);
    CHECK(c.kind == sim::BlockKind::diagonal);
    CHECK(c.device == 1);
    CHECK(c.step == 0);
    // query chunk 0 x key chunk 3: every key after every query, skipped
    CHECK(ring_cell(p, 0, 3).kind == sim::BlockKind::none);
    // query chunk 1 (GPU 1) x key chunk 0 (GPU 0): full, step 1
    c = ring_cell(p, 1, 0);
    CHECK(c.kind == sim::BlockKind::full);
    CHECK(c.device == 1);
    CHECK(c.step == 1);
    // Step 0, GPU 0: (0,0) diagonal, (3,0) full, (3,3) diagonal, (0,3) skipped: 1 full, 2 diagonal;
    // step 1, GPU 0: (3,1), (3,2) full, (0,1), (0,2) skipped: 2 full. GPU 1 the same: balanced.
    std::map<std::pair<int64_t, int64_t>, std::pair<int, int>> per;  // (device, step) -> (full, diagonal)
    for (int64_t a = 0; a < 4; ++a)
        for (int64_t b = 0; b < 4; ++b) {
            const RingCell x = ring_cell(p, a, b);
            if (x.kind == sim::BlockKind::full) ++per[{x.device, x.step}].first;
            if (x.kind == sim::BlockKind::diagonal) ++per[{x.device, x.step}].second;
        }
    for (int64_t d = 0; d < 2; ++d) {
        CHECK(per[{d, 0}] == std::make_pair(1, 2));
        CHECK(per[{d, 1}] == std::make_pair(2, 0));
    }
}

TEST_CASE("ring grid: P = 4, contiguous, causal: the last GPU works every step, the first only in step 0") {
    const sim::RingProblem p = ring(64, 4, sim::RingLayout::contiguous, true);
    CHECK(ring_parts(p) == 4);
    // GPU 3 holds the slice of GPU 3 - s: its own (diagonal) in step 0, then 2, 1, 0 (all earlier: full)
    CHECK(ring_cell(p, 3, 3).kind == sim::BlockKind::diagonal);
    CHECK(ring_cell(p, 3, 3).step == 0);
    CHECK(ring_cell(p, 3, 2).step == 1);
    CHECK(ring_cell(p, 3, 1).step == 2);
    CHECK(ring_cell(p, 3, 0).step == 3);
    CHECK(ring_cell(p, 3, 0).kind == sim::BlockKind::full);
    // GPU 0 holds slices 3, 2, 1 in steps 1..3, all later than its queries: skipped
    CHECK(ring_cell(p, 0, 3).step == 1);
    CHECK(ring_cell(p, 0, 3).kind == sim::BlockKind::none);
    CHECK(ring_cell(p, 0, 1).step == 3);
    CHECK(ring_cell(p, 0, 1).kind == sim::BlockKind::none);
    // without the mask every block is full
    const sim::RingProblem q = ring(64, 4, sim::RingLayout::contiguous, false);
    CHECK(ring_cell(q, 0, 3).kind == sim::BlockKind::full);
    CHECK(ring_cell(q, 2, 2).kind == sim::BlockKind::full);
}

TEST_CASE("ring grid: the cells of each GPU and step are the blocks simulate_ring counts") {
    // The grid's mapping (chunk owner, step = (i - j) mod P) against the simulator's own walk of the
    // schedule (sim/ring.cpp): every (GPU, step) gets the same full and diagonal blocks.
    for (auto layout : {sim::RingLayout::balanced, sim::RingLayout::contiguous})
        for (bool causal : {true, false})
            for (int64_t P : {1, 2, 3, 5, 8}) {
                const sim::RingProblem p = ring(2 * P * 8, P, layout, causal);
                sim::RingConfig cfg;
                cfg.compute = sim::RingCompute::flops;
                cfg.flops_rate = 1e14;
                cfg.break_even = false;
                const sim::RingResult r = sim::simulate_ring(p, sim::find_machine("H200"), cfg);
                const int64_t n = ring_parts(p);
                for (const auto& st : r.passes.at(0).steps)
                    for (const auto& d : st.devices) {
                        int64_t full = 0, diag = 0;
                        for (int64_t a = 0; a < n; ++a)
                            for (int64_t b = 0; b < n; ++b) {
                                const RingCell c = ring_cell(p, a, b);
                                if (c.device != d.device || c.step != st.step) continue;
                                full += c.kind == sim::BlockKind::full;
                                diag += c.kind == sim::BlockKind::diagonal;
                            }
                        INFO("P = " << P << ", " << sim::name_of(layout) << (causal ? ", causal" : "") << ", GPU "
                                    << d.device << ", step " << st.step);
                        CHECK(full == d.full_blocks);
                        CHECK(diag == d.diagonal_blocks);
                        CHECK(d.kv_from == chunk_device(p, ring_chunks(p, d.kv_from).front()));
                        CHECK(d.kv_from == sim::ring_source(P, d.device, ring_step_of(P, d.device, d.kv_from)));
                    }
            }
}

TEST_CASE("ring cursor: forward then backward steps, a position a step") {
    Params pa;
    pa.seq = 512;
    RingInputs in;
    in.gpus = 4;
    in.pass = sim::Pass::both;
    sim::RingConfig cfg;
    cfg.compute = sim::RingCompute::flops;
    cfg.flops_rate = 1e14;
    cfg.break_even = false;
    const sim::RingResult r = sim::simulate_ring(ring_problem_of(pa, in), sim::find_machine("H200"), cfg);
    REQUIRE(r.passes.size() == 2);
    CHECK(ring_step_count(r) == 8);  // 4 forward steps, 4 backward
    RingCursor c = ring_cursor(r, 0.0);
    CHECK((c.pass_index == 0 && c.step == 0 && c.frac == 0.0));
    c = ring_cursor(r, 1.0);  // step 0 complete
    CHECK((c.pass_index == 0 && c.step == 0 && c.frac == 1.0));
    c = ring_cursor(r, 4.5);  // half-way through the 5th step: the backward's step 0
    CHECK((c.pass_index == 1 && c.step == 0 && c.frac == doctest::Approx(0.5)));
    c = ring_cursor(r, 8.0);
    CHECK((c.pass_index == 1 && c.step == 3 && c.frac == 1.0));
    c = ring_cursor(r, 99.0);  // clamped
    CHECK((c.pass_index == 1 && c.step == 3));
    CHECK(ring_pos_of_step(r, 5) == 6.0);
    CHECK(ring_cursor(r, ring_pos_of_step(r, 5)).step == 1);
    CHECK(ring_pos_of_step(r, -3) == 1.0);
    CHECK(ring_pos_of_step(r, 100) == 8.0);
    // playing moves at `speed` steps a second and stops at the end
    double pos = 7.0;
    bool playing = true;
    CHECK(ring_tick(pos, playing, 8, 0.25, 2.0));
    CHECK(pos == doctest::Approx(7.5));
    CHECK(playing);
    CHECK(ring_tick(pos, playing, 8, 1.0, 2.0));
    CHECK(pos == 8.0);
    CHECK_FALSE(playing);
    CHECK_FALSE(ring_tick(pos, playing, 8, 1.0, 2.0));  // paused: nothing moves
}

TEST_CASE("ring inputs the simulator refuses come back in the screen's words") {
    Params pa;  // the app's default problem: N = 512
    RingInputs in;
    CHECK(validate_ring(pa, in).empty());  // P = 4, balanced: 2P = 8 divides 512
    in.gpus = 3;                           // 2P = 6 does not
    std::string e = validate_ring(pa, in);
    CHECK(e.find("2P = 6") != std::string::npos);
    CHECK(e.find("N (tokens)") != std::string::npos);
    CHECK(e.find("516") != std::string::npos);  // the next multiple of 6 above 512
    CHECK(e.find("--") == std::string::npos);   // no command-line flag
    in.layout = sim::RingLayout::contiguous;    // P = 3 does not divide 512 either
    e = validate_ring(pa, in);
    CHECK(e.find("P = 3") != std::string::npos);
    CHECK(e.find("513") != std::string::npos);
    in.gpus = 0;
    e = validate_ring(pa, in);
    CHECK(e.find("GPUs P") != std::string::npos);
    CHECK(e.find("--") == std::string::npos);
    in.gpus = kRingMaxGpus + 1;
    CHECK(validate_ring(pa, in).find("GPUs P") != std::string::npos);
    in.gpus = 2;
    in.heads = 0;
    CHECK(validate_ring(pa, in).find("heads H") != std::string::npos);
}

TEST_CASE("the ring job keeps the last good ring when the next is refused") {
    RingJob job;
    Params pa;
    RingInputs in;
    in.gpus = 3;  // refused at N = 512
    job.request(pa, in);
    CHECK_FALSE(job.refusal().empty());
    CHECK_FALSE(job.busy());
    CHECK(job.current() == nullptr);
    in.gpus = 2;
    job.request(pa, in);
    CHECK(job.refusal().empty());
    job.wait();
    REQUIRE(job.current() != nullptr);
    CHECK(job.current()->result.problem.gpus == 2);
    CHECK(job.current()->result.passes.at(0).steps.size() == 2);
    in.gpus = 5;  // 2P = 10 does not divide 512
    job.request(pa, in);
    CHECK(job.refusal().find("2P = 10") != std::string::npos);
    job.wait();
    CHECK(job.current()->result.problem.gpus == 2);  // still the good one
}

TEST_CASE("lesson 15's steps about the ring at scale open the ring view on the lesson's rings") {
    ::setenv("FLASHSIM_LESSONS", (std::string(FLASHSIM_SOURCE_DIR) + "/lessons").c_str(), 1);
    const LessonLibrary lib = load_lesson_library();
    const int k = lib.find("beyond-one-gpu");
    REQUIRE(k >= 0);
    const LessonDoc& L = lib.lessons[static_cast<size_t>(k)];
    REQUIRE(L.error.empty());
    REQUIRE(L.steps.size() >= 5);
    // step 1: the two GPUs' halves merged by LSE, on the softmax view
    CHECK(L.steps[0].panel == Panel::softmax);
    CHECK_FALSE(L.steps[0].ring.has_value());
    // steps 2 to 5 name [ring.*] tables of lessons/15-beyond-one-gpu.toml in their views: 8 GPUs, 16 heads of 128
    REQUIRE(L.steps.size() >= 6);
    for (size_t s = 1; s < 5; ++s) {
        INFO("step " << s + 1);
        CHECK(L.steps[s].panel == Panel::ring);
        REQUIRE(L.steps[s].ring.has_value());
        REQUIRE(L.steps[s].params.has_value());
        CHECK(L.steps[s].ring->heads == 16);
        CHECK(L.steps[s].params->head_dim == 128);
        CHECK(L.steps[s].params->causal);
        CHECK(L.steps[s].params->gpu == "H200");
    }
    // step 6, the ring run with the kernels on one GPU: the measured rows, not the model's ring
    CHECK(L.steps[5].panel == Panel::measured);
    CHECK_FALSE(L.steps[5].ring.has_value());
    // step 2, "The ring": [ring.train], 8 GPUs, 131,072 tokens, balanced, forward and backward
    CHECK(L.steps[1].ring->gpus == 8);
    CHECK(L.steps[1].params->seq == 131072);
    CHECK(L.steps[1].ring->layout == sim::RingLayout::balanced);
    CHECK(L.steps[1].ring->pass == sim::Pass::both);
    // step 3 starts with the contiguous layout ([ring.contig]): forward only
    CHECK(L.steps[2].ring->layout == sim::RingLayout::contiguous);
    CHECK(L.steps[2].ring->pass == sim::Pass::forward);
    CHECK(L.steps[2].ring->gpus == 8);
    // step 4 is about short slices ([ring.short]: 8,192 tokens on 8 GPUs)
    CHECK(L.steps[3].params->seq == 8192);
    CHECK(L.steps[3].ring->layout == sim::RingLayout::balanced);
    // applying a ring step sets the ring view's inputs and opens it
    ViewState v;
    Simulations sims;
    CHECK(apply_lesson_step(L.steps[2], v, sims).empty());
    CHECK(v.panel == Panel::ring);
    CHECK(v.ring == *L.steps[2].ring);
    CHECK(v.edit.seq == 131072);
    sims.wait();
}

TEST_CASE("the command line sets the ring view's GPUs and layout") {
    AppArgs a;
    const char* ok[] = {"flashsim-app", "--panel", "ring", "--gpus", "8", "--layout", "contiguous"};
    CHECK(parse_app_args(7, ok, a, nullptr, nullptr).empty());
    CHECK(a.panel == Panel::ring);
    CHECK(a.gpus == 8);
    CHECK(a.layout == sim::RingLayout::contiguous);
    AppArgs b;
    const char* bad[] = {"flashsim-app", "--layout", "diagonal"};
    CHECK(parse_app_args(3, bad, b, nullptr, nullptr).find("balanced or contiguous") != std::string::npos);
    AppArgs c;  // P out of the view's range: refused on the command line (exit 2), with the range
    const char* many[] = {"flashsim-app", "--gpus", "100"};
    CHECK(parse_app_args(3, many, c, nullptr, nullptr).find("--gpus must be 1 to 64") != std::string::npos);
    CHECK(!c.gpus);
    // typed into the view's field instead, it is the view's to refuse, in its words
    Params p;
    RingInputs in;
    in.gpus = 100;
    CHECK(validate_ring(p, in).find("GPUs P: the app draws rings of 1 to 64 GPUs, got 100") != std::string::npos);
}
