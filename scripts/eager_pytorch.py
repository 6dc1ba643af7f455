#!/usr/bin/env python3
"""scripts/eager_pytorch.py — Figure 2's standard attention, run as eager PyTorch on the GPU at hand.

The simulator's Figure 2 (sim/figure2.cpp, `flashsim scenario figure2`) counts the bytes and time of
attention written as PyTorch ops, one kernel an op: by default the paper's authors' baseline
(S = scale Q K^T in one batched GEMM with the scale as its alpha, S + an additive causal mask, softmax,
dropout, O = P V) and autograd's backward kernels; with --program hf, HuggingFace GPT-2's (S = Q K^T,
S / sqrt(d) on its own, torch.where with the causal bool, softmax, dropout, O = P V). The model times
each kernel at the GPU preset's rates. This runs the same ops on a real GPU so that its time per
kernel can be read against the model's on the same card (the paper's A100 is not lent).

Inputs are (B*H, N, d), contiguous, random, fp16 (the paper's dtype), dropout 0.1 (the model's
kernels do not depend on p). Measured:
  * the step (forward + torch.autograd.grad of O w.r.t. q, k, v with a fixed dO): CUDA events,
    warm-up, median of --repeats, L2 flushed before each repeat by writing a buffer twice its size
    (the method of the bench and of scripts/anchor_sdpa.py), and, the same way, a device-to-device
    copy of one N x N tensor (the card's copy rate, bytes read + written over time);
  * each kernel of one step: torch.profiler (CUPTI) durations, --profile-repeats steps each after a
    flush, the median of every kernel's position in the sequence; a kernel's name is PyTorch's.
With --ncu-mark the script instead runs one step between cudaProfilerStart/Stop, for
`ncu --profile-from-start off` to read each kernel's DRAM bytes (scripts/gpu_session.sh, stage eager).

usage: python3 scripts/eager_pytorch.py --out eager.json [--program authors|hf] [--repeats 20]
       python3 scripts/eager_pytorch.py --merge-ncu ncu.csv --out eager.json
"""
import argparse
import datetime
import json
import math
import os
import statistics
import sys

# the paper's configuration (GPT-2 medium's attention, Figure 2)
DEFAULTS = dict(batch=64, heads=16, seq=1024, head_dim=64)
DROPOUT_P = 0.1


def merge_ncu(csv_path, out):
    """Set ncu's per-kernel DRAM bytes (its --csv --page raw log) into the JSON this script wrote."""
    import csv
    if not os.path.exists(csv_path) or not os.path.exists(out):
        sys.exit(f"eager_pytorch: nothing to merge ({csv_path} or {out} is missing)")
    rows = list(csv.reader(line for line in open(csv_path) if line.startswith('"')))
    if len(rows) < 3:
        sys.exit("eager_pytorch: no kernels in " + csv_path)
    hdr = rows[0]
    col = {m: hdr.index(m) for m in ("Kernel Name", "dram__bytes_read.sum", "dram__bytes_write.sum",
                                     "gpu__time_duration.sum") if m in hdr}
    num = lambda r, m: float(r[col[m]].replace(",", "") or 0) if m in col else 0.0
    ks = [{"name": r[col["Kernel Name"]] if "Kernel Name" in col else "?",
           "dram_read_bytes": int(num(r, "dram__bytes_read.sum")),
           "dram_write_bytes": int(num(r, "dram__bytes_write.sum")),
           "ncu_ms": num(r, "gpu__time_duration.sum") / 1e6} for r in rows[2:]]  # rows[1]: units
    doc = json.load(open(out))
    doc["ncu_kernels"] = ks
    doc["ncu_note"] = ("ncu --profile-from-start off --clock-control none, kernel replay (caches flushed before "
                       "each kernel), one step")
    doc["dram_bytes"] = sum(k["dram_read_bytes"] + k["dram_write_bytes"] for k in ks)
    json.dump(doc, open(out, "w"), indent=1)
    print(f"eager ncu: {len(ks)} kernels, DRAM {doc['dram_bytes'] / 1e9:.2f} GB")
    for k in ks:
        print(f"  {(k['dram_read_bytes'] + k['dram_write_bytes']) / 1e9:8.3f} GB {k['ncu_ms']:8.3f} ms  {k['name'][:100]}")


