"""Puzzle 7: causal tile skipping (FA2 forward, p.causal is True).

Goal: puzzle 6 with the causal mask (query n sees keys 0..n). A tile whose first key comes after
its last query (c0 > r0 + rows - 1) is entirely masked: skip it, loading neither K_j nor V_j.
A tile on the diagonal is partly masked: tm.mask_causal(S, r0, c0) before the max.
SRAM: as puzzle 6. Bytes: `flashsim simulate --algo flash2 --causal` at the same tiles, about half
of the dense K and V traffic.
"""


def kernel(tm, p):
    raise NotImplementedError
