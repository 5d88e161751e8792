"""lockstep for Python: join a lockstep session from a game's own loop (the C session API,
lockstep_session.h, through ctypes; docs/EMBEDDING.md).

    import lockstep
    client = lockstep.Client("127.0.0.1", 7777, "me", game=MyGame(), predict=0)
    while not client.finished:
        client.update()
        for e in client.events():
            ...
        client.set_input(b"...")
        draw(client.alpha())

A game that owns its state (mode b) subclasses lockstep.Game; one that lets lockstep step a
module passes module=lockstep.module_load("libgame.so") (or module_builtin("arena")).

The shared libraries are found beside the package as installed (PREFIX/LIBDIR/python3/
dist-packages/lockstep -> PREFIX/LIBDIR), in $LOCKSTEP_LIBDIR, or by the system's loader. At
import the binding holds its own struct layouts to the library's (lockstep_layout) and refuses
to load on any difference: a binding of another version can never corrupt memory.

Errors: a call the library refuses raises lockstep.Error (a ValueError) with the library's
sentence. A Game method that raises ends this client's session with exit code 1 and an ENDED
event ("the game's callback failed: ..."); the exception is kept in Client.callback_error. The
other players are not touched.
"""
import ctypes as C
import os
import time

__all__ = ["Client", "Game", "Module", "Error", "EventKind", "Event", "module_builtin", "module_load",
           "compare_game", "bisect_game", "trace_game", "compare_trace", "api_version", "version", "protocol_version"]

API_VERSION = 4  # LOCKSTEP_API_VERSION this binding speaks


class Error(ValueError):
    """A call the library refused: `code` is its lockstep_status, the message its sentence."""

    def __init__(self, code, sentence):
        super().__init__(sentence)
        self.code = code


_DIFFERS, _CALLBACK = 11, 14  # lockstep_status: LOCKSTEP_ERROR_DIFFERS, LOCKSTEP_ERROR_CALLBACK


class EventKind:
    JOINED, STARTED, PLAYER_JOINED, PLAYER_LEFT, DESYNC, RESYNCED, KICKED, ENDED = range(1, 9)


# The C structs, as lockstep_session.h, lockstep_token.h and module_abi.h declare them.
class _Command(C.Structure):
    _fields_ = [("slot", C.c_uint32), ("size", C.c_uint32), ("bytes", C.POINTER(C.c_uint8))]


class _Frame(C.Structure):
    _fields_ = [("tick", C.c_uint32), ("present", C.c_uint32), ("filled", C.c_uint32), ("players", C.c_uint32),
                ("input_size", C.c_uint32), ("inputs", C.POINTER(C.c_uint8)), ("command_count", C.c_uint32),
                ("commands", C.POINTER(_Command))]


class _Field(C.Structure):
    _fields_ = [("name", C.c_char_p), ("kind", C.c_uint32), ("bits", C.c_uint64)]


_U8P = C.POINTER(C.c_uint8)
_RESET = C.CFUNCTYPE(C.c_int, C.c_void_p, _U8P, C.c_size_t, C.c_uint32)
_STEP = C.CFUNCTYPE(C.c_int, C.c_void_p, C.POINTER(_Frame))
_SAVE = C.CFUNCTYPE(C.c_size_t, C.c_void_p, _U8P, C.c_size_t)
_LOAD = C.CFUNCTYPE(C.c_int, C.c_void_p, _U8P, C.c_size_t)
_TICK = C.CFUNCTYPE(C.c_uint32, C.c_void_p, _U8P, C.c_size_t)
_COUNT = C.CFUNCTYPE(C.c_uint32, C.c_void_p, _U8P, C.c_size_t)
_FIELDS = C.CFUNCTYPE(C.c_size_t, C.c_void_p, _U8P, C.c_size_t, C.c_uint32, C.POINTER(_Field), C.c_size_t)
_LOG = C.CFUNCTYPE(None, C.c_void_p, C.c_int, C.c_char_p)


