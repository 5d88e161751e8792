/* A simulation module in plain C, built as a shared library and loaded by the stock server,
 * client and replay tool with --sim-lib (tests/e2e/sim_lib.sh). Walkers on a line, in integer
 * arithmetic: each player's walker accelerates by its input's first byte; a seeded pulse moves
 * every walker a little each tick. Built with -DWALKERS_ABI=N it claims another ABI version, and
 * with -DWALKERS_NO_ENTRY it exports no entry point: the refusals are tested with both. Built with
 * -DWALKERS_BROKEN=N it breaks the Simulation contract on purpose, for lockstep-synctest to catch:
 * 1 its step reads an address (the same within a process, another in the next), 2 its
 * serialization leaves out the pulse, 3 its desync fields leave out the velocity, 4 its step
 * keeps a cache outside the state that assumes time only moves forward (stepping a tick again
 * after a rollback reads the later tick's value), 5 its step calls libm's sin (the same on one
 * machine, not across libms: only lockstep-lint sees it), 6 a new world leaves the velocities
 * unwritten, 7 its serialization copies a struct with padding bytes, 8 its step visits the
 * walkers in the order a hash table keyed by pointers keeps them (the address modulo a prime), and
 * each walker's nudge depends on those visited before it. */
#include <stdint.h>
#include <stdlib.h>
#include <string.h>
#include <stdio.h>
#if WALKERS_BROKEN == 5
#include <math.h>
#endif

#include "lockstep/module_abi.h"

#ifndef WALKERS_ABI
#define WALKERS_ABI LOCKSTEP_MODULE_ABI_VERSION
#endif

#ifndef WALKERS_BROKEN
#define WALKERS_BROKEN 0
#endif

/* Built with -DWALKERS_RULES=2 its walkers keep less of their velocity each tick: other rules
 * under the same name and version, which only the build id (derived from the sources and the
 * definitions by lockstep_derive_build_id) tells apart. */
#ifndef WALKERS_RULES
#define WALKERS_RULES 1
#endif
#ifdef WALKERS_UNCOVERED
/* What lockstep_add_module(... UNCOVERED <names>) writes: here a name that matches no library. */
__attribute__((visibility("default"))) const char lockstep_uncovered_libraries[] = WALKERS_UNCOVERED;
#endif
#ifdef WALKERS_ENGINE
/* A stand-in for a statically linked engine's arithmetic (walkers_plain and walkers_fma): the
 * engine of wengine.c compiled into the module itself, in walkers_fma with the fused multiply-add
 * that contraction makes of a * b + c: other machine code under the same fingerprint
 * (tests/e2e/equal_builds.sh). */
#ifdef WALKERS_ENGINE_FMA
#define WENGINE_FMA
#endif
#include "wengine.c"
#endif
#ifdef WALKERS_WENGINE
/* A module that links an engine library (wengine.c) and opts it out of its fingerprint: it calls
 * the engine at load so that the link is needed. */
float wengine_mix(float a, float b, float c);
__attribute__((visibility("default"))) float walkers_wengine_mix(float a, float b, float c) { return wengine_mix(a, b, c); }
#endif
#ifdef WALKERS_ROUTED
/* What lockstep_add_module(... ROUTED <names>) writes: the libraries whose libm calls the loader
 * sends to lockstep's math (the test's is route_probe.c). */
__attribute__((visibility("default"))) const char lockstep_routed_libraries[] = WALKERS_ROUTED;
#endif
#ifdef LOCKSTEP_BUILD_ID
#define WALKERS_BUILD_ID LOCKSTEP_BUILD_ID
#else
#define WALKERS_BUILD_ID 0x77616c6b65727301ull
#endif

#define MAX_PLAYERS 32
#define WORLD 100000 /* positions are thousandths of a world unit, 0..100 units */

#if WALKERS_BROKEN == 7
struct gusts {
  uint8_t mode; /* three bytes of padding follow */
  uint32_t count;
};
#endif

