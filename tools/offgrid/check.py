#!/usr/bin/env python3
"""tools/offgrid/check.py — the kernel model (rung 3, "this kernel") against the off-grid measurements.

Prints, for every row of a bench JSON (tools/offgrid/measure.sh's output, or any recorded bench
file): the kernel, pass, shape, measured median, predicted time and their ratio; then, per kernel
and in all, the share of the certain rows (the model does not mark them uncertain) whose prediction
lies within 15% of the measured time. Exit status 1 when a certain row lies outside.

  python3 tools/offgrid/check.py OFFGRID.json                       # the predictions recorded
  python3 tools/offgrid/check.py OFFGRID.json --resimulate build/bin/flashsim
                                  # the current model's, recomputed on a copy (no GPU needed)
  python3 tools/offgrid/check.py OFFGRID.json --resimulate build/bin/flashsim --ceilings estimated
                                  # ... with the ceilings named (auto, measured, estimated, datasheet)
"""
import argparse
import json
import os
import shutil
import subprocess
import sys
import tempfile

BAND = 0.15  # the bar: predicted within 15% of measured


def load(path, flashsim, ceilings):
    if not flashsim:
        return json.load(open(path))
    with tempfile.TemporaryDirectory() as tmp:
        copy = os.path.join(tmp, "rows.json")
        shutil.copy(path, copy)
        r = subprocess.run([flashsim, "bench", "--resimulate", copy, "--json", copy, "--predict-ceilings", ceilings],
                           capture_output=True, text=True)
        if r.returncode != 0:
            sys.exit(f"check.py: {flashsim} bench --resimulate failed: {r.stdout}{r.stderr}".strip())
        return json.load(open(copy))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("file", help="a bench JSON with rows")
    ap.add_argument("--resimulate", metavar="FLASHSIM", help="recompute the predictions with this flashsim first")
    ap.add_argument("--ceilings", default="auto", choices=["auto", "measured", "estimated", "datasheet"],
                    help="with --resimulate: the ceilings the model is given (auto: the card's measured file, else "
                         "estimated from a measured card of its architecture, else the datasheet)")
    a = ap.parse_args()
    if not os.path.exists(a.file):
        sys.exit(f"check.py: no such file {a.file}; measure one with tools/offgrid/measure.sh")
    if a.ceilings != "auto" and not a.resimulate:
        sys.exit("check.py: --ceilings recomputes the predictions: add --resimulate FLASHSIM")
    doc = load(a.file, a.resimulate, a.ceilings)
    rows = doc.get("rows", [])
    if not rows:
        sys.exit(f"check.py: {a.file} holds no rows")
    sel = doc.get("selection")
    print(f"{a.file}: {doc.get('device', '?')}, {len(rows)} rows" +
          (f"; selection seed {sel['seed']}, {len(sel['shapes'])} shapes" if sel else ""))
    print(f"{'kernel':8} {'pass':8} {'B':>2} {'H':>3} {'N':>6} {'d':>4} {'mask':6} {'measured':>10} "
          f"{'this kernel':>12} {'pred/meas':>9}  certain  within 15%")
    tally = {}
    for r in rows:
        ms, pred = r.get("ms_median"), r.get("predicted_ms")
        ok = r.get("ok", True) and ms and pred
        certain = bool(ok) and not r.get("predicted_uncertain", False)
        ratio = pred / ms if ok else float("nan")
        inside = certain and abs(ratio - 1) <= BAND
        key = r.get("variant", "?")
        t = tally.setdefault(key, [0, 0])
        if certain:
            t[0] += 1
            t[1] += inside
        print(f"{key:8} {r.get('pass', '?'):8} {r.get('batch', 0):>2} {r.get('heads', 0):>3} {r.get('seq', 0):>6} "
              f"{r.get('head_dim', 0):>4} {'causal' if r.get('causal') else 'none':6} "
              f"{(ms or 0):>10.4f} {(pred or 0):>12.4f} {ratio:>9.3f}  {'yes' if certain else 'no ':7}  "
              f"{'yes' if inside else ('no' if certain else '-')}")
    n = sum(t[0] for t in tally.values())
    k = sum(t[1] for t in tally.values())
    for key, (c, i) in sorted(tally.items()):
        print(f"  {key}: {i} of {c} certain rows within 15%")
    print(f"all: {k} of {n} certain rows within 15% ({100.0 * k / n if n else 0:.0f}%)")
    return 0 if k == n else 1


if __name__ == "__main__":
    sys.exit(main())
