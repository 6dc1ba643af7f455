#!/usr/bin/env python3
"""tools/results/index.py: writes results/README.md, the index of the recorded results, or checks it.

  python3 tools/results/index.py          rewrite results/README.md (archive lines from git history)
  python3 tools/results/index.py --check  fail if a file under results/ is missing from the index,
                                          or the index names a file that is not there (no git needed)

Current files (results/<card>/<kind>) are described in CURRENT below: what made them and who reads
them. Archived files (results/archive/<date>/) get one line each: the commit that added them.
"""
import os, re, subprocess, sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
RESULTS = os.path.join(ROOT, "results")
INDEX = os.path.join(RESULTS, "README.md")

BENCH = "`flashsim bench --json` (scripts/gpu_session.sh, stage bench)"
CURRENT = {
    "h200/bench.json": (BENCH + ": every kernel, forward, backward and training step, B*N = 16k, H*d = 2048, bf16, "
                        "SDPA-flash and cuDNN timed in the same call, DRAM counters, the simulator's columns",
                        "lesson 10, the app's Measured and Timeline views, tests/cli/predicted_band.sh, README, docs/results.md"),
    "h200/bench.md": ("`python3 tools/results/table.py results/h200/bench.json`", "README (linked), docs/results.md, readme_tables.sh"),
    "h200/ceilings.json": ("`flashsim bench --ceilings --json`: HBM, L2, SRAM, mma.sync, wgmma, exp rates",
                           "`--ceilings measured`, the bench and the app (report::measured_rates), lessons 2 and 10"),
    "h200/decode.json": ("`flashsim bench --decode --json`: the split-KV decode kernel beside SDPA", "lesson 13, docs/results.md"),
    "h200/ring.json": ("`flashsim bench --ring P --json`: ring attention emulated on one GPU", "lesson 15, the Ring view, docs/results.md"),
    "h200/fit.json": ("`flashsim bench --fit --json`: the longest N each kernel allocates", "lesson 12, footprint_vs_peak.py"),
    "h200/study.json": ("`flashsim bench --study N --json`: every kernel against float64 on random shapes",
                        "tools/results/study.py, lesson 11"),
    "h200/scale.json": ("`flashsim bench --scale --json`: past 2^31 elements and at a million tokens", "README"),
    "h200/counters_probe.json": ("`flashsim bench --counters-probe --json`: what the DRAM counters count",
                                 "`bench --resimulate` (the counters' view of the walk)"),
    "h200/counters_probe_reread.json": ("`flashsim bench --counters-probe --json`, a second read",
                                        "tests/report/test_results.cpp"),
    "h200/dram_recheck.json": (BENCH + ": flash2h forward rows re-measured beside their DRAM counters (the rows "
                               "outside the DRAM band, timed again in one call)", "lesson 10"),
    "h200/clocks.csv": ("scripts/gpu_session.sh with CLOCKS=1: the SM clock, power and throttle reasons every 200 ms "
                        "beside a bench call", "tests/lessons/test_course.cpp (the exp rate's clock range)"),
    "h200/known_misses.txt": ("written by hand: rows the kernel model is known to miss, each with its reason",
                              "tools/results/predicted.py --known, tests/cli/predicted_band.sh"),
    "h200/known_dram_misses.txt": ("written by hand: rows whose DRAM count is known to leave the band",
                                   "tests/cli/predicted_band.sh"),
    "h200/checks.log": ("scripts/gpu_session.sh, stage tests: the GPU tests and compute-sanitizer", "people"),
    "h200/session.log": ("scripts/gpu_session.sh: the whole GPU call's log", "people"),
    "h200/flash2h_b1_h16_d128.json": (BENCH + ": flash2h at B = 1, H = 16, d = 128", "lessons, docs"),
    "h100/fp8.json": ("scripts/gpu_session.sh, stage fp8: flash2h's forward in FP8 (e4m3, inputs prepared apart: "
                      "prep_ms) beside bf16 in the same call, B*N = 16k, H*d = 2048, d = 128, N = 4096-16384",
                      "lesson 16, docs/kernel-notes/fp8.md"),
    "h100/fp8_tests.log": ("scripts/gpu_session.sh, stage fp8: the FP8 GPU tests and compute-sanitizer on small shapes",
                           "people, docs/kernel-notes/fp8.md"),
    "h100/bench.json": (BENCH + " on an H100 80GB: the grid's forward and backward rows (no training step), "
                        "both masks; SDPA-flash and cuDNN timed on the same held machine; the simulator's columns and "
                        "predictions for the H100-SXM preset (`bench --resimulate`)", "docs/results.md, the app's Measured view"),
    "h100/known_misses.txt": ("written by hand: grid rows the kernel model misses with the H100's measured ceilings, "
                              "each with what is known of why", "tools/results/predicted.py --known, tests/cli/predicted_band.sh, "
                              "tests/viz/test_viewstate.cpp"),
    "h100/bench.md": ("`python3 tools/results/table.py results/h100/bench.json`", "docs/results.md"),
    "h100/checks.log": ("scripts/gpu_session.sh, stage tests, on an H100 80GB (binaries of 119c59a: the FP8 "
                        "bar derived for P's rounding flips, the overlapped FP8 schedule's bits)", "people, docs/kernel-notes/h100.md"),
    "h100/ceilings.json": ("`flashsim bench --ceilings --json` on an H100 80GB (with the FP8 wgmma rate, wgmma_e4m3; "
                           "cuBLAS's GEMMs and the two-pass softmax at ragged N, the *_n<N> points, from a later "
                           "call: each ceiling's run says which)",
                           "`--ceilings measured --gpu H100-SXM`, the bench's and resimulate's H100 predictions, "
                           "docs/kernel-notes/h100.md"),
    "h100/fit.json": ("`flashsim bench fit --json` on an H100 80GB",
                      "docs/kernel-notes/h100.md"),
    "h100/scale.json": ("`flashsim bench scale --json` on an H100 80GB: past 2^31 elements and at a million tokens",
                        "docs/kernel-notes/h100.md"),
    "h100/offgrid.json": ("tools/offgrid/measure.sh (scripts/gpu_session.sh, stage offgrid): the off-grid shapes of "
                          "tools/offgrid/shapes.json on an H100 80GB, predictions with the H100's measured ceilings (`bench --resimulate`)",
                          "tools/offgrid/check.py, docs/timing.md, docs/kernel-notes/h100.md"),
    "h100/session.log": ("scripts/gpu_session.sh: the GPU calls' log on an H100 80GB", "people"),
    "h100/decode.json": ("`flashsim bench --decode --json` on an H100 80GB", "lesson 13, docs/results.md"),
    "h100/ring.json": ("`flashsim bench --ring P --json` on an H100 80GB", "lesson 15, docs/results.md"),
    "h100/counters_probe.json": ("`flashsim bench --counters-probe --json` on an H100 80GB", "people"),
    "h100/launch_probe.json": ("`flashsim bench --launch-probe --json`: what a short call pays besides its work",
                               "docs/memory_and_decode.md"),
    "h100/eager_authors.json": ("scripts/eager_pytorch.py: Figure 2's standard attention as the paper's authors ran it "
                                "in eager PyTorch, kernel by kernel", "`flashsim scenario figure2`, lesson 7"),
    "h100/eager_hf.json": ("scripts/eager_pytorch.py: HuggingFace GPT-2's eager attention, kernel by kernel",
                           "`flashsim scenario figure2` (a variant)"),
    "h100/flash2h_b1_h16_d128.json": (BENCH + ": flash2h at B = 1, H = 16, d = 128 on an H100 80GB", "docs"),
}