struct lockstep_sim {
  uint32_t tick, players;
  uint64_t seed, pulse;
  int32_t pos[MAX_PLAYERS], vel[MAX_PLAYERS];
#if WALKERS_BROKEN == 7
  struct gusts gusts;
#endif
};

#if WALKERS_BROKEN == 7
#define EXTRA_BYTES ((size_t)sizeof(struct gusts))
#else
#define EXTRA_BYTES ((size_t)0)
#endif

static uint64_t mix(uint64_t x) {
  x ^= x >> 30;
  x *= 0xbf58476d1ce4e5b9ull;
  x ^= x >> 27;
  x *= 0x94d049bb133111ebull;
  return x ^ (x >> 31);
}

static int read_seed(const uint8_t* s, size_t n, uint64_t* seed) {
  if (n == 0) {
    *seed = 1;
    return 1;
  }
  if (n != 8) return 0;
  *seed = 0;
  for (int i = 7; i >= 0; --i) *seed = (*seed << 8) | s[i];
  return 1;
}

static int parse_world(const char* text, const uint8_t* settings, size_t n, uint8_t* out, size_t cap, size_t* out_len,
                       char* error, size_t error_cap) {
  uint64_t seed;
  if (!read_seed(settings, n, &seed)) seed = 1;
  while (*text) {
    const char* comma = strchr(text, ',');
    const size_t len = comma ? (size_t)(comma - text) : strlen(text);
    if (len > 5 && strncmp(text, "seed=", 5) == 0) {
      char* end = NULL;
      seed = strtoull(text + 5, &end, 10);
      if (end != text + len) {
        snprintf(error, error_cap, "walkers: seed must be a whole number");
        return 0;
      }
    } else {
      snprintf(error, error_cap, "walkers has no world setting '%.*s' (it has seed)", (int)len, text);
      return 0;
    }
    text += len + (comma ? 1 : 0);
  }
  if (cap < 8) return 0;
  for (int i = 0; i < 8; ++i) out[i] = (uint8_t)(seed >> (8 * i));
  *out_len = 8;
  return 1;
}

static size_t settings_text(const uint8_t* settings, size_t n, char* out, size_t cap) {
  uint64_t seed;
  if (!read_seed(settings, n, &seed)) return 0;
  return (size_t)snprintf(out, cap, "seed=%llu", (unsigned long long)seed) + 1;
}

static lockstep_sim* create(const uint8_t* settings, size_t n, uint32_t players) {
  uint64_t seed;
  if (!read_seed(settings, n, &seed) || players < 1 || players > MAX_PLAYERS) return NULL;
#if WALKERS_BROKEN == 6 || WALKERS_BROKEN == 7
  lockstep_sim* s = malloc(sizeof *s);
  if (!s) return NULL;
  s->tick = 0;
  for (uint32_t p = 0; p < MAX_PLAYERS; ++p) s->pos[p] = 0;
#if WALKERS_BROKEN == 7
  for (uint32_t p = 0; p < MAX_PLAYERS; ++p) s->vel[p] = 0;
  s->gusts.mode = 1; /* its padding is whatever the heap held */
  s->gusts.count = 0;
#endif /* 6: the velocities are whatever the heap held */
#else
  lockstep_sim* s = calloc(1, sizeof *s);
  if (!s) return NULL;
#endif
  s->players = players;
  s->seed = seed;
  s->pulse = mix(seed);
  for (uint32_t p = 0; p < players; ++p) s->pos[p] = (int32_t)(mix(seed + p) % WORLD);
  return s;
}

static void destroy(lockstep_sim* s) { free(s); }
static lockstep_sim* clone(const lockstep_sim* s) {
  lockstep_sim* c = malloc(sizeof *c);
  if (c) *c = *s;
  return c;
}
static void assign(lockstep_sim* to, const lockstep_sim* from) { *to = *from; }
static uint32_t tick(const lockstep_sim* s) { return s->tick; }

#if WALKERS_BROKEN == 1
static int g_anchor; /* its address differs between processes (ASLR), not within one */
#endif

