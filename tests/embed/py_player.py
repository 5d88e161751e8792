#!/usr/bin/env python3
"""A game in Python that joins a session through the C session API alone (ctypes over
liblockstep_net.so, lockstep_session.h), owning its state (mode b): a walkers world written in
Python from tests/modules/walkers.c's rules, stepped by the game itself. lockstep sees it only
through the callbacks (reset, step, save, load, tick, entity_count, fields); nothing of the
protocol is spoken here.

Usage: py_player.py LIBDIR HOST PORT NAME SEED HASH_LOG BUILD_ID [--perturb-at T] [--predict N]
--predict N predicts up to N ticks ahead on the game's one state (lockstep_session.h): each frame
it draws, the game checks that its own state is the predicted world's tick, and at the end prints
the prediction figures as the C game does.
Exits with the session's exit code."""
import ctypes as C
import struct
import sys
import time

M32, M64 = (1 << 32) - 1, (1 << 64) - 1
WORLD = 100000


def mix(x):
    x ^= x >> 30
    x = (x * 0xBF58476D1CE4E5B9) & M64
    x ^= x >> 27
    x = (x * 0x94D049BB133111EB) & M64
    return x ^ (x >> 31)


def i32(v):
    v &= M32
    return v - (1 << 32) if v & (1 << 31) else v


def cdiv(a, b):  # C's integer division, truncating toward zero
    q = abs(a) // abs(b)
    return q if (a >= 0) == (b > 0) else -q


class Walkers:
    """The game's own state: walkers on a line, in integers."""

    def __init__(self, settings=b"", players=1):
        self.seed = 1 if len(settings) == 0 else struct.unpack("<Q", bytes(settings))[0]
        self.tick, self.players = 0, players
        self.pulse = mix(self.seed)
        self.pos = [i32(mix((self.seed + p) & M64) % WORLD) for p in range(players)]
        self.vel = [0] * players

    def step(self, frame):
        f = frame.contents
        self.pulse = mix((self.pulse + f.tick) & M64)
        for p in range(self.players):
            push = 0
            if (f.present >> p) & 1 and f.input_size > 0:
                b = f.inputs[p * f.input_size]
                push = b - 256 if b > 127 else b
            self.vel[p] = i32(cdiv(self.vel[p] * 15, 16) + push)
            self.pos[p] = i32(self.pos[p] + self.vel[p] + (self.pulse >> (60 - (p % 4))) % 5 - 2)
            if self.pos[p] < 0:
                self.pos[p], self.vel[p] = 0, -self.vel[p]
            if self.pos[p] > WORLD:
                self.pos[p], self.vel[p] = WORLD, -self.vel[p]
        for i in range(f.command_count):
            c = f.commands[i]
            if c.slot < self.players and c.size == 2 and c.bytes[0] == ord("J") and c.bytes[1] <= 50:
                self.pos[c.slot] = i32(self.pos[c.slot] + c.bytes[1])
        self.tick = f.tick

    def save(self):
        out = struct.pack("<IIQQ", self.tick, self.players, self.seed, self.pulse)
        for p in range(self.players):
            out += struct.pack("<II", self.pos[p] & M32, self.vel[p] & M32)
        return out

    @staticmethod
    def load(b):
        if len(b) < 24:
            return None
        tick, players, seed, pulse = struct.unpack_from("<IIQQ", b, 0)
        if players < 1 or players > 32 or len(b) != 24 + players * 8:
            return None
        w = Walkers(b"", 1)
        w.tick, w.players, w.seed, w.pulse = tick, players, seed, pulse
        w.pos = [i32(struct.unpack_from("<I", b, 24 + p * 8)[0]) for p in range(players)]
        w.vel = [i32(struct.unpack_from("<I", b, 28 + p * 8)[0]) for p in range(players)]
        return w


class Command(C.Structure):
    _fields_ = [("slot", C.c_uint32), ("size", C.c_uint32), ("bytes", C.POINTER(C.c_uint8))]


class Frame(C.Structure):
    _fields_ = [("tick", C.c_uint32), ("present", C.c_uint32), ("filled", C.c_uint32), ("players", C.c_uint32),
                ("input_size", C.c_uint32), ("inputs", C.POINTER(C.c_uint8)), ("command_count", C.c_uint32),
                ("commands", C.POINTER(Command))]


class Field(C.Structure):
    _fields_ = [("name", C.c_char_p), ("kind", C.c_uint32), ("bits", C.c_uint64)]


U8P = C.POINTER(C.c_uint8)
RESET = C.CFUNCTYPE(C.c_int, C.c_void_p, U8P, C.c_size_t, C.c_uint32)
STEP = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(Frame))
SAVE = C.CFUNCTYPE(C.c_size_t, C.c_void_p, U8P, C.c_size_t)
LOAD = C.CFUNCTYPE(C.c_int, C.c_void_p, U8P, C.c_size_t)
TICK = C.CFUNCTYPE(C.c_uint32, C.c_void_p, U8P, C.c_size_t)
COUNT = C.CFUNCTYPE(C.c_uint32, C.c_void_p, U8P, C.c_size_t)
FIELDS = C.CFUNCTYPE(C.c_size_t, C.c_void_p, U8P, C.c_size_t, C.c_uint32, C.POINTER(Field), C.c_size_t)


