#!/usr/bin/env bash
# Adoption from outside, as a team meets it: `cmake --install` of this build into a temporary
# prefix; what landed (headers, static and shared libraries with their SONAME, the CMake package,
# pkg-config files, the executables); examples/orbits, copied out of the source tree, configured
# against the prefix alone with find_package(lockstep), built, and its own ctest (the desync
# checks of lockstep-synctest and its golden replay); a session of the installed lockstep-server
# and two installed lockstep-clients on the orbits module, one through lockstep-netsim at 40 ms
# with loss, hash-equal to the end and recorded; and a C and a C++ program built against the
# package (CMake targets and pkg-config) that step worlds through the C API and the C++ layers.
E2E_TIMEOUT=380  # it builds projects against an install: ctest allows 400 s
source "$(dirname "$0")/lib.sh" "$1"
BUILD=$(cd "$BIN/.." && pwd)
SRC=$(cd "$(dirname "$0")/../.." && pwd)
PREFIX="$WORK/prefix"
cmake --install "$BUILD" --prefix "$PREFIX" >"$WORK/install.log" 2>&1 || fail "cmake --install: $(tail -3 "$WORK/install.log")"
for f in bin/lockstep-server bin/lockstep-client bin/lockstep-replay bin/lockstep-synctest bin/lockstep-netsim bin/lockstep-lint \
         bin/lockstep-token include/lockstep/lockstep_token.h include/lockstep/connect_token.hpp include/lockstep/lockstep.h include/lockstep/module_abi.h include/lockstep/simulation.hpp \
         lib/liblockstep_core.a lib/liblockstep_net.a \
         lib/liblockstep_core.so.0.1.0 lib/liblockstep_net.so.0.1.0 lib/cmake/lockstep/lockstepConfig.cmake \
         lib/cmake/lockstep/lockstepConfigVersion.cmake lib/cmake/lockstep/lockstepTargets.cmake \
         lib/pkgconfig/lockstep.pc lib/pkgconfig/lockstep-core.pc lib/pkgconfig/lockstep-module.pc \
         lib/cmake/lockstep/LICENSE share/doc/lockstep/copyright; do
  [ -e "$PREFIX/$f" ] || fail "the install has no $f"
done
# The installed matchmaker tool: a key, a token for a server, and what the token says.
"$PREFIX/bin/lockstep-token" keygen -o "$WORK/installed.key" || fail "installed lockstep-token keygen"
"$PREFIX/bin/lockstep-token" mint --key "$WORK/installed.key" --client-id 5 --server 10.1.2.3:7777 -o "$WORK/installed.token" \
  || fail "installed lockstep-token mint"
"$PREFIX/bin/lockstep-token" inspect "$WORK/installed.token" >"$WORK/installed-token.json" || fail "installed lockstep-token inspect"
json_check "$WORK/installed-token.json" 'd["client_id"] == 5 and d["servers"] == ["10.1.2.3:7777"]' "the installed lockstep-token's token"
readelf -d "$PREFIX/lib/liblockstep_core.so" | grep -q 'SONAME.*\[liblockstep_core.so.0\]' || fail "liblockstep_core.so has no SONAME liblockstep_core.so.0"
readelf -d "$PREFIX/lib/liblockstep_net.so" | grep -q 'SONAME.*\[liblockstep_net.so.0\]' || fail "liblockstep_net.so has no SONAME"
# Only the public face is installed: exactly the headers of the include/ folders, none of the
# internal/ ones (wire, transport, the sessions' parts) nor the generated wire code; and each
# public header stands on its own.
(cd "$SRC" && ls common/*/include/lockstep/ games/include/lockstep/ games/*/include/lockstep/ | grep -v ':$' | grep . | sort) \
  >"$WORK/public.txt"
(cd "$PREFIX/include" && find . -type f | sed 's|.*/||' | sort) >"$WORK/installed-headers.txt"
cmp -s "$WORK/public.txt" "$WORK/installed-headers.txt" ||
  fail "the installed headers are not the include/ folders': $(diff "$WORK/public.txt" "$WORK/installed-headers.txt" | head -5)"
