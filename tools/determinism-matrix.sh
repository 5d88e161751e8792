#!/usr/bin/env bash
# The determinism matrix: builds the core and lockstep-replay with gcc -O0, gcc -O2, clang -O2,
# clang -O3 -march=native and an aarch64 cross build (run under qemu-user), runs the gcc -O2 build
# again on glibc's lower x86-64 paths (GLIBC_TUNABLES: AVX-512 masked, and the baseline with AVX2
# and FMA masked; each skipped, saying so, on a CPU that does not reach it, where the default
# already is that level), and has each verify
# the checked-in golden replays tick by tick (the arena's, in floating point, and the skirmish's, in
# integers). Every build must reproduce every recorded hash. A build that does not is localized:
# its state at the first differing tick, compared by a build that agrees, names the entity and field.
# A team's module goes through the same matrix: with --module-source, each configuration also
# installs its core build into a prefix, builds the team's CMake project against it with the same
# compiler and flags (find_package(lockstep) and lockstep::module, as in examples/orbits), and has
# that configuration's lockstep-replay verify the team's golden replay with --sim-lib.
# The wasm leg (wasm-node) builds the core and lockstep-replay with emscripten (-O2) and runs them
# under Node: a browser's code generator and emscripten's libm. WebAssembly loads no module built
# apart, so each team module is linked into a replay of its own there (its project built unchanged
# inside lockstep's wasm build: replay/CMakeLists.txt, LOCKSTEP_LINKED_MODULES). Without emscripten
# or Node the leg is reported skipped (Debian: emscripten, nodejs), never installed here.
# A missing toolchain is installed from Debian's packages when running as root (and said so);
# otherwise the script fails: it never skips silently.
# Several modules may be given, each as --module-source, --module-target and --module-replay (and
# its own --module-packages and --module-refused-on after them).
# A module linking a library Debian builds differently per architecture (Box2D: FMA on arm64) is
# refused where that build differs from the recording's: --module-refused-on CONFIG expects that
# refusal there (exit 2, the library named), then replays with --any-build to show where the
# builds part. Expected refusals are reported, never skipped.
# A team that builds a library itself on every platform rather than take Debian's binaries (Box2D:
# Debian builds its arm64 libbox2d with fused multiply-adds) names its Debian source package with
# --module-source-packages: fetched once with apt from Debian's archive (checked against its signed
# index), built on every native leg with that leg's compiler and flags and -ffp-contract=off, and
# installed where only that module's build finds it. Its builds then differ in bytes, so the
# module opts the library out of its fingerprint (UNCOVERED), and the machine code the gate
# reports equal covers the library's build (lockstep-server --equal-builds).
# A game whose rules run in C# or Python (mode b, docs/EMBEDDING.md) brings its own check: a
# command that compares the game with the module (CompareGame) or with another implementation's
# trace (CompareTrace) and exits 0 when they agree. The matrix runs it under each runtime setting
# the game's players may have: Mono with its float32 optimization on (Debian 12's Mono 6.8's
# default; IL2CPP and .NET compute floats in single precision too) and off (-O=-float32: float
# intermediates kept in double precision, older Monos' default), and CPython once (its floats are
# binary64 everywhere). A runtime that is not installed is reported skipped, with why.
# Usage: tools/determinism-matrix.sh [--root DIR] [--module-source DIR --module-target NAME
#            --module-replay FILE [--module-packages "PKG..."] [--module-refused-on CONFIG]]...
#            [--mono-check "EXE ARGS"]... [--python-check "SCRIPT ARGS"]... [REPLAY...]
#   REPLAY...       built-in modules' replays (default: the checked-in golden replays, when no
#                   --module-source is given)
#   --root DIR      where the builds go (default build-matrix)
#   --only CONFIG   build and run only this configuration (may repeat; default: all of them)
#   --module-source a team's CMake project that builds a module library target NAME
#   --module-replay the team's golden replay (lockstep-replay record-scenario --sim-lib ...)
#   --module-packages  Debian packages the module builds against, installed (and for arm64) when
#                   missing, as root: "libbox2d-dev"
#   --module-source-packages  Debian source packages of CMake libraries the module links, built on
#                   each native leg with its flags: "box2d:-DBOX2D_BUILD_UNIT_TESTS=OFF,-DBOX2D_BUILD_TESTBED=OFF"
#                   (a package, then the CMake options its build needs, comma-separated)
#   --module-refused-on  a configuration (aarch64-gcc-O2) whose build of the module's libraries
#                   differs from the recording's, so verify must refuse the replay there
#   --module-not-on  a leg the module is not built for (a library it links does not exist there,
#                   or its players have no such machine): reported skipped, with that reason
#   --mono-check    a C# game's check, "EXE ARGS" as a shell would split them: legs mono and
#                   mono-O=-float32 run `mono [-O=-float32] EXE ARGS`
#   --python-check  a Python game's check, "SCRIPT ARGS": leg python3 runs `python3 SCRIPT ARGS`
#   --json FILE     also write every leg's result (ok, fail, refused as expected, skipped, with
#                   why) and where each failing leg parts, as JSON
#   --junit FILE    the same as a JUnit report: one test case per leg and replay
#   --reuse-build CONFIG=DIR  take CONFIG's build from DIR, a lockstep build tree of the same
#                   compiler and optimization (the project's own gcc -O2 tree: -g changes no code
#                   gcc generates), instead of configuring and building it again; its modules and
#                   its install still go under ROOT/CONFIG
#   --wasm-tree DIR the wasm leg builds in DIR, configured as tools/build-web.sh configures the
#                   browser client (Release, the same modules linked in), instead of ROOT/wasm-node:
#                   the leg then checks the compiler flags the page ships with, and a web build in
#                   DIR (e2e/browser's) shares the core's objects with it. Not at once with a
#                   build-web.sh in DIR (CI: the tests' RESOURCE_LOCK web-build).
set -uo pipefail
ROOT=build-matrix
MOD_SRC=() MOD_TARGET=() MOD_REPLAY=() MOD_PACKAGES=() MOD_REFUSED=() MOD_NOT_ON=() MOD_SOURCES=()
MONO_CHECKS=() PY_CHECKS=()
REPLAYS=()
JSON="" JUNIT="" WASM_TREE=""
declare -A REUSE=()  # --reuse-build CONFIG=DIR
ONLY=" "  # --only CONFIG: run these configurations alone (a developer's quick look; CI runs them all)
last() { echo $((${#MOD_SRC[@]} - 1)); }
while [ $# -gt 0 ]; do
  case $1 in
    --root) ROOT=$2; shift 2 ;;
    --only) ONLY+="$2 "; shift 2 ;;
    --reuse-build) [[ $2 == ?*=?* ]] || { echo "matrix: --reuse-build takes CONFIG=DIR"; exit 2; }
                   REUSE[${2%%=*}]=$(cd "${2#*=}" && pwd) || exit 2; shift 2 ;;
    --json) JSON=$2; shift 2 ;;
    --wasm-tree) WASM_TREE=$(realpath -m "$2"); shift 2 ;;
    --mono-check) MONO_CHECKS+=("$2"); shift 2 ;;
    --python-check) PY_CHECKS+=("$2"); shift 2 ;;
    --junit) JUNIT=$2; shift 2 ;;
    --module-source) MOD_SRC+=("$(cd "$2" && pwd)") || exit 2; MOD_TARGET+=(""); MOD_REPLAY+=(""); MOD_PACKAGES+=("")
                     MOD_REFUSED+=(" ") MOD_NOT_ON+=(" ") MOD_SOURCES+=(""); shift 2 ;;
    --module-target|--module-replay|--module-packages|--module-refused-on|--module-not-on|--module-source-packages)
      [ ${#MOD_SRC[@]} -gt 0 ] || { echo "matrix: $1 comes after its --module-source"; exit 2; }
      case $1 in
        --module-target) MOD_TARGET[$(last)]=$2 ;;
        --module-replay) MOD_REPLAY[$(last)]=$(realpath "$2") || exit 2 ;;
        --module-packages) MOD_PACKAGES[$(last)]=$2 ;;
        --module-source-packages) MOD_SOURCES[$(last)]=$2 ;;
        --module-refused-on) MOD_REFUSED[$(last)]+="$2 " ;;
        --module-not-on) MOD_NOT_ON[$(last)]+="$2 " ;;
      esac
      shift 2 ;;
    -h|--help) sed -n '2,/^set -uo/p' "$0" | sed '$d; s/^# \{0,1\}//'; exit 0 ;;
    -*) echo "matrix: unknown option $1 (see --help)"; exit 2 ;;
    *) REPLAYS+=("$(realpath "$1")"); shift ;;
  esac
