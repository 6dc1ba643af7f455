#!/usr/bin/env bash
# kernel_codegen.sh: what ptxas made of each kernel in the given .cu files, one line a kernel.
# Columns: file, arch, registers, spill stores, spill loads, stack frame (bytes), static shared
# memory (bytes), SASS instructions, a hash of the machine code, kernel (mangled name).
# A refactor of a kernel body compares this table before and after: registers, spills and the
# SASS count must not move (docs/kernel-structure.md).
# Usage: scripts/kernel_codegen.sh [-o OUT.tsv] [-k KEEPDIR] cuda/flash2h.cu cuda/decode.cu ...
# (-k keeps each cubin and ptxas log.)
# Needs nvcc and python3; no GPU. Compiles with the same flags as cuda/CMakeLists.txt; the portable
# files for sm_90 and sm_80 (PORTABLE_ARCHS="sm_90" for one), the Hopper-only files for sm_90a.
set -euo pipefail
out=/dev/stdout
keep=
while [ $# -gt 0 ]; do
  case "$1" in
    -o) out=$2; shift 2 ;;
    -k) keep=$2; mkdir -p "$keep"; shift 2 ;;
    *) break ;;
  esac
done
[ $# -gt 0 ] || { echo "usage: $0 [-o OUT.tsv] FILE.cu..." >&2; exit 2; }
top=$(cd "$(dirname "$0")/.." && pwd)
nvcc=${NVCC:-/usr/local/cuda/bin/nvcc}
tmp=$(mktemp -d)
trap 'rm -rf "$tmp"' EXIT
{
  printf 'file\tarch\tregs\tspill_st\tspill_ld\tstack\tsmem\tsass\ttext_sha1\tkernel\n'
  for f in "$@"; do
    case "$(basename "$f")" in
      flash2h.cu | flash2h_bwd.cu | ceilings_sm90a.cu) archs="sm_90a" ;;
      *) archs="${PORTABLE_ARCHS:-sm_90 sm_80}" ;;
    esac
    for a in $archs; do
      cubin="$tmp/$(basename "$f" .cu).$a.cubin"
      "$nvcc" -I"$top" -isystem=/usr/include/eigen3 -O3 -DNDEBUG -std=c++20 --expt-relaxed-constexpr -lineinfo \
        -arch="$a" -cubin -Xptxas -v -o "$cubin" "$f" 2>"$tmp/ptxas.log"
      # ptxas -v: "Compiling entry function 'K' for 'sm_90a'", "N bytes stack frame, S bytes spill stores,
      # L bytes spill loads", "Used R registers, ... S bytes smem".
      awk -v file="$(basename "$f")" -v arch="$a" '
        /Compiling entry function/ { match($0, /'"'"'[^'"'"']*'"'"'/); k = substr($0, RSTART + 1, RLENGTH - 2) }
        /Function properties for/ { match($0, /for [^ ]*$/); fk = substr($0, RSTART + 4) }
        /bytes stack frame/ && fk == k { st[k] = $(NF - 11) + 0; ss[k] = $(NF - 7) + 0; sl[k] = $(NF - 3) + 0 }
        /Used [0-9]+ registers/ && k != "" {
          match($0, /Used [0-9]+ registers/); r = substr($0, RSTART + 5, RLENGTH - 15) + 0
          sm = 0; if (match($0, /[0-9]+ bytes smem/)) sm = substr($0, RSTART, RLENGTH - 11) + 0
          printf "%s\t%s\t%d\t%d\t%d\t%d\t%d\t%s\n", file, arch, r, ss[k], sl[k], st[k], sm, k
          k = ""
        }' "$tmp/ptxas.log" > "$tmp/res.tsv"
      # SASS: each sm_80/sm_90 instruction is 16 bytes, so a kernel's .text section holds size/16 of
      # them (with the few NOPs that pad it to alignment); its bytes' hash says whether the code is
      # identical, not just as long. Read from the ELF directly: no cuobjdump needed.
      python3 - "$cubin" > "$tmp/sass.tsv" <<'PY'
import hashlib, struct, sys
elf = open(sys.argv[1], "rb").read()  # 64-bit little-endian ELF, as nvcc writes cubins
shoff, = struct.unpack_from("<Q", elf, 0x28)
shentsize, shnum, shstrndx = struct.unpack_from("<HHH", elf, 0x3A)
sections = [struct.unpack_from("<IIQQQQ", elf, shoff + i * shentsize) for i in range(shnum)]
strtab_off = sections[shstrndx][4]
for name_off, _, _, _, off, size in sections:
    name = elf[strtab_off + name_off : elf.index(b"\0", strtab_off + name_off)].decode()
    if name.startswith(".text."):
        print(f"{name[6:]}\t{size // 16}\t{hashlib.sha1(elf[off : off + size]).hexdigest()[:12]}")
PY
      if [ -n "$keep" ]; then cp "$cubin" "$tmp/ptxas.log" "$keep/" && mv "$keep/ptxas.log" "$keep/$(basename "$cubin" .cubin).ptxas.log"; fi
      awk -F'\t' 'NR == FNR { n[$1] = $2; h[$1] = $3; next } { printf "%s\t%s\t%s\t%s\t%s\t%s\t%s\t%d\t%s\t%s\n", $1, $2, $3, $4, $5, $6, $7, n[$8], h[$8], $8 }' \
        "$tmp/sass.tsv" "$tmp/res.tsv" | sort -t$'\t' -k10
    done
  done
} > "$out"
