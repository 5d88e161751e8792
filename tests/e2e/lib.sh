# Shared helpers for the end-to-end tests: real processes on loopback.
# Usage: source lib.sh <bin-dir>
set -u
BIN=${1:?bin dir}
WORK=$(mktemp -d "${TMPDIR:-/tmp}/lockstep-e2e.XXXXXX")
PIDS=()
cleanup() {
  [ -n "${WATCHDOG:-}" ] && { pkill -9 -P "$WATCHDOG"; kill -9 "$WATCHDOG"; } 2>/dev/null
  for p in "${PIDS[@]}"; do kill -9 "$p" 2>/dev/null; done
  if [ "${KEEP_WORK:-0}" = 1 ]; then echo "work dir kept: $WORK"; else rm -rf "$WORK"; fi
}
trap cleanup EXIT
# A block of 20 UDP ports no parallel test holds: PORT and the few above it that tests use. The
# blocks lie below Linux's ephemeral range (32768 and up), so no client socket can hold them, and
# below the benchmark smoke run's ports (28000 and up). A block is claimed with flock on a file
# per block, held by fd 9 of this script and its children: it is free again when they all exit,
# however they end.
PORT_LOCKS=/tmp/lockstep-e2e-ports
mkdir -p "$PORT_LOCKS"
for _ in $(seq 400); do
  block=$(( (RANDOM * 32768 + RANDOM + $$) % 399 ))
  exec 9>"$PORT_LOCKS/$block"
  flock -n 9 && break
  exec 9>&-