for private in admission.hpp hash_ledger.hpp protocol.hpp transport.hpp packet_seal.hpp pacer.hpp lead.hpp cli.hpp summary.hpp; do
  [ -e "$PREFIX/include/lockstep/$private" ] && fail "the internal header $private is installed"
done
[ -e "$PREFIX/include/lockstep/wire" ] && fail "the generated wire code is installed"
# The shared libraries export the API and hide the rest.
nm -D --defined-only -C "$PREFIX/lib/liblockstep_net.so" | grep -q 'lockstep::Client::create' || fail "liblockstep_net.so does not export Client::create"
nm -D --defined-only -C "$PREFIX/lib/liblockstep_net.so" | grep -q 'lockstep::protocol::' && fail "liblockstep_net.so exports the wire code"
# ENet's socket calls are the program's to replace (lockstep/enet_batching.h), not the library's.
nm -D --defined-only "$PREFIX/lib/liblockstep_net.so" | grep -qw 'enet_socket_receive' &&
  fail "liblockstep_net.so replaces ENet's socket calls for every program that links it"
nm -D --defined-only "$PREFIX/lib/liblockstep_net.so" | grep -qw 'lockstep_enet_socket_receive' ||
  fail "liblockstep_net.so does not export lockstep_enet_socket_receive"
for h in "$PREFIX"/include/lockstep/*.h*; do
  echo "#include <lockstep/$(basename "$h")>" | g++ -std=c++20 -fsyntax-only -x c++ -I"$PREFIX/include" - 2>"$WORK/header.err" ||
    fail "the installed $(basename "$h") does not compile on its own: $(head -3 "$WORK/header.err")"
done
# From a prefix outside the loader's paths, with no LD_LIBRARY_PATH: a C game linked against the
# net library alone, --as-needed (so it does not name core itself), runs; the net library finds
# core beside it by its RUNPATH.
readelf -d "$PREFIX/lib/liblockstep_net.so" | grep -q 'RUNPATH.*\[\$ORIGIN\]' || fail "liblockstep_net.so has no RUNPATH \$ORIGIN"
cat >"$WORK/prefix_game.c" <<'C'
#include <lockstep/lockstep_token.h>
#include <stdio.h>
int main(void) {
  uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES];
  lockstep_token_keygen(key);
  puts("prefix game: ok");
  return 0;
}
C
cc -o "$WORK/prefix_game" "$WORK/prefix_game.c" -I"$PREFIX/include" -Wl,--as-needed -L"$PREFIX/lib" -llockstep_net \
   -Wl,-rpath,"$PREFIX/lib" 2>"$WORK/prefix_game.err" || fail "cc against the prefix: $(cat "$WORK/prefix_game.err")"
env -u LD_LIBRARY_PATH "$WORK/prefix_game" >"$WORK/prefix_game.out" 2>&1 ||
  fail "a game linked against the prefix does not start: $(cat "$WORK/prefix_game.out")"
# A C program that asks for batched socket calls, from the prefix: its definitions reach ENet's library.
cat >"$WORK/batching_game.c" <<'C'
#include <lockstep/enet_batching.h>
#include <stdio.h>
LOCKSTEP_DEFINE_ENET_BATCHING()
int main(void) {
  ENetSocket s = enet_socket_create(ENET_SOCKET_TYPE_DATAGRAM);
  ENetBuffer b = {0, 0};
  enet_socket_set_option(s, ENET_SOCKOPT_NONBLOCK, 1);
  printf("batching game: %d\n", enet_socket_receive(s, NULL, &b, 1));  /* ENet's own answer: nothing waiting */
  return 0;
}
C
cc -o "$WORK/batching_game" "$WORK/batching_game.c" -I"$PREFIX/include" -L"$PREFIX/lib" -llockstep_net -lenet \
   -Wl,-rpath,"$PREFIX/lib" 2>"$WORK/batching_game.err" || fail "cc of a program asking for batches: $(cat "$WORK/batching_game.err")"
nm -D --defined-only "$WORK/batching_game" | grep -qw 'enet_socket_receive' || fail "the program's enet_socket_receive is not exported to ENet"
env -u LD_LIBRARY_PATH "$WORK/batching_game" | grep -qx 'batching game: 0' || fail "a program asking for batches does not run"
echo "ok: installed: exactly the public headers (each compiles alone), static and shared libraries (SONAME .0, the API alone exported, RUNPATH \$ORIGIN), CMake package, pkg-config, executables; a game from the prefix starts without LD_LIBRARY_PATH"

