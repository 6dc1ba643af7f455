#!/usr/bin/env python3
"""tools/offgrid/standard_probe.py — standard's own calls at ragged N against their aligned neighbours.

Reads a ceilings file (flashsim bench --ceilings) and prints, for each of standard's cuBLAS calls
(qk: S = Q K^T and dP = dO V^T; pv: O = P V and dQ = dS K; ptv: dV = P^T dO and dK = dS^T Q), each
d and each probed level L: the aligned neighbour's TFLOP/s at N = L and, for the ragged N = L + 1,
L + 2, L + 4 (rows 2-, 4- and 8-byte aligned), their TFLOP/s as a fraction of it; then the two-pass
softmax kernels' TB/s at each ragged N, and as a fraction of the copy.

  python3 tools/offgrid/standard_probe.py results/h100/ceilings.json
"""
import json
import os
import re
import sys

POINT = re.compile(r"^gemm_(qk|pv|ptv)_(bf16|fp16)_d(\d+)_n(\d+)$")
SOFTMAX = re.compile(r"^softmax_rows_(fwd|bwd)_n(\d+)$")


def main():
    if len(sys.argv) != 2:
        sys.exit("usage: standard_probe.py CEILINGS.json")
    path = sys.argv[1]
    if not os.path.exists(path):
        sys.exit(f"standard_probe.py: no such file {path}; record one with `flashsim bench --ceilings --json FILE`")
    doc = json.load(open(path))
    cs = {c["name"]: c["value"] for c in doc.get("ceilings", []) if c.get("value")}
    pts = {}
    for name, v in cs.items():
        m = POINT.match(name)
        if m:
            call, dt, d, n = m.group(1), m.group(2), int(m.group(3)), int(m.group(4))
            pts[(call, dt, d, n)] = v
    if not pts:
        sys.exit(f"standard_probe.py: {path} has no gemm_<qk|pv|ptv>_<dtype>_d<d>_n<N> points (recorded before the "
                 "probe); record the ceilings again")
    print(f"{path}: {doc.get('device', '?')}, {doc.get('date', '?')}")
    print(f"{'call':4} {'dtype':5} {'d':>4} {'N':>6} {'aligned TFLOP/s':>16} {'+1 (2 B)':>9} {'+2 (4 B)':>9} "
          f"{'+4 (8 B)':>9}")
    fractions = []
    for call, dt, d in sorted({k[:3] for k in pts}):
        for n in sorted(k[3] for k in pts if k[:3] == (call, dt, d) and k[3] % 8 == 0):
            base = pts[(call, dt, d, n)]
            cells = []
            for o in (1, 2, 4):
                v = pts.get((call, dt, d, n + o))
                cells.append(f"{v / base:>9.3f}" if v else f"{'-':>9}")
                if v:
                    fractions.append(v / base)
            print(f"{call:4} {dt:5} {d:>4} {n:>6} {base / 1e12:>16.1f} {' '.join(cells)}")
    if fractions:
        print(f"ragged over aligned: {min(fractions):.3f}-{max(fractions):.3f} over {len(fractions)} points")
    copy = cs.get("hbm_copy")
    soft = sorted((int(m.group(2)), m.group(1), v) for name, v in cs.items() if (m := SOFTMAX.match(name)))
    for n, which, v in soft:
        share = f", {v / copy:.2f} of the copy" if copy else ""
        print(f"softmax two-pass {which} N = {n:>6}: {v / 1e12:.2f} TB/s{share}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
