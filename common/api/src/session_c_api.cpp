// The C session API (lockstep_session.h) over the C++ Client; a game that owns its state (mode b)
// stands in for a module through game_simulation.hpp.
#include "lockstep/lockstep_session.h"

#include <algorithm>
#include <cstddef>
#include <cstring>
#include <deque>
#include <map>
#include <memory>
#include <string>

#include "lockstep/client.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "game_simulation.hpp"
#include "handles.hpp"


namespace lockstep {
namespace {

using c_api::fail;

// The versioned structs' sizes at API version 2 (lockstep_session.h): the fields added since begin
// there. On LP64 (x86-64, aarch64) they are 144 and 176, the sizes API version 2 shipped.
constexpr std::size_t kConfigV2 = offsetof(lockstep_client_config, step_budget_us);
constexpr std::size_t kStatsV2 = offsetof(lockstep_client_stats, step_budget_ms);
static_assert(sizeof(void*) != 8 || (kConfigV2 == 144 && kStatsV2 == 176), "API version 2's sizes moved");

void copy_text(char* out, std::size_t cap, const std::string& s) {
  const std::size_t n = std::min(s.size(), cap - 1);
  std::memcpy(out, s.data(), n);
  out[n] = '\0';
}

// The log callback of the client created last (one sink per process, as netcode's).
void (*g_log)(void*, int, const char*) = nullptr;
void* g_log_user = nullptr;
void log_trampoline(LogLevel level, const char* line, void*) {
  if (g_log) g_log(g_log_user, static_cast<int>(level), line);
}

}  // namespace
}  // namespace lockstep

using namespace lockstep;

struct lockstep_client {
  HashLogWriter hash_log;  // before the client: the session writes to it until it is destroyed
  std::unique_ptr<Client> client;
  std::shared_ptr<GameContext> game;
  std::deque<SessionEvent> events;
  std::vector<std::string> roster;  // names by slot, for telling a rejoin from a join
  bool failure_reported = false;
  mutable std::string error;  // lockstep_client_error: the last failed call's sentence
};

namespace {
// A failed call on a client: its sentence for lockstep_client_error.
lockstep_status refuse(const lockstep_client* client, std::string why) {
  client->error = std::move(why);
  return LOCKSTEP_ERROR_ARGUMENT;
}
// An exception caught at a C entry point on a client: its sentence for lockstep_client_error.
lockstep_status caught_on(const lockstep_client* client, const char* entry) noexcept {
  char why[256];
  const lockstep_status r = c_api::caught(entry, why, sizeof why);
  if (client) {
    try {
      client->error = why;
    } catch (...) {  // no memory even for the sentence: the code says enough
    }
  }
  return r;
}
}  // namespace