class _Game(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("user", C.c_void_p), ("name", C.c_char_p), ("version", C.c_uint32),
                ("build_id", C.c_uint64), ("input_size", C.c_uint32), ("reset", _RESET), ("step", _STEP),
                ("save", _SAVE), ("load", _LOAD), ("tick", _TICK), ("entity_count", _COUNT), ("fields", _FIELDS)]


class _Config(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("host", C.c_char_p), ("port", C.c_uint16), ("name", C.c_char_p),
                ("token", C.c_char_p), ("spectate", C.c_int), ("rejoin_secret", C.c_char_p), ("last_tick", C.c_uint32),
                ("module", C.c_void_p), ("game", C.POINTER(_Game)), ("log", _LOG), ("log_user", C.c_void_p),
                ("hash_log", C.c_char_p), ("connect_timeout_ms", C.c_int64), ("playout_max_ms", C.c_int64),
                ("predict", C.c_uint32), ("connect_token", _U8P), ("connect_token_len", C.c_size_t),
                ("step_budget_us", C.c_int64)]


class _Event(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("kind", C.c_uint32), ("tick", C.c_uint32), ("slot", C.c_int32), ("code", C.c_int32),
                ("name", C.c_char * 33), ("detail", C.c_char * 256)]


class _Stats(C.Structure):
    _fields_ = [("struct_size", C.c_uint32), ("tick", C.c_uint32), ("slot", C.c_int32), ("rtt_ms", C.c_uint32),
                ("jitter_ms", C.c_uint32), ("loss", C.c_double), ("lead_ms", C.c_double), ("playout_ms", C.c_double),
                ("frames_behind", C.c_uint32), ("inputs_filled", C.c_uint64), ("frames_drawn", C.c_uint64),
                ("frames_clamped", C.c_uint64), ("hash", C.c_uint64), ("input_to_screen_p50_ms", C.c_double),
                ("input_to_screen_p99_ms", C.c_double), ("predict", C.c_uint32), ("predicted_tick", C.c_uint32),
                ("predicted_ticks", C.c_uint64), ("rebuilds", C.c_uint64), ("verified_predictions", C.c_uint64),
                ("mispredictions", C.c_uint64), ("game_steps", C.c_uint64), ("game_saves", C.c_uint64),
                ("game_loads", C.c_uint64), ("game_reused", C.c_uint64), ("step_budget_ms", C.c_double),
                ("step_cost_us", C.c_double), ("frame_ms", C.c_double)]


_STRUCTS = {"lockstep_command": _Command, "lockstep_frame": _Frame, "lockstep_field": _Field, "lockstep_game": _Game,
            "lockstep_client_config": _Config, "lockstep_event": _Event, "lockstep_client_stats": _Stats}


def _library_dirs():
    here = os.path.dirname(os.path.abspath(__file__))
    try:  # written by the install: the prefix's library folder, for a copy pip installed elsewhere
        from ._libdir import LIBDIR as installed
    except ImportError:
        installed = ""
    dirs = [os.environ.get("LOCKSTEP_LIBDIR", ""), installed, os.path.normpath(os.path.join(here, "..", "..", ".."))]
    return [d for d in dirs if d and os.path.exists(os.path.join(d, "liblockstep_net.so.0"))]