#if WALKERS_BROKEN == 4
static uint32_t g_cached_tick; /* the newest tick the gust was computed for */
static uint64_t g_gust;
#endif

static void step(lockstep_sim* s, const lockstep_frame* f) {
  s->pulse = mix(s->pulse + f->tick);
#if WALKERS_BROKEN == 4
  /* A "gust" computed once per tick and cached: a tick seen before (or older) reuses the newest. */
  if (f->tick > g_cached_tick) {
    g_cached_tick = f->tick;
    g_gust = s->pulse;
  }
  s->pulse ^= g_gust & 0xffff;
#endif
#if WALKERS_BROKEN == 1
  s->pulse ^= (uint64_t)(uintptr_t)&g_anchor >> 12; /* the page number: random per process */
#endif
#if WALKERS_BROKEN == 2
  /* The value its serialization leaves out reaches the hashed state at every tick, so a state
   * loaded without it parts at the first tick after the load (e2e/join_mismatch), not only when
   * the pulse's top bits happen to move a walker otherwise (one join in about 25 they do not).
   * The seed is a declared field here (fields), so the server's probe names it too. */
  s->seed ^= s->pulse & 0xffffu;
#endif
#if WALKERS_BROKEN == 5
  s->pulse += (uint64_t)(sin((double)(f->tick % 64) / 8.0) * 4.0 + 4.0);
#endif
#if WALKERS_BROKEN == 7
  s->gusts.count += f->tick % 3 == 0;
#endif
#if WALKERS_BROKEN == 8
  {
    void* node[MAX_PLAYERS];
    uint32_t order[MAX_PLAYERS];
    for (uint32_t p = 0; p < s->players; ++p) node[p] = malloc(24), order[p] = p;
    for (uint32_t i = 1; i < s->players; ++i)  /* by bucket: address % 13, as std::hash<T*> buckets */
      for (uint32_t j = i; j > 0 && (uintptr_t)node[order[j]] % 13 < (uintptr_t)node[order[j - 1]] % 13; --j) {
        const uint32_t t = order[j];
        order[j] = order[j - 1], order[j - 1] = t;
      }
    for (uint32_t k = 0; k < s->players; ++k) s->pos[order[k]] += (int32_t)(k % 3);
    for (uint32_t p = 0; p < s->players; ++p) free(node[p]);
  }
#endif
  for (uint32_t p = 0; p < s->players; ++p) {
    const int8_t push = (f->present >> p) & 1u ? (int8_t)f->inputs[p * f->input_size] : 0;
    s->vel[p] = s->vel[p] * (WALKERS_RULES == 2 ? 14 : 15) / 16 + push;
    s->pos[p] += s->vel[p] + (int32_t)(s->pulse >> (60 - (p % 4))) % 5 - 2;
    if (s->pos[p] < 0) s->pos[p] = 0, s->vel[p] = -s->vel[p];
    if (s->pos[p] > WORLD) s->pos[p] = WORLD, s->vel[p] = -s->vel[p];
  }
  /* Commands: "J" and a distance jumps the issuer's walker forward; anything else is ignored. */
  for (uint32_t i = 0; i < f->command_count; ++i) {
    const lockstep_command* c = &f->commands[i];
    if (c->slot < s->players && c->size == 2 && c->bytes[0] == 'J' && c->bytes[1] <= 50) s->pos[c->slot] += c->bytes[1];
  }
  s->tick = f->tick;
}

