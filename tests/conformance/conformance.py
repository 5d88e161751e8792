#!/usr/bin/python3
"""A lockstep client written from docs/PROTOCOL.md alone, in Python, against the C++ server.

Usage: conformance.py BIN_DIR WORK_DIR PORT

Uses Debian's python3-enet, python3-flatbuffers and python3-nacl (libsodium), and Python code that
`flatc --python` generates from schemas/*.fbs into WORK_DIR at run time (never committed). Five parts:
  1. refusals: every refused join of the spec gets its documented Refuse reason;
  2. spectator: joins a session of two C++ bots, acknowledges frames, and every frame it received
     equals the server's replay file, tick by tick;
  3. a player that sends inputs but never a state hash is dropped with the documented reason
     ("hash silence", told by a Kick message) while the bots play on hash-equal;
  4. a player that steps the simulation itself through the C API (lockstep.h, loaded with
     ctypes from the build's liblockstep_core.so): it joins beside two C++ bots, sends inputs of
     its own, executes every confirmed frame (commands included), reports its real state hashes,
     and must stay hash-equal with the server and the bots to the last tick, for both built-in
     games;
  5. a player that joins with a connect token (§4.6, §4.7): it reads its token file, sends the
     ConnectRequest, derives the connection's keys from the ConnectChallenge, seals everything it
     sends and opens everything it receives (replay window included), and plays as part 4 does
     beside two C++ bots holding tokens of their own; a forged and a replayed sealed message are
     dropped and counted, an altered token and a plain join are refused with their reasons.
Exit 0 when every check passes; prints one line per check.
"""
import base64
import hashlib
import json
import os
import pathlib
import socket
import struct
import subprocess
import sys
import time
import ctypes

import enet
import flatbuffers
import nacl.bindings
import nacl.encoding
import nacl.exceptions
import nacl.hash

BIN, WORK, PORT = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GEN = WORK / "gen"
WORK.mkdir(parents=True, exist_ok=True)
subprocess.run(["flatc", "--python", "-o", str(GEN), str(ROOT / "schemas/messages.fbs"), str(ROOT / "schemas/replay.fbs")],
               check=True)
sys.path.insert(0, str(GEN))

from lockstep.wire import Body, ClientPlay, JoinRequest, Kick, Message, Refuse, RefuseReason  # noqa: E402
from lockstep.wire import ConnectChallenge, ConnectRequest  # noqa: E402
from lockstep.wire import DesyncNotice, ServerPlay, SessionEnd, Welcome  # noqa: E402
from lockstep.replay import Chunk, Frames, Record  # noqa: E402

CONTROL, PLAY = 0, 1
FAILED = []


def check(ok, what):
    print(("ok: " if ok else "FAIL: ") + what)
    if not ok:
        FAILED.append(what)


# ---- messages (the spec's section on framing: one Message with identifier "LSK1" per packet) ----

def finish(b, body_type, body):
    Message.MessageStart(b)
    Message.MessageAddBodyType(b, body_type)
    Message.MessageAddBody(b, body)
    b.Finish(Message.MessageEnd(b), file_identifier=b"LSK1")
    return bytes(b.Output())


def join_request(version, fingerprint, name, token="", spectate=False):
    b = flatbuffers.Builder(256)
    n, t = b.CreateString(name), b.CreateString(token)
    JoinRequest.JoinRequestStart(b)
    JoinRequest.JoinRequestAddProtocolVersion(b, version)
    JoinRequest.JoinRequestAddFingerprint(b, fingerprint)
    JoinRequest.JoinRequestAddToken(b, t)
    JoinRequest.JoinRequestAddName(b, n)
    JoinRequest.JoinRequestAddSpectate(b, spectate)
    return finish(b, Body.Body.JoinRequest, JoinRequest.JoinRequestEnd(b))


# ---- the play messages (the spec's section 6.6: a root table of one byte vector, no identifier) ----

def varint(v):
    out = bytearray()
    while v >= 0x80:
        out.append((v & 0x7F) | 0x80)
        v >>= 7
    out.append(v)
    return bytes(out)


def zigzag(v):
    return v << 1 if v >= 0 else ((-v - 1) << 1) | 1


def rle(data):
    """Zero runs (control 0..127: 1..128 zeros) and literal runs (128..255: 1..128 bytes follow)."""
    out, i = bytearray(), 0
    while i < len(data):
        z = 0
        while i + z < len(data) and data[i + z] == 0 and z < 128:
            z += 1
        if z:
            out.append(z - 1)
            i += z
            continue
        n = 0
        while i + n < len(data) and data[i + n] != 0 and n < 128:
            n += 1
        out.append(127 + n)
        out += data[i:i + n]
        i += n
    return bytes(out)


def client_play(input_first, input_bytes, count, frame_ack, hash_first=0, hashes=()):
    """count of this player's inputs (each len(input_bytes) / count bytes), without commands; and
    the state hashes after ticks hash_first, hash_first + 1, ..."""
    body = bytearray([(1 if count else 0) | (4 if hashes else 0)]) + varint(frame_ack)
    if count:
        size = len(input_bytes) // count
        chain = bytes(input_bytes[i] ^ (input_bytes[i - size] if i >= size else 0) for i in range(len(input_bytes)))
        body += varint(zigzag(input_first - frame_ack)) + varint(count) + rle(chain)
    if hashes:
        body += varint(zigzag(hash_first - frame_ack)) + varint(len(hashes))
        body += b"".join(struct.pack("<Q", h) for h in hashes)
    b = flatbuffers.Builder(64)
    v = b.CreateByteVector(bytes(body))
    ClientPlay.ClientPlayStart(b)
    ClientPlay.ClientPlayAddBody(b, v)
    b.Finish(ClientPlay.ClientPlayEnd(b))
    return bytes(b.Output())


class Body6:
    """Reads a play message's body, strictly: any short read raises ValueError."""

    def __init__(self, data):
        self.d, self.at = data, 0

    def byte(self):
        if self.at >= len(self.d):
            raise ValueError("short")
        self.at += 1
        return self.d[self.at - 1]

    def varint(self):
        v, shift = 0, 0
        while True:
            c = self.byte()
            v |= (c & 0x7F) << shift
            if not c & 0x80:
                return v
            shift += 7

    def signed(self):
        z = self.varint()
        return -(z >> 1) - 1 if z & 1 else z >> 1

    def take(self, n):
        if self.at + n > len(self.d):
            raise ValueError("short")
        self.at += n
        return self.d[self.at - n:self.at]

    def rle(self, n):
        out = bytearray()
        while len(out) < n:
            c = self.byte()
            out += bytes(c + 1) if c < 128 else self.take(c - 127)
        if len(out) != n:
            raise ValueError("run past the end")
        return out


