// The C session API (lockstep_session.h) over the C++ Client, and the Simulation that stands for
// a game that owns its state (mode b): every instance the session holds (current, previous,
// history, snapshots) is the game's saved bytes; stepping one loads it into the game first when
// the game holds another, so the game's own state is always the one last stepped.
#include "lockstep/lockstep_session.h"

#include <algorithm>
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
#include "handles.hpp"


namespace lockstep {
namespace {

// What the instances of one game share: the callbacks, which instance the game's state holds,
// and the first callback failure (the session ends with it).
struct GameContext {
  lockstep_game game{};
  std::uint64_t code = 0;          // the identity part of the fingerprint
  // Each distinct state an instance holds has a version (a copy of the instance keeps it): the
  // game's own state is the one of holder_version.
  std::uint64_t holder_version = 0;
  std::uint64_t next_version = 1;
  std::string failure;
  void fail(const std::string& why) {
    if (failure.empty()) failure = why;
  }
  // With prediction: the steps taken ahead of the confirmed tick, by tick (GGPO's saved frames).
  // A world stepping tick T from a state with the same hash and size, by the same frame, takes the
  // saved result instead of calling the game: the confirmed world follows a right prediction
  // without a callback. A later step of the same tick (a re-simulation) replaces the entry.
  struct Stepped {
    std::uint64_t from_hash = 0;
    std::size_t from_size = 0;
    InputFrame frame;
    std::vector<std::uint8_t> bytes;
  };
  bool keep_steps = false;
  std::map<Tick, Stepped> stepped;
  std::uint64_t steps = 0, saves = 0, loads = 0, reused = 0;
  // Forgets the steps up to `tick` (confirmed: never taken again).
  void confirmed(Tick tick) { stepped.erase(stepped.begin(), stepped.upper_bound(tick)); }
};

class GameSimulation final : public Simulation {
 public:
  GameSimulation(std::shared_ptr<GameContext> ctx, std::vector<std::uint8_t> bytes, std::uint32_t players,
                 std::uint64_t fingerprint)
      : ctx_(std::move(ctx)), bytes_(std::move(bytes)), players_(players), fingerprint_(fingerprint) {
    version_ = ctx_->next_version++;
    tick_ = read_tick(bytes_);
  }

  // The game's state, saved; false (and the context told) when the game fails to.
  static bool save(GameContext& ctx, std::vector<std::uint8_t>* out) {
    const lockstep_game& g = ctx.game;
    ++ctx.saves;
    const std::size_t n = g.save(g.user, nullptr, 0);
    out->assign(n, 0);
    if (n == 0 || g.save(g.user, out->data(), n) != n) {
      ctx.fail("the game's save() wrote no state, or another length than it said");
      return false;
    }
    return true;
  }

  // The game holds this instance from now on.
  void mark_held() { ctx_->holder_version = version_; }
  [[nodiscard]] bool holds_me() const { return ctx_->holder_version == version_; }

