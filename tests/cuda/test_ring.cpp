// tests/cuda/test_ring.cpp — ring attention with the kernels (cuda/ring.cu), part of test_cuda_gpu
// (skipped without a device). The expectations come from outside the ring:
//   * O, dQ, dK, dV of the emulated ring (P devices on one GPU) against the CPU's float64
//     references, inside a bar fixed before the first run: 2 x the error of one kernel call on the
//     whole problem + K ulps of the dtype at the reference's largest magnitude, K the chunks (each
//     block's output is rounded to the dtype once before the blocks are summed);
//   * the LSE against log-sum-exp of the float64 scores;
//   * kernel calls and sends counted from the schedule by hand: a causal balanced ring of P devices
//     computes (2P)(2P+1)/2 blocks, a plain one (2P)^2; the forward sends P(P-1) slices of
//     2 x chunks x c x B·H x d x 2 bytes, the backward adds P sends a device of the fp32 dK, dV;
//   * the one-key shortcut of the backwards is off inside a ring: under the causal mask the first
//     row of chunk 1 has one key in its diagonal block but c + 1 keys in all, and its dQ is checked
//     like every other row (the checks above fail if the shortcut zeroed it);
//   * refusals: a kernel without an LSE, N not a multiple of the chunks, NCCL asked for more GPUs
//     than are visible; with NCCL and GPUs present, the NCCL ring gives the emulated ring's bits.
#include <doctest/doctest.h>

#include <cmath>
#include <cstring>
#include <string>
#include <vector>

#include "cuda/api.hpp"
#include "tests/cuda/gpu_cases.hpp"
#include "cuda/reference_bwd.hpp"
#include "sim/reference.hpp"
#include "sim/ring.hpp"

namespace {

sim::RingProblem ring_shape(int64_t P, sim::RingLayout layout, int64_t N, int64_t d, bool causal, sim::Pass pass,
                            sim::DType dt = sim::DType::bf16) {
    sim::RingProblem r;
    r.attn.batch = 1;
    r.attn.heads = 2;
    r.attn.seq = N;
    r.attn.head_dim = d;
    r.attn.dtype = dt;
    r.attn.causal = causal;
    r.attn.seed = 11;
    r.gpus = P;
    r.layout = layout;
    r.pass = pass;
    return r;
}

double ulp_at(sim::DType dt, double x) {
    const int mant = dt == sim::DType::bf16 ? 7 : 10;
    return std::ldexp(1.0, static_cast<int>(std::floor(std::log2(std::max(std::abs(x), 1e-30)))) - mant);
}

double largest(const sim::TensorD& t) {
    double m = 0;
    for (double v : t.data) m = std::max(m, std::abs(v));
    return m;
}

std::vector<std::string> kernels() {
    std::vector<std::string> v;
    for (const char* k : {"flash2", "flash2h"}) {
        std::string why;
        if (fcuda::variant_available(k, &why))
            v.push_back(k);
        else
            gpu_cases::not_run(k, why);
    }
    return v;
}

// float64 log-sum-exp of each row's scaled, masked scores
std::vector<double> reference_lse(const sim::Problem& p, const sim::Inputs& in) {
    std::vector<double> out;
    const int64_t N = p.seq, d = p.head_dim;
    const double scale = p.softmax_scale();
    for (int64_t bh = 0; bh < p.heads_total(); ++bh)
        for (int64_t i = 0; i < N; ++i) {
            std::vector<double> s;
            for (int64_t j = 0; j < (p.causal ? i + 1 : N); ++j) {
                double x = 0;
                for (int64_t k = 0; k < d; ++k)
                    x += double(in.Q.data[(bh * N + i) * d + k]) * double(in.K.data[(bh * N + j) * d + k]);
                s.push_back(scale * x);
            }
            double m = -1e300, sum = 0;
            for (double x : s) m = std::max(m, x);
            for (double x : s) sum += std::exp(x - m);
            out.push_back(m + std::log(sum));
        }
    return out;
}

void check_against_reference(const sim::RingProblem& rp, const std::string& kernel) {
    CAPTURE(kernel);
    CAPTURE(rp.gpus);
    CAPTURE(rp.attn.seq);
    CAPTURE(rp.attn.head_dim);
    CAPTURE(rp.attn.causal);
    CAPTURE(std::string(sim::name_of(rp.layout)));
    const bool grads = rp.pass != sim::Pass::forward;
    const fcuda::RingOutputs ring = fcuda::compute_ring(rp, kernel, fcuda::RingTransport::emulated);
    const fcuda::Outputs one = fcuda::compute(rp.attn, kernel, grads ? fcuda::Pass::backward : fcuda::Pass::forward);
    const sim::Inputs in = sim::generate_inputs(rp.attn);
    const double K = double(rp.gpus * rp.chunks_per_gpu());
    auto within = [&](const sim::TensorF& got, const sim::TensorF& single, const sim::TensorD& ref, const char* what) {
        CAPTURE(what);
        const sim::ErrorStats e = sim::validate(got, ref, rp.attn.dtype);
        const sim::ErrorStats e1 = sim::validate(single, ref, rp.attn.dtype);
        const double bound = 2 * e1.max_abs + K * ulp_at(rp.attn.dtype, largest(ref));
        CAPTURE(e.max_abs);
        CAPTURE(e1.max_abs);
        CAPTURE(bound);
        CAPTURE(e.where);
        CHECK(e.nonfinite == 0);
        CHECK(e.count == static_cast<int64_t>(ref.data.size()));
        CHECK(e.max_abs <= bound);
    };
    within(ring.O, one.O, sim::attention_reference(rp.attn, in.Q, in.K, in.V), "O");
    const std::vector<double> lse = reference_lse(rp.attn, in);
    REQUIRE(ring.LSE.size() == lse.size());
    double worst = 0;
    for (size_t k = 0; k < lse.size(); ++k) worst = std::max(worst, std::abs(double(ring.LSE[k]) - lse[k]));
    CHECK(worst < 1e-4);  // fp32 sums of exponentials of bf16 products' rounded scores: about 1e-6 here
    if (grads) {
        const sim::TensorF dO = sim::generate_input(rp.attn, sim::InputTensor::dO);
        const fcuda::GradsD g = fcuda::attention_backward_reference(rp.attn, in.Q, in.K, in.V, dO);
        within(ring.dQ, one.dQ, g.dQ, "dQ");
        within(ring.dK, one.dK, g.dK, "dK");
        within(ring.dV, one.dV, g.dV, "dV");
    }
}

}  // namespace

