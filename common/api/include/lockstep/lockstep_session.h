/* lockstep_session.h: the C API for joining a session from a game's own loop, in any language
 * with a C FFI (docs/EMBEDDING.md). The game calls lockstep_client_update() from its loop at any
 * rate with its own monotonic time, sets its input when it changes, takes events, and draws
 * between the previous and current confirmed states at lockstep_client_alpha().
 *
 * Two ways to own the simulation:
 *   (a) lockstep steps a module: config.module from lockstep_module_builtin, lockstep_module_load
 *       (a .so) or lockstep_module_from_table (a table the game passes in-process, no dlopen);
 *       the game reads the module's own state with lockstep_client_state().
 *   (b) the game owns its state (the GGPO model): config.game holds callbacks; lockstep hands the
 *       game each confirmed frame to step, asks it to save and load its state (for joins,
 *       rejoins, resyncs and the history desync probes look into), and asks it about a saved
 *       state's entities and fields when a desync is localized. The hash is lockstep's: XXH3-64
 *       of what save() writes, the same the server's module computes.
 *
 * Link with -llockstep_net -llockstep_core (pkg-config --libs lockstep gives both: the module calls
 * are in core), or lockstep::net in CMake.
 * Prediction in mode (b) (config.predict > 0), GGPO's model on the game's one state: after every
 * lockstep_client_update the game's state is the predicted world, at stats.predicted_tick (the
 * confirmed world when nothing is predicted), and the game draws it. Inside an update lockstep
 * may move the game's state back and forth: it calls load() with bytes save() wrote before, then
 * step() with frames of the next ticks (frame->tick says which), saving after each step. A step
 * that was predicted right is never repeated: when its tick is confirmed with the frame it was
 * predicted with, its saved state becomes the confirmed one without any callback. So a right
 * prediction costs one step and one save a tick, and load() is called only after a
 * misprediction (to roll back) or a snapshot. Callbacks are only ever called from inside
 * lockstep_client_update (and lockstep_compare_game), on the thread calling it, or on the service
 * thread after lockstep_client_start_service.
 *
 * Versioned structs (ggponet.h's and Box2D's pattern): every struct passed in or filled starts
 * with struct_size, which its *_init() call sets (C: the *_defaults() macro, which passes sizeof;
 * an output struct: the caller, to sizeof the struct). Structs only grow, at their end, and each
 * field added says since which LOCKSTEP_API_VERSION. A library newer than the game's header reads
 * and writes only the fields the game knows (any struct_size from API version 2's on); the others
 * keep their defaults. A library older than the header refuses a struct larger than it knows
 * (LOCKSTEP_ERROR_ARGUMENT, with a sentence naming the struct and saying which side is newer).
 *
 * Ownership: a lockstep_client is the caller's from lockstep_client_create until
 * lockstep_client_destroy. Strings and buffers passed in are read during the call only (the
 * game's callbacks and user pointer are copied; user must stay valid while the client lives).
 * Results and errors as in lockstep.h. A callback
 * that fails (returns nonzero, or a save of the wrong length) ends the session with exit code 1
 * and an event saying which; it never stalls the session for the other players.
 * Threads: one client is used by one thread at a time (lockstep_client_start_service excepted).
 */
#ifndef LOCKSTEP_LOCKSTEP_SESSION_H
#define LOCKSTEP_LOCKSTEP_SESSION_H

#include "lockstep/export.h"
#include <stddef.h>
#include <stdint.h>

#include "lockstep/lockstep.h"

