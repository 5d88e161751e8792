#!/usr/bin/env python3
"""Slow and stalled handshakes against a server's WebSocket door, and good upgrades among them.

  websocket_handshakes.py HOST PORT OUT.json [--tls] [--count N] [--good K]

N connections (1000 by default), from as many loopback addresses as it takes at four each
(127.0.1.1, 127.0.1.2, ...), each send an unfinished handshake a byte every half second: an
upgrade request without its end, or with --tls a TLS ClientHello without its end. Each one the
door closes is opened again at once. With the attack running, K good clients (5) upgrade to the
lockstep subprotocol one after another; OUT.json gets the seconds each took (None: it never got
in within 10 s), the attack's figures (connections opened, closed by the door) and how many of its
connections were open when the first good client began.
"""
import argparse, asyncio, json, resource, socket, ssl, threading, time

import websockets

ap = argparse.ArgumentParser()
ap.add_argument("host")
ap.add_argument("port", type=int)
ap.add_argument("out")
ap.add_argument("--tls", action="store_true")
ap.add_argument("--count", type=int, default=1000)
ap.add_argument("--good", type=int, default=5)
args = ap.parse_args()

soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
resource.setrlimit(resource.RLIMIT_NOFILE, (min(hard, max(soft, args.count + 256)), hard))

if args.tls:
    # A TLS record header of a ClientHello that promises 512 bytes, then its first bytes: the
    # door's TLS layer waits for the rest.
    SLOW = bytes([0x16, 0x03, 0x01, 0x02, 0x00, 0x01, 0x00, 0x01, 0xFC, 0x03, 0x03]) + bytes(range(64))
else:
    SLOW = (f"GET / HTTP/1.1\r\nHost: {args.host}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
            "Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: lockstep\r\n").encode()

stop = threading.Event()
stats = {"opened": 0, "closed_by_door": 0, "open_at_first_good": 0}
open_now = [0]


def source(i):
    return f"127.0.{1 + i // (4 * 250)}.{1 + (i // 4) % 250}"


def attack():
    conns = [None] * args.count  # [socket, bytes sent, next send time]

    def opening(i):
        s = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
        s.setblocking(False)
        try:
            s.bind((source(i), 0))
        except OSError:
            pass
        s.connect_ex((args.host, args.port))
        stats["opened"] += 1
        return [s, 0, time.monotonic() + 0.05]

    for i in range(args.count):
        conns[i] = opening(i)
    while not stop.is_set():
        now = time.monotonic()
        alive = 0
        for i, c in enumerate(conns):
            s = c[0]
            closed = False
            try:
                if s.recv(4096) == b"":
                    closed = True
            except BlockingIOError:
                pass
            except OSError:
                closed = True
            if not closed and now >= c[2]:
                try:
                    s.send(SLOW[c[1] % len(SLOW):c[1] % len(SLOW) + 1])
                    c[1] += 1
                    c[2] = now + 0.5
                except BlockingIOError:
                    c[2] = now + 0.5
                except OSError:
                    closed = True
            if closed:
                s.close()
                stats["closed_by_door"] += 1
                conns[i] = opening(i)
            else:
                alive += 1
        open_now[0] = alive
        time.sleep(0.02)
    for c in conns:
        c[0].close()


async def good_upgrade():
    scheme = "wss" if args.tls else "ws"
    ctx = None
    if args.tls:
        ctx = ssl.create_default_context()
        ctx.check_hostname, ctx.verify_mode = False, ssl.CERT_NONE
    t0 = time.monotonic()
    try:
        async with websockets.connect(f"{scheme}://{args.host}:{args.port}/", subprotocols=["lockstep"], ssl=ctx,
                                      open_timeout=10) as ws:
            assert ws.subprotocol == "lockstep"
            return round(time.monotonic() - t0, 3)
    except Exception as e:  # refused, reset or timed out: it never got in
        print(f"good upgrade failed: {type(e).__name__}: {e}")
        return None


async def main():
    attacker = threading.Thread(target=attack)
    attacker.start()
    await asyncio.sleep(3)  # every attacking connection open and stalled
    stats["open_at_first_good"] = open_now[0]
    times = []
    for _ in range(args.good):
        times.append(await good_upgrade())
        await asyncio.sleep(0.5)
    stop.set()
    attacker.join()
    return times


good = asyncio.run(main())
result = dict(stats, good_seconds=good, tls=args.tls, count=args.count)
json.dump(result, open(args.out, "w"), indent=1)
print(json.dumps(result))