extern "C" {

int64_t lockstep_now_ns(void) try {
  c_api::entered(__func__);
  return monotonic_ns();
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

void lockstep_game_init(lockstep_game* game, size_t struct_size) try {
  c_api::entered(__func__);
  c_api::init_versioned(lockstep_game{}, game, struct_size);
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
}

void lockstep_client_config_init(lockstep_client_config* config, size_t struct_size) try {
  c_api::entered(__func__);
  lockstep_client_config d{};
  d.host = "127.0.0.1";
  d.port = 7777;
  d.name = "player";
  d.connect_timeout_ms = 20'000;
  d.playout_max_ms = 150;
  c_api::init_versioned(d, config, struct_size);
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
}

lockstep_status lockstep_client_create(const lockstep_client_config* given, lockstep_client** out, char* error,
                                       size_t error_cap) try {
  c_api::entered(__func__);
  if (!given || !out) return fail(LOCKSTEP_ERROR_ARGUMENT, "config and out must not be NULL", error, error_cap);
  *out = nullptr;
  lockstep_client_config config_copy;
  lockstep_client_config_defaults(&config_copy);
  std::string bad;
  if (!c_api::read_versioned(*given, &config_copy, kConfigV2, "config", &bad))
    return fail(LOCKSTEP_ERROR_ARGUMENT, bad, error, error_cap);
  const lockstep_client_config* config = &config_copy;
  if ((config->module == nullptr) == (config->game == nullptr))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module or game: exactly one must be set", error, error_cap);
  if (config->connect_timeout_ms <= 0 || config->playout_max_ms < 0)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "connect_timeout_ms must be positive and playout_max_ms at least 0", error,
                error_cap);
  if (config->step_budget_us < 0 || config->step_budget_us > 1'000'000)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "step_budget_us must be 0 (adaptive) or 1..1000000", error, error_cap);
  ClientOptions o;
  ClientConfig& c = o.session;
  c.host = config->host ? config->host : "127.0.0.1";
  c.port = config->port;
  c.name = config->name ? config->name : "player";
  c.token = config->token ? config->token : "";
  c.spectate = config->spectate != 0;
  c.rejoin_secret = config->rejoin_secret ? config->rejoin_secret : "";
  c.last_tick = config->last_tick;
  c.connect_timeout_ns = config->connect_timeout_ms * 1'000'000;
  if (config->connect_token) {
    ConnectToken t;
    std::string why;
    if (!read_connect_token({config->connect_token, config->connect_token_len}, &t, &why))
      return fail(LOCKSTEP_ERROR_ARGUMENT, "connect_token: " + why, error, error_cap);
    if (config->port == 0) c.host.clear();  // the token's servers, in turn
    c.connect_token = std::move(t);
  }
  o.playout_max_ns = config->playout_max_ms * 1'000'000;
  o.predict = config->predict;
  o.step_budget_ns = config->step_budget_us * 1000;
  auto handle = std::make_unique<lockstep_client>();
  if (config->module) {
    c.factory = config->module->module->create;
    o.input_size = config->module->module->input_size;
    // Its libraries and machine code go with the join, as the stock client's do.
    c.libraries.assign(config->module->module->libraries.begin(), config->module->module->libraries.end());
    c.code = config->module->module->code;
    c.code_fma = config->module->module->fma_instructions;
  } else {
    lockstep_game g;
    lockstep_game_defaults(&g);
    if (!c_api::read_versioned(*config->game, &g, sizeof(lockstep_game), "game", &bad))
      return fail(LOCKSTEP_ERROR_ARGUMENT, bad, error, error_cap);
    if (!g.name || !g.reset || !g.step || !g.save || !g.load || !g.tick)
      return fail(LOCKSTEP_ERROR_ARGUMENT, "game: name, reset, step, save, load and tick must be set", error, error_cap);
    if (g.input_size > kMaxInputBytes)
      return fail(LOCKSTEP_ERROR_ARGUMENT, "game.input_size must be at most 64", error, error_cap);
    handle->game = std::make_shared<GameContext>();
    handle->game->game = g;
    handle->game->keep_steps = config->predict > 0;
    handle->game->code = module_code_fingerprint(g.name, g.version, g.build_id, g.input_size);
    c.factory = game_factory(handle->game);
    o.input_size = g.input_size;
  }
  if (config->log) {
    g_log = config->log;
    g_log_user = config->log_user;
    set_log_sink(&log_trampoline, nullptr);
  }
  if (config->hash_log && !handle->hash_log.open(config->hash_log))
    return fail(LOCKSTEP_ERROR_ARGUMENT, std::string("hash_log: cannot write ") + config->hash_log, error, error_cap);
  Error err;
  handle->client = Client::create(std::move(o), &err);
  if (!handle->client) {
    const lockstep_status r = err.kind == ErrorKind::Usage        ? LOCKSTEP_ERROR_ARGUMENT
                              : err.kind == ErrorKind::Connection ? LOCKSTEP_ERROR_CONNECTION
                                                                  : LOCKSTEP_ERROR_RUNTIME;
    return fail(r, err.detail, error, error_cap);
  }
  if (handle->hash_log.is_open()) handle->client->session().set_hash_log(&handle->hash_log);
  *out = handle.release();
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

void lockstep_client_destroy(lockstep_client* client) try {
  c_api::entered(__func__);
  if (!client) return;
  client->client->stop_service();
  delete client;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);  // the client may be half gone: nothing is kept on it
}

