// sim/reference.hpp — the one obviously-correct attention (float64, Eigen) that checks every path,
// and validate(), which says how far an output is from it.
#pragma once
#include <cstdint>
#include <string>
#include <vector>

#include "sim/tensor.hpp"

namespace sim {

// O = softmax(scale * Q K^T [+ mask]) V in float64, per (batch, head). Inputs are used as given
// (already rounded to the storage dtype). Masked-out rows (no visible key) give 0.
TensorD attention_reference(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF& V);

// The gradients of L = sum(O o dO) with respect to Q, K, V, float64, per (batch, head):
//   P = softmax(S), dV = P^T dO, dP = dO V^T, D = rowsum(P o dP), dS = P o (dP - D),
//   dQ = scale dS K, dK = scale dS^T Q. Fully masked rows contribute nothing.
struct Gradients {
    TensorD dQ, dK, dV;
};
Gradients attention_backward_reference(const Problem& p, const TensorF& Q, const TensorF& K, const TensorF& V,
                                       const TensorF& dO);

// The per-row log-sum-exp of the scaled, masked scores, float64 (-inf for fully masked rows).
std::vector<double> lse_reference(const Problem& p, const TensorF& Q, const TensorF& K);

struct ErrorStats {
    double max_abs = 0;        // max |actual - expected|
    double rel_frobenius = 0;  // ||actual - expected||_F / ||expected||_F
    int64_t max_ulp = 0;       // max ulp distance in the compared dtype
    int64_t identical = 0;     // elements bit-identical after rounding to the dtype
    int64_t count = 0;         // elements compared
    int64_t nonfinite = 0;     // NaN or inf in actual (any > 0 fails)
    int64_t first_bad = -1;    // flat index of the largest error (or first non-finite)
    std::string where;         // "(b*h, n, k)" of first_bad
    bool ok(double max_abs_tol) const { return nonfinite == 0 && max_abs <= max_abs_tol; }
};

// Compare `actual` with `expected` element by element. Ulp distances and identical counts use
// `dtype` (both values rounded to it first).
ErrorStats validate(const TensorF& actual, const TensorD& expected, DType dtype);
ErrorStats validate(const TensorF& actual, const TensorF& expected, DType dtype);
// Same on flat arrays (shape given for the index of the worst element).
ErrorStats validate(const float* actual, const double* expected, int64_t count, int64_t rows, int64_t cols,
                    DType dtype);

}  // namespace sim
