#!/usr/bin/python3
"""Checks one session run by lib.sh's net_session against the goals of a session on a real path.

Usage: net_check.py DIR INPUT_DELAY SPEC...   (SPEC as given to net_session: "DELAY JITTER LOSS")
Each player: its inputs filled at most 0.5 % of the time, plus one for each datagram its relay
itself handed on more than 10 ms late (ns<i>.json `late`: the relay's process held up by a busy
machine, which no session can make up for; the count is printed); its input latency p50 within
round trip + input delay + 2 x jitter + 15 ms (round trip = 2 x one-way delay); the loss the
session reports each way (the server's seat `loss` up, the client's `loss` down) within 2 points
of what its relay dropped that way (ns<i>.json). The session: at least 99 % of 100 ticks/s after
its first 2 s. Prints the figures; exit 1 on a miss.
"""
import json
import sys

d, delay_ticks, specs = sys.argv[1], int(sys.argv[2]), sys.argv[3:]
server = json.load(open(f"{d}/server.json"))
ok = True
tps = server["ticks_per_second_after_2s"]
print(f"{d}: {tps:.2f} ticks/s after 2 s, {server['filled_inputs']} inputs filled")
if tps < 99.0:
    print(f"FAIL: {tps} ticks/s after 2 s")
    ok = False
ticks = server["ticks"]
for i, spec in enumerate(specs, start=1):
    delay, jitter, loss = (float(x) for x in spec.split())
    c = json.load(open(f"{d}/c{i}.json"))
    seat = next(s for s in server["seats"] if s["name"] == f"p{i}")
    rtt = 2 * delay
    bound = rtt + delay_ticks * 10 + 2 * jitter + 15
    p50 = c["latency_us"]["p50"] / 1000
    fills = c["inputs_filled"]
    relay_late = 0
    if delay > 0:
        ns = json.load(open(f"{d}/ns{i}.json"))
        relay_late = ns["up"].get("late", 0) + ns["down"].get("late", 0)
    print(f"  p{i} ({spec}): latency p50 {p50:.1f} ms (bound {bound:.0f}), p99 {c['latency_us']['p99'] / 1000:.1f} ms, "
          f"lead {c['lead_us'] / 1000:.1f} ms, filled {fills} {seat['fills']}")
    if seat["hashes_checked"] != ticks:
        print(f"FAIL: p{i}'s hashes were checked only to tick {seat['hashes_checked']} of {ticks}")
        ok = False
    if relay_late:
        print(f"    the relay handed on {relay_late} datagrams more than 10 ms late "
              f"(up to {max(ns['up']['max_late_ms'], ns['down']['max_late_ms']):.1f} ms): the machine was busy")
    if fills > 0.005 * ticks + relay_late:
        print(f"FAIL: p{i} had {fills} inputs filled (> 0.5 % of {ticks}, + {relay_late} the relay held up)")
        ok = False
    if p50 > bound:
        print(f"FAIL: p{i} latency p50 {p50} ms > {bound} ms")
        ok = False
    if delay > 0:  # through a relay: the loss the session reports follows what the relay dropped
        dropped_up = 100 * ns["up"]["lost"] / max(1, ns["up"]["in"])
        dropped_down = 100 * ns["down"]["lost"] / max(1, ns["down"]["in"])
        up, down = 100 * seat["loss"], 100 * c["loss"]
        print(f"    loss up {up:.2f} % (relay dropped {dropped_up:.2f} %), down {down:.2f} % (dropped {dropped_down:.2f} %)")
        # What the relay held up may arrive too late to count: it widens the tolerance.
        late_up = 100 * ns["up"].get("late", 0) / max(1, ns["up"]["in"])
        late_down = 100 * ns["down"].get("late", 0) / max(1, ns["down"]["in"])
        if abs(up - dropped_up) > 2 + late_up or abs(down - dropped_down) > 2 + late_down:
            print(f"FAIL: p{i}'s reported loss is not what its relay dropped")
            ok = False
sys.exit(0 if ok else 1)