  Tick tick() const override { return tick_; }
  void step(const InputFrame& frame) override {
    const lockstep_game& g = ctx_->game;
    if (!ctx_->failure.empty()) return;
    const std::uint64_t from = hash();
    const std::size_t from_size = bytes_.size();
    if (const auto it = ctx_->stepped.find(frame.tick); it != ctx_->stepped.end() && it->second.from_hash == from &&
                                                         it->second.from_size == bytes_.size() && it->second.frame == frame) {
      bytes_ = it->second.bytes;  // stepped before, from this state by this frame: the same bytes
      tick_ = frame.tick;
      version_ = ctx_->next_version++;
      ++ctx_->reused;
      return;
    }
    if (!holds_me()) {
      ++ctx_->loads;
      if (g.load(g.user, bytes_.data(), bytes_.size()) != 0) return ctx_->fail("the game's load() refused a state it saved");
    }
    const lockstep_frame f = c_frame(frame, &commands_);
    ++ctx_->steps;
    if (g.step(g.user, &f) != 0) return ctx_->fail("the game's step() failed at tick " + std::to_string(frame.tick));
    std::vector<std::uint8_t> next;
    if (!save(*ctx_, &next)) return;
    if (read_tick(next) != frame.tick)
      return ctx_->fail("the game's state is at tick " + std::to_string(read_tick(next)) + " after stepping tick " +
                        std::to_string(frame.tick));
    bytes_ = std::move(next);
    tick_ = frame.tick;
    version_ = ctx_->next_version++;
    mark_held();
    if (ctx_->keep_steps) ctx_->stepped[frame.tick] = {from, from_size, frame, bytes_};
  }
  // Makes the game's state this instance's bytes (loading them if it holds another).
  void hold() const {
    if (holds_me() || !ctx_->failure.empty()) return;
    ++ctx_->loads;
    if (ctx_->game.load(ctx_->game.user, bytes_.data(), bytes_.size()) != 0)
      return ctx_->fail("the game's load() refused a state it saved");
    ctx_->holder_version = version_;
  }
  std::uint32_t input_size() const override { return ctx_->game.input_size; }
  void serialize(std::vector<std::uint8_t>& out) const override { out.insert(out.end(), bytes_.begin(), bytes_.end()); }
  bool deserialize(std::span<const std::uint8_t> bytes) override {
    // Untrusted bytes (a snapshot): the game loads them, and what it saves back is the state.
    const lockstep_game& g = ctx_->game;
    if (bytes.empty() || g.load(g.user, bytes.data(), bytes.size()) != 0) return false;
    std::vector<std::uint8_t> saved;
    if (!save(*ctx_, &saved)) return false;
    bytes_ = std::move(saved);
    tick_ = read_tick(bytes_);
    version_ = ctx_->next_version++;
    mark_held();
    return true;
  }
  std::uint64_t hash() const override {
    if (hashed_version_ != version_) {
      hash_ = hash_bytes(bytes_);
      hashed_version_ = version_;
    }
    return hash_;
  }
  std::uint32_t entity_count() const override {
    return ctx_->game.entity_count ? ctx_->game.entity_count(ctx_->game.user, bytes_.data(), bytes_.size()) : 0;
  }
  std::uint64_t entity_hash(std::uint32_t entity) const override { return fields_hash(entity_fields(entity)); }
  std::vector<FieldValue> entity_fields(std::uint32_t entity) const override { return fields(entity); }
  std::vector<FieldValue> global_fields() const override { return fields(UINT32_MAX); }
  std::unique_ptr<Simulation> clone() const override {
    auto c = std::make_unique<GameSimulation>(ctx_, bytes_, players_, fingerprint_);
    c->assign(*this);
    return c;
  }
  void assign(const Simulation& other) override {
    const auto& o = dynamic_cast<const GameSimulation&>(other);
    bytes_ = o.bytes_;
    tick_ = o.tick_;
    players_ = o.players_;
    fingerprint_ = o.fingerprint_;
    version_ = o.version_;  // the same state: if the game holds it, stepping this copy needs no load
    hash_ = o.hash_;
    hashed_version_ = o.hashed_version_;
  }
  std::uint64_t fingerprint() const override { return fingerprint_; }
  void draw(const Simulation&, float, DrawList& out) const override { out.clear(); }  // the game draws its own
  float width() const override { return 1; }
  float height() const override { return 1; }
  void perturb(std::uint64_t selector) override {
    // A test hook: one bit of the saved state; the next step loads it into the game.
    if (bytes_.empty()) return;
    bytes_[selector % bytes_.size()] ^= 1;
    version_ = ctx_->next_version++;
  }

 private:
  Tick read_tick(const std::vector<std::uint8_t>& b) const {
    return b.empty() ? 0 : ctx_->game.tick(ctx_->game.user, b.data(), b.size());
  }
  std::vector<FieldValue> fields(std::uint32_t entity) const {
    const lockstep_game& g = ctx_->game;
    if (!g.fields) return {};
    std::vector<lockstep_field> raw(g.fields(g.user, bytes_.data(), bytes_.size(), entity, nullptr, 0));
    raw.resize(std::min(raw.size(), g.fields(g.user, bytes_.data(), bytes_.size(), entity, raw.data(), raw.size())));
    return field_values(raw);
  }