# The bindings from the prefix, as a studio loads them. Python: the package where the prefix's
# Python finds it, its libraries found three folders up (no LOCKSTEP_LIBDIR, no LD_LIBRARY_PATH).
PYPKG="$PREFIX/lib/python3/dist-packages"
[ -f "$PYPKG/lockstep/__init__.py" ] || fail "the install has no Python package at lib/python3/dist-packages/lockstep"
env -u LD_LIBRARY_PATH -u LOCKSTEP_LIBDIR PYTHONPATH="$PYPKG" python3 -c '
import lockstep
m = lockstep.module_builtin("arena")
assert lockstep.api_version() == 4 and m.name == "arena" and m.input_size > 0
print("installed python binding:", lockstep.version(), m.name, m.version, m.input_size)' >"$WORK/installed-py.out" 2>&1 ||
  fail "the installed Python package: $(cat "$WORK/installed-py.out")"
# pip: the prefix's project (PREFIX/share/lockstep/python) installed into a fresh environment, and
# a wheel built of it installed into another; each imports with no path set and finds the
# prefix's libraries (lockstep/_libdir.py). Debian's Python, with its setuptools and wheel.
PYPROJ="$PREFIX/share/lockstep/python"
[ -f "$PYPROJ/pyproject.toml" ] || fail "the install has no pip-installable project at share/lockstep/python"
check_venv() {  # VENV: imports lockstep from outside any source tree
  (cd "$WORK" && env -u LD_LIBRARY_PATH -u LOCKSTEP_LIBDIR -u PYTHONPATH "$1/bin/python" -c '
import lockstep, os
m = lockstep.module_builtin("arena")
assert lockstep.api_version() == 4 and m.name == "arena", lockstep.api_version()
print("pip-installed binding:", lockstep.version(), os.path.dirname(lockstep.__file__))')
}
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv-src" >"$WORK/pip.log" 2>&1 &&
  "$WORK/venv-src/bin/pip" install --no-index --no-build-isolation "$PYPROJ" >>"$WORK/pip.log" 2>&1 ||
  fail "pip install of the prefix's Python project: $(tail -5 "$WORK/pip.log")"
check_venv "$WORK/venv-src" >"$WORK/venv-src.out" 2>&1 || fail "the pip-installed package: $(cat "$WORK/venv-src.out")"
grep -q "venv-src/lib/python3[.0-9]*/site-packages/lockstep" "$WORK/venv-src.out" || fail "not the pip-installed copy: $(cat "$WORK/venv-src.out")"
"$WORK/venv-src/bin/pip" wheel --no-index --no-build-isolation --no-deps -w "$WORK/dist" "$PYPROJ" >>"$WORK/pip.log" 2>&1 ||
  fail "pip wheel of the prefix's Python project: $(tail -5 "$WORK/pip.log")"
WHEEL=$(ls "$WORK"/dist/lockstep-*.whl 2>/dev/null | head -1)
[ -n "$WHEEL" ] || fail "no wheel was built: $(ls "$WORK/dist")"
/usr/bin/python3 -m venv --system-site-packages "$WORK/venv-whl" >>"$WORK/pip.log" 2>&1 &&
  "$WORK/venv-whl/bin/pip" install --no-index "$WHEEL" >>"$WORK/pip.log" 2>&1 || fail "pip install of the wheel: $(tail -5 "$WORK/pip.log")"
check_venv "$WORK/venv-whl" >"$WORK/venv-whl.out" 2>&1 || fail "the wheel's package: $(cat "$WORK/venv-whl.out")"
echo "ok: pip: $(cat "$WORK/venv-src.out"); from $(basename "$WHEEL"): $(cat "$WORK/venv-whl.out")"
# C#: the binding's one source file, compiled with a game's own code against the prefix's library.
[ -f "$PREFIX/share/lockstep/csharp/Lockstep.cs" ] || fail "the install has no C# binding at share/lockstep/csharp/Lockstep.cs"
if command -v mcs >/dev/null && command -v mono >/dev/null; then
  cat >"$WORK/cs_game.cs" <<'CS'
static class Game {
  static int Main() {
    var m = Lockstep.Client.ModuleBuiltin("arena");
    System.Console.WriteLine("installed C# binding: " + m.Name + " " + m.Version + " input " + m.InputSize + " now " + Lockstep.Client.NowNs());
    return m.Name == "arena" ? 0 : 1;
  }
}
CS
  mcs -nologo -out:"$WORK/cs_game.exe" "$PREFIX/share/lockstep/csharp/Lockstep.cs" "$WORK/cs_game.cs" >"$WORK/cs_game.log" 2>&1 ||
    fail "compiling a C# game with the installed binding: $(cat "$WORK/cs_game.log")"
  LD_LIBRARY_PATH="$PREFIX/lib" mono "$WORK/cs_game.exe" >"$WORK/cs_game.out" 2>&1 || fail "the installed C# binding: $(cat "$WORK/cs_game.out")"
  echo "ok: $(cat "$WORK/cs_game.out")"
fi
echo "ok: $(cat "$WORK/installed-py.out")"

# A module-only build needs no dependency but the compiler: with FlatBuffers, nlohmann-json,
# xxHash and ENet hidden from CMake the package still loads and builds the module.
cp -r "$SRC/examples/orbits" "$WORK/orbits-bare-src"
rm -rf "$WORK/orbits-bare-src/build"
PKG_CONFIG_LIBDIR=/nonexistent cmake -S "$WORK/orbits-bare-src" -B "$WORK/orbits-bare" -DCMAKE_PREFIX_PATH="$PREFIX" \
  -DCMAKE_DISABLE_FIND_PACKAGE_FlatBuffers=ON -DCMAKE_DISABLE_FIND_PACKAGE_nlohmann_json=ON >"$WORK/bare-cfg.log" 2>&1 ||
  fail "configuring a module without the libraries' dependencies: $(tail -5 "$WORK/bare-cfg.log")"
grep -q "lockstep::core and lockstep::net also need" "$WORK/bare-cfg.log" || fail "the package did not say what the libraries need"
PKG_CONFIG_LIBDIR=/nonexistent cmake --build "$WORK/orbits-bare" -j 2 >"$WORK/bare-build.log" 2>&1 ||
  fail "building a module without the libraries' dependencies: $(tail -5 "$WORK/bare-build.log")"
echo "ok: a module builds from the package without FlatBuffers, nlohmann-json, xxHash or ENet"

# The example, out of the tree: it may only find lockstep through the prefix.
cp -r "$SRC/examples/orbits" "$WORK/orbits-src"
rm -rf "$WORK/orbits-src/build"
# Its determinism gate on one leg here (the whole matrix is determinism/matrix's): glibc's
# baseline paths, which rebuild lockstep's core from the sources the package carries.
cmake -S "$WORK/orbits-src" -B "$WORK/orbits" -DCMAKE_PREFIX_PATH="$PREFIX" -DLOCKSTEP_GATE_ONLY=gcc-O2+glibc-baseline \
  >"$WORK/orbits-cfg.log" 2>&1 || fail "configuring examples/orbits: $(tail -5 "$WORK/orbits-cfg.log")"
cmake --build "$WORK/orbits" -j 2 >"$WORK/orbits-build.log" 2>&1 || fail "building examples/orbits: $(tail -5 "$WORK/orbits-build.log")"
ctest --test-dir "$WORK/orbits" -L gate --output-on-failure >"$WORK/orbits-gate.log" 2>&1 ||
  fail "the example's determinism gate: $(tail -20 "$WORK/orbits-gate.log")"
json_check "$WORK/orbits/gate/orbits_gate.json" 'd["ok"] and [(l["leg"], l["subject"], l["status"]) for l in d["legs"]] == [("gcc-O2+glibc-baseline", "module orbits", "ok")]' \
  "the gate's report of orbits"
grep -q 'tests="1" failures="0"' "$WORK/orbits/gate/orbits_gate.xml" || fail "the gate's JUnit file of orbits"
echo "ok: lockstep_add_determinism_gate: the installed lockstep-gate rebuilt the core and orbits, and the golden replay verified"
ctest --test-dir "$WORK/orbits" -LE gate --output-on-failure >"$WORK/orbits-ctest.log" 2>&1 ||
  fail "the example's own tests: $(tail -20 "$WORK/orbits-ctest.log")"
grep -q '100% tests passed, 0 tests failed out of 5' "$WORK/orbits-ctest.log" || fail "the example's ctest: $(tail -3 "$WORK/orbits-ctest.log")"
json_check "$WORK/orbits/synctest/orbits_synctest.json" 'd["ok"] and d["sim"] == "orbits" and len(d["checks"]) == 10' \
  "the synctest report of orbits"
grep -q 'tests="10" failures="0"' "$WORK/orbits/synctest/orbits_synctest.xml" || fail "the JUnit file of orbits"
grep -q 'orbits/synctest/lint .*Passed' "$WORK/orbits-ctest.log" || fail "the example's lint case did not run: $(cat "$WORK/orbits-ctest.log")"
echo "ok: examples/orbits built against the prefix; lockstep-lint, lockstep-synctest (10 checks) and its golden replay pass"

# A session of the installed executables on the team's module.
LIB="$WORK/orbits/liborbits.so"
BIN="$PREFIX/bin" NET_SERVER_ARGS="--sim-lib $LIB --world moons=30 --record $WORK/orbits.replay" \
  NET_CLIENT_ARGS="--sim-lib $LIB" net_session orbits 800 "0 0 0" "40 5 2"
[ "$(wc -l <"$WORK/orbits/server.log")" = 800 ] || fail "the orbits session did not reach tick 800"
json_check "$WORK/orbits/server.json" 'd["desyncs"] == [] and d["hashes_compared"] >= 1500' "the orbits session compared too few hashes"
"$PREFIX/bin/lockstep-replay" --sim-lib "$LIB" verify "$WORK/orbits.replay" >"$WORK/verify.out" 2>&1 ||
  fail "the session's replay: $(cat "$WORK/verify.out")"
grep -q '^OK 800 ticks verified (orbits seed=1,moons=30, 2 players)' "$WORK/verify.out" || fail "verify: $(cat "$WORK/verify.out")"
echo "ok: the installed server and clients played 800 ticks of orbits (one client at 40 ms, 2 % loss), hash-equal; the replay verifies"

# The team's game in the page, from the package: lockstep_add_web_client(orbits) gives the target
# orbits-web, whose web build (the sources the package carries, Debian's emscripten) must
# configure and generate with orbits linked in. (Compiling it is e2e/browser's part: it builds the
# same build-web.sh in the tree with orbits linked in and plays the page; a second wasm build of
# the core here would cost CI a minute and a half.)
if command -v emcmake >/dev/null && command -v node >/dev/null; then
  cmake --build "$WORK/orbits" --target help 2>/dev/null | grep -q "orbits-web" || fail "lockstep_add_web_client(orbits) added no orbits-web target"
  NODE_PATH=/usr/share/nodejs emcmake cmake -S "$PREFIX/share/lockstep/source" -B "$WORK/orbits-web-cfg" -G Ninja \
    -DLOCKSTEP_BUILD_TESTS=OFF -DLOCKSTEP_BUILD_BENCH=OFF -Wno-dev "-DLOCKSTEP_LINKED_MODULES=$WORK/orbits-src=orbits" \
    >"$WORK/orbits-web.log" 2>&1 || fail "the package's web build does not configure with orbits: $(grep -m5 -i error -A3 "$WORK/orbits-web.log")"
  ninja -C "$WORK/orbits-web-cfg" -t targets all 2>/dev/null | grep -q "web-orbits/lockstep-web.js" ||
    fail "the package's web build has no page for orbits"
  echo "ok: lockstep_add_web_client(orbits): the package's web build configures with orbits linked in, its page a target"
else
  echo "skip: lockstep_add_web_client (emscripten or Node is not installed)"
fi

# Programs built against the package: CMake targets (C API shared, C++ static with its deps) ...
cmake -S "$SRC/tests/package/consumer" -B "$WORK/consumer" -DCMAKE_PREFIX_PATH="$PREFIX" >"$WORK/consumer.log" 2>&1 &&
  cmake --build "$WORK/consumer" -j 2 >>"$WORK/consumer.log" 2>&1 || fail "the consumer project: $(tail -5 "$WORK/consumer.log")"
"$WORK/consumer/capi" >"$WORK/capi.out" 2>&1 || fail "capi (skirmish): $(cat "$WORK/capi.out")"
"$WORK/consumer/capi" "$LIB" >"$WORK/capi-orbits.out" 2>&1 || fail "capi (orbits): $(cat "$WORK/capi-orbits.out")"
"$WORK/consumer/cxx" >"$WORK/cxx.out" 2>&1 || fail "cxx: $(cat "$WORK/cxx.out")"
LD_LIBRARY_PATH="$PREFIX/lib" "$WORK/consumer/cxx_shared" >"$WORK/cxx-shared.out" 2>&1 || fail "cxx against the shared library: $(cat "$WORK/cxx-shared.out")"
# ... and pkg-config, the way a Makefile would.
export PKG_CONFIG_PATH="$PREFIX/lib/pkgconfig"
cc -o "$WORK/capi-pc" "$SRC/tests/package/consumer/capi.c" $(pkg-config --cflags --libs lockstep-core) \
   -Wl,-rpath,"$PREFIX/lib" 2>"$WORK/pc.err" || fail "cc with pkg-config lockstep-core: $(cat "$WORK/pc.err")"
"$WORK/capi-pc" >"$WORK/capi-pc.out" 2>&1 || fail "capi built with pkg-config: $(cat "$WORK/capi-pc.out")"
cmp -s "$WORK/capi.out" "$WORK/capi-pc.out" || fail "the two builds of capi disagree: $(cat "$WORK/capi.out" "$WORK/capi-pc.out")"
# pkg-config from the prefix alone (PKG_CONFIG_LIBDIR hides the system's .pc files: no other
# package's is needed), and no -rpath of the caller's: the .pc file's run path finds the libraries.
PC_ONLY="env PKG_CONFIG_LIBDIR=$PREFIX/lib/pkgconfig PKG_CONFIG_PATH="
cc -o "$WORK/capi-pc-alone" "$SRC/tests/package/consumer/capi.c" $($PC_ONLY pkg-config --cflags --libs lockstep) \
   2>"$WORK/pc-alone.err" || fail "cc with pkg-config lockstep from the prefix alone: $(cat "$WORK/pc-alone.err")"
env -u LD_LIBRARY_PATH "$WORK/capi-pc-alone" >"$WORK/capi-pc-alone.out" 2>&1 ||
  fail "capi built with the prefix's pkg-config alone did not start: $(cat "$WORK/capi-pc-alone.out")"
cmp -s "$WORK/capi.out" "$WORK/capi-pc-alone.out" || fail "the pkg-config-alone build of capi disagrees"
# ... and linked statically, with what --static adds.
cc -o "$WORK/capi-static" "$SRC/tests/package/consumer/capi.c" -I"$PREFIX/include" "$PREFIX/lib/liblockstep_core.a" \
   $($PC_ONLY pkg-config --static --libs-only-l lockstep-core | sed 's/-llockstep_core//') 2>"$WORK/pc-static.err" ||
  fail "a static build with pkg-config --static lockstep-core: $(cat "$WORK/pc-static.err")"
"$WORK/capi-static" >"$WORK/capi-static.out" 2>&1 || fail "the static capi: $(cat "$WORK/capi-static.out")"
cmp -s "$WORK/capi.out" "$WORK/capi-static.out" || fail "the static build of capi disagrees"
[ "$(pkg-config --modversion lockstep)" = "$("$PREFIX/bin/lockstep-server" --version | awk '{print $2}')" ] ||
  fail "pkg-config's version is not the executables'"
pkg-config --cflags lockstep-module | grep -q -- '-ffp-contract=off' || fail "lockstep-module's flags lack -ffp-contract=off"
echo "ok: $(cat "$WORK/capi.out"); $(cat "$WORK/capi-orbits.out"); $(cat "$WORK/cxx.out"); shared: $(cat "$WORK/cxx-shared.out")"
echo "PASS: installed, the out-of-tree module built, checked and hosted, the C API and C++ layers used through the package"
