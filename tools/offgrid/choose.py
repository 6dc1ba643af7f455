#!/usr/bin/env python3
"""tools/offgrid/choose.py — choose the off-grid shape set before anything is measured.

The recorded grid (results/h200/bench.json) holds B*N = 16384 and H*d = 2048 at powers of two. The
off-grid set draws shapes the model never saw, at random, by a rule fixed here and recorded in the
output beside the seed, so that anyone can draw the same set again and nobody picks shapes after
seeing how the model does on them.

The rule (each draw independent, uniform):
  batch B in 1..8, heads H in 4..40, sequence N in 1000..20000 and not a power of two,
  head dim d in {64, 128}, causal mask or none;
  a draw is refused (and drawn again) when B*H*N^2 > 2^33: standard attention keeps N x N matrices
  in HBM, and 2^33 scores a matrix is the largest the recorded grid ran (N = 16384, B*H = 32), so
  every kernel fits the memory of an 80 GB card as it did there.
Every shape is measured for each kernel (standard, flash2, flash2h) and each pass (forward,
backward): 6 rows a shape, so --shapes 10 gives 60 rows a card.

  python3 tools/offgrid/choose.py --seed 57 --shapes 10 > tools/offgrid/shapes.json
"""
import argparse
import json
import random
import sys

RULE = {
    "batch": [1, 8],
    "heads": [4, 40],
    "seq": [1000, 20000],
    "seq_not_power_of_two": True,
    "head_dim": [64, 128],
    "causal": [False, True],
    "max_scores_a_matrix": 2**33,
    "kernels": ["standard", "flash2", "flash2h"],
    "passes": ["forward", "backward"],
    "generator": "Python random.Random(seed), draws in the order batch, heads, seq, head_dim, causal",
}


def power_of_two(n):
    return n > 0 and n & (n - 1) == 0


def draw(rng):
    while True:
        b = rng.randint(*RULE["batch"])
        h = rng.randint(*RULE["heads"])
        n = rng.randint(*RULE["seq"])
        d = rng.choice(RULE["head_dim"])
        causal = rng.choice(RULE["causal"])
        if power_of_two(n) or b * h * n * n > RULE["max_scores_a_matrix"]:
            continue
        return {"batch": b, "heads": h, "seq": n, "head_dim": d, "causal": causal}


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--seed", type=int, required=True, help="the generator's seed (recorded in the output)")
    ap.add_argument("--shapes", type=int, default=10, help="shapes to draw (6 rows each)")
    a = ap.parse_args()
    if a.shapes < 1:
        sys.exit("choose.py: --shapes must be at least 1")
    rng = random.Random(a.seed)
    shapes, seen = [], set()
    while len(shapes) < a.shapes:
        s = draw(rng)
        key = tuple(s.values())
        if key not in seen:
            seen.add(key)
            shapes.append(s)
    json.dump({"seed": a.seed, "rule": RULE, "shapes": shapes}, sys.stdout, indent=1)
    print()


if __name__ == "__main__":
    main()
