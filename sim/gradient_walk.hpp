// sim/gradient_walk.hpp — the backward pass of one head derived step by step in float64, for a
// problem small enough to print (the course's toy problem), each gradient checked against central
// finite differences of the loss. The lesson on the backward prints these numbers.
#pragma once
#include <cstdint>
#include <vector>

#include "sim/tensor.hpp"

namespace sim {

// The loss is L = sum over n, k of O_nk dO_nk, so dO is the gradient of L with respect to O.
// Row-major N x N or N x d matrices of head 0, float64.
struct GradientWalk {
    int64_t seq = 0, head_dim = 0;
    double scale = 0;              // the softmax scale: S = scale Q K^T
    std::vector<double> P;         // N x N: softmax of S, row by row
    std::vector<double> O;         // N x d: P V
    std::vector<double> dV;        // N x d: P^T dO
    std::vector<double> dP;        // N x N: dO V^T
    std::vector<double> D;         // N: rowsum(dO o O)
    std::vector<double> D_from_P;  // N: rowsum(P o dP), equal to D (the identity the kernels use)
    std::vector<double> dS;        // N x N: P o (dP - D), D broadcast along each row
    std::vector<double> dQ, dK;    // N x d: scale dS K, scale dS^T Q
    // The same gradients by central differences: (L(x + h) - L(x - h)) / 2h for every entry.
    double step = 0;  // h
    std::vector<double> fd_dQ, fd_dK, fd_dV;
    double max_abs_diff = 0;      // the largest |analytic - finite difference| over dQ, dK, dV
    double max_abs_gradient = 0;  // the largest |entry| of dQ, dK, dV (for scale)
};

// Throws sim::Error when N x N x d exceeds 2^16: finite differences redo the forward pass twice for
// each of the 3 N d inputs, which is meant for a problem a learner can read, not a real one.
GradientWalk gradient_walk(const Problem& p, double step = 1e-4);

}  // namespace sim
