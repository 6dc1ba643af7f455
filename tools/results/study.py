#!/usr/bin/env python3
"""tools/results/study.py — summarise the numerics study and the scale checks (issue 15).

usage: python3 tools/results/study.py results/h200/study.json            (Markdown summary)
       python3 tools/results/study.py --scale results/h200/scale.json
The study's bar (cuda/study.cpp): per output tensor, a kernel's max abs error against float64 is at
most 2x the standard kernel's on the same tensor plus one ulp of the dtype at the reference's
largest magnitude. "ratio" below is err / bound (<= 1 is inside); err/std is the kernel's error
over standard's.
"""
import json
import statistics
import sys


def zero_ref(e):
    """True when the exact answer is all zeros (ref_max recorded as 0), None when not recorded."""
    if "ref_max" not in e:
        return None if e["bound"] > 1e-30 else True
    return e["ref_max"] == 0


def study(path):
    doc = json.load(open(path))
    shapes = doc["shapes"]
    groups = {}
    errors = [s for s in shapes if "error" in s]
    ns = [s["seq"] for s in shapes]
    for s in shapes:
        for e in s.get("entries", []):
            groups.setdefault((e["variant"], e["pass"], e["tensor"]), []).append((e, s))
    print(f"Numerics study on {doc['device']} ({doc['date']}, commit {doc['git_commit']}): {len(shapes)} random shapes, "
          f"N from {min(ns)} to {max(ns)} ({sum(1 for n in ns if n < 64)} shorter than 64), "
          f"{sum(1 for s in shapes if s['causal'])} causal, {sum(1 for s in shapes if s['dtype'] == 'fp16')} fp16, "
          f"largest LSE {max(s.get('lse_max', 0) for s in shapes):.1f}; {len(errors)} shapes failed to run.\n")
    cpu = [s["gpu_vs_cpu_reference"] for s in shapes if "gpu_vs_cpu_reference" in s]
    if cpu:
        print(f"The GPU's float64 reference against the CPU's on {len(cpu)} small shapes: largest relative "
              f"difference {max(cpu):.1e}.\n")
    print("| kernel | pass | tensor | shapes | inside the bar | outside, exact answer all zeros | worst err / bound (answer not zero) | median err / standard's | bit-identical to float64 rounded |")
    print("|---|---|---|---|---|---|---|---|---|")
    order = {"standard": 0, "flash1": 1, "flash2": 2, "flash2h": 3}
    for key in sorted(groups, key=lambda k: (order.get(k[0], 9), k[1], k[2])):
        v, p, t = key
        rows = groups[key]
        inside = sum(1 for e, _ in rows if e["ok"])
        ratios = [e["err"] / e["bound"] for e, _ in rows if zero_ref(e) is False] or [0.0]
        zeros_out = sum(1 for e, _ in rows if zero_ref(e) and not e["ok"])
        rel = [e["err"] / e["err_standard"] for e, _ in rows if e["err_standard"] > 0]
        ident = sum(e["identical"] for e, _ in rows) / max(1, sum(e["count"] for e, _ in rows))
        print(f"| {v} | {p} | {t} | {len(rows)} | {inside} ({100 * inside / len(rows):.1f}%) | {zeros_out} | {max(ratios):.2f} | "
              f"{statistics.median(rel) if rel else float('nan'):.2f} | {100 * ident:.1f}% |")
    worst = sorted(((e["err"] / e["bound"], e, s) for key in groups if key[0] != "standard" for e, s in groups[key]
                    if zero_ref(e) is False), key=lambda x: -x[0])[:8]
    print("\nWorst cases where the exact answer is not all zeros (err / bound, with their shapes):\n")
    for r, e, s in worst:
        print(f"- {r:.2f}: {e['variant']} {e['pass']} {e['tensor']}, B={s['batch']} H={s['heads']} N={s['seq']} d={s['head_dim']} "
              f"{s['dtype']}{' causal' if s['causal'] else ''}, scores to ~{s['score_target']:.1f}: err {e['err']:.3g}, "
              f"standard's {e['err_standard']:.3g}, bound {e['bound']:.3g}, at {e['worst_at']}")
    zero = [(e, s) for key in groups if key[0] != "standard" for e, s in groups[key] if zero_ref(e) and not e["ok"]]
    if zero:
        print(f"\nOutside the bar because the exact answer is identically zero ({len(zero)} comparisons; the bar's "
              f"absolute term, one ulp at the reference's largest magnitude, is then 0): "
              + ", ".join(sorted({f"N={s['seq']}" for _, s in zero})) + " "
              + ", ".join(sorted({e['tensor'] for e, _ in zero}))
              + f"; the kernels' largest value there is {max(e['err'] for e, _ in zero):.2g} and standard's "
              f"{max(e['err_standard'] for e, _ in zero):.2g}.")
    for s in errors:
        print(f"- shape {s['shape']} (N={s['seq']} d={s['head_dim']}) did not run: {s['error']}")


def scale(path):
    doc = json.load(open(path))
    print(f"Scale checks on {doc['device']} ({doc['date']}, commit {doc['git_commit']}):\n")
    print("| kernel | pass | B x H x N x d | elements a tensor | rows checked | max abs err (O, dQ, dK, dV) | tolerance | non-finite | ok |")
    print("|---|---|---|---|---|---|---|---|---|")
    for r in doc["rows"]:
        if "error" in r:
            print(f"| {r['variant']} | {r['pass']} | {r['batch']} x {r['heads']} x {r['seq']} x {r['head_dim']} | | | error: {r['error']} | | | no |")
            continue
        errs = ", ".join(f"{r[k]:.2g}" for k in ("err_O", "err_dQ", "err_dK", "err_dV") if k in r)
        print(f"| {r['variant']} | {r['pass']} | {r['batch']} x {r['heads']} x {r['seq']:,} x {r['head_dim']}"
              f"{' causal' if r['causal'] else ''} | {r['elements_per_tensor']:,} | {r['rows_checked']} | {errs} | "
              f"{r['tolerance']:.2g} | {r['nonfinite']} | {'yes' if r['ok'] else 'NO'} |")


if __name__ == "__main__":
    if sys.argv[1] == "--scale":
        scale(sys.argv[2])
    else:
        study(sys.argv[1])
