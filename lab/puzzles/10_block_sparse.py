"""Puzzle 10: block-sparse attention (FA2 forward).

Goal: puzzle 6, but query block i attends only to the key blocks j where p.block_mask[i][j] is True
(a T_r x T_c array). Skip the others entirely: no K_j, V_j load, no S_ij.
SRAM: as puzzle 6. Bytes: Q, O once; K and V: B_c d e for each kept block, nothing for the rest.
"""


def kernel(tm, p):
    raise NotImplementedError
