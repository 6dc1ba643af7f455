"""Puzzle 6: FlashAttention-2's forward.

Goal: O (p.dtype) and LSE = m + log l (float32, N x 1), query blocks outer: for each i, Q_i stays in
SRAM with a float32 accumulator, m_i = -inf and l_i = 0; for each key block j: S = scale Q_i K_j^T,
m_new = max(m, rowmax S), alpha = exp(m - m_new), P = exp(S - m_new), l = alpha l + rowsum P,
acc = alpha acc + P V_j. At the end acc / l is O_i; both O_i and LSE_i are stored once.
SRAM: the built-in flash2's buffers at these tiles plus four row vectors (compute in place).
Bytes: exactly `flashsim simulate --algo flash2` at the same B_r, B_c: Q and O once, K and V once
per query block. p.N is not a multiple of the tiles: the last tiles are smaller.
"""


def kernel(tm, p):
    raise NotImplementedError