done
for k in "${!MOD_SRC[@]}"; do
  if [ -z "${MOD_TARGET[$k]}" ] || [ ! -f "${MOD_REPLAY[$k]}" ]; then
    echo "matrix: --module-source ${MOD_SRC[$k]} needs --module-target and an existing --module-replay"; exit 2
  fi
done
ROOT=$(mkdir -p "$ROOT" && cd "$ROOT" && pwd)
cd "$(dirname "$0")/.."
# No replay named: the built-in golden replays, unless the run is for a team's module alone.
[ ${#REPLAYS[@]} = 0 ] && [ ${#MOD_SRC[@]} = 0 ] && REPLAYS=(tests/golden/golden.replay tests/golden/skirmish.replay)

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
[ -n "${MOD_SOURCES[*]+"${MOD_SOURCES[*]}"}" ] && [ -n "$(tr -d ' ' <<<"${MOD_SOURCES[*]}")" ] && ensure dpkg-source dpkg-dev
# A Debian source package, unpacked once into ROOT/sources/PKG: apt fetches it with a list of
# its own (deb-src of this system's Debian release, checked against the archive's key), so the
# system's apt configuration is left as it is. Three tries, a pause between them.
fetch_source() {  # fetch_source PKG -> prints the unpacked folder, or says why not on stderr
  local pkg=$1 top="$ROOT/sources" codename tries
  [ -d "$top/$pkg/src" ] && { echo "$top/$pkg/src"; return 0; }
  codename=$(. /etc/os-release && echo "${VERSION_CODENAME:-}")
  [ -n "$codename" ] || { echo "no Debian release named in /etc/os-release" >&2; return 1; }
  mkdir -p "$top/apt/lists/partial" "$top/apt/parts" "$top/apt/cache" "$top/$pkg"
  printf 'Types: deb-src\nURIs: %s\nSuites: %s\nComponents: main\nSigned-By: /usr/share/keyrings/debian-archive-keyring.gpg\n' \
    "${LOCKSTEP_DEBIAN_MIRROR:-http://deb.debian.org/debian}" "$codename" >"$top/apt/parts/debian-src.sources"
  local opts=(-o "Dir::Etc::SourceList=/dev/null" -o "Dir::Etc::SourceParts=$top/apt/parts" -o "Dir::State::Lists=$top/apt/lists"
              -o "Dir::Cache=$top/apt/cache" -o "APT::Sandbox::User=root" -o "Acquire::Retries=2")
  for tries in 1 2 3; do
    apt-get "${opts[@]}" -qq update >"$top/$pkg/fetch.log" 2>&1 &&
      (cd "$top/$pkg" && apt-get "${opts[@]}" -qq source --download-only "$pkg" >>fetch.log 2>&1) && break
    [ $tries = 3 ] && { echo "apt could not fetch Debian's source package $pkg: $(tail -2 "$top/$pkg/fetch.log" | tr '\n' ' ')" >&2; return 1; }
    sleep 5
  done
  local dsc
  dsc=$(ls "$top/$pkg"/*.dsc 2>/dev/null | head -1)
  [ -n "$dsc" ] && dpkg-source -x --skip-debianization "$dsc" "$top/$pkg/src" >>"$top/$pkg/fetch.log" 2>&1 ||
    { echo "dpkg-source could not unpack $pkg (see $top/$pkg/fetch.log)" >&2; return 1; }
  echo "$top/$pkg/src"
}
# The module's source packages built with a leg's compiler and flags and installed in PREFIX.
build_sources() {  # build_sources SPECS PREFIX LOG CMAKE-ARGS...: "" on success, else why on stderr
  local specs=$1 prefix=$2 log=$3 spec pkg cmopts src; shift 3
  for spec in $specs; do
    pkg=${spec%%:*} cmopts=(); [ "$spec" != "$pkg" ] && IFS=',' read -r -a cmopts <<<"${spec#*:}"
    src=$(fetch_source "$pkg") || return 1
    [ -f "$src/CMakeLists.txt" ] || { echo "Debian's source package $pkg is no CMake project: the gate builds only those" >&2; return 1; }
    if ! cmake -S "$src" -B "$prefix.build-$pkg" -G Ninja -DBUILD_SHARED_LIBS=ON "-DCMAKE_INSTALL_PREFIX=$prefix" \
           -DCMAKE_INSTALL_LIBDIR=lib "$@" "${cmopts[@]+"${cmopts[@]}"}" >>"$log" 2>&1 ||
       ! cmake --build "$prefix.build-$pkg" -j 2 >>"$log" 2>&1 || ! cmake --install "$prefix.build-$pkg" >>"$log" 2>&1; then
      echo "Debian's source package $pkg did not build here: $(grep -m2 -i 'error' "$log" | tr -s ' ')" >&2; return 1
    fi
  done
}
# The modules' own packages, for the host and for arm64 (multiarch), as root.
for pkgs in "${MOD_PACKAGES[@]+"${MOD_PACKAGES[@]}"}"; do
  for pkg in $pkgs; do
    for want in "$pkg:$(dpkg --print-architecture)" "$pkg:arm64"; do
      dpkg -s "$want" >/dev/null 2>&1 && continue
      if [ "$(id -u)" != 0 ]; then echo "matrix: FAIL: $want is missing; install it with: sudo apt-get install -y $want"; exit 1; fi
      echo "matrix: $want is missing; installing it from Debian's packages"
      [ "$want" != "$pkg:arm64" ] || dpkg --print-foreign-architectures | grep -qx arm64 || dpkg --add-architecture arm64
      { DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$want" >/dev/null 2>&1 ||
        { apt-get update -qq && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends "$want" >/dev/null; }; } ||
        { echo "matrix: FAIL: could not install $want"; exit 1; }
    done
  done
done

# name | compiler | flags | toolchain file | runner | the CPU flag the leg needs (x86-64)
CONFIGS=(
  "gcc-O0|g++|-O0||"
  "gcc-O2|g++|-O2||"
  "clang-O2|clang++|-O2||"
  "clang-O3-native|clang++|-O3 -march=native||"
  "aarch64-gcc-O2|aarch64-linux-gnu-g++|-O2|cmake/aarch64-linux-gnu.cmake|qemu-aarch64 -L /usr/aarch64-linux-gnu"
  # glibc picks some libm functions by CPU (sinf, cosf, sincosf: an AVX2+FMA build and an SSE2
  # one): the gcc-O2 build again at each level glibc can be told to take below this CPU's: with
  # AVX-512 masked (an AVX2 machine's paths, on a CPU that has AVX-512F), and with AVX2 and FMA
  # masked (the baseline x86-64 paths). A level this CPU does not reach is skipped, saying so (its
  # default run already is that level). A config named BASE+LEG reuses BASE's build.
  "gcc-O2+glibc-avx2|g++|-O2||env GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX512F,-AVX512CD,-AVX512BW,-AVX512DQ,-AVX512VL|avx512f"
  "gcc-O2+glibc-baseline|g++|-O2||env GLIBC_TUNABLES=glibc.cpu.hwcaps=-AVX2,-FMA|avx2"
)
failed=0
ran=0
equal_builds=()  # "module index<TAB>leg<TAB>code<TAB>file": the module builds that reproduced its replay
module_failed=()  # "module index<TAB>leg": where a module's build did not (a +glibc leg's base included)
passed=()      # "replay|replay program|runner|module|leg": the builds that reproduce each replay
mismatches=()  # "name|replay program|runner|replay|module|tick|options": the builds that do not, and where
mismatch() {  # mismatch NAME PROGRAM RUNNER REPLAY MODULE OUTPUT [OPTIONS]: remember where a build parted from a replay
  local tick
  tick=$(sed -n 's/^MISMATCH at tick \([0-9]*\):.*/\1/p' <<<"$6" | head -1)
  [ -n "$tick" ] && mismatches+=("$1|$2|$3|$4|$5|$tick|${7:-}")
}
results=()  # "leg<TAB>subject<TAB>status<TAB>detail": every leg's outcome, for --json and --junit
record() { results+=("$1"$'\t'"$2"$'\t'"$3"$'\t'"${4//$'\n'/ }"); }
for c in "${CONFIGS[@]}"; do
  IFS='|' read -r name cxx flags toolchain runner needs <<<"$c"
  [ "$ONLY" = " " ] || [ "${ONLY#* $name }" != "$ONLY" ] || continue
  if [ -n "$needs" ] && { [ "$(uname -m)" != x86_64 ] || ! grep -qw "$needs" /proc/cpuinfo; }; then
    why="this CPU has no ${needs^^}, so glibc already takes the paths below it in ${name%%+*}"
    [ "$(uname -m)" = x86_64 ] || why="glibc's x86-64 paths: this machine is $(uname -m)"
    echo "matrix: skip $name: $why"; record "$name" "*" skipped "$why"; continue
  fi
  ran=$((ran + 1))
  legdir="$ROOT/${name%%+*}"  # the leg's build, its modules' builds and its install
  dir=$legdir
  # lockstep itself is a unity build here (a fifth less processor time for the whole matrix: each
  # header parsed once per batch): IEEE arithmetic without contraction gives the same bits whatever
  # the compiler inlines where, so what a leg varies is its compiler, flags, CPU paths and
  # architecture; a leg that parted for the build's shape would be a finding like any other.
  # Modules build as their teams do.
  args=(-S . -B "$dir" -G Ninja -DLOCKSTEP_CORE_ONLY=ON -DCMAKE_UNITY_BUILD=ON -DCMAKE_BUILD_TYPE=None "-DCMAKE_CXX_FLAGS=$flags")
  if [ -n "$toolchain" ]; then args+=("-DCMAKE_TOOLCHAIN_FILE=$toolchain"); else args+=("-DCMAKE_CXX_COMPILER=$cxx"); fi
  if [ -n "${REUSE[${name%%+*}]:-}" ]; then
    # Built already (--reuse-build), and left as it is: other tests may be using that tree.
    dir=${REUSE[${name%%+*}]}
    mkdir -p "$legdir"
    echo "matrix: $name: the build in $dir" | tee "$ROOT/$name.configure.log" "$ROOT/$name.build.log"
    if [ ! -x "$dir/bin/lockstep-replay" ]; then
      echo "matrix: FAIL $name: --reuse-build $dir has no bin/lockstep-replay (build it first)"; failed=1
      record "$name" "build" fail "--reuse-build $dir has no bin/lockstep-replay"; continue
    fi
  elif ! cmake "${args[@]}" >"$ROOT/$name.configure.log" 2>&1 || ! cmake --build "$dir" -j 2 >"$ROOT/$name.build.log" 2>&1; then
    echo "matrix: FAIL $name: build failed (see $ROOT/$name.build.log)"; tail -5 "$ROOT/$name.build.log"; failed=1
    record "$name" "build" fail "the build failed: $(tail -3 "$ROOT/$name.build.log")"; continue
  fi
  for replay in "${REPLAYS[@]}"; do
    out=$($runner "$dir/bin/lockstep-replay" verify "$replay" 2>&1); rc=$?
    if [ $rc = 0 ]; then echo "matrix: ok   $name ($cxx $flags): $out"; passed+=("$replay|$dir/bin/lockstep-replay|$runner||$name"); record "$name" "${replay#"$PWD"/}" ok "$out"
    else echo "matrix: FAIL $name ($cxx $flags), exit $rc: $out"; failed=1; mismatch "$name" "$dir/bin/lockstep-replay" "$runner" "$replay" "" "$out"
      record "$name" "${replay#"$PWD"/}" fail "exit $rc: $out"; fi
  done
  for k in "${!MOD_SRC[@]}"; do
    # A team's module, built by its own project against this configuration's install.
    src=${MOD_SRC[$k]} target=${MOD_TARGET[$k]} mreplay=${MOD_REPLAY[$k]}
    mdir="$legdir/module-$target"
    ccargs=()
    if [ -n "$toolchain" ]; then ccargs+=("-DCMAKE_TOOLCHAIN_FILE=$PWD/$toolchain")
    else
      cc=gcc; [ "$cxx" = clang++ ] && cc=clang
      ccargs+=("-DCMAKE_CXX_COMPILER=$cxx" "-DCMAKE_C_COMPILER=$cc")
    fi
    prefixes="$legdir/prefix"
    if [ -n "${MOD_SOURCES[$k]// /}" ] && { [ "${name#*+}" = "$name" ] || [ ! -d "$mdir-deps" ]; }; then
      # The libraries the team builds itself, with this leg's compiler and flags, for this module
      # only (a +glibc leg runs its base's build again).
      rm -rf "$mdir-deps"
      if ! why=$(build_sources "${MOD_SOURCES[$k]}" "$mdir-deps" "$ROOT/$name.$target.sources.log" -DCMAKE_BUILD_TYPE=None \
                   "-DCMAKE_CXX_FLAGS=$flags -ffp-contract=off" "-DCMAKE_C_FLAGS=$flags -ffp-contract=off" "${ccargs[@]}" 2>&1); then
        echo "matrix: FAIL $name: $why"; failed=1; record "$name" "module $target" fail "$why"; continue
      fi
      echo "matrix: $name: built ${MOD_SOURCES[$k]%%:*} from Debian's source package for module $target ($flags -ffp-contract=off)"
    fi
    [ -n "${MOD_SOURCES[$k]// /}" ] && prefixes="$mdir-deps;$prefixes"
    margs=(--no-warn-unused-cli -S "$src" -B "$mdir" -G Ninja -DCMAKE_BUILD_TYPE=None "-DCMAKE_PREFIX_PATH=$prefixes"
           "-DCMAKE_CXX_FLAGS=$flags" "-DCMAKE_C_FLAGS=$flags" "${ccargs[@]}")
    if ! cmake --install "$dir" --prefix "$legdir/prefix" >"$ROOT/$name.install.log" 2>&1 ||
       ! cmake "${margs[@]}" >"$ROOT/$name.$target.log" 2>&1 ||
       ! cmake --build "$mdir" -j 2 --target "$target" >>"$ROOT/$name.$target.log" 2>&1; then
      echo "matrix: FAIL $name: the module $target did not build (see $ROOT/$name.$target.log)"
      tail -5 "$ROOT/$name.$target.log"; failed=1
      record "$name" "module $target" fail "the module did not build: $(grep -m3 -i 'error' "$ROOT/$name.$target.log")"; continue
    fi
    so=$(find "$mdir" -name "lib$target.so" -o -name "$target.so" | head -1)
    out=$($runner "$dir/bin/lockstep-replay" --sim-lib "$so" verify "$mreplay" 2>&1); rc=$?
    # Its machine code as lockstep computes it, for the equal-builds report: the file's GNU build
    # id, or, for a module that opts libraries out of its fingerprint, the hash lockstep logs at
    # load (its build id and theirs).
    code=$(sed -n 's/.*: machine code \([^ ]*\) (.*/\1/p' <<<"$out" | head -1)
    [ -n "$code" ] || code=$(readelf -n "$so" 2>/dev/null | sed -n 's/.*Build ID: \([0-9a-f]*\).*/\1/p' | head -1)
    out=$(grep -v ': info: ' <<<"$out")
    if [ "${MOD_REFUSED[$k]#* $name }" != "${MOD_REFUSED[$k]}" ]; then
      # Expected: refused, the library named; then where this build would part, for the record.
      why=$(sed -n 's/.*refused: \(.* is another build\).*/\1/p' <<<"$out" | head -1)
      if [ $rc = 2 ] && [ -n "$why" ]; then
        echo "matrix: ok   $name ($cxx $flags): module $target refused, as expected here: $why than the recording's"
        record "$name" "module $target" refused_as_expected "$why than the recording's"
        anyout=$($runner "$dir/bin/lockstep-replay" --sim-lib "$so" --any-build verify "$mreplay" 2>&1)
        mismatch "$name" "$dir/bin/lockstep-replay" "$runner" "$mreplay" "$so" "$anyout" --any-build
      else
        echo "matrix: FAIL $name ($cxx $flags): module $target should be refused here (another build of a library), exit $rc: $out"; failed=1
        record "$name" "module $target" fail "should be refused here (another build of a library), exit $rc: $out"
      fi
      continue
    fi
    if [ $rc = 0 ]; then echo "matrix: ok   $name ($cxx $flags): module $target: $out"; passed+=("$mreplay|$dir/bin/lockstep-replay|$runner|$so|$name")
      record "$name" "module $target" ok "$out"
      # For the equal-builds report (a +glibc leg runs its base's file again).
      [ "${name#*+}" = "$name" ] && equal_builds+=("$k"$'\t'"$name"$'\t'"$code"$'\t'"$so")
    else
      echo "matrix: FAIL $name ($cxx $flags): module $target, exit $rc: $out"; failed=1
      record "$name" "module $target" fail "exit $rc: $out"
      module_failed+=("$k"$'\t'"$name")
      mismatch "$name" "$dir/bin/lockstep-replay" "$runner" "$mreplay" "$so" "$out"
    fi
  done
  [ "${name#*+}" != "$name" ] && continue  # the lint read this build under its base's name
  objdump=objdump; [ -n "$toolchain" ] && objdump=aarch64-linux-gnu-objdump
  tools/determinism-lint.sh "$dir" "$objdump" | sed "s/^/matrix: $name: /" || failed=1
done
# The wasm leg (see the top): lockstep-replay.js for the built-in replays, and each module linked
# into lockstep-replay-TARGET.js, all under Node.
wasm_leg() {
  local name=wasm-node dir="$ROOT/wasm-node" linked=() k target pair cfg configured=""
  if ! command -v emcmake >/dev/null || ! command -v node >/dev/null; then
    local why="emscripten or Node is not installed (Debian: apt-get install emscripten nodejs)"
    echo "matrix: skip $name: $why"; record "$name" "*" skipped "$why"; return
  fi
  ran=$((ran + 1))
  # Debian's emscripten runs its JavaScript tools from Debian's node modules.
  export NODE_PATH=${NODE_PATH:+$NODE_PATH:}/usr/share/nodejs
  cfg=(-S . -B "$dir" -G Ninja -DCMAKE_BUILD_TYPE=None -DCMAKE_CXX_FLAGS=-O2 -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF -Wno-dev)
  local how="em++ -O2, node"
  if [ -n "$WASM_TREE" ]; then  # (tools/build-web.sh's configuration, read from it)
    local web_args
    mapfile -t web_args < <(bash tools/build-web.sh --cmake-args)
    dir=$WASM_TREE how="em++ as tools/build-web.sh, node"
    cfg=(-S . -B "$dir" "${web_args[@]}")
    echo "matrix: $name: builds in $dir, configured as tools/build-web.sh"
  fi
  # Each module joins the build only when its project configures there; one that does not is
  # reported with CMake's error and the others go on.
  for k in "${!MOD_SRC[@]}"; do
    target=${MOD_TARGET[$k]}
    if [ "${MOD_NOT_ON[$k]#* $name }" != "${MOD_NOT_ON[$k]}" ]; then
      echo "matrix: skip $name: module $target is not built for this leg (--module-not-on $name)"
      record "$name" "module $target" skipped "not built for this leg (--module-not-on $name)"; continue
    fi
    pair="${MOD_SRC[$k]}=$target"
    if emcmake cmake "${cfg[@]}" "-DLOCKSTEP_LINKED_MODULES=$(IFS=';'; echo "${linked[*]+"${linked[*]};"}$pair")" \
         >"$ROOT/$name.$target.log" 2>&1; then
      linked+=("$pair")
      configured=$(IFS=';'; echo "${linked[*]}")
    else
      echo "matrix: FAIL $name: the module $target does not configure for wasm (see $ROOT/$name.$target.log)"; failed=1
      record "$name" "module $target" fail "the module does not configure for wasm: $(grep -m3 -i -A2 'error' "$ROOT/$name.$target.log" | tr -s ' ')"
    fi
  done
  # (Configured already with every module that joined, unless the last one tried did not.)
  local all
  all=$(IFS=';'; echo "${linked[*]+"${linked[*]}"}")
  if { [ "$configured" != "$all" ] || [ -z "$all" ]; } &&
     ! emcmake cmake "${cfg[@]}" "-DLOCKSTEP_LINKED_MODULES=$all" >"$ROOT/$name.configure.log" 2>&1; then
    echo "matrix: FAIL $name: configure failed (see $ROOT/$name.configure.log)"; tail -5 "$ROOT/$name.configure.log"; failed=1
    record "$name" "build" fail "the configure failed: $(grep -m3 'rror' "$ROOT/$name.configure.log")"; return
  fi
  if ! cmake --build "$dir" -j 2 --target lockstep-replay >"$ROOT/$name.build.log" 2>&1; then
    echo "matrix: FAIL $name: build failed (see $ROOT/$name.build.log)"; tail -5 "$ROOT/$name.build.log"; failed=1
    record "$name" "build" fail "the build failed: $(grep -m3 'error' "$ROOT/$name.build.log")"; return
  fi
  local replay out rc program
  for replay in "${REPLAYS[@]+"${REPLAYS[@]}"}"; do
    program="$dir/bin/lockstep-replay.js"
    out=$(node "$program" verify "$replay" 2>&1); rc=$?
    if [ $rc = 0 ]; then echo "matrix: ok   $name ($how): $out"; passed+=("$replay|$program|node||$name"); record "$name" "${replay#"$PWD"/}" ok "$out"
    else echo "matrix: FAIL $name ($how), exit $rc: $out"; failed=1; mismatch "$name" "$program" node "$replay" "" "$out"
      record "$name" "${replay#"$PWD"/}" fail "exit $rc: $out"; fi
  done
  for k in "${!MOD_SRC[@]}"; do
    target=${MOD_TARGET[$k]} mreplay=${MOD_REPLAY[$k]}
    [[ " ${linked[*]+"${linked[*]}"} " == *" ${MOD_SRC[$k]}=$target "* ]] || continue
    if ! cmake --build "$dir" -j 2 --target "lockstep-replay-$target" >>"$ROOT/$name.$target.log" 2>&1; then
      echo "matrix: FAIL $name: the module $target did not build for wasm (see $ROOT/$name.$target.log)"
      grep -m5 'error' "$ROOT/$name.$target.log"; failed=1
      record "$name" "module $target" fail "the module did not build for wasm: $(grep -m3 'error' "$ROOT/$name.$target.log")"; continue
    fi
    program="$dir/bin/lockstep-replay-$target.js"
    out=$(node "$program" verify "$mreplay" 2>&1); rc=$?
    out=$(grep -v ': info: ' <<<"$out")
    if [ $rc = 0 ]; then echo "matrix: ok   $name ($how): module $target: $out"; passed+=("$mreplay|$program|node||$name")
      record "$name" "module $target" ok "$out"
    else
      echo "matrix: FAIL $name ($how): module $target, exit $rc: $out"; failed=1
      record "$name" "module $target" fail "exit $rc: $out"
      mismatch "$name" "$program" node "$mreplay" "" "$out"
    fi
  done
}
if [ "$ONLY" = " " ] || [ "${ONLY#* wasm-node }" != "$ONLY" ]; then wasm_leg; fi

# The runtime legs of a C# or Python game's own check (see the top): its output's last lines are
# the leg's detail (the check's report names the tick, entity and field where the game parts).
RUNTIME_LEGS=()
for c in "${MONO_CHECKS[@]+"${MONO_CHECKS[@]}"}"; do RUNTIME_LEGS+=("mono|mono|$c" "mono-O=-float32|mono -O=-float32|$c"); done
for c in "${PY_CHECKS[@]+"${PY_CHECKS[@]}"}"; do RUNTIME_LEGS+=("python3|python3|$c"); done
for l in "${RUNTIME_LEGS[@]+"${RUNTIME_LEGS[@]}"}"; do
  IFS='|' read -r name runner check <<<"$l"
  [ "$ONLY" = " " ] || [ "${ONLY#* $name }" != "$ONLY" ] || continue
  if ! command -v "${runner%% *}" >/dev/null; then
    echo "matrix: skip $name: ${runner%% *} is not installed"
    record "$name" "$check" skipped "${runner%% *} is not installed (Debian: apt-get install ${runner%% *}$([ "${runner%% *}" = mono ] && echo -runtime))"
    continue
  fi
  ran=$((ran + 1))
  out=$(bash -c "$runner $check" 2>&1); rc=$?
  detail=$(tail -n 3 <<<"$out" | tr '\n' ' ')
  if [ $rc = 0 ]; then echo "matrix: ok   $name: $check: $detail"; record "$name" "$check" ok "$detail"
  else echo "matrix: FAIL $name: $check, exit $rc: $detail"; failed=1; record "$name" "$check" fail "exit $rc: $detail"; fi
done

parts=()  # "leg<TAB>replay<TAB>tick<TAB>where": where each failing leg parts from one that agrees
# Each mismatch localized: the build that parted writes its state at that tick, and a build that
# reproduces the replay compares it with its own, naming the entity and field.
for m in "${mismatches[@]}"; do
  IFS='|' read -r name program runner replay so tick opts <<<"$m"
  ref=""
  for p in "${passed[@]}"; do [ "${p%%|*}" = "$replay" ] && { ref=$p; break; }; done
  if [ -z "$ref" ]; then echo "matrix: $name: no build reproduces $(basename "$replay"), so none can name the field"; continue; fi
  IFS='|' read -r _ refprogram refrunner refso refleg <<<"$ref"
  lib=(); [ -n "$so" ] && lib=(--sim-lib "$so")
  reflib=(); [ -n "$refso" ] && reflib=(--sim-lib "$refso")
  if ! $runner "$program" "${lib[@]}" $opts state "$replay" --tick "$tick" -o "$ROOT/$name.state" >/dev/null 2>&1; then
    echo "matrix: $name: could not write its state at tick $tick"; continue
  fi
  where=$($refrunner "$refprogram" "${reflib[@]}" compare "$replay" "$ROOT/$name.state" --tick "$tick" 2>&1 >/dev/null |
          sed -n 's/.*error: //p' | sed 's/ (this build vs .*)$//' | head -1)
  [ -n "$where" ] || { echo "matrix: $name: ${refleg%%+*} could not compare its state at tick $tick"; continue; }
  echo "matrix: $name parts from ${refleg%%+*} on ${replay#"$PWD"/} at $where (${refleg%%+*}'s value first)"
  parts+=("$name"$'\t'"${replay#"$PWD"/}"$'\t'"$tick"$'\t'"$where")
done
json_str() { local v=$1; v=${v//\\/\\\\}; v=${v//\"/\\\"}; v=${v//$'\t'/ }; printf '"%s"' "$v"; }
# Each module's equal-builds report: the machine code of every build that reproduced its golden
# replay tick by tick, which lockstep-server --equal-builds admits together (docs/CI.md). A build
# without a GNU build id is left out, saying so.
for k in "${!MOD_SRC[@]}"; do
  target=${MOD_TARGET[$k]} n=0
  {
    printf '{"format": "lockstep-equal-builds/1", "module": %s, "replay": %s, "builds": [' "$(json_str "$target")" \
      "$(json_str "${MOD_REPLAY[$k]}")"
    sep=""
    for e in "${equal_builds[@]+"${equal_builds[@]}"}"; do
      IFS=$'\t' read -r mk leg code file <<<"$e"
      [ "$mk" = "$k" ] || continue
      # A build that parted on one of glibc's paths (leg BASE+glibc-...) is not equal everywhere.
      bad=0
      for f in "${module_failed[@]+"${module_failed[@]}"}"; do
        IFS=$'\t' read -r fk fleg <<<"$f"
        [ "$fk" = "$k" ] && { [ "$fleg" = "$leg" ] || [ "${fleg%%+*}" = "$leg" ]; } && bad=1
      done
      [ $bad = 0 ] || continue
      if [ -z "$code" ]; then echo "matrix: $leg: $target's build has no GNU build id (link with -Wl,--build-id): not in the equal-builds report" >&2; continue; fi
      printf '%s\n  {"leg": %s, "code": %s, "file": %s}' "$sep" "$(json_str "$leg")" "$(json_str "$code")" "$(json_str "$file")"
      sep=","; n=$((n + 1))
    done
    printf ']}\n'
  } >"$ROOT/$target.equal-builds.json"
  echo "matrix: $ROOT/$target.equal-builds.json: $n builds of $target replayed equal (lockstep-server --equal-builds admits them together)"
done
xml_str() { local v=$1; v=${v//&/&amp;}; v=${v//</&lt;}; v=${v//>/&gt;}; v=${v//\"/&quot;}; printf '%s' "$v"; }
if [ -n "$JSON" ]; then
  {
    printf '{"tool":"determinism-matrix","ok":%s,"legs":[' "$([ $failed = 0 ] && echo true || echo false)"
    sep=""
    for r in "${results[@]+"${results[@]}"}"; do
      IFS=$'\t' read -r leg subject status detail <<<"$r"
      printf '%s\n {"leg":%s,"subject":%s,"status":%s,"detail":%s}' "$sep" "$(json_str "$leg")" "$(json_str "$subject")" \
        "$(json_str "$status")" "$(json_str "$detail")"; sep=","
    done
    printf '],\n "parts":['
    sep=""
    for r in "${parts[@]+"${parts[@]}"}"; do
      IFS=$'\t' read -r leg replay tick where <<<"$r"
      printf '%s\n {"leg":%s,"replay":%s,"tick":%s,"where":%s}' "$sep" "$(json_str "$leg")" "$(json_str "$replay")" "$tick" "$(json_str "$where")"
      sep=","
    done
    printf ']}\n'
  } >"$JSON" || { echo "matrix: FAIL: cannot write $JSON"; failed=1; }
fi
if [ -n "$JUNIT" ]; then
  {
    nfail=0; for r in "${results[@]+"${results[@]}"}"; do IFS=$'\t' read -r _ _ status _ <<<"$r"; [ "$status" = fail ] && nfail=$((nfail + 1)); done
    printf '<?xml version="1.0" encoding="UTF-8"?>\n<testsuite name="determinism-matrix" tests="%d" failures="%d">\n' "${#results[@]}" "$nfail"
    for r in "${results[@]+"${results[@]}"}"; do
      IFS=$'\t' read -r leg subject status detail <<<"$r"
      where=""
      for pt in "${parts[@]+"${parts[@]}"}"; do IFS=$'\t' read -r pl pr _ pw <<<"$pt"; [ "$pl" = "$leg" ] && [ "$pr" = "$subject" ] && where=" Parts at $pw."; done
      printf '  <testcase classname="%s" name="%s">' "$(xml_str "$leg")" "$(xml_str "$subject")"
      case $status in
        fail) printf '<failure message="%s">%s</failure>' "$(xml_str "${detail:0:200}")" "$(xml_str "$detail$where")" ;;
        skipped) printf '<skipped message="%s"/>' "$(xml_str "$detail")" ;;
        *) printf '<system-out>%s</system-out>' "$(xml_str "$status: $detail")" ;;
      esac
      printf '</testcase>\n'
    done
    printf '</testsuite>\n'
  } >"$JUNIT" || { echo "matrix: FAIL: cannot write $JUNIT"; failed=1; }
fi
if [ $ran = 0 ]; then
  echo "matrix: FAIL: no leg ran (--only names one of: $(for c in "${CONFIGS[@]}" wasm-node "${RUNTIME_LEGS[@]+"${RUNTIME_LEGS[@]}"}"; do printf '%s ' "${c%%|*}"; done))"
  exit 1
fi
if [ $failed = 0 ]; then echo "PASS: $ran legs, one per-tick hash trace per replay${MOD_TARGET[*]:+, and modules ${MOD_TARGET[*]}}${RUNTIME_LEGS[*]:+, and the runtime legs of the C# and Python checks}"; else echo "FAIL: the legs disagree"; fi
exit $failed
