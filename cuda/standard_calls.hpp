// cuda/standard_calls.hpp — cuda/standard.cu's own calls one at a time, as its forward and backward
// make them, for the ceilings that time them alone (cuda/ceilings_standard.cu). Internal to cuda/.
#pragma once
#include <cuda_runtime.h>

#include <vector>

#include "cuda/api.hpp"
#include "sim/dtype.hpp"

namespace fcuda {

// out = alpha op(P) X for `heads` heads (row-major: P heads x N x N, X and out heads x N x d), fp32
// accumulate, one cuBLAS strided-batched call: op(P) = P for O = P V and dQ = scale dS K, P^T
// (transposed) for dV = P^T dO and dK = scale dS^T Q. (S = Q K^T and dP = dO V^T: standard_scores.)
void standard_apply(sim::DType dt, int N, int d, int heads, float alpha, const void* P, bool transposed, const void* X,
                    void* out, cudaStream_t s);
// The two-pass row softmax kernels alone (one block of 256 threads a row, the row read twice), no
// mask, `heads` x N rows of N: forward P = softmax(scale S); backward dS = P o (dP - rowsum(P o dP)).
void standard_softmax_two_pass(sim::DType dt, int N, int heads, float scale, const void* S, void* P, cudaStream_t s);
void standard_softmax_bwd_two_pass(sim::DType dt, int N, int heads, const void* P, const void* dP, void* dS,
                                   cudaStream_t s);

// standard's calls timed alone at row lengths N that are not multiples of 8 and their aligned
// neighbours (cuda/ceilings_standard.cu; part of measure_ceilings).
std::vector<Ceiling> measure_standard_ceilings(int sms);

}  // namespace fcuda