def program(kind, n, d):
    """The forward as a function of (q, k, v); every op its own kernel."""
    scale = 1.0 / math.sqrt(d)
    if kind == "authors":
        # the additive mask: 0 on and below the diagonal, -10000 above, in the inputs' dtype
        mask = torch.triu(torch.full((n, n), -10000.0, device="cuda", dtype=torch.float16), 1)

        def fwd(q, k, v):
            s = torch.baddbmm(torch.empty(q.shape[0], n, n, device="cuda", dtype=q.dtype), q, k.transpose(1, 2),
                              beta=0.0, alpha=scale)
            s = s + mask
            p = torch.softmax(s, dim=-1)
            p = F.dropout(p, DROPOUT_P, training=True)
            return torch.bmm(p, v)
        return fwd
    if kind == "hf":
        causal = torch.tril(torch.ones((n, n), device="cuda", dtype=torch.bool)).view(1, n, n)
        low = torch.tensor(torch.finfo(torch.float16).min, device="cuda", dtype=torch.float16)

        def fwd(q, k, v):
            s = torch.bmm(q, k.transpose(1, 2))
            s = s / math.sqrt(d)
            s = torch.where(causal, s, low)
            p = torch.softmax(s, dim=-1)
            p = F.dropout(p, DROPOUT_P, training=True)
            return torch.bmm(p, v)
        return fwd
    sys.exit(f"eager_pytorch: unknown --program '{kind}'; give authors or hf")


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--out", help="JSON file to write (required unless --ncu-mark)")
    ap.add_argument("--program", default="authors")
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    ap.add_argument("--profile-repeats", type=int, default=5)
    ap.add_argument("--ncu-mark", action="store_true")
    ap.add_argument("--merge-ncu", metavar="CSV", help="set ncu's per-kernel DRAM bytes into --out and stop")
    for k, v in DEFAULTS.items():
        ap.add_argument("--" + k.replace("_", "-"), type=int, default=v)
    a = ap.parse_args()
    if a.merge_ncu:
        if not a.out:
            sys.exit("eager_pytorch: --merge-ncu needs --out FILE (the JSON to add to)")
        return merge_ncu(a.merge_ncu, a.out)
    if not a.ncu_mark and not a.out:
        sys.exit("eager_pytorch: give --out FILE (or --ncu-mark under ncu)")
    if min(a.batch, a.heads, a.seq, a.head_dim, a.repeats, a.profile_repeats) < 1:
        sys.exit("eager_pytorch: batch, heads, seq, head-dim and the repeats must be at least 1")
    global torch, F
    try:
        import torch
        import torch.nn.functional as F
    except ImportError:
        sys.exit("eager_pytorch: PyTorch is not installed here; run it on the GPU machine (scripts/gpu_session.sh, "
                 "stage eager)")
    if not torch.cuda.is_available():
        sys.exit("eager_pytorch: no CUDA device; this measures a GPU")
    # the anchors' flush and timing loop (events, warm-up, median of repeats, a flush before each)
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    from anchor_sdpa import l2_flusher, time_it
    bh, n, d = a.batch * a.heads, a.seq, a.head_dim
    g = torch.Generator(device="cuda").manual_seed(1234)
    mk = lambda: ((torch.rand((bh, n, d), generator=g, device="cuda") * 2 - 1).half().requires_grad_(True))
    q, k, v = mk(), mk(), mk()
    do = (torch.rand((bh, n, d), generator=g, device="cuda") * 2 - 1).half()
    fwd = program(a.program, n, d)
    step = lambda: torch.autograd.grad(fwd(q, k, v), (q, k, v), do)
    flush = l2_flusher("write")

    for _ in range(a.warmup):
        step()
    torch.cuda.synchronize()
    if a.ncu_mark:
        flush()
        torch.cuda.synchronize()
        torch.cuda.profiler.start()
        step()
        torch.cuda.synchronize()
        torch.cuda.profiler.stop()
        return

    step_ms = time_it(step, flush, 0, a.repeats)  # warmed up above
    # the card's copy rate, measured the same way: one N x N tensor of the step copied device to device
    src = torch.empty((bh, n, n), device="cuda", dtype=torch.float16).fill_(1.0)
    dst = torch.empty_like(src)
    copy_ms = time_it(lambda: dst.copy_(src), flush, a.warmup, a.repeats)[0]
    copy_bytes = 2 * src.numel() * src.element_size()
    del src, dst
    torch.cuda.empty_cache()
    torch.cuda.reset_peak_memory_stats()
    step()
    torch.cuda.synchronize()
    peak = torch.cuda.max_memory_allocated()

    from torch.profiler import ProfilerActivity, profile
    runs = []
    for _ in range(a.profile_repeats):
        flush()
        torch.cuda.synchronize()
        with profile(activities=[ProfilerActivity.CUDA]) as prof:
            step()
            torch.cuda.synchronize()
        ks = [(e.name, e.device_time_total / 1000.0) for e in prof.events()
              if e.device_type == torch.autograd.DeviceType.CUDA and e.device_time_total > 0]
        runs.append(ks)
    names = [x[0] for x in runs[0]]
    consistent = all([x[0] for x in r] == names for r in runs)
    kernels = []
    for i, nm in enumerate(names):
        vals = [r[i][1] for r in runs if len(r) > i and r[i][0] == nm]
        kernels.append({"name": nm, "ms_median": statistics.median(vals), "samples": len(vals)})

    p = torch.cuda.get_device_properties(0)
    doc = {
        "what": "Figure 2's standard attention as eager PyTorch (scripts/eager_pytorch.py)",
        "program": a.program,
        "device": p.name,
        "sm_count": p.multi_processor_count,
        "l2_bytes": p.L2_cache_size,
        "torch": torch.__version__,
        "cuda": torch.version.cuda,
        "date": datetime.datetime.now(datetime.timezone.utc).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "commit": os.environ.get("FLASHSIM_GIT_COMMIT", "unknown"),
        "batch": a.batch, "heads": a.heads, "seq": n, "head_dim": d, "dtype": "fp16", "dropout": DROPOUT_P,
        "method": "step = forward + autograd.grad(O; q, k, v); events, %d warm-up, median of %d, 2xL2 write flush "
                  "before each; kernels by torch.profiler, median of %d steps each after a flush"
                  % (a.warmup, a.repeats, a.profile_repeats),
        "step_ms_median": step_ms[0], "step_ms_min": step_ms[1], "step_ms_max": step_ms[2],
        "repeats": a.repeats,
        "peak_allocated_bytes": peak,
        "copy_bytes": copy_bytes, "copy_ms_median": copy_ms, "copy_tbps": copy_bytes / (copy_ms * 1e-3) / 1e12,
        "kernel_sequence_consistent": consistent,
        "kernels": kernels,
        "kernels_ms_sum": sum(x["ms_median"] for x in kernels),
    }
    with open(a.out, "w") as f:
        json.dump(doc, f, indent=1)
    print(f"eager {a.program}: {p.name}, step {doc['step_ms_median']:.3f} ms (median of {a.repeats}), "
          f"kernels sum {doc['kernels_ms_sum']:.3f} ms, peak {peak / 1e9:.2f} GB; copy {doc['copy_tbps']:.2f} TB/s")
    for x in kernels:
        print(f"  {x['ms_median']:9.3f} ms  {x['name'][:110]}")


if __name__ == "__main__":
    main()
