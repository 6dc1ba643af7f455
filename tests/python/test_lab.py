"""The lab's checks: every reference solution passes, every planted mistake fails naming itself, and
the FA1 / FA2 forward and the backward solutions count what the simulator's walkers count.

Run by ctest (tests/CMakeLists.txt) with python/ and build/python/ on PYTHONPATH; exits 77 (skipped)
when the flashsim module or NumPy is missing."""
import os
import sys

try:
    import numpy  # noqa: F401
    import flashsim
    from flashsim import lab
except ImportError as e:
    print("skipped: %s (build with pybind11-dev, python3-dev, python3-numpy)" % e)
    sys.exit(77)

HERE = os.path.dirname(os.path.abspath(__file__))
failures = []


def expect(cond, what):
    print(("ok   " if cond else "FAIL ") + what)
    if not cond:
        failures.append(what)


# The mistake each planted file makes, and a phrase the report must use to name it.
PLANTED = {
    1: "a tile read twice",
    2: "before the max is known",
    3: "rescale is forgotten",
    4: "a tile read twice",
    5: "SRAM overflow",
    6: "rescale is forgotten",
    7: "a needed tile was skipped",
    8: "miss the softmax scale",
    9: "the merge averages the splits",
    10: "the masked blocks were used",
}

for n in lab.PUZZLES:
    rep = lab.check(n, lab.solution_file(n))
    expect(rep.ok and not rep.mistakes, "puzzle %d: the reference solution passes" % n)
    if not rep.ok:
        print(rep.text())
    wrong = os.path.join(HERE, "wrong", os.path.basename(lab.solution_file(n)))
    rep = lab.check(n, wrong)
    named = any(PLANTED[n] in m for m in rep.mistakes)
    expect(not rep.ok and named, "puzzle %d: the planted mistake fails and is named (%s)" % (n, PLANTED[n]))
    if rep.ok or not named:
        print(rep.text())
    # the skeleton is not written yet: it fails with that said, never crashes
    rep = lab.check(n)
    expect(not rep.ok and "not written yet" in rep.text(), "puzzle %d: the skeleton is reported unwritten" % n)


def run_solution(n):
    p = lab.params(n)
    tm, _, _, sim, _ = lab.SETUPS[n](p, numpy.random.default_rng(3))
    lab.load_kernel(lab.solution_file(n))(tm, p)
    return tm.totals(), sim


# Bytes per tensor and FLOPs (matmul, exp, other) equal to the built-in walk at the same tiles. The
# built-in's counts come from the simulator's walkers (sim/forward.cpp, sim/backward.cpp), the
# solution's from the tile machine's own rules: two independent countings of the same loops.
for n, algo in ((5, "flash1"), (6, "flash2"), (7, "flash2 causal"), (8, "flash2 backward")):
    got, sim = run_solution(n)
    expect(got["tensors"] == sim["tensors"], "puzzle %d: bytes per tensor equal %s's" % (n, algo))
    expect(got["flops"] == sim["flops"], "puzzle %d: FLOPs equal %s's (%s)" % (n, algo, got["flops"]))
    if got["tensors"] != sim["tensors"] or got["flops"] != sim["flops"]:
        print("  lab:", got["tensors"], got["flops"], "\n  sim:", sim["tensors"], sim["flops"])

# Puzzle 9's byte budget (a formula in lab.py) against `flashsim decode`'s walk at the same splits and tiles,
# and the solution within it.
p9 = lab.params(9)
_, _, budget9, dec9, _ = lab.SETUPS[9](p9, numpy.random.default_rng(3))
expect(sum(r + w for r, w in budget9.values()) == dec9["bytes"], "puzzle 9: the budget equals flashsim decode's bytes")
got9, _ = run_solution(9)
expect(got9["bytes"] == dec9["bytes"], "puzzle 9: the solution moves flashsim decode's bytes")

# The bindings' softmax on the seeds' worked example: running sums computed here independently.
import math  # noqa: E402

sm = flashsim.softmax([1.4, 3.9, 0.7, 2.2, 4.6, 1.1, 3.1, 0.3], 4)
l1 = math.exp(-2.5) + 1 + math.exp(-3.2) + math.exp(-1.7)
l2 = l1 * math.exp(3.9 - 4.6) + 1 + math.exp(1.1 - 4.6) + math.exp(3.1 - 4.6) + math.exp(0.3 - 4.6)
expect(abs(sm["blocks"][0]["sum_after"] - l1) < 1e-6 and abs(sm["blocks"][1]["sum_after"] - l2) < 1e-6,
       "softmax: the worked example's running sums (float32: within 1e-6)")

# Bad input: a clear refusal, no crash.
try:
    flashsim.TileMachine(1024).load("Q", 0, 0, 1, 1)
    expect(False, "a load of a missing tensor is refused")
except flashsim.Error as e:
    expect("step 1 (load)" in str(e) and "no tensor named Q" in str(e), "a load of a missing tensor names the step")
expect(lab.main(["check", "11"]) == 1, "an unknown puzzle number is refused with status 1")
expect(lab.main(["--list"]) == 0 and len(lab.PUZZLES) >= 10, "--list lists ten puzzles or more")

print("%d failures" % len(failures))
sys.exit(1 if failures else 0)