int64_t lockstep_client_update(lockstep_client* client, int64_t now_ns) try {
  c_api::entered(__func__);
  if (!client) return 0;
  const std::int64_t wake = client->client->update(now_ns);
  if (client->game) {
    // Mode (b) with prediction: the game's state is the predicted world when the update returns
    // (lockstep_session.h); steps at or before the confirmed tick are never taken again.
    if (const auto* p = dynamic_cast<const GameSimulation*>(client->client->predicted())) {
      p->mark_predicted();
      p->hold();
    }
    client->game->confirmed(client->client->session().executed_tick());
  }
  // A game callback that failed ends the session here, with the reason.
  if (client->game && !client->game->failure.empty() && !client->failure_reported) {
    client->failure_reported = true;
    client->client->session().abort(1, "the game's callback failed: " + client->game->failure);
    client->client->update(now_ns);
  }
  for (SessionEvent& e : client->client->take_events()) {
    // A session the game's callback ended (a reset that failed ends it before any play): its reason.
    if (e.kind == SessionEvent::Kind::Ended && client->game && !client->game->failure.empty() &&
        e.detail.find(client->game->failure) == std::string::npos)
      e.detail = "the game's callback failed: " + client->game->failure + " (" + e.detail + ")";
    client->events.push_back(std::move(e));
  }
  while (client->events.size() > 1024) client->events.pop_front();
  return wake;
} catch (...) {
  caught_on(client, __func__);
  return 0;
}

lockstep_status lockstep_client_set_input(lockstep_client* client, const uint8_t* input, size_t n) try {
  c_api::entered(__func__);
  if (!client) return LOCKSTEP_ERROR_ARGUMENT;
  if (!input && n > 0) return refuse(client, "lockstep_client_set_input: input is NULL with n > 0");
  if (!client->client->set_input({input, n}))
    return refuse(client, "lockstep_client_set_input: " + std::to_string(n) + " bytes, more than the game's input size");
  return LOCKSTEP_OK;
} catch (...) {
  return caught_on(client, __func__);
}

lockstep_status lockstep_client_add_command(lockstep_client* client, const uint8_t* bytes, size_t n) try {
  c_api::entered(__func__);
  if (!client) return LOCKSTEP_ERROR_ARGUMENT;
  if (!bytes) return refuse(client, "lockstep_client_add_command: bytes is NULL");
  if (!client->client->add_command({bytes, n}))
    return refuse(client, "lockstep_client_add_command: a command is 1..512 bytes and at most 64 wait (" +
                              std::to_string(n) + " bytes given)");
  return LOCKSTEP_OK;
} catch (...) {
  return caught_on(client, __func__);
}

lockstep_status lockstep_client_set_result(lockstep_client* client, const uint8_t* bytes, size_t n) try {
  c_api::entered(__func__);
  if (!client) return LOCKSTEP_ERROR_ARGUMENT;
  if (!bytes && n > 0) return refuse(client, "lockstep_client_set_result: bytes is NULL with n > 0");
  if (!client->client->set_result({bytes, n}))
    return refuse(client, "lockstep_client_set_result: a result is at most 256 bytes (" + std::to_string(n) + " given)");
  return LOCKSTEP_OK;
} catch (...) {
  return caught_on(client, __func__);
}