def server_play(data, players, size, held):
    """The frames of a ServerPlay as {tick: (present, filled, inputs, commands)} and its acks;
    `held` maps a tick to the input bytes of a frame received before (the base). None when the
    base is not held."""
    t = ServerPlay.ServerPlay.GetRootAs(data, 0)
    r = Body6(bytes(t.Body(i) for i in range(t.BodyLength())))
    flags, ref = r.byte(), r.varint()
    n = r.varint() if flags & 1 else 0
    input_ack, hash_ack = ref + r.signed(), ref + r.signed()
    if flags & 16:
        r.signed(), r.signed()  # the slack report: this client keeps no lead
    if flags & 32:
        r.varint()
    masks, present, filled = [], (1 << players) - 1, 0
    for _ in range(n):
        if flags & 2 and r.byte() == 1:
            present, filled = r.varint(), r.varint()
        masks.append((present, filled))
    per = players * size
    chain = r.rle(per * n) if n else b""
    if flags & 8:
        if ref - 1 not in held:
            return None
        prev = held[ref - 1]
    else:
        prev = bytes(per)
    frames = {}
    cmds = [[] for _ in range(n)]
    if flags & 4:
        item = -1
        for _ in range(r.varint()):
            item += 1 + r.varint()
            for _ in range(r.byte()):
                cmds[item // players].append((item % players, bytes(r.take(r.varint()))))
    for i in range(n):
        inputs = bytes(chain[i * per + k] ^ prev[k] for k in range(per))
        frames[ref + i] = (masks[i][0], masks[i][1], inputs, cmds[i])
        held[ref + i] = prev = inputs
    if r.at != len(r.d):
        raise ValueError("bytes past the end")
    return frames, input_ack, hash_ack


def body_of(data, cls):
    m = Message.Message.GetRootAs(data, 0)
    t = cls()
    t.Init(m.Body().Bytes, m.Body().Pos)
    return m.BodyType(), t


def body_type(data):
    return Message.Message.GetRootAs(data, 0).BodyType()


class Conn:
    """One ENet connection to the server with `channels` channels."""

    def __init__(self, channels=2, address=("127.0.0.1", None)):
        self.host = enet.Host(None, 1, channels, 0, 0)
        # The keyless datagram check (PROTOCOL.md §1.1) is ENet's own CRC-32, which pyenet turns
        # on; a client that cannot compute the keyed check stays keyless, at its own risk.
        self.host.checksum = 1
        self.peer = self.host.connect(enet.Address(address[0].encode(), address[1] or PORT), channels)
        self.connected = False
        self.early = []

    def send(self, channel, data, reliable=True):
        flags = enet.PACKET_FLAG_RELIABLE if reliable else enet.PACKET_FLAG_UNSEQUENCED
        self.peer.send(channel, enet.Packet(data, flags))
        self.host.flush()

    def events(self, timeout_ms=10):
        """Yields (type, channel, bytes) until no event is waiting."""
        ev = self.host.service(timeout_ms)
        while ev.type != enet.EVENT_TYPE_NONE:
            if ev.type == enet.EVENT_TYPE_CONNECT:
                self.connected = True
            data = bytes(ev.packet.data) if ev.type == enet.EVENT_TYPE_RECEIVE else b""
            yield ev.type, ev.channelID, data
            ev = self.host.service(0)

    def wait_connect(self, seconds=5):
        """Waits for the connection; anything that arrives with it is kept for later reads."""
        end = time.monotonic() + seconds
        while not self.connected and time.monotonic() < end:
            self.early.extend(e for e in self.events(20) if e[0] != enet.EVENT_TYPE_CONNECT)
        return self.connected

    def all_events(self, timeout_ms=10):
        """Events kept by wait_connect first, then new ones."""
        early, self.early = self.early, []
        yield from early
        yield from self.events(timeout_ms)


class WsConn:
    """One connection through the server's WebSocket door (§17), with the same face as Conn: a
    WebSocket (RFC 6455, written here on a plain socket) with the subprotocol "lockstep"; every
    protocol message is one binary WebSocket message of its channel's number and its bytes, and
    both channels ride the one ordered stream."""

    def __init__(self, port):
        self.sock = socket.create_connection(("127.0.0.1", port))
        key = base64.b64encode(os.urandom(16)).decode()
        self.sock.sendall((f"GET / HTTP/1.1\r\nHost: 127.0.0.1:{port}\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                           f"Sec-WebSocket-Key: {key}\r\nSec-WebSocket-Version: 13\r\n"
                           f"Sec-WebSocket-Protocol: lockstep\r\n\r\n").encode())
        answer = b""
        while b"\r\n\r\n" not in answer:
            chunk = self.sock.recv(4096)
            if not chunk:
                break
            answer += chunk
        head, _, self.buf = answer.partition(b"\r\n\r\n")
        accept = base64.b64encode(hashlib.sha1((key + "258EAFA5-E914-47DA-95CA-C5AB0DC85B11").encode()).digest())
        self.connected = head.startswith(b"HTTP/1.1 101") and accept in head and b"lockstep" in head.lower()
        self.early, self.closed, self.message = [], False, b""

    def send(self, channel, data, reliable=True):
        payload, mask = bytes([channel]) + bytes(data), os.urandom(4)
        n = len(payload)
        size = bytes([0x80 | n]) if n < 126 else bytes([0x80 | 126]) + struct.pack(">H", n)
        self._write(bytes([0x82]) + size + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload)))

    def _write(self, data):
        # A server that has ended the session closes the connection; a player behind it (a busy
        # machine) may still be sending. As a browser's WebSocket does, the send is dropped, and
        # what arrived before the close (the SessionEnd) is still read by events().
        try:
            self.sock.sendall(data)
        except (BrokenPipeError, ConnectionResetError):
            pass

    def events(self, timeout_ms=10):
        """Yields (type, channel, bytes) as Conn does, with ENet's event type numbers."""
        import select
        if not self.closed and select.select([self.sock], [], [], timeout_ms / 1000)[0]:
            try:
                chunk = self.sock.recv(1 << 16)
            except ConnectionResetError:
                chunk = b""
            self.buf += chunk
            if not chunk:
                self.closed = True
                yield enet.EVENT_TYPE_DISCONNECT, 0, b""
                return
        while len(self.buf) >= 2:
            op, n, at = self.buf[0] & 0x0F, self.buf[1] & 0x7F, 2
            if n == 126:
                n, at = struct.unpack_from(">H", self.buf, 2)[0], 4
            elif n == 127:
                n, at = struct.unpack_from(">Q", self.buf, 2)[0], 10
            if len(self.buf) < at + n:
                break
            body, final, self.buf = self.buf[at:at + n], self.buf[0] & 0x80, self.buf[at + n:]
            if op in (0, 2):
                self.message += body
                if final:
                    message, self.message = self.message, b""
                    yield enet.EVENT_TYPE_RECEIVE, message[0], message[1:]
            elif op == 8:
                self.closed = True
                yield enet.EVENT_TYPE_DISCONNECT, 0, b""
                return
            elif op == 9:  # a ping: the same bytes back, masked as everything a client sends
                mask = os.urandom(4)
                self._write(bytes([0x8A, 0x80 | len(body)]) + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(body)))

    def wait_connect(self, seconds=5):
        return self.connected

    def all_events(self, timeout_ms=10):
        early, self.early = self.early, []
        yield from early
        yield from self.events(timeout_ms)


