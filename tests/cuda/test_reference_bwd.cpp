// tests/cuda/test_reference_bwd.cpp — the float64 backward reference (cuda/reference_bwd.hpp)
// against central finite differences of the forward reference (sim::attention_reference):
// with L = sum(dO o O), dL/dX = the gradient the reference must return. No GPU needed.
#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN  // the main of test_cuda_reference
#include <doctest/doctest.h>

#include <cmath>

#include "cuda/reference_bwd.hpp"
#include "sim/reference.hpp"

namespace {

double loss(const sim::Problem& p, const sim::TensorF& Q, const sim::TensorF& K, const sim::TensorF& V,
            const sim::TensorF& dO) {
    const sim::TensorD O = sim::attention_reference(p, Q, K, V);
    double s = 0;
    for (size_t k = 0; k < O.data.size(); ++k) s += O.data[k] * double(dO.data[k]);
    return s;
}

void check_grads(const sim::Problem& p) {
    sim::Inputs in = sim::generate_inputs(p);
    const sim::TensorF dO = sim::generate_input(p, sim::InputTensor::dO);
    const fcuda::GradsD g = fcuda::attention_backward_reference(p, in.Q, in.K, in.V, dO);
    const float h = 1.0f / 1024.0f;  // exact in float; inputs are multiples of 2^-23 in [-1, 1)
    struct Which {
        sim::TensorF* x;
        const sim::TensorD* grad;
        const char* name;
    };
    for (Which w : {Which{&in.Q, &g.dQ, "dQ"}, Which{&in.K, &g.dK, "dK"}, Which{&in.V, &g.dV, "dV"}}) {
        for (int64_t idx = 0; idx < w.x->size(); idx += 7) {  // a spread of elements
            const float x0 = w.x->data[idx];
            w.x->data[idx] = x0 + h;
            const double lp = loss(p, in.Q, in.K, in.V, dO);
            w.x->data[idx] = x0 - h;
            const double lm = loss(p, in.Q, in.K, in.V, dO);
            w.x->data[idx] = x0;
            const double fd = (lp - lm) / (2.0 * double(h));
            INFO(w.name << "[" << idx << "] analytic " << w.grad->data[idx] << " finite difference " << fd);
            CHECK(std::abs(fd - w.grad->data[idx]) <= 1e-5 + 1e-4 * std::abs(fd));
        }
    }
}

}  // namespace

TEST_CASE("backward reference matches finite differences, non-causal") {
    sim::Problem p;
    p.batch = 1;
    p.heads = 2;
    p.seq = 9;
    p.head_dim = 8;
    p.dtype = sim::DType::fp32;
    p.seed = 7;
    check_grads(p);
}

TEST_CASE("backward reference matches finite differences, causal") {
    sim::Problem p;
    p.batch = 2;
    p.heads = 1;
    p.seq = 11;
    p.head_dim = 4;
    p.dtype = sim::DType::fp32;
    p.causal = true;
    p.seed = 9;
    check_grads(p);
}
