// The shared generator: deterministic, in range, never all zeros, distinct per tensor and seed.
#include <doctest/doctest.h>

#include <cmath>
#include <set>

#include "sim/dtype.hpp"
#include "sim/tensor.hpp"
#include "support.hpp"

using namespace sim;
using namespace sim::test;

TEST_CASE("input_value is a pure function of (seed, tensor, index) on [-1, 1)") {
    double sum = 0, sum2 = 0;
    std::set<float> distinct;
    for (uint64_t i = 0; i < 100000; ++i) {
        const float x = input_value(42, InputTensor::Q, i);
        CHECK(x == input_value(42, InputTensor::Q, i));
        REQUIRE(x >= -1.0f);
        REQUIRE(x < 1.0f);
        sum += x;
        sum2 += x * x;
        distinct.insert(x);
    }
    CHECK(std::abs(sum / 100000) < 0.01);                            // mean of U(-1,1) is 0
    CHECK(sum2 / 100000 == doctest::Approx(1.0 / 3).epsilon(0.02));  // variance 1/3
    CHECK(distinct.size() > 99000);
    CHECK(input_value(42, InputTensor::Q, 5) != input_value(42, InputTensor::K, 5));
    CHECK(input_value(42, InputTensor::Q, 5) != input_value(43, InputTensor::Q, 5));
}

TEST_CASE("inputs are rounded to the storage type") {
    Problem p = shape(16, 8);
    p.dtype = DType::bf16;
    const TensorF q = generate_input(p, InputTensor::Q);
    for (float x : q.data) CHECK(round_to(DType::bf16, x) == x);
    CHECK(round_to(DType::fp16, 1.0f + 1.0f / 4096) == 1.0f);                // below half an fp16 ulp at 1
    CHECK(round_to(DType::fp16, 1.0f + 3.0f / 4096) == 1.0f + 1.0f / 1024);  // ties and above round up
    CHECK(ulp_distance(DType::fp16, 1.0f, 1.0f + 1.0f / 1024) == 1);
    CHECK(ulp_distance(DType::bf16, 1.0f, 1.0f + 1.0f / 128) == 1);
    CHECK(ulp_distance(DType::fp32, -0.0f, 0.0f) == 0);
}
