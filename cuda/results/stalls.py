#!/usr/bin/env python3
"""Summarise Nsight Compute's SASS page (gpu_session.sh's profile stage, profile_<k>_sass.csv.gz):
the share of the warps' stall samples by reason and by opcode, and the local-memory (spill)
instructions executed.  Usage: python3 cuda/results/stalls.py FILE.csv.gz [...]"""
import collections, csv, gzip, sys


def summarise(path):
    with gzip.open(path, "rt") as f:
        rows = list(csv.reader(f))
    if len(rows) < 3:
        raise SystemExit(f"{path}: not an Nsight Compute source page (fewer than 3 rows)")
    hdr, data = rows[1], [r for r in rows[2:] if len(r) >= len(rows[1])]
    ix = {h: i for i, h in enumerate(hdr)}
    for need in ("Source", "Warp Stall Sampling (All Samples)", "Instructions Executed"):
        if need not in ix:
            raise SystemExit(f"{path}: no column '{need}'")
    reasons = [h for h in hdr if h.startswith("stall_") and "Not Issued" not in h]
    by_reason, by_op, total, spills = collections.Counter(), collections.Counter(), 0, 0
    for r in data:
        n = int(r[ix["Warp Stall Sampling (All Samples)"]] or 0)
        total += n
        words = r[ix["Source"]].split()
        if words and words[0].startswith("@"):
            words = words[1:]
        op = words[0].split(".")[0] if words else "?"
        by_op[op] += n
        if op in ("LDL", "STL"):
            spills += int(r[ix["Instructions Executed"]] or 0)
        for h in reasons:
            by_reason[h[6:]] += int(r[ix[h]] or 0)
    if total == 0:
        raise SystemExit(f"{path}: no stall samples")
    print(f"{path}: {rows[0][1][:90]}")
    print(f"  samples {total}; local-memory (LDL/STL) instructions executed {spills}")
    print("  by reason: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_reason.most_common(9)))
    print("  by opcode: " + ", ".join(f"{k} {100 * v / total:.1f}%" for k, v in by_op.most_common(12)))


if __name__ == "__main__":
    if len(sys.argv) < 2:
        raise SystemExit(__doc__)
    for p in sys.argv[1:]:
        summarise(p)
