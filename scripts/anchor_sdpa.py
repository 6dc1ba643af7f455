#!/usr/bin/env python3
"""scripts/anchor_sdpa.py — time PyTorch's attention beside flashsim's kernels, in the same call.

For every distinct configuration in a `flashsim bench --json` file (B, H, N, d, dtype, causal,
pass) this times, with the bench's method (CUDA events, warm-up, median of repeats, L2 flushed
before each repeat by writing a buffer twice the L2 size, or by reading one where the rows say
"l2_flush": "read", FLASHSIM_L2_FLUSH=read):
  * sdpa_flash  — torch SDPA restricted to the FLASH_ATTENTION backend (FlashAttention-2),
  * sdpa_cudnn  — torch SDPA restricted to the CUDNN_ATTENTION backend,
  * torch_matmul — plain q @ k^T * scale, mask, softmax, @ v (S and P materialised, like `standard`).
Backward times torch.autograd.grad of the output w.r.t. (q, k, v) with a fixed dO (no forward
inside the timed region, no gradient accumulation); step times the forward and that backward
together, as a training loop calls them. Each bench row gains `anchors` (ms of each)
and `ratio_vs_sdpa_flash` = sdpa_flash_ms / our ms (1.0 = as fast as SDPA-flash, > 1 faster).

Decode rows ("pass": "decode", from `flashsim bench --decode`): q of shape (B, H_q, 1, d) against
k, v of shape (B, H_kv, L, d), timed for sdpa_flash and sdpa_cudnn with enable_gqa=True; a backend
that refuses GQA is retried with k and v repeated to H_q heads (the anchor then says
"gqa": "repeated", and reads H_q/H_kv times the K/V bytes). `copy` times a device-to-device copy
of the K and V bytes (copy_tbps = bytes read + written / time). Decode rows gain `anchors`,
`ratio_vs_sdpa_flash`, `ratio_vs_sdpa_cudnn` and `fraction_of_copy` = our KV TB/s / copy_tbps.

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


def l2_flusher(mode="write"):
    """write (the method): fill a buffer twice L2; read: sum one (written once, read twice first), which
    leaves L2 full of clean lines: the bench's FLASHSIM_L2_FLUSH=read, so that the anchors of such
    rows are timed the same way."""
    l2 = torch.cuda.get_device_properties(0).L2_cache_size
    buf = torch.empty(2 * l2 // 4, dtype=torch.int32, device="cuda")
    if mode == "read":
        buf.fill_(1)
        for _ in range(2):
            buf.sum()
        return lambda: buf.sum()
    return lambda: buf.fill_(0x5A5A5A5A)


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


def measure_decode(cfg, flush, warmup, repeats):
    b, hq, hkv, L, d, dtype = cfg
    g = torch.Generator(device="cuda").manual_seed(1234)
    mk = lambda *shape: (torch.rand(shape, generator=g, device="cuda", dtype=torch.float32) * 2 - 1).to(DTYPES[dtype])
    q, k, v = mk(b, hq, 1, d), mk(b, hkv, L, d), mk(b, hkv, L, d)
    out = {}
    for name, backend in (("sdpa_flash", SDPBackend.FLASH_ATTENTION), ("sdpa_cudnn", SDPBackend.CUDNN_ATTENTION)):
        try:
            def gqa():
                with sdpa_kernel([backend]):
                    return F.scaled_dot_product_attention(q, k, v, enable_gqa=True)
            with torch.no_grad():
                gqa()
                ms = time_it(gqa, flush, warmup, repeats)
            out[name] = {"ms_median": ms[0], "ms_min": ms[1], "ms_max": ms[2], "repeats": repeats, "gqa": "enable_gqa"}
        except Exception as e:  # the backend refuses GQA: repeat K and V to H_q heads
            first = f"{type(e).__name__}: {str(e).splitlines()[0][:200]}"
            try:
                kr, vr = k.repeat_interleave(hq // hkv, dim=1), v.repeat_interleave(hq // hkv, dim=1)
                def rep():
                    with sdpa_kernel([backend]):
                        return F.scaled_dot_product_attention(q, kr, vr)
                with torch.no_grad():
                    ms = time_it(rep, flush, warmup, repeats)
                out[name] = {"ms_median": ms[0], "ms_min": ms[1], "ms_max": ms[2], "repeats": repeats,
                             "gqa": "repeated", "gqa_error": first}
                del kr, vr
            except Exception as e2:
                out[name] = {"error": f"{type(e2).__name__}: {str(e2).splitlines()[0][:200]}", "gqa_error": first}
        torch.cuda.empty_cache()
    kv_bytes = 2 * k.numel() * k.element_size()
    src = torch.empty(kv_bytes, dtype=torch.uint8, device="cuda")
    dst = torch.empty_like(src)
    ms = time_it(lambda: dst.copy_(src), flush, warmup, repeats)
    out["copy"] = {"ms_median": ms[0], "bytes": kv_bytes, "copy_tbps": 2 * kv_bytes / (ms[0] * 1e-3) / 1e12}
    for name in ("sdpa_flash", "sdpa_cudnn"):
        if "ms_median" in out[name]:
            reads = kv_bytes * (hq // hkv if out[name].get("gqa") == "repeated" else 1)
            out[name]["kv_tbps"] = kv_bytes / (out[name]["ms_median"] * 1e-3) / 1e12
            out[name]["kv_bytes_read"] = reads
    del q, k, v, src, dst
    torch.cuda.empty_cache()
    return out


def decode_rows(doc, a, flush, method):
    key = lambda r: (r["batch"], r["q_heads"], r["kv_heads"], r["kv_len"], r["head_dim"], r["dtype"])
    rows = [r for r in doc["rows"] if r.get("pass") == "decode" and "ms_median" in r]
    for cfg in sorted({key(r) for r in rows}):
        print(f"anchor: decode B={cfg[0]} H_q={cfg[1]} H_kv={cfg[2]} L={cfg[3]} d={cfg[4]} {cfg[5]}", file=sys.stderr, flush=True)
        an = measure_decode(cfg, flush, a.warmup, a.repeats)
        for r in rows:
            if key(r) != cfg:
                continue
            r["anchors"] = an
            for name in ("sdpa_flash", "sdpa_cudnn"):
                ms = an.get(name, {}).get("ms_median")
                r["ratio_vs_" + name] = ms / r["ms_median"] if ms and r["ms_median"] > 0 else None
            r["fraction_of_copy"] = r["tbps"] / an["copy"]["copy_tbps"] if an["copy"]["copy_tbps"] > 0 else None
        doc["anchor"] = {"torch": torch.__version__, "method": method}
        json.dump(doc, open(a.out, "w"), indent=1)
    print(f"{'B':>3} {'L':>7} {'d':>4} {'ms':>9} {'TB/s':>6} {'flash':>6} {'cudnn':>6} {'copy':>6} {'vs_flash':>8} {'vs_cudnn':>8}")
    for r in rows:
        an = r.get("anchors", {})
        f = lambda n: an.get(n, {}).get("kv_tbps", float("nan"))
        print(f"{r['batch']:3} {r['kv_len']:7} {r['head_dim']:4} {r['ms_median']:9.4f} {r['tbps']:6.2f} {f('sdpa_flash'):6.2f} "
              f"{f('sdpa_cudnn'):6.2f} {an.get('copy', {}).get('copy_tbps', float('nan')):6.2f} "
              f"{r.get('ratio_vs_sdpa_flash') or float('nan'):8.2f} {r.get('ratio_vs_sdpa_cudnn') or float('nan'):8.2f}")


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
    modes = {r.get("l2_flush", "write") for r in doc["rows"]}
    if len(modes) > 1:
        sys.exit("anchor: the rows were timed with different L2 flushes (%s): anchor each file alone" % sorted(modes))
    flush_mode = modes.pop()
    flush = l2_flusher(flush_mode)
    method = "events, warm-up, median, 2xL2 flush before each repeat" + (" (by reading: FLASHSIM_L2_FLUSH=read)" if flush_mode == "read" else "")
    if any(r.get("pass") == "decode" for r in doc["rows"]):
        decode_rows(doc, a, flush, method)
    doc_rows = [r for r in doc["rows"] if r.get("pass") not in ("decode", "fit")]
    if not doc_rows:
        return
    key = lambda r: (r["batch"], r["heads"], r["seq"], r["head_dim"], r["dtype"], r["causal"], r["pass"])
    configs = sorted({key(r) for r in doc_rows if "ms_median" in r})
    anchors = {}

    def merge_and_write():  # after every configuration, so a run cut short keeps its anchors
        for r in doc_rows:
            if "ms_median" not in r or key(r) not in anchors:
                continue
            an = anchors[key(r)]
            r["anchors"] = an
            fl = an.get("sdpa_flash", {}).get("ms_median")
            r["ratio_vs_sdpa_flash"] = fl / r["ms_median"] if fl and r["ms_median"] > 0 else None
            cu = an.get("sdpa_cudnn", {}).get("ms_median")
            r["ratio_vs_sdpa_cudnn"] = cu / r["ms_median"] if cu and r["ms_median"] > 0 else None
        doc["anchor"] = {"torch": torch.__version__, "method": method}
        json.dump(doc, open(a.out, "w"), indent=1)

    for cfg in configs:
        print(f"anchor: B={cfg[0]} H={cfg[1]} N={cfg[2]} d={cfg[3]} {cfg[4]} causal={cfg[5]} {cfg[6]}", file=sys.stderr, flush=True)
        anchors[cfg] = measure(cfg, flush, a.warmup, a.repeats)
        merge_and_write()
    print(f"{'variant':9} {'pass':8} {'N':>6} {'d':>4} {'mask':6} {'ms':>9} {'flash_ms':>9} {'ratio':>6}")
    for r in doc_rows:
        if "ms_median" in r and "anchors" in r:
            fl = r["anchors"].get("sdpa_flash", {}).get("ms_median", float("nan"))
            print(f"{r['variant']:9} {r['pass']:8} {r['seq']:6} {r['head_dim']:4} {'causal' if r['causal'] else 'none':6} "
                  f"{r['ms_median']:9.3f} {fl:9.3f} {r['ratio_vs_sdpa_flash'] or float('nan'):6.2f}")


if __name__ == "__main__":
    main()
