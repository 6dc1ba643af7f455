// tests/cuda/test_bench_modes.cpp — the bench's GPU modes on any card, part of test_cuda_gpu (skipped
// without a device):
//   * a case that fails (an allocation no card can make) leaves the GPU clean: the next case's output
//     matches the CPU's float64 reference, and the message says what was asked and what the card has,
//     with no source path;
//   * --fit's search ends where the card's free memory and flashsim's counting end, so it finds an N
//     on an 80 GB H100 as on an H200 (it found none on the H100 before);
//   * the prediction preset follows the card.
#include <doctest/doctest.h>

#include <string>

#include "cuda/api.hpp"
#include "sim/kernel_config.hpp"
#include "sim/reference.hpp"
#include "sim/tensor.hpp"

namespace {

// flash2's forward on a small problem, checked against float64 on the CPU. The bar: 2^-7 relative
// (Frobenius) for bf16, the dtype's own rounding of O (8 bits of mantissa) with room for the sum order.
void check_small_case_correct() {
    sim::Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seq = 300;
    p.head_dim = 64;
    p.dtype = sim::DType::bf16;
    p.seed = 7;
    const fcuda::Outputs out = fcuda::compute(p, "flash2", fcuda::Pass::forward);
    const sim::Inputs in = sim::generate_inputs(p);
    const sim::ErrorStats e = sim::validate(out.O, sim::attention_reference(p, in.Q, in.K, in.V), p.dtype);
    CHECK(e.count == p.batch * p.heads * p.seq * p.head_dim);
    CHECK(e.nonfinite == 0);
    CHECK(e.rel_frobenius <= 0x1p-7);
}

}  // namespace

TEST_CASE("a failed case leaves the next one correct" * doctest::test_suite("gpu")) {
    check_small_case_correct();  // the same case before, so a failure below is the isolation's
    // 1024 heads of N = 2^19 at d = 128: each tensor 2^19 * 1024 * 128 * 2 bytes = 128 GiB, more than any
    // card holds (B H N^2 d = 2^55, inside what flashsim counts)
    sim::Problem huge;
    huge.batch = 1;
    huge.heads = 1024;
    huge.seq = int64_t{1} << 19;
    huge.head_dim = 128;
    huge.dtype = sim::DType::bf16;
    fcuda::RunOptions o;
    o.repeats = 1;
    o.warmup = 0;
    o.check_reference = false;
    o.check_standard = false;
    o.counters = false;
    std::string message;
    try {
        (void)fcuda::run(huge, "flash2", o);
    } catch (const std::exception& e) { message = e.what(); }
    CAPTURE(message);
    REQUIRE_FALSE(message.empty());
    CHECK(message.find("GiB") != std::string::npos);          // what was asked and what the card has
    CHECK(message.find("lower --seq") != std::string::npos);  // what to do
    CHECK(message.find(".cuh:") == std::string::npos);        // no source path
    CHECK(message.find(".cu:") == std::string::npos);
    CHECK(fcuda::clear_error_state().empty());
    check_small_case_correct();
    // and the bench's own timed path after it
    sim::Problem small;
    small.heads = 2;
    small.seq = 256;
    small.head_dim = 64;
    fcuda::RunOptions t;
    t.repeats = 2;
    t.warmup = 1;
    t.counters = false;
    const fcuda::Measurement m = fcuda::run(small, "flash2", t);
    CHECK(m.unwritten == 0);
    CHECK(m.note.empty());
    REQUIRE(m.vs_reference.count > 0);
    CHECK(m.vs_reference.rel_frobenius <= 0x1p-7);
}

TEST_CASE("--fit finds a longest N on this card's free memory" * doctest::test_suite("gpu")) {
    sim::Problem shape;
    shape.batch = 1;
    shape.heads = 16;
    shape.head_dim = 128;
    shape.dtype = sim::DType::bf16;
    for (const char* v : {"standard", "flash2"}) {
        CAPTURE(v);
        const fcuda::FitProbe r = fcuda::probe_fit(v, shape);
        CHECK(r.longest_n > 0);
        CHECK(r.peak_bytes_at_longest <= r.free_bytes);
        // the next grid point is the first that did not fit (or the search ended at flashsim's limit)
        if (r.next_n > 0) CHECK(r.next_n > r.longest_n);
    }
    CHECK(fcuda::clear_error_state().empty());
    check_small_case_correct();
}

TEST_CASE("the prediction preset follows the card" * doctest::test_suite("gpu")) {
    const std::string name = fcuda::device_name();
    CAPTURE(name);
    const auto preset = sim::preset_for_device(name);
    if (name.find("H100") != std::string::npos && name.find("HBM3") != std::string::npos)
        CHECK(preset.value() == "H100-SXM");
    if (name.find("H200") != std::string::npos) CHECK(preset.value() == "H200");
}
