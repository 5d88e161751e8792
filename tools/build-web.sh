#!/usr/bin/env bash
# Builds the browser client (lockstep-web: the client in WebAssembly, and its page) with Debian's
# emscripten into BUILD/web, the folder to give lockstep-server --web-root.
#   tools/build-web.sh [BUILD] [--module SOURCE_DIR=TARGET]... [--modules-only]   (default BUILD: build-web)
# --module builds a team's own game into a page of its own as well: the team's CMake project at
# SOURCE_DIR (unchanged; its module target TARGET becomes a static library linked into the client)
# gives BUILD/web-TARGET, whose page plays that module (the server hosts it with --sim-lib).
# --modules-only builds those pages alone, not BUILD/web with the built-in games.
# --cmake-args prints the CMake options of a web build, one a line, and exits (the determinism
# matrix's --wasm-tree configures its wasm leg with them, so that the two builds share one tree).
set -euo pipefail
BUILD=build-web MODULES=() TARGETS=() BUILTIN=1
WEB_CMAKE_ARGS=(-G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=ON -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF -Wno-dev)
while [ $# -gt 0 ]; do
  case $1 in
    --module) [[ "${2:-}" == ?*=?* ]] || { echo "build-web: --module takes SOURCE_DIR=TARGET" >&2; exit 2; }
              MODULES+=("$(cd "${2%=*}" && pwd)=${2##*=}"); TARGETS+=("lockstep-web-${2##*=}"); shift 2 ;;
    --modules-only) BUILTIN=0; shift ;;
    --cmake-args) printf '%s\n' "${WEB_CMAKE_ARGS[@]}"; exit 0 ;;
    -h|--help) sed -n '2,10p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) BUILD=$1; shift ;;
  esac
done
cd "$(dirname "$0")/.."  # (BUILD is relative to lockstep's sources, a --module folder to where it was given)
[ $BUILTIN = 1 ] && TARGETS=(lockstep-web "${TARGETS[@]+"${TARGETS[@]}"}")
[ ${#TARGETS[@]} -gt 0 ] || { echo "build-web: --modules-only without a --module builds nothing" >&2; exit 2; }
command -v emcmake >/dev/null || { echo "build-web: emscripten is not installed (apt-get install emscripten)" >&2; exit 2; }
# Debian's emscripten runs its JavaScript tools (acorn) from Debian's node modules; a node from
# elsewhere does not look there on its own.
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
emcmake cmake -S . -B "$BUILD" "${WEB_CMAKE_ARGS[@]}" "-DLOCKSTEP_LINKED_MODULES=$(IFS=';'; echo "${MODULES[*]+"${MODULES[*]}"}")" >/dev/null
cmake --build "$BUILD" -j 2 --target "${TARGETS[@]}"
if [ $BUILTIN = 1 ]; then echo "$BUILD/web"; fi
for m in "${MODULES[@]+"${MODULES[@]}"}"; do echo "$BUILD/web-${m##*=}"; done