TEST_CASE("ring: the emulated ring's outputs equal float64 attention to rounding, forward and backward") {
    if (!fcuda::device_available()) return gpu_cases::skip("no CUDA device");
    for (const std::string& k : kernels())
        for (int64_t d : {64, 128}) {
            // c = 40 and 24: chunks shorter than a tile, and not multiples of 16
            check_against_reference(ring_shape(2, sim::RingLayout::balanced, 160, d, true, sim::Pass::both), k);
            check_against_reference(ring_shape(4, sim::RingLayout::balanced, 192, d, true, sim::Pass::both), k);
            check_against_reference(ring_shape(3, sim::RingLayout::contiguous, 150, d, true, sim::Pass::both), k);
            check_against_reference(ring_shape(3, sim::RingLayout::balanced, 288, d, false, sim::Pass::both), k);
            check_against_reference(ring_shape(1, sim::RingLayout::balanced, 130, d, true, sim::Pass::both), k);
        }
    // fp16, and chunks longer than a tile (c = 160)
    for (const std::string& k : kernels())
        check_against_reference(
            ring_shape(2, sim::RingLayout::balanced, 640, 128, true, sim::Pass::both, sim::DType::fp16), k);
}

TEST_CASE("ring: kernel calls and sends follow the schedule") {
    if (!fcuda::device_available()) return gpu_cases::skip("no CUDA device");
    const std::string k = kernels().front();
    for (int64_t P : {1, 2, 3, 4}) {
        CAPTURE(P);
        const int64_t c = 32, N = 2 * P * c;
        const sim::RingProblem causal = ring_shape(P, sim::RingLayout::balanced, N, 64, true, sim::Pass::both);
        const fcuda::RingOutputs r = fcuda::compute_ring(causal, k, fcuda::RingTransport::emulated);
        // chunk pairs (a, b) with b <= a among 2P chunks, each computed once, forward and backward
        CHECK(r.blocks_forward == (2 * P) * (2 * P + 1) / 2);
        CHECK(r.blocks == (2 * P) * (2 * P + 1) / 2);
        // backward: P-1 K/V sends and (P > 1) P accumulator sends a device
        CHECK(r.sends == (P > 1 ? P * (P - 1) + P * P : 0));
        const int64_t kv = 2 * 2 * c * 2 * 64 * 2, grads = 2 * 2 * c * 2 * 64 * 4;  // K, V bf16; dK, dV fp32
        CHECK(r.link_bytes == (P > 1 ? (P - 1) * kv + P * grads : 0));
        const sim::RingProblem plain = ring_shape(P, sim::RingLayout::balanced, N, 64, false, sim::Pass::forward);
        const fcuda::RingOutputs f = fcuda::compute_ring(plain, k, fcuda::RingTransport::emulated);
        CHECK(f.blocks == 4 * P * P);
        CHECK(f.sends == P * (P - 1));
        CHECK(f.link_bytes == (P - 1) * kv);
    }
}