extern "C++" {
namespace {

// Takes the client's oldest event into the fields of an event struct of either version.
template <class Event>
bool take_event(lockstep_client* client, Event* out) {
  if (client->events.empty()) return false;
  const SessionEvent e = std::move(client->events.front());
  client->events.pop_front();
  out->kind = static_cast<std::uint32_t>(e.kind) + 1;  // the C enum counts from 1
  out->tick = e.tick;
  out->slot = e.slot;
  out->code = e.code;
  if (e.kind == SessionEvent::Kind::PlayerJoined && e.slot >= 0) {
    auto& roster = client->roster;
    if (roster.size() <= static_cast<std::size_t>(e.slot)) roster.resize(static_cast<std::size_t>(e.slot) + 1);
    out->code = roster[static_cast<std::size_t>(e.slot)] == e.name ? 1 : 0;  // the same name back: a rejoin
    roster[static_cast<std::size_t>(e.slot)] = e.name;
  }
  std::string name = e.name;
  if (e.kind == SessionEvent::Kind::PlayerLeft && e.slot >= 0 && static_cast<std::size_t>(e.slot) < client->roster.size())
    name = client->roster[static_cast<std::size_t>(e.slot)];  // the left player's name, as it joined
  copy_text(out->name, sizeof out->name, name);
  copy_text(out->detail, sizeof out->detail, e.detail);
  return true;
}

}  // namespace
}  // extern "C++"

lockstep_status lockstep_client_next_event(lockstep_client* client, lockstep_event* out) try {
  c_api::entered(__func__);
  if (!client) return LOCKSTEP_ERROR_ARGUMENT;
  if (!out) return refuse(client, "lockstep_client_next_event: out must not be NULL");
  // Its struct_size began at API version 4, the size it has now; it will only grow at its end.
  if (out->struct_size != sizeof(lockstep_event))
    return refuse(client, "lockstep_client_next_event: " + c_api::versioned_size_refusal(out->struct_size, sizeof(lockstep_event),
                                                                                          sizeof(lockstep_event), "lockstep_event"));
  const std::uint32_t size = out->struct_size;
  *out = lockstep_event{};
  out->struct_size = size;
  if (!take_event(client, out)) out->kind = LOCKSTEP_EVENT_NONE;
  return LOCKSTEP_OK;
} catch (...) {
  return caught_on(client, __func__);
}