def _load():
    dirs = _library_dirs()
    prefix = dirs[0] + "/" if dirs else ""  # else the system's loader, by soname
    C.CDLL(prefix + "liblockstep_core.so.0", mode=C.RTLD_GLOBAL)  # first: the net library needs it
    lib = C.CDLL(prefix + "liblockstep_net.so.0")
    sig = {
        "lockstep_api_version": (C.c_uint32, []), "lockstep_version": (C.c_char_p, []),
        "lockstep_protocol_version": (C.c_uint32, []),
        "lockstep_layout": (C.c_int, [C.c_char_p, C.c_char_p, C.POINTER(C.c_size_t), C.POINTER(C.c_size_t)]),
        "lockstep_module_builtin": (C.c_int, [C.c_char_p, C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]),
        "lockstep_module_load": (C.c_int, [C.c_char_p, C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]),
        "lockstep_module_name": (C.c_char_p, [C.c_void_p]), "lockstep_module_version": (C.c_uint32, [C.c_void_p]),
        "lockstep_module_build_id": (C.c_uint64, [C.c_void_p]), "lockstep_module_input_size": (C.c_uint32, [C.c_void_p]),
        "lockstep_client_config_init": (None, [C.POINTER(_Config), C.c_size_t]),
        "lockstep_game_init": (None, [C.POINTER(_Game), C.c_size_t]),
        "lockstep_client_create": (C.c_int, [C.POINTER(_Config), C.POINTER(C.c_void_p), C.c_char_p, C.c_size_t]),
        "lockstep_client_destroy": (None, [C.c_void_p]),
        "lockstep_client_update": (C.c_int64, [C.c_void_p, C.c_int64]),
        "lockstep_client_set_input": (C.c_int, [C.c_void_p, _U8P, C.c_size_t]),
        "lockstep_client_add_command": (C.c_int, [C.c_void_p, _U8P, C.c_size_t]),
        "lockstep_client_set_result": (C.c_int, [C.c_void_p, _U8P, C.c_size_t]),
        "lockstep_client_next_event": (C.c_int, [C.c_void_p, C.POINTER(_Event)]),
        "lockstep_client_alpha": (C.c_double, [C.c_void_p, C.c_int64]),
        "lockstep_client_predicted_alpha": (C.c_double, [C.c_void_p, C.c_int64]),
        "lockstep_client_stats_get": (C.c_int, [C.c_void_p, C.POINTER(_Stats)]),
        "lockstep_client_presented": (None, [C.c_void_p, C.c_int64]),
        "lockstep_client_error": (C.c_char_p, [C.c_void_p]),
        "lockstep_client_callback_failed": (None, [C.c_void_p, C.c_char_p]),
        "lockstep_client_finished": (C.c_int, [C.c_void_p]), "lockstep_client_exit_code": (C.c_int, [C.c_void_p]),
        "lockstep_client_leave": (None, [C.c_void_p]),
        "lockstep_client_start_service": (None, [C.c_void_p]),
        "lockstep_compare_game_v4": (C.c_int, [C.c_void_p, C.POINTER(_Game), _U8P, C.c_size_t, C.c_uint32, C.c_char_p,
                                            C.c_size_t]),
        "lockstep_bisect_game_v4": (C.c_int, [C.c_void_p, C.POINTER(_Game), C.c_char_p, C.c_int, C.c_char_p, C.c_size_t]),
        "lockstep_game_trace_write_v4": (C.c_int, [C.POINTER(_Game), _U8P, C.c_size_t, C.c_uint32, C.c_uint32, C.c_char_p,
                                                C.c_char_p, C.c_size_t]),
        "lockstep_game_trace_compare_v4": (C.c_int, [C.POINTER(_Game), C.c_char_p, C.c_char_p, C.c_size_t]),
    }
    for name, (res, args) in sig.items():
        f = getattr(lib, name)
        f.restype, f.argtypes = res, args
    if lib.lockstep_api_version() != API_VERSION:
        raise ImportError("lockstep: the library speaks C API version %d, this binding %d"
                          % (lib.lockstep_api_version(), API_VERSION))
    off, size = C.c_size_t(), C.c_size_t()
    for sname, st in _STRUCTS.items():
        if lib.lockstep_layout(sname.encode(), None, C.byref(off), C.byref(size)) != 0 or size.value != C.sizeof(st):
            raise ImportError("lockstep: %s is %d bytes here, %s in the library" % (sname, C.sizeof(st), size.value))
        for fname, _ in st._fields_:
            if lib.lockstep_layout(sname.encode(), fname.encode(), C.byref(off), C.byref(size)) != 0:
                raise ImportError("lockstep: the library's %s has no field %s" % (sname, fname))
            mine = getattr(st, fname)
            if (mine.offset, mine.size) != (off.value, size.value):
                raise ImportError("lockstep: %s.%s is at %d (%d bytes) here, at %d (%d bytes) in the library"
                                  % (sname, fname, mine.offset, mine.size, off.value, size.value))
    return lib


