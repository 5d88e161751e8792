#!/usr/bin/python3
"""Reads a lockstep-netsim capture (pcap, raw IPv4) and tells what an observer on the path could
read: whether any of the given secrets appears in it (raw or as hex text), and how much of the
clients' play messages is readable structure.

Usage: sealed_capture.py CAPTURE.pcap SECRET_FILE...
A SECRET_FILE holds one secret: a token file (its two connection keys are the secrets), a key
file (64 hex digits), or any text (a name, a rejoin secret). Prints JSON:
  {"datagrams": N, "found": [what, ...], "play_messages": M, "common_prefix_share": S,
   "lsk1_messages": K}
where common_prefix_share is the share of the client->server play messages (ENet unsequenced
sends) whose bytes 2..9 are the most common such 8 bytes: a FlatBuffers message in the clear
repeats its framing in nearly every message; sealed bytes look random. lsk1_messages counts the
distinct messages in the clear (a FlatBuffers Message starts "....LSK1"), each once however
often ENet sent it again.
"""
import collections
import json
import struct
import sys

cap, secret_files = sys.argv[1], sys.argv[2:]
data = open(cap, "rb").read()
magic = struct.unpack_from("<I", data, 0)[0]
assert magic == 0xA1B2C3D4, "not a pcap file in this machine's byte order"
datagrams = []  # (src port, dst port, payload)
at = 24
while at + 16 <= len(data):
    _, _, incl, _ = struct.unpack_from("<IIII", data, at)
    pkt = data[at + 16: at + 16 + incl]
    at += 16 + incl
    sport, dport = struct.unpack_from("!HH", pkt, 20)
    datagrams.append((sport, dport, pkt[28:]))

secrets = []
for path in secret_files:
    raw = open(path, "rb").read()
    if raw[:4] == b"LSCT":
        n = raw[5]
        keys = raw[44 + 6 * n: 44 + 6 * n + 64]
        secrets += [(path + " client-to-server key", keys[:32]), (path + " server-to-client key", keys[32:])]
    else:
        text = raw.strip()
        secrets.append((path, text))
        if len(text) == 64:
            try:
                secrets.append((path + " (bytes)", bytes.fromhex(text.decode())))
            except ValueError:
                pass
found = []
blob = b"".join(d[2] for d in datagrams)
for what, s in secrets:
    if s and (s in blob or s.hex().encode() in blob):
        found.append(what)


def unsequenced(d):
    """Payloads of ENet 1.3 unsequenced sends (command 9) in one datagram."""
    out = []
    if len(d) < 2:
        return out
    peer = struct.unpack_from("!H", d, 0)[0]
    if peer & 0x4000:
        return out
    i = (4 if peer & 0x8000 else 2) + 4  # the peer field, the sent time if flagged, the check (PROTOCOL.md §1.1)
    sizes = {1: 8, 2: 48, 3: 44, 4: 8, 5: 4, 6: 6, 7: 8, 8: 24, 9: 8, 10: 12, 11: 16, 12: 24}
    while i + 4 <= len(d):
        cmd = d[i] & 0x0F
        size = sizes.get(cmd)
        if size is None or i + size > len(d):
            return out
        n = 0
        if cmd == 6:
            n = struct.unpack_from("!H", d, i + 4)[0]
        elif cmd in (7, 9):
            n = struct.unpack_from("!H", d, i + 6)[0]
        elif cmd in (8, 12):
            n = struct.unpack_from("!H", d, i + 8)[0]
        if cmd == 9:
            out.append(d[i + size: i + size + n])
        i += size + n
    return out


server_ports = collections.Counter(d[1] for d in datagrams)
server_port = server_ports.most_common(1)[0][0] if datagrams else 0
play = [p for d in datagrams if d[1] == server_port for p in unsequenced(d[2]) if len(p) >= 10]
prefixes = collections.Counter(p[2:10] for p in play)
share = prefixes.most_common(1)[0][1] / len(play) if play else 0.0
print(json.dumps({"datagrams": len(datagrams), "found": found, "play_messages": len(play),
                  "common_prefix_share": round(share, 4),
                  # Messages in the clear, each counted once however often ENet sent it again.
                  "lsk1_messages": len({d[2][d[2].find(b"LSK1"):] for d in datagrams if b"LSK1" in d[2]})}))