def status():
    out = subprocess.run([str(BIN / "lockstep-server"), "--status", f"127.0.0.1:{PORT}"], capture_output=True, text=True)
    return json.loads(out.stdout) if out.returncode == 0 else None


def refusal(conn, request, seconds=5):
    """Sends `request` (None: nothing) and returns (RefuseReason, detail) or None."""
    if request is not None:
        conn.send(CONTROL, request)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for kind, _, data in conn.all_events(20):
            if kind == enet.EVENT_TYPE_RECEIVE and body_type(data) == Body.Body.Refuse:
                _, r = body_of(data, Refuse.Refuse)
                return r.Reason(), (r.Detail() or b"").decode()
            if kind == enet.EVENT_TYPE_DISCONNECT:
                return None
    return None


def start(*args, log):
    return subprocess.Popen([str(BIN / args[0])] + [str(a) for a in args[1:]], stdout=subprocess.DEVNULL,
                            stderr=open(WORK / log, "w"))


def wait_status(seconds=5):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        st = status()
        if st:
            return st
        time.sleep(0.1)
    return None


# ---- 1. refusals ----------------------------------------------------------------------------

def part_refusals():
    server = start("lockstep-server", "--port", PORT, "--players", 1, "--token", "s3cret", log="refusals-server.err")
    try:
        st = wait_status()
        check(st is not None and st["phase"] == "lobby", "--status answers in the lobby")
        version, fingerprint = st["protocol_version"], int(st["fingerprint"], 16)
        R = RefuseReason.RefuseReason
        cases = [
            ("wrong protocol version", join_request(version + 1, fingerprint, "py", "s3cret"), R.WrongVersion, "version"),
            ("wrong fingerprint", join_request(version, fingerprint ^ 1, "py", "s3cret"), R.WrongFingerprint, "fingerprint"),
            ("wrong token", join_request(version, fingerprint, "py", "nope"), R.WrongToken, "token"),
            ("a 33-character name", join_request(version, fingerprint, "n" * 33, "s3cret"), R.BadRequest, "name"),
            ("a 129-byte token", join_request(version, fingerprint, "py", "t" * 129), R.BadRequest, "token"),
            ("an empty name", join_request(version, fingerprint, "", "s3cret"), R.BadRequest, "name"),
        ]
        for what, request, reason, word in cases:
            c = Conn()
            got = refusal(c, request) if c.wait_connect() else None
            check(got is not None and got[0] == reason and word in got[1],
                  f"{what}: Refuse {reason} naming '{word}' (got {got})")
        c = Conn(channels=1)
        got = refusal(c, None) if c.wait_connect() else None
        check(got is not None and got[0] == R.TooFewChannels, f"one ENet channel: Refuse TooFewChannels (got {got})")
        # The one slot taken, the next player is refused as Full.
        holder = Conn()
        holder.wait_connect()
        holder.send(CONTROL, join_request(version, fingerprint, "holder", "s3cret"))
        welcomed = False
        end = time.monotonic() + 5
        while not welcomed and time.monotonic() < end:
            welcomed = any(k == enet.EVENT_TYPE_RECEIVE and body_type(d) == Body.Body.Welcome for k, _, d in holder.all_events(20))
        check(welcomed, "a correct join is welcomed")
        c = Conn()
        got = refusal(c, join_request(version, fingerprint, "late", "s3cret")) if c.wait_connect() else None
        check(got is not None and got[0] == R.Full, f"a full session: Refuse Full (got {got})")
    finally:
        server.kill()
        server.wait()


# ---- 2. a spectator whose frames must equal the replay's ---------------------------------------

def replay_frames(path):
    """{tick: (present, filled, input bytes, commands)} from a replay file (schemas/replay.fbs)."""
    data = pathlib.Path(path).read_bytes()
    assert data[:8] == b"LSREPLAY"
    pos, frames, players, size = 8, {}, 0, 0
    from lockstep.replay import Header
    while pos + 12 <= len(data):
        (length,) = struct.unpack_from("<I", data, pos)
        payload = data[pos + 12:pos + 12 + length]
        pos += 12 + length
        rec = Record.Record.GetRootAs(payload, 0)
        if rec.ChunkType() == Chunk.Chunk.Header:
            h = Header.Header()
            h.Init(rec.Chunk().Bytes, rec.Chunk().Pos)
            players, size = h.Players(), h.InputSize()
        elif rec.ChunkType() == Chunk.Chunk.Frames:
            f = Frames.Frames()
            f.Init(rec.Chunk().Bytes, rec.Chunk().Pos)
            take_frames(f, players, size, frames)
    return frames, players, size


def take_frames(t, players, size, into):
    """Frames of a replay's Frames record into {tick: (present, filled, inputs, commands)}."""
    per = players * size
    count = 0  # commands before this frame's
    at = 0     # their bytes
    for i in range(t.PresentLength()):
        inputs = bytes(t.InputBytes(i * per + k) for k in range(per))
        cmds = []
        if t.CommandCountsLength():
            for p in range(players):
                for _ in range(t.CommandCounts(i * players + p)):
                    n = t.CommandSizes(count)
                    cmds.append((p, bytes(t.CommandBytes(at + k) for k in range(n))))
                    count += 1
                    at += n
        into[t.FirstTick() + i] = (t.Present(i), t.Filled(i), inputs, cmds)


PLAY_MESSAGE = "play"  # the body type receive() gives a play message (not a Message)


def receive(conn, timeout_ms):
    """(body type, bytes) of each message waiting; (None, b"") where the connection closed."""
    for kind, _, data in conn.all_events(timeout_ms):
        if kind == enet.EVENT_TYPE_DISCONNECT:
            yield None, b""
        elif kind == enet.EVENT_TYPE_RECEIVE:
            yield (body_type(data) if data[4:8] == b"LSK1" else PLAY_MESSAGE), data