/* Canonical: tick, players, seed, pulse, then each walker's position and velocity, little-endian. */
static size_t serialize(const lockstep_sim* s, uint8_t* out, size_t cap) {
  const size_t n = 4 + 4 + 8 + 8 + EXTRA_BYTES + (size_t)s->players * 8;
  if (cap < n) return n;
  size_t at = 0;
#if WALKERS_BROKEN == 2
  uint64_t v[4] = {s->tick, s->players, s->seed, 0}; /* the pulse left out */
#else
  uint64_t v[4] = {s->tick, s->players, s->seed, s->pulse};
#endif
  const int widths[4] = {4, 4, 8, 8};
  for (int k = 0; k < 4; ++k)
    for (int i = 0; i < widths[k]; ++i) out[at++] = (uint8_t)(v[k] >> (8 * i));
#if WALKERS_BROKEN == 7
  memcpy(out + at, &s->gusts, sizeof s->gusts); /* the padding goes too */
  at += sizeof s->gusts;
#endif
  for (uint32_t p = 0; p < s->players; ++p)
    for (int k = 0; k < 2; ++k) {
      const uint32_t w = (uint32_t)(k == 0 ? s->pos[p] : s->vel[p]);
      for (int i = 0; i < 4; ++i) out[at++] = (uint8_t)(w >> (8 * i));
    }
  return n;
}

static uint64_t read_le(const uint8_t* b, int n) {
  uint64_t v = 0;
  for (int i = n - 1; i >= 0; --i) v = (v << 8) | b[i];
  return v;
}

static int deserialize(lockstep_sim* s, const uint8_t* b, size_t n) {
  if (n < 24) return 0;
  const uint32_t players = (uint32_t)read_le(b + 4, 4);
  if (players < 1 || players > MAX_PLAYERS || n != 24 + EXTRA_BYTES + (size_t)players * 8) return 0;
  s->tick = (uint32_t)read_le(b, 4);
  s->players = players;
  s->seed = read_le(b + 8, 8);
#if WALKERS_BROKEN != 2
  s->pulse = read_le(b + 16, 8);
#endif
#if WALKERS_BROKEN == 7
  memcpy(&s->gusts, b + 24, sizeof s->gusts);
#endif
  for (uint32_t p = 0; p < players; ++p) {
    s->pos[p] = (int32_t)read_le(b + 24 + EXTRA_BYTES + p * 8, 4);
    s->vel[p] = (int32_t)read_le(b + 28 + EXTRA_BYTES + p * 8, 4);
  }
  return 1;
}

static uint32_t entity_count(const lockstep_sim* s) { return s->players; }

static size_t fields(const lockstep_sim* s, uint32_t e, lockstep_field* out, size_t cap) {
  if (e == UINT32_MAX) {
#if WALKERS_BROKEN == 7
    if (cap >= 4) {
      out[2] = (lockstep_field){"gust_mode", 2, s->gusts.mode};
      out[3] = (lockstep_field){"gust_count", 2, s->gusts.count};
    }
    if (cap < 4) return 4;
#endif
    if (cap >= 2) {
      out[0] = (lockstep_field){"tick", 2, s->tick};
      out[1] = (lockstep_field){"pulse", 3, s->pulse};
    }
#if WALKERS_BROKEN == 2
    /* The seed carries the pulse its serialization leaves out (step). The server localizes a desync
     * on the states both sides hold for the tick, serialized, where the pulse is 0 on both: without
     * this field, at one join tick in about 7 no declared field differed there ("outside fields"). */
    if (cap >= 3) out[2] = (lockstep_field){"seed", 3, s->seed};
    return 3;
#endif
    return 2 + (EXTRA_BYTES ? 2 : 0);
  }
#if WALKERS_BROKEN == 3
  if (cap >= 1 && e < s->players) out[0] = (lockstep_field){"pos", 2, (uint32_t)s->pos[e]}; /* vel left out */
  return 1;
#else
  if (cap >= 2 && e < s->players) {
    out[0] = (lockstep_field){"pos", 2, (uint32_t)s->pos[e]};
    out[1] = (lockstep_field){"vel", 2, (uint32_t)s->vel[e]};
  }
  return 2;
#endif
}

static void perturb(lockstep_sim* s, uint64_t selector) {
  const uint32_t k = (uint32_t)(selector % (s->players * 2u));
  if (k % 2 == 0) s->pos[k / 2] ^= 1;
  else s->vel[k / 2] ^= 1;
}

