/* lockstep.h: the C API of lockstep's deterministic core, for other languages (Python's ctypes,
 * C#'s P/Invoke, Rust's FFI) and for tools that only need to step a simulation.
 *
 * It loads a simulation module (built in, or a shared library of module_abi.h), makes worlds from
 * their settings, steps them on confirmed input frames, and reads back what lockstep compares:
 * the state hash (XXH3-64 of the canonical serialization), per-entity hashes and fields, the
 * world's fingerprint and the serialized state. It holds no sockets, clocks or threads: the
 * protocol lives in docs/PROTOCOL.md, and a client in any language speaks it itself.
 *
 * Link with -llockstep_core (pkg-config --libs lockstep-core), or lockstep::core in CMake.
 *
 * Ownership, in the style of ggponet.h and netcode.h:
 *   - A lockstep_module is the library's: valid until the process exits, never freed by the
 *     caller.
 *   - A lockstep_world is the caller's from lockstep_world_create or lockstep_world_clone until
 *     lockstep_world_destroy.
 *   - Every buffer passed in stays the caller's and is read only during the call; nothing keeps a
 *     pointer to it.
 *   - The field names lockstep_world_entity_fields and lockstep_world_global_fields return are
 *     the world's, valid until its next such call or its destruction.
 * One shape for every function (API version 4):
 *   - Returns: a function that can fail returns a lockstep_status (once called lockstep_result,
 *     still an alias); LOCKSTEP_OK is 0, and each error code has one meaning (the list below).
 *     A function that cannot fail returns its value, and its "nothing" (0, NULL) for a NULL handle.
 *   - Buffers: data goes into the caller's `out` of `cap` bytes (or elements) when it fits, and
 *     *out_len (or *count) gets its whole size either way: LOCKSTEP_ERROR_BUFFER when it did not
 *     fit (call with cap 0 and out NULL to size it). Sentences go into `error`/`report` of
 *     `error_cap` bytes, NUL-terminated and truncated to fit (NULL: none written).
 *   - Structs: every struct passed in or filled starts with struct_size (lockstep_session.h).
 *   - No C++ exception leaves any function here: one raised inside is answered with
 *     LOCKSTEP_ERROR_INTERNAL and its sentence, or with the function's "nothing" value where it
 *     returns no status.
 * Versions 2 and 3 of this API are still served to the binaries built against them: their
 * lockstep_world_serialize, lockstep_client_poll_event and the checks' unsuffixed names answer
 * as they did (see LOCKSTEP_API_VERSION). Bytes from a file or the network are untrusted and are
 * checked here: a malformed frame or state is refused with an error, never stepped.
 * Threads: a world may be used by one thread at a time; different worlds by different threads.
 */
#ifndef LOCKSTEP_LOCKSTEP_H
#define LOCKSTEP_LOCKSTEP_H

#include "lockstep/export.h"
#include <stddef.h>
#include <stdint.h>

#include "lockstep/module_abi.h" /* lockstep_frame, lockstep_command, lockstep_field */

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKSTEP_API_VERSION 4u /* 2: structs carry struct_size; the log callback takes user first.
                                 * 3: config.step_budget_us, the stats' step budget, step cost and
                                 *    frame interval, lockstep_client_presented, lockstep_client_error
                                 * 4: one shape: lockstep_event's struct_size and
                                 *    lockstep_client_next_event, lockstep_world_save, error codes
                                 *    11..15 (each code one meaning); the checks that answer with
                                 *    them are reached through names of their own (_v4), so a binary
                                 *    built against version 2 or 3 gets the codes it knew */