def play(conn, players, ticks_to_run, inputs=False, seconds=30, size=2):
    """Runs the connection until the session ends or it is dropped; returns (frames, kick reason, ended)."""
    frames, held, kick, ended = {}, {}, None, False
    acked, last_send = 0, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not ended and kick is None:
        for bt, data in receive(conn, 5):
            if bt is None:
                ended = True
            elif bt == PLAY_MESSAGE:
                got = server_play(data, players, size, held)
                if got:
                    frames.update(got[0])
            elif bt == Body.Body.Kick:
                _, k = body_of(data, Kick.Kick)
                kick = (k.Reason() or b"").decode()
            elif bt == Body.Body.SessionEnd:
                ended = True
        while acked + 1 in frames:
            acked += 1
        if time.monotonic() - last_send >= 0.01:  # one ClientPlay a tick: acks, and inputs ahead
            last_send = time.monotonic()
            n = 32 if inputs else 0
            conn.send(PLAY, client_play(acked + 1 if inputs else 0, bytes(size * n), n, acked), reliable=False)
    return frames, kick, ended


def part_spectator():
    rec = WORK / "spectated.replay"
    # The skirmish: no per-tick input (size 0), everything its bots do is commands.
    server = start("lockstep-server", "--port", PORT, "--players", 2, "--ticks", 600, "--record", rec,
                   "--sim", "skirmish", "--world", "units=50", "--hash-log", WORK / "spec-server.log",
                   log="spec-server.err")
    bots = []
    try:
        wait_status()
        st = status()
        conn = Conn()
        conn.wait_connect()
        conn.send(CONTROL, join_request(st["protocol_version"], int(st["fingerprint"], 16), "pyspectator", spectate=True))
        bots = [start("lockstep-client", "--connect", f"127.0.0.1:{PORT}", "--name", f"bot{i}", "--bot", i,
                      "--sim", "skirmish", "--hash-log", WORK / f"spec-bot{i}.log", log=f"spec-bot{i}.err")
                for i in (1, 2)]
        frames, kick, ended = play(conn, 2, 600, size=0)
        check(kick is None and ended, f"the spectator stayed to the end (kick: {kick})")
        check(all(b.wait(30) == 0 for b in bots) and server.wait(30) == 0, "bots and server exit 0")
        want, players, size = replay_frames(rec)
        check(players == 2 and size == 0 and len(want) == 600,
              f"the replay holds 600 frames of 2 players and 0-byte inputs ({len(want)}, {size})")
        commands = sum(len(f[3]) for f in want.values())
        check(commands > 0, f"the bots' commands are in the frames ({commands})")
        missing = [t for t in want if t not in frames]
        differ = [t for t in want if t in frames and frames[t] != want[t]]
        check(not missing and not differ, f"every frame received equals the replay's ({len(missing)} missing, "
                                          f"{len(differ)} differ, first {(missing + differ)[:3]})")
    finally:
        for p in bots + [server]:
            if p.poll() is None:
                p.kill()


# ---- 3. a player that never reports a hash ------------------------------------------------------

def part_hash_silence():
    server = start("lockstep-server", "--port", PORT, "--players", 3, "--ticks", 1500, "--hash-silence-ms", 2000,
                   "--hash-log", WORK / "hs-server.log", "--summary", WORK / "hs-server.json", log="hs-server.err")
    bots = []
    try:
        st = wait_status()
        conn = Conn()
        conn.wait_connect()
        conn.send(CONTROL, join_request(st["protocol_version"], int(st["fingerprint"], 16), "pyplayer"))
        bots = [start("lockstep-client", "--connect", f"127.0.0.1:{PORT}", "--name", f"bot{i}", "--bot", i,
                      "--hash-log", WORK / f"hs-bot{i}.log", log=f"hs-bot{i}.err") for i in (1, 2)]
        _, kick, _ = play(conn, 3, 1500, inputs=True, seconds=20)
        check(kick is not None and "hash silence" in kick, f"the hashless player is dropped for hash silence: {kick!r}")
        check(all(b.wait(30) == 0 for b in bots) and server.wait(30) == 0, "bots and server exit 0")
        log = (WORK / "hs-server.log").read_text()
        check(log == (WORK / "hs-bot1.log").read_text() == (WORK / "hs-bot2.log").read_text() and log.count("\n") == 1500,
              "the bots' hash logs equal the server's, all 1500 ticks")
        summary = json.loads((WORK / "hs-server.json").read_text())
        check(summary["hash_silences"] == 1, f"the summary counts one hash silence ({summary['hash_silences']})")
    finally:
        for p in bots + [server]:
            if p.poll() is None:
                p.kill()


# ---- 4. a player stepping the simulation through the C API (ctypes) ---------------------------

class Command(ctypes.Structure):
    _fields_ = [("slot", ctypes.c_uint32), ("size", ctypes.c_uint32), ("bytes", ctypes.POINTER(ctypes.c_uint8))]


class Frame(ctypes.Structure):
    """lockstep_frame of module_abi.h."""
    _fields_ = [("tick", ctypes.c_uint32), ("present", ctypes.c_uint32), ("filled", ctypes.c_uint32),
                ("players", ctypes.c_uint32), ("input_size", ctypes.c_uint32),
                ("inputs", ctypes.POINTER(ctypes.c_uint8)), ("command_count", ctypes.c_uint32),
                ("commands", ctypes.POINTER(Command))]


