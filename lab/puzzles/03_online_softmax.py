"""Puzzle 3: the online softmax over key blocks.

Goal: LSE = log sum_k exp(S[r, k]) for every row of S (p.R x p.N, float32), written to LSE (R x 1).
SRAM holds a B_r x B_c tile and six row vectors, not a whole row: walk the key blocks once, keeping
per row the running max m and the running sum l of exp(s - m). When a block raises the max from
m_old to m_new, l must first be multiplied by exp(m_old - m_new) (the rescale); the block's exps use
m_new, so its max must be known before they are summed. At the end LSE = m + log l (tm.log(l, add=m)).
Bytes: S read once (R N 4), LSE written once (R 4): one pass, no second read of any score.
"""


def kernel(tm, p):
    # start each row block with m = tm.fill(rows, 1, float("-inf")) and l = tm.fill(rows, 1, 0.0)
    raise NotImplementedError
