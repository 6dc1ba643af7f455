"""flashsim.lab: puzzles where you write the tiling and the simulator grades it.

  python3 -m flashsim.lab --list              the puzzles
  python3 -m flashsim.lab check N [FILE]      run FILE (default: lab/puzzles/NN_*.py) on random inputs
  ... check N [FILE] --trace RUN.json         and save the run for `flashsim-app --trace RUN.json`

A puzzle file defines `kernel(tm, p)`: `tm` is a flashsim.TileMachine whose HBM already holds the
puzzle's tensors, `p` the sizes (p.N, p.d, p.B_r, p.B_c, p.scale, ...). The check reports the output
against float64, the bytes moved against the puzzle's budget and the built-in algorithm at the same
tiles, the SRAM peak, and a hint when the result looks like a common mistake.
"""
import importlib.util
import math
import os
import sys
import types

try:
    import numpy as np

    import flashsim
except ImportError as e:  # the module not built (or built before a change): say what to do, no traceback
    sys.exit("flashsim lab: %s (the lab needs python3-numpy too; scripts/deps.sh installs it)" % e)

HERE = os.path.dirname(os.path.abspath(__file__))
LAB_DIR = os.environ.get("FLASHSIM_LAB_DIR") or os.path.normpath(os.path.join(HERE, "..", "..", "lab"))
F32 = 4
ELEM = {"fp16": 2, "bf16": 2, "fp32": 4}
# One unit in the last place at 1.0 of each storage type: the output is rounded to it once at the
# store, and float32 accumulation adds far less; 4 of them at the output's magnitude is the bar (as
# `flashsim bench` sets its own), loose enough for a correct tiling, far below any wrong offset.
EPS = {"fp16": 2.0**-10, "bf16": 2.0**-7, "fp32": 2.0**-23}

# [PUZZLES] number -> (slug, title). The files are lab/puzzles/NN_slug.py; the sizes are in SIZES.
PUZZLES = {
    1: ("copy", "Tile copy: Q to O, one row tile at a time"),
    2: ("row_softmax", "One row's softmax (exp only after the max is known)"),
    3: ("online_softmax", "Online softmax over key blocks: the log-sum-exp in one pass"),
    4: ("tiled_qk", "Tiled S = scale Q K^T under a byte budget"),
    5: ("fa1_forward", "Algorithm 1's forward (K/V blocks outer; O, l, m in HBM)"),
    6: ("fa2_forward", "FlashAttention-2's forward (query blocks outer)"),
    7: ("causal", "Causal FA2 forward: skip the tiles above the diagonal"),
    8: ("backward", "FA2's backward with recomputation: D, dV, dK, dQ"),
    9: ("split_kv_decode", "Split-KV decoding and its merge"),
    10: ("block_sparse", "Block-sparse FA2 forward: skip the masked blocks"),
}
SIZES = {
    1: dict(N=200, d=24, B_r=64, dtype="fp16"),
    2: dict(R=4, N=256, dtype="fp32"),
    3: dict(R=64, N=512, B_r=32, B_c=64, dtype="fp32"),
    4: dict(N=256, d=32, B_r=64, B_c=64, dtype="fp16"),
    5: dict(N=192, d=32, B_r=64, B_c=32, dtype="fp16"),
    6: dict(N=200, d=32, B_r=64, B_c=48, dtype="fp16"),
    7: dict(N=192, d=32, B_r=64, B_c=32, dtype="fp16", causal=True),
    8: dict(N=160, d=32, B_r=32, B_c=64, dtype="fp16"),
    9: dict(R=4, N=512, d=32, B_c=64, splits=4, dtype="fp16"),
    10: dict(N=256, d=32, B_r=64, B_c=64, dtype="fp16"),
}


def puzzle_file(n):
    slug = PUZZLES[n][0]
    return os.path.join(LAB_DIR, "puzzles", "%02d_%s.py" % (n, slug))


