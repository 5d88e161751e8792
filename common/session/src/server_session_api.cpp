// ServerSession's public face: create() with its checks of the config, and the accessors and
// commands of server_session.hpp over the session's parts (server_session_impl.hpp). The phase
// machine is server_session.cpp.
#include <algorithm>

#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "lockstep/websocket_door.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

std::unique_ptr<ServerSession> ServerSession::create(const ServerConfig& config, Error* error) {
  return create_on(udp_network(), config, error);
}

std::unique_ptr<ServerSession> ServerSession::create_on(Network& network, const ServerConfig& config, Error* error) {
  auto fail = [&](ErrorKind kind, const std::string& why, const char* field = "") -> std::unique_ptr<ServerSession> {
    if (error) *error = {kind, why, field};
    return nullptr;
  };
  if (!config.factory && !config.relay)
    return fail(ErrorKind::Usage, "factory is not set: a session needs a simulation module (or relay mode)", "factory");
  if (config.relay) {
    if (config.relay->input_size > kMaxInputBytes)
      return fail(ErrorKind::Usage, "relay.input_size is over " + std::to_string(kMaxInputBytes) + " bytes", "relay");
    if (config.relay->join_fingerprint == 0 || config.relay->world_fingerprint == 0)
      return fail(ErrorKind::Usage, "relay mode needs the game's join and world fingerprints", "relay");
    if (config.world.settings.size() > kMaxSettingsBytes)
      return fail(ErrorKind::Usage, "the world settings are over " + std::to_string(kMaxSettingsBytes) + " bytes", "world");
  }
  if (config.players < 1 || config.players > static_cast<std::uint32_t>(kMaxPlayers))
    return fail(ErrorKind::Usage, "players must be 1..32", "players");
  if (config.input_delay > protocol::kMaxInputDelay) return fail(ErrorKind::Usage, "input_delay must be 0..50", "input_delay");
  if (config.tick_phase_ns >= kTickNs) return fail(ErrorKind::Usage, "tick_phase_ns must be below a tick (10 ms)", "tick_phase_ns");
  if (config.send_every < 1 || config.send_every > protocol::kMaxSendEvery)
    return fail(ErrorKind::Usage, "send_every must be 1..5", "send_every");
  if (config.input_delay + config.send_every - 1 > protocol::kMaxInputDelay)
    return fail(ErrorKind::Usage, "input_delay plus send_every - 1 must be at most 50", "input_delay");
  if (config.token.size() > protocol::kMaxJoinSecretBytes) return fail(ErrorKind::Usage, "token must be at most 128 bytes", "token");
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->cfg.world.players = config.players;
  // An input may wait send_every - 1 ticks for its datagram: the delay covers that wait.
  impl->cfg.input_delay = config.input_delay + config.send_every - 1;
  Error err;
  if (config.relay) {
    impl->input_size = config.relay->input_size;
    impl->join_fingerprint = config.relay->join_fingerprint;
    impl->world_fingerprint = config.relay->world_fingerprint;
    impl->referee.set_reference_voter("");  // the majority is the reference; the server is no voter
  } else {
    impl->simulation = ServerSimulation::create(impl->cfg.factory, impl->cfg.world, config.state_history, &err);
    if (!impl->simulation) return fail(err.kind, err.detail);
    impl->input_size = impl->simulation->input_size();
    impl->join_fingerprint = impl->simulation->join_fingerprint();
    impl->world_fingerprint = impl->simulation->fingerprint();
  }
  impl->result_key = config.result_key;
  if (!impl->result_key && config.token_key) impl->result_key = result_key_from(*config.token_key);
  impl->transport = network.listen(config.bind, config.port, config.players + config.max_spectators + 16, config.limits, &err);
  if (!impl->transport) return fail(err.kind, err.detail);
  if (config.websocket_port) {
    const bool loopback = config.bind.rfind("127.", 0) == 0 || config.bind == "localhost";
    if ((config.token_key || config.token_key_later) && config.tls_cert.empty() && !loopback)
      return fail(ErrorKind::Usage,
                  "connect tokens through the WebSocket door need TLS (a certificate and its key) or a loopback bind: "
                  "a token sent over plain ws:// could be read and used by anyone on the path",
                  "tls_cert");
    WebSocketDoorConfig door;
    door.bind = config.bind;
    door.port = *config.websocket_port;
    door.web_root = config.web_root;
    door.tls_cert = config.tls_cert;
    door.tls_key = config.tls_key;
    door.max_peers = config.players + config.max_spectators + 16;
    if (config.websocket_handshakes) door.max_handshakes = config.websocket_handshakes;
    door.trusted_proxies = config.trusted_proxies;
    door.webrtc = config.webrtc;
    door.webrtc_port_min = config.webrtc_port_min;
    door.webrtc_port_max = config.webrtc_port_max;
    door.webrtc_advertise = config.webrtc_advertise;
    auto ws = listen_websocket(door, config.limits, &err);
    if (!ws) return fail(err.kind, err.detail, "websocket_port");
    if (config.tls_cert.empty() && !loopback)
      LOCKSTEP_LOG_WARN("the WebSocket door on port %u speaks plain ws://: give a certificate and key for wss://",
                        ws->websocket_port());
    impl->transport = join_transports(std::move(impl->transport), std::move(ws));
  }
  if ((config.token_key || config.token_key_later) && config.public_addresses.empty())
    LOCKSTEP_LOG_WARN("connect tokens are checked against this server's port only: a token minted for another "
                      "server on port %u is taken too; give --public-address IP:PORT to check the address",
                      impl->transport->port());
  for (std::uint32_t i = 0; i < config.players; ++i) impl->slots.push_back(impl->fresh_slot());
  // The rings of frames and votes sized now, not a tick at a time over the first kHistory ticks
  // of play: a tick then allocates nothing.
  impl->feed.prepare(config.players, impl->input_size);
  impl->relay_mode.consensus.reserve(config.players);
  impl->referee.reserve(config.players);
  return std::unique_ptr<ServerSession>(new ServerSession(std::move(impl)));
}