typedef enum lockstep_status {
  LOCKSTEP_OK = 0,
  LOCKSTEP_ERROR_ARGUMENT = 1,  /* a NULL handle or pointer, or a value out of its range */
  LOCKSTEP_ERROR_NOT_FOUND = 2, /* no built-in module of that name */
  LOCKSTEP_ERROR_MODULE = 3,    /* the library is missing, not a module, or of another ABI */
  LOCKSTEP_ERROR_SETTINGS = 4,  /* world settings the module refuses */
  LOCKSTEP_ERROR_FRAME = 5,     /* a frame that is not the next tick's, or breaks a limit */
  LOCKSTEP_ERROR_STATE = 6,     /* bytes that are not a state of this module */
  LOCKSTEP_ERROR_BUFFER = 7,    /* the output buffer is too small; the length needed is returned */
  LOCKSTEP_ERROR_RUNTIME = 8,   /* the system refused (no socket) */
  LOCKSTEP_ERROR_CONNECTION = 9, /* the server cannot be reached (an address that does not resolve) */
  LOCKSTEP_ERROR_INTERNAL = 10,  /* an exception inside the library (out of memory, a defect): the call
                                  * was stopped where it was, and its sentence names the function */
  /* Since LOCKSTEP_API_VERSION 4 (versions 2 and 3 answered STATE, NOT_FOUND or SETTINGS): */
  LOCKSTEP_ERROR_DIFFERS = 11,   /* a check ran and found two implementations or states apart */
  LOCKSTEP_ERROR_FILE = 12,      /* a file that cannot be opened, read or written */
  LOCKSTEP_ERROR_FORMAT = 13,    /* a file or document that is not what it should be (damaged, another module's) */
  LOCKSTEP_ERROR_CALLBACK = 14,  /* one of the game's callbacks failed */
  LOCKSTEP_ERROR_FORGED = 15     /* an authenticated document whose MAC does not match */
} lockstep_status;
/* The status's first name, the same type: code written with it compiles unchanged. (It read like
 * the match results that lockstep_result_verify checks, which it is not.) */
typedef lockstep_status lockstep_result;

/* A simulation module: built in or loaded. The library's; never freed. */
typedef struct lockstep_module lockstep_module;
/* One world of a module: its state at one tick. The caller's. */
typedef struct lockstep_world lockstep_world;

/* LOCKSTEP_API_VERSION of the library actually linked; a caller may refuse another. */
LOCKSTEP_API uint32_t lockstep_api_version(void);
/* The library's version, "MAJOR.MINOR.PATCH"; static. */
LOCKSTEP_API const char* lockstep_version(void);
/* The protocol version its session layer speaks (JoinRequest.protocol_version). */
LOCKSTEP_API uint32_t lockstep_protocol_version(void);

/* The built-in module called `name` ("arena", "skirmish"). */
LOCKSTEP_API lockstep_status lockstep_module_builtin(const char* name, const lockstep_module** out, char* error, size_t error_cap);
/* A module from a shared library (module_abi.h), as --sim-lib loads it. One module library per
 * process: the same path again returns the same module, another path is refused. */
LOCKSTEP_API lockstep_status lockstep_module_load(const char* path, const lockstep_module** out, char* error, size_t error_cap);
/* A module from a table the game passes in-process (module_abi.h), checked as a loaded library's
 * is; one module per process (the same table again returns the same module). Its build_id must
 * not be 0. */
LOCKSTEP_API lockstep_status lockstep_module_from_table(const lockstep_module_v2* table, const lockstep_module** out,
                                                        char* error, size_t error_cap);

LOCKSTEP_API const char* lockstep_module_name(const lockstep_module* module);     /* static; NULL for NULL */
LOCKSTEP_API uint32_t lockstep_module_version(const lockstep_module* module);
LOCKSTEP_API uint32_t lockstep_module_input_size(const lockstep_module* module);  /* bytes per player per tick */
/* The build id the module's fingerprint takes: the table's (or, when that is 0, the library
 * file's hash), with the builds of the libraries it links folded in; 0 for a built-in module.
 * With lockstep_module_name and lockstep_module_version it is what a game that owns its state
 * presents (lockstep_game's name, version, build_id) to join a session of this module. */
LOCKSTEP_API uint64_t lockstep_module_build_id(const lockstep_module* module);
/* The fingerprint a JoinRequest presents: that of the module's default world. */
LOCKSTEP_API uint64_t lockstep_module_join_fingerprint(const lockstep_module* module);

/* Parses "key=value,..." (NULL or "": the defaults) into the module's canonical settings bytes,
 * the bytes a Welcome carries. Writes them to out when they fit in cap; *out_len gets their
 * length either way (LOCKSTEP_ERROR_BUFFER when they did not fit). */
LOCKSTEP_API lockstep_status lockstep_module_settings(const lockstep_module* module, const char* text, uint8_t* out, size_t cap,
                                         size_t* out_len, char* error, size_t error_cap);