  std::shared_ptr<GameContext> ctx_;
  std::vector<std::uint8_t> bytes_;
  std::uint32_t players_ = 0;
  std::uint64_t fingerprint_ = 0;
  std::uint64_t version_ = 0;
  mutable std::uint64_t hash_ = 0, hashed_version_ = 0;  // hash() of bytes_ at version hashed_version_
  Tick tick_ = 0;
  std::vector<lockstep_command> commands_;
};

// The session's factory for a game that owns its state: the game resets to the world and its
// saved tick 0 is the world.
WorldFactory game_factory(const std::shared_ptr<GameContext>& ctx) {
  return [ctx](const WorldParams& world) -> std::unique_ptr<Simulation> {
    const lockstep_game& g = ctx->game;
    if (g.reset(g.user, world.settings.data(), world.settings.size(), world.players) != 0) return nullptr;
    std::vector<std::uint8_t> bytes;
    if (!GameSimulation::save(*ctx, &bytes)) return nullptr;
    auto sim = std::make_unique<GameSimulation>(ctx, std::move(bytes), world.players,
                                                world_fingerprint(ctx->code, world.settings));
    sim->mark_held();
    return sim;
  };
}

using c_api::fail;

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
};

extern "C" {

int64_t lockstep_now_ns(void) { return monotonic_ns(); }

void lockstep_game_init(lockstep_game* game, size_t struct_size) { c_api::init_versioned(lockstep_game{}, game, struct_size); }

void lockstep_client_config_init(lockstep_client_config* config, size_t struct_size) {
  lockstep_client_config d{};
  d.host = "127.0.0.1";
  d.port = 7777;
  d.name = "player";
  d.connect_timeout_ms = 20'000;
  d.playout_max_ms = 150;
  c_api::init_versioned(d, config, struct_size);
}

lockstep_result lockstep_client_create(const lockstep_client_config* given, lockstep_client** out, char* error,
                                       size_t error_cap) {
  if (!given || !out) return fail(LOCKSTEP_ERROR_ARGUMENT, "config and out must not be NULL", error, error_cap);
  *out = nullptr;
  lockstep_client_config config_copy;
  lockstep_client_config_defaults(&config_copy);
  std::string bad;
  if (!c_api::read_versioned(*given, &config_copy, sizeof(lockstep_client_config), "config", &bad))
    return fail(LOCKSTEP_ERROR_ARGUMENT, bad, error, error_cap);
  const lockstep_client_config* config = &config_copy;
  if ((config->module == nullptr) == (config->game == nullptr))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module or game: exactly one must be set", error, error_cap);
  if (config->connect_timeout_ms <= 0 || config->playout_max_ms < 0)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "connect_timeout_ms must be positive and playout_max_ms at least 0", error,
                error_cap);
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
  auto handle = std::make_unique<lockstep_client>();
  if (config->module) {
    c.factory = config->module->module->create;
    o.input_size = config->module->module->input_size;
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
    const lockstep_result r = err.kind == ErrorKind::Usage        ? LOCKSTEP_ERROR_ARGUMENT
                              : err.kind == ErrorKind::Connection ? LOCKSTEP_ERROR_CONNECTION
                                                                  : LOCKSTEP_ERROR_RUNTIME;
    return fail(r, err.detail, error, error_cap);
  }
  if (handle->hash_log.is_open()) handle->client->session().set_hash_log(&handle->hash_log);
  *out = handle.release();
  return LOCKSTEP_OK;
}

void lockstep_client_destroy(lockstep_client* client) {
  if (!client) return;
  client->client->stop_service();
  delete client;
}

int64_t lockstep_client_update(lockstep_client* client, int64_t now_ns) {
  if (!client) return 0;
  const std::int64_t wake = client->client->update(now_ns);
  if (client->game) {
    // Mode (b) with prediction: the game's state is the predicted world when the update returns
    // (lockstep_session.h); steps at or before the confirmed tick are never taken again.
    if (const auto* p = dynamic_cast<const GameSimulation*>(client->client->predicted())) p->hold();
    client->game->confirmed(client->client->session().executed_tick());
  }
  // A game callback that failed ends the session here, with the reason.
  if (client->game && !client->game->failure.empty() && !client->failure_reported) {
    client->failure_reported = true;
    client->client->session().abort(1, "the game's callback failed: " + client->game->failure);
    client->client->update(now_ns);
  }
  for (SessionEvent& e : client->client->take_events()) client->events.push_back(std::move(e));
  while (client->events.size() > 1024) client->events.pop_front();
  return wake;
}

lockstep_result lockstep_client_set_input(lockstep_client* client, const uint8_t* input, size_t n) {
  if (!client || (!input && n > 0)) return LOCKSTEP_ERROR_ARGUMENT;
  return client->client->set_input({input, n}) ? LOCKSTEP_OK : LOCKSTEP_ERROR_ARGUMENT;
}

lockstep_result lockstep_client_add_command(lockstep_client* client, const uint8_t* bytes, size_t n) {
  if (!client || !bytes) return LOCKSTEP_ERROR_ARGUMENT;
  return client->client->add_command({bytes, n}) ? LOCKSTEP_OK : LOCKSTEP_ERROR_ARGUMENT;
}

lockstep_result lockstep_client_set_result(lockstep_client* client, const uint8_t* bytes, size_t n) {
  if (!client || (!bytes && n > 0)) return LOCKSTEP_ERROR_ARGUMENT;
  return client->client->set_result({bytes, n}) ? LOCKSTEP_OK : LOCKSTEP_ERROR_ARGUMENT;
}

int lockstep_client_poll_event(lockstep_client* client, lockstep_event* out) {
  if (!client || !out || client->events.empty()) return 0;
  const SessionEvent e = std::move(client->events.front());
  client->events.pop_front();
  *out = lockstep_event{};
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
  return 1;
}

double lockstep_client_alpha(lockstep_client* client, int64_t now_ns) {
  return client ? client->client->alpha(now_ns) : 1.0;
}

lockstep_result lockstep_client_stats_get(const lockstep_client* client, lockstep_client_stats* out) {
  if (!client || !out) return LOCKSTEP_ERROR_ARGUMENT;
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
  return c_api::write_versioned(st, out, sizeof(lockstep_client_stats)) ? LOCKSTEP_OK : LOCKSTEP_ERROR_ARGUMENT;
}

const void* lockstep_client_state(const lockstep_client* client) {
  const Simulation* s = client ? client->client->current() : nullptr;
  return s ? s->native_state() : nullptr;
}

const void* lockstep_client_previous_state(const lockstep_client* client) {
  const Simulation* s = client ? client->client->previous() : nullptr;
  return s ? s->native_state() : nullptr;
}

const void* lockstep_client_predicted_state(const lockstep_client* client) {
  const Simulation* s = client ? client->client->predicted() : nullptr;
  return s ? s->native_state() : nullptr;
}

const void* lockstep_client_predicted_previous_state(const lockstep_client* client) {
  const Simulation* s = client ? client->client->predicted_previous() : nullptr;
  return s ? s->native_state() : nullptr;
}

double lockstep_client_predicted_alpha(lockstep_client* client, int64_t now_ns) {
  return client ? client->client->predicted_alpha(now_ns) : 1.0;
}

int lockstep_client_finished(const lockstep_client* client) { return client && client->client->finished() ? 1 : 0; }
int lockstep_client_exit_code(const lockstep_client* client) { return client ? client->client->exit_code() : 1; }
void lockstep_client_leave(lockstep_client* client) {
  if (client) client->client->leave("the game left");
}
void lockstep_client_start_service(lockstep_client* client) {
  if (client) client->client->start_service();
}

}  // extern "C"
