#!/usr/bin/env bash
# Bad option values exit 2 with a message naming the option, for every executable: out of range,
# negative for an unsigned option, and not finite (nan, inf) for a real one. --help and --version exit 0.
source "$(dirname "$0")/lib.sh" "$1"
n=0
bad() {  # bad EXE OPTION ARGS...: EXE ARGS must exit 2 and name OPTION on stderr
  local exe=$1 opt=$2; shift 2
  "$BIN/$exe" "$@" >/dev/null 2>"$WORK/err"
  local rc=$?
  [ $rc = 2 ] || fail "$exe $*: exit $rc, expected 2"
  grep -q -- "$opt" "$WORK/err" || fail "$exe $*: the message does not name $opt: $(cat "$WORK/err")"
  n=$((n + 1))
}
for exe in lockstep-server lockstep-client lockstep-replay lockstep-netsim; do
  "$BIN/$exe" --help >/dev/null || fail "$exe --help"
  "$BIN/$exe" --version | grep -q "$exe" || fail "$exe --version"
done
bad lockstep-server --seed --seed -1
bad lockstep-server --players --players 0
bad lockstep-server --players --players 99
bad lockstep-server --ticks --ticks -5
bad lockstep-server --bodies --bodies -5
bad lockstep-server --input-delay --input-delay -1
bad lockstep-server --input-grace-ms --input-grace-ms nan
bad lockstep-server --input-grace-ms --input-grace-ms -1
bad lockstep-server --silent-drop-ms --silent-drop-ms inf
bad lockstep-server --port --port 70000
bad lockstep-server --on-desync --on-desync sometimes
bad lockstep-client --fps --fps nan
bad lockstep-client --fps --fps -1
bad lockstep-client --fps --fps inf
bad lockstep-client --bot --bot -1
bad lockstep-client --ticks --ticks -1
bad lockstep-client --render --render vga
bad lockstep-client --connect --connect nonsense
bad lockstep-replay --from trace x --from -3
bad lockstep-replay --to trace x --to nan
bad lockstep-netsim --delay --listen 1 --forward 127.0.0.1:1 --delay nan
bad lockstep-netsim --jitter --listen 1 --forward 127.0.0.1:1 --jitter -5
bad lockstep-netsim --loss --listen 1 --forward 127.0.0.1:1 --loss 101
bad lockstep-netsim --seed --listen 1 --forward 127.0.0.1:1 --seed -1
bad lockstep-netsim --duration --listen 1 --forward 127.0.0.1:1 --duration nan
echo "PASS: $n bad option values refused with exit 2 and the option named; --help and --version for all"
