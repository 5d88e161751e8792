/* The C entry point of a simulation module built as a shared library, loaded by the stock
 * executables with --sim-lib FILE.so. Plain C, so the library can come from another compiler, another
 * C++ standard library, or another language. docs/MODULES.md describes the contract.
 *
 * A module library exports one function:
 *
 *     const lockstep_module_v2* lockstep_module(uint32_t host_abi_version);
 *
 * The host passes the ABI version it speaks (LOCKSTEP_MODULE_ABI_VERSION); the library returns
 * its function table (static storage, never freed), or NULL when it cannot serve that version.
 * The host refuses a table whose abi_version differs from its own.
 *
 * Ownership: the host owns nothing the module allocates except through create/clone/destroy.
 * Every buffer the host passes in is the host's and valid only for the call. Strings in the
 * table are static. The module keeps no global mutable state: the host may hold many
 * simulations at once (the current state, the previous one, past states for desync probes).
 *
 * Determinism: step() must be a pure function of the state and the frame: no clock, no I/O, no
 * global random, no uninitialised bytes in what serialize() writes, and floating point built
 * without contraction (-ffp-contract=off) or fast-math. hash() is the host's: XXH3-64 of the
 * bytes serialize() writes.
 */
#ifndef LOCKSTEP_MODULE_ABI_H
#define LOCKSTEP_MODULE_ABI_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

#define LOCKSTEP_MODULE_ABI_VERSION 2u /* 1: 2-byte inputs only, no commands */
#define LOCKSTEP_MODULE_ENTRY "lockstep_module"

/* The module's own simulation state: opaque to the host. */
typedef struct lockstep_sim lockstep_sim;

/* One command a player issued: `size` (1..512) bytes the module defines. */
typedef struct lockstep_command {
  uint32_t slot;
  uint32_t size;
  const uint8_t* bytes;
} lockstep_command;

/* One tick's confirmed input frame. inputs holds `players` inputs of `input_size` bytes each, in
 * slot order; a slot not present holds zeros. commands: in slot order, each slot's in the order
 * issued (at most 8 and 512 bytes per slot). An input or command the module finds invalid must do
 * nothing (the same nothing on every peer). */
typedef struct lockstep_frame {
  uint32_t tick;     /* the tick this frame makes: the state's tick + 1 */
  uint32_t present;  /* bit p: slot p is in the session */
  uint32_t filled;   /* bit p: slot p's input was late and repeats its previous one */
  uint32_t players;
  uint32_t input_size;
  const uint8_t* inputs;
  uint32_t command_count;
  const lockstep_command* commands;
} lockstep_frame;

/* Where a bot or the controls issue commands: add() copies the bytes and returns 1, or 0 when the
 * command is empty or breaks a limit (8 commands, 512 bytes per tick). */
typedef struct lockstep_command_sink {
  void* ctx;
  int (*add)(void* ctx, const uint8_t* bytes, size_t n);
} lockstep_command_sink;

/* A named value of the state, for desync reports. kind: 0 f32, 1 f64, 2 u32, 3 u64; bits is the
 * value's bit pattern, zero-extended. name is static. */
typedef struct lockstep_field {
  const char* name;
  uint32_t kind;
  uint64_t bits;
} lockstep_field;

/* One shape to draw (see DrawShape in simulation.hpp). kind: 0 circle (x, y, radius a), 1 rect
 * (x, y, width a, height b), 2 line (x, y) to (a, b), 3 text (x, y, height a). text: for text
 * only, printable ASCII, valid until the next draw call on the same state. */
typedef struct lockstep_shape {
  uint32_t kind;
  float x, y, a, b;
  int32_t player;    /* >= 0: this player's colour; -1: palette */
  uint32_t palette;  /* 0..7 */
  const char* text;
} lockstep_shape;

/* The local player's controls (see Controls in module.hpp): bit k of held is key k in the order
 * Up, Down, Left, Right, Space, Enter, A..Z; the pointer and the world's size in world units. */
typedef struct lockstep_controls {
  uint64_t held;
  int32_t pointer_valid, pointer_down, secondary_down;
  float pointer_x, pointer_y;
  float world_width, world_height;
} lockstep_controls;