class Game(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("user", C.c_void_p), ("name", C.c_char_p), ("version", C.c_uint32), ("build_id", C.c_uint64),
                ("input_size", C.c_uint32), ("reset", RESET), ("step", STEP), ("save", SAVE), ("load", LOAD),
                ("tick", TICK), ("entity_count", COUNT), ("fields", FIELDS)]


class Config(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("host", C.c_char_p), ("port", C.c_uint16), ("name", C.c_char_p), ("token", C.c_char_p),
                ("spectate", C.c_int), ("rejoin_secret", C.c_char_p), ("last_tick", C.c_uint32),
                ("module", C.c_void_p), ("game", C.POINTER(Game)), ("log", C.c_void_p), ("log_user", C.c_void_p),
                ("hash_log", C.c_char_p), ("connect_timeout_ms", C.c_int64), ("playout_max_ms", C.c_int64),
                ("predict", C.c_uint32), ("connect_token", C.c_void_p), ("connect_token_len", C.c_size_t)]


class Event(C.Structure):
    _fields_ = [("kind", C.c_uint32), ("tick", C.c_uint32), ("slot", C.c_int32), ("code", C.c_int32),
                ("name", C.c_char * 33), ("detail", C.c_char * 256)]


class Stats(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("tick", C.c_uint32), ("slot", C.c_int32), ("rtt_ms", C.c_uint32), ("jitter_ms", C.c_uint32),
                ("loss", C.c_double), ("lead_ms", C.c_double), ("playout_ms", C.c_double),
                ("frames_behind", C.c_uint32), ("inputs_filled", C.c_uint64), ("frames_drawn", C.c_uint64),
                ("frames_clamped", C.c_uint64), ("hash", C.c_uint64),
                ("input_to_screen_p50_ms", C.c_double), ("input_to_screen_p99_ms", C.c_double),
                ("predict", C.c_uint32), ("predicted_tick", C.c_uint32), ("predicted_ticks", C.c_uint64),
                ("rebuilds", C.c_uint64), ("verified_predictions", C.c_uint64), ("mispredictions", C.c_uint64),
                ("game_steps", C.c_uint64), ("game_saves", C.c_uint64), ("game_loads", C.c_uint64),
                ("game_reused", C.c_uint64)]


NAMES = {"tick": C.c_char_p(b"tick"), "pulse": C.c_char_p(b"pulse"), "pos": C.c_char_p(b"pos"),
         "vel": C.c_char_p(b"vel")}


