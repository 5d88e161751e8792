/* A game in C that joins a session through lockstep_session.h alone, owning its state (mode b):
 * its state is a walkers world (tests/modules/walkers.c, linked in, stepped by the game itself),
 * and lockstep sees it only through the callbacks. Its loop runs at its own rate with its own
 * clock. Usage:
 *   c_player HOST PORT NAME SEED HASH_LOG [--perturb-at T] [--secret-file F] [--rejoin-file F] [--predict N]
 *            [--service 1]
 *   c_player --trace-write FILE
 * --perturb-at flips one bit of the game's own state after tick T (the server must catch it and
 * resync); --secret-file keeps the rejoin secret; --rejoin-file comes back with one; --predict
 * predicts up to N ticks ahead (GGPO's model on the game's one state): after every update the
 * game checks that its own state is the predicted world's tick, and counts the frames it drew
 * that were not (there must be none); --service 1 starts lockstep's service thread, the game's
 * state then guarded by a lock of its own taken in the documented order. At tick 1000
 * it reports the match's result (a hash of its state, as the Python game does). Exits with the
 * session's exit code. */
#define _POSIX_C_SOURCE 200809L
#include <pthread.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <time.h>

#include "lockstep/lockstep_session.h"

const lockstep_module_v2* walkers_table(void); /* walkers.c built without its entry point (WALKERS_NO_ENTRY) */

typedef struct game {
  const lockstep_module_v2* t;
  lockstep_sim* state;   /* the game's own state */
  lockstep_sim* scratch; /* for reading saved states */
  uint32_t perturb_at;
  int perturbed;         /* the perturbation is made once: a re-simulated tick must not make it again */
  uint8_t result[8]; /* the match's result: FNV-1a 64 of the state at tick 1000, little-endian */
  int result_ready;
} game;

enum { RESULT_TICK = 1000 };

/* --service: lockstep's service thread calls the callbacks, so the game's state has a lock of its
 * own. The order is the library's lock, then the game's (docs/EMBEDDING.md, "Threads"): the
 * callbacks take the game's lock inside the library's, and the loop never calls the client while
 * it holds the game's. */
static pthread_mutex_t game_lock = PTHREAD_MUTEX_INITIALIZER;
static int use_lock = 0;
static void lock_game(void) {
  if (use_lock) pthread_mutex_lock(&game_lock);
}
static void unlock_game(void) {
  if (use_lock) pthread_mutex_unlock(&game_lock);
}

static int reset_unlocked(void* user, const uint8_t* settings, size_t n, uint32_t players) {
  game* g = user;
  lockstep_sim* s = g->t->create(settings, n, players);
  if (!s) return 1;
  if (g->state) g->t->destroy(g->state);
  g->state = s;
  return 0;
}
static int step_unlocked(void* user, const lockstep_frame* frame) {
  game* g = user;
  g->t->step(g->state, frame);
  if (frame->tick == g->perturb_at && !g->perturbed) {
    g->t->perturb(g->state, 1);
    g->perturbed = 1;
  }
  if (frame->tick == RESULT_TICK) {
    uint8_t bytes[4096];
    const size_t n = g->t->serialize(g->state, bytes, sizeof bytes);
    uint64_t h = 14695981039346656037ull;
    for (size_t i = 0; i < n && i < sizeof bytes; ++i) h = (h ^ bytes[i]) * 1099511628211ull;
    for (int i = 0; i < 8; ++i) g->result[i] = (uint8_t)(h >> (8 * i));
    g->result_ready = 1;
  }
  return 0;
}
static size_t save_unlocked(void* user, uint8_t* out, size_t cap) {
  game* g = user;
  return g->t->serialize(g->state, out, cap);
}
static int load_unlocked(void* user, const uint8_t* bytes, size_t n) {
  game* g = user;
  return g->t->deserialize(g->state, bytes, n) ? 0 : 1;
}
static const lockstep_sim* read_state(game* g, const uint8_t* bytes, size_t n) {
  return g->t->deserialize(g->scratch, bytes, n) ? g->scratch : NULL;
}
static uint32_t tick_unlocked(void* user, const uint8_t* state, size_t n) {
  const lockstep_sim* s = read_state(user, state, n);
  return s ? ((game*)user)->t->tick(s) : 0;
}
static uint32_t entity_count_unlocked(void* user, const uint8_t* state, size_t n) {
  const lockstep_sim* s = read_state(user, state, n);
  return s ? ((game*)user)->t->entity_count(s) : 0;
}
static size_t fields_unlocked(void* user, const uint8_t* state, size_t n, uint32_t entity, lockstep_field* out, size_t cap) {
  const lockstep_sim* s = read_state(user, state, n);
  return s ? ((game*)user)->t->fields(s, entity, out, cap) : 0;
}

