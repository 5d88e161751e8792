#!/usr/bin/env python3
"""Hostile WebSocket peers against a server's WebSocket door, while native players play.

  websocket_abuse.py HOST PORT OUT.json [OTHER_ADDRESS]

OTHER_ADDRESS: this machine's address other than loopback (which the door exempts from its
per-address bound), for the per-address check; without it that check is skipped.

Each attack is one connection (or a few) that does one bad thing; what the door answered is
written to OUT.json for the test to check: a close code and reason, or the time the server took
to cut it off. Uses python3-websockets (Debian) and plain sockets.
"""
import asyncio, json, os, socket, sys, time

import websockets

HOST, PORT, OUT = sys.argv[1], int(sys.argv[2]), sys.argv[3]
OTHER = sys.argv[4] if len(sys.argv) > 4 else ""
URL = f"ws://{HOST}:{PORT}/"
result = {}


async def closed_with(coro):
    """Runs an attack; returns the close code and reason the server sent (or the exception)."""
    try:
        await asyncio.wait_for(coro, 15)
        return {"code": None, "reason": "not closed"}
    except websockets.ConnectionClosed as e:
        return {"code": e.rcvd.code if e.rcvd else None, "reason": e.rcvd.reason if e.rcvd else ""}
    except Exception as e:  # refused at the handshake, reset, timed out
        return {"code": None, "reason": f"{type(e).__name__}: {e}"}


async def text_frame():
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        await ws.send("hello")
        await ws.recv()


async def oversized():
    async with websockets.connect(URL, subprotocols=["lockstep"], max_size=None) as ws:
        await ws.send(b"\x00" + bytes(100_000))
        await ws.recv()


async def oversized_in_fragments():
    async with websockets.connect(URL, subprotocols=["lockstep"], max_size=None) as ws:
        await ws.send([b"\x00" + bytes(20_000)] + [bytes(20_000)] * 4)
        await ws.recv()


async def fragmented_small():
    # A small message in three fragments: put together by the door, then refused by the session
    # as not a protocol message; a peer that has not joined is closed at once for it (after the
    # Kick that says why).
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        await ws.send([b"\x00\x01", b"\x02\x03", b"\x04"])
        while True:
            await ws.recv()


async def flood():
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        for _ in range(5000):
            await ws.send(b"\x01" + bytes(8))
        await ws.recv()


async def pings_without_end():
    # Never joins; only pings: the session's join timeout ends it.
    async with websockets.connect(URL, subprotocols=["lockstep"], ping_interval=None) as ws:
        start = time.monotonic()
        while time.monotonic() - start < 14:
            await ws.ping()
            await asyncio.sleep(0.005)
        await ws.recv()


async def no_subprotocol():
    async with websockets.connect(URL) as ws:
        await ws.recv()


async def other_subprotocols():
    async with websockets.connect(URL, subprotocols=["chat", "superchat"]) as ws:
        await ws.recv()


OFFER = ("v=0\r\no=- 1 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\n"
         "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n"
         "a=ice-ufrag:abcd\r\na=ice-pwd:abcdefghijklmnopqrstuvwx\r\n"
         "a=fingerprint:sha-256 " + ":".join(["AB"] * 32) + "\r\na=setup:actpass\r\na=mid:0\r\na=sctp-port:5000\r\n")


async def bad_offer():
    """Signalling that is not an offer: answered with a refusal and its reason, the connection kept."""
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        await ws.send(b"\x02" + b"not an SDP offer \xff\x00")
        while True:
            m = await asyncio.wait_for(ws.recv(), 5)
            if isinstance(m, bytes) and m[:1] == b"\x02":
                return {"kind": m[1:2].decode(), "reason": m[2:].decode(errors="replace")}


async def offers_flood():
    """More offers than a connection may make: each answered in turn, then the connection closed."""
    answers = 0
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        for _ in range(12):
            await ws.send(b"\x02" + OFFER.encode())
        while True:
            m = await ws.recv()
            if isinstance(m, bytes) and m[:2] == b"\x02a":
                answers += 1
                result["offers_answered"] = answers


