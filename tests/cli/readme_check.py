#!/usr/bin/env python3
"""tests/cli/readme_check.py FLASHSIM SOURCE_DIR [README] -- README's commands run and its numbers have a source.

1. Commands. Every command in a ```sh block of README.md is run as written (in a scratch copy of the
   source tree, `flashsim` on PATH being the binary under test), except those in SKIP below, each
   skipped for a stated reason (a GPU, an install, a build). A command fails the check when it exits
   non-zero, or when it changes a file that was already there and that it does not name on its
   command line (a command writes only where its user says). A line of a block that begins with
   whitespace continues the command above it; text after ` #` is a comment. A synopsis with
   [optional] parts does not run as written, and fails.
2. Numbers. Every number in README.md outside the ```sh blocks (prose, tables, output samples) must
   appear in what a source printed: the commands of step 1, and the scripts in SOURCES (the tables
   README shows, from the results files). A number also counts as given when a README command types it
   (a parameter such as --seq 8192) or when GIVEN lists it with its reason. Numbers are compared as
   written, without thousands separators: README's 0.93 needs a source printing 0.93.
Exit 0 when both hold; 1 with one line per failure; 77 (skip) without python3's modules.
"""
import os
import re
import shutil
import subprocess
import sys
import tempfile

# Commands README may show but this check cannot run, by prefix, each with its reason.
SKIP = [
    ("flashsim bench --resimulate", None),  # not skipped: CPU only (listed first so the GPU prefix below does not catch it)
    ("flashsim bench", "times or probes the CUDA kernels: needs a CUDA GPU (scripts/gpu_session.sh runs it)"),
    ("flashsim attend --backend cuda", "runs the CUDA kernels: needs a CUDA GPU"),
    ("scripts/gpu_session.sh", "the GPU session: needs a CUDA GPU"),
    ("scripts/run.sh", "installs packages and builds, then opens the app: the build under test is this one"),
    ("scripts/test.sh", "installs packages, builds and runs every test: the test suite itself"),
    ("cmake", "a build: the build under test is this one"),
    ("ctest", "the test suite itself"),
]

# Scripts whose output README quotes (its tables), run from the source tree.
SOURCES = [
    ["python3", "tools/results/table.py", "--summary", "results/h200/bench.json"],
    ["python3", "tools/results/table.py", "--ring", "results/h200/ring.json"],
    ["python3", "tools/results/table.py", "--decode", "results/h200/decode.json"],
    ["python3", "tools/results/table.py", "--decode-fixed", "results/h200/decode.json"],
    ["python3", "tools/results/table.py", "--decode-trace", "results/h200/decode.json"],
    ["python3", "tools/results/table.py", "--ceilings", "results/h200/ceilings.json"],
    ["python3", "tools/results/eager.py", "results/h100/eager_authors.json"],
    ["python3", "tools/results/study.py", "results/h200/study.json"],
    ["python3", "tools/results/study.py", "--scale", "results/h200/scale.json"],
]

# Numbers README may state without a printed source, each with its reason. Keep it short: a figure
# belongs in a source's output, not here.
GIVEN = {
    "2": "counting words: two passes, two GPUs",
    "90": "sm_90, the CUDA architecture name",
    "12": "Debian 12, the supported distribution",
    "20": "C++20, the language standard",
}

def numbers_in(text):
    """The numbers of `text` as written, thousands separators removed; version-like and glued tokens skipped."""
    out = []
    for m in re.finditer(r"(?<![\w./])(?<![A-Za-z_]-)(\d{1,3}(?:,\d{3})+|\d+)(\.\d+)?(?=x\b|[^\w.]|\.(?!\d)|$)", text):
        out.append(m.group(1).replace(",", "") + (m.group(2) or ""))
    return out


def blocks(readme):
    """(kind, lines) for each fenced block and each stretch of text between them."""
    out, cur, kind = [], [], "text"
    for line in readme.split("\n"):
        if line.startswith("```"):
            out.append((kind, cur))
            cur = []
            kind = ("fence:" + line[3:].strip()) if kind == "text" else "text"
            continue
        cur.append(line)
    out.append((kind, cur))
    return out