class Core:
    """The C API of lockstep.h through ctypes: modules, worlds, steps and hashes."""

    def __init__(self, path):
        self.lib = lib = ctypes.CDLL(str(path))
        P, u8p, sz, u32, u64 = ctypes.c_void_p, ctypes.POINTER(ctypes.c_uint8), ctypes.c_size_t, ctypes.c_uint32, ctypes.c_uint64
        err = [ctypes.c_char_p, sz]
        for name, res, args in [
            ("lockstep_api_version", u32, []),
            ("lockstep_protocol_version", u32, []),
            ("lockstep_module_builtin", ctypes.c_int, [ctypes.c_char_p, ctypes.POINTER(P)] + err),
            ("lockstep_module_join_fingerprint", u64, [P]),
            ("lockstep_module_input_size", u32, [P]),
            ("lockstep_world_create", ctypes.c_int, [P, u8p, sz, u32, ctypes.POINTER(P)] + err),
            ("lockstep_world_destroy", None, [P]),
            ("lockstep_world_step", ctypes.c_int, [P, ctypes.POINTER(Frame)] + err),
            ("lockstep_world_hash", u64, [P]),
            ("lockstep_world_tick", u32, [P]),
            ("lockstep_world_fingerprint", u64, [P]),
        ]:
            f = getattr(lib, name)
            f.restype, f.argtypes = res, args
        self.error = ctypes.create_string_buffer(256)

    def call(self, name, *args):
        r = getattr(self.lib, name)(*args, self.error, len(self.error))
        if r != 0:
            raise RuntimeError(f"{name}: {r}: {self.error.value.decode()}")

    def module(self, name):
        m = ctypes.c_void_p()
        self.call("lockstep_module_builtin", name.encode(), ctypes.byref(m))
        return m

    def world(self, module, settings, players):
        buf = (ctypes.c_uint8 * max(1, len(settings))).from_buffer_copy(bytes(settings) or b"\0")
        w = ctypes.c_void_p()
        self.call("lockstep_world_create", module, buf, len(settings), players, ctypes.byref(w))
        return w

    def step(self, world, tick, frame, players, size):
        present, filled, inputs, cmds = frame
        ibuf = (ctypes.c_uint8 * max(1, len(inputs))).from_buffer_copy(inputs or b"\0")
        keep = [(ctypes.c_uint8 * len(c)).from_buffer_copy(c) for _, c in cmds]
        carr = (Command * max(1, len(cmds)))(*[Command(p, len(c), ctypes.cast(k, ctypes.POINTER(ctypes.c_uint8)))
                                               for (p, c), k in zip(cmds, keep)])
        f = Frame(tick, present, filled, players, size, ctypes.cast(ibuf, ctypes.POINTER(ctypes.c_uint8)), len(cmds),
                  ctypes.cast(carr, ctypes.POINTER(Command)))
        self.call("lockstep_world_step", world, ctypes.byref(f))