static size_t draw(const lockstep_sim* cur, const lockstep_sim* prev, float alpha, lockstep_shape* out, size_t cap) {
  const size_t n = cur->players + 1;
  if (cap < n) return n;
  out[0] = (lockstep_shape){3, 1.0f, 1.0f, 2.0f, 0.0f, -1, 1, "WALKERS"};
  for (uint32_t p = 0; p < cur->players; ++p) {
    const float from = (float)prev->pos[p] / 1000.0f, to = (float)cur->pos[p] / 1000.0f;
    out[p + 1] = (lockstep_shape){0, from + (to - from) * alpha, 5.0f + (float)(p % 4), 1.0f, 0.0f, (int32_t)p, 0, NULL};
  }
  return n;
}

static float width(const lockstep_sim* s) { (void)s; return 100.0f; }
static float height(const lockstep_sim* s) { (void)s; return 10.0f; }

static void bot(uint64_t seed, uint32_t t, uint8_t* input, const lockstep_command_sink* commands) {
  const uint64_t h = mix(seed * 31 + t / 50);
  input[0] = (uint8_t)(int8_t)((int)(h % 61) - 30);
  input[1] = 0;
  /* Now and then a command: "jump" by the byte's value (exercises the command path). */
  if (t % 97 == 0) {
    const uint8_t jump[2] = {'J', (uint8_t)(h >> 32) % 50};
    commands->add(commands->ctx, jump, sizeof jump);
  }
}

static void from_controls(const lockstep_controls* c, int32_t memory[16], uint8_t* input,
                          const lockstep_command_sink* commands) {
  const int right = (c->held >> 3) & 1u, left = (c->held >> 2) & 1u, space = (c->held >> 4) & 1u;
  input[0] = (uint8_t)(int8_t)(right ? 30 : left ? -30 : 0);
  input[1] = 0;
  /* Space issues one jump when it goes down. */
  if (space && !memory[0]) {
    const uint8_t jump[2] = {'J', 25};
    commands->add(commands->ctx, jump, sizeof jump);
  }
  memory[0] = space;
}

/* The desync page's words for walkers (the optional exports of module_abi.h). */
__attribute__((visibility("default"))) size_t lockstep_entity_kind(const lockstep_sim* s, uint32_t e, char* out, size_t cap) {
  return e < s->players ? (size_t)snprintf(out, cap, "walker of player %u", e) : 0;
}
__attribute__((visibility("default"))) int lockstep_entity_position(const lockstep_sim* s, uint32_t e, float* x, float* y) {
  if (e >= s->players) return 0;
  *x = (float)s->pos[e] / 1000.0f;
  *y = 5.0f + (float)(e % 4);
  return 1;
}
__attribute__((visibility("default"))) size_t lockstep_input_text(const uint8_t* in, size_t n, char* out, size_t cap) {
  return n == 2 ? (size_t)snprintf(out, cap, "walk %+d", (int)(int8_t)in[0]) : 0;
}
__attribute__((visibility("default"))) size_t lockstep_command_text(const uint8_t* c, size_t n, char* out, size_t cap) {
  return n == 2 && c[0] == 'J' ? (size_t)snprintf(out, cap, "jump %u", c[1]) : 0;
}

static const lockstep_module_v2 kWalkers = {
    WALKERS_ABI, "walkers", 1, WALKERS_BUILD_ID, "walkers on a line, in integers (a test module in C)",
    "seed=1 (pulse seed)", "left/right walk, space jumps", 2, "seed=5",
    parse_world, settings_text, create, destroy, clone, assign, tick, step, serialize, deserialize,
    entity_count, fields, perturb, draw, width, height, bot, from_controls,
};

#ifndef WALKERS_NO_ENTRY
__attribute__((visibility("default"))) const lockstep_module_v2* lockstep_module(uint32_t host_abi_version) {
  (void)host_abi_version;
  return &kWalkers;
}
#else
/* The table under another name: a library that exports something, but not the entry point. */
__attribute__((visibility("default"))) const lockstep_module_v2* walkers_table(void) { return &kWalkers; }
#endif