def commands(readme):
    cmds = []
    for kind, lines in blocks(readme):
        if kind != "fence:sh":
            continue
        for line in lines:
            code = re.split(r"(?:^|\s)#", line, maxsplit=1)[0].rstrip()
            if not code.strip():
                continue
            if line[:1].isspace() and cmds:
                cmds[-1] += " " + code.strip()
            else:
                cmds.append(code.strip())
    return cmds


def snapshot(root):
    state = {}
    for d, _, files in os.walk(root):
        for f in files:
            p = os.path.join(d, f)
            try:
                st = os.stat(p)
                state[os.path.relpath(p, root)] = (st.st_size, st.st_mtime_ns)
            except OSError:
                pass
    return state


def main():
    if len(sys.argv) < 3:
        sys.exit("usage: readme_check.py FLASHSIM SOURCE_DIR [README]")
    binary, src = os.path.abspath(sys.argv[1]), os.path.abspath(sys.argv[2])
    readme_path = sys.argv[3] if len(sys.argv) > 3 else os.path.join(src, "README.md")
    readme = open(readme_path).read()
    failures, printed = [], []
    work = tempfile.mkdtemp(prefix="readme_check.")
    try:
        tree = os.path.join(work, "tree")
        shutil.copytree(src, tree, symlinks=True,
                        ignore=shutil.ignore_patterns(".git", "build", "build-*", "__pycache__"))
        bindir = os.path.join(work, "bin")
        os.makedirs(bindir)
        os.symlink(binary, os.path.join(bindir, "flashsim"))
        env = dict(os.environ, PATH=bindir + os.pathsep + os.environ.get("PATH", ""))
        ran = skipped = 0
        for cmd in commands(readme):
            reason = next((why for prefix, why in SKIP if cmd.startswith(prefix)), None)
            if reason:
                print(f"skip: {cmd}  ({reason})")
                skipped += 1
                continue
            if re.search(r"\s\[[^\]]*\]", cmd):
                failures.append(f"README command has [optional] parts and does not run as written: {cmd}")
                continue
            before = snapshot(tree)
            r = subprocess.run(cmd, shell=True, cwd=tree, env=env, capture_output=True, text=True, timeout=300)
            ran += 1
            printed.append(r.stdout + r.stderr)
            if r.returncode != 0:
                last = (r.stderr or r.stdout).strip().split("\n")[-1][:200]
                failures.append(f"README command failed (exit {r.returncode}): {cmd}: {last}")
            after = snapshot(tree)
            for path, was in before.items():
                if after.get(path, was) != was and path not in cmd and os.path.basename(path) not in cmd:
                    failures.append(f"README command rewrote {path}, which it does not name: {cmd}")
        for argv in SOURCES:
            r = subprocess.run(argv, cwd=src, env=env, capture_output=True, text=True, timeout=300)
            if r.returncode != 0:
                failures.append(f"source script failed: {' '.join(argv)}")
            printed.append(r.stdout)
        print(f"README commands: {ran} ran, {skipped} skipped (GPU, install or build)")
    finally:
        shutil.rmtree(work, ignore_errors=True)

    sourced = set()
    for text in printed:
        sourced.update(numbers_in(text))
    given = set()
    for cmd in commands(readme):
        given.update(numbers_in(cmd))
    missing = {}
    for kind, lines in blocks(readme):
        if kind == "fence:sh":
            continue
        for i, line in enumerate(lines):
            for n in numbers_in(line):
                if n not in sourced and n not in given and n not in GIVEN:
                    missing.setdefault(n, line.strip()[:120])
    for n, line in missing.items():
        failures.append(f"README number {n} has no source (no command or script prints it): {line}")
    for f in failures:
        print(f, file=sys.stderr)
    if failures:
        sys.exit(1)
    print("README's commands run as written and its numbers have sources")


if __name__ == "__main__":
    main()
