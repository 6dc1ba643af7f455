"""The flashsim package's functions: each is exposed with a docstring and returns plain dicts and NumPy
arrays; attend agrees with a float64 NumPy attention written here (forward and gradients); fit brackets
the capacity; a tile machine's saved trace (the app's --trace file) carries the run's own counts.

Run by ctest (tests/CMakeLists.txt) with python/ and build/python/ on PYTHONPATH; exits 77 (skipped)
when the flashsim module or NumPy is missing."""
import json
import os
import sys
import tempfile

try:
    import numpy as np

    import flashsim
    from flashsim import lab
except ImportError as e:
    print("skipped: %s (build with pybind11-dev, python3-dev, python3-numpy)" % e)
    sys.exit(77)

failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


# every function a learner calls: there, documented
for name in ("simulate", "compare", "softmax", "attend", "decode", "fit", "attention_reference", "round_to",
             "machines", "TileMachine"):
    f = getattr(flashsim, name, None)
    expect(f is not None and (f.__doc__ or "").strip() != "", "flashsim.%s exists with a docstring" % name)
expect((flashsim.TileMachine.save_trace.__doc__ or "").strip() != "", "TileMachine.save_trace has a docstring")

# plain dicts and arrays
sim = flashsim.simulate(256, 64, algo="flash2")
expect(isinstance(sim, dict) and isinstance(sim["bytes"], int), "simulate returns a dict of ints")
cmp = flashsim.compare(256, 64)
expect(set(cmp) == {"standard", "flash1", "flash2"} and all(isinstance(v, dict) for v in cmp.values()),
       "compare returns a dict of dicts, one an algorithm")
sm = flashsim.softmax([1.0, 3.0, 2.0, 5.0, 4.0], block=2)
expect(isinstance(sm["streamed"], np.ndarray) and sm["streamed"].shape == (5,), "softmax returns NumPy arrays")
dec = flashsim.decode(4096, 128)
expect(isinstance(dec, dict) and dec["bytes"] > 0, "decode returns a dict")

# attend against float64 attention written here from the definition
rng = np.random.default_rng(7)
N, D = 80, 24
# inputs already fp16 values (NumPy's own float16 rounding), so rounding them again changes nothing
q, k, v, do = (rng.standard_normal((N, D)).astype(np.float16).astype(np.float32) for _ in range(4))
scale = 1.0 / np.sqrt(D)


def attention64(q, k, v, causal):
    s = (q.astype(np.float64) @ k.astype(np.float64).T) * scale
    if causal:
        s[np.triu_indices(N, 1)] = -np.inf
    p = np.exp(s - s.max(axis=1, keepdims=True))
    p /= p.sum(axis=1, keepdims=True)
    return p, p @ v.astype(np.float64)


for causal in (False, True):
    for algo in ("standard", "flash1", "flash2"):
        out = flashsim.attend(q, k, v, algo=algo, causal=causal, dtype="fp16", block_rows=32, block_cols=16)
        _, ref = attention64(q, k, v, causal)
        err = float(np.abs(out["O"].astype(np.float64) - ref).max())
        # O is rounded to fp16 once (half an ulp, 2^-11 at 1.0) after float32 arithmetic that adds far less:
        # 4 ulps of fp16 at the output's magnitude is the bar (as the lab's checks set it)
        tol = 4 * 2.0**-10 * max(1.0, float(np.abs(ref).max()))
        expect(out["O"].shape == (N, D) and out["O"].dtype == np.float32 and err <= tol,
               "attend %s%s: O (N, d) float32 within %.2g of float64 (max abs %.2g)"
               % (algo, " causal" if causal else "", tol, err))

# flash2's forward at B_r = 32: Q read once, K and V once per query tile (T_r = ceil(80 / 32) = 3), O once
# (fp16: 2 bytes an element), LSE once (fp32)
out = flashsim.attend(q, k, v, algo="flash2", dtype="fp16", block_rows=32, block_cols=16)
nd = N * D * 2
expect(out["bytes"] == nd + 2 * 3 * nd + nd + 4 * N, "attend flash2 counts Q + 3 (K + V) + O + LSE = %d B (got %d)"
       % (nd + 2 * 3 * nd + nd + 4 * N, out["bytes"]))

