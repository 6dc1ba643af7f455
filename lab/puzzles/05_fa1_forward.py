"""Puzzle 5: Algorithm 1's forward (FlashAttention-1).

Goal: O = softmax(scale Q K^T) V as the paper's Algorithm 1 computes it: O (float32), l, m live in
HBM (initialise them: O = 0, l = 0, m = -inf); outer loop over K/V blocks j (K_j, V_j loaded once);
inner loop over query blocks i: load Q_i, O_i, l_i, m_i; S = scale Q_i K_j^T; mt = rowmax(S);
P = exp(S - mt); lt = rowsum(P); m_new = max(m, mt); l_new = e^(m - m_new) l + e^(mt - m_new) lt;
O_i = (l e^(m - m_new) O_i + e^(mt - m_new) P V_j) / l_new; store O_i, l_new, m_new.
SRAM: the built-in flash1's buffers at these tiles, plus room for P V (B_r x d) and eight row vectors.
Bytes: exactly what `flashsim simulate --algo flash1` counts at the same B_r, B_c (the check shows
it): Q, O, l, m move once per (i, j) step, which is why FA2 reorders the loops.
"""


def kernel(tm, p):
    raise NotImplementedError
