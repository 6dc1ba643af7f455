#!/usr/bin/env python3
"""The simulator's HBM footprint against the device memory each measured kernel's harness allocated.

    tools/results/footprint_vs_peak.py [--flashsim build/bin/flashsim] [--results results/h200/bench.json]

For every row of h200/bench.json that records peak_bytes (and every row of h200/fit.json), runs
`flashsim simulate --json` on the same problem and prints allocated / footprint. The two count:

  measured peak_bytes  the harness's own allocations after the pass ran (cuda/harness.cu: one set
                       Q, K, V, O, LSE [+ dO, dQ, dK, dV] and the workspace: standard's S, P, dP, dS;
                       flash2's dQ accumulator and D; flash2h's accumulators, D, a log2 LSE copy and
                       counters). The LSE buffer is allocated for every kernel, standard included.
                       A backward row runs after its own forward in the same workspace, so it holds
                       what the forward left (standard's S): it is a training step's set.
  simulator footprint  sim::footprint (sim/footprint.hpp): the tensors the algorithm holds in HBM;
                       compared with the pass "both" for backward and step rows, "forward" otherwise.
                       It models FA2's algorithm (one fp32 dQ accumulator), not a kernel's layout.

flash2h keeps one fp32 dQ accumulator at both d (at d = 64 its bulk-sum schedule sums the two
warpgroups' parts in shared memory; rows recorded with the earlier bulk-keys schedule held two, 1.20x).
Exit status 1 when a row is outside [1, 1.05].
"""
import argparse
import json
import os
import subprocess
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))


def footprint(flashsim, algo, pass_, seq, head_dim, batch, heads, dtype, cache={}):
    key = (algo, pass_, seq, head_dim, batch, heads, dtype)
    if key not in cache:
        out = subprocess.run(
            [flashsim, "simulate", "--algo", algo, "--pass", pass_, "--seq", str(seq), "--head-dim", str(head_dim),
             "--batch", str(batch), "--heads", str(heads), "--dtype", dtype, "--l2", "off", "--json"],
            check=True, capture_output=True, text=True).stdout
        cache[key] = json.loads(out)["footprint"]["total_bytes"]
    return cache[key]


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--flashsim", default=os.path.join(ROOT, "build", "bin", "flashsim"))
    ap.add_argument("--results", default=os.path.join(ROOT, "results", "h200", "bench.json"))
    ap.add_argument("--fit", default=os.path.join(ROOT, "results", "h200", "fit.json"))
    a = ap.parse_args()
    rows = json.load(open(a.results))["rows"]
    seen, bad = set(), 0
    print(f"{'variant':16} {'pass':9} {'N':>6} {'d':>4} {'B':>2} {'H':>3} {'causal':6} {'allocated':>15} "
          f"{'footprint':>15} {'ratio':>7}")
    for r in rows:
        if "peak_bytes" not in r:
            continue
        key = (r["variant"], r.get("pass", "forward"), r["seq"], r["head_dim"], r["batch"], r["heads"],
               r.get("causal", False), r.get("mode", ""))
        if key in seen:
            continue
        seen.add(key)
        algo = "standard" if r["variant"] == "standard" else "flash2"
        sim_pass = "forward" if r.get("pass", "forward") == "forward" else "both"
        fp = footprint(a.flashsim, algo, sim_pass, r["seq"], r["head_dim"], r["batch"], r["heads"], r["dtype"])
        ratio = r["peak_bytes"] / fp
        ok = 1.0 <= ratio <= 1.05
        bad += 0 if ok else 1
        note = "" if ok else "  OUTSIDE 5%"
        print(f"{r['variant']:16} {r.get('pass', 'forward'):9} {r['seq']:6} {r['head_dim']:4} {r['batch']:2} "
              f"{r['heads']:3} {str(r.get('causal', False)):6} {r['peak_bytes']:15,} {int(fp):15,} {ratio:7.4f}"
              f"{' ' + r['mode'] if r.get('mode') else ''}{note}")
    if os.path.exists(a.fit):
        print("\nlongest N, training step (h200/fit.json): allocated at the longest N against the footprint there")
        for r in json.load(open(a.fit))["rows"]:
            algo = "standard" if r["variant"] == "standard" else "flash2"
            fp = footprint(a.flashsim, algo, "both", r["longest_n"], r["head_dim"], r["batch"], r["heads"],
                           r["dtype"])
            ratio = r["peak_bytes_at_longest"] / fp
            print(f"{r['variant']:9} longest N {r['longest_n']:>9,} (simulator {r['simulator_longest_n']:>9,})  "
                  f"allocated {r['peak_bytes_at_longest']:>16,}  footprint {int(fp):>16,}  ratio {ratio:.4f}")
    return 1 if bad else 0


if __name__ == "__main__":
    sys.exit(main())