_lib = _load()


def api_version():
    return _lib.lockstep_api_version()


def version():
    return _lib.lockstep_version().decode()


def protocol_version():
    return _lib.lockstep_protocol_version()


def _error_buffer():
    return C.create_string_buffer(256)


def _raise(code, err):
    raise Error(code, err.value.decode(errors="replace") or "lockstep refused the call (code %d)" % code)


def _bytes_arg(b, what):
    if not isinstance(b, (bytes, bytearray, memoryview)):
        raise TypeError("%s must be bytes, not %s" % (what, type(b).__name__))
    b = bytes(b)
    return (C.c_uint8 * max(len(b), 1)).from_buffer_copy(b.ljust(1, b"\0")), len(b)


class Module:
    """A simulation module: its identity is what a game that owns its state presents."""

    def __init__(self, handle):
        self._handle = handle
        self.name = _lib.lockstep_module_name(handle).decode()
        self.version = _lib.lockstep_module_version(handle)
        self.build_id = _lib.lockstep_module_build_id(handle)
        self.input_size = _lib.lockstep_module_input_size(handle)


def module_builtin(name):
    h, err = C.c_void_p(), _error_buffer()
    r = _lib.lockstep_module_builtin(name.encode(), C.byref(h), err, 256)
    if r:
        _raise(r, err)
    return Module(h)


def module_load(path):
    h, err = C.c_void_p(), _error_buffer()
    r = _lib.lockstep_module_load(os.fsencode(path), C.byref(h), err, 256)
    if r:
        _raise(r, err)
    return Module(h)


def _with_game(game, call, differ_ok=True):
    """call(game_struct, report_buffer) -> result, on `game`'s callbacks: (result, report). Raises
    Error unless the result is LOCKSTEP_OK, or with differ_ok LOCKSTEP_ERROR_DIFFERS (a difference) or
    LOCKSTEP_ERROR_CALLBACK (the game's callback failed: not equal either)."""
    binding = _GameBinding(game)
    report = C.create_string_buffer(1024)
    r = call(C.byref(binding.struct), report)
    text = report.value.decode(errors="replace")
    if binding.callback_error is not None:
        text += " (the game raised %r)" % (binding.callback_error,)
    if r != 0 and not (differ_ok and r in (_DIFFERS, _CALLBACK)):
        raise Error(r, text)
    return r, text


def compare_game(module, game, ticks=600, settings=b""):
    """Two implementations of one game: `game` (a Game) beside `module` (the one the server hosts)
    over the synctest's variants and input streams, `ticks` ticks each. Returns (equal, report):
    report names the first difference by variant, tick, entity and field, or says they are equal.
    Raises Error for bad arguments."""
    buf, n = _bytes_arg(settings, "settings")
    r, text = _with_game(game, lambda g, report: _lib.lockstep_compare_game_v4(module._handle, g, buf, n, int(ticks), report, 1024))
    return r == 0, text


def trace_game(game, path, ticks=600, players=4, settings=b""):
    """Two implementations of one game with no module: writes `game`'s saved state of every tick
    over lockstep's seeded streams (1, 2 and `players` players, `ticks` ticks each) to `path`, for
    another implementation, in any language, to compare with (compare_trace). Returns the report."""
    buf, n = _bytes_arg(settings, "settings")
    r, text = _with_game(game, lambda g, report: _lib.lockstep_game_trace_write_v4(
        g, buf, n, int(players), int(ticks), os.fsencode(path), report, 1024), differ_ok=False)
    return text


