#!/usr/bin/env python3
"""cuda/results/table.py — render a merged bench JSON (cuda/results/h200.json) as a Markdown table.

usage: python3 cuda/results/table.py cuda/results/h200.json > cuda/results/h200.md
Columns: config, variant, ms (median of repeats), TFLOP/s, speed relative to torch SDPA-flash
(sdpa_ms / ours: 1.00 = as fast), DRAM bytes from the hardware counters (CUPTI in process, or ncu where merged), the simulator's HBM
bytes for the kernel's own tiling without and with its L2 model, the measured/simulated ratios,
and the relative error against `standard`.
"""
import json
import sys


def gb(x):
    return "" if x is None else f"{x / 1e9:.2f}"


def main():
    doc = json.load(open(sys.argv[1]))
    print(f"# H200 results\n")
    print(f"device {doc['device']}, CUDA driver {doc['driver']}, {doc['date']}, commit {doc['git_commit']}; "
          f"{doc.get('anchor', {}).get('torch', '')} for the anchors. Shapes: B*N = 16384 tokens, H*d = 2048, bf16.\n")
    print("| pass | N | d | mask | variant | ms | TFLOP/s | vs SDPA-flash | SDPA-flash ms | cuDNN ms | DRAM GB (counters) | sim HBM GB (no L2) | sim HBM GB (L2 model) | DRAM/sim (L2) | rel err vs standard | ok |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    rows = sorted(doc["rows"], key=lambda r: (r["pass"] != "forward", r["head_dim"], r["causal"], r["seq"], r["variant"]))
    for r in rows:
        if "ms_median" not in r:
            print(f"| {r['pass']} | {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | {r['variant']} | error: {r.get('error', '')} ||||||||||")
            continue
        an = r.get("anchors", {})
        fl = an.get("sdpa_flash", {}).get("ms_median")
        cu = an.get("sdpa_cudnn", {}).get("ms_median")
        dram = None if r.get("dram_read_bytes") is None else r["dram_read_bytes"] + r["dram_write_bytes"]
        simb = None if r.get("sim_hbm_read_bytes") is None else r["sim_hbm_read_bytes"] + r["sim_hbm_write_bytes"]
        siml2 = None if r.get("sim_l2_hbm_read_bytes") is None else r["sim_l2_hbm_read_bytes"] + r["sim_l2_hbm_write_bytes"]
        ratio = f"{dram / siml2:.2f}" if dram and siml2 else ""
        vs = r.get("vs_standard")
        err = f"{vs['rel_frobenius']:.1e}" if vs else ""
        rel = f"{r['ratio_vs_sdpa_flash']:.2f}" if r.get("ratio_vs_sdpa_flash") else ""
        print(f"| {r['pass']} | {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | {r['variant']} | "
              f"{r['ms_median']:.3f} | {r['tflops']:.0f} | {rel} | {fl or 0:.3f} | {cu or 0:.3f} | {gb(dram)} | {gb(simb)} | {gb(siml2)} | {ratio} | {err} | "
              f"{'yes' if r.get('ok') else 'NO'} |")


if __name__ == "__main__":
    main()
