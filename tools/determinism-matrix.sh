#!/usr/bin/env bash
# The determinism matrix: builds the core and lockstep-replay with gcc -O0, gcc -O2, clang -O2,
# clang -O3 -march=native and an aarch64 cross build (run under qemu-user), and has each verify
# the checked-in golden replays tick by tick (the arena's, in floating point, and the skirmish's, in
# integers). Every build must reproduce every recorded hash.
# A missing toolchain is installed from Debian's packages when running as root (and said so);
# otherwise the script fails: it never skips silently.
# Usage: tools/determinism-matrix.sh ["REPLAY..."] [BUILD_ROOT]
set -uo pipefail
cd "$(dirname "$0")/.."
REPLAYS=${1:-tests/golden/golden.replay tests/golden/skirmish.replay}
ROOT=${2:-build-matrix}
mkdir -p "$ROOT"

ensure() {  # ensure <command> <package...>
  local cmd=$1; shift
  command -v "$cmd" >/dev/null && return 0
  if [ "$(id -u)" = 0 ]; then
    echo "matrix: $cmd is missing; installing Debian packages: $*"
    DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null ||
      { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$@" >/dev/null; } ||
      { echo "matrix: FAIL: could not install $*"; exit 1; }
  else
    echo "matrix: FAIL: $cmd is missing; install it with: sudo apt-get install -y $*"; exit 1
  fi
}
ensure g++ g++
ensure clang++ clang
ensure aarch64-linux-gnu-g++ g++-aarch64-linux-gnu
ensure qemu-aarch64 qemu-user
ensure flatc flatbuffers-compiler
ensure ninja ninja-build

# name | compiler | flags | toolchain file | runner
CONFIGS=(
  "gcc-O0|g++|-O0||"
  "gcc-O2|g++|-O2||"
  "clang-O2|clang++|-O2||"
  "clang-O3-native|clang++|-O3 -march=native||"
  "aarch64-gcc-O2|aarch64-linux-gnu-g++|-O2|cmake/aarch64-linux-gnu.cmake|qemu-aarch64 -L /usr/aarch64-linux-gnu"
)
failed=0
for c in "${CONFIGS[@]}"; do
  IFS='|' read -r name cxx flags toolchain runner <<<"$c"
  dir="$ROOT/$name"
  args=(-S . -B "$dir" -G Ninja -DLOCKSTEP_CORE_ONLY=ON -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=$flags")
  if [ -n "$toolchain" ]; then args+=("-DCMAKE_TOOLCHAIN_FILE=$toolchain"); else args+=("-DCMAKE_CXX_COMPILER=$cxx"); fi
  if ! cmake "${args[@]}" >"$ROOT/$name.configure.log" 2>&1 || ! cmake --build "$dir" -j 2 >"$ROOT/$name.build.log" 2>&1; then
    echo "matrix: FAIL $name: build failed (see $ROOT/$name.build.log)"; tail -5 "$ROOT/$name.build.log"; failed=1; continue
  fi
  for replay in $REPLAYS; do
    out=$($runner "$dir/bin/lockstep-replay" verify "$replay" 2>&1); rc=$?
    if [ $rc = 0 ]; then echo "matrix: ok   $name ($cxx $flags): $out"
    else echo "matrix: FAIL $name ($cxx $flags), exit $rc: $out"; failed=1; fi
  done
  objdump=objdump; [ -n "$toolchain" ] && objdump=aarch64-linux-gnu-objdump
  tools/determinism-lint.sh "$dir" "$objdump" | sed "s/^/matrix: $name: /" || failed=1
done
if [ $failed = 0 ]; then echo "PASS: ${#CONFIGS[@]} builds, one per-tick hash trace per replay"; else echo "FAIL: the builds disagree"; fi
exit $failed
