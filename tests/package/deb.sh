#!/usr/bin/env bash
# The Debian package: cpack builds lockstep_<version>_amd64.deb from this build; its control
# fields and contents are checked; then, in a fresh debian:bookworm-slim container, apt installs
# it with the runtime dependencies it declares, the installed tools run (a server's --version, the
# desync checks on a built-in module, pkg-config and the CMake package found), and `dpkg --purge`
# removes it leaving none of its files behind.
# Usage: tests/package/deb.sh BUILD_DIR
set -uo pipefail
BUILD=$(cd "${1:?build dir}" && pwd)
cd "$(dirname "$0")/../.."
NAME=lockstep-deb-$$
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-deb.XXXXXX")
say() { echo "deb-test: $*"; }
fail() { say "FAIL: $*"; exit 1; }
cleanup() {
  docker rm -f "$NAME" >/dev/null 2>&1
  if [ -n "${DOCKERD_PID:-}" ]; then say "stopping the dockerd it started (pid $DOCKERD_PID)"; kill "$DOCKERD_PID"; wait "$DOCKERD_PID" 2>/dev/null; fi
  rm -rf "$WORK"
}
trap cleanup EXIT

# 1. The package.
(cd "$WORK" && cpack --config "$BUILD/CPackConfig.cmake" -G DEB -B "$WORK" >"$WORK/cpack.log" 2>&1) ||
  { tail -20 "$WORK/cpack.log"; fail "cpack failed"; }
VERSION=$(sed -n 's/^set(CPACK_PACKAGE_VERSION "\(.*\)")/\1/p' "$BUILD/CPackConfig.cmake")
DEB="$WORK/lockstep_${VERSION}_amd64.deb"
[ -f "$DEB" ] || fail "no $(basename "$DEB"): $(ls "$WORK")"
dpkg-deb -f "$DEB" Package Version Architecture Depends Recommends >"$WORK/control"
grep -qx "Package: lockstep" "$WORK/control" && grep -qx "Version: $VERSION" "$WORK/control" &&
  grep -qx "Architecture: amd64" "$WORK/control" || fail "control fields: $(cat "$WORK/control")"
for dep in libenet7 libstdc++6 libc6; do
  grep -q "^Depends:.*\b$dep\b" "$WORK/control" || fail "Depends lacks $dep: $(grep Depends "$WORK/control")"
done
# A module needs only the compiler: the libraries' header dependencies are recommended, not required.
for dep in libflatbuffers-dev nlohmann-json3-dev libxxhash-dev libenet-dev; do
  grep -q "^Recommends:.*\b$dep\b" "$WORK/control" || fail "Recommends lacks $dep: $(grep Recommends "$WORK/control")"
  grep -q "^Depends:.*\b$dep\b" "$WORK/control" && fail "Depends names $dep: a module-only build would need it"
done
dpkg-deb -c "$DEB" | awk '{print $6}' >"$WORK/contents"
for f in ./usr/bin/lockstep-server ./usr/bin/lockstep-client ./usr/bin/lockstep-synctest ./usr/bin/lockstep-token \
         ./usr/include/lockstep/lockstep.h ./usr/include/lockstep/lockstep_token.h \
         ./usr/share/doc/lockstep/copyright ./usr/lib/cmake/lockstep/LICENSE \
         ./usr/lib/liblockstep_core.so.0.1.0 ./usr/lib/cmake/lockstep/lockstepConfig.cmake ./usr/lib/pkgconfig/lockstep.pc; do
  grep -qx "$f" "$WORK/contents" || fail "the package has no $f"
done
say "ok: $(basename "$DEB"), $(wc -l <"$WORK/contents") paths; $(grep Depends "$WORK/control")"

# 2. Installed and removed on a fresh Debian 12.
source docker/engine.sh
docker run -d --name "$NAME" -v "$WORK:/pkg:ro" debian:bookworm-slim sleep 600 >/dev/null || fail "cannot start a container"
box() { docker exec "$NAME" sh -c "$*"; }
box "apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends /pkg/$(basename "$DEB")" \
  >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; fail "apt-get install of the package failed"; }
# A team's module with nothing but the package and a compiler: lockstep_add_module, the lint and synctest.
mkdir -p "$WORK/mod"
cp tests/modules/walkers.c "$WORK/mod/"
cat >"$WORK/mod/CMakeLists.txt" <<'CMAKE'
cmake_minimum_required(VERSION 3.21)
project(walkers C)
find_package(lockstep CONFIG REQUIRED)
lockstep_add_module(walkers walkers.c)
enable_testing()
lockstep_add_synctest(NAME walkers-synctest MODULE walkers TICKS 100)
CMAKE
box "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq --no-install-recommends cmake gcc libc6-dev make >/dev/null && \
     cp -r /pkg/mod /tmp/mod && cmake -S /tmp/mod -B /tmp/mod/build >/tmp/mod.cfg && cmake --build /tmp/mod/build && \
     ctest --test-dir /tmp/mod/build --output-on-failure" >"$WORK/module.log" 2>&1 ||
  { tail -30 "$WORK/module.log"; fail "a module-only build with the package and the compiler alone"; }
grep -q "100% tests passed, 0 tests failed out of 2" "$WORK/module.log" || fail "the module's synctest and lint: $(tail -5 "$WORK/module.log")"
box "dpkg -s libflatbuffers-dev" >/dev/null 2>&1 && fail "a development package came with the module-only install"
say "ok: a module builds and passes lockstep-lint and lockstep-synctest with the package and the compiler alone"
box "DEBIAN_FRONTEND=noninteractive apt-get install -y -qq pkg-config libflatbuffers-dev nlohmann-json3-dev libxxhash-dev libenet-dev" \
  >>"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; fail "apt-get install of the recommended packages failed"; }
box "lockstep-server --version" | grep -q "^lockstep-server $VERSION" || fail "the installed lockstep-server does not run"
box "lockstep-synctest --sim skirmish --world units=20 --ticks 60 --report /tmp/r.json && grep -q '\"ok\": true' /tmp/r.json" \
  >"$WORK/synctest.log" 2>&1 || { cat "$WORK/synctest.log"; fail "lockstep-synctest in the container"; }
box "pkg-config --modversion lockstep" | grep -qx "$VERSION" || fail "pkg-config does not find lockstep"
box "test -f /usr/lib/cmake/lockstep/lockstepConfigVersion.cmake && ldconfig -p | grep -q liblockstep_core.so.0" ||
  fail "the CMake package or the shared library is not in place"
box "dpkg --purge lockstep" >"$WORK/purge.log" 2>&1 || { cat "$WORK/purge.log"; fail "dpkg --purge failed"; }
box "dpkg -s lockstep" >/dev/null 2>&1 && fail "lockstep is still installed"
left=$(box "for f in $(sed 's|^\./|/|' "$WORK/contents" | grep -v '/$' | tr '\n' ' '); do [ -e \"\$f\" ] && echo \"\$f\"; done")
[ -z "$left" ] || fail "files left after purge: $left"
say "PASS: the package installs on a fresh debian:bookworm-slim with its dependencies, runs, and purges without a trace"
