// No C++ exception crosses into C: every entry point of lockstep.h, lockstep_session.h and
// lockstep_token.h, made to throw on entry (the guard's test hook), answers with its documented
// "internal error" value instead: LOCKSTEP_ERROR_INTERNAL and a sentence naming the function, or
// 0/NULL where it returns no result. The list of calls is checked against the headers' own
// declarations, so an entry point added without its guard fails here.
#include <doctest/doctest.h>

#include <fstream>
#include <set>
#include <sstream>
#include <stdexcept>
#include <string>

// The plain names of the checks are called here as themselves (versions 2 and 3's entry points),
// beside their _v4 ones.
#define LOCKSTEP_PLAIN_NAMES
#include "lockstep/lockstep.h"
#include "lockstep/lockstep_session.h"
#include "lockstep/lockstep_token.h"
#include "handles.hpp"

namespace {

std::set<std::string> g_entered;

void throw_on_entry(const char* entry) {
  g_entered.insert(entry);
  throw std::runtime_error("injected");
}

bool said(const char* e, const std::string& name) { return std::string(e) == name + ": internal error: injected"; }

// The names every header declares with LOCKSTEP_API (the word after the return type, before "(").
std::set<std::string> declared() {
  std::set<std::string> names;
  for (const char* h : {"lockstep.h", "lockstep_session.h", "lockstep_token.h"}) {
    std::ifstream in(std::string(LOCKSTEP_API_INCLUDE_DIR) + "/" + h);
    REQUIRE(in);
    std::stringstream text;
    text << in.rdbuf();
    const std::string s = text.str();
    for (std::size_t at = s.find("LOCKSTEP_API "); at != std::string::npos; at = s.find("LOCKSTEP_API ", at + 1)) {
      const std::size_t paren = s.find('(', at);
      std::size_t begin = s.rfind("lockstep_", paren);
      if (paren == std::string::npos || begin == std::string::npos || begin < at) continue;
      names.insert(s.substr(begin, paren - begin));
    }
  }
  return names;
}

}  // namespace

