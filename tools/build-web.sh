#!/usr/bin/env bash
# Builds the browser client (lockstep-web: the client in WebAssembly, and its page) with Debian's
# emscripten into BUILD/web, the folder to give lockstep-server --web-root.
#   tools/build-web.sh [BUILD]    (default build-web)
set -euo pipefail
cd "$(dirname "$0")/.."
BUILD=${1:-build-web}
command -v emcmake >/dev/null || { echo "build-web: emscripten is not installed (apt-get install emscripten)" >&2; exit 2; }
# Debian's emscripten runs its JavaScript tools (acorn) from Debian's node modules; a node from
# elsewhere does not look there on its own.
export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
emcmake cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=Release -DLOCKSTEP_WERROR=ON -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF >/dev/null
cmake --build "$BUILD" -j 2 --target lockstep-web
echo "$BUILD/web"
