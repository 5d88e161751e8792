#!/usr/bin/env bash
# Builds the browser client (lockstep-web: the client in WebAssembly, and its page) with Debian's
# emscripten into BUILD/web, the folder to give lockstep-server --web-root.
#   tools/build-web.sh [BUILD] [--module SOURCE_DIR=TARGET]...    (default BUILD: build-web)
# --module builds a team's own game into a page of its own as well: the team's CMake project at
# SOURCE_DIR (unchanged; its module target TARGET becomes a static library linked into the client)
# gives BUILD/web-TARGET, whose page plays that module (the server hosts it with --sim-lib).
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=build-web MODULES=() TARGETS=(lockstep-web)
while [ $# -gt 0 ]; do
  case $1 in
    --module) [[ "${2:-}" == ?*=?* ]] || { echo "build-web: --module takes SOURCE_DIR=TARGET" >&2; exit 2; }
              MODULES+=("$(cd "${2%=*}" && pwd)=${2##*=}"); TARGETS+=("lockstep-web-${2##*=}"); shift 2 ;;
    -h|--help) sed -n '2,7p' "$0" | sed 's/^# \{0,1\}//'; exit 0 ;;
    *) BUILD=$1; shift ;;
  esac
done
command -v emcmake >/dev/null || { echo "build-web: emscripten is not installed (apt-get install emscripten)" >&2; exit 2; }
# Debian's emscripten runs its JavaScript tools (acorn) from Debian's node modules; a node from
# elsewhere does not look there on its own.
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
emcmake cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=ON -DLOCKSTEP_BUILD_TESTS=OFF \
  -DLOCKSTEP_BUILD_BENCH=OFF -Wno-dev "-DLOCKSTEP_LINKED_MODULES=$(IFS=';'; echo "${MODULES[*]+"${MODULES[*]}"}")" >/dev/null
cmake --build "$BUILD" -j 2 --target "${TARGETS[@]}"
echo "$BUILD/web"
for m in "${MODULES[@]+"${MODULES[@]}"}"; do echo "$BUILD/web-${m##*=}"; done