# gradients of L = sum(O * dO) by hand: dV = P^T dO, dP = dO V^T, dS = P o (dP - rowsum(dO o O)),
# dQ = scale dS K, dK = scale dS^T Q
p64, o64 = attention64(q, k, v, False)
do64 = do.astype(np.float64)
dv = p64.T @ do64
dp = do64 @ v.astype(np.float64).T
ds = p64 * (dp - (do64 * o64).sum(axis=1, keepdims=True))
grads = {"dQ": scale * ds @ k.astype(np.float64), "dK": scale * ds.T @ q.astype(np.float64), "dV": dv}
g = flashsim.attend(q, k, v, algo="flash2", dtype="fp32", block_rows=32, block_cols=16, dout=do)
for name, ref in grads.items():
    err = float(np.abs(g[name].astype(np.float64) - ref).max())
    # float32 throughout: sums of N = 80 terms lose at most an ulp (2^-23) a term; 16 such at the gradient's
    # magnitude leaves room for the recomputed P, and is orders below a wrong term (a missing scale is ~0.2)
    tol = 16 * N * 2.0**-23 * max(1.0, float(np.abs(ref).max()))
    expect(g[name].shape == (N, D) and err <= tol, "attend backward %s within %.2g of float64 (max abs %.2g)"
           % (name, tol, err))

# fit: the longest N brackets the capacity; flash2's footprint is linear in N, standard's is not
f2 = flashsim.fit(head_dim=128, heads=16, dtype="bf16", algo="flash2")
expect(f2["bytes_at_longest"] <= f2["capacity"] < f2["bytes_at_next"] and f2["next_n"] > f2["longest_n"] > 0,
       "fit flash2: longest %d fits %.4g <= %.4g B, the next grid point %d does not"
       % (f2["longest_n"], f2["bytes_at_longest"], f2["capacity"], f2["next_n"]))
expect(abs(f2["bytes_at_longest"] / f2["longest_n"] - f2["bytes_at_next"] / f2["next_n"]) < 1e-6 *
       f2["bytes_at_next"] / f2["next_n"], "fit flash2: bytes a token the same at both points (linear in N)")
fs = flashsim.fit(head_dim=128, heads=16, dtype="bf16", algo="standard")
expect(0 < fs["longest_n"] < f2["longest_n"], "fit: standard's N x N matrices fit a shorter N (%d < %d)"
       % (fs["longest_n"], f2["longest_n"]))
exact = flashsim.fit(head_dim=128, heads=16, dtype="bf16", algo="flash2", memory=f2["bytes_at_longest"])
expect(exact["longest_n"] == f2["longest_n"], "fit with memory = the footprint at N fits exactly that N")

# a saved trace: the run's own events and counts, the problem and tiles the built-in needs
p = lab.params(6)
tm, _, _, builtin, _ = lab.SETUPS[6](p, np.random.default_rng(1))
lab.load_kernel(lab.solution_file(6))(tm, p)
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "run.json")
    tm.save_trace(path)
    with open(path) as fh:
        t = json.load(fh)
    expect(t["format"] == "flashsim-lab-trace" and t["version"] == 1, "save_trace writes format version 1")
    expect(t["problem"]["seq"] == p.N and t["problem"]["head_dim"] == p.d and t["problem"]["dtype"] == p.dtype,
           "save_trace reads N, d and the dtype off tensor Q")
    expect(t["tiles"] == {"block_rows": p.B_r, "block_cols": p.B_c}, "save_trace reads B_r, B_c off the loads")
    moved = sum(e["bytes"] for e in t["events"] if e["kind"] in ("load", "store"))
    expect(moved == tm.totals()["bytes"] == builtin["bytes"],
           "the trace's events move the machine's %d B, the built-in flash2's at the same tiles" % moved)
    expect(len(t["events"]) == len(tm.events()), "every event is in the file")
    try:
        tm.save_trace(os.path.join(d, "no_such_folder", "run.json"))
        expect(False, "save_trace into a missing folder raises")
    except flashsim.Error as e:
        expect("cannot write" in str(e), "save_trace into a missing folder says so: %s" % e)

# `flashsim lab check N FILE --trace RUN.json`: saved where a built-in run of the puzzle's shape exists
with tempfile.TemporaryDirectory() as d:
    path = os.path.join(d, "run6.json")
    rep = lab.check(6, lab.solution_file(6), trace=path)
    expect(rep.ok and os.path.isfile(path) and "trace saved: " + path in rep.text(), "lab check 6 --trace saves it")
    path = os.path.join(d, "run2.json")
    rep = lab.check(2, lab.solution_file(2), trace=path)
    expect(rep.ok and not os.path.exists(path) and "no trace saved" in rep.text(),
           "lab check 2 --trace says the one-row softmax has no built-in run to replay beside")

if failures:
    print("%d failed" % len(failures))
    sys.exit(1)
print("all passed")
