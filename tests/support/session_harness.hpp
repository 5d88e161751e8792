// A server and its clients in one process, the harness of the session tests: on the simulated
// network with simulated time (sim_network.hpp, driven by drive_simulated()) unless a test asks
// for real loopback ENet sockets and the real clock (Net::Udp, driven by drive()).
#pragma once

#include <doctest/doctest.h>

#include <map>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/client_session.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/server_session.hpp"
#include "session_testing.hpp"
#include "support/loop.hpp"
#include "support/sim_network.hpp"

namespace lockstep::testing {

inline constexpr std::int64_t kSeconds = 1'000'000'000;

struct Traced {
  std::map<Tick, std::uint64_t> hashes;
};

enum class Net { Simulated, Udp };

struct Session {
  Net kind;
  SimNetwork net;  // first: it outlives the sessions on it
  std::unique_ptr<ServerSession> server;
  Traced server_trace;
  std::vector<std::unique_ptr<ClientSession>> clients;
  std::vector<std::unique_ptr<Traced>> traces;
  std::vector<Driven> parts;
  std::uint64_t deferred_updates = 0;  // server updates after which its socket could wait for the next tick
  const Module* module;                // the game every part plays; its bots play for the clients

  explicit Session(ServerConfig cfg, const Module& m = default_module(), Net kind_ = Net::Simulated)
      : kind(kind_), module(&m) {
    cfg.port = 0;
    if (!cfg.factory) cfg.factory = m.create;
    cfg.start_delay_ns = 50'000'000;
    Error err;
    server = kind == Net::Udp ? ServerSession::create(cfg, &err) : SessionTesting::create_server(net, cfg, &err);
    REQUIRE_MESSAGE(server != nullptr, err.detail);
    server->on_tick([this](const InputFrame& f, std::uint64_t h) { server_trace.hashes[f.tick] = h; });
    // Like lockstep-server: in steady play the socket is read only at the tick's deadline.
    parts.push_back({[this](std::int64_t now) {
                       const std::int64_t wake = server->update(now);
                       if (server->receive_can_wait()) ++deferred_updates;
                       return wake;
                     },
                     [this] { return server->receive_can_wait() ? -1 : server->fd(); },
                     [this] { return server->receive_can_wait() ? INT64_MAX : net.next_due(server->port()); }});
  }

  ClientSession& add_client(ClientConfig cfg, std::uint64_t bot_seed, std::uint16_t port = 0) {
    cfg.port = port != 0 ? port : server->port();
    if (!cfg.factory) cfg.factory = module->create;
    Error err;
    auto c = kind == Net::Udp ? ClientSession::create(cfg, &err) : SessionTesting::create_client(net, cfg, &err);
    REQUIRE_MESSAGE(c != nullptr, err.detail);
    if (!cfg.spectate)
      c->set_input_source([m = module, bot_seed](Tick t, PlayerTick* out) { m->bot(bot_seed, t, out); });
    ClientSession* raw = c.get();
    traces.push_back(std::make_unique<Traced>());
    Traced* trace = traces.back().get();
    clients.push_back(std::move(c));
    raw->on_tick([trace](Tick t, std::uint64_t h) { trace->hashes[t] = h; });
    parts.push_back({[raw](std::int64_t now) { return raw->finished() ? now + 50'000'000 : raw->update(now); },
                     [raw] { return raw->fd(); }, [this, raw] { return net.next_due(SessionTesting::client_port(*raw)); }});
    return *raw;
  }

  /// Drives every part until `done()`, or `timeout_ns` of the session's time; false then.
  bool until(const std::function<bool()>& done, std::int64_t timeout_ns) {
    return kind == Net::Udp ? drive(parts, done, timeout_ns) : drive_simulated(net, parts, done, timeout_ns);
  }
  /// A bare transport on the session's network, for a test's own raw peer, from the loopback
  /// address `bind` ("": 127.0.0.1).
  std::unique_ptr<Transport> raw_transport(const TransportLimits& limits, const std::string& bind = "") {
    return kind == Net::Udp ? Transport::client(limits, nullptr, bind) : net.client(limits, nullptr, bind);
  }

  /// Drives every part until the server and every client have finished, or `timeout_ns` of
  /// the session's time (simulated or real) has passed; false then.
  bool run(std::int64_t timeout_ns) {
    const auto all_done = [this] {
      if (!server->finished()) return false;
      for (auto& c : clients)
        if (!c->finished()) return false;
      return true;
    };
    return until(all_done, timeout_ns);
  }
  /// The session's clock: the simulated network's, or the real monotonic one.
  [[nodiscard]] std::int64_t now() const { return kind == Net::Udp ? monotonic_ns() : net.now(); }
};

inline ClientConfig client_named(const std::string& name) {
  ClientConfig c;
  c.name = name;
  return c;
}

}  // namespace lockstep::testing
