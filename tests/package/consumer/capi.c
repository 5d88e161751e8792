/* The C API from plain C: a world made from settings text, stepped on frames with inputs and a
 * command, its state serialized and loaded into a second world (the same hashes and fields), and
 * every refusal the API documents. Prints "<module> tick <t> hash <h>" and exits 0 when every
 * check holds.
 * Usage: capi [MODULE.so]   (none: the built-in skirmish, whose input is all commands) */
#include <lockstep/lockstep.h>

#include <stdio.h>
#include <stdlib.h>
#include <string.h>

static int failures = 0;
#define CHECK(cond)                                               \
  do {                                                            \
    if (!(cond)) {                                                \
      fprintf(stderr, "capi: FAIL line %d: %s\n", __LINE__, #cond); \
      ++failures;                                                 \
    }                                                             \
  } while (0)

int main(int argc, char** argv) {
  char error[256];
  const lockstep_module* m = NULL;
  lockstep_result r = argc > 1 ? lockstep_module_load(argv[1], &m, error, sizeof error)
                               : lockstep_module_builtin("skirmish", &m, error, sizeof error);
  if (r != LOCKSTEP_OK) {
    fprintf(stderr, "capi: %s\n", error);
    return 1;
  }
  CHECK(lockstep_api_version() == LOCKSTEP_API_VERSION);
  CHECK(lockstep_module_builtin("no-such-game", &m, error, sizeof error) == LOCKSTEP_ERROR_NOT_FOUND);
  if (argc > 1) CHECK(lockstep_module_load(argv[1], &m, error, sizeof error) == LOCKSTEP_OK); /* the same again */
  else CHECK(lockstep_module_builtin("skirmish", &m, error, sizeof error) == LOCKSTEP_OK);

  uint8_t settings[1024];
  size_t n = 0;
  CHECK(lockstep_module_settings(m, "no_such_setting=1", settings, sizeof settings, &n, error, sizeof error) ==
        LOCKSTEP_ERROR_SETTINGS);
  CHECK(strstr(error, "no_such_setting") != NULL);
  CHECK(lockstep_module_settings(m, "seed=5", settings, sizeof settings, &n, error, sizeof error) == LOCKSTEP_OK);
  lockstep_world* w = NULL;
  CHECK(lockstep_world_create(m, settings, n, 0, &w, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
  if (lockstep_world_create(m, settings, n, 2, &w, error, sizeof error) != LOCKSTEP_OK) {
    fprintf(stderr, "capi: %s\n", error);
    return 1;
  }
  CHECK(lockstep_world_players(w) == 2 && lockstep_world_tick(w) == 0);

  const uint32_t size = lockstep_module_input_size(m);
  uint8_t inputs[2 * 64];
  const uint8_t order[] = {5, 0, 0, 0, 0}; /* a command the module may find invalid: then a no-op */
  lockstep_command cmd = {1, sizeof order, order};
  for (uint32_t t = 1; t <= 200; ++t) {
    memset(inputs, (int)(t / 20 % 3), sizeof inputs);
    lockstep_frame f = {t, 3u, 0u, 2u, size, inputs, t % 50 == 0 ? 1u : 0u, &cmd};
    if (lockstep_world_step(w, &f, error, sizeof error) != LOCKSTEP_OK) {
      fprintf(stderr, "capi: step %u: %s\n", t, error);
      return 1;
    }
  }
  CHECK(lockstep_world_tick(w) == 200);
  /* Refused frames leave the world as it was. */
  const uint64_t h = lockstep_world_hash(w);
  lockstep_frame wrong_tick = {7, 3u, 0u, 2u, size, inputs, 0, NULL};
  CHECK(lockstep_world_step(w, &wrong_tick, error, sizeof error) == LOCKSTEP_ERROR_FRAME);
  lockstep_frame wrong_size = {201, 3u, 0u, 2u, size + 1, inputs, 0, NULL};
  CHECK(lockstep_world_step(w, &wrong_size, error, sizeof error) == LOCKSTEP_ERROR_FRAME);
  lockstep_command empty = {0, 0, order};
  lockstep_frame empty_cmd = {201, 3u, 0u, 2u, size, inputs, 1, &empty};
  CHECK(lockstep_world_step(w, &empty_cmd, error, sizeof error) == LOCKSTEP_ERROR_FRAME);
  lockstep_frame bad_mask = {201, 4u, 0u, 2u, size, inputs, 0, NULL};
  CHECK(lockstep_world_step(w, &bad_mask, error, sizeof error) == LOCKSTEP_ERROR_FRAME);
  CHECK(lockstep_world_hash(w) == h && lockstep_world_tick(w) == 200);

  /* Serialize, load into another world: the same hash, entity hashes and fingerprint. */
  const size_t len = lockstep_world_serialize(w, NULL, 0);
  uint8_t* bytes = malloc(len);
  CHECK(bytes != NULL && lockstep_world_serialize(w, bytes, len) == len);
  lockstep_world* other = NULL;
  CHECK(lockstep_world_create(m, settings, n, 2, &other, error, sizeof error) == LOCKSTEP_OK);
  CHECK(lockstep_world_load(other, bytes, len, error, sizeof error) == LOCKSTEP_OK);
  CHECK(lockstep_world_hash(other) == h && lockstep_world_tick(other) == 200);
  CHECK(lockstep_world_fingerprint(other) == lockstep_world_fingerprint(w));
  CHECK(lockstep_world_entity_count(other) == lockstep_world_entity_count(w) && lockstep_world_entity_count(w) > 0);
  CHECK(lockstep_world_entity_hash(other, 0) == lockstep_world_entity_hash(w, 0));
  /* The desync probe's Fields and Global answers: sized with cap 0, equal in both worlds. */
  {
    lockstep_field a[64], b[64];
    size_t na = 0, nb = 0;
    const uint32_t last = lockstep_world_entity_count(w) - 1;
    CHECK(lockstep_world_entity_fields(w, last, NULL, 0, &na, error, sizeof error) == LOCKSTEP_ERROR_BUFFER && na > 0);
    CHECK(na <= 64 && lockstep_world_entity_fields(w, last, a, 64, &na, error, sizeof error) == LOCKSTEP_OK);
    CHECK(lockstep_world_entity_fields(other, last, b, 64, &nb, error, sizeof error) == LOCKSTEP_OK && nb == na);
    for (size_t i = 0; i < na && i < nb && i < 64; ++i)
      CHECK(a[i].name && b[i].name && strcmp(a[i].name, b[i].name) == 0 && a[i].kind <= 3 && a[i].kind == b[i].kind &&
            a[i].bits == b[i].bits);
    CHECK(lockstep_world_global_fields(w, a, 64, &na, error, sizeof error) == LOCKSTEP_OK && na > 0);
    CHECK(lockstep_world_global_fields(other, b, 64, &nb, error, sizeof error) == LOCKSTEP_OK && nb == na);
    for (size_t i = 0; i < na && i < nb && i < 64; ++i)
      CHECK(a[i].name && b[i].name && strcmp(a[i].name, b[i].name) == 0 && a[i].bits == b[i].bits);
    CHECK(lockstep_world_entity_fields(w, last + 1, a, 64, &na, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT &&
          na == 0);
    CHECK(lockstep_world_entity_fields(NULL, 0, a, 64, &na, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(lockstep_world_global_fields(w, a, 64, NULL, error, sizeof error) == LOCKSTEP_ERROR_ARGUMENT);
  }
  CHECK(lockstep_world_load(other, bytes, len / 2, error, sizeof error) == LOCKSTEP_ERROR_STATE);
  CHECK(lockstep_world_hash(other) == h); /* unchanged by the refused load */
  lockstep_world* copy = lockstep_world_clone(w);
  CHECK(copy != NULL && lockstep_world_hash(copy) == h);
  lockstep_world_destroy(copy);
  lockstep_world_destroy(other);
  free(bytes);
  printf("%s tick %u hash %016llx\n", lockstep_module_name(m), lockstep_world_tick(w), (unsigned long long)h);
  lockstep_world_destroy(w);
  lockstep_world_destroy(NULL);
  return failures == 0 ? 0 : 1;
}
