#!/usr/bin/env bash
# The whole test suite under AddressSanitizer and UndefinedBehaviorSanitizer (gcc). The
# determinism matrix and the fuzzer build their own trees and are left to the main run.
# Usage: tools/sanitize.sh [--build-only | --test-only] [BUILD_DIR]
#   --build-only  configure and build, run nothing (CI builds this beside the main pass's tests)
#   --test-only   run the tests of a tree already built
set -euo pipefail
cd "$(dirname "$0")/.."
MODE=all
case "${1:-}" in --build-only) MODE=build; shift ;; --test-only) MODE=test; shift ;; esac
BUILD=${1:-build-asan}
# The benchmark is not built: its smoke run is the main suite's (below), and building it under ASan
# cost a sixth of this pass's compile time. The tree is built at -O1 with line tables only (-g1),
# as AddressSanitizer's documentation suggests: the reports keep their file and line, and the
# heaviest file (server/main.cpp, CLI11 and its options) compiles in 54 s instead of 127 s at -O2 -g
# (-O1 -g1 builds in about 60 % of the time -O2 -g takes under the sanitizers).
# It is a unity build (CMake's CMAKE_UNITY_BUILD: a target's sources compiled eight to a
# compilation): the same code under the same checks, each header parsed and each template
# instantiated once for eight files: about 670 s of processor time for the whole tree here (one
# of its heaviest files, built alone, takes 1.5 times what the shipped tree's build of it takes,
# and that whole tree about 930 s). A file that defines a macro a header reads, and the C face's
# files, compile alone (common/CMakeLists.txt, tests/CMakeLists.txt). The tree the suite ships
# and measures, and the matrix's legs, compile file by file.
# Its executables are linked as position-dependent (-no-pie): an instrumented executable carries
# about 490 000 relative relocations (the sanitizer's descriptors of every global and string), which
# the loader applies, a page fault per page, at every start, and the suite starts thousands of them
# (each unit test case, synctest's children, every tool an end-to-end script runs). Measured here,
# each test alone: e2e/synctest 71 s of processor time before, 54 after; e2e/viewer 75 and 64; a
# unit test case's start 0.25 s and 0.17 s. The modules are shared objects and stay position
# independent.
if [ "$MODE" != test ]; then
cmake -S . -B "$BUILD" -G Ninja -DCMAKE_BUILD_TYPE=RelWithDebInfo -DLOCKSTEP_SANITIZE=ON -DLOCKSTEP_WERROR=ON \
    "-DCMAKE_CXX_FLAGS_RELWITHDEBINFO=-O1 -g1" "-DCMAKE_C_FLAGS_RELWITHDEBINFO=-O1 -g1" \
    -DCMAKE_UNITY_BUILD=ON -DLOCKSTEP_BUILD_BENCH=OFF -DCMAKE_EXE_LINKER_FLAGS=-no-pie >/dev/null
cmake --build "$BUILD" -j 2
fi
[ "$MODE" = build ] && exit 0
export ASAN_OPTIONS=detect_leaks=1:abort_on_error=1 UBSAN_OPTIONS=print_stacktrace=1:halt_on_error=1
export LSAN_OPTIONS=suppressions=$PWD/tools/lsan.supp
SDL_TESTS='frame is drawn|sdl_xvfb'
# e2e/overload steps 600 000 bodies in three processes on purpose; three times slower under
# ASan it measures the machine, not memory safety, so it runs in the main suite only. So do the
# sessions that hold each player's input latency and fills to bounds (net_latency, net_mixed,
# low_fps, two_bots, which holds late fills to zero): under ASan, two of them side by side on two cores miss a bound by 5-15 ms now and then.
# The in-process session that holds four clients' fills to zero and their lead under 20 ms
# ("reads its socket once per tick") is such a bound too.
# The package tests (e2e/installed, e2e/guide, e2e/embed_sdl, package/deb) build outside projects against
# the installed libraries, which carry no sanitizer flags for their users: they run in the main suite.
# bench/smoke runs every benchmark section once: under ASan it would time the sanitizer, and the
# code it measures runs under ASan in the unit, session and end-to-end tests.
# e2e/udp_flood holds the share of a 110 000-a-second flood the kernel drops (the server must
# read as fast as it comes): a rate bound; the datagram paths run under ASan in net/ and in
# e2e/hostile_udp.
# e2e/predict holds own input to screen within a tick and a frame, and the 30 Hz game loop holds
# its fills to zero: timing bounds too, in the main suite only. So is e2e/browser (a session's
# pace and fills held to bounds beside Chromium; the door's code runs under ASan in
# e2e/websocket_door, and the wasm client is not built with a sanitizer).
# e2e/gate_runtimes runs the C# and Python ports under Mono and CPython, which do not load the
# sanitizer's runtime first; their calls into the library run under ASan in e2e/bindings' Python.
# determinism/lint reads the simulation's object files, one per source file, as the tree the suite
# ships compiles them; this tree is a unity build (above), and its code is instrumented: it runs in
# the main suite.
# Four at once on two cores: these tests mostly wait on their sessions (sampled in a CI run at
# two at once: the processors 14-55 % busy, the pass 462 s for 860 s of tests), and none of them
# is held to a timing bound (those run in the main suite only, above).
# SDL dlopens its video drivers and unloads them at exit, so LeakSanitizer cannot attribute
# what they keep; the SDL tests run with every other check on but leak detection off, beside the
# others (after them, they were the pass's last 28 s, two tests alone).
ASAN_OPTIONS=detect_leaks=0:abort_on_error=1 ctest --test-dir "$BUILD" --output-on-failure -R "$SDL_TESTS" \
    >"$BUILD/sdl-tests.log" 2>&1 &
sdl=$!
trap 'kill $sdl 2>/dev/null || true' EXIT  # a failure of the others ends the pass, and these with it
ctest --test-dir "$BUILD" --output-on-failure -j 4 \
    -E "determinism/matrix|determinism/lint|e2e/gate_runtimes|fuzz/|docker/|bench/|package/|e2e/installed|e2e/guide|e2e/embed_sdl|e2e/predict|e2e/browser|a 30 Hz game loop|e2e/overload|e2e/net_latency|e2e/net_mixed|e2e/low_fps|e2e/two_bots|e2e/udp_flood|reads its socket once per tick|every 3rd tick through|$SDL_TESTS"
status=0
wait $sdl || status=$?
cat "$BUILD/sdl-tests.log"
exit $status
