"""Puzzle 4: tiled S = scale Q K^T under a byte budget.

Goal: S (N x N, p.dtype) = p.scale * Q K^T, in B_r x B_c tiles (tm.matmul(q, k, transpose_b=True,
scale=p.scale)).
SRAM: Q_i (B_r x d) + K_j (B_c x d) in the storage type + the S tile in float32: nothing more.
Bytes: Q read once (N d e), K read once per row of tiles (T_r N d e), S written once (N^2 e). So
Q_i must stay in SRAM while the K_j stream past; loading Q_i for every tile costs T_c times its bytes.
"""


def kernel(tm, p):
    raise NotImplementedError
