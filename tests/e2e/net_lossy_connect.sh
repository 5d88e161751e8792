#!/usr/bin/env bash
# Connecting and playing through a very bad link: 3 players, each through its own relay at 60 ms
# one way with 40 % loss both ways. Every client connects (retrying for up to 20 s), plays all
# 1000 ticks and exits 0 with the server's hash log.
source "$(dirname "$0")/lib.sh" "$1"
net_session lossy 1000 "60 0 40" "60 0 40" "60 0 40"
python3 - "$WORK/lossy" <<'PY' || fail "figures"
import json, sys
d = sys.argv[1]
s = json.load(open(f"{d}/server.json"))
print(f"40 % loss: {s['ticks_per_second_after_2s']} ticks/s after 2 s, {s['filled_inputs']} inputs filled")
for i in (1, 2, 3):
    c = json.load(open(f"{d}/c{i}.json"))
    print(f"  p{i}: {c['connect_attempts']} connection attempts, latency p50 {c['latency_us']['p50'] / 1000} ms, filled {c['inputs_filled']}")
sys.exit(0 if s["ticks_per_second_after_2s"] >= 95 else 1)
PY
echo "PASS: every client connected through 40 % loss and finished hash-equal"
