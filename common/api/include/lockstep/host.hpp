// The embedding API's host: a session hosted from the game's own process (a listen server, or a
// dedicated server a team builds itself), driven from the game's loop with its own monotonic
// time, with the same events a client sees: players in and out, desyncs with their reports, the
// end. The stock lockstep-server is the same ServerSession behind its own options.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

#include "lockstep/client_session.hpp"
#include "lockstep/export.h"
#include "lockstep/server_session.hpp"

namespace lockstep {

class LOCKSTEP_API Host {
 public:
  /// Binds the socket. nullptr with `error` set for a bad configuration (its field named) or a
  /// port that cannot be bound. config.factory is the simulation (required unless config.relay is
  /// set: then the host runs no simulation and the players' majority settles every tick).
  static std::unique_ptr<Host> create(const ServerConfig& config, Error* error);

  /// Handles the network and steps every tick due by `now_ns`; returns when it next has work.
  std::int64_t update(std::int64_t now_ns);
  /// What happened since the last call (ServerSession::take_events()): PlayerJoined, PlayerLeft,
  /// Desync (detail: where it was localized, or why not), Ended (code: the exit code).
  std::vector<SessionEvent> take_events();
  /// Ends the session at the next update; clients are told.
  void stop() { session_->stop(); }
  [[nodiscard]] bool finished() const { return session_->finished(); }
  [[nodiscard]] int exit_code() const { return session_->exit_code(); }
  [[nodiscard]] std::uint16_t port() const { return session_->port(); }
  /// The host's world; nullptr in relay mode (config.relay), which runs none.
  [[nodiscard]] const Simulation* simulation() const { return session_->simulation(); }
  /// The session underneath: seats, stats, reports.
  [[nodiscard]] ServerSession& session() { return *session_; }

 private:
  explicit Host(std::unique_ptr<ServerSession> session) : session_(std::move(session)) {}
  std::unique_ptr<ServerSession> session_;
};

}  // namespace lockstep
