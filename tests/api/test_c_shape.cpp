// API version 4's one shape, called as a game would: the event's struct_size and "none" as a kind,
// lockstep_world_save's buffer rule (the length either way, LOCKSTEP_ERROR_BUFFER when it does not
// fit), and each error code with one meaning, while the plain names of the checks keep answering
// with versions 2 and 3's codes for the binaries built against those.
#include <doctest/doctest.h>

#include <cstdint>
#include <cstring>
#include <string>
#include <vector>

#include "lockstep/lockstep.h"
#include "lockstep/lockstep_session.h"
#include "lockstep/lockstep_token.h"

// What a game built against this header calls by the plain names: the _v4 entry points.
const auto kCompareByHeader = &lockstep_compare_game;
const auto kVerifyByHeader = &lockstep_result_verify;
// From here the plain names are themselves: versions 2 and 3's entry points, as a binary built
// against their headers reaches them.
#undef lockstep_compare_game
#undef lockstep_bisect_game
#undef lockstep_game_trace_write
#undef lockstep_game_trace_compare
#undef lockstep_result_verify

namespace {

// A game table that passes every check before a file is read: the arena's identity and callbacks
// that are never reached.
lockstep_game arena_game(const lockstep_module* arena) {
  lockstep_game g;
  lockstep_game_defaults(&g);
  g.name = lockstep_module_name(arena);
  g.version = lockstep_module_version(arena);
  g.input_size = lockstep_module_input_size(arena);
  g.reset = [](void*, const uint8_t*, size_t, uint32_t) { return 1; };
  g.step = [](void*, const lockstep_frame*) { return 1; };
  g.save = [](void*, uint8_t*, size_t) -> size_t { return 0; };
  g.load = [](void*, const uint8_t*, size_t) { return 1; };
  g.tick = [](void*, const uint8_t*, size_t) -> uint32_t { return 0; };
  return g;
}

}  // namespace