/* The callbacks lockstep calls: each under the game's lock (--service). */
static int reset(void* user, const uint8_t* settings, size_t n, uint32_t players) {
  lock_game();
  const int r = reset_unlocked(user, settings, n, players);
  unlock_game();
  return r;
}
static int step(void* user, const lockstep_frame* frame) {
  lock_game();
  const int r = step_unlocked(user, frame);
  unlock_game();
  return r;
}
static size_t save(void* user, uint8_t* out, size_t cap) {
  lock_game();
  const size_t r = save_unlocked(user, out, cap);
  unlock_game();
  return r;
}
static int load(void* user, const uint8_t* bytes, size_t n) {
  lock_game();
  const int r = load_unlocked(user, bytes, n);
  unlock_game();
  return r;
}
static uint32_t tick(void* user, const uint8_t* state, size_t n) {
  lock_game();
  const uint32_t r = tick_unlocked(user, state, n);
  unlock_game();
  return r;
}
static uint32_t entity_count(void* user, const uint8_t* state, size_t n) {
  lock_game();
  const uint32_t r = entity_count_unlocked(user, state, n);
  unlock_game();
  return r;
}
static size_t fields(void* user, const uint8_t* state, size_t n, uint32_t entity, lockstep_field* out, size_t cap) {
  lock_game();
  const size_t r = fields_unlocked(user, state, n, entity, out, cap);
  unlock_game();
  return r;
}

static int64_t now_ns(void) {
  struct timespec ts;
  clock_gettime(CLOCK_MONOTONIC, &ts);
  return (int64_t)ts.tv_sec * 1000000000 + ts.tv_nsec;
}

static int add_nothing(void* ctx, const uint8_t* bytes, size_t n) {
  (void)ctx, (void)bytes, (void)n;
  return 1;
}

