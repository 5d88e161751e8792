#!/usr/bin/python3
"""A lockstep client written from docs/PROTOCOL.md alone, in Python, against the C++ server.

Usage: conformance.py BIN_DIR WORK_DIR PORT

Uses Debian's python3-enet and python3-flatbuffers, and Python code that `flatc --python`
generates from schemas/*.fbs into WORK_DIR at run time (never committed). Three parts:
  1. refusals: every refused join of the spec gets its documented Refuse reason;
  2. spectator: joins a session of two C++ bots, acknowledges frames, and every frame it received
     equals the server's replay file, tick by tick;
  3. a player that sends inputs but never a state hash is dropped with the documented reason
     ("hash silence", told by a Kick message) while the bots play on hash-equal;
  4. a player that steps the simulation itself through the C API (lockstep.h, loaded with
     ctypes from the build's liblockstep_core.so): it joins beside two C++ bots, sends inputs of
     its own, executes every confirmed frame (commands included), reports its real state hashes,
     and must stay hash-equal with the server and the bots to the last tick, for both built-in
     games.
Exit 0 when every check passes; prints one line per check.
"""
import json
import os
import pathlib
import struct
import subprocess
import sys
import time
import ctypes

import enet
import flatbuffers

BIN, WORK, PORT = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GEN = WORK / "gen"
WORK.mkdir(parents=True, exist_ok=True)
subprocess.run(["flatc", "--python", "-o", str(GEN), str(ROOT / "schemas/messages.fbs"), str(ROOT / "schemas/replay.fbs")],
               check=True)
sys.path.insert(0, str(GEN))

from lockstep.wire import Body, ClientPlay, JoinRequest, Kick, Message, Refuse, RefuseReason  # noqa: E402
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

    def __init__(self, channels=2):
        self.host = enet.Host(None, 1, channels, 0, 0)
        self.peer = self.host.connect(enet.Address(b"127.0.0.1", PORT), channels)
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


def part_ctypes_player(sim, world, ticks=800):
    core = Core(BIN.parent / "lib" / "liblockstep_core.so")
    check(core.lib.lockstep_api_version() == 1, "the C API's version is 1")
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
        size = core.lib.lockstep_module_input_size(module)
        w, players, frames, hashes, held = None, 0, {}, {}, {}
        acked = hash_ack = 0
        notices, kick, ended, last_send = [], None, False, 0.0
        end = time.monotonic() + 40
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
                          f"{sim}: the world made through the C API has the Welcome's fingerprint")
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


part_refusals()
part_spectator()
part_hash_silence()
part_ctypes_player("arena", "bodies=100")
part_ctypes_player("skirmish", "units=60")
print(f"{len(FAILED)} failed" if FAILED else "every conformance check passed")
sys.exit(1 if FAILED else 0)
