#!/usr/bin/env bash
# cmake/module-lists: a LIST (UNCOVERED or ROUTED) naming "libengine" configures; naming "engine"
# (not the soname's start) fails at configure time, naming the library the module does link.
# With LIST = LINT: lockstep_add_synctest's LINT_ALLOW_SYMBOL libengine:sinf configures,
# engine:sinf fails naming what the module links.
# Usage: check.sh CMAKE LOCKSTEP_SOURCE LIST
set -u
CMAKE=$1 SRC=$2 LIST=$3
here=$(cd "$(dirname "$0")" && pwd)
d=$(mktemp -d); trap 'rm -rf "$d"' EXIT
if [ "$LIST" = LINT ]; then
  "$CMAKE" -S "$here" -B "$d/good" -DLOCKSTEP_SOURCE="$SRC" -DLINT_SCOPE=libengine:sinf >"$d/good.out" 2>&1 ||
    { cat "$d/good.out"; echo "FAIL: libengine:sinf refused"; exit 1; }
  "$CMAKE" -S "$here" -B "$d/bad" -DLOCKSTEP_SOURCE="$SRC" -DLINT_SCOPE=engine:sinf >"$d/bad.out" 2>&1 &&
    { echo "FAIL: engine:sinf configured"; exit 1; }
  tr -s ' \n' ' ' <"$d/bad.out" | grep -q 'the lint allowance "engine:sinf" names the library "engine", which is neither game nor a library it links (libengine.so, libgame.so)' ||
    { cat "$d/bad.out"; echo "FAIL: the error does not name the allowance and the libraries"; exit 1; }
  echo "ok: LINT_ALLOW_SYMBOL engine:sinf refused at configure time; libengine:sinf taken"
  exit 0
fi
"$CMAKE" -S "$here" -B "$d/good" -DLOCKSTEP_SOURCE="$SRC" -DLIST="$LIST" -DNAME=libengine >"$d/good.out" 2>&1 ||
  { cat "$d/good.out"; echo "FAIL: $LIST libengine refused"; exit 1; }
"$CMAKE" -S "$here" -B "$d/bad" -DLOCKSTEP_SOURCE="$SRC" -DLIST="$LIST" -DNAME=engine >"$d/bad.out" 2>&1 &&
  { echo "FAIL: $LIST engine configured"; exit 1; }
tr -s ' \n' ' ' <"$d/bad.out" | grep -q "$LIST names \"engine\", which is no library game links (it links libengine.so;" ||
  { cat "$d/bad.out"; echo "FAIL: the error does not name the list, the name and the library linked"; exit 1; }
echo "ok: $LIST engine refused at configure time, naming libengine.so; libengine taken"
