#!/usr/bin/env python3
"""tools/results/table.py — render a merged bench JSON (results/h200/bench.json) as a Markdown table.

usage: python3 tools/results/table.py results/h200/bench.json > results/h200/bench.md
       python3 tools/results/table.py --summary results/h200/bench.json   (README's tables)
       python3 tools/results/table.py --ceilings results/h200/ceilings.json
       python3 tools/results/table.py --decode results/h200/decode.json
       python3 tools/results/table.py --ring results/h200/ring.json
       python3 tools/results/table.py --writes results/h200/bench.json   (forward writes: counters vs walk)
       python3 tools/results/table.py --decode-fixed results/h200/decode.json   (B = 1: fixed + bytes / rate)
       python3 tools/results/table.py --decode-trace results/h200/decode.json   (bench --decode --trace)
       python3 tools/results/table.py --dram results/h200/bench.json   (DRAM counters vs the L2 walk: rows outside ±10%)
Columns: config, variant, ms (median of repeats), TFLOP/s, speed relative to torch SDPA-flash
(sdpa_ms / ours: 1.00 = as fast), DRAM bytes from the hardware counters (CUPTI in process, or ncu where merged), the simulator's HBM
bytes for the kernel's own tiling without and with its L2 model, the measured/simulated ratios,
and the relative error against `standard`.
"""
import json
import re
import sys


def gb(x):
    return "" if x is None else f"{x / 1e9:.2f}"


