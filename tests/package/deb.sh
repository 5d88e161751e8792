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
dpkg-deb -f "$DEB" Package Version Architecture Depends >"$WORK/control"
grep -qx "Package: lockstep" "$WORK/control" && grep -qx "Version: $VERSION" "$WORK/control" &&
  grep -qx "Architecture: amd64" "$WORK/control" || fail "control fields: $(cat "$WORK/control")"
for dep in libenet7 libstdc++6 libc6 libflatbuffers-dev nlohmann-json3-dev; do
  grep -q "^Depends:.*\b$dep\b" "$WORK/control" || fail "Depends lacks $dep: $(grep Depends "$WORK/control")"
done
dpkg-deb -c "$DEB" | awk '{print $6}' >"$WORK/contents"
for f in ./usr/bin/lockstep-server ./usr/bin/lockstep-client ./usr/bin/lockstep-synctest ./usr/include/lockstep/lockstep.h \
         ./usr/lib/liblockstep_core.so.0.1.0 ./usr/lib/cmake/lockstep/lockstepConfig.cmake ./usr/lib/pkgconfig/lockstep.pc; do
  grep -qx "$f" "$WORK/contents" || fail "the package has no $f"
done
say "ok: $(basename "$DEB"), $(wc -l <"$WORK/contents") paths; $(grep Depends "$WORK/control")"

# 2. Installed and removed on a fresh Debian 12.
source docker/engine.sh
docker run -d --name "$NAME" -v "$WORK:/pkg:ro" debian:bookworm-slim sleep 600 >/dev/null || fail "cannot start a container"
box() { docker exec "$NAME" sh -c "$*"; }
box "apt-get update -qq >/dev/null && DEBIAN_FRONTEND=noninteractive apt-get install -y -qq /pkg/$(basename "$DEB")" \
  >"$WORK/apt.log" 2>&1 || { tail -20 "$WORK/apt.log"; fail "apt-get install of the package failed"; }
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
