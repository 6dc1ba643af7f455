#!/usr/bin/env python3
"""cuda/results/merge.py — fold the rows of a newer bench JSON into a recorded one (h200.json).

usage: python3 cuda/results/merge.py NEW.json INTO.json

A row of NEW replaces the row of INTO with the same configuration (variant, pass, N, d, B, H,
dtype, mask, mode); the others are added. Rows measured in different calls keep their own
provenance: every row carries "run" (device, driver, date, commit of the call that measured it;
rows recorded before this field existed get the file's own), and the file lists its runs.
Anchors (SDPA) always come from the row's own call, so ratios stay same-call ratios.
"""
import json
import sys


def key(r):
    return (r["variant"], r["pass"], r["seq"], r["head_dim"], r["batch"], r["heads"], r["dtype"], r["causal"],
            r.get("mode", "default"))


def provenance(doc):
    return {k: doc.get(k) for k in ("device", "driver", "date", "git_commit")}


def main():
    new, into = json.load(open(sys.argv[1])), json.load(open(sys.argv[2]))
    for r in into["rows"]:
        r.setdefault("run", provenance(into))
    run = provenance(new)
    index = {key(r): i for i, r in enumerate(into["rows"])}
    replaced = added = 0
    for r in new["rows"]:
        r["run"] = run
        if key(r) in index:
            into["rows"][index[key(r)]] = r
            replaced += 1
        else:
            index[key(r)] = len(into["rows"])
            into["rows"].append(r)
            added += 1
    runs = into.setdefault("runs", [provenance(into)])
    if run not in runs:
        runs.append(run)
    if "anchor" in new:
        into["anchor"] = new["anchor"]
    json.dump(into, open(sys.argv[2], "w"), indent=1)
    open(sys.argv[2], "a").write("\n")
    print(f"merge: {replaced} rows replaced, {added} added; {len(into['rows'])} rows in {sys.argv[2]}", file=sys.stderr)


if __name__ == "__main__":
    main()
