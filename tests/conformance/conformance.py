#!/usr/bin/python3
"""A lockstep client written from docs/PROTOCOL.md alone, in Python, against the C++ server.

Usage: conformance.py BIN_DIR WORK_DIR PORT

Uses Debian's python3-enet and python3-flatbuffers, and Python code that `flatc --python`
generates from schemas/*.fbs into WORK_DIR at run time (never committed). Three parts:
  1. refusals: every refused join of the spec gets its documented Refuse reason;
  2. spectator: joins a session of two C++ bots, acknowledges frames, and every frame it received
     equals the server's replay file, tick by tick;
  3. a player that sends inputs but never a state hash is dropped with the documented reason
     ("hash silence", told by a Kick message) while the bots play on hash-equal.
Exit 0 when every check passes; prints one line per check.
"""
import json
import os
import pathlib
import struct
import subprocess
import sys
import time

import enet
import flatbuffers

BIN, WORK, PORT = pathlib.Path(sys.argv[1]), pathlib.Path(sys.argv[2]), int(sys.argv[3])
ROOT = pathlib.Path(__file__).resolve().parent.parent.parent
GEN = WORK / "gen"
WORK.mkdir(parents=True, exist_ok=True)
subprocess.run(["flatc", "--python", "-o", str(GEN), str(ROOT / "schemas/messages.fbs"), str(ROOT / "schemas/replay.fbs")],
               check=True)
sys.path.insert(0, str(GEN))

from lockstep.wire import Body, ClientTick, JoinRequest, Kick, Message, Refuse, RefuseReason  # noqa: E402
from lockstep.wire import ServerTick, SessionEnd, Welcome  # noqa: E402
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


def client_tick(input_first, input_bytes, count, frame_ack):
    """count items (spec section 6.2) whose inputs are input_bytes, without commands."""
    b = flatbuffers.Builder(256)
    iv = b.CreateByteVector(bytes(input_bytes))
    ClientTick.ClientTickStart(b)
    ClientTick.ClientTickAddInputFirstTick(b, input_first)
    ClientTick.ClientTickAddInputCount(b, count)
    ClientTick.ClientTickAddInputBytes(b, iv)
    ClientTick.ClientTickAddFrameAck(b, frame_ack)
    return finish(b, Body.Body.ClientTick, ClientTick.ClientTickEnd(b))


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
    """Frames of a ServerTick or a replay's Frames record into {tick: (present, filled, inputs, commands)}."""
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


def received_frames(msg, players, size, into):
    _, t = body_of(msg, ServerTick.ServerTick)
    take_frames(t, players, size, into)


def play(conn, players, ticks_to_run, inputs=False, seconds=30, size=2):
    """Runs the connection until the session ends or it is dropped; returns (frames, kick reason, ended)."""
    frames, kick, ended = {}, None, False
    acked, last_send = 0, 0.0
    end = time.monotonic() + seconds
    while time.monotonic() < end and not ended and kick is None:
        for kind, _, data in conn.all_events(5):
            if kind == enet.EVENT_TYPE_DISCONNECT:
                ended = True
            if kind != enet.EVENT_TYPE_RECEIVE:
                continue
            bt = body_type(data)
            if bt == Body.Body.ServerTick:
                received_frames(data, players, size, frames)
            elif bt == Body.Body.Kick:
                _, k = body_of(data, Kick.Kick)
                kick = (k.Reason() or b"").decode()
            elif bt == Body.Body.SessionEnd:
                ended = True
        while acked + 1 in frames:
            acked += 1
        if time.monotonic() - last_send >= 0.01:  # one ClientTick a tick: acks, and inputs ahead
            last_send = time.monotonic()
            n = 32 if inputs else 0
            conn.send(PLAY, client_tick(acked + 1 if inputs else 0, bytes(size * n), n, acked), reliable=False)
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


part_refusals()
part_spectator()
part_hash_silence()
print(f"{len(FAILED)} failed" if FAILED else "every conformance check passed")
sys.exit(1 if FAILED else 0)
