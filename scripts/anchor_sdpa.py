#!/usr/bin/env python3
"""scripts/anchor_sdpa.py — time PyTorch's attention beside flashsim's kernels, in the same call.

For every distinct configuration in a `flashsim bench --json` file (B, H, N, d, dtype, causal,
pass) this times, with the bench's method (CUDA events, warm-up, median of repeats, L2 flushed
before each repeat by writing a buffer twice the L2 size):
  * sdpa_flash  — torch SDPA restricted to the FLASH_ATTENTION backend (FlashAttention-2),
  * sdpa_cudnn  — torch SDPA restricted to the CUDNN_ATTENTION backend,
  * torch_matmul — plain q @ k^T * scale, mask, softmax, @ v (S and P materialised, like `standard`).
Backward times torch.autograd.grad of the output w.r.t. (q, k, v) with a fixed dO (no forward
inside the timed region, no gradient accumulation); step times the forward and that backward
together, as a training loop calls them. Each bench row gains `anchors` (ms of each)
and `ratio_vs_sdpa_flash` = sdpa_flash_ms / our ms (1.0 = as fast as SDPA-flash, > 1 faster).

usage: python3 scripts/anchor_sdpa.py --bench bench.json --out merged.json [--repeats 20]
"""
import argparse
import json
import math
import statistics
import sys

import torch
import torch.nn.functional as F
from torch.nn.attention import SDPBackend, sdpa_kernel

DTYPES = {"bf16": torch.bfloat16, "fp16": torch.float16}


def l2_flusher():
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    buf = torch.empty(2 * l2, dtype=torch.uint8, device="cuda")
    return lambda: buf.fill_(0x5A)


def time_it(fn, flush, warmup, repeats):
    for _ in range(warmup):
        fn()
    torch.cuda.synchronize()
    times = []
    start, stop = torch.cuda.Event(enable_timing=True), torch.cuda.Event(enable_timing=True)
    for _ in range(repeats):
        flush()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(start.elapsed_time(stop))
    return statistics.median(times), min(times), max(times)


def matmul_attention(q, k, v, causal, scale):
    s = torch.matmul(q, k.transpose(-2, -1)) * scale
    if causal:
        n = q.shape[-2]
        mask = torch.ones(n, n, dtype=torch.bool, device=q.device).triu(1)
        s = s.masked_fill(mask, float("-inf"))
    p = torch.softmax(s, dim=-1)
    return torch.matmul(p, v)


def measure(cfg, flush, warmup, repeats):
    b, h, n, d, dtype, causal, pass_ = cfg
    g = torch.Generator(device="cuda").manual_seed(1234)
    shape = (b, h, n, d)
    mk = lambda: (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(DTYPES[dtype])
    q, k, v, do = mk(), mk(), mk(), mk()
    scale = 1.0 / math.sqrt(d)
    out = {}
    impls = {
        "sdpa_flash": lambda q, k, v: _sdpa(q, k, v, causal, SDPBackend.FLASH_ATTENTION),
        "sdpa_cudnn": lambda q, k, v: _sdpa(q, k, v, causal, SDPBackend.CUDNN_ATTENTION),
        "torch_matmul": lambda q, k, v: matmul_attention(q, k, v, causal, scale),
    }
    for name, f in impls.items():
        try:
            if pass_ == "forward":
                with torch.no_grad():
                    ms = time_it(lambda: f(q, k, v), flush, warmup, repeats)
            elif pass_ == "step":
                qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
                ms = time_it(lambda: torch.autograd.grad(f(qg, kg, vg), (qg, kg, vg), do), flush, warmup, repeats)
                del qg, kg, vg
            else:
                qg, kg, vg = (x.detach().requires_grad_(True) for x in (q, k, v))
                o = f(qg, kg, vg)
                ms = time_it(lambda: torch.autograd.grad(o, (qg, kg, vg), do, retain_graph=True), flush, warmup, repeats)
                del o, qg, kg, vg
            out[name] = {"ms_median": ms[0], "ms_min": ms[1], "ms_max": ms[2], "repeats": repeats}
        except Exception as e:  # a backend may refuse a shape; say so in the row
            out[name] = {"error": f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"}
        torch.cuda.empty_cache()
    return out


def _sdpa(q, k, v, causal, backend):
    with sdpa_kernel([backend]):
        return F.scaled_dot_product_attention(q, k, v, is_causal=causal)


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--bench", required=True)
    ap.add_argument("--out", required=True)
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--warmup", type=int, default=3)
    a = ap.parse_args()
    doc = json.load(open(a.bench))
    if not doc or not doc.get("rows"):
        sys.exit("anchor: no bench rows in " + a.bench)
    flush = l2_flusher()
    key = lambda r: (r["batch"], r["heads"], r["seq"], r["head_dim"], r["dtype"], r["causal"], r["pass"])
    configs = sorted({key(r) for r in doc["rows"] if "ms_median" in r})
    anchors = {}

    def merge_and_write():  # after every configuration, so a run cut short keeps its anchors
        for r in doc["rows"]:
            if "ms_median" not in r or key(r) not in anchors:
                continue
            an = anchors[key(r)]
            r["anchors"] = an
            fl = an.get("sdpa_flash", {}).get("ms_median")
            r["ratio_vs_sdpa_flash"] = fl / r["ms_median"] if fl and r["ms_median"] > 0 else None
            cu = an.get("sdpa_cudnn", {}).get("ms_median")
            r["ratio_vs_sdpa_cudnn"] = cu / r["ms_median"] if cu and r["ms_median"] > 0 else None
        doc["anchor"] = {"torch": torch.__version__, "method": "events, warm-up, median, 2xL2 flush before each repeat"}
        json.dump(doc, open(a.out, "w"), indent=1)

    for cfg in configs:
        print(f"anchor: B={cfg[0]} H={cfg[1]} N={cfg[2]} d={cfg[3]} {cfg[4]} causal={cfg[5]} {cfg[6]}", file=sys.stderr, flush=True)
        anchors[cfg] = measure(cfg, flush, a.warmup, a.repeats)
        merge_and_write()
    print(f"{'variant':9} {'pass':8} {'N':>6} {'d':>4} {'mask':6} {'ms':>9} {'flash_ms':>9} {'ratio':>6}")
    for r in doc["rows"]:
        if "ms_median" in r and "anchors" in r:
            fl = r["anchors"].get("sdpa_flash", {}).get("ms_median", float("nan"))
            print(f"{r['variant']:9} {r['pass']:8} {r['seq']:6} {r['head_dim']:4} {'causal' if r['causal'] else 'none':6} "
                  f"{r['ms_median']:9.3f} {fl:9.3f} {r['ratio_vs_sdpa_flash'] or float('nan'):6.2f}")


if __name__ == "__main__":
    main()