def compare_trace(game, path):
    """`game` over the streams of the trace at `path` (trace_game's, or another language's):
    returns (equal, report); report names the first difference by variant, tick, entity and field
    (both states read through this game's fields), or says they are equal. Raises Error for bad
    arguments or a file that is not a trace."""
    r, text = _with_game(game, lambda g, report: _lib.lockstep_game_trace_compare_v4(g, os.fsencode(path), report, 1024))
    return r == 0, text


def bisect_game(module, game, replay, linear=False):
    """Where `game` (a Game) parts from `module` on a recorded session: `replay` (a path to a
    .replay with keyframes, or a desync bundle), both loading each keyframe and stepping the
    stretch after it, searched for the first stretch where they part (linear: every stretch in
    order). Returns (equal, report): report names the tick, entity and field and the ticks
    simulated. Raises Error for bad arguments or a file that cannot be read."""
    r, text = _with_game(game, lambda g, report: _lib.lockstep_bisect_game_v4(
        module._handle, g, os.fsencode(replay), 1 if linear else 0, report, 1024))
    return r == 0, text


class Game:
    """A game that owns its state (mode b): subclass it and give name, version, build_id and
    input_size (the hosted module's identity; Module gives them). lockstep calls:
      reset(settings: bytes, players: int)   build tick 0 of that world
      step(frame: Frame)                      step the state by one frame (frame.tick says which)
        (reset and step fail by raising, or by returning False or a nonzero int: the session ends
        with exit code 1 and the reason in its ENDED event)
      save() -> bytes                         the canonical serialization (the hash is of these bytes)
      load(state: bytes) -> bool              replace the state (untrusted bytes); False if not one
      tick_of(state: bytes) -> int            the tick saved bytes are at
      entity_count(state) -> int, fields(state, entity) -> [(name, kind, bits)]   optional, for
                                              localizing a desync (kind 0 f32, 1 f64, 2 u32, 3 u64)
    A method that raises ends the session with exit code 1."""
    name, version, build_id, input_size = "", 1, 0, 0

    def entity_count(self, state):
        return 0

    def fields(self, state, entity):
        return []


class Frame:
    """One confirmed (or predicted) frame: tick, players, present and filled masks, each player's
    input as bytes, and the commands as (slot, bytes)."""
    __slots__ = ("tick", "present", "filled", "players", "inputs", "commands")

    def __init__(self, f):
        self.tick, self.present, self.filled, self.players = f.tick, f.present, f.filled, f.players
        n = f.input_size
        raw = C.string_at(f.inputs, n * f.players) if n and f.players else b""
        self.inputs = [raw[p * n:(p + 1) * n] for p in range(f.players)]
        self.commands = [(f.commands[i].slot, C.string_at(f.commands[i].bytes, f.commands[i].size))
                         for i in range(f.command_count)]


class Event:
    __slots__ = ("kind", "tick", "slot", "code", "name", "detail")

    def __init__(self, e):
        self.kind, self.tick, self.slot, self.code = e.kind, e.tick, e.slot, e.code
        self.name, self.detail = e.name.decode(errors="replace"), e.detail.decode(errors="replace")

    def __repr__(self):
        return "Event(kind=%d, tick=%d, slot=%d, code=%d, name=%r, detail=%r)" % (
            self.kind, self.tick, self.slot, self.code, self.name, self.detail)


