#!/usr/bin/env python3
"""tools/results/predicted.py — the kernel model's predictions beside the measured times.

usage: python3 tools/results/predicted.py results/h200/bench.json            (tables for docs/simulator.md)
       python3 tools/results/predicted.py --check 0.15 [--known MISSES] FILE (exit 1 on a row outside the band)

The rows' predicted_* columns come from `flashsim bench --resimulate FILE` (sim::predict_kernel with
each kernel's recorded tiles and the measured ceilings, results/h200/ceilings.json). Prints, per
kernel and pass, every row (N, d, mask, measured ms, predicted ms, predicted / measured, the largest
part of the predicted time), then the distribution of the ratios. With --check BAND every row must
lie within 1 +- BAND, or be marked uncertain by the model; every uncertain row is printed with the
model's reason, inside the band or not, so that no miss is hidden. --known names a file of misses
not yet explained (results/h200/known_misses.txt: "variant pass N d mask: why"): each is printed
with its reason; the check fails on a miss it does not list, and on a listed row back inside the band.
"""
import json
import statistics
import sys


def label(r):
    return f"{r['variant']} {r['pass']}"


def main(argv):
    if any(a in ("-h", "--help") for a in argv):
        print(__doc__.strip())
        return 0
    band = None
    known = {}
    while len(argv) >= 2 and argv[0] in ("--check", "--known"):
        if argv[0] == "--check":
            band = float(argv[1])
        else:
            try:
                lines = open(argv[1]).read().splitlines()
            except OSError as e:
                print(f"predicted.py: cannot read the --known file {argv[1]} ({e})", file=sys.stderr)
                return 2
            for line in lines:
                line = line.strip()
                if line and not line.startswith("#"):
                    key, why = line.split(":", 1)
                    known[key.strip()] = why.strip()
        argv = argv[2:]
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        doc = json.load(open(argv[0]))
    except (OSError, ValueError) as e:
        print(f"predicted.py: cannot read {argv[0]} as a bench JSON file ({e}); give a file that "
              f"`flashsim bench --json` wrote, e.g. results/h200/bench.json", file=sys.stderr)
        return 2
    rows = [r for r in doc.get("rows", []) if "ms_median" in r]
    missing = [r for r in rows if r.get("predicted_ms") is None]
    if missing:
        r = missing[0]
        print(f"{len(missing)} row(s) carry no prediction (first: {label(r)} N={r['seq']} d={r['head_dim']}"
              f"{' ' + r['predicted_note'] if r.get('predicted_note') else ''}); run "
              f"`flashsim bench --resimulate {argv[0]}`", file=sys.stderr)
        return 1
    groups = {}
    for r in rows:
        groups.setdefault(label(r), []).append(r)
    order = ["standard forward", "flash1 forward", "flash2 forward", "flash2h forward", "standard backward",
             "flash2 backward", "flash2h backward"]
    keys = [k for k in order if k in groups] + sorted(k for k in groups if k not in order)
    print("| kernel, pass | rows | predicted / measured: min | median | max | within ±15% | uncertain |")
    print("|---|---|---|---|---|---|---|")
    for k in keys:
        rs = [r["predicted_over_measured"] for r in groups[k]]
        inside = sum(1 for x in rs if abs(x - 1) <= 0.15)
        unc = sum(1 for r in groups[k] if r.get("predicted_uncertain"))
        print(f"| {k} | {len(rs)} | {min(rs):.2f} | {statistics.median(rs):.2f} | {max(rs):.2f} | {inside} | {unc} |")
    print()
    print("| kernel, pass | N | d | mask | measured ms | predicted ms | predicted / measured | largest part | uncertain |")
    print("|---|---|---|---|---|---|---|---|---|")
    for k in keys:
        for r in sorted(groups[k], key=lambda r: (r["head_dim"], r["causal"], r["seq"], r["ms_median"])):
            unc = "yes" if r.get("predicted_uncertain") else ""
            print(f"| {k} | {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | "
                  f"{r['ms_median']:.3f} | {r['predicted_ms']:.3f} | {r['predicted_over_measured']:.2f} | "
                  f"{r.get('predicted_bound', '')} | {unc} |")
    reasons = {}
    for r in rows:
        if r.get("predicted_uncertain"):
            reasons.setdefault(r.get("predicted_uncertain_why", "(no reason given)"), []).append(r)
    if reasons:
        print("\nUncertain rows, with the model's reasons:")
        for why, rs in reasons.items():
            ratios = ", ".join(f"{x['predicted_over_measured']:.2f}" for x in rs)
            print(f"- {len(rs)} row(s) of {', '.join(sorted({label(x) for x in rs}))}: {why} (ratios {ratios})")
    if band is None:
        return 0
    def key(r):
        return f"{r['variant']} {r['pass']} {r['seq']} {r['head_dim']} {'causal' if r['causal'] else 'none'}"
    outside = [r for r in rows if abs(r["predicted_over_measured"] - 1) > band and not r.get("predicted_uncertain")]
    listed = [r for r in outside if key(r) in known]
    bad = [r for r in outside if key(r) not in known]
    for r in listed:
        print(f"KNOWN MISS: {key(r)}: ratio {r['predicted_over_measured']:.2f}: {known[key(r)]}", file=sys.stderr)
    stale = [k for k in known if k not in {key(r) for r in outside}]
    for k in stale:
        print(f"NO LONGER A MISS (remove it from the --known file): {k}", file=sys.stderr)
    for r in bad:
        print(f"OUT OF BAND: {label(r)} N={r['seq']} d={r['head_dim']} {'causal' if r['causal'] else 'none'}: "
              f"predicted {r['predicted_ms']:.3f} ms, measured {r['ms_median']:.3f} ms "
              f"(ratio {r['predicted_over_measured']:.2f}, band ±{band:.0%})", file=sys.stderr)
    certain = [r for r in rows if not r.get("predicted_uncertain")]
    print(f"\ncheck: {len(certain) - len(outside)} of {len(certain)} rows the model is certain of lie within "
          f"±{band:.0%} ({len(listed)} known miss(es) outside); {len(rows) - len(certain)} uncertain row(s)",
          file=sys.stderr)
    return 1 if bad or stale else 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
