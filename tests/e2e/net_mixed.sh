#!/usr/bin/env bash
# A far player never slows or delays the others: a session of a direct player, one at 25 ms and
# one at 250 ms (+- 20 %) keeps 100 Hz, and the direct player's input latency stays within 15 ms
# of the same session without the far player.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(dirname "$0")
net_session mixed 1500 "0 0 0" "25 5 0" "250 50 0"
python3 "$HERE/net_check.py" "$WORK/mixed" 2 "0 0 0" "25 5 0" "250 50 0" || fail "mixed session missed its goals"
net_session near 1500 "0 0 0" "25 5 0"
python3 "$HERE/net_check.py" "$WORK/near" 2 "0 0 0" "25 5 0" || fail "near session missed its goals"
python3 - "$WORK" <<'PY' || fail "the far player delayed the direct one"
import json, sys
w = sys.argv[1]
with_far = json.load(open(f"{w}/mixed/c1.json"))["latency_us"]["p50"] / 1000
without = json.load(open(f"{w}/near/c1.json"))["latency_us"]["p50"] / 1000
print(f"direct player's latency p50: {with_far:.1f} ms with the far player, {without:.1f} ms without")
sys.exit(0 if abs(with_far - without) <= 15 else 1)
PY
echo "PASS: the far player leaves the near ones' pace and latency alone"