def main():
    doc = json.load(open(sys.argv[1]))
    dev = doc.get("device", "")
    card = "H100" if "H100" in dev else "H200" if "H200" in dev else dev or "GPU"
    print(f"# {card} results\n")
    runs = doc.get("runs") or [{k: doc.get(k) for k in ("device", "driver", "date", "git_commit")}]
    calls = "; ".join(f"{r['date']}, commit {r['git_commit']}" for r in runs)
    # the storage type of each row (a variant's label says it where the file holds more than one)
    dtypes = " and ".join(sorted({r.get("dtype", "bf16") for r in doc["rows"]}))
    mixed = " and " in dtypes
    print(f"device {doc['device']}, CUDA driver {doc['driver']}; calls: {calls} (each row of the JSON names its own); "
          f"{doc.get('anchor', {}).get('torch', '')} for the anchors, "
          f"{doc.get('anchor_note', 'timed in the same call as each row')}. "
          f"Shapes: B*N = 16384 tokens, H*d = 2048, {dtypes}.\n")
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
        label = r["variant"] + (f" ({r['mode']})" if r.get("mode") else "") + (f" {r.get('dtype', 'bf16')}" if mixed else "")
        print(f"| {r['pass']} | {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | {label} | "
              f"{r['ms_median']:.3f} | {r['tflops']:.0f} | {rel} | {cell(fl, '{:.3f}')} | {cell(cu, '{:.3f}')} | {gb(dram)} | {gb(simb)} | {gb(siml2)} | {ratio} | {err} | "
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


def ms(r):
    return r["ms_median"] if r else None


def anchor(r, name):
    return (r or {}).get("anchors", {}).get(name, {}).get("ms_median")


def cell(x, fmt="{:.2f}"):
    return "–" if x is None else fmt.format(x)


def backward_table(R):
    """Every backward configuration measured: the kernels beside SDPA-flash and cuDNN from the same call."""
    mask = lambda c: "causal" if c else "none"
    print("| pass | N | d | mask | flash2h ms (TFLOP/s) | flash2 ms | standard ms | SDPA-flash ms | cuDNN ms "
          "| flash2h / SDPA-flash speed | flash2h / cuDNN speed |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    cfgs = sorted({(k[2], k[3], k[4]) for k in R if k[1] == "backward" and k[0] == "flash2h"}, key=lambda c: (c[2], c[1], c[0]))
    for n, d, c in cfgs:
        h, f, s = (R.get((v, "backward", n, d, c)) for v in ("flash2h", "flash2", "standard"))
        fl, cu = anchor(h, "sdpa_flash"), anchor(h, "sdpa_cudnn")
        print(f"| backward | {n} | {d} | {mask(c)} | {h['ms_median']:.2f} ({h['tflops']:.0f}) | {cell(ms(f))} | {cell(ms(s))} | "
              f"{cell(fl)} | {cell(cu)} | {cell(fl / h['ms_median'] if fl else None)} | {cell(cu / h['ms_median'] if cu else None)} |")
    det = [r for k, r in R.items() if k[0] == "flash2h" and k[1] == "backward-deterministic"]
    for r in sorted(det, key=lambda r: (r["causal"], r["head_dim"], r["seq"])):
        plain = R.get(("flash2h", "backward", r["seq"], r["head_dim"], r["causal"]))
        # a ratio only within one call: the default's row may since come from another
        if plain and plain.get("run") == r.get("run"):
            cost = f", {r['ms_median'] / plain['ms_median']:.2f}x the default's time"
        elif plain:
            cost = (f" (measured on {(r.get('run') or {}).get('date', '?')[:10]}; the default's row is from another call, "
                    f"so no ratio is printed: docs/kernel-notes/flash2h-backward.md gives the same-call one)")
        else:
            cost = ""
        print(f"\nDeterministic mode (dQ added in a fixed order; bit-identical run to run), N = {r['seq']}, d = {r['head_dim']}, "
              f"{mask(r['causal'])}: {r['ms_median']:.2f} ms ({r['tflops']:.0f} TFLOP/s){cost}.")


def step_table(R):
    """A training step (forward then backward, timed as one) per pairing, with SDPA's step from the same call."""
    cfgs = sorted({(k[2], k[3], k[4]) for k in R if k[1] == "step"}, key=lambda c: (c[2], c[1], c[0]))
    if not cfgs:
        return
    names = {"standard": "standard (cuBLAS)", "flash2": "flash2 forward + flash2 backward",
             "flash2h+flash2": "flash2h forward + flash2 backward", "flash2h": "flash2h forward + flash2h backward"}
    fwd_of = {"standard": "standard", "flash2": "flash2", "flash2h+flash2": "flash2h", "flash2h": "flash2h"}
    bwd_of = {"standard": "standard", "flash2": "flash2", "flash2h+flash2": "flash2", "flash2h": "flash2h"}
    for n, d, c in cfgs:
        std = R.get(("standard", "step", n, d, c))
        steps = [R.get((v, "step", n, d, c)) for v in ("standard", "flash2", "flash2h+flash2", "flash2h")]
        runs = {json.dumps((r.get("run") or {}), sort_keys=True) for r in steps if r}
        print(f"Training step, N = {n}, d = {d}, {'causal' if c else 'no mask'} (the step timed as one"
              f"{', every step in the same call' if len(runs) == 1 else ''}; forward and backward from each pass's "
              f"own row):\n")
        print("| kernels | forward ms | backward ms | step ms | step vs standard |")
        print("|---|---|---|---|---|")
        any_row = None
        others = {}  # a pass row measured in another call than the steps: its date, marked with *
        other_call = {}  # a step measured in another call than standard's step: its date and commit, marked with †

        def same_call(row, step_row):
            if row is None or step_row is None or row.get("run") == step_row.get("run"):
                return cell(ms(row)) if row is None or step_row is None else f"{ms(row):.2f}"
            date = (row.get("run") or {}).get("date", "?")[:10]
            others[date] = True
            return f"{ms(row):.2f}*"

        for v in ("standard", "flash2", "flash2h+flash2", "flash2h"):
            r = R.get((v, "step", n, d, c))
            if not r:
                continue
            any_row = any_row or r
            f, b = R.get((fwd_of[v], "forward", n, d, c)), R.get((bwd_of[v], "backward", n, d, c))
            speed = f"{std['ms_median'] / r['ms_median']:.2f}x" if std else "–"
            mark = ""
            if std and r.get("run") != std.get("run"):
                run = r.get("run") or {}
                other_call[f"{run.get('date', '?')[:10]}, {run.get('git_commit', '?')}"] = True
                mark = "†"
            print(f"| {names[v]} | {same_call(f, r)} | {same_call(b, r)} | {r['ms_median']:.2f}{mark} | {speed} |")
        for name, label in (("sdpa_flash", "SDPA flash (FlashAttention-2)"), ("sdpa_cudnn", "SDPA cuDNN")):
            st = anchor(any_row, name)
            f, b = R.get(("flash2h", "forward", n, d, c)), R.get(("flash2h", "backward", n, d, c))
            fa, ba = anchor(f, name), anchor(b, name)
            fa_s = cell(fa) + ("*" if fa is not None and f.get("run") != any_row.get("run") else "")
            ba_s = cell(ba) + ("*" if ba is not None and b.get("run") != any_row.get("run") else "")
            speed = f"{std['ms_median'] / st:.2f}x" if std and st else "–"
            print(f"| {label} | {fa_s} | {ba_s} | {cell(st)} | {speed} |")
        if others:
            print(f"\n\\* measured in another call ({', '.join(sorted(others))}) than the steps "
                  f"({(any_row.get('run') or {}).get('date', '?')[:10]}).")
        if other_call:
            srun = (std.get("run") or {}) if std else {}
            std_date = f"{srun.get('date', '?')[:10]}, {srun.get('git_commit', '?')}"
            print(f"\n† step measured in another call ({'; '.join(sorted(other_call))}) than standard's and the SDPA "
                  f"steps ({std_date}): its ratio to standard is across calls; the row's own anchors are in h200.json.")
        print()


def summary():
    """README's tables: forward (flash2h, flash2, flash1, standard, anchors), backward, the training
    step, DRAM vs simulator."""
    doc = json.load(open(sys.argv[2]))
    R = {(r["variant"], r["pass"] + ("-deterministic" if r.get("mode") == "deterministic" else ""), r["seq"],
          r["head_dim"], r["causal"]): r for r in doc["rows"] if "ms_median" in r}
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
    backward_table(R)
    print()
    step_table(R)
    print()
    print("| kernel | DRAM measured | counted HBM<->SRAM (no L2) | through the L2 model | measured / L2 model | "
          "the L2 model as the counters see it | measured / that |")
    print("|---|---|---|---|---|---|---|")
    residue = None
    for v, p in [("flash2h", "forward"), ("flash2", "forward"), ("flash1", "forward"), ("standard", "forward"),
                 ("flash2h", "backward"), ("flash2", "backward"), ("standard", "backward")]:
        r = R.get((v, p, 8192, 128, False))
        if r is None or r.get("dram_read_bytes") is None or r.get("sim_l2_hbm_read_bytes") is None:
            continue
        dram = r["dram_read_bytes"] + r["dram_write_bytes"]
        simb = r["sim_hbm_read_bytes"] + r["sim_hbm_write_bytes"]
        siml2 = r["sim_l2_hbm_read_bytes"] + r["sim_l2_hbm_write_bytes"]
        seen = "–", "–"
        if r.get("sim_l2_counters_view_bytes") is not None:
            residue = r["counters_residue_bytes"]
            seen = f"{gb(r['sim_l2_counters_view_bytes'])} GB", f"{dram / r['sim_l2_counters_view_bytes']:.2f}"
        print(f"| {v} {p} | {gb(dram)} GB | {gb(simb)} GB | {gb(siml2)} GB | {dram / siml2:.2f} | {seen[0]} | {seen[1]} |")
    if residue is not None:
        ratios = dram_ratios(doc["rows"])
        raw_in = sum(abs(x - 1) <= 0.10 for _, x, _ in ratios)
        seen = [v for _, _, v in ratios if v is not None]
        print(f"\nThe counters' view: the walk less the dirty lines it leaves in L2 at the end (written back after "
              f"the counted range) plus the {residue / 2**20:.1f} MiB the counters probes count in every range "
              f"that belong to no work. Over the {len(ratios)} rows with counters: {raw_in} within ±10% of the walk, "
              f"{sum(abs(v - 1) <= 0.10 for v in seen)} of {len(seen)} within ±10% of the walk as the counters see it "
              f"(`table.py --dram` lists the others, every row).")


def ceilings():
    """The GPU's own ceilings (flashsim bench --ceilings), beside the kernels' best measured rates."""
    doc = json.load(open(sys.argv[2]))
    unit = {"B/s": (1e12, "TB/s"), "FLOP/s": (1e12, "TFLOP/s"), "op/s": (1e12, "T exp/s"), "s": (1e-6, "us")}
    print(f"| ceiling | measured | what ran ({doc['device']}, {doc['date'][:10]}) |")
    print("|---|---|---|")
    # points at row lengths N (name ending _n<N>: standard's calls at ragged N) fold into one row a family
    families = {}
    for c in doc["ceilings"]:
        m = re.match(r"^(.*_n)(\d+)$", c["name"])
        if m and c["value"]:
            families.setdefault(m.group(1), []).append((int(m.group(2)), c))
    shown = set()
    for c in doc["ceilings"]:
        m = re.match(r"^(.*_n)(\d+)$", c["name"])
        if m and m.group(1) in families:
            if m.group(1) not in shown:
                shown.add(m.group(1))
                pts = sorted(families[m.group(1)], key=lambda p: p[0])
                scale, name = unit.get(c["unit"], (1, c["unit"]))
                lo, hi = min(p[1]["value"] for p in pts) / scale, max(p[1]["value"] for p in pts) / scale
                print(f"| {m.group(1)}<N> | {lo:.2f}-{hi:.2f} {name} | {len(pts)} points, N = "
                      f"{', '.join(str(p[0]) for p in pts)} (`tools/offgrid/standard_probe.py` lists them) |")
            continue
        scale, name = unit.get(c["unit"], (1, c["unit"]))
        if c["unit"] == "s" and 0 < c["value"] < 1e-6:
            scale, name = 1e-9, "ns"
        value = f"{c['value'] / scale:.2f} {name}" if c["value"] else "–"
        run = c.get("run")  # a ceiling added in a later call than the file's
        when = f" (measured {run.get('date', '?')[:10]}, {run.get('git_commit', '?')})" if run else ""
        if run and run.get("recorded_from"):  # a figure taken from a probe before the microbenchmark ran
            when = f" (recorded {run.get('date', '?')[:10]} from {run['recorded_from']})"
        print(f"| {c['name']} | {value} | {c['method']}{when} |")


def decode():
    """Decode rows (flashsim bench --decode) with SDPA's flash and cuDNN times and a copy, same call."""
    doc = json.load(open(sys.argv[2]))
    print("| B | L | d | splits | ms | KV TB/s | SDPA-flash TB/s | cuDNN TB/s | copy TB/s | vs cuDNN speed | of copy |")
    print("|---|---|---|---|---|---|---|---|---|---|---|")
    rows = sorted((r for r in doc["rows"] if "ms_median" in r), key=lambda r: (-r["head_dim"], r["batch"], r["kv_len"]))
    for r in rows:
        an = r.get("anchors", {})
        tb = lambda k: an.get(k, {}).get("kv_tbps")
        print(f"| {r['batch']} | {r['kv_len']} | {r['head_dim']} | {r['splits']} | {r['ms_median']:.3f} | {r['tbps']:.2f} | "
              f"{cell(tb('sdpa_flash'))} | {cell(tb('sdpa_cudnn'))} | {cell(an.get('copy', {}).get('copy_tbps'))} | "
              f"{cell(r.get('ratio_vs_sdpa_cudnn'))} | {cell(r.get('fraction_of_copy'), '{:.0%}')} |")


def decode_fixed():
    """A line through the B = 1 decode rows of each d (two cache lengths): time = fixed + bytes / rate,
    for the kernel, cuDNN and the copy (its bytes read + written), measured in the same call. What is
    not proportional to the cache (launch, the first tiles, the merge) shows as the fixed part."""
    doc = json.load(open(sys.argv[2]))
    print("| d | L | kernel: fixed us, TB/s | cuDNN: fixed us, TB/s | copy: fixed us, TB/s |")
    print("|---|---|---|---|---|")
    for d in sorted({r["head_dim"] for r in doc["rows"]}, reverse=True):
        rs = sorted((r for r in doc["rows"] if r["head_dim"] == d and r["batch"] == 1 and "ms_median" in r),
                    key=lambda r: r["kv_len"])
        if len(rs) < 2:
            continue
        a, b = rs[0], rs[-1]

        def line(ta, tb, ba, bb):  # ms, bytes -> (fixed us, TB/s)
            rate = (bb - ba) / ((tb - ta) * 1e-3)
            return f"{(ta * 1e-3 - ba / rate) * 1e6:.1f}, {rate / 1e12:.2f}"

        an_a, an_b = a.get("anchors", {}), b.get("anchors", {})
        cu = (line(an_a["sdpa_cudnn"]["ms_median"], an_b["sdpa_cudnn"]["ms_median"], a["kv_bytes"], b["kv_bytes"])
              if "sdpa_cudnn" in an_a and "sdpa_cudnn" in an_b else "–")
        cp = (line(an_a["copy"]["ms_median"], an_b["copy"]["ms_median"], 2 * an_a["copy"]["bytes"],
                   2 * an_b["copy"]["bytes"]) if "copy" in an_a and "copy" in an_b else "–")
        print(f"| {d} | {a['kv_len']}-{b['kv_len']} | {line(a['ms_median'], b['ms_median'], a['kv_bytes'], b['kv_bytes'])} "
              f"| {cu} | {cp} |")


def decode_trace():
    """Where a decode call's time goes (bench --decode --trace): the blocks' own timer stamps, microseconds
    from the first block's start, medians over the traced calls. The stream is the part proportional to
    the cache; what lies before the first tile, after the last one, and outside the kernel is fixed."""
    doc = json.load(open(sys.argv[2]))
    print("| B | L | d | splits | call (events) | outside the blocks | blocks started (med / last) | "
          "first tile landed (med / last) | first-tile wait | last tile done (med / last) | written (med / last) | "
          "merge | stream rate (med block) |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in sorted((r for r in doc["rows"] if "trace" in r), key=lambda r: (-r["head_dim"], r["batch"], r["kv_len"])):
        t = r["trace"]
        # the cache's bytes over the median block's stream (first tile landed to last tile done)
        # (one wave only: with more, a block streams its own share while others wait to start)
        stream = t["stream_med_us"] - t["first_tile_med_us"]
        one_wave = t["start_max_us"] < t["first_tile_med_us"]
        rate = (f"{r['kv_bytes'] / (stream * 1e-6) / 1e12:.2f} TB/s" if stream > 0 and one_wave
                else "– (blocks in waves)")
        print(f"| {r['batch']} | {r['kv_len']} | {r['head_dim']} | {r['splits']} | {t['event_us']:.1f} | "
              f"{t['event_us'] - t['span_us']:.1f} | {t['start_med_us']:.1f} / {t['start_max_us']:.1f} | "
              f"{t['first_tile_med_us']:.1f} / {t['first_tile_max_us']:.1f} | {t['first_tile_wait_us']:.1f} | "
              f"{t['stream_med_us']:.1f} / {t['stream_max_us']:.1f} | {t['written_med_us']:.1f} / "
              f"{t['written_max_us']:.1f} | {t['merge_us']:.1f} | {rate} |")
    steps = {r["trace"]["timer_step_ns"] for r in doc["rows"] if "trace" in r}
    if steps:
        print(f"\nsmallest step seen between two stamps of a block: {min(steps):.0f} ns: one stamp is good to about "
              f"that much; the medians over blocks and calls are finer")


def dram_ratios(rows):
    """For every row with DRAM counters and the L2 walk: (row, counters / walk, counters / the walk as the
    counters see it or None). dram() lists them; summary() counts them."""
    out = []
    for r in rows:
        if r.get("dram_read_bytes") is None or r.get("sim_l2_hbm_read_bytes") is None:
            continue
        walk = r["sim_l2_hbm_read_bytes"] + r["sim_l2_hbm_write_bytes"]
        if walk:
            out.append((r, (r["dram_read_bytes"] + r["dram_write_bytes"]) / walk, r.get("dram_over_counters_view")))
    return out


def dram():
    """DRAM bytes (read + written) from the counters over the simulator's L2 walk, for every row that has
    both: how many lie within ±10%, and the others listed. Then the same against the counters' view of the
    walk (`sim_l2_counters_view_bytes`, written by `flashsim bench --resimulate` where a counters probe file
    lies beside the results): the walk less its dirty lines still in L2 at the end (they reach DRAM after the
    counted range) plus the residue the counters probes measured in every range (~28 MiB)."""
    doc = json.load(open(sys.argv[2]))
    ratios = dram_ratios(doc["rows"])
    raw = [x for _, x, _ in ratios]
    outside = [(r, x) for r, x, _ in ratios if abs(x - 1) > 0.10]
    inside = len(raw) - len(outside)
    seen = [(r, v) for r, _, v in ratios if v is not None]
    view = [v for _, v in seen]
    vout = [(r, v) for r, v in seen if abs(v - 1) > 0.10]
    vin = len(view) - len(vout)
    residue = next((r["counters_residue_bytes"] for r, _ in seen), None)

    def name(r):
        return (f"{r['variant']} {r['pass']} N={r['seq']} d={r['head_dim']} {'causal' if r['causal'] else 'none'}"
                f"{' ' + r['mode'] if r.get('mode') else ''}")

    print(f"{inside} of {inside + len(outside)} rows within ±10% of the walk (DRAM read + written, counters / walk; "
          f"{min(raw):.3f}-{max(raw):.3f})")
    for r, x in outside:
        print(f"  {name(r)}: {x:.3f}")
    if not view:
        print("\nno row carries the counters' view of the walk (`flashsim bench --resimulate FILE` adds it when "
              "FILE's <gpu>_counters_probe.json lies beside it)")
        return
    print(f"\n{vin} of {len(view)} rows within ±10% of the counters' view of the walk (counters / (walk - its dirty "
          f"bytes in L2 at the end + the probes' residue of {residue / 2**20:.1f} MiB); {min(view):.3f}-{max(view):.3f})")
    for r, v in vout:
        print(f"  {name(r)}: {v:.3f}")


def ring():
    """Ring attention with the kernels (flashsim bench --ring): the ring's passes beside one kernel call on
    the whole problem and on one device's share, all timed in the same call, and the simulator's ring."""
    doc = json.load(open(sys.argv[2]))
    print(f"{doc['device']}, {doc['date'][:10]}, commit {doc['git_commit'][:12]}; "
          "B = 1, H = 16, d = 128, bf16, causal; medians of the repeats, L2 flushed.\n")
    print("| transport | GPUs used | P | layout | N | tokens a device | ring fwd ms | one call fwd ms | ring bwd ms | "
          "one call bwd ms | fwd: one call / ring | bwd: one call / ring | efficiency fwd / fwd+bwd | "
          "sim. ring on P GPUs fwd / bwd ms | sim. as it ran fwd / bwd ms (sim / measured) | "
          "max abs vs one call (O, dK) | inside the bar |")
    print("|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|---|")
    for r in doc["rows"]:
        if "error" in r:
            print(f"| {r['transport']} | | {r['gpus']} | {r['layout']} | {r['seq']} | | error: {r['error']} |")
            continue
        one, sim, vs = r["single"], r.get("sim_ring", {}), r["vs_single"]
        eff = (f"{r['efficiency_forward']:.2f} / {r['efficiency_both']:.2f}" if r["gpus_used"] == r["gpus"]
               else "– (one GPU did the work of P)")
        print(f"| {r['transport']} | {r['gpus_used']} | {r['gpus']} | {r['layout']} | {r['seq']} | {r['tokens_per_gpu']} | "
              f"{r['forward_ms']:.3f} | {one['forward_ms']:.3f} | {r['backward_ms']:.3f} | {one['backward_ms']:.3f} | "
              f"{one['forward_ms'] / r['forward_ms']:.2f} | {one['backward_ms'] / r['backward_ms']:.2f} | {eff} | "
              f"{cell(sim.get('forward_ms'), '{:.3f}')} / {cell(sim.get('backward_ms'), '{:.3f}')} | "
              f"{as_run(r, sim)} | "
              f"{vs['O']['max_abs']:.1e}, {vs['dK']['max_abs']:.1e} | {'yes' if r['ok'] else 'NO'} |")


def as_run(r, sim):
    """The model of the ring as this row ran it: on P GPUs when it had them, else every device's compute
    and merges on the one GPU (sim_ring's one_gpu_*), with its ratio to the measured time."""
    key = "" if r["gpus_used"] == r["gpus"] else "one_gpu_"
    f, b = sim.get(key + "forward_ms"), sim.get(key + "backward_ms")
    if f is None:
        return "–"
    out = f"{f:.3f} ({f / r['forward_ms']:.2f})"
    if b is not None and r.get("backward_ms"):
        out += f" / {b:.3f} ({b / r['backward_ms']:.2f})"
    return out


def writes():
    """DRAM writes, the counters' against the L2 walk's, for the forward rows of the flash kernels
    whose forward writes only O and the log-sum-exp: what the counters saw beyond that, by the flush
    before the counted run (the note says which: a plain flush, or one that leaves no dirty line)."""
    doc = json.load(open(sys.argv[2]))
    mib = 2.0 ** 20
    print("| N | d | mask | variant | counters' writes MiB | walk's writes MiB | excess MiB | flush |")
    print("|---|---|---|---|---|---|---|---|")
    excess = {}
    for r in doc["rows"]:
        if r["pass"] != "forward" or r["variant"] not in ("flash2", "flash2h"):
            continue
        if r.get("dram_write_bytes") is None or r.get("sim_l2_hbm_write_bytes") is None:
            continue
        note = r.get("counters_note", "")
        flush = ("written, then another buffer read" if "read flush" in note
                 else "written, then read" if "no dirty line left" in note else "written")
        x = (r["dram_write_bytes"] - r["sim_l2_hbm_write_bytes"]) / mib
        excess.setdefault(flush, []).append(x)
        print(f"| {r['seq']} | {r['head_dim']} | {'causal' if r['causal'] else 'none'} | {r['variant']} | "
              f"{r['dram_write_bytes'] / mib:.1f} | {r['sim_l2_hbm_write_bytes'] / mib:.1f} | {x:.1f} | {flush} |")
    for flush, xs in excess.items():
        print(f"\nflush {flush}: {len(xs)} rows, the counters' writes exceed the walk's by "
              f"{min(xs):.1f}-{max(xs):.1f} MiB")


if __name__ == "__main__":
    modes = {"--summary": summary, "--ceilings": ceilings, "--decode": decode, "--ring": ring, "--writes": writes,
             "--decode-fixed": decode_fixed, "--decode-trace": decode_trace,
             "--dram": dram}
    if len(sys.argv) == 2 and sys.argv[1] in ("-h", "--help"):
        print(__doc__.strip())
    elif len(sys.argv) == 3 and sys.argv[1] in modes:
        modes[sys.argv[1]]()
    elif len(sys.argv) == 2 and not sys.argv[1].startswith("-"):
        main()
    else:
        sys.exit("table.py: give one results file, or one of " + ", ".join(modes) + " and one file (--help: usage)")
