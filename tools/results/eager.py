#!/usr/bin/env python3
"""tools/results/eager.py — Figure 2's standard attention as eager PyTorch, measured, beside the model.

usage: python3 tools/results/eager.py FILE [--flashsim BIN]

FILE is what scripts/eager_pytorch.py wrote on a GPU (gpu_session stage eager): the step's time, each
kernel's time (torch.profiler) and, merged from ncu, each kernel's DRAM bytes, with the card's copy
rate measured in the same run. Printed: each kernel with its time, its DRAM bytes, its rate and that
rate as a fraction of the copy's; the totals; and, with --flashsim, the model's program on the same
card (`flashsim scenario figure2 --gpu G [--ceilings measured]`, G the preset of FILE's device) with
the ratios model / measured for the bytes and the time.
"""
import json
import os
import re
import subprocess
import sys

PRESETS = [("H200", "H200"), ("H100", "H100-SXM"), ("A100", "A100-40GB")]


def short(name):
    """A kernel's name without its template arguments, plus the functor or op it applies, if any."""
    plain = re.sub(r"^void\s+", "", name.replace("(anonymous namespace)::", "").replace("<unnamed>::", ""))
    base = re.split(r"[<(]", plain, 1)[0].strip()
    base = base.split("::")[-1] or name[:40]
    what = re.findall(r"(\w+Functor\w*|\w+_kernel\w*|softmax\w*|dropout\w*|where\w*)", name)
    extra = [w for w in dict.fromkeys(what) if w != base][:2]
    return base + (" [" + ", ".join(extra) + "]" if extra else "")


def main(argv):
    flashsim = None
    if "--flashsim" in argv:
        i = argv.index("--flashsim")
        if i + 1 >= len(argv):
            print("eager.py: --flashsim needs the path of the flashsim binary", file=sys.stderr)
            return 2
        flashsim = argv[i + 1]
        argv = argv[:i] + argv[i + 2:]
    if len(argv) != 1:
        print(__doc__.strip().splitlines()[2], file=sys.stderr)
        return 2
    try:
        doc = json.load(open(argv[0]))
    except (OSError, ValueError) as e:
        print(f"eager.py: cannot read {argv[0]}: {e}", file=sys.stderr)
        return 1
    if not doc.get("kernels"):
        print(f"eager.py: {argv[0]} has no kernels (not a scripts/eager_pytorch.py file?)", file=sys.stderr)
        return 1
    copy = doc.get("copy_tbps")
    print(f"{doc['program']} program on {doc['device']} ({doc['date']}, commit {doc['commit'][:7]}, torch "
          f"{doc['torch']}): B={doc['batch']} H={doc['heads']} N={doc['seq']} d={doc['head_dim']} "
          f"{doc['dtype']}, dropout {doc['dropout']}, forward + backward")
    print(f"method: {doc['method']}; copy {copy:.2f} TB/s" if copy else f"method: {doc['method']}")
    ncu = doc.get("ncu_kernels") or []
    # ncu profiles kernels only: the profiler's memsets (cuBLAS's workspace) have no ncu row
    kernels = [k for k in doc["kernels"] if not k["name"].startswith(("Memset", "Memcpy"))]
    paired = len(ncu) == len(kernels)
    if ncu and not paired:
        print(f"note: ncu saw {len(ncu)} kernels and the profiler {len(kernels)}; bytes not paired")
    print()
    print("| # | kernel | ms | DRAM GB | TB/s | of copy |")
    print("|---|---|---|---|---|---|")
    for i, k in enumerate(kernels):
        gb = tb = frac = ""
        if paired:
            b = ncu[i]["dram_read_bytes"] + ncu[i]["dram_write_bytes"]
            gb = f"{b / 1e9:.3f}"
            if k["ms_median"] > 0:
                rate = b / (k["ms_median"] * 1e-3) / 1e12
                tb = f"{rate:.2f}"
                frac = f"{rate / copy:.2f}" if copy else ""
        print(f"| {i + 1} | {short(k['name'])} | {k['ms_median']:.3f} | {gb} | {tb} | {frac} |")
    dram = doc.get("dram_bytes")
    print()
    print(f"step {doc['step_ms_median']:.3f} ms (events, median of {doc['repeats']}); kernels "
          f"{doc['kernels_ms_sum']:.3f} ms summed (memsets included); DRAM " + (f"{dram / 1e9:.2f} GB (ncu)" if dram else "not read"))
    if dram and copy:
        print(f"the step's DRAM bytes over its time: {dram / (doc['step_ms_median'] * 1e-3) / 1e12:.2f} TB/s, "
              f"{dram / (doc['step_ms_median'] * 1e-3) / 1e12 / copy:.2f} of the copy")
    if not flashsim:
        return 0
    preset = next((p for key, p in PRESETS if key in doc["device"]), None)
    if not preset:
        print(f"model: no preset for {doc['device']}")
        return 0
    def model(rates):
        cmd = [flashsim, "scenario", "figure2", "--gpu", preset, "--eager-rates", rates, "--json"]
        if preset == "H200":
            cmd += ["--ceilings", "measured"]
        j = json.loads(subprocess.run(cmd, check=True, capture_output=True, text=True).stdout)
        if doc["program"] == "authors":
            return cmd, j, j["standard"]["hbm_gb"], j["standard"]["ms"]
        v = next(v for v in j["variants"] if "HuggingFace" in v["label"])
        return cmd, j, v["hbm_gb"], v["ms"]

    try:
        cmd0, _, gb, ms0 = model("none")
        cmd1, j1, _, ms1 = model("auto")
    except (OSError, subprocess.CalledProcessError, ValueError, StopIteration) as e:
        print(f"eager.py: flashsim scenario figure2 failed: {e}", file=sys.stderr)
        return 1
    what = "the authors' program" if doc["program"] == "authors" else "HuggingFace's program"
    print(f"model of {what} on the {preset} preset: {gb:.2f} GB")
    if dram:
        print(f"  bytes: model / measured DRAM {gb / (dram / 1e9):.3f}")
    print(f"  time, every kernel at the HBM rate ({' '.join(cmd0[1:])}): {ms0:.3f} ms, "
          f"model / measured step {ms0 / doc['step_ms_median']:.3f}")
    src = j1.get("eager_rates_source", "")
    own = os.path.basename(argv[0]) in src
    print(f"  time, each kernel at its recorded fraction ({' '.join(cmd1[1:])}): {ms1:.3f} ms, model / measured step "
          f"{ms1 / doc['step_ms_median']:.3f}" + (" (the fractions come from this file: a consistency check, not a "
                                                  "prediction)" if own else ""))
    return 0


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
