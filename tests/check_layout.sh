#!/usr/bin/env bash
# tests/check_layout.sh — the folders show the architecture (README, "Architecture"): every
# project include ("part/...") points to the same part or to one below it. Prints each include
# that points up and fails; prints the number of includes checked otherwise.
set -uo pipefail
cd "$(dirname "$0")/.."
rank() {
  case "$1" in
    sim) echo 0 ;; report | cuda) echo 1 ;; lessons) echo 2 ;; cli | viz | python) echo 3 ;; *) echo -1 ;;
  esac
}
bad=0 checked=0
while IFS= read -r line; do
  file=${line%%:*}
  inc=$(sed -E 's/.*#include "([^"]+)".*/\1/' <<<"$line")
  from=${file%%/*} to=${inc%%/*}
  rf=$(rank "$from") rt=$(rank "$to")
  [ "$rf" -lt 0 ] || [ "$rt" -lt 0 ] && continue
  checked=$((checked + 1))
  # within one rank only a part's own folder (report and cuda do not use each other), except
  # that the programs may use cuda only through its facade cuda/api.hpp
  if [ "$rt" -gt "$rf" ] || { [ "$rt" -eq "$rf" ] && [ "$to" != "$from" ]; } ||
     { [ "$to" = cuda ] && [ "$rf" -ge 2 ] && [ "$inc" != cuda/api.hpp ]; }; then
    echo "layout: $file includes \"$inc\" ($from may not use $to)"
    bad=1
  fi
done < <(grep -rHn '^#include "' sim report cuda lessons cli viz python --include='*.cpp' --include='*.hpp' --include='*.cu' --include='*.cuh')
# sim/ includes nothing from outside itself but the standard library and Eigen
if grep -rn '#include' sim/ | grep -v 'sim/\|<' | grep .; then bad=1; fi
if grep -rn '#include <' sim/ | grep -vE '<(Eigen/|[a-z_0-9]+>)' | grep .; then
  echo "layout: sim/ includes a library other than the standard library and Eigen"; bad=1
fi
[ "$bad" -eq 0 ] && echo "layout: $checked project includes checked, each points down or within its part"
exit "$bad"