#ifdef __cplusplus
extern "C" {
#endif

typedef struct lockstep_client lockstep_client;

/* (b) The game's own state. Every state argument is bytes save() wrote. Return 0 for success. */
typedef struct lockstep_game {
  uint32_t struct_size;   /* sizeof(lockstep_game): lockstep_game_defaults sets it */
  void* user;             /* passed to every callback, first */
  const char* name;       /* the module's name, version and build id as the server's module has them: */
  uint32_t version;       /*   together they make the fingerprint a join presents */
  uint64_t build_id;
  uint32_t input_size;    /* bytes of one player's input per tick, 0..64 */
  /* A new world: tick 0 of these settings (the Welcome's bytes) for `players` slots. */
  int (*reset)(void* user, const uint8_t* settings, size_t n, uint32_t players);
  /* Steps the game's state by one confirmed frame (frame->tick is its tick + 1). */
  int (*step)(void* user, const lockstep_frame* frame);
  /* Writes the canonical serialization into out if it fits in cap; returns its length. */
  size_t (*save)(void* user, uint8_t* out, size_t cap);
  /* Replaces the game's state with `bytes` (untrusted: a snapshot's); nonzero if they are not a state. */
  int (*load)(void* user, const uint8_t* bytes, size_t n);
  /* The tick a saved state is at. */
  uint32_t (*tick)(void* user, const uint8_t* state, size_t n);
  /* A saved state's entities, and one entity's fields (entity UINT32_MAX: the global state) into
   * out if they fit in cap; returns how many there are (as module_abi.h's fields). */
  uint32_t (*entity_count)(void* user, const uint8_t* state, size_t n);
  size_t (*fields)(void* user, const uint8_t* state, size_t n, uint32_t entity, lockstep_field* out, size_t cap);
} lockstep_game;

/* Everything 0 / NULL, and struct_size, into the first struct_size bytes of *game (a binding
 * passes its own struct's size; C uses lockstep_game_defaults). */
LOCKSTEP_API void lockstep_game_init(lockstep_game* game, size_t struct_size);
#define lockstep_game_defaults(game) lockstep_game_init((game), sizeof *(game))

typedef struct lockstep_client_config {
  uint32_t struct_size;        /* sizeof(lockstep_client_config): lockstep_client_config_defaults sets it */
  const char* host;            /* "127.0.0.1" */
  uint16_t port;               /* 7777 */
  const char* name;            /* "player"; 1..32 printable ASCII */
  const char* token;           /* a shared join secret, or NULL */
  int spectate;                /* join without a player slot */
  const char* rejoin_secret;   /* come back into a slot, or NULL */
  uint32_t last_tick;          /* leave after this tick; 0 = stay to the end */
  const lockstep_module* module;  /* (a), or NULL */
  const lockstep_game* game;      /* (b), or NULL: exactly one of module and game */
  /* Every line the library logs goes here (level 0 debug .. 3 error) instead of stderr; NULL: stderr. */
  void (*log)(void* user, int level, const char* line);
  void* log_user;
  const char* hash_log;        /* write "<tick> <16 hex digits>" per executed tick to this file, or NULL */
  int64_t connect_timeout_ms;  /* 20000 */
  int64_t playout_max_ms;      /* 150: the most frames wait past their due time for a smooth view */
  uint32_t predict;            /* 0: lockstep only; N: a predicted world up to N ticks ahead (docs/EMBEDDING.md) */
  /* A connect token from the game's matchmaker (lockstep_token.h; its file's bytes, binary or
   * base64), or NULL: the join and all play are then sealed. port 0: its servers in turn, each
   * for an equal share of connect_timeout_ms, until one welcomes the player. */
  const uint8_t* connect_token;
  size_t connect_token_len;
  /* Since LOCKSTEP_API_VERSION 3 (a struct_size of 144, API version 2's, leaves it 0). */
  /* The longest one update may spend stepping frames and re-simulating the predicted world before
   * it returns, microseconds. 0 (the default): adaptive, from the game's measured step cost and
   * frame interval (docs/EMBEDDING.md, "The step budget"). */
  int64_t step_budget_us;
} lockstep_client_config;

/* The defaults above, and struct_size, into the first struct_size bytes of *config (a binding
 * passes its own struct's size; C uses lockstep_client_config_defaults). */
LOCKSTEP_API void lockstep_client_config_init(lockstep_client_config* config, size_t struct_size);
#define lockstep_client_config_defaults(config) lockstep_client_config_init((config), sizeof *(config))

typedef enum lockstep_event_kind {
  LOCKSTEP_EVENT_NONE = 0,           /* lockstep_client_next_event: no event waiting */
  LOCKSTEP_EVENT_JOINED = 1,         /* slot: ours (-1 a spectator); detail: the rejoin secret */
  LOCKSTEP_EVENT_STARTED = 2,        /* the session runs */
  LOCKSTEP_EVENT_PLAYER_JOINED = 3,  /* slot, name (a rejoin: code 1) */
  LOCKSTEP_EVENT_PLAYER_LEFT = 4,    /* slot, name, tick, detail: why */
  LOCKSTEP_EVENT_DESYNC = 5,         /* tick: the server found our state diverged there */
  LOCKSTEP_EVENT_RESYNCED = 6,       /* tick: the server's state loaded */
  LOCKSTEP_EVENT_KICKED = 7,         /* detail: why */
  LOCKSTEP_EVENT_ENDED = 8           /* code: the exit code; detail: why */
} lockstep_event_kind;

typedef struct lockstep_event {
  uint32_t struct_size;  /* the caller sets it: sizeof(lockstep_event). Since LOCKSTEP_API_VERSION 4 */
  uint32_t kind;  /* lockstep_event_kind */
  uint32_t tick;
  int32_t slot;
  int32_t code;
  char name[33];     /* NUL-terminated */
  char detail[256];  /* NUL-terminated, truncated to fit */
} lockstep_event;

/* The event as versions 2 and 3 had it (no struct_size), for lockstep_client_poll_event. */
typedef struct lockstep_event_v3 {
  uint32_t kind;
  uint32_t tick;
  int32_t slot;
  int32_t code;
  char name[33];
  char detail[256];
} lockstep_event_v3;

typedef struct lockstep_client_stats {
  uint32_t struct_size;      /* the caller sets it: sizeof(lockstep_client_stats) */
  uint32_t tick;             /* the executed (confirmed) tick */
  int32_t slot;
  uint32_t rtt_ms, jitter_ms;
  double loss;               /* 0..1 */
  double lead_ms;            /* inputs are sampled this far ahead of the tick clock */
  double playout_ms;         /* frames are executed this far behind their due time */
  uint32_t frames_behind;    /* received, not executed yet */
  uint64_t inputs_filled;    /* our inputs the server filled (late or lost) */
  uint64_t frames_drawn, frames_clamped;  /* alpha queries counted as frames, and those at alpha 1 */
  uint64_t hash;             /* of the executed tick */
  /* Own input to screen: from a tick's input being sampled to the presentation of the first drawn
   * frame showing that tick (the predicted one when predicting), milliseconds, over the session.
   * Presented: when the game says so (lockstep_client_presented), else one frame interval after
   * the frame was drawn (its alpha queried), the next vsync of a loop that presents each frame. */
  double input_to_screen_p50_ms, input_to_screen_p99_ms;
  /* Prediction (config.predict > 0). */
  uint32_t predict;          /* the depth now (lowered when re-simulating cannot keep up) */
  uint32_t predicted_tick;   /* the predicted world's tick: in mode (b) the game's state after an update */
  uint64_t predicted_ticks;  /* ticks stepped on the predicted world, re-simulations included */
  uint64_t rebuilds;         /* times the predicted world was rebuilt from the confirmed one */
  uint64_t verified_predictions, mispredictions;  /* confirmed ticks that had been predicted; of those, wrong */
  /* Mode (b): the game's callbacks, all told. reused: confirmed ticks whose state was a predicted
   * step's save, taken without any callback. Per confirmed tick with right predictions: one step,
   * one save, no load. */
  uint64_t game_steps, game_saves, game_loads, game_reused;
  /* Since LOCKSTEP_API_VERSION 3 (a struct_size of 176, API version 2's, is filled to game_reused). */
  double step_budget_ms;     /* the step budget now (config.step_budget_us, or the adaptive one) */
  double step_cost_us;       /* the measured cost of one step (mode b: callbacks included), recent mean */
  double frame_ms;           /* the game's frame interval as lockstep sees it (between drawn frames) */
} lockstep_client_stats;

/* The clock every now_ns argument is on: CLOCK_MONOTONIC in nanoseconds (a binding whose
 * language has no such clock calls this). */
LOCKSTEP_API int64_t lockstep_now_ns(void);

/* Starts joining. LOCKSTEP_ERROR_ARGUMENT for a bad config (the sentence names the field). */
LOCKSTEP_API lockstep_status lockstep_client_create(const lockstep_client_config* config, lockstep_client** out, char* error,
                                       size_t error_cap);
/* Leaves at once and frees the client; NULL is allowed. */
LOCKSTEP_API void lockstep_client_destroy(lockstep_client* client);
/* Handles the network, samples the input for every tick due by now_ns and executes the frames
 * whose playout time has come. Returns when it next has work (monotonic ns); 0 for NULL. */
LOCKSTEP_API int64_t lockstep_client_update(lockstep_client* client, int64_t now_ns);
/* This player's input from now on: at most the module's input size (shorter is zero-padded). */
LOCKSTEP_API lockstep_status lockstep_client_set_input(lockstep_client* client, const uint8_t* input, size_t n);
/* A command of 1..512 bytes for the next ticks. */
LOCKSTEP_API lockstep_status lockstep_client_add_command(lockstep_client* client, const uint8_t* bytes, size_t n);
/* The game's result as it stands (a winner, scores: 0..256 bytes the game defines); a later call
 * replaces it. At the end the server settles the players' results by majority and authenticates
 * the session's result for the game's backend (lockstep_result_verify in lockstep_token.h). */
LOCKSTEP_API lockstep_status lockstep_client_set_result(lockstep_client* client, const uint8_t* bytes, size_t n);
/* Takes the oldest event into *out (set out->struct_size first): out->kind is
 * LOCKSTEP_EVENT_NONE when there is none. LOCKSTEP_ERROR_ARGUMENT for a NULL client or out, or a
 * struct_size this library does not know. Since LOCKSTEP_API_VERSION 4. */
LOCKSTEP_API lockstep_status lockstep_client_next_event(lockstep_client* client, lockstep_event* out);
/* Versions 2 and 3's form: the oldest event into *out, 1; 0 when there is none. */
LOCKSTEP_API int lockstep_client_poll_event(lockstep_client* client, lockstep_event_v3* out);
/* The blend factor 0..1 for a frame drawn at now_ns (counted as a drawn frame). */
LOCKSTEP_API double lockstep_client_alpha(lockstep_client* client, int64_t now_ns);
/* The game presented the frame it drew last (its swap or present call returned) at now_ns: own
 * input to screen is then counted to this time instead of one frame after the draw (optional;
 * call it after every present once called at all). Since LOCKSTEP_API_VERSION 3. */
LOCKSTEP_API void lockstep_client_presented(lockstep_client* client, int64_t now_ns);
/* Fills *out up to out->struct_size (set it to sizeof(lockstep_client_stats) first: any size from
 * API version 2's on). LOCKSTEP_ERROR_ARGUMENT with lockstep_client_error() saying why. */
LOCKSTEP_API lockstep_status lockstep_client_stats_get(const lockstep_client* client, lockstep_client_stats* out);
/* From inside a game callback about to return a failure (mode b): why, in the game's words (a
 * binding passes its exception's type and message; at most 200 bytes are kept). The session's end
 * says it in the ENDED event, and the other players see it as the reason this player left. Since
 * LOCKSTEP_API_VERSION 3. */
LOCKSTEP_API void lockstep_client_callback_failed(lockstep_client* client, const char* why);
/* The sentence of the last call on this client that failed ("" when none has), valid until the
 * next call on it. Since LOCKSTEP_API_VERSION 3. */
LOCKSTEP_API const char* lockstep_client_error(const lockstep_client* client);
/* (a) The module's own state (the lockstep_sim* its table defines) and the one a tick before, for
 * drawing; NULL before the welcome or in mode (b). Valid until the next update. */
LOCKSTEP_API const void* lockstep_client_state(const lockstep_client* client);
LOCKSTEP_API const void* lockstep_client_previous_state(const lockstep_client* client);
/* (a) With predict > 0: the predicted world's module state and the one a tick before it, and the
 * blend factor between them at now_ns (counted as a drawn frame); NULL / the confirmed alpha when
 * there is none. Never hashed or reported: the confirmed state above is. */
LOCKSTEP_API const void* lockstep_client_predicted_state(const lockstep_client* client);
LOCKSTEP_API const void* lockstep_client_predicted_previous_state(const lockstep_client* client);
LOCKSTEP_API double lockstep_client_predicted_alpha(lockstep_client* client, int64_t now_ns);
/* 1 once the session is over for this client; its exit code (0, 1, 3 desync, 4 connection). */
LOCKSTEP_API int lockstep_client_finished(const lockstep_client* client);
LOCKSTEP_API int lockstep_client_exit_code(const lockstep_client* client);
/* Leaves cleanly; the session ends with exit code 0 once the server is told. */
LOCKSTEP_API void lockstep_client_leave(lockstep_client* client);
/* Two implementations of one game: the game's own rules (mode b's callbacks, in any language)
 * beside the module the server hosts, over the synctest's variants (1, 2 and the most players the
 * module builds, up to 8) and its seeded input and command streams, `ticks` ticks each, settings
 * as the Welcome carries them (n 0: the defaults). After every tick save()'s bytes must equal the
 * module's serialization. LOCKSTEP_OK when they do, with a sentence in report; LOCKSTEP_ERROR_DIFFERS
 * at the first difference: the identity (name, version, build id, input size), or the variant,
 * tick, and entity and field with both values (through the game's fields callback), or the byte
 * offset; LOCKSTEP_ERROR_CALLBACK when one of the game's callbacks fails. The game's callbacks are
 * called on this thread; the module must be loaded. */
LOCKSTEP_API lockstep_status lockstep_compare_game_v4(const lockstep_module* module, const lockstep_game* game,
                                                      const uint8_t* settings, size_t n, uint32_t ticks, char* report,
                                                      size_t report_cap);

/* Where a game's own implementation parts from the module on a recorded session: the replay at
 * `replay_path` (a .replay, or a desync bundle) with keyframes, both sides loading each keyframe's
 * bytes and stepping the stretch after it. linear != 0 tests every stretch in order (exact for a
 * difference that shows only now and then); linear == 0 gallops then halves, assuming a parting
 * lasts once it begins. Either way LOCKSTEP_OK means every tick was compared and equal. The first
 * differing tick is located and stepped again: LOCKSTEP_ERROR_DIFFERS when they part, report naming
 * the tick, the entity and field with both values, and the ticks simulated against a linear
 * search's; LOCKSTEP_ERROR_DIFFERS too when one side gives another result stepped again (it differs
 * from itself; report says which); LOCKSTEP_ERROR_FILE for a file that cannot be read,
 * LOCKSTEP_ERROR_FORMAT for a replay of another module or a damaged one (report says which),
 * LOCKSTEP_ERROR_CALLBACK when one of the game's callbacks fails. */
LOCKSTEP_API lockstep_status lockstep_bisect_game_v4(const lockstep_module* module, const lockstep_game* game,
                                                     const char* replay_path, int linear, char* report, size_t report_cap);

/* Two implementations of one game with no module (a C# port and a C game, say): one writes its
 * trace, the other compares against it. lockstep_game_trace_write steps `game` over seeded input
 * and command streams (their own, the same on every machine) for 1, 2 and `players` players,
 * `ticks` ticks each, settings as the Welcome carries them, and writes every tick's save() bytes
 * with the game's identity to `path`. lockstep_game_trace_compare replays the same streams on
 * `game` and compares its save() with the trace's bytes at every tick: LOCKSTEP_OK when all are
 * equal; LOCKSTEP_ERROR_DIFFERS at the first difference, the report naming the identity, or the
 * variant, tick, entity and field with both values (both states read through this game's fields
 * callback), or the byte offset. A file that is not a whole trace: LOCKSTEP_ERROR_FORMAT; one that
 * cannot be opened or written: LOCKSTEP_ERROR_FILE; a callback of the game's that fails:
 * LOCKSTEP_ERROR_CALLBACK. Since LOCKSTEP_API_VERSION 3. */
LOCKSTEP_API lockstep_status lockstep_game_trace_write_v4(const lockstep_game* game, const uint8_t* settings, size_t n,
                                                          uint32_t players, uint32_t ticks, const char* path, char* report,
                                                          size_t report_cap);
LOCKSTEP_API lockstep_status lockstep_game_trace_compare_v4(const lockstep_game* game, const char* path, char* report,
                                                            size_t report_cap);

/* The checks above under their plain names answer as versions 2 and 3 did, for the binaries built
 * against them: a difference or a failed callback is LOCKSTEP_ERROR_STATE, a file that cannot be
 * opened or written LOCKSTEP_ERROR_NOT_FOUND, a damaged one LOCKSTEP_ERROR_SETTINGS. */
LOCKSTEP_API lockstep_status lockstep_compare_game(const lockstep_module* module, const lockstep_game* game,
                                                   const uint8_t* settings, size_t n, uint32_t ticks, char* report,
                                                   size_t report_cap);
LOCKSTEP_API lockstep_status lockstep_bisect_game(const lockstep_module* module, const lockstep_game* game,
                                                  const char* replay_path, int linear, char* report, size_t report_cap);
LOCKSTEP_API lockstep_status lockstep_game_trace_write(const lockstep_game* game, const uint8_t* settings, size_t n,
                                                       uint32_t players, uint32_t ticks, const char* path, char* report,
                                                       size_t report_cap);
LOCKSTEP_API lockstep_status lockstep_game_trace_compare(const lockstep_game* game, const char* path, char* report,
                                                         size_t report_cap);
/* Code built against this header reaches the checks by their plain names as the _v4 entry points,
 * with this version's codes (define LOCKSTEP_PLAIN_NAMES before including it for the others). */
#ifndef LOCKSTEP_PLAIN_NAMES
#define lockstep_compare_game lockstep_compare_game_v4
#define lockstep_bisect_game lockstep_bisect_game_v4
#define lockstep_game_trace_write lockstep_game_trace_write_v4
#define lockstep_game_trace_compare lockstep_game_trace_compare_v4
#endif

/* The size of one of this API's structs (field NULL), or the offset and size of one of its fields,
 * as this library was built: struct_name and field as the headers spell them ("lockstep_game",
 * "build_id"). For bindings to hold their own layouts to (the C# and Python bindings do at load):
 * a mismatch is a binding made for another version. LOCKSTEP_ERROR_NOT_FOUND for a name it does
 * not know. Covers lockstep_command, _frame, _field, _game, _client_config, _event, _event_v3,
 * _client_stats and lockstep_token_request. */
LOCKSTEP_API lockstep_status lockstep_layout(const char* struct_name, const char* field, size_t* offset, size_t* size);
/* A thread calling update at every tick (for loops slower than 100 Hz); stopped by destroy. */
LOCKSTEP_API void lockstep_client_start_service(lockstep_client* client);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_LOCKSTEP_SESSION_H */
