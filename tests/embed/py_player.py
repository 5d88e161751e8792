#!/usr/bin/env python3
"""A game in Python that joins a session through lockstep's Python package (import lockstep, the
C session API underneath), owning its state (mode b): a walkers world written in Python from
tests/modules/walkers.c's rules, stepped by the game itself. lockstep sees it only through its
lockstep.Game methods (reset, step, save, load, tick_of, entity_count, fields); nothing of the
protocol is spoken here, and no C struct is mirrored.

Usage: py_player.py LIBDIR HOST PORT NAME SEED HASH_LOG BUILD_ID [--perturb-at T] [--predict N] [--raise-at T]
--predict N predicts up to N ticks ahead on the game's one state (lockstep_session.h): each frame
it draws, the game checks that its own state is the predicted world's tick, and at the end prints
the prediction figures as the C game does. --raise-at T raises in the game's step at tick T (the
session must end with exit 1 and an ENDED event, the other players untouched).
The package is found on PYTHONPATH, its libraries in LIBDIR ($LOCKSTEP_LIBDIR).
Exits with the session's exit code."""
import os
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

    def step(self, f):
        self.pulse = mix((self.pulse + f.tick) & M64)
        for p in range(self.players):
            push = 0
            if (f.present >> p) & 1 and f.inputs[p]:
                b = f.inputs[p][0]
                push = b - 256 if b > 127 else b
            self.vel[p] = i32(cdiv(self.vel[p] * 15, 16) + push)
            self.pos[p] = i32(self.pos[p] + self.vel[p] + (self.pulse >> (60 - (p % 4))) % 5 - 2)
            if self.pos[p] < 0:
                self.pos[p], self.vel[p] = 0, -self.vel[p]
            if self.pos[p] > WORLD:
                self.pos[p], self.vel[p] = WORLD, -self.vel[p]
        for slot, c in f.commands:
            if slot < self.players and len(c) == 2 and c[0] == ord("J") and c[1] <= 50:
                self.pos[slot] = i32(self.pos[slot] + c[1])
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


class WalkersGame:
    """The game as lockstep sees it (lockstep.Game's methods): its one state, saved and loaded."""
    name, version, input_size = "walkers", 1, 2

    def __init__(self, build_id, perturb_at, raise_at):
        self.build_id, self.perturb_at, self.raise_at = build_id, perturb_at, raise_at
        self.world, self.perturbed, self.result = Walkers(), False, None

    def reset(self, settings, players):
        self.world = Walkers(settings, players)

    def step(self, frame):
        if frame.tick == self.raise_at:
            raise RuntimeError("the game broke at tick %d" % frame.tick)
        self.world.step(frame)
        if self.world.tick == self.perturb_at and not self.perturbed:  # once: a re-simulated tick must not again
            self.world.vel[0] ^= 1
            self.perturbed = True
        if self.world.tick == 1000:  # the match's result: FNV-1a 64 of the state at tick 1000, as the C game's
            h = 14695981039346656037
            for b in self.world.save():
                h = ((h ^ b) * 1099511628211) & M64
            self.result = struct.pack("<Q", h)

    def save(self):
        return self.world.save()

    def load(self, state):
        w = Walkers.load(state)
        if w is None:
            return False
        self.world = w
        return True

    def tick_of(self, state):
        w = Walkers.load(state)
        return w.tick if w else 0

    def entity_count(self, state):
        w = Walkers.load(state)
        return w.players if w else 0

    def fields(self, state, entity):
        w = Walkers.load(state)
        if w is None:
            return []
        if entity == M32:
            return [("tick", 2, w.tick), ("pulse", 3, w.pulse)]
        if entity < w.players:
            return [("pos", 2, w.pos[entity] & M32), ("vel", 2, w.vel[entity] & M32)]
        return []


def main():
    if len(sys.argv) < 8:
        print(__doc__, file=sys.stderr)
        return 2
    libdir, host, port, name, seed, hash_log, build_id = sys.argv[1:8]
    arg = lambda flag: int(sys.argv[sys.argv.index(flag) + 1]) if flag in sys.argv else 0
    perturb_at, predict, raise_at = arg("--perturb-at"), arg("--predict"), arg("--raise-at")
    seed = int(seed)
    os.environ.setdefault("LOCKSTEP_LIBDIR", libdir)
    import lockstep

    game = WalkersGame(int(build_id, 16), perturb_at, raise_at)
    client = lockstep.Client(host, int(port), name, game=game, hash_log=hash_log, predict=predict)
    draws = [0, 0, 0]  # drawn, not of the predicted world, ahead of the confirmed one
    lowest_depth = predict  # after the first 3 s
    while not client.finished:
        now = time.monotonic_ns()
        client.update(now)
        for ev in client.events():
            print(f"py_player: event {ev.kind} tick {ev.tick} slot {ev.slot} {ev.name} {ev.detail}", file=sys.stderr)
        if game.result is not None:
            client.set_result(game.result)
            game.result = None
        st = client.stats
        if predict and st.tick > 300:
            lowest_depth = min(lowest_depth, st.predict)
        h = mix((seed * 31 + st.tick // 50) & M64)
        client.set_input(bytes([((h % 61) - 30) & 0xFF, 0]))
        if predict:  # where a game would draw: its own state, which must be the predicted world
            client.predicted_alpha(now)
            if st.tick > 0:
                draws[0] += 1
                draws[1] += game.world.tick != st.predicted_tick
                draws[2] += st.predicted_tick > st.tick
        else:
            client.alpha(now)
        time.sleep(0.004)
    st = client.stats
    code = client.exit_code
    print(f"py_player: ended at tick {st.tick}, exit {code}, rtt {st.rtt_ms} ms, playout {st.playout_ms:.1f} ms, "
          f"{st.frames_clamped} of {st.frames_drawn} frames at alpha 1", file=sys.stderr)
    if client.callback_error is not None:
        print(f"py_player: the game raised: {client.callback_error!r}", file=sys.stderr)
    if predict:
        n = max(st.tick, 1)
        print(f"py_player: prediction: {draws[0]} draws, {draws[1]} not of the predicted world, {draws[2]} ahead of the "
              f"confirmed one; input to screen p50 {st.input_to_screen_p50_ms:.1f} ms p99 {st.input_to_screen_p99_ms:.1f} ms; "
              f"depth {st.predict} (lowest {lowest_depth}), {st.rebuilds} rebuilds, {st.mispredictions} of {st.verified_predictions} predictions "
              f"wrong; per confirmed tick: {st.game_steps / n:.2f} steps, {st.game_saves / n:.2f} saves, "
              f"{st.game_loads / n:.3f} loads, {st.game_reused / n:.2f} reused", file=sys.stderr)
    client.close()
    return code


if __name__ == "__main__":
    sys.exit(main())