TEST_CASE("api/guard: every C entry point answers an exception inside it with its error value, never lets it out") {
  char e[256] = "";
  lockstep::c_api::g_entry_hook = &throw_on_entry;
  g_entered.clear();
  CHECK(lockstep_api_version() == 0);
  CHECK(lockstep_version() == nullptr);
  CHECK(lockstep_protocol_version() == 0);
  CHECK(lockstep_module_builtin(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_module_builtin"));
  CHECK(lockstep_module_load(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_module_load"));
  CHECK(lockstep_module_from_table(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_module_from_table"));
  CHECK(lockstep_module_name(nullptr) == nullptr);
  CHECK(lockstep_module_version(nullptr) == 0);
  CHECK(lockstep_module_input_size(nullptr) == 0);
  CHECK(lockstep_module_build_id(nullptr) == 0);
  CHECK(lockstep_module_join_fingerprint(nullptr) == 0);
  CHECK(lockstep_module_settings(nullptr, nullptr, nullptr, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_module_settings"));
  CHECK(lockstep_world_create(nullptr, nullptr, 0, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_world_create"));
  CHECK(lockstep_world_clone(nullptr) == nullptr);
  lockstep_world_destroy(nullptr);
  CHECK(lockstep_world_tick(nullptr) == 0);
  CHECK(lockstep_world_players(nullptr) == 0);
  CHECK(lockstep_world_step(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_world_step"));
  CHECK(lockstep_world_hash(nullptr) == 0);
  CHECK(lockstep_world_fingerprint(nullptr) == 0);
  CHECK(lockstep_world_entity_count(nullptr) == 0);
  CHECK(lockstep_world_entity_hash(nullptr, 0) == 0);
  CHECK(lockstep_world_entity_fields(nullptr, 0, nullptr, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_world_entity_fields"));
  CHECK(lockstep_world_global_fields(nullptr, nullptr, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_world_global_fields"));
  CHECK(lockstep_world_serialize(nullptr, nullptr, 0) == 0);
  CHECK(lockstep_world_save(nullptr, nullptr, 0, nullptr) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_world_load(nullptr, nullptr, 0, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_world_load"));
  lockstep_game_init(nullptr, 0);
  lockstep_client_config_init(nullptr, 0);
  CHECK(lockstep_now_ns() == 0);
  CHECK(lockstep_client_create(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_client_create"));
  lockstep_client_destroy(nullptr);
  CHECK(lockstep_client_update(nullptr, 0) == 0);
  CHECK(lockstep_client_set_input(nullptr, nullptr, 0) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_client_add_command(nullptr, nullptr, 0) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_client_set_result(nullptr, nullptr, 0) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_client_poll_event(nullptr, nullptr) == 0);
  CHECK(lockstep_client_next_event(nullptr, nullptr) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_client_alpha(nullptr, 0) == 0);
  lockstep_client_presented(nullptr, 0);
  CHECK(lockstep_client_stats_get(nullptr, nullptr) == LOCKSTEP_ERROR_INTERNAL);
  lockstep_client_callback_failed(nullptr, nullptr);
  CHECK(std::string(lockstep_client_error(nullptr)).find("exception") != std::string::npos);
  CHECK(lockstep_client_state(nullptr) == nullptr);
  CHECK(lockstep_client_previous_state(nullptr) == nullptr);
  CHECK(lockstep_client_predicted_state(nullptr) == nullptr);
  CHECK(lockstep_client_predicted_previous_state(nullptr) == nullptr);
  CHECK(lockstep_client_predicted_alpha(nullptr, 0) == 0);
  CHECK(lockstep_client_finished(nullptr) == 1);
  CHECK(lockstep_client_exit_code(nullptr) == 1);
  lockstep_client_leave(nullptr);
  CHECK(lockstep_compare_game(nullptr, nullptr, nullptr, 0, 0, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_compare_game"));
  CHECK(lockstep_bisect_game(nullptr, nullptr, nullptr, 0, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_bisect_game"));
  CHECK(lockstep_game_trace_write(nullptr, nullptr, 0, 0, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_game_trace_write"));
  CHECK(lockstep_game_trace_compare(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_game_trace_compare"));
  CHECK(lockstep_compare_game_v4(nullptr, nullptr, nullptr, 0, 0, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_compare_game_v4"));
  CHECK(lockstep_bisect_game_v4(nullptr, nullptr, nullptr, 0, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_bisect_game_v4"));
  CHECK(lockstep_game_trace_write_v4(nullptr, nullptr, 0, 0, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_game_trace_write_v4"));
  CHECK(lockstep_game_trace_compare_v4(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_game_trace_compare_v4"));
  CHECK(lockstep_layout(nullptr, nullptr, nullptr, nullptr) == LOCKSTEP_ERROR_INTERNAL);
  lockstep_client_start_service(nullptr);
  lockstep_token_keygen(nullptr);
  lockstep_token_request_init(nullptr, 0);
  CHECK(lockstep_token_mint(nullptr, nullptr, nullptr, 0, nullptr, e, sizeof e) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(said(e, "lockstep_token_mint"));
  CHECK(lockstep_result_verify(nullptr, 0, nullptr, 0) == LOCKSTEP_ERROR_INTERNAL);
  CHECK(lockstep_result_verify_v4(nullptr, 0, nullptr, 0) == LOCKSTEP_ERROR_INTERNAL);
  lockstep::c_api::g_entry_hook = nullptr;
  const std::set<std::string> names = declared();
  CHECK(names.size() >= 66);
  for (const std::string& n : names) CHECK_MESSAGE(g_entered.count(n) == 1, n, " was not called through its guard here");
  for (const std::string& n : g_entered) CHECK_MESSAGE(names.count(n) == 1, n, " is not declared in the headers");
  // And with the hook gone, the same calls run their bodies again.
  CHECK(lockstep_api_version() == LOCKSTEP_API_VERSION);
  CHECK(lockstep_module_builtin(nullptr, nullptr, e, sizeof e) == LOCKSTEP_ERROR_ARGUMENT);
}