async def udp_garbage():
    """A good offer, then junk at the port its answer names instead of ICE: dropped; the channel
    never opens and is closed with its connection."""
    async with websockets.connect(URL, subprotocols=["lockstep"]) as ws:
        await ws.send(b"\x02" + OFFER.encode())
        while True:
            m = await asyncio.wait_for(ws.recv(), 5)
            if isinstance(m, bytes) and m[:1] == b"\x02":
                break
        if m[:2] != b"\x02a":
            return {"answer": m.decode(errors="replace")}
        lines = [l.split() for l in m[2:].decode().split("\r\n") if l.startswith("a=candidate:")]
        ports = {(l[4], int(l[5])) for l in lines}
        s = socket.socket(socket.AF_INET, socket.SOCK_DGRAM)
        sent = 0
        for host, port in ports:
            for i in range(200):
                size = [1, 20, 1200, 1500, 9000][i % 5]
                first = [0, 1, 22, 23, 128][i % 5]  # STUN-like, DTLS-like, other
                s.sendto(bytes([first]) + os.urandom(size - 1), (host, port))
                sent += 1
        s.close()
        return {"candidates": len(ports), "sent": sent}


def slow_loris(count=3):
    """Upgrade requests sent a byte a second, never finished: how long until the door cuts each."""
    socks = []
    request = f"GET / HTTP/1.1\r\nHost: {HOST}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n".encode()
    for _ in range(count):
        s = socket.create_connection((HOST, PORT))
        s.setblocking(False)
        socks.append([s, None])
    start = time.monotonic()
    i = 0
    while time.monotonic() - start < 15 and any(t is None for _, t in socks):
        for entry in socks:
            s, t = entry
            if t is not None:
                continue
            try:
                s.send(request[i % len(request):i % len(request) + 1])
                data = s.recv(100)
                if data == b"":
                    entry[1] = time.monotonic() - start
            except BlockingIOError:
                pass
            except OSError:
                entry[1] = time.monotonic() - start
        i += 1
        time.sleep(0.5)
    for s, _ in socks:
        s.close()
    return [t for _, t in socks]


def per_address(host, count=12):
    """Idle connections from one address: how many the door keeps open."""
    socks = [socket.create_connection((host, PORT)) for _ in range(count)]
    time.sleep(0.5)
    open_ = 0
    for s in socks:
        s.setblocking(False)
        try:
            open_ += 0 if s.recv(1) == b"" else 1
        except BlockingIOError:
            open_ += 1
        except OSError:
            pass
    for s in socks:
        s.close()
    return open_


async def main():
    if OTHER:
        result["per_address_open"] = per_address(OTHER)
    result["loopback_open"] = per_address(HOST, 10)
    await asyncio.sleep(0.5)
    result["text"] = await closed_with(text_frame())
    result["oversized"] = await closed_with(oversized())
    result["oversized_in_fragments"] = await closed_with(oversized_in_fragments())
    result["flood"] = await closed_with(flood())
    result["no_subprotocol"] = await closed_with(no_subprotocol())
    result["other_subprotocols"] = await closed_with(other_subprotocols())
    t0 = time.monotonic()
    fragments = await closed_with(fragmented_small())
    result["fragmented_small"] = dict(fragments, seconds=round(time.monotonic() - t0, 2))
    t0 = time.monotonic()
    result["pings_without_end"] = dict(await closed_with(pings_without_end()), seconds=round(time.monotonic() - t0, 1))
    result["slow_loris_seconds"] = await asyncio.get_running_loop().run_in_executor(None, slow_loris)
    # The datagram path's signalling (the server runs with --webrtc).
    result["bad_offer"] = await bad_offer()
    result["offers_flood"] = await closed_with(offers_flood())
    result["udp_garbage"] = await udp_garbage()


asyncio.run(main())
json.dump(result, open(OUT, "w"), indent=1)
print(json.dumps(result))
