/* swing: pendulums that each player pushes, stepped with the C library's sin (libm), which is
 * what the determinism gate's wasm leg exists to catch: emscripten's libm rounds some sines
 * otherwise than glibc's. Every other operation is exact IEEE arithmetic without contraction.
 * The state: the tick and 32 pendulums' angles and angular velocities (doubles). */
#include <lockstep/module_abi.h>

#include <math.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>

#define PENDULUMS 32
#define STATE_BYTES (4 + 4 + PENDULUMS * 16)

struct lockstep_sim {
  uint32_t tick, players;
  double angle[PENDULUMS], speed[PENDULUMS];
};

static int parse_world(const char* text, const uint8_t* settings, size_t n, uint8_t* out, size_t cap, size_t* out_len,
                       char* error, size_t error_cap) {
  (void)settings, (void)n, (void)out, (void)cap;
  if (text && *text) {
    snprintf(error, error_cap, "swing has no world settings");
    return 0;
  }
  *out_len = 0;
  return 1;
}

static size_t settings_text(const uint8_t* settings, size_t n, char* out, size_t cap) {
  (void)settings;
  if (n != 0) return 0;
  if (cap > 0) out[0] = '\0';
  return 1;
}

static lockstep_sim* create(const uint8_t* settings, size_t n, uint32_t players) {
  (void)settings;
  if (n != 0 || players < 1 || players > 32) return NULL;
  lockstep_sim* s = calloc(1, sizeof *s);
  if (!s) return NULL;
  s->players = players;
  for (uint32_t i = 0; i < PENDULUMS; ++i) s->angle[i] = 0.25 + 0.0625 * i;  /* exact starting angles */
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

static void step(lockstep_sim* s, const lockstep_frame* f) {
  for (uint32_t i = 0; i < PENDULUMS; ++i) {
    const uint32_t p = i % s->players;
    const int8_t push = (f->present >> p) & 1u ? (int8_t)f->inputs[p * f->input_size] : 0;
    s->speed[i] = s->speed[i] - 0.0981 * sin(s->angle[i]) + 0.001 * push;
    s->angle[i] = s->angle[i] + 0.01 * s->speed[i];
  }
  s->tick = f->tick;
}

static size_t serialize(const lockstep_sim* s, uint8_t* out, size_t cap) {
  if (cap >= STATE_BYTES) {
    memcpy(out, &s->tick, 4);
    memcpy(out + 4, &s->players, 4);
    memcpy(out + 8, s->angle, PENDULUMS * 8);
    memcpy(out + 8 + PENDULUMS * 8, s->speed, PENDULUMS * 8);
  }
  return STATE_BYTES;
}

static int deserialize(lockstep_sim* s, const uint8_t* b, size_t n) {
  uint32_t players;
  if (n != STATE_BYTES) return 0;
  memcpy(&players, b + 4, 4);
  if (players < 1 || players > 32) return 0;
  memcpy(&s->tick, b, 4);
  s->players = players;
  memcpy(s->angle, b + 8, PENDULUMS * 8);
  memcpy(s->speed, b + 8 + PENDULUMS * 8, PENDULUMS * 8);
  return 1;
}

static uint32_t entity_count(const lockstep_sim* s) { (void)s; return PENDULUMS; }

static uint64_t bits(double v) {
  uint64_t u;
  memcpy(&u, &v, 8);
  return u;
}

static size_t fields(const lockstep_sim* s, uint32_t e, lockstep_field* out, size_t cap) {
  if (e == UINT32_MAX) {
    if (cap >= 1) out[0] = (lockstep_field){"tick", 2, s->tick};
    return 1;
  }
  if (e >= PENDULUMS) return 0;
  if (cap >= 2) {
    out[0] = (lockstep_field){"angle", 1, bits(s->angle[e])};
    out[1] = (lockstep_field){"speed", 1, bits(s->speed[e])};
  }
  return 2;
}

static void perturb(lockstep_sim* s, uint64_t selector) {
  double* v = (selector / PENDULUMS) % 2 ? &s->speed[selector % PENDULUMS] : &s->angle[selector % PENDULUMS];
  uint64_t u = bits(*v) ^ 1u;
  memcpy(v, &u, 8);
}

static size_t draw(const lockstep_sim* c, const lockstep_sim* p, float alpha, lockstep_shape* out, size_t cap) {
  (void)c, (void)p, (void)alpha, (void)out, (void)cap;
  return 0;
}

static float width(const lockstep_sim* s) { (void)s; return 100.0f; }
static float height(const lockstep_sim* s) { (void)s; return 100.0f; }

static void bot(uint64_t seed, uint32_t t, uint8_t* input, const lockstep_command_sink* commands) {
  (void)commands;
  const uint64_t h = (seed ^ t) * 0x9e3779b97f4a7c15ull;
  input[0] = (uint8_t)(int8_t)((int)(h >> 61) - 3);
}

static void from_controls(const lockstep_controls* c, int32_t memory[16], uint8_t* input,
                          const lockstep_command_sink* commands) {
  (void)memory, (void)commands;
  input[0] = (uint8_t)(int8_t)((c->held & 4u) ? -3 : (c->held & 8u) ? 3 : 0);
}

static const lockstep_module_v2 table = {
    LOCKSTEP_MODULE_ABI_VERSION, "swing", 1, 0x7377696e67000001ull, "pendulums stepped with libm's sin", "",
    "left and right push", 1, "",
    parse_world, settings_text, create, destroy, clone, assign, tick, step, serialize, deserialize,
    entity_count, fields, perturb, draw, width, height, bot, from_controls};

__attribute__((visibility("default"))) const lockstep_module_v2* lockstep_module(uint32_t host_abi_version) {
  return host_abi_version == LOCKSTEP_MODULE_ABI_VERSION ? &table : NULL;
}
