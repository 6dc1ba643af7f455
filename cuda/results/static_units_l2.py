#!/usr/bin/env python3
"""What flash2h's static order (its default causal grid at d = 64 up to N = 4,224) does to the DRAM
reads of K and V, against the same units handed out by a counter. A sketch for cuda/NOTES.md, not
the simulator's model.

The static order runs one thread block an SM (132); a causal head's query blocks (192 rows at d = 64)
are paired into units, the p-th heaviest with the p-th lightest, and a lone middle block when their
count is odd; block s takes units s, s + 132, s + 264, ... in turn. The sketch replays the units one
key-block step at a time, round robin (every step the same time), each step reading K_j and V_j
(128 keys) of its head and a block's first step its Q_i, through an LRU cache of the L2 capacity
that the H200's re-read probe measured (31 MiB, cuda/NOTES.md). It prints the reads beyond the
compulsory Q, K and V and the makespan in steps, for the rows' shapes (B * H = 16384 * 32 / N).
The simulator walks this order itself since 2026-12-05 (sim::GridOrder::static_units, `flashsim
simulate --grid static`); this first sketch is kept for the note that used it.

usage: python3 cuda/results/static_units_l2.py
"""
from collections import OrderedDict

SMS = 132
L2 = 31 << 20
D, BR, BC, E = 64, 192, 128, 2


def units_of(heads, n):
    tr = (n + BR - 1) // BR
    out = []
    for h in range(heads):
        lo, hi = 0, tr - 1
        while lo <= hi:
            out.append((h, [hi] if lo == hi else [hi, lo]))
            lo, hi = lo + 1, hi - 1
    return out


def steps_of(unit, n):
    h, blocks = unit
    steps = []
    for i in blocks:
        key_blocks = (min(n, (i + 1) * BR) - 1) // BC + 1  # causal: keys up to the block's last row
        for j in range(key_blocks):
            acc = [(("K", h, j), BC * D * E), (("V", h, j), BC * D * E)]
            if j == 0:
                acc.append((("Q", h, i), BR * D * E))
            steps.append(acc)
    return steps


def replay(n, heads, static):
    units = units_of(heads, n)
    cache, used, reads = OrderedDict(), 0, 0
    queues = [units[s::SMS] for s in range(SMS)]
    taken = [0] * SMS
    counter = 0

    def take(s):
        nonlocal counter
        if static:
            if taken[s] == len(queues[s]):
                return None
            taken[s] += 1
            return steps_of(queues[s][taken[s] - 1], n)
        if counter == len(units):
            return None
        counter += 1
        return steps_of(units[counter - 1], n)

    cur = [take(s) for s in range(SMS)]
    pos, done, t = [0] * SMS, [0] * SMS, 0
    while any(c is not None for c in cur):
        t += 1
        for s in range(SMS):
            if cur[s] is None:
                continue
            for key, size in cur[s][pos[s]]:
                if key in cache:
                    cache.move_to_end(key)
                    continue
                reads += size
                cache[key] = size
                used += size
                while used > L2:
                    used -= cache.popitem(last=False)[1]
            pos[s] += 1
            if pos[s] == len(cur[s]):
                pos[s], cur[s] = 0, take(s)
                if cur[s] is None:
                    done[s] = t
    return reads, max(done)


def main():
    print("| N | B x H | units a head | reads beyond Q, K, V (MiB): static | by a counter | makespan (steps): static | by a counter |")
    print("|---|---|---|---|---|---|---|")
    for n in (1024, 2048, 4096):
        heads = 16384 * 32 // n
        compulsory = 3 * heads * n * D * E
        rs, ms = replay(n, heads, True)
        rc, mc = replay(n, heads, False)
        per_head = len(units_of(1, n))
        print(f"| {n} | {heads} | {per_head} | {(rs - compulsory) / 2**20:.0f} | {(rc - compulsory) / 2**20:.0f} | {ms} | {mc} |")


if __name__ == "__main__":
    main()