def my_input(tick, size):
    """The Python player's input for a tick: changes every few ticks, the same whenever it is resent."""
    return bytes(((tick // 25) * 7 + k * 3) % 3 for k in range(size))


def ctypes_play(conn, core, module, label, seconds=40, each=None):
    """Plays the connection through the C API until the session ends or it is dropped: builds the
    world from the Welcome, steps every confirmed frame, sends inputs and the real state hashes.
    `each(conn, acked)` runs after every ClientPlay sent. Returns (hashes, kick, ended, notices)."""
    size = core.lib.lockstep_module_input_size(module)
    w, players, frames, hashes, held = None, 0, {}, {}, {}
    acked = hash_ack = 0
    notices, kick, ended, last_send = [], None, False, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not ended and kick is None:
        for bt, data in receive(conn, 2):
            if bt is None:
                ended = True
            elif bt == Body.Body.Welcome:
                _, wl = body_of(data, Welcome.Welcome)
                players = wl.Players()
                settings = bytes(wl.Settings(i) for i in range(wl.SettingsLength()))
                w = core.world(module, settings, players)
                check(core.lib.lockstep_world_fingerprint(w) == wl.WorldFingerprint(),
                      f"{label}: the world made through the C API has the Welcome's fingerprint")
            elif bt == PLAY_MESSAGE and w is not None:
                got = server_play(data, players, size, held)
                if got:
                    frames.update({t: f for t, f in got[0].items() if t > acked})
                    hash_ack = max(hash_ack, got[2])
            elif bt == Body.Body.DesyncNotice:
                notices.append(data)
            elif bt == Body.Body.Kick:
                _, k = body_of(data, Kick.Kick)
                kick = (k.Reason() or b"").decode()
            elif bt == Body.Body.SessionEnd:
                ended = True
        while w is not None and acked + 1 in frames:
            acked += 1
            core.step(w, acked, frames.pop(acked), players, size)
            hashes[acked] = core.lib.lockstep_world_hash(w)
        if w is not None and time.monotonic() - last_send >= 0.01:
            last_send = time.monotonic()
            first = acked + 1
            inputs = b"".join(my_input(t, size) for t in range(first, first + 16))
            hs = [hashes[t] for t in range(hash_ack + 1, min(acked, hash_ack + 32) + 1)]
            conn.send(PLAY, client_play(first, inputs, 16, acked, hash_ack + 1, hs), reliable=False)
            if each:
                each(conn, acked)
    return hashes, kick, ended, notices


def part_ctypes_player(sim, world, ticks=800):
    core = Core(BIN.parent / "lib" / "liblockstep_core.so")
    check(core.lib.lockstep_api_version() == 4, "the C API's version is 4")
    log = WORK / f"cp-{sim}-server.log"
    server = start("lockstep-server", "--port", PORT, "--players", 3, "--ticks", ticks, "--sim", sim, "--world", world,
                   "--hash-log", log, "--summary", WORK / f"cp-{sim}.json", log=f"cp-{sim}-server.err")
    bots = []
    try:
        st = wait_status()
        module = core.module(sim)
        fp = core.lib.lockstep_module_join_fingerprint(module)
        check(st is not None and fp == int(st["fingerprint"], 16) and core.lib.lockstep_protocol_version() == st["protocol_version"],
              f"{sim}: the C API's join fingerprint and protocol version are the server's")
        conn = Conn()
        conn.wait_connect()
        conn.send(CONTROL, join_request(st["protocol_version"], fp, "pyctypes"))
        bots = [start("lockstep-client", "--connect", f"127.0.0.1:{PORT}", "--name", f"bot{i}", "--bot", i, "--sim", sim,
                      "--hash-log", WORK / f"cp-{sim}-bot{i}.log", log=f"cp-{sim}-bot{i}.err") for i in (1, 2)]
        hashes, kick, ended, notices = ctypes_play(conn, core, module, sim)
        check(kick is None and not notices, f"{sim}: no kick ({kick}) and no desync notice ({len(notices)})")
        check(all(b.wait(30) == 0 for b in bots) and server.wait(30) == 0, f"{sim}: bots and server exit 0")
        mine = "".join(f"{t} {hashes[t]:016x}\n" for t in sorted(hashes))
        want = log.read_text()
        check(len(hashes) == ticks and mine == want and want == (WORK / f"cp-{sim}-bot1.log").read_text(),
              f"{sim}: the ctypes player's {len(hashes)} hashes equal the server's and the bots' ({ticks} ticks)")
        summary = json.loads((WORK / f"cp-{sim}.json").read_text())
        check(summary["desyncs"] == [] and summary["hashes_compared"] >= 3 * ticks - 100,
              f"{sim}: the server compared the hashes of all three players ({summary['hashes_compared']}) and found no desync")
    finally:
        for p in bots + [server]:
            if p.poll() is None:
                p.kill()


# ---- 5. a player that joins with a connect token (§4.6, §4.7) ---------------------------------

def read_token(path):
    """The player's copy of a connect token (§4.6, the token file; base64 text is read as the bytes
    it encodes). Raises ValueError on anything the spec's reader refuses."""
    data = pathlib.Path(path).read_bytes()
    if data[:4] != b"LSCT":
        data = base64.b64decode(b"".join(data.split()), validate=True)
    if len(data) < 44 or data[:4] != b"LSCT" or data[4] not in (1, 2):
        raise ValueError("not a connect token of format version 1 or 2")
    n, size = data[5], struct.unpack_from("<H", data, 6)[0]
    checks = 24 if data[4] == 2 else 0
    if not 1 <= n <= 8 or not 65 <= size <= 448 or len(data) != 108 + 6 * n + size + checks:
        raise ValueError(f"bad length: n {n}, S {size}, {len(data)} bytes")
    if checks:  # format 2: each part's check, the first 8 bytes of its BLAKE2b-128
        end = 108 + 6 * n + size
        parts = [("header", data[:44 + 6 * n]), ("keys", data[44 + 6 * n:108 + 6 * n]), ("sealed part", data[108 + 6 * n:end])]
        for i, (what, part) in enumerate(parts):
            if hashlib.blake2b(part, digest_size=16).digest()[:8] != data[end + 8 * i:end + 8 * i + 8]:
                raise ValueError(f"the token file's {what} does not match its check")
        data = data[:end]
    protocol_id, create_time, expire_time, client_id, slot = struct.unpack_from("<QQQQI", data, 8)
    servers = []
    for i in range(n):
        ip, (port,) = data[44 + 6 * i:48 + 6 * i], struct.unpack_from("<H", data, 48 + 6 * i)
        if port == 0:
            raise ValueError("a server without a port")
        servers.append((".".join(str(b) for b in ip), port))
    return {"protocol_id": protocol_id, "create_time": create_time, "expire_time": expire_time,
            "client_id": client_id, "slot": slot, "servers": servers,
            "c2s": data[44 + 6 * n:76 + 6 * n], "s2c": data[76 + 6 * n:108 + 6 * n], "sealed": data[108 + 6 * n:]}


def connect_request(sealed):
    b = flatbuffers.Builder(512)
    v = b.CreateByteVector(bytes(sealed))
    ConnectRequest.ConnectRequestStart(b)
    ConnectRequest.ConnectRequestAddToken(b, v)
    return finish(b, Body.Body.ConnectRequest, ConnectRequest.ConnectRequestEnd(b))


def connection_keys(token, nonce):
    """(c2s, s2c): keyed BLAKE2b-256 of the label and the challenge's nonce (§4.7). The client seals
    with c2s and opens with s2c."""
    def derive(key, label):
        return nacl.hash.blake2b(label + bytes(nonce), digest_size=32, key=bytes(key), encoder=nacl.encoding.RawEncoder)
    return derive(token["c2s"], b"lockstep c2s"), derive(token["s2c"], b"lockstep s2c")


def seal_nonce(channel, sequence):
    return bytes([channel, 0, 0, 0]) + struct.pack("<Q", sequence)


def play_sequence(newest, low):
    """The play sequence number with these low 16 bits nearest `newest` (§4.7)."""
    s = (newest & ~0xFFFF) | low
    if s > newest + 0x8000 and s >= 0x10000:
        s -= 0x10000
    elif s + 0x8000 < newest:
        s += 0x10000
    return s


def seal(key, channel, sequence, plain):
    """One sealed ENet packet: control: ciphertext and tag; play: the sequence's low 16 bits first."""
    head = struct.pack("<H", sequence & 0xFFFF) if channel == PLAY else b""
    return head + nacl.bindings.crypto_aead_chacha20poly1305_ietf_encrypt(bytes(plain), None, seal_nonce(channel, sequence), key)


class SealedConn(Conn):
    """A Conn that, once it has keys, seals everything it sends and opens everything it receives
    (§4.7): control messages numbered by count on both ends, play messages by the low 16 bits they
    carry and the replay window."""

    def __init__(self, address):
        super().__init__(address=address)
        self.keys = None  # (send, receive)
        self.sent = {CONTROL: 0, PLAY: 0}
        self.opened = {CONTROL: 0, PLAY: 0}
        self.newest, self.any_play, self.window = 0, False, set()
        self.forged = self.replayed = 0
        self.control_types = []  # body types of the control messages opened, in order
        self.play_sent = []      # every sealed play packet as sent, for the replay checks
        self.last_play = None    # the last play packet opened, as received

    def send(self, channel, data, reliable=True):
        if self.keys:
            data = seal(self.keys[0], channel, self.sent[channel], data)
            self.sent[channel] += 1
            if channel == PLAY:
                self.play_sent.append(data)
        super().send(channel, data, reliable)

    def send_raw(self, channel, data, reliable=True):
        super().send(channel, data, reliable)

    def open(self, channel, packet):
        """The opened bytes, or None (counted as forged or replayed)."""
        if channel == PLAY:
            if len(packet) < 18:
                self.forged += 1
                return None
            s = play_sequence(self.newest, packet[0] | (packet[1] << 8))
            if self.any_play and (s + 256 <= self.newest or s in self.window):
                self.replayed += 1
                return None
            sealed = packet[2:]
        else:
            s, sealed = self.opened[CONTROL], packet
        try:
            plain = nacl.bindings.crypto_aead_chacha20poly1305_ietf_decrypt(bytes(sealed), None, seal_nonce(channel, s),
                                                                            self.keys[1])
        except nacl.exceptions.CryptoError:
            self.forged += 1
            return None
        self.opened[channel] += 1
        if channel == PLAY:
            if not self.any_play or s > self.newest:
                self.newest = s
                self.window = {t for t in self.window if t + 256 > s}
            self.window.add(s)
            self.any_play = True
            self.last_play = packet
        elif len(self.control_types) < 8:
            self.control_types.append(body_type(plain))
        return plain

    def events(self, timeout_ms=10):
        for kind, channel, data in super().events(timeout_ms):
            if kind == enet.EVENT_TYPE_RECEIVE and self.keys:
                data = self.open(channel, data)
                if data is None:
                    continue
            yield kind, channel, data


def clear_answer(conn, request, seconds=5):
    """Sends `request` in the clear and returns the first Message the server answers with in the
    clear (bytes), or None when it closes the connection or says nothing."""
    conn.send(CONTROL, request)
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        for kind, _, data in conn.all_events(20):
            if kind == enet.EVENT_TYPE_RECEIVE and data[4:8] == b"LSK1":
                return data
            if kind == enet.EVENT_TYPE_DISCONNECT:
                return None
    return None


def refuse_reason(data):
    if data is None or body_type(data) != Body.Body.Refuse:
        return None
    _, r = body_of(data, Refuse.Refuse)
    return r.Reason(), (r.Detail() or b"").decode()


def part_token_player(ticks=800):
    # The spec's test vector for the keys and the seal (§4.7).
    c2s, s2c = connection_keys({"c2s": bytes(range(32)), "s2c": bytes(range(32, 64))}, bytes(range(64, 96)))
    check(c2s.hex() == "48cd1575cee6add8243e4c25d58a04fe32c74e3edc28984c0f5d0a35d86ef232" and
          s2c.hex() == "54a4ed106926fbc46b19e9ca657adf06fd2756f2e60336fd21e8a59680de5080" and
          seal(c2s, CONTROL, 0, b"\1\2\3").hex() == "10c4d1635b98c029982ea57a1130117249331e" and
          seal(c2s, PLAY, 0x10203, b"\1\2\3").hex() == "0302b2d6bf486c21b83134fe6038cd65651a1c7e03",
          "the spec's test vector: keys, a sealed control and a sealed play message")
    check(play_sequence(0x1FFF0, 0x0005) == 0x20005 and play_sequence(0x20003, 0xFFF0) == 0x1FFF0 and
          play_sequence(0, 7) == 7 and play_sequence(5, 0xFFFF) == 0xFFFF,
          "the spec's play sequence examples")
    key = WORK / "token.key"
    key.unlink(missing_ok=True)
    tool = str(BIN / "lockstep-token")
    check(subprocess.run([tool, "keygen", "-o", str(key)]).returncode == 0 and (key.stat().st_mode & 0o077) == 0,
          "lockstep-token keygen writes a key of mode 600")
    log = WORK / "tk-server.log"
    server = start("lockstep-server", "--port", PORT, "--players", 3, "--ticks", ticks, "--token-key", key,
                   "--hash-log", log, "--summary", WORK / "tk-server.json", log="tk-server.err")
    bots = []
    try:
        tokens = {}
        for cid, fmt in ((101, "binary"), (102, "binary"), (103, "base64")):
            tokens[cid] = WORK / f"tk-{cid}.token"
            tokens[cid].unlink(missing_ok=True)
            subprocess.run([tool, "mint", "--key", str(key), "--client-id", str(cid), "--server", f"127.0.0.1:{PORT}",
                            "--expires-in", "120", "--format", fmt, "-o", str(tokens[cid])], check=True)
        mine, bot3 = read_token(tokens[101]), read_token(tokens[103])
        check(mine["client_id"] == 101 and mine["slot"] == 0xFFFFFFFF and mine["servers"] == [("127.0.0.1", PORT)] and
              mine["expire_time"] - mine["create_time"] == 120 and mine["protocol_id"] == 0x4C4F434B53544550 and
              mine["sealed"][:25] == struct.pack("<BQQQ", 1, mine["protocol_id"], mine["create_time"], mine["expire_time"]),
              f"the token file reads as the spec lays it out (sealed part {len(mine['sealed'])} bytes)")
        check(bot3["client_id"] == 103 and bot3["servers"] == [("127.0.0.1", PORT)], "a base64 token reads as its bytes")

        st = wait_status()
        core = Core(BIN.parent / "lib" / "liblockstep_core.so")
        module = core.module("arena")
        fp = core.lib.lockstep_module_join_fingerprint(module)
        check(st is not None and st["phase"] == "lobby" and fp == int(st["fingerprint"], 16),
              "token mode: --status answers in the lobby with the server's fingerprint")
        version = core.lib.lockstep_protocol_version()
        R = RefuseReason.RefuseReason

        # An altered token: its sealed part does not open with the server's key.
        altered = bytearray(mine["sealed"])
        altered[60] ^= 0x01
        c = Conn()
        request = connect_request(altered)
        answer = clear_answer(c, request) if c.wait_connect() else None
        got = refuse_reason(answer)
        check(got is not None and got[0] == R.BadToken and len(answer) <= len(request),
              f"a token with one byte flipped: Refuse BadToken in the clear, no larger than the request "
              f"({len(answer or b'')} <= {len(request)} bytes; got {got})")
        # A plain join to a server that admits only connect tokens.
        c = Conn()
        request = join_request(version, fp, "plain")
        answer = clear_answer(c, request) if c.wait_connect() else None
        got = refuse_reason(answer)
        check(got is not None and got[0] == R.TokenRequired and len(answer) <= len(request),
              f"a plain JoinRequest: Refuse TokenRequired in the clear, no larger than the request "
              f"({len(answer or b'')} <= {len(request)} bytes; got {got})")

        # The handshake (§4.7): ConnectRequest, ConnectChallenge, the keys, the sealed JoinRequest.
        conn = SealedConn(mine["servers"][0])
        request = connect_request(mine["sealed"])
        answer = clear_answer(conn, request) if conn.wait_connect() else None
        challenge = None
        if answer is not None and body_type(answer) == Body.Body.ConnectChallenge:
            _, ch = body_of(answer, ConnectChallenge.ConnectChallenge)
            challenge = bytes(ch.Nonce(i) for i in range(ch.NonceLength()))
        check(challenge is not None and len(challenge) == 32 and len(answer) <= len(request),
              f"the ConnectChallenge arrives in the clear with a 32-byte nonce, no larger than the ConnectRequest "
              f"({len(answer or b'')} <= {len(request)} bytes; got {refuse_reason(answer) if challenge is None else 'a challenge'})")
        if challenge is None:
            return
        conn.keys = connection_keys(mine, challenge)
        conn.send(CONTROL, join_request(version, fp, "pytoken"))
        bots = [start("lockstep-client", "--connect-token", tokens[cid], "--name", f"bot{i}", "--bot", i,
                      "--hash-log", WORK / f"tk-bot{i}.log", log=f"tk-bot{i}.err") for i, cid in ((1, 102), (2, 103))]

        tampered = []

        def tamper(conn, acked):
            """Well into the session: a play message sealed with a wrong key (with the next
            sequence number), one in the clear, a resend of a recent sealed play message (twice:
            the first resend may be its first arrival) and one of the first, by then (some 300
            sent) behind the window."""
            if acked >= 300 and len(conn.play_sent) >= 60 and not tampered:
                plain = client_play(0, b"", 0, acked)
                conn.send_raw(PLAY, seal(os.urandom(32), PLAY, conn.sent[PLAY], plain), reliable=False)
                conn.send_raw(PLAY, plain, reliable=False)
                for packet in (conn.play_sent[-50], conn.play_sent[-50], conn.play_sent[0]):
                    conn.send_raw(PLAY, packet, reliable=False)
                tampered.append(acked)

        hashes, kick, ended, notices = ctypes_play(conn, core, module, "token", each=tamper)
        check(conn.control_types[:1] == [Body.Body.Welcome],
              f"the Welcome opens with the derived key as the server's control message 0 (opened: {conn.control_types[:3]})")
        check(conn.forged == 0 and conn.replayed == 0 and conn.opened[PLAY] >= ticks // 2,
              f"every message from the server opened ({conn.opened[CONTROL]} control, {conn.opened[PLAY]} play; "
              f"{conn.forged} forged, {conn.replayed} replayed)")
        replayed_before = conn.replayed
        check(conn.last_play is not None and conn.open(PLAY, conn.last_play) is None and conn.replayed == replayed_before + 1,
              "the player's own replay window drops a second copy of the server's last play message")
        check(kick is None and not notices and ended and tampered,
              f"token: no kick ({kick}) and no desync notice ({len(notices)}) to the end, the tampered messages "
              f"sent at tick {tampered[:1]}")
        check(all(b.wait(30) == 0 for b in bots) and server.wait(30) == 0, "token: bots and server exit 0")
        mine_log = "".join(f"{t} {hashes[t]:016x}\n" for t in sorted(hashes))
        want = log.read_text()
        check(len(hashes) == ticks and mine_log == want and want == (WORK / "tk-bot1.log").read_text() ==
              (WORK / "tk-bot2.log").read_text(),
              f"token: the Python player's {len(hashes)} hashes equal the server's and both bots' ({ticks} ticks)")
        summary = json.loads((WORK / "tk-server.json").read_text())
        dropped = summary.get("sealed_dropped", {})
        check(summary.get("sealed") is True and summary["desyncs"] == [] and summary["hashes_compared"] >= 3 * ticks - 100,
              f"token: a sealed session; the server compared all three players' hashes ({summary['hashes_compared']}), no desync")
        # The packet in the clear is forged or replayed as its first two bytes, read as a sequence
        # number's low bits, fall (the window is checked before the seal is opened); the first
        # resend may have been its message's first arrival. Nothing else of this session is dropped.
        forged, replayed = dropped.get("forged", 0), dropped.get("replayed", 0)
        check(forged >= 1, f"the play message sealed with a wrong key is dropped and counted as forged ({dropped})")
        check(replayed >= 2, f"the resent sealed play messages (in the window, behind it) are dropped as replayed ({dropped})")
        check(forged + replayed >= 4, f"all five tampered play messages but at most one are dropped unread ({dropped})")
    finally:
        for p in bots + [server]:
            if p.poll() is None:
                p.kill()


def part_token_over_websocket(ticks=600):
    """A player with a connect token through the WebSocket door (§17), beside a native one through
    ENet: the token opens in a ConnectRequest, the ConnectChallenge tells it to join, and nothing
    after is sealed (the stream is TLS's to protect; plain ws:// on loopback here)."""
    key = WORK / "ws-token.key"
    key.unlink(missing_ok=True)
    tool = str(BIN / "lockstep-token")
    subprocess.run([tool, "keygen", "-o", str(key)], check=True)
    port = PORT + 40
    log = WORK / "ws-server.log"
    server = start("lockstep-server", "--port", port, "--bind", "127.0.0.1", "--players", 2, "--ticks", ticks,
                   "--token-key", key, "--websocket-port", port + 1, "--hash-log", log, "--summary", WORK / "ws-server.json",
                   log="ws-server.err")
    bots = []
    try:
        tokens = {}
        for cid in (201, 202):
            tokens[cid] = WORK / f"ws-{cid}.token"
            tokens[cid].unlink(missing_ok=True)
            subprocess.run([tool, "mint", "--key", str(key), "--client-id", str(cid), "--server", f"127.0.0.1:{port}",
                            "--expires-in", "120", "-o", str(tokens[cid])], check=True)
        mine = read_token(tokens[201])
        core = Core(BIN.parent / "lib" / "liblockstep_core.so")
        module = core.module("arena")
        fp = core.lib.lockstep_module_join_fingerprint(module)
        version = core.lib.lockstep_protocol_version()
        time.sleep(0.5)
        # Without a token: refused as an ENet peer would be.
        c = WsConn(port + 1)
        got = refusal(c, join_request(version, fp, "plain")) if c.wait_connect() else None
        check(got is not None and got[0] == RefuseReason.RefuseReason.TokenRequired,
              f"ws: a plain JoinRequest through the door is refused TokenRequired ({got})")
        conn = WsConn(port + 1)
        check(conn.wait_connect(), "ws: the door upgrades a connection that asks for the lockstep subprotocol")
        answer = clear_answer(conn, connect_request(mine["sealed"]))
        check(answer is not None and body_type(answer) == Body.Body.ConnectChallenge,
              f"ws: the token opens: a ConnectChallenge answers it ({refuse_reason(answer)})")
        conn.send(CONTROL, join_request(version, fp, "wstoken"))
        bots = [start("lockstep-client", "--connect-token", tokens[202], "--name", "native", "--bot", 1,
                      "--hash-log", WORK / "ws-bot.log", log="ws-bot.err")]
        hashes, kick, ended, notices = ctypes_play(conn, core, module, "ws")
        check(kick is None and not notices and ended, f"ws: no kick ({kick}) or desync notice to the end")
        check(all(b.wait(30) == 0 for b in bots) and server.wait(30) == 0, "ws: the native bot and the server exit 0")
        mine_log = "".join(f"{t} {hashes[t]:016x}\n" for t in sorted(hashes))
        check(len(hashes) == ticks and mine_log == log.read_text() == (WORK / "ws-bot.log").read_text(),
              f"ws: the WebSocket player's {len(hashes)} hashes equal the server's and the native player's")
        summary = json.loads((WORK / "ws-server.json").read_text())
        seats = {s["name"]: s for s in summary["seats"]}
        check(summary["websocket"]["upgraded"] >= 2 and summary["desyncs"] == [] and "wstoken" in seats,
              f"ws: the session counted the door's connections and seated the token's player ({summary['websocket']})")
    finally:
        for p in bots + [server]:
            if p.poll() is None:
                p.kill()


part_refusals()
part_spectator()
part_hash_silence()
part_ctypes_player("arena", "bodies=100")
part_ctypes_player("skirmish", "units=60")
part_token_player()
part_token_over_websocket()
print(f"{len(FAILED)} failed" if FAILED else "every conformance check passed")
sys.exit(1 if FAILED else 0)
