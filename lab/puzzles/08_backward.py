"""Puzzle 8: FA2's backward with recomputation.

Inputs in HBM: Q, K, V, O, dO (p.dtype) and LSE (float32) from the forward. Outputs dQ, dK, dV.
Scratch: D (N x 1, float32) and dQ_acc (N x d, float32).
  1. For each query block: D_i = rowsum(dO_i * O_i) -> D; a zero tile -> dQ_acc.
  2. For each key block j (K_j, V_j, and float32 dK_j, dV_j accumulators in SRAM), each query block i:
     S = scale Q_i K_j^T; P = exp(S - LSE_i) (sub_rows then exp); dV_j += P^T dO_i;
     dP = dO_i V_j^T; dS = P * (dP - D_i); dK_j += dS^T Q_i; dQ_i += dS K_j (load dQ_acc_i,
     accumulate, store it back). After the loop dK_j *= scale; store dK_j and dV_j.
  3. For each query block: dQ_i = scale * dQ_acc_i, stored to dQ.
SRAM: the built-in flash2 backward's buffers plus four row vectors: S/P and dP/dS in place.
Bytes: exactly `flashsim simulate --algo flash2 --pass backward` at the same tiles.
"""


def kernel(tm, p):
    raise NotImplementedError