class _GameBinding:
    """A Game's methods as lockstep_game callbacks; the first exception ends their use."""

    def __init__(self, game):
        self.callback_error = None
        self.client_handle = None  # set once the client exists (compare_game and bisect_game have none)
        keep = self.keep = []
        self.struct = self._callbacks(game, keep)

    def _callbacks(self, game, keep):
        def guard(default, fn):
            def call(*args):
                if self.callback_error is not None:
                    return default
                try:
                    return fn(*args)
                except BaseException as e:  # ends this client's session, never the process
                    self.callback_error = e
                    if self.client_handle:  # the reason, for the ENDED event and the other players
                        _lib.lockstep_client_callback_failed(self.client_handle, (
                            "%s: %s" % (type(e).__name__, e)).encode(errors="replace"))
                    return default
            return call

        def failed(r):
            # False, or a nonzero int (C's convention), is a failure; None and True are not.
            return r is False or (type(r) is int and r != 0)

        def reset(_, settings, n, players):
            return 1 if failed(game.reset(C.string_at(settings, n) if n else b"", players)) else 0

        def step(_, frame):
            return 1 if failed(game.step(Frame(frame.contents))) else 0

        saved = [None]

        def save(_, out, cap):
            # lockstep asks for the length first (cap 0), then for the bytes: one game.save() for both.
            if not cap or saved[0] is None:
                saved[0] = bytes(game.save())
            b = saved[0]
            if cap:
                saved[0] = None
                if len(b) <= cap:
                    C.memmove(out, b, len(b))
            return len(b)

        def load(_, b, n):
            return 0 if game.load(C.string_at(b, n)) is not False else 1

        def tick(_, b, n):
            return int(game.tick_of(C.string_at(b, n)))

        def entity_count(_, b, n):
            return int(game.entity_count(C.string_at(b, n)))

        names = {}

        def fields(_, b, n, entity, out, cap):
            values = list(game.fields(C.string_at(b, n), entity))
            if cap >= len(values):
                for i, (nm, kind, bits) in enumerate(values):
                    key = nm.encode() if isinstance(nm, str) else bytes(nm)
                    names.setdefault(key, C.c_char_p(key))
                    out[i].name, out[i].kind, out[i].bits = names[key].value, int(kind), int(bits) & ((1 << 64) - 1)
            return len(values)

        cbs = [_RESET(guard(1, reset)), _STEP(guard(1, step)), _SAVE(guard(0, save)), _LOAD(guard(1, load)),
               _TICK(guard(0, tick)), _COUNT(guard(0, entity_count)), _FIELDS(guard(0, fields))]
        keep.extend(cbs)
        keep.append(names)
        g = _Game()
        _lib.lockstep_game_init(C.byref(g), C.sizeof(_Game))
        gname = game.name.encode() if isinstance(game.name, str) else bytes(game.name)
        keep.append(gname)
        g.name, g.version, g.build_id, g.input_size = gname, int(game.version), int(game.build_id), int(game.input_size)
        g.reset, g.step, g.save, g.load, g.tick, g.entity_count, g.fields = cbs
        return g


