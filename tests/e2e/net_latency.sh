#!/usr/bin/env bash
# The session keeps 100 Hz across internet latencies: 3 players through their own relays at
# 50 ms +- 10 ms with 2 % loss, then at 150 ms +- 30 ms with 5 % loss (one way, both ways).
# Everyone exits 0 with the server's hash log; each player's lead follows its own round trip.
source "$(dirname "$0")/lib.sh" "$1"
HERE=$(dirname "$0")
net_session at50 1500 "50 10 2" "50 10 2" "50 10 2"
python3 "$HERE/net_check.py" "$WORK/at50" 2 "50 10 2" "50 10 2" "50 10 2" || fail "50 ms session missed its goals"
net_session at150 1500 "150 30 5" "150 30 5" "150 30 5"
python3 "$HERE/net_check.py" "$WORK/at150" 2 "150 30 5" "150 30 5" "150 30 5" || fail "150 ms session missed its goals"
echo "PASS: full rate, fills and latency within bounds at 50 ms and 150 ms one way"