int lockstep_client_poll_event(lockstep_client* client, lockstep_event_v3* out) try {
  c_api::entered(__func__);
  if (!client || !out) return 0;
  *out = lockstep_event_v3{};
  return take_event(client, out) ? 1 : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

double lockstep_client_alpha(lockstep_client* client, int64_t now_ns) try {
  c_api::entered(__func__);
  return client ? client->client->alpha(now_ns) : 1.0;
} catch (...) {
  caught_on(client, __func__);
  return 0.0;
}

void lockstep_client_presented(lockstep_client* client, int64_t now_ns) try {
  c_api::entered(__func__);
  if (client) client->client->presented(now_ns);
} catch (...) {
  caught_on(client, __func__);
}

const char* lockstep_client_error(const lockstep_client* client) try {
  c_api::entered(__func__);
  return client ? client->error.c_str() : "";
} catch (...) {
  caught_on(client, __func__);
  return "an exception inside lockstep_client_error";
}

void lockstep_client_callback_failed(lockstep_client* client, const char* why) try {
  c_api::entered(__func__);
  if (!client || !client->game || !why || !client->game->reason.empty()) return;
  client->game->reason.assign(why, strnlen(why, 200));
} catch (...) {
  caught_on(client, __func__);
}

lockstep_status lockstep_client_stats_get(const lockstep_client* client, lockstep_client_stats* out) try {
  c_api::entered(__func__);
  if (!client) return LOCKSTEP_ERROR_ARGUMENT;
  if (!out) return refuse(client, "lockstep_client_stats_get: out must not be NULL");
  const ClientFigures f = client->client->figures();
  lockstep_client_stats st{};
  st.tick = f.tick;
  st.slot = f.slot;
  st.rtt_ms = f.rtt_ms;
  st.jitter_ms = f.jitter_ms;
  st.loss = f.loss;
  st.lead_ms = static_cast<double>(f.lead_ns) / 1e6;
  st.playout_ms = static_cast<double>(f.playout_ns) / 1e6;
  st.frames_behind = static_cast<std::uint32_t>(f.frames_behind);
  st.inputs_filled = f.inputs_filled;
  st.frames_drawn = f.frames_drawn;
  st.frames_clamped = f.frames_clamped;
  st.hash = client->client->session().last_hash();
  st.input_to_screen_p50_ms = f.input_to_screen_p50_ms;
  st.input_to_screen_p99_ms = f.input_to_screen_p99_ms;
  st.predict = f.predict;
  const Simulation* predicted = client->client->predicted();
  st.predicted_tick = predicted ? predicted->tick() : f.tick;
  st.predicted_ticks = f.predicted_ticks;
  st.rebuilds = f.rebuilds;
  st.verified_predictions = f.verified_predictions;
  st.mispredictions = f.mispredictions;
  if (client->game) {
    st.game_steps = client->game->steps;
    st.game_saves = client->game->saves;
    st.game_loads = client->game->loads;
    st.game_reused = client->game->reused;
  }
  st.step_budget_ms = static_cast<double>(f.step_budget_ns) / 1e6;
  st.step_cost_us = static_cast<double>(f.step_cost_ns) / 1e3;
  st.frame_ms = static_cast<double>(f.frame_ns) / 1e6;
  std::string why;
  if (!c_api::write_versioned(st, out, kStatsV2, "stats", &why)) return refuse(client, "lockstep_client_stats_get: " + why);
  return LOCKSTEP_OK;
} catch (...) {
  return caught_on(client, __func__);
}

const void* lockstep_client_state(const lockstep_client* client) try {
  c_api::entered(__func__);
  const Simulation* s = client ? client->client->current() : nullptr;
  return s ? s->native_state() : nullptr;
} catch (...) {
  caught_on(client, __func__);
  return nullptr;
}

const void* lockstep_client_previous_state(const lockstep_client* client) try {
  c_api::entered(__func__);
  const Simulation* s = client ? client->client->previous() : nullptr;
  return s ? s->native_state() : nullptr;
} catch (...) {
  caught_on(client, __func__);
  return nullptr;
}

const void* lockstep_client_predicted_state(const lockstep_client* client) try {
  c_api::entered(__func__);
  const Simulation* s = client ? client->client->predicted() : nullptr;
  return s ? s->native_state() : nullptr;
} catch (...) {
  caught_on(client, __func__);
  return nullptr;
}

const void* lockstep_client_predicted_previous_state(const lockstep_client* client) try {
  c_api::entered(__func__);
  const Simulation* s = client ? client->client->predicted_previous() : nullptr;
  return s ? s->native_state() : nullptr;
} catch (...) {
  caught_on(client, __func__);
  return nullptr;
}

double lockstep_client_predicted_alpha(lockstep_client* client, int64_t now_ns) try {
  c_api::entered(__func__);
  return client ? client->client->predicted_alpha(now_ns) : 1.0;
} catch (...) {
  caught_on(client, __func__);
  return 0.0;
}

int lockstep_client_finished(const lockstep_client* client) try {
  c_api::entered(__func__);
  return client && client->client->finished() ? 1 : 0;
} catch (...) {
  caught_on(client, __func__);
  return 1;
}
int lockstep_client_exit_code(const lockstep_client* client) try {
  c_api::entered(__func__);
  return client ? client->client->exit_code() : 1;
} catch (...) {
  caught_on(client, __func__);
  return 1;
}
void lockstep_client_leave(lockstep_client* client) try {
  c_api::entered(__func__);
  if (client) client->client->leave("the game left");
} catch (...) {
  caught_on(client, __func__);
}
void lockstep_client_start_service(lockstep_client* client) try {
  c_api::entered(__func__);
  if (client) client->client->start_service();
} catch (...) {
  caught_on(client, __func__);
}

}  // extern "C"
