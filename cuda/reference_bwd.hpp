// cuda/reference_bwd.hpp — float64 CPU reference of the attention backward pass (plain C++).
//
// For each head, with S = scale Q K^T (masked like the forward), P = softmax(S) row by row:
//   dV = P^T dO,  dP = dO V^T,  D_n = sum_k P_nk dP_nk  (= rowsum(dO o O)),
//   dS = P o (dP - D),  dQ = scale dS K,  dK = scale dS^T Q.
// Walked one query row at a time (O(N) extra memory); cost B*H*N*N*d multiply-adds times ~4.
// sim/ may get its own backward later; until then the GPU tests and the bench check against this.
#pragma once
#include "sim/problem.hpp"
#include "sim/tensor.hpp"

namespace fcuda {

struct GradsD {
    sim::TensorD dQ, dK, dV;  // (B, H, N, d)
};

GradsD attention_backward_reference(const sim::Problem& p, const sim::TensorF& Q, const sim::TensorF& K,
                                    const sim::TensorF& V, const sim::TensorF& dO);

}  // namespace fcuda
