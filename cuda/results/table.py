#!/usr/bin/env python3
"""cuda/results/table.py — render a merged bench JSON (cuda/results/h200.json) as a Markdown table.

usage: python3 cuda/results/table.py cuda/results/h200.json > cuda/results/h200.md
       python3 cuda/results/table.py --summary cuda/results/h200.json   (README's tables)
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
    cross = [r for r in rows if r.get("ncu_dram_read_bytes") is not None and r.get("dram_read_bytes") is not None]
    if cross:
        print("\n## Counters in process (CUPTI) against Nsight Compute, same configuration, separate runs\n")
        print("| pass | N | d | mask | variant | kernels | DRAM read GB (CUPTI / ncu) | DRAM write GB (CUPTI / ncu) | L2 GB (CUPTI / ncu) | total ratio |")
        print("|---|---|---|---|---|---|---|---|---|---|")
        for r in cross:
            tot = (r["dram_read_bytes"] + r["dram_write_bytes"]) / (r["ncu_dram_read_bytes"] + r["ncu_dram_write_bytes"])
            k = r.get("counters_note", "").split(" kernel")[0].split()[-1]
            print(f"| {r['pass']} | {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | {r['variant']} | {k} | "
                  f"{gb(r['dram_read_bytes'])} / {gb(r['ncu_dram_read_bytes'])} | {gb(r['dram_write_bytes'])} / {gb(r['ncu_dram_write_bytes'])} | "
                  f"{gb(r['l2_bytes'])} / {gb(r['ncu_l2_bytes'])} | {tot:.3f} |")


def summary():
    """README's tables: forward (flash2h, flash2, flash1, standard, anchors), backward, DRAM vs simulator."""
    doc = json.load(open(sys.argv[2]))
    R = {(r["variant"], r["pass"], r["seq"], r["head_dim"], r["causal"]): r for r in doc["rows"] if "ms_median" in r}
    mask = lambda c: "causal" if c else "none"
    print("| pass | N | d | mask | flash2h ms (TFLOP/s) | flash2 ms (TFLOP/s) | flash1 ms | standard ms | SDPA-flash ms | cuDNN ms "
          "| flash2h / SDPA-flash speed | flash2h vs standard |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|")
    for n, d, c in [(4096, 128, False), (8192, 128, False), (16384, 128, False), (8192, 64, False), (8192, 128, True)]:
        h, f, f1, s = (R[(v, "forward", n, d, c)] for v in ("flash2h", "flash2", "flash1", "standard"))
        a = h["anchors"]
        print(f"| forward | {n} | {d} | {mask(c)} | {h['ms_median']:.2f} ({h['tflops']:.0f}) | {f['ms_median']:.2f} ({f['tflops']:.0f}) | "
              f"{f1['ms_median']:.2f} | {s['ms_median']:.2f} | {a['sdpa_flash']['ms_median']:.2f} | {a['sdpa_cudnn']['ms_median']:.2f} | "
              f"{h['ratio_vs_sdpa_flash']:.2f} | {s['ms_median'] / h['ms_median']:.2f}x |")
    print()
    print("| pass | N | d | mask | flash2 ms (TFLOP/s) | standard ms | SDPA-flash ms | flash2 / SDPA-flash speed |")
    print("|---|---|---|---|---|---|---|---|")
    for n, d, c in [(8192, 128, False), (8192, 64, False), (8192, 128, True)]:
        f, s = R[("flash2", "backward", n, d, c)], R[("standard", "backward", n, d, c)]
        print(f"| backward | {n} | {d} | {mask(c)} | {f['ms_median']:.2f} ({f['tflops']:.0f}) | {s['ms_median']:.2f} | "
              f"{f['anchors']['sdpa_flash']['ms_median']:.2f} | {f['ratio_vs_sdpa_flash']:.2f} |")
    print()
    print("| kernel | DRAM measured | counted HBM<->SRAM (no L2) | through the L2 model | measured / L2 model |")
    print("|---|---|---|---|---|")
    for v, p in [("flash2h", "forward"), ("flash2", "forward"), ("flash1", "forward"), ("standard", "forward"),
                 ("flash2", "backward"), ("standard", "backward")]:
        r = R[(v, p, 8192, 128, False)]
        dram = r["dram_read_bytes"] + r["dram_write_bytes"]
        simb = r["sim_hbm_read_bytes"] + r["sim_hbm_write_bytes"]
        siml2 = r["sim_l2_hbm_read_bytes"] + r["sim_l2_hbm_write_bytes"]
        print(f"| {v} {p} | {gb(dram)} GB | {gb(simb)} GB | {gb(siml2)} GB | {dram / siml2:.2f} |")


if __name__ == "__main__":
    if len(sys.argv) == 3 and sys.argv[1] == "--summary":
        summary()
    else:
        main()