def main():
    if len(sys.argv) < 8:
        print(__doc__, file=sys.stderr)
        return 2
    libdir, host, port, name, seed, hash_log, build_id = sys.argv[1:8]
    perturb_at = int(sys.argv[sys.argv.index("--perturb-at") + 1]) if "--perturb-at" in sys.argv else 0
    predict = int(sys.argv[sys.argv.index("--predict") + 1]) if "--predict" in sys.argv else 0
    perturbed = [False]  # made once: a re-simulated tick must not make it again
    seed = int(seed)
    C.CDLL(libdir + "/liblockstep_core.so.0", mode=C.RTLD_GLOBAL)
    lib = C.CDLL(libdir + "/liblockstep_net.so.0")
    lib.lockstep_client_create.argtypes = [C.POINTER(Config), C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]
    lib.lockstep_client_update.argtypes = [C.c_void_p, C.c_int64]
    lib.lockstep_client_update.restype = C.c_int64
    lib.lockstep_client_set_input.argtypes = [C.c_void_p, U8P, C.c_size_t]
    lib.lockstep_client_set_result.argtypes = [C.c_void_p, U8P, C.c_size_t]
    lib.lockstep_client_poll_event.argtypes = [C.c_void_p, C.POINTER(Event)]
    lib.lockstep_client_alpha.argtypes = [C.c_void_p, C.c_int64]
    lib.lockstep_client_alpha.restype = C.c_double
    lib.lockstep_client_predicted_alpha.argtypes = [C.c_void_p, C.c_int64]
    lib.lockstep_client_predicted_alpha.restype = C.c_double
    lib.lockstep_client_stats_get.argtypes = [C.c_void_p, C.POINTER(Stats)]
    lib.lockstep_client_finished.argtypes = [C.c_void_p]
    lib.lockstep_client_exit_code.argtypes = [C.c_void_p]
    lib.lockstep_client_destroy.argtypes = [C.c_void_p]
    lib.lockstep_client_config_init.argtypes = [C.POINTER(Config), C.c_size_t]

    world = [Walkers()]

    def reset(_, settings, n, players):
        world[0] = Walkers(bytes(settings[:n]) if n else b"", players)
        return 0

    result = []  # the match's result, once known: FNV-1a 64 of the state at tick 1000, as the C game's

    def step(_, frame):
        world[0].step(frame)
        if world[0].tick == perturb_at and not perturbed[0]:
            world[0].vel[0] ^= 1
            perturbed[0] = True
        if world[0].tick == 1000:
            h = 14695981039346656037
            for b in world[0].save():
                h = ((h ^ b) * 1099511628211) & M64
            result[:] = [struct.pack("<Q", h)]
        return 0

    def save(_, out, cap):
        b = world[0].save()
        if cap >= len(b):
            C.memmove(out, b, len(b))
        return len(b)

    def load(_, b, n):
        w = Walkers.load(bytes(b[:n]))
        if w is None:
            return 1
        world[0] = w
        return 0

    def tick(_, b, n):
        w = Walkers.load(bytes(b[:n]))
        return w.tick if w else 0

    def entity_count(_, b, n):
        w = Walkers.load(bytes(b[:n]))
        return w.players if w else 0

    def fields(_, b, n, entity, out, cap):
        w = Walkers.load(bytes(b[:n]))
        if w is None:
            return 0
        if entity == M32:
            values = [("tick", 2, w.tick), ("pulse", 3, w.pulse)]
        elif entity < w.players:
            values = [("pos", 2, w.pos[entity] & M32), ("vel", 2, w.vel[entity] & M32)]
        else:
            return 0
        if cap >= len(values):
            for i, (nm, kind, bits) in enumerate(values):
                out[i].name, out[i].kind, out[i].bits = NAMES[nm].value, kind, bits
        return len(values)

    callbacks = [RESET(reset), STEP(step), SAVE(save), LOAD(load), TICK(tick), COUNT(entity_count), FIELDS(fields)]
    game = Game(C.sizeof(Game), None, b"walkers", 1, int(build_id, 16), 2, *callbacks)
    config = Config()
    lib.lockstep_client_config_init(C.byref(config), C.sizeof(Config))
    config.host, config.port, config.name = host.encode(), int(port), name.encode()
    config.game = C.pointer(game)
    config.hash_log = hash_log.encode()
    config.predict = predict
    client = C.c_void_p()
    error = C.create_string_buffer(256)
    if lib.lockstep_client_create(C.byref(config), C.byref(client), error, 256) != 0:
        print("py_player:", error.value.decode(), file=sys.stderr)
        return 2
    ev, st = Event(), Stats()
    draws = [0, 0, 0]  # drawn, not of the predicted world, ahead of the confirmed one
    st.struct_size = C.sizeof(Stats)
    inp = (C.c_uint8 * 2)()
    while not lib.lockstep_client_finished(client):
        now = time.monotonic_ns()
        lib.lockstep_client_update(client, now)
        while lib.lockstep_client_poll_event(client, C.byref(ev)):
            print(f"py_player: event {ev.kind} tick {ev.tick} slot {ev.slot} {ev.name.decode()} {ev.detail.decode()}",
                  file=sys.stderr)
        if result and result[0] is not None:
            lib.lockstep_client_set_result(client, (C.c_uint8 * 8).from_buffer_copy(result[0]), 8)
            result[0] = None
        lib.lockstep_client_stats_get(client, C.byref(st))
        h = mix((seed * 31 + st.tick // 50) & M64)
        inp[0] = ((h % 61) - 30) & 0xFF
        lib.lockstep_client_set_input(client, inp, 2)
        if predict:  # where a game would draw: its own state, which must be the predicted world
            lib.lockstep_client_predicted_alpha(client, now)
            if st.tick > 0:
                draws[0] += 1
                draws[1] += world[0].tick != st.predicted_tick
                draws[2] += st.predicted_tick > st.tick
        else:
            lib.lockstep_client_alpha(client, now)
        time.sleep(0.004)
    lib.lockstep_client_stats_get(client, C.byref(st))
    code = lib.lockstep_client_exit_code(client)
    print(f"py_player: ended at tick {st.tick}, exit {code}, rtt {st.rtt_ms} ms, playout {st.playout_ms:.1f} ms, "
          f"{st.frames_clamped} of {st.frames_drawn} frames at alpha 1", file=sys.stderr)
    if predict:
        n = max(st.tick, 1)
        print(f"py_player: prediction: {draws[0]} draws, {draws[1]} not of the predicted world, {draws[2]} ahead of the "
              f"confirmed one; input to screen p50 {st.input_to_screen_p50_ms:.1f} ms p99 {st.input_to_screen_p99_ms:.1f} ms; "
              f"depth {st.predict}, {st.rebuilds} rebuilds, {st.mispredictions} of {st.verified_predictions} predictions "
              f"wrong; per confirmed tick: {st.game_steps / n:.2f} steps, {st.game_saves / n:.2f} saves, "
              f"{st.game_loads / n:.3f} loads, {st.game_reused / n:.2f} reused", file=sys.stderr)
    lib.lockstep_client_destroy(client)
    return code


if __name__ == "__main__":
    sys.exit(main())
