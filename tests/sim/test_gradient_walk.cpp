// The gradient walk the backward lesson prints: each product against the project's float64
// reference backward (independent code: Eigen, row blocks), the identities the kernels rely on, and
// the finite differences within a tolerance derived from the problem's bounds.
#include <doctest/doctest.h>

#include <cmath>

#include "sim/gradient_walk.hpp"
#include "sim/reference.hpp"

using namespace sim;

namespace {
Problem toy() {  // lesson 5's toy problem: N = 8, d = 4, fp32, no mask
    Problem p;
    p.seq = 8;
    p.head_dim = 4;
    p.dtype = DType::fp32;
    return p;
}

double max_diff(const std::vector<double>& a, const TensorD& b) {
    double m = 0;
    for (size_t i = 0; i < a.size(); ++i) m = std::max(m, std::abs(a[i] - b.data[i]));
    return m;
}
}  // namespace

TEST_CASE("gradient walk: the products equal the float64 reference backward") {
    const Problem p = toy();
    const GradientWalk w = gradient_walk(p);
    const Gradients ref =
        attention_backward_reference(p, generate_input(p, InputTensor::Q), generate_input(p, InputTensor::K),
                                     generate_input(p, InputTensor::V), generate_input(p, InputTensor::dO));
    // Both float64, summing N = 8 products of numbers below 1 in another order: rounding near 1e-15.
    CHECK(max_diff(w.dQ, ref.dQ) < 1e-12);
    CHECK(max_diff(w.dK, ref.dK) < 1e-12);
    CHECK(max_diff(w.dV, ref.dV) < 1e-12);
    CHECK(w.scale == doctest::Approx(0.5));  // 1 / sqrt(4)
}

TEST_CASE("gradient walk: D two ways, and each row of dS sums to zero") {
    const GradientWalk w = gradient_walk(toy());
    for (int64_t i = 0; i < w.seq; ++i) {
        CAPTURE(i);
        // rowsum(P o dP) = sum_j P_ij dO_i . V_j = dO_i . (P V)_i = rowsum(dO o O): equal in exact arithmetic.
        CHECK(std::abs(w.D[size_t(i)] - w.D_from_P[size_t(i)]) < 1e-12);
        // sum_j P_ij (dP_ij - D_i) = D_i - D_i sum_j P_ij = 0: a softmax's gradient has no component along 1.
        double s = 0;
        for (int64_t j = 0; j < w.seq; ++j) s += w.dS[size_t(i * w.seq + j)];
        CHECK(std::abs(s) < 1e-12);
    }
}

// The tolerance, derived. Central differences err by h^2/6 |L'''| plus rounding. Inputs lie in
// [-1, 1) and the scale is 1/2, so one Q entry shifts a row's scores by a_j with |a_j| <= 1/2 (range
// 1), and the row's loss is a softmax average of c_j = V_j . dO_i with |c_j| <= d = 4 (range 8). The
// third derivative of such an average is E[(c - Ec)(a - Ea)^3] - 3 Var(a) Cov(c, a), at most
// 8 + 3 x 1/4 x 2 = 9.5; a K entry moves one score in each of the N = 8 rows: at most 76. L is linear
// in V (no truncation). So truncation <= 76 h^2 / 6 = 1.3e-7 at h = 1e-4; rounding, L's 32 terms of
// at most 1 each evaluated to about 64 ulps, is 2 x 64 x 2.2e-16 x 32 / 2h = 4.5e-9. Bound: 1.4e-7;
// the check takes 1e-6.
TEST_CASE("gradient walk: finite differences agree within the derived tolerance, and would catch a lost scale") {
    const GradientWalk w = gradient_walk(toy());
    CHECK(w.step == 1e-4);
    CHECK(w.max_abs_diff < 1e-6);
    CHECK(w.max_abs_gradient > 1e-2);  // the agreement is not of zeros
    // A planted fault: dQ without the softmax scale differs from the differences by half of dQ.
    double fault = 0;
    for (size_t i = 0; i < w.dQ.size(); ++i) fault = std::max(fault, std::abs(w.dQ[i] / w.scale - w.fd_dQ[i]));
    CHECK(fault > 1e-3);
}

TEST_CASE("gradient walk: refuses problems too large to read or masked") {
    Problem big = toy();
    big.seq = 256;
    CHECK_THROWS_WITH_AS(gradient_walk(big), doctest::Contains("N x N x d at most 65,536"), Error);
    Problem causal = toy();
    causal.causal = true;
    CHECK_THROWS_WITH_AS(gradient_walk(causal), doctest::Contains("unmasked"), Error);
    CHECK_THROWS_AS(gradient_walk(toy(), 0.0), Error);
}