class Client:
    """One player (or spectator) in a session; see lockstep_session.h for every field's meaning.
    Exactly one of module and game."""

    def __init__(self, host="127.0.0.1", port=7777, name="player", *, module=None, game=None, token=None,
                 spectate=False, rejoin_secret=None, last_tick=0, hash_log=None, connect_timeout_ms=20000,
                 playout_max_ms=150, predict=0, connect_token=None, log=None, step_budget_ms=0):
        self._handle = None
        cfg = _Config()
        _lib.lockstep_client_config_init(C.byref(cfg), C.sizeof(_Config))
        keep = []  # every object the library points at, alive as long as the client
        def text(s):
            if s is None:
                return None
            b = s.encode() if isinstance(s, str) else bytes(s)
            keep.append(b)
            return b
        cfg.host, cfg.port, cfg.name, cfg.token = text(host), int(port), text(name), text(token)
        cfg.spectate, cfg.rejoin_secret, cfg.last_tick = 1 if spectate else 0, text(rejoin_secret), int(last_tick)
        cfg.hash_log = text(os.fsdecode(hash_log)) if hash_log is not None else None
        cfg.connect_timeout_ms, cfg.playout_max_ms, cfg.predict = int(connect_timeout_ms), int(playout_max_ms), int(predict)
        cfg.step_budget_us = int(round(float(step_budget_ms) * 1000))  # 0: adaptive
        if (module is None) == (game is None):
            raise Error(1, "module or game: exactly one must be set")
        self._binding = None
        if module is not None:
            cfg.module = module._handle
        else:
            self._binding = _GameBinding(game)
            cfg.game = C.pointer(self._binding.struct)
        if connect_token is not None:
            buf, n = _bytes_arg(connect_token, "connect_token")
            keep.append(buf)
            cfg.connect_token, cfg.connect_token_len = C.cast(buf, _U8P), n
        if log is not None:
            self._log = _LOG(lambda _user, level, line: log(level, line.decode(errors="replace")))
            cfg.log = self._log
        self._keep = keep
        h, err = C.c_void_p(), _error_buffer()
        r = _lib.lockstep_client_create(C.byref(cfg), C.byref(h), err, 256)
        if r:
            _raise(r, err)
        self._handle = h
        if self._binding:
            self._binding.client_handle = h
        self._event = _Event()
        self._event.struct_size = C.sizeof(_Event)
        self._stats = _Stats()
        self._stats.struct_size = C.sizeof(_Stats)

    @property
    def callback_error(self):
        """The exception a Game method raised, which ended the session; None while none has."""
        return self._binding.callback_error if self._binding else None

    def _h(self):
        if not self._handle:
            raise Error(1, "the client is closed")
        return self._handle

    def update(self, now_ns=None):
        """Handles the network, samples input, executes frames; returns when it next has work (ns)."""
        return _lib.lockstep_client_update(self._h(), time.monotonic_ns() if now_ns is None else int(now_ns))

    def _check(self, r):
        if r:
            raise Error(r, _lib.lockstep_client_error(self._h()).decode(errors="replace"))

    def set_input(self, data):
        buf, n = _bytes_arg(data, "input")
        self._check(_lib.lockstep_client_set_input(self._h(), buf, n))

    def add_command(self, data):
        buf, n = _bytes_arg(data, "command")
        self._check(_lib.lockstep_client_add_command(self._h(), buf, n))

    def set_result(self, data):
        buf, n = _bytes_arg(data, "result")
        self._check(_lib.lockstep_client_set_result(self._h(), buf, n))

    def presented(self, now_ns=None):
        """The frame drawn last was presented now: own input to screen is counted to here."""
        _lib.lockstep_client_presented(self._h(), time.monotonic_ns() if now_ns is None else int(now_ns))

    def events(self):
        """The events since the last call, oldest first."""
        out = []
        while _lib.lockstep_client_next_event(self._h(), C.byref(self._event)) == 0 and self._event.kind != 0:
            e = Event(self._event)
            out.append(e)
        return out

    def alpha(self, now_ns=None):
        return _lib.lockstep_client_alpha(self._h(), time.monotonic_ns() if now_ns is None else int(now_ns))

    def predicted_alpha(self, now_ns=None):
        return _lib.lockstep_client_predicted_alpha(self._h(), time.monotonic_ns() if now_ns is None else int(now_ns))

    @property
    def stats(self):
        """lockstep_client_stats as an object with the same field names (a fresh copy each time)."""
        self._check(_lib.lockstep_client_stats_get(self._h(), C.byref(self._stats)))
        s = _Stats.from_buffer_copy(self._stats)
        return s

    @property
    def finished(self):
        return bool(_lib.lockstep_client_finished(self._h()))

    @property
    def exit_code(self):
        return _lib.lockstep_client_exit_code(self._h())

    def leave(self):
        _lib.lockstep_client_leave(self._h())

    def start_service(self):
        """A thread that updates the client at every tick (for loops slower than 100 Hz); close() stops it.
        The game's methods then run on that thread, under the library's lock (docs/EMBEDDING.md, "Threads")."""
        _lib.lockstep_client_start_service(self._h())

    def close(self):
        if self._handle:
            _lib.lockstep_client_destroy(self._handle)
            self._handle = None

    def __enter__(self):
        return self

    def __exit__(self, *exc):
        self.close()

    def __del__(self):
        self.close()
