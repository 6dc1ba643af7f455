#!/usr/bin/env python3
"""tools/results/merge.py — fold the rows of a newer bench JSON into a recorded one (h200/bench.json).

usage: python3 tools/results/merge.py NEW.json INTO.json
       python3 tools/results/merge.py --ceilings NEW_CEILINGS.json INTO_CEILINGS.json

A row of NEW replaces the row of INTO with the same configuration (variant, pass, N, d, B, H,
dtype, mask, mode); the others are added. Rows measured in different calls keep their own
provenance: every row carries "run" (device, driver, date, commit of the call that measured it;
rows recorded before this field existed get the file's own), and the file lists its runs.
Anchors (SDPA) always come from the row's own call, so ratios stay same-call ratios.

With --ceilings, the files are `bench --ceilings` outputs: a ceiling of NEW replaces the one of
INTO with the same name (a figure recorded from a probe included) and carries NEW's provenance in
"run"; the others are added, and INTO's ceilings that NEW lacks stay as they were.
"""
import json
import sys


def key(r):
    return (r["variant"], r["pass"], r["seq"], r["head_dim"], r["batch"], r["heads"], r["dtype"], r["causal"],
            r.get("mode", "default"))


def provenance(doc):
    return {k: doc.get(k) for k in ("device", "driver", "date", "git_commit")}


def write(doc, path):
    json.dump(doc, open(path, "w"), indent=1)
    open(path, "a").write("\n")


def merge_ceilings(new_path, into_path):
    new, into = json.load(open(new_path)), json.load(open(into_path))
    run = provenance(new)
    index = {c["name"]: i for i, c in enumerate(into["ceilings"])}
    replaced = added = 0
    for c in new["ceilings"]:
        c = dict(c, run=run)
        if c["name"] in index:
            into["ceilings"][index[c["name"]]] = c
            replaced += 1
        else:
            index[c["name"]] = len(into["ceilings"])
            into["ceilings"].append(c)
            added += 1
    write(into, into_path)
    print(f"merge: {replaced} ceilings replaced, {added} added; {len(into['ceilings'])} in {into_path}", file=sys.stderr)


def main():
    if len(sys.argv) == 4 and sys.argv[1] == "--ceilings":
        return merge_ceilings(sys.argv[2], sys.argv[3])
    if len(sys.argv) != 3 or sys.argv[1].startswith("-"):
        sys.exit("usage: merge.py NEW.json INTO.json | merge.py --ceilings NEW.json INTO.json")
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
    write(into, sys.argv[2])
    print(f"merge: {replaced} rows replaced, {added} added; {len(into['rows'])} rows in {sys.argv[2]}", file=sys.stderr)


if __name__ == "__main__":
    main()