int main(int argc, char** argv) {
  /* c_player --trace-write FILE: the game's trace over lockstep's streams, for another
   * implementation (C#, Python) to compare with (lockstep_game_trace_compare), with no module. */
  const int trace_mode = argc == 3 && strcmp(argv[1], "--trace-write") == 0;
  if (argc < 6 && !trace_mode) {
    fprintf(stderr, "usage: c_player HOST PORT NAME SEED HASH_LOG [--perturb-at T] [--secret-file F] [--rejoin-file F]\n");
    return 2;
  }
  game g = {walkers_table(), NULL, NULL, 0, 0, {0}, 0};
  const char *secret_file = NULL, *rejoin_file = NULL;
  char secret[256] = "";
  uint32_t predict = 0;
  for (int i = 6; !trace_mode && i + 1 < argc; i += 2) {
    if (strcmp(argv[i], "--perturb-at") == 0) g.perturb_at = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--secret-file") == 0) secret_file = argv[i + 1];
    else if (strcmp(argv[i], "--rejoin-file") == 0) rejoin_file = argv[i + 1];
    else if (strcmp(argv[i], "--predict") == 0) predict = (uint32_t)strtoul(argv[i + 1], NULL, 10);
    else if (strcmp(argv[i], "--service") == 0) use_lock = atoi(argv[i + 1]) != 0;
  }
  if (rejoin_file) {
    FILE* f = fopen(rejoin_file, "r");
    if (!f || !fgets(secret, sizeof secret, f)) return 2;
    fclose(f);
    secret[strcspn(secret, "\n")] = '\0';
  }
  g.scratch = g.t->create(NULL, 0, 1);
  /* The header this game was built against, and the library it runs on (tests/embed/api_v2 builds
   * it against API version 2's). */
  fprintf(stderr, "c_player: built against LOCKSTEP_API_VERSION %u (config %u bytes, stats %u bytes), linked %u\n",
          (unsigned)LOCKSTEP_API_VERSION, (unsigned)sizeof(lockstep_client_config), (unsigned)sizeof(lockstep_client_stats),
          (unsigned)lockstep_api_version());

  lockstep_game callbacks;
  lockstep_game_defaults(&callbacks);
  callbacks.user = &g;
  callbacks.name = g.t->name;
  callbacks.version = g.t->version;
  callbacks.build_id = g.t->build_id;
  callbacks.input_size = g.t->input_size;
  callbacks.reset = reset;
  callbacks.step = step;
  callbacks.save = save;
  callbacks.load = load;
  callbacks.tick = tick;
  callbacks.entity_count = entity_count;
  callbacks.fields = fields;
  if (trace_mode) {
#if LOCKSTEP_API_VERSION >= 3
    char report[1024];
    const lockstep_result r = lockstep_game_trace_write(&callbacks, NULL, 0, 4, 400, argv[2], report, sizeof report);
    printf("c_player: trace: %s\n", report);
    if (g.state) g.t->destroy(g.state);
    g.t->destroy(g.scratch);
    return r == LOCKSTEP_OK ? 0 : 1;
#else
    fprintf(stderr, "c_player: --trace-write needs LOCKSTEP_API_VERSION 3\n");
    return 2;
#endif
  }
  lockstep_client_config config;
  lockstep_client_config_defaults(&config);
  config.host = argv[1];
  config.port = (uint16_t)atoi(argv[2]);
  config.name = argv[3];
  config.game = &callbacks;
  config.hash_log = argv[5];
  config.predict = predict;
  if (secret[0]) config.rejoin_secret = secret;
  const uint64_t seed = strtoull(argv[4], NULL, 10);

  lockstep_client* client = NULL;
  char error[256];
  if (lockstep_client_create(&config, &client, error, sizeof error) != LOCKSTEP_OK) {
    fprintf(stderr, "c_player: %s\n", error);
    return 2;
  }
  if (use_lock) lockstep_client_start_service(client);
  uint8_t input[64];
  const lockstep_command_sink sink = {NULL, add_nothing};
  unsigned long long draws = 0, draws_not_predicted = 0, draws_ahead = 0;
  uint32_t lowest_depth = predict;  /* after the first 3 s */
  int64_t started_at = 0, first_move_ns = 0;
  uint32_t last_shown = 0, largest_jump = 0, highest_shown = 0;
  while (!lockstep_client_finished(client)) {
    const int64_t now = now_ns();
    int64_t wake = lockstep_client_update(client, now);
    lockstep_event e;
#if LOCKSTEP_API_VERSION >= 4
    /* API version 4: the event carries its struct_size, and "none" is a kind. */
    e.struct_size = sizeof e;
    while (lockstep_client_next_event(client, &e) == LOCKSTEP_OK && e.kind != LOCKSTEP_EVENT_NONE) {
#else
    while (lockstep_client_poll_event(client, &e)) {
#endif
      fprintf(stderr, "c_player: event %u tick %u slot %d code %d %s %s\n", e.kind, e.tick, e.slot, e.code, e.name,
              e.detail);
      if (e.kind == LOCKSTEP_EVENT_STARTED) started_at = now;
      if (e.kind == LOCKSTEP_EVENT_JOINED && secret_file) {
        FILE* f = fopen(secret_file, "w");
        if (f) fprintf(f, "%s\n", e.detail), fclose(f);
      }
    }
    uint8_t result[sizeof g.result];
    lock_game(); /* what the loop reads of the game's state, under the game's lock alone ... */
    const int result_ready = g.result_ready == 1;
    if (result_ready) {
      memcpy(result, g.result, sizeof result);
      g.result_ready = 2;
    }
    unlock_game(); /* ... and the client called without it */
    if (result_ready) lockstep_client_set_result(client, result, sizeof result); /* the game reports its result once it knows it */
    lockstep_client_stats st;
    st.struct_size = sizeof st;
    if (lockstep_client_stats_get(client, &st) != LOCKSTEP_OK) {
      fprintf(stderr, "c_player: lockstep_client_stats_get refused a struct of %u bytes\n", (unsigned)sizeof st);
      return 1;
    }
    if (predict > 0 && st.tick > 300 && st.predict < lowest_depth) lowest_depth = st.predict;
    memset(input, 0, sizeof input);
    g.t->bot(seed, st.tick, input, &sink);
    lockstep_client_set_input(client, input, g.t->input_size);
    if (predict > 0) { /* where a game would draw: its own state, which must be the predicted world */
      (void)lockstep_client_predicted_alpha(client, now);
      /* The view from the start to the end: when it first moves after STARTED, its largest step
       * from one drawn frame to the next, and the highest tick it shows. */
      if (g.state && started_at != 0) {
        const uint32_t shown = st.predicted_tick;
        if (shown > 0 && first_move_ns == 0) first_move_ns = now - started_at;
        if (shown > last_shown && shown - last_shown > largest_jump) largest_jump = shown - last_shown;
        if (shown > last_shown) last_shown = shown;
        if (shown > highest_shown) highest_shown = shown;
      }
      if (g.state && st.tick > 0) {
        ++draws;
        lock_game();
        const uint32_t own_tick = g.t->tick(g.state);
        unlock_game();
        if (own_tick != st.predicted_tick) ++draws_not_predicted;
        if (st.predicted_tick > st.tick) ++draws_ahead;
      }
    } else {
      (void)lockstep_client_alpha(client, now);
    }
    /* A 60 Hz game loop: sleep to the next frame or the session's next work. */
    int64_t next = now + 16666667;
    if (wake > now && wake < next) next = wake;
    const int64_t sleep_ns = next - now_ns();
    if (sleep_ns > 0) {
      struct timespec ts = {(time_t)(sleep_ns / 1000000000), (long)(sleep_ns % 1000000000)};
      nanosleep(&ts, NULL);
    }
  }
  lockstep_client_stats st;
  st.struct_size = sizeof st;
  lockstep_client_stats_get(client, &st);
  const int code = lockstep_client_exit_code(client);
  fprintf(stderr, "c_player: ended at tick %u, exit %d, rtt %u ms, playout %.1f ms, %llu of %llu frames at alpha 1\n",
          st.tick, code, st.rtt_ms, st.playout_ms, (unsigned long long)st.frames_clamped,
          (unsigned long long)st.frames_drawn);
  if (predict > 0) {
    const double confirmed = st.tick > 0 ? (double)st.tick : 1.0;
    fprintf(stderr,
            "c_player: prediction: %llu draws, %llu not of the predicted world, %llu ahead of the confirmed one; "
            "input to screen p50 %.1f ms p99 %.1f ms; depth %u (lowest %u), %llu rebuilds, %llu of %llu predictions wrong; "
            "per confirmed tick: %.2f steps, %.2f saves, %.3f loads, %.2f reused\n",
            draws, draws_not_predicted, draws_ahead, st.input_to_screen_p50_ms, st.input_to_screen_p99_ms, st.predict, lowest_depth,
            (unsigned long long)st.rebuilds, (unsigned long long)st.mispredictions,
            (unsigned long long)st.verified_predictions, (double)st.game_steps / confirmed,
            (double)st.game_saves / confirmed, (double)st.game_loads / confirmed, (double)st.game_reused / confirmed);
    fprintf(stderr, "c_player: view: first move %.1f ms after STARTED, largest jump %u ticks, highest tick drawn %u\n",
            (double)first_move_ns / 1e6, largest_jump, highest_shown);
  }
  lockstep_client_destroy(client);
  g.t->destroy(g.state);
  g.t->destroy(g.scratch);
  return code;
}