TEST_SUITE("api/shape") {
  TEST_CASE("lockstep_world_save: the length either way, LOCKSTEP_ERROR_BUFFER when it does not fit, the bytes when it does") {
    const lockstep_module* arena = nullptr;
    REQUIRE(lockstep_module_builtin("arena", &arena, nullptr, 0) == LOCKSTEP_OK);
    lockstep_world* w = nullptr;
    REQUIRE(lockstep_world_create(arena, nullptr, 0, 2, &w, nullptr, 0) == LOCKSTEP_OK);
    size_t n = 0;
    CHECK(lockstep_world_save(w, nullptr, 0, &n) == LOCKSTEP_ERROR_BUFFER);
    REQUIRE(n > 0);
    CHECK(n == lockstep_world_serialize(w, nullptr, 0));
    std::vector<uint8_t> small(n - 1, 0xee), bytes(n + 8, 0xee);
    size_t m = 0;
    CHECK(lockstep_world_save(w, small.data(), small.size(), &m) == LOCKSTEP_ERROR_BUFFER);
    CHECK(m == n);
    CHECK(small == std::vector<uint8_t>(n - 1, 0xee));  // nothing written
    CHECK(lockstep_world_save(w, bytes.data(), bytes.size(), &m) == LOCKSTEP_OK);
    CHECK(m == n);
    std::vector<uint8_t> old(n);
    CHECK(lockstep_world_serialize(w, old.data(), old.size()) == n);
    CHECK(std::memcmp(old.data(), bytes.data(), n) == 0);
    CHECK(bytes[n] == 0xee);
    CHECK(lockstep_world_save(nullptr, bytes.data(), bytes.size(), &m) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(m == 0);
    CHECK(lockstep_world_save(w, nullptr, 4, &m) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(lockstep_world_save(w, bytes.data(), bytes.size(), nullptr) == LOCKSTEP_ERROR_ARGUMENT);
    lockstep_world_destroy(w);
  }

  TEST_CASE("lockstep_event has its struct_size, and one of another size is refused with a sentence") {
    const lockstep_module* arena = nullptr;
    REQUIRE(lockstep_module_builtin("arena", &arena, nullptr, 0) == LOCKSTEP_OK);
    size_t offset = 1, size = 0;
    REQUIRE(lockstep_layout("lockstep_event", "struct_size", &offset, &size) == LOCKSTEP_OK);
    CHECK(offset == 0);
    CHECK(size == 4);
    REQUIRE(lockstep_layout("lockstep_event_v3", "kind", &offset, &size) == LOCKSTEP_OK);
    CHECK(offset == 0);  // versions 2 and 3's event: no struct_size
    lockstep_client_config config;
    lockstep_client_config_defaults(&config);
    config.module = arena;
    config.port = 1;  // nobody there: the client waits, and has no event yet
    lockstep_client* client = nullptr;
    REQUIRE(lockstep_client_create(&config, &client, nullptr, 0) == LOCKSTEP_OK);
    lockstep_event e;
    std::memset(&e, 0x5a, sizeof e);
    e.struct_size = sizeof e;
    CHECK(lockstep_client_next_event(client, &e) == LOCKSTEP_OK);
    CHECK(e.kind == LOCKSTEP_EVENT_NONE);
    CHECK(e.struct_size == sizeof e);
    CHECK(e.name[0] == '\0');
    e.struct_size = sizeof e - 4;
    CHECK(lockstep_client_next_event(client, &e) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(std::string(lockstep_client_error(client)).find("lockstep_event.struct_size") != std::string::npos);
    e.struct_size = 0;
    CHECK(lockstep_client_next_event(client, &e) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK(lockstep_client_next_event(client, nullptr) == LOCKSTEP_ERROR_ARGUMENT);
    lockstep_client_destroy(client);
  }

  TEST_CASE("each error code has one meaning, and the plain names answer as versions 2 and 3 did") {
    const lockstep_module* arena = nullptr;
    REQUIRE(lockstep_module_builtin("arena", &arena, nullptr, 0) == LOCKSTEP_OK);
    const lockstep_game g = arena_game(arena);
    char report[256] = "";
    // A file that cannot be opened: FILE (was NOT_FOUND, also "no module of that name").
    CHECK(lockstep_bisect_game_v4(arena, &g, "/nonexistent/x.replay", 0, report, sizeof report) == LOCKSTEP_ERROR_FILE);
    CHECK(lockstep_bisect_game(arena, &g, "/nonexistent/x.replay", 0, report, sizeof report) == LOCKSTEP_ERROR_NOT_FOUND);
    CHECK(lockstep_game_trace_compare_v4(&g, "/nonexistent/x.trace", report, sizeof report) == LOCKSTEP_ERROR_FILE);
    CHECK(lockstep_game_trace_compare(&g, "/nonexistent/x.trace", report, sizeof report) == LOCKSTEP_ERROR_NOT_FOUND);
    // A file that is not what it should be: FORMAT (was SETTINGS, also "settings the module refuses").
    const std::string self = LOCKSTEP_API_INCLUDE_DIR "/lockstep.h";
    CHECK(lockstep_game_trace_compare_v4(&g, self.c_str(), report, sizeof report) == LOCKSTEP_ERROR_FORMAT);
    CHECK(std::string(report).find("not a lockstep game trace") != std::string::npos);
    CHECK(lockstep_game_trace_compare(&g, self.c_str(), report, sizeof report) == LOCKSTEP_ERROR_SETTINGS);
    CHECK(lockstep_bisect_game_v4(arena, &g, self.c_str(), 0, report, sizeof report) == LOCKSTEP_ERROR_FORMAT);
    CHECK(lockstep_bisect_game(arena, &g, self.c_str(), 0, report, sizeof report) == LOCKSTEP_ERROR_SETTINGS);
    // Another identity: DIFFERS (was STATE, also "bytes that are not a state").
    lockstep_game other = g;
    other.version = g.version + 1;
    CHECK(lockstep_compare_game_v4(arena, &other, nullptr, 0, 10, report, sizeof report) == LOCKSTEP_ERROR_DIFFERS);
    CHECK(lockstep_compare_game(arena, &other, nullptr, 0, 10, report, sizeof report) == LOCKSTEP_ERROR_STATE);
    CHECK((kCompareByHeader == &lockstep_compare_game_v4));
    // The game's callback fails (its reset refuses every world): CALLBACK (was STATE).
    CHECK(lockstep_compare_game_v4(arena, &g, nullptr, 0, 10, report, sizeof report) == LOCKSTEP_ERROR_CALLBACK);
    CHECK(lockstep_compare_game(arena, &g, nullptr, 0, 10, report, sizeof report) == LOCKSTEP_ERROR_STATE);
    // A document that is not a result: FORMAT (was ARGUMENT).
    const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES] = {1};
    const char junk[] = "{\"not\": \"a result\"}";
    CHECK(lockstep_result_verify_v4(junk, sizeof junk - 1, key, 1) == LOCKSTEP_ERROR_FORMAT);
    CHECK(lockstep_result_verify(junk, sizeof junk - 1, key, 1) == LOCKSTEP_ERROR_ARGUMENT);
    CHECK((kVerifyByHeader == &lockstep_result_verify_v4));
    CHECK(lockstep_result_verify_v4(nullptr, 0, key, 1) == LOCKSTEP_ERROR_ARGUMENT);
  }
}