TEST_CASE("ring: refusals say what is wrong") {
    if (!fcuda::device_available()) return gpu_cases::skip("no CUDA device");
    const sim::RingProblem ok = ring_shape(2, sim::RingLayout::balanced, 160, 64, true, sim::Pass::forward);
    for (const char* k : {"standard", "flash1"}) {
        try {
            (void)fcuda::compute_ring(ok, k, fcuda::RingTransport::emulated);
            FAIL("a kernel without an LSE was accepted");
        } catch (const std::runtime_error& e) {
            CHECK(std::string(e.what()).find("flash2 or flash2h") != std::string::npos);
        }
    }
    sim::RingProblem odd = ok;
    odd.attn.seq = 162;  // not a multiple of 2P = 4
    try {
        (void)fcuda::compute_ring(odd, kernels().front(), fcuda::RingTransport::emulated);
        FAIL("N not a multiple of the chunks was accepted");
    } catch (const std::runtime_error& e) { CHECK(std::string(e.what()).find("not a multiple") != std::string::npos); }
    sim::RingProblem many = ok;
    many.gpus = fcuda::gpu_count() + 1;
    many.attn.seq = 2 * many.gpus * 16;
    try {
        (void)fcuda::compute_ring(many, kernels().front(), fcuda::RingTransport::nccl);
        FAIL("an NCCL ring larger than the visible GPUs was accepted");
    } catch (const std::runtime_error& e) {
        const std::string w = e.what();
        // without NCCL the reason is the library; with it, the GPU count (and the emulated way out)
        CHECK((w.find("NCCL") != std::string::npos || w.find("emulated") != std::string::npos));
    }
}

TEST_CASE("ring: over NCCL the ring gives the emulated ring's bits (on the GPUs this machine has)") {
    if (!fcuda::device_available()) return gpu_cases::skip("no CUDA device");
    std::string why;
    if (!fcuda::nccl_available(&why)) {
        gpu_cases::skip("NCCL not loaded, the NCCL ring not run: " + why);
        return;
    }
    const std::string k = kernels().front();
    for (int64_t P = 1; P <= std::min(fcuda::gpu_count(), 8); P *= 2) {
        CAPTURE(P);
        const sim::RingProblem rp = ring_shape(P, sim::RingLayout::balanced, 2 * P * 48, 64, true, sim::Pass::both);
        const fcuda::RingOutputs a = fcuda::compute_ring(rp, k, fcuda::RingTransport::emulated);
        const fcuda::RingOutputs b = fcuda::compute_ring(rp, k, fcuda::RingTransport::nccl);
        auto same = [](const sim::TensorF& x, const sim::TensorF& y) {
            return x.data.size() == y.data.size() &&
                   std::memcmp(x.data.data(), y.data.data(), x.data.size() * sizeof(float)) == 0;
        };
        CHECK(same(a.O, b.O));
        CHECK(same(a.dK, b.dK));  // dK, dV: each block's are written without atomics, summed in step order
        CHECK(same(a.dV, b.dV));
        double top = 0;
        for (float v : a.dQ.data) top = std::max(top, double(std::abs(v)));
        // dQ: the kernels add it with atomics, in any order: two ulps at its largest magnitude
        CHECK(sim::validate(b.dQ, a.dQ, rp.attn.dtype).max_abs <= 2 * ulp_at(rp.attn.dtype, top));
        CHECK(a.sends == b.sends);
        CHECK(a.link_bytes == b.link_bytes);
    }
}