ServerSession::ServerSession(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}
ServerSession::~ServerSession() = default;
std::int64_t ServerSession::update(std::int64_t now_ns) { return impl_->update(now_ns); }
int ServerSession::fd() const { return impl_->transport->fd(); }
std::uint16_t ServerSession::port() const { return impl_->transport->port(); }
std::uint16_t ServerSession::websocket_port() const { return impl_->transport->websocket_port(); }
DoorStats ServerSession::door_stats() const { return impl_->transport->door_stats(); }
void ServerSession::stop() { impl_->stop_requested = true; }
void ServerSession::stop_admitting() {
  if (!impl_->shutting_down) LOCKSTEP_LOG_INFO("shutting down: no new players or spectators; the match plays on to its end");
  impl_->shutting_down = true;
}
bool ServerSession::started() const { return impl_->phase != Impl::Phase::Lobby; }
bool ServerSession::accepting_players() const {
  const Impl& m = *impl_;
  if (m.shutting_down || m.stop_requested) return false;
  if (m.phase == Impl::Phase::Lobby) return m.joined_players() < m.cfg.players;
  return m.phase == Impl::Phase::Running && m.cfg.allow_late_join &&
         std::any_of(m.slots.begin(), m.slots.end(), [&](const Impl::Slot& s) { return m.vacant(s); });
}
bool ServerSession::finished() const { return impl_->phase == Impl::Phase::Finished; }
int ServerSession::exit_code() const { return impl_->exit; }
Tick ServerSession::executed_tick() const { return impl_->executed(); }
const Simulation* ServerSession::simulation() const { return impl_->simulation ? &impl_->simulation->current() : nullptr; }
std::uint64_t ServerSession::world_fingerprint() const { return impl_->world_fingerprint; }
std::uint32_t ServerSession::input_size() const { return impl_->input_size; }
std::pair<Tick, std::uint64_t> ServerSession::settled() const { return impl_->latest_settled(); }
const ServerStats& ServerSession::stats() const { return impl_->stats; }
const std::optional<SessionResult>& ServerSession::result() const { return impl_->result; }
std::vector<protocol::SeatStatus> ServerSession::seats() const { return impl_->seat_statuses(); }
std::optional<ServerSession::SeatToken> ServerSession::seat_token(std::uint32_t slot) const {
  if (slot >= impl_->slots.size()) return std::nullopt;
  const Impl::Slot& s = impl_->slots[slot];
  if (!s.taken || !s.bound) return std::nullopt;
  return SeatToken{s.client_id, s.user_data};
}
NetTraffic ServerSession::traffic() const { return impl_->transport->traffic(); }
const std::vector<DesyncEvent>& ServerSession::desyncs() const { return impl_->referee.events(); }
const std::vector<DesyncReport>& ServerSession::reports() const { return impl_->referee.reports(); }
const std::vector<Departure>& ServerSession::departures() const { return impl_->departures; }
std::vector<ServerSession::Outvoted> ServerSession::outvoted() const {
  std::vector<Outvoted> out;
  for (std::size_t i = 0; i < impl_->slots.size(); ++i) {
    const auto& s = impl_->slots[i];
    if (s.outvoted == 0) continue;
    Outvoted o;
    o.slot = static_cast<std::uint32_t>(i);
    o.name = s.name;
    o.times = s.outvoted;
    for (const auto& [mask, times] : s.outvoted_by)
      if (times > o.by_times) {
        o.by_mask = mask;
        o.by_times = times;
      }
    o.suspected = impl_->cfg.collusion_episodes > 0 && o.by_times >= impl_->cfg.collusion_episodes;
    out.push_back(std::move(o));
  }
  return out;
}
std::vector<std::string> ServerSession::player_names() const {
  std::vector<std::string> names;
  for (const auto& s : impl_->slots) names.push_back(s.name);
  return names;
}
const ServerConfig& ServerSession::config() const { return impl_->cfg; }
bool ServerSession::receive_can_wait() const { return impl_->receive_can_wait; }
void ServerSession::set_token_key(const SecretKey& key, const std::vector<TokenAddress>& public_addresses) {
  impl_->take_token_key(key, public_addresses);
}
std::uint32_t ServerSession::peak_peers() const { return impl_->peak_peers; }
std::uint32_t ServerSession::active_players() const { return impl_->active_players_count(); }
std::vector<SessionEvent> ServerSession::take_events() { return std::exchange(impl_->events, {}); }
void ServerSession::on_tick(std::function<void(const InputFrame&, std::uint64_t)> fn) { impl_->tick_fn = std::move(fn); }
void ServerSession::on_keyframe(std::function<void(Tick, std::uint64_t, std::span<const std::uint8_t>)> fn) {
  impl_->keyframe_fn = std::move(fn);
}
void ServerSession::set_hash_log(HashLogWriter* log) { impl_->hash_log = log; }

}  // namespace lockstep