done
PORT=$(( 20000 + 20 * block ))
fail() { echo "FAIL: $*"; for f in "$WORK"/*.err; do [ -f "$f" ] && { echo "--- $f"; tail -n 20 "$f"; }; done; exit 1; }
# A test that hangs fails on its own before ctest's 120 s timeout, so its processes' logs are shown.
# LOCKSTEP_TIMEOUT_SCALE stretches it where every process runs slower on purpose (the sanitizer
# tree sets it, and stretches ctest's timeouts by the same factor: tests/CMakeLists.txt).
E2E_TIMEOUT=$(( ${E2E_TIMEOUT:-105} * ${LOCKSTEP_TIMEOUT_SCALE:-1} ))
trap 'fail "timed out after $E2E_TIMEOUT s"' USR1
( sleep "$E2E_TIMEOUT" && kill -USR1 $$ ) >/dev/null 2>&1 &
WATCHDOG=$!
disown "$WATCHDOG"
# json_check FILE EXPR [WHAT]: EXPR is a Python expression over the parsed JSON document `d`;
# the test fails (showing the document) when the file is not JSON or EXPR is false.
json_check() {
  python3 - "$@" <<'PY' || fail "${3:-$2} ($1)"
import json, sys
path, expr = sys.argv[1], sys.argv[2]
try:
    d = json.load(open(path))
except (OSError, ValueError) as e:
    sys.exit(f"{path}: not a JSON document: {e}")
if not eval(expr, {}, {"d": d}):
    sys.exit(f"{path}: {expr} is false in {json.dumps(d)[:3000]}")
PY
}
# json_get FILE EXPR: prints the value of a Python expression over the parsed JSON document `d`.
json_get() { python3 -c 'import json, sys; d = json.load(open(sys.argv[1])); print(eval(sys.argv[2]))' "$1" "$2"; }
# wait_tcp PORT [WHAT]: waits until something accepts TCP connections on 127.0.0.1:PORT (10 s,
# then fails): a server's WebSocket door or ops port before the first request, which unlike an
# ENet connect is not retried. A fixed sleep was too short under the sanitizers on a busy machine.
wait_tcp() {
  for _ in $(seq 200); do (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null && return 0; sleep 0.05; done
  fail "nothing accepted TCP connections on port $1${2:+ ($2)} within 10 s"
}
# Waits for pid $1 and checks its exit code is $2.
expect_exit() {
  local pid=$1 want=$2 what=$3 got
  wait "$pid"; got=$?
  [ "$got" = "$want" ] || fail "$what exited $got, expected $want"
  echo "ok: $what exited $got"
}
# Starts a --bot client named $1 with seed $2 (further options after them) against the server on
# $PORT; its hash log goes to $WORK/$1.log, its stderr to $WORK/$1.err, its pid to BOT_PID.
start_bot() {
  local name=$1 seed=$2
  shift 2
  "$BIN/lockstep-client" --connect "127.0.0.1:$PORT" --name "$name" --bot "$seed" --hash-log "$WORK/$name.log" "$@" \
      >/dev/null 2>"$WORK/$name.err" &
  BOT_PID=$!
  PIDS+=($BOT_PID)
}
# Runs a session of one bot client per SPEC ("DELAY JITTER LOSS": one-way ms, +- ms, percent;
# DELAY 0 = straight to the server), each through its own lockstep-netsim relay, for TICKS ticks.
# Everything lands in $WORK/$NAME: server.json/.log, c<i>.json/.log/.err; exits via fail() when
# a process exits non-zero or a hash log differs from the server's. NET_SERVER_ARGS and
# NET_CLIENT_ARGS add options to the server and every client (word-split).
net_session() {
  local name=$1 ticks=$2; shift 2
  local dir="$WORK/$name" port=$((PORT + 10 * ${NET_SESSIONS:-0})) i=0 spec p
  NET_SESSIONS=$((${NET_SESSIONS:-0} + 1))
  mkdir -p "$dir"
  "$BIN/lockstep-server" --port "$port" --players $# --ticks "$ticks" --hash-log "$dir/server.log" \
      --summary "$dir/server.json" ${NET_SERVER_ARGS:-} 2>"$dir/server.err" &
  local s=$! clients=() relays=()
  PIDS+=($s)
  for spec in "$@"; do
    i=$((i + 1)); set -- $spec
    p=$port
    if [ "$1" != 0 ]; then
      p=$((port + i))
      "$BIN/lockstep-netsim" --listen "$p" --forward "127.0.0.1:$port" --delay "$1" --jitter "$2" --loss "$3" \
          --seed "$i" --summary "$dir/ns$i.json" 2>"$dir/ns$i.err" &
      relays+=($!); PIDS+=($!)
    fi
    "$BIN/lockstep-client" --connect "127.0.0.1:$p" --name "p$i" --bot "$i" --hash-log "$dir/c$i.log" \
        --summary "$dir/c$i.json" ${NET_CLIENT_ARGS:-} 2>"$dir/c$i.err" &
    clients+=($!); PIDS+=($!)
  done
  for c in "${!clients[@]}"; do expect_exit "${clients[$c]}" 0 "$name client $((c + 1))"; done
  expect_exit $s 0 "$name server"
  for r in "${relays[@]}"; do kill -INT "$r"; wait "$r"; done
  for c in $(seq $i); do cmp -s "$dir/server.log" "$dir/c$c.log" || fail "$name: client $c hash log differs"; done
  [ "$(wc -l <"$dir/server.log")" = "$ticks" ] || fail "$name: server hash log length"
}
# The games of tests/embed on the C session API, each owning its walkers world (LIBDIR: the
# libraries; BID: the walkers module's build id; walkers_games sets both, and LIB, the module).
walkers_games() {
  LIB="$BIN/libwalkers.so"
  LIBDIR="$(cd "$BIN/../lib" && pwd)"
  BID=$(cat "$BIN/walkers.build_id")
  export LD_LIBRARY_PATH="$LIBDIR"
}
# start_py_game PORT: the Python game "pygame" (seed 3) against PORT; hash log $WORK/py.log, pid PY_PID.
# Under AddressSanitizer the library needs the sanitizer's runtime loaded first into Python, which
# is not built with it; Python's own allocations are not this project's to leak-check.
# py_with_lib ARGS: python3 ARGS, able to load $LIBDIR's libraries with ctypes (under ASan too).
# The source tree's Python package (bindings/python: import lockstep) is on the path (or the one
# in $PY_PATH), with $LIBDIR's libraries.
py_with_lib() {
  local asan env=(env PYTHONPATH="${PY_PATH:-$(cd "$(dirname "${BASH_SOURCE[0]}")/../../bindings/python" && pwd)}" LOCKSTEP_LIBDIR="$LIBDIR")
  asan=$(ldd "$LIBDIR/liblockstep_net.so" 2>/dev/null | grep -o '/[^ ]*libasan[^ ]*' | head -1)
  [ -n "$asan" ] && env+=(LD_PRELOAD="$asan" ASAN_OPTIONS=detect_leaks=0:abort_on_error=1)
  "${env[@]}" python3 "$@"
}
# cs_ready: the C# game and Mono are here (CMake built them where it found mcs), and the libraries
# are not built with AddressSanitizer (Mono does not load its runtime first). cs_with_lib ARGS:
# mono ARGS with $LIBDIR's libraries, as a Unity or Godot player finds its native plugin.
cs_ready() {
  [ -f "$BIN/cs_player.exe" ] && command -v mono >/dev/null && ! ldd "$LIBDIR/liblockstep_net.so" 2>/dev/null | grep -q libasan
}
cs_with_lib() {
  env LD_LIBRARY_PATH="$LIBDIR" mono "$@"
}
start_py_game() {
  py_with_lib "$(dirname "${BASH_SOURCE[0]}")/../embed/py_player.py" "$LIBDIR" 127.0.0.1 "$1" pygame 3 \
      "$WORK/py.log" "$BID" 2>"$WORK/py.err" &
  PY_PID=$!
  PIDS+=($PY_PID)
}
# rejoin_c_game PID PORT [ARGS...]: the C game "cgame" (pid PID, hash log $WORK/c1.log, its rejoin
# secret kept in $WORK/secret) goes down at about tick 700 and comes back against PORT with its
# secret (and ARGS); hash log $WORK/c2.log, pid C2_PID.
rejoin_c_game() {
  for _ in $(seq 600); do [ "$( (wc -l <"$WORK/c1.log") 2>/dev/null || echo 0)" -ge 700 ] && break; sleep 0.05; done
  kill -9 "$1"; wait "$1" 2>/dev/null
  [ -s "$WORK/secret" ] || fail "the C game did not keep its rejoin secret (JOINED event)"
  sleep 0.5
  "$BIN/lockstep-c-player" 127.0.0.1 "$2" cgame 2 "$WORK/c2.log" --rejoin-file "$WORK/secret" "${@:3}" 2>"$WORK/c2.err" &
  C2_PID=$!
  PIDS+=($C2_PID)
}
# view_page HTML NAME: opens a viewer page in headless Chromium (a real browser, as a reader opens
# a CI artifact). Writes $WORK/NAME.dom (the DOM after the page's script ran), $WORK/NAME.png (a
# screenshot) and $WORK/NAME.console (the browser's log, the page's console with it); fails when
# the page reports an error, logs to its console, draws nothing, or its screenshot is blank.
view_page() {
  local page=$1 name=$2
  command -v chromium >/dev/null || fail "chromium is not installed (./quickstart test installs it)"
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome-$name"
               --enable-logging=stderr --v=0)
  timeout 60 chromium "${flags[@]}" --dump-dom "file://$page" >"$WORK/$name.dom" 2>"$WORK/$name.console" \
    || fail "chromium could not open $page"
  timeout 60 chromium "${flags[@]}" --window-size=1300,1600 --screenshot="$WORK/$name.png" "file://$page" \
    >/dev/null 2>>"$WORK/$name.console" || fail "chromium could not take a screenshot of $page"
  grep -q 'data-status="ok"' "$WORK/$name.dom" \
    || fail "the page did not render without error: $(grep -o '<body[^>]*>' "$WORK/$name.dom")"
  if grep -E ':CONSOLE\(|Uncaught' "$WORK/$name.console" | grep -q .; then
    fail "the page logged to its console: $(grep -E ':CONSOLE\(|Uncaught' "$WORK/$name.console" | head -3)"
  fi
  local drawn
  drawn=$(grep -o 'data-drawn-shapes="[0-9]*"' "$WORK/$name.dom" | grep -o '[0-9]*')
  [ "${drawn:-0}" -gt 0 ] || fail "the world drawing of $page is blank ($drawn shapes drawn)"
  /usr/bin/python3 - "$WORK/$name.png" "$(dirname "${BASH_SOURCE[0]}")" <<'PY' || fail "the screenshot of $page is blank"
import sys
sys.path.insert(0, sys.argv[2])
import page_png as png
width, _, _, _, raw = png.read(sys.argv[1])
# Rows of filtered bytes: a blank page filters to a few distinct values; a drawn one to many.
sys.exit(0 if len(set(raw)) > 64 and width > 0 else 1)
PY
}
# phone_fits HTML NAME: the viewer page laid out 390 px wide (a phone's width; the page's #width=390,
# since a headless window is at least 500 px) fits it, nothing to pan sideways; leaves
# $WORK/NAME-phone.png, a screenshot of it.
phone_fits() {
  local page=$1 name=$2 widths
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome-$name-phone" --window-size=500,844)
  timeout 60 chromium "${flags[@]}" --dump-dom "file://$page#width=390" >"$WORK/$name-phone.dom" 2>/dev/null || fail "chromium could not open $page"
  timeout 60 chromium "${flags[@]}" --screenshot="$WORK/$name-phone.png" "file://$page#width=390" >/dev/null 2>&1 ||
    fail "chromium could not take a phone-sized screenshot of $page"
  widths=$(grep -o 'data-page-width="[0-9]*" data-window-width="[0-9]*"' "$WORK/$name-phone.dom" | grep -o '[0-9]*' | tr '\n' ' ')
  read -r page_w window_w <<<"$widths"
  [ "${window_w:-}" = 390 ] || fail "the page was not laid out 390 px wide ($widths)"
  [ "$page_w" -le "$window_w" ] || fail "$page is $page_w px wide in a $window_w px window: a phone pans sideways"
}
# page_commands HTML [LIBRARY]: runs every command the page's "Replay to it" offers as a reader
# pastes it (in the directory of the page, where the file it names is; LIBRARY standing for the
# module's file); each must end with 0 or 3 (3: it found the difference), never a usage or file
# error.
page_commands() {
  local page=$1 lib=${2:-} dir bin n=0 cmd line rc
  dir=$(cd "$(dirname "$page")" && pwd)
  bin=$(cd "$BIN" && pwd)
  [ -z "$lib" ] || lib=$(realpath "$lib")
  while IFS= read -r cmd; do
    [ -n "$cmd" ] || continue
    line=${cmd/#lockstep-replay/$bin/lockstep-replay}
    line=${line//LIBRARY/$lib}
    (cd "$dir" && eval "$line") >"$WORK/page-cmd.out" 2>"$WORK/page-cmd.log"
    rc=$?
    [ $rc = 0 ] || [ $rc = 3 ] || fail "the page's command ended with $rc: $cmd: $(tail -n 2 "$WORK/page-cmd.log")"
    n=$((n + 1))
  done < <(/usr/bin/python3 - "$page" <<'PY'
import json, re, sys
text = open(sys.argv[1], encoding="utf-8").read()
m = re.search(r'<script id="page-data" type="application/json">(.*?)</script>', text, re.S)
for c in json.loads(m.group(1))["commands"]:
    print(c)
PY
)
  [ $n -gt 0 ] || fail "$page offers no command"
  echo "ok: the $n commands $(basename "$page") offers ran as written"
}
# strict_csp_page HTML NAME: the page served as Jenkins serves an artifact, under its default
# Content-Security-Policy (no script, no inline style), by a small server, in Chromium: no script
# runs, and the headline, the tables and the drawing are there all the same. Leaves
# $WORK/NAME-csp.png, a screenshot, and $WORK/NAME-csp.dom.
strict_csp_page() {
  local page=$1 name=$2 port=$((PORT + 17)) server
  /usr/bin/python3 - "$(dirname "$page")" "$port" >"$WORK/csp-server.log" 2>&1 <<'PY' &
import functools, http.server, sys
class Strict(http.server.SimpleHTTPRequestHandler):
    def end_headers(self):
        # Jenkins's default (hudson.model.DirectoryBrowserSupport.CSP).
        self.send_header("Content-Security-Policy", "sandbox; default-src 'none'; img-src 'self'; style-src 'self';")
        super().end_headers()
http.server.ThreadingHTTPServer(("127.0.0.1", int(sys.argv[2])), functools.partial(Strict, directory=sys.argv[1])).serve_forever()
PY
  server=$!
  PIDS+=("$server")
  local url="http://127.0.0.1:$port/$(basename "$page")" i
  for i in $(seq 50); do curl -sf -o /dev/null "$url" && break; sleep 0.1; done
  curl -sfI "$url" | grep -qi "content-security-policy: sandbox" || fail "the small server does not serve $page with Jenkins's policy"
  local flags=(--headless --no-sandbox --disable-gpu --no-first-run --user-data-dir="$WORK/chrome-$name-csp")
  timeout 60 chromium "${flags[@]}" --dump-dom "$url" >"$WORK/$name-csp.dom" 2>/dev/null || fail "chromium could not open $url"
  timeout 60 chromium "${flags[@]}" --window-size=1300,1600 --screenshot="$WORK/$name-csp.png" "$url" >/dev/null 2>&1 ||
    fail "chromium could not take a screenshot of $url"
  kill "$server" 2>/dev/null
  ! grep -q 'data-status=' "$WORK/$name-csp.dom" || fail "the page's script ran under Jenkins's policy"
  grep -q 'id="headline"' "$WORK/$name-csp.dom" && grep -q '<svg id="timeline"' "$WORK/$name-csp.dom" &&
    grep -q '<figure class="view"' "$WORK/$name-csp.dom" && grep -q '<table' "$WORK/$name-csp.dom" ||
    fail "without script the page lacks its headline, timeline, drawing or tables"
  /usr/bin/python3 - "$WORK/$name-csp.png" "$(dirname "${BASH_SOURCE[0]}")" <<'PY' || fail "the screenshot of $page under Jenkins's policy is blank"
import sys
sys.path.insert(0, sys.argv[2])
import page_png as png
width, _, _, _, raw = png.read(sys.argv[1])
sys.exit(0 if len(set(raw)) > 64 and width > 0 else 1)
PY
}
# expect_window_log FILE PATTERN SOURCE_RE: an attack is logged once a window (10 s) in FILE, in
# one to three lines matching PATTERN, each naming a source matching SOURCE_RE.
expect_window_log() {
  local file=$1 pattern=$2 source=$3 lines
  lines=$(grep -c "$pattern" "$file")
  [ "$lines" -ge 1 ] && [ "$lines" -le 3 ] || fail "'$pattern' was logged in $lines lines, not once a window"
  grep "$pattern" "$file" | grep -qE "(the most from|from many sources,) $source" || fail "'$pattern' names no source"
  grep "$pattern" "$file" | head -n 1
}