/* Tick 0 of a world from canonical settings bytes (n = 0: the defaults) for `players` slots
 * (1..32). */
LOCKSTEP_API lockstep_status lockstep_world_create(const lockstep_module* module, const uint8_t* settings, size_t n,
                                      uint32_t players, lockstep_world** out, char* error, size_t error_cap);
/* A world with the same state. NULL when world is NULL. */
LOCKSTEP_API lockstep_world* lockstep_world_clone(const lockstep_world* world);
/* Frees a world; NULL is allowed. */
LOCKSTEP_API void lockstep_world_destroy(lockstep_world* world);

LOCKSTEP_API uint32_t lockstep_world_tick(const lockstep_world* world);
LOCKSTEP_API uint32_t lockstep_world_players(const lockstep_world* world);
/* Executes one confirmed frame. It must be the next tick's (frame->tick == tick + 1), for this
 * world's players and input size, with present/filled masks inside the slots, commands in slot
 * order, each 1..512 bytes, at most 8 and 512 bytes per slot. Otherwise LOCKSTEP_ERROR_FRAME and
 * the world is unchanged. */
LOCKSTEP_API lockstep_status lockstep_world_step(lockstep_world* world, const lockstep_frame* frame, char* error, size_t error_cap);

/* XXH3-64 of the canonical serialization: the hash clients report every tick. */
LOCKSTEP_API uint64_t lockstep_world_hash(const lockstep_world* world);
/* The world's fingerprint: the module's code and version and these settings (Welcome.world_fingerprint). */
LOCKSTEP_API uint64_t lockstep_world_fingerprint(const lockstep_world* world);
LOCKSTEP_API uint32_t lockstep_world_entity_count(const lockstep_world* world);
/* One entity's hash (the desync probe's first step); 0 for an entity out of range. */
LOCKSTEP_API uint64_t lockstep_world_entity_hash(const lockstep_world* world, uint32_t entity);
/* The fields of one entity (entity < lockstep_world_entity_count): the desync probe's Fields
 * answer, each field's bit pattern in the simulation's order. Writes them to out when they fit in
 * cap; *count gets how many there are either way (LOCKSTEP_ERROR_BUFFER when they did not fit:
 * call with cap 0 and out NULL to size the array). lockstep_field is module_abi.h's: kind 0 f32,
 * 1 f64, 2 u32, 3 u64; bits zero-extended. Here each name is the world's, NUL-terminated and valid
 * until the next lockstep_world_entity_fields or lockstep_world_global_fields call on the same
 * world or its lockstep_world_destroy. LOCKSTEP_ERROR_ARGUMENT (and *count 0 when count is not
 * NULL) for a NULL world or count, out NULL with cap > 0, or an entity out of range. */
LOCKSTEP_API lockstep_status lockstep_world_entity_fields(const lockstep_world* world, uint32_t entity, lockstep_field* out,
                                             size_t cap, size_t* count, char* error, size_t error_cap);
/* The state that belongs to no entity (tick, PRNG, ...): the desync probe's Global answer, in the
 * same form and with the same rules as lockstep_world_entity_fields. */
LOCKSTEP_API lockstep_status lockstep_world_global_fields(const lockstep_world* world, lockstep_field* out, size_t cap,
                                             size_t* count, char* error, size_t error_cap);

/* The canonical serialization into out when it fits in cap; *out_len gets its length either way
 * (LOCKSTEP_ERROR_BUFFER when it did not fit). Since LOCKSTEP_API_VERSION 4. */
LOCKSTEP_API lockstep_status lockstep_world_save(const lockstep_world* world, uint8_t* out, size_t cap, size_t* out_len);
/* Versions 2 and 3's form of lockstep_world_save: writes when it fits and returns the length
 * either way (0 for NULL). */
LOCKSTEP_API size_t lockstep_world_serialize(const lockstep_world* world, uint8_t* out, size_t cap);
/* Replaces the state with `bytes` (untrusted: a Snapshot's, a file's). On LOCKSTEP_ERROR_STATE
 * the world is unchanged. */
LOCKSTEP_API lockstep_status lockstep_world_load(lockstep_world* world, const uint8_t* bytes, size_t n, char* error,
                                    size_t error_cap);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_LOCKSTEP_H */