typedef struct lockstep_module_v2 {
  uint32_t abi_version;        /* LOCKSTEP_MODULE_ABI_VERSION */
  const char* name;            /* what --sim shows; [a-z0-9_-], 1..32 characters */
  uint32_t version;            /* the module's own version; enters the fingerprint */
  uint64_t build_id;           /* changes whenever results may change (code, constants, build
                                  settings); enters the fingerprint. LOCKSTEP_BUILD_ID, which
                                  lockstep_add_module() derives from the sources, does this by
                                  itself; 0: the host hashes the library file's bytes instead */
  const char* description;     /* one line */
  const char* settings_help;   /* e.g. "seed=1 (world seed) size=64 (...)" */
  const char* controls_help;   /* e.g. "arrows steer" */
  uint32_t input_size;         /* bytes of one player's input per tick, 0..64 */
  const char* golden_world;    /* a world for tests and benchmarks, "key=value,..." (may be "") */

  /* World settings: apply "key=value,..." on top of `settings` (n bytes; none: the defaults)
   * and write the canonical bytes to out (cap bytes), their length to *out_len. Returns 1, or 0
   * with a sentence in error (error_cap bytes, NUL-terminated). */
  int (*parse_world)(const char* text, const uint8_t* settings, size_t n, uint8_t* out, size_t cap, size_t* out_len,
                     char* error, size_t error_cap);
  /* The settings as "key=value,..." text into out (cap bytes, NUL-terminated); returns the
   * length it needs, 0 when the bytes are not this module's settings. */
  size_t (*settings_text)(const uint8_t* settings, size_t n, char* out, size_t cap);

  /* Tick 0 of a world; NULL when the settings or the player count (1..32) are not valid. */
  lockstep_sim* (*create)(const uint8_t* settings, size_t n, uint32_t players);
  void (*destroy)(lockstep_sim* sim);
  lockstep_sim* (*clone)(const lockstep_sim* sim);
  /* Copies `from`'s state into `to` (both of this module). */
  void (*assign)(lockstep_sim* to, const lockstep_sim* from);

  uint32_t (*tick)(const lockstep_sim* sim);
  void (*step)(lockstep_sim* sim, const lockstep_frame* frame);
  /* Writes the canonical serialization into out if it fits in cap; returns its length either way. */
  size_t (*serialize)(const lockstep_sim* sim, uint8_t* out, size_t cap);
  /* Replaces the state with `bytes` (untrusted); returns 0 and leaves the state as it was when
   * they are not a valid state of this module. */
  int (*deserialize)(lockstep_sim* sim, const uint8_t* bytes, size_t n);

  uint32_t (*entity_count)(const lockstep_sim* sim);
  /* The fields of one entity (or, for entity UINT32_MAX, the global state), into out if they fit
   * in cap; returns how many there are. */
  size_t (*fields)(const lockstep_sim* sim, uint32_t entity, lockstep_field* out, size_t cap);
  /* Test hook: flip the lowest bit of one stored value picked by `selector`. */
  void (*perturb)(lockstep_sim* sim, uint64_t selector);

  /* Shapes blended from `previous` to `current` by alpha, into out if they fit in cap; returns
   * how many there are. */
  size_t (*draw)(const lockstep_sim* current, const lockstep_sim* previous, float alpha, lockstep_shape* out,
                 size_t cap);
  float (*width)(const lockstep_sim* sim);
  float (*height)(const lockstep_sim* sim);

  /* A bot's input for a tick (input_size bytes into input, zeroed) and its commands: a pure
   * function of (seed, tick). */
  void (*bot)(uint64_t seed, uint32_t tick, uint8_t* input, const lockstep_command_sink* commands);
  /* The local player's input from this frame's controls, and the commands they issue (sent once).
   * memory: 16 values the module keeps between frames (zero at first). */
  void (*from_controls)(const lockstep_controls* controls, int32_t memory[16], uint8_t* input,
                        const lockstep_command_sink* commands);
} lockstep_module_v2;

typedef const lockstep_module_v2* (*lockstep_module_fn)(uint32_t host_abi_version);

/* Optional exports of a module library for the desync tools, found by name when the library is
 * loaded (a library without them still loads; the page then shows raw values):
 *   size_t lockstep_entity_kind(const lockstep_sim* sim, uint32_t entity, char* out, size_t cap);
 *       what the entity is ("ship", "unit of player 2")
 *   int lockstep_entity_position(const lockstep_sim* sim, uint32_t entity, float* x, float* y);
 *       where it is in world units, for the page to circle it; 0 when nowhere
 *   size_t lockstep_input_text(const uint8_t* input, size_t n, char* out, size_t cap);
 *   size_t lockstep_command_text(const uint8_t* command, size_t n, char* out, size_t cap);
 *       one player's input of a tick, and one command, as a line of text ("thrust 127 turn -5")
 * The text functions write at most cap bytes, NUL-terminated, and return the length they need
 * (0: nothing to say). */
typedef size_t (*lockstep_entity_kind_fn)(const lockstep_sim* sim, uint32_t entity, char* out, size_t cap);
typedef int (*lockstep_entity_position_fn)(const lockstep_sim* sim, uint32_t entity, float* x, float* y);
typedef size_t (*lockstep_bytes_text_fn)(const uint8_t* bytes, size_t n, char* out, size_t cap);

#ifdef __cplusplus
}
#endif

#endif /* LOCKSTEP_MODULE_ABI_H */