def listed_files():
    out = []
    for dp, _, fs in os.walk(RESULTS):
        for f in fs:
            rel = os.path.relpath(os.path.join(dp, f), RESULTS)
            if rel != "README.md":
                out.append(rel)
    return sorted(out)


def added_by(rel):
    try:
        # where the file was first added: its old place (cuda/results/<name>) or its place now
        log = subprocess.run(["git", "log", "--diff-filter=A", "--format=%h %s", "--",
                              "cuda/results/" + os.path.basename(rel), os.path.join("results", rel)],
                             cwd=ROOT, capture_output=True, text=True).stdout
        line = log.strip().split("\n")[-1] if log.strip() else ""
        return line[:160] if line else "(history not available)"
    except OSError:
        return "(history not available)"


def write():
    files = listed_files()
    cur = [f for f in files if not f.startswith("archive/")]
    arch = [f for f in files if f.startswith("archive/")]
    lines = ["# Recorded results: the index", "",
             "What the GPU measured, as data. One current file per kind and card (`<card>/<kind>`); code, lessons",
             "and the app read only these, through `report::results_dir()` (report/results.hpp). Everything",
             "older is in `archive/<date>/`, kept as the record behind docs/kernel-notes; nothing reads it.",
             "Scripts that print or check these files live in tools/results/. This page is written by",
             "`python3 tools/results/index.py` and checked by `index.py --check` (a ctest).", "",
             "## Current", "", "| file | what made it | who reads it |", "|---|---|---|"]
    for f in cur:
        what, who = CURRENT.get(f, ("(not described: add it to tools/results/index.py)", "?"))
        lines.append(f"| [{f}]({f}) | {what} | {who} |")
    lines += ["", "## Archive", "", "Each file with the commit that added it (its message says what it measured).", "",
              "| file | added by |", "|---|---|"]
    for f in arch:
        lines.append(f"| {f} | {added_by(f)} |")
    open(INDEX, "w").write("\n".join(lines) + "\n")


def check():
    text = open(INDEX).read()
    named = set(re.findall(r"^\| \[?([^\]|]+?)\]?(?:\([^)]*\))? \|", text, flags=re.M)) - {"file"}
    files = set(listed_files())
    bad = 0
    for f in sorted(files - named):
        print(f"results/{f} is not in results/README.md: run python3 tools/results/index.py", file=sys.stderr); bad = 1
    for f in sorted(named - files):
        print(f"results/README.md names {f}, which is not there", file=sys.stderr); bad = 1
    for f in sorted(files):
        if not f.startswith("archive/") and f not in CURRENT:
            print(f"results/{f}: a current file with no description in tools/results/index.py", file=sys.stderr); bad = 1
    if not bad:
        print(f"results index: {len(files)} files, each listed once")
    return bad


if __name__ == "__main__":
    sys.exit(check() if "--check" in sys.argv[1:] else write())
