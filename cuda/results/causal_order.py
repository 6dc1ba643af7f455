#!/usr/bin/env python3
"""How long the causal grids of flash2h take on 132 SMs, one thread block an SM, when the scheduler
hands blocks out in grid order and a block's time is proportional to its steps: the current order
(a head's blocks, then the next head's) against block-major order (every head's heaviest block,
then every head's next). Prints the makespan over the ideal (total work / SMs). A sketch for
cuda/NOTES.md's prediction, not a model of the GPU: per-block fixed costs are left out."""
import heapq

SMS = 132


def makespan(lengths):
    free = [0.0] * SMS
    for length in lengths:
        t = heapq.heappop(free)
        heapq.heappush(free, t + length)
    return max(free)


for n, d in [(4096, 64), (8192, 64), (16384, 64), (4096, 128), (8192, 128), (16384, 128)]:
    heads = 16384 // n * 2048 // d  # B N = 16384 tokens, H d = 2048
    t_c, t_r = n // 128, n // 64
    bwd = [t_r - 2 * j for j in range(t_c)]  # key block j (B_c = 128) visits query blocks from 2j on (B_r = 64)
    fwd = [x + 1 for x in reversed(range(n // 128))]  # query block i (B_r = 128) visits i + 1 key blocks
    for name, blocks in (("backward", bwd), ("forward", fwd)):
        ideal = heads * sum(blocks) / SMS
        heads_order = [b for _ in range(heads) for b in blocks]
        heavy_order = [b for b in blocks for _ in range(heads)]
        print(f"{name:8s} N = {n:5d} d = {d:3d}: heads {makespan(heads_order) / ideal:.3f}"
              f"  heavy {makespan(heavy_order) / ideal:.3f}")