def solution_file(n):
    return os.path.join(LAB_DIR, "solutions", "%02d_%s.py" % (n, PUZZLES[n][0]))


def params(n):
    p = types.SimpleNamespace(**SIZES[n])
    p.causal = getattr(p, "causal", False)
    if hasattr(p, "d"):
        p.scale = 1.0 / math.sqrt(p.d)
    if hasattr(p, "B_r"):
        p.T_r = -(-getattr(p, "R", p.N) // p.B_r)
    if hasattr(p, "B_c"):
        p.T_c = -(-p.N // p.B_c)
    return p


def load_kernel(path):
    if not os.path.isfile(path):
        raise SystemExit("flashsim lab: no file %s; give the path of your puzzle file" % path)
    spec = importlib.util.spec_from_file_location("flashsim_lab_puzzle", path)
    mod = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(mod)
    if not hasattr(mod, "kernel"):
        raise SystemExit("flashsim lab: %s defines no kernel(tm, p); write one (see the puzzle's docstring)" % path)
    return mod.kernel


def rounded(rng, shape, dtype, spread=1.0):
    return flashsim.round_to((rng.standard_normal(shape) * spread).astype(np.float32), dtype)


# The built-in run the app's replay sets beside a puzzle's trace: (algorithm, pass). The puzzles
# not listed have no built-in attention run of their shape (a copy, one softmax, S alone, decoding).
TRACE_BUILTIN = {5: ("flash1", "forward"), 6: ("flash2", "forward"), 7: ("flash2", "forward"),
                 8: ("flash2", "backward"), 10: ("flash2", "forward")}


def save_trace(tm, n, p, path, rep):
    if n not in TRACE_BUILTIN:
        rep.say("no trace saved: puzzle %d has no built-in run to replay beside it (puzzles %s do)"
                % (n, ", ".join(str(k) for k in TRACE_BUILTIN)))
        return
    algo, pass_ = TRACE_BUILTIN[n]
    try:
        tm.save_trace(path, algo=algo, block_rows=p.B_r, block_cols=p.B_c, causal=p.causal, pass_=pass_)
    except flashsim.Error as e:
        rep.say("no trace saved: %s" % e)
        return
    rep.say("trace saved: %s (replay it: flashsim-app --trace %s)" % (path, path))


# [SETUPS] each returns (machine, expected outputs {name: float64 array}, budget bytes {tensor: (read, write)},
# SRAM capacity in bytes, built-in counts or None, mistake signatures {hint: {name: array}})


def builtin(p, algo, pass_="forward"):
    kw = dict(dtype=p.dtype, causal=p.causal, block_rows=p.B_r, block_cols=p.B_c, pass_=pass_)
    if pass_ == "backward":
        kw.update(bwd_block_rows=p.B_r, bwd_block_cols=p.B_c)
    return flashsim.simulate(p.N, p.d, algo=algo, **kw)


def budget_from(sim):
    return {t: (v["read"], v["write"]) for t, v in sim["tensors"].items()}


def lse64(q, k, scale, causal, keep=None):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        s[np.triu_indices(s.shape[0], 1, s.shape[1])] = -np.inf
    if keep is not None:
        s[~keep] = -np.inf
    m = s.max(axis=1, keepdims=True)
    return s, m + np.log(np.exp(s - m).sum(axis=1, keepdims=True))


def attention64(q, k, v, scale, causal=False, keep=None):
    s, lse = lse64(q, k, scale, causal, keep)
    return np.exp(s - lse) @ v.astype(np.float64), lse


def setup_copy(p, rng):
    tm = flashsim.TileMachine(p.B_r * p.d * ELEM[p.dtype])
    q = rounded(rng, (p.N, p.d), p.dtype)
    tm.add_tensor("Q", q, dtype=p.dtype)
    tm.add_tensor("O", rows=p.N, cols=p.d, dtype=p.dtype, role="output")
    nb = p.N * p.d * ELEM[p.dtype]
    return tm, {"O": q.astype(np.float64)}, {"Q": (nb, 0), "O": (0, nb)}, None, {}


def setup_row_softmax(p, rng):
    tm = flashsim.TileMachine(p.N * F32 + 2 * F32)
    s = (rng.standard_normal((p.R, p.N)) * 40).astype(np.float32)  # scores up to ~150: exp overflows fp32
    tm.add_tensor("S", s, dtype="fp32")
    tm.add_tensor("P", rows=p.R, cols=p.N, dtype="fp32", role="output")
    s64 = s.astype(np.float64)
    e = np.exp(s64 - s64.max(axis=1, keepdims=True))
    nb = p.R * p.N * F32
    return tm, {"P": e / e.sum(axis=1, keepdims=True)}, {"S": (nb, 0), "P": (0, nb)}, None, {}


def online_mistakes(s, b_c):
    """LSE as the two common wrong loops compute it (float64), for the hints."""
    m = np.full((s.shape[0], 1), -np.inf)
    l_norescale = np.zeros_like(m)
    l_early = np.zeros_like(m)
    m_early = np.full_like(m, -np.inf)
    for c0 in range(0, s.shape[1], b_c):
        blk = s[:, c0 : c0 + b_c]
        m_new = np.maximum(m, blk.max(axis=1, keepdims=True))
        l_norescale = l_norescale + np.exp(blk - m_new).sum(axis=1, keepdims=True)
        m = m_new
        shift = np.where(np.isinf(m_early), 0.0, m_early)  # summed with the old max (-inf counts as 0)
        with np.errstate(over="ignore", invalid="ignore"):
            l_early = np.exp(m_early - np.maximum(m_early, m_new)) * l_early + np.exp(blk - shift).sum(
                axis=1, keepdims=True
            )
        m_early = np.maximum(m_early, m_new)
    with np.errstate(over="ignore", invalid="ignore", divide="ignore"):
        return {
            "the rescale is forgotten: when the running max grows, multiply l by exp(m_old - m_new) first": m
            + np.log(l_norescale),
            "l is summed before the max is known: take the block's max (and the new running max) before exp": m_early
            + np.log(l_early),
        }


def setup_online_softmax(p, rng):
    tm = flashsim.TileMachine(p.B_r * p.B_c * F32 + 6 * p.B_r * F32)
    s = (rng.standard_normal((p.R, p.N)) * 8).astype(np.float32)
    s[:, p.N // 2 :] += 20  # the max grows in the second half: a missing rescale shows
    tm.add_tensor("S", s, dtype="fp32")
    tm.add_tensor("LSE", rows=p.R, cols=1, dtype="fp32", role="output")
    s64 = s.astype(np.float64)
    m = s64.max(axis=1, keepdims=True)
    lse = m + np.log(np.exp(s64 - m).sum(axis=1, keepdims=True))
    sigs = {k: {"LSE": v} for k, v in online_mistakes(s64, p.B_c).items()}
    return tm, {"LSE": lse}, {"S": (p.R * p.N * F32, 0), "LSE": (0, p.R * F32)}, None, sigs


def setup_qkv(p, rng, names=("Q", "K", "V")):
    tm_in = {}
    for t in names:
        tm_in[t] = rounded(rng, (p.N, p.d), p.dtype)
    return tm_in


def setup_tiled_qk(p, rng):
    e = ELEM[p.dtype]
    tm = flashsim.TileMachine(p.B_r * p.d * e + p.B_c * p.d * e + p.B_r * p.B_c * F32)
    x = setup_qkv(p, rng, ("Q", "K"))
    for t in ("Q", "K"):
        tm.add_tensor(t, x[t], dtype=p.dtype)
    tm.add_tensor("S", rows=p.N, cols=p.N, dtype=p.dtype, role="output")
    s = (x["Q"].astype(np.float64) @ x["K"].astype(np.float64).T) * p.scale
    nb = p.N * p.d * e
    return tm, {"S": s}, {"Q": (nb, 0), "K": (p.T_r * nb, 0), "S": (0, p.N * p.N * e)}, None, {}


def flash_machine(p, sim, extra_rows):
    return flashsim.TileMachine(sim["sram_peak_bytes"] + extra_rows)


def setup_fa1(p, rng):
    sim = builtin(p, "flash1")
    # room beyond the built-in's buffers: P V before it is scaled (B_r x d) and eight row vectors
    tm = flash_machine(p, sim, p.B_r * p.d * F32 + 8 * p.B_r * F32)
    x = setup_qkv(p, rng)
    for t in ("Q", "K", "V"):
        tm.add_tensor(t, x[t], dtype=p.dtype)
    tm.add_tensor("O", rows=p.N, cols=p.d, dtype="fp32", role="output")
    tm.add_tensor("l", rows=p.N, cols=1, dtype="fp32", role="scratch")
    tm.add_tensor("m", rows=p.N, cols=1, dtype="fp32", role="scratch")
    o, _ = attention64(x["Q"], x["K"], x["V"], p.scale, p.causal)
    return tm, {"O": o}, budget_from(sim), sim, {}


def fa2_norescale(q, k, v, p, keep=None):
    """FA2's forward with the rescale forgotten (float64): acc and l never multiplied by exp(m_old - m_new)."""
    s_all, _ = lse64(q, k, p.scale, p.causal, keep)
    out = np.zeros((p.N, p.d))
    for r0 in range(0, p.N, p.B_r):
        s_rows = s_all[r0 : r0 + p.B_r]
        m = np.full((s_rows.shape[0], 1), -np.inf)
        l = np.zeros_like(m)
        acc = np.zeros((s_rows.shape[0], p.d))
        for c0 in range(0, p.N, p.B_c):
            blk = s_rows[:, c0 : c0 + p.B_c]
            m = np.maximum(m, blk.max(axis=1, keepdims=True))
            e = np.exp(blk - np.where(np.isinf(m), 0.0, m))
            l = l + e.sum(axis=1, keepdims=True)
            acc = acc + e @ v[c0 : c0 + p.B_c].astype(np.float64)
        out[r0 : r0 + p.B_r] = acc / np.where(l > 0, l, 1.0)
    return out


def setup_fa2(p, rng, keep=None):
    sim = builtin(p, "flash2")
    tm = flash_machine(p, sim, 4 * p.B_r * F32)  # four row vectors beyond the built-in's buffers
    x = setup_qkv(p, rng)
    for t in ("Q", "K", "V"):
        tm.add_tensor(t, x[t], dtype=p.dtype)
    tm.add_tensor("O", rows=p.N, cols=p.d, dtype=p.dtype, role="output")
    tm.add_tensor("LSE", rows=p.N, cols=1, dtype="fp32", role="output")
    o, lse = attention64(x["Q"], x["K"], x["V"], p.scale, p.causal, keep)
    sigs = {"the rescale is forgotten: multiply acc and l by exp(m_old - m_new) when the max grows": {
        "O": fa2_norescale(x["Q"], x["K"], x["V"], p, keep)}}
    if p.causal:
        o_nomask, lse_nomask = attention64(x["Q"], x["K"], x["V"], p.scale, False)
        sigs["the causal mask is missing inside the diagonal tiles: mask_causal(S, row0, col0) there"] = {
            "O": o_nomask
        }
    return tm, {"O": o, "LSE": lse}, budget_from(sim), sim, sigs


def setup_causal(p, rng):
    return setup_fa2(p, rng)


def setup_backward(p, rng):
    sim = builtin(p, "flash2", "backward")
    tm = flash_machine(p, sim, 4 * p.B_r * F32)
    x = setup_qkv(p, rng, ("Q", "K", "V", "dO"))
    o, lse = attention64(x["Q"], x["K"], x["V"], p.scale, p.causal)
    x["O"] = flashsim.round_to(o.astype(np.float32), p.dtype)
    for t in ("Q", "K", "V", "O", "dO"):
        tm.add_tensor(t, x[t], dtype=p.dtype)
    tm.add_tensor("LSE", lse.astype(np.float32), dtype="fp32")
    tm.add_tensor("D", rows=p.N, cols=1, dtype="fp32", role="scratch")
    tm.add_tensor("dQ_acc", rows=p.N, cols=p.d, dtype="fp32", role="scratch")
    for t in ("dQ", "dK", "dV"):
        tm.add_tensor(t, rows=p.N, cols=p.d, dtype=p.dtype, role="output")
    g = flashsim.attention_backward_reference(x["Q"], x["K"], x["V"], x["dO"], p.causal, p.scale)
    exp = {t: g[t][0, 0] for t in ("dQ", "dK", "dV")}
    sigs = {
        "dQ and dK miss the softmax scale: multiply by p.scale once at the end": {
            "dQ": exp["dQ"] / p.scale,
            "dK": exp["dK"] / p.scale,
        }
    }
    return tm, exp, budget_from(sim), sim, sigs


def setup_split_kv(p, rng):
    e = ELEM[p.dtype]
    r, s = p.R, p.splits
    sram = r * p.d * e + 2 * p.B_c * p.d * e + r * p.d * F32 + r * p.B_c * F32 + 6 * r * F32
    tm = flashsim.TileMachine(max(sram, 2 * r * p.d * F32 + 6 * r * F32))
    q = rounded(rng, (r, p.d), p.dtype)
    k = rounded(rng, (p.N, p.d), p.dtype)
    v = rounded(rng, (p.N, p.d), p.dtype)
    k[p.N // 2 :] *= 3  # the later splits score higher: a merge that forgets the LSE weights shows
    k = flashsim.round_to(k, p.dtype)
    tm.add_tensor("Q", q, dtype=p.dtype)
    tm.add_tensor("K", k, dtype=p.dtype)
    tm.add_tensor("V", v, dtype=p.dtype)
    tm.add_tensor("O_part", rows=s * r, cols=p.d, dtype="fp32", role="scratch")
    tm.add_tensor("LSE_part", rows=s * r, cols=1, dtype="fp32", role="scratch")
    tm.add_tensor("O", rows=r, cols=p.d, dtype=p.dtype, role="output")
    o, _ = attention64(q, k, v, p.scale)
    keys = p.N // s
    parts = [attention64(q, k[a * keys : (a + 1) * keys], v[a * keys : (a + 1) * keys], p.scale)[0] for a in range(s)]
    budget = {
        "Q": (s * r * p.d * e, 0),
        "K": (p.N * p.d * e, 0),
        "V": (p.N * p.d * e, 0),
        "O": (s * r * p.d * F32, s * r * p.d * F32 + r * p.d * e),
        "LSE": (s * r * F32, s * r * F32),
    }
    sigs = {"the merge averages the splits: weight each by exp(LSE_s - LSE), LSE = log sum exp(LSE_s)": {
        "O": sum(parts) / s}}
    dec = flashsim.decode(p.N, p.d, q_len=r, splits=s, tile_keys=p.B_c, dtype=p.dtype)
    return tm, {"O": o}, budget, dict(dec, algo="split-KV decode (flashsim decode)"), sigs


def block_keep(p, rng):
    keep = rng.random((p.T_r, p.T_c)) < 0.5
    np.fill_diagonal(keep, True)
    return keep


def setup_block_sparse(p, rng):
    e = ELEM[p.dtype]
    p.block_mask = block_keep(p, rng)
    full = np.kron(p.block_mask, np.ones((p.B_r, p.B_c), dtype=bool))[: p.N, : p.N]
    tm, exp, _, sim, sigs = setup_fa2(p, rng, keep=full)
    kept = int(p.block_mask.sum())
    nb = p.N * p.d * e
    budget = {"Q": (nb, 0), "K": (kept * p.B_c * p.d * e, 0), "V": (kept * p.B_c * p.d * e, 0), "O": (0, nb),
              "LSE": (0, p.N * F32)}
    x = {t: tm.hbm(t) for t in ("Q", "K", "V")}
    dense, _ = attention64(x["Q"], x["K"], x["V"], p.scale)
    sigs["the masked blocks were used: skip tile (i, j) where p.block_mask[i][j] is False"] = {"O": dense}
    return tm, exp, budget, None, sigs


SETUPS = {1: setup_copy, 2: setup_row_softmax, 3: setup_online_softmax, 4: setup_tiled_qk, 5: setup_fa1,
          6: setup_fa2, 7: setup_causal, 8: setup_backward, 9: setup_split_kv, 10: setup_block_sparse}


# [CHECK]
class Report:
    def __init__(self):
        self.ok = True
        self.lines = []
        self.mistakes = []

    def say(self, line):
        self.lines.append(line)

    def fail(self, line):
        self.ok = False
        self.lines.append("FAIL: " + line)

    def hint(self, line):
        self.mistakes.append(line)
        self.lines.append("hint: " + line)

    def text(self):
        return "\n".join(self.lines + ["PASS" if self.ok else "NOT YET"])


def error_hint(msg):
    if "SRAM overflow" in msg:
        return "SRAM overflow: free the tiles a step no longer needs, and compute in place (out=)"
    if "was freed" in msg:
        return "a tile used after it was freed: free it after its last use"
    return None


def compare_bytes(rep, tm_tot, budget, p):
    got = tm_tot["tensors"]
    total_budget = sum(r + w for r, w in budget.values())
    rep.say("bytes moved: %d (budget %d)" % (tm_tot["bytes"], total_budget))
    for t in sorted(set(got) | set(budget)):
        r, w = got.get(t, {}).get("read", 0), got.get(t, {}).get("write", 0)
        br, bw = budget.get(t, (0, 0))
        if r > br and br > 0 and (p.causal or getattr(p, "block_mask", None) is not None) and t in ("K", "V"):
            rep.hint("wrong skip: %s read %d B, more than the %d B of the tiles that matter; skip every tile %s"
                     % (t, r, br, "above the diagonal" if p.causal else "whose block_mask is False"))
        elif r > br and br > 0:
            rep.hint("a tile read twice: %s read %d B, %.2f times the %d B the puzzle needs; keep it in SRAM "
                     "while you use it" % (t, r, r / br, br))
        elif r > br:
            rep.hint("%s read %d B where none is needed" % (t, r))
        if w > bw:
            rep.hint("%s written %d B, more than the %d B needed: store each result once" % (t, w, bw))
        if r < br and t in ("K", "V"):
            rep.hint("%s read less than expected (%d of %d B): a needed tile was skipped (a wrong causal skip?)"
                     % (t, r, br))
    if tm_tot["bytes"] > total_budget:
        rep.fail("moved %d bytes, over the budget of %d" % (tm_tot["bytes"], total_budget))


def check(n, path=None, seed=1, trace=None):
    """Run puzzle n's kernel from `path` (default: the learner's file) and return a Report; with
    `trace`, save the run there for the app's replay (`flashsim-app --trace FILE`)."""
    if n not in PUZZLES:
        raise SystemExit("flashsim lab: no puzzle %s; there are 1 to %d (flashsim lab --list)" % (n, len(PUZZLES)))
    path = path or puzzle_file(n)
    kernel = load_kernel(path)
    p = params(n)
    rng = np.random.default_rng(seed)
    tm, expected, budget, sim, sigs = SETUPS[n](p, rng)
    rep = Report()
    rep.say("puzzle %d: %s  (%s)" % (n, PUZZLES[n][1], path))
    try:
        kernel(tm, p)
    except flashsim.Error as e:
        rep.fail(str(e))
        h = error_hint(str(e))
        if h:
            rep.hint(h)
        return rep
    except NotImplementedError:
        rep.fail("kernel(tm, p) is not written yet")
        return rep
    tol_e = EPS["fp32" if n in (2, 3) else p.dtype]
    for name, ref in expected.items():
        got = tm.hbm(name).astype(np.float64)
        bad = ~np.isfinite(got)
        scale = max(1.0, float(np.abs(ref).max()))
        # 4 ulps of the stored dtype; the backward's gradients sum N terms in float32 (16 ulps); the
        # float32 puzzles' sums of N terms may lose an ulp a term
        tol = (p.N if n in (2, 3) else 16 if n == 8 else 4) * tol_e * scale
        err = float(np.abs(got - ref).max()) if not bad.any() else float("inf")
        rep.say("%s: max abs error %.3g against float64 (tolerance %.3g for %s)" % (name, err, tol, p.dtype))
        if bad.any():
            rep.fail("%s holds %d NaN or inf values" % (name, int(bad.sum())))
            if n in (2, 3):
                rep.hint("exp overflowed: l is summed before the max is known; subtract the row max before exp")
        elif err > tol:
            rep.fail("%s differs from float64 by %.3g (tolerance %.3g)" % (name, err, tol))
            for hint, sig in sigs.items():
                if name in sig:
                    s = sig[name]
                    if np.all(np.isfinite(s)) and float(np.abs(got - s).max()) <= max(tol, 1e-3 * scale):
                        rep.hint(hint)
    tot = tm.totals()
    if trace:
        save_trace(tm, n, p, trace, rep)
    compare_bytes(rep, tot, budget, p)
    if sim is not None and "flops" in sim:
        rep.say("built-in %s at the same tiles (B_r %d, B_c %d): %d bytes, %d FLOPs; yours: %d bytes, %d FLOPs"
                % (sim["algo"], p.B_r, p.B_c, sim["bytes"], sim["flops"]["total"], tot["bytes"],
                   tot["flops"]["total"]))
    elif sim is not None:
        rep.say("built-in %s at the same splits and tiles: %d bytes; yours: %d" % (sim["algo"], sim["bytes"],
                                                                                  tot["bytes"]))
    rep.say("SRAM peak: %d of %d bytes" % (tm.sram_peak, tm.sram_capacity))
    if tm.live_tiles:
        rep.say("note: %d tiles still in SRAM at the end (free them)" % tm.live_tiles)
    return rep


def listing():
    lines = []
    for n, (slug, title) in PUZZLES.items():
        lines.append("%2d  %-16s %s" % (n, slug, title))
    return "\n".join(lines)


def main(argv):
    usage = "usage: python3 -m flashsim.lab --list | check N [FILE] [--trace RUN.json]"
    trace = None
    if "--trace" in argv:
        at = argv.index("--trace")
        if at + 1 >= len(argv):
            print("flashsim lab: --trace needs a file name, e.g. --trace run.json", file=sys.stderr)
            return 2
        trace = argv[at + 1]
        argv = argv[:at] + argv[at + 2:]
    if not argv or argv[0] in ("-h", "--help"):
        print(__doc__.strip() + "\n\n" + usage)
        return 0 if argv else 2
    if argv[0] in ("--list", "list"):
        print(listing())
        return 0
    if argv[0] == "check" and len(argv) in (2, 3):
        try:
            n = int(argv[1])
        except ValueError:
            print("flashsim lab: puzzle number must be an integer from 1 to %d, got '%s'" % (len(PUZZLES), argv[1]),
                  file=sys.stderr)
            return 1
        if n not in PUZZLES:
            print("flashsim lab: no puzzle %d; there are 1 to %d (flashsim lab --list)" % (n, len(PUZZLES)),
                  file=sys.stderr)
            return 1
        rep = check(n, argv[2] if len(argv) == 3 else None, trace=trace)
        print(rep.text())
        return 0 if rep.ok else 1
    print(usage, file=sys.stderr)
    return 2


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
