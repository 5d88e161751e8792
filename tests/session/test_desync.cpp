// Desync localization and resync on the simulated network: every injected one-bit perturbation
// is named by tick, entity and field, and the client plays on with the server's state.
#include <doctest/doctest.h>

#include <cstdio>
#include <filesystem>
#include <functional>
#include <map>
#include <set>
#include <memory>
#include <string>

#include "lockstep/arena.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/rng.hpp"
#include "lockstep/server_session.hpp"
#include "session_testing.hpp"
#include "support/loop.hpp"
#include "support/sim_network.hpp"

using namespace lockstep;
using lockstep::testing::Driven;
using lockstep::testing::drive_simulated;
using lockstep::testing::SimNetwork;

namespace {

// An arena session of `players` over `bodies` bodies to tick `last`, on the simulated network,
// its desync reports written in `dir`.
ServerConfig arena_server(std::uint32_t players, std::uint32_t bodies, Tick last, OnDesync on_desync,
                          const std::filesystem::path& dir) {
  ServerConfig cfg;
  cfg.port = 0;
  cfg.players = players;
  cfg.last_tick = last;
  cfg.world = arena_world(1, bodies, players);
  cfg.factory = make_arena;
  cfg.on_desync = on_desync;
  cfg.desync_dir = dir.string();
  cfg.start_delay_ns = 50'000'000;
  return cfg;
}

// Two arena bots on the server at `port`: player 0 "honest", player 1 named `name`, whose state
// `diverge` may change after each step.
std::vector<std::unique_ptr<ClientSession>> honest_and_diverging(SimNetwork& net, std::uint16_t port, const char* name,
                                                                 std::function<void(Tick, Simulation&)> diverge) {
  std::vector<std::unique_ptr<ClientSession>> clients;
  for (std::uint32_t i = 0; i < 2; ++i) {
    ClientConfig cc;
    cc.port = port;
    cc.factory = make_arena;
    cc.name = i == 0 ? "honest" : name;
    if (i == 1) cc.after_step = diverge;
    Error err;
    clients.push_back(SessionTesting::create_client(net, cc, &err));
    REQUIRE_MESSAGE(clients.back(), err.detail);
    clients.back()->set_input_source([i](Tick t, PlayerTick* out) { bot_input(i + 1, t).encode(out->input); });
  }
  return clients;
}

}  // namespace

TEST_SUITE("session/desync") {
  TEST_CASE("200 random one-bit perturbations are each localized to their tick, entity and field, and resynced") {
    const std::uint32_t bodies = 300, players = 2, n = bodies + players;
    const char* fields[] = {"x", "y", "vx", "vy"};
    Rng rng = Rng::seeded(2024);
    std::map<Tick, std::uint64_t> plan;
    // Each in a place (entity and field) of its own: the server folds a peer's divergences in one
    // place into one report per episode (session/relay_fetch), and each of these is a finding.
    std::set<std::uint64_t> places;
    for (int i = 0; i < 200; ++i) {
      std::uint64_t selector;
      do selector = rng.below(n * 4);
      while (!places.insert(selector % n * 4 + selector / n).second);
      plan[static_cast<Tick>(60 + i * 20 + rng.below(5))] = selector;
    }
    const Tick last = plan.rbegin()->first + 60;

    const auto dir = std::filesystem::temp_directory_path() / ("lockstep-desync-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ServerConfig cfg = arena_server(players, bodies, last, OnDesync::Resync, dir);
    cfg.max_resyncs = 0;  // 200 divergences on purpose: each is localized and resynced, none is a reason to drop
    SimNetwork net;
    Error err;
    auto server = SessionTesting::create_server(net, cfg, &err);
    REQUIRE_MESSAGE(server, err.detail);
    std::map<Tick, std::uint64_t> server_hashes;
    server->on_tick([&](const InputFrame& f, std::uint64_t h) { server_hashes[f.tick] = h; });

    std::map<Tick, std::uint64_t> diverged_hashes;
    auto clients = honest_and_diverging(net, server->port(), "diverging", [&plan](Tick t, Simulation& sim) {
      if (auto it = plan.find(t); it != plan.end()) sim.perturb(it->second);
    });
    std::vector<Driven> parts{{[&](std::int64_t now) { return server->update(now); }, [&] { return server->fd(); },
                               [&] { return net.next_due(server->port()); }}};
    for (auto& c : clients) {
      ClientSession* raw = c.get();
      const bool watch = raw == clients[1].get();
      if (watch) raw->on_tick([&diverged_hashes](Tick t, std::uint64_t h) { diverged_hashes[t] = h; });
      parts.push_back({[raw](std::int64_t now) { return raw->finished() ? now + 50'000'000 : raw->update(now); },
                       [raw] { return raw->fd(); }, [&net, raw] { return net.next_due(SessionTesting::client_port(*raw)); }});
    }
    REQUIRE(drive_simulated(net, parts, [&] { return server->finished() && clients[0]->finished() && clients[1]->finished(); },
                  120'000'000'000LL));

    CHECK(server->executed_tick() == last);
    CHECK(clients[0]->executed_tick() == last);
    CHECK(clients[1]->executed_tick() == last);
    CHECK(clients[1]->stats().resyncs == 200);
    REQUIRE(server->reports().size() == 200);
    int exact = 0;
    auto want = plan.begin();
    for (const DesyncReport& r : server->reports()) {
      REQUIRE(want != plan.end());
      CAPTURE(r.tick);
      CHECK(r.tick == want->first);
      CHECK(r.where == "entity");
      CHECK(r.entity == static_cast<std::int64_t>(want->second % n));
      REQUIRE(r.server_fields.size() == 1);
      CHECK(r.server_fields[0].name == fields[want->second / n]);
      CHECK((r.server_fields[0].bits ^ r.client_fields[0].bits) == 1u);
      CHECK(r.probe_bytes < r.state_bytes);
      exact += r.tick == want->first && r.entity == static_cast<std::int64_t>(want->second % n);
      ++want;
    }
    CHECK(exact == 200);
    // After the last resync the diverging client agrees with the server again, to the end.
    const Tick settled = plan.rbegin()->first + 10;
    for (Tick t = settled; t <= last; ++t) CHECK(diverged_hashes[t] == server_hashes[t]);
    CHECK(std::filesystem::exists(dir / ("desync-" + std::to_string(plan.begin()->first) + "-1.json")));
    std::filesystem::remove_all(dir);
  }
  TEST_CASE("a player that leaves while its desync is being localized is still reported, as far as the probe got") {
    const std::uint32_t bodies = 300, players = 2;
    const Tick diverge_at = 60;
    const auto dir = std::filesystem::temp_directory_path() / ("lockstep-desync-left-" + std::to_string(::getpid()));
    std::filesystem::create_directories(dir);
    ServerConfig cfg = arena_server(players, bodies, 400, OnDesync::Report, dir);
    SimNetwork net;
    Error err;
    auto server = SessionTesting::create_server(net, cfg, &err);
    REQUIRE_MESSAGE(server, err.detail);
    auto clients = honest_and_diverging(net, server->port(), "leaving", [](Tick t, Simulation& sim) {
      if (t == diverge_at) sim.perturb(7);
    });
    // The diverging player leaves in the update that tells it of its desync: the server's probe
    // (several questions for 300 bodies) has had at most one answer.
    bool left = false;
    std::vector<Driven> parts{{[&](std::int64_t now) { return server->update(now); }, [&] { return server->fd(); },
                               [&] { return net.next_due(server->port()); }}};
    for (auto& c : clients) {
      ClientSession* raw = c.get();
      const bool leaving = raw == clients[1].get();
      parts.push_back({[raw, leaving, &left](std::int64_t now) {
                         if (raw->finished()) return now + 50'000'000;
                         const std::int64_t next = raw->update(now);
                         if (leaving && !left && raw->desynced()) {
                           left = true;
                           raw->leave("the player closed the game");
                         }
                         return next;
                       },
                       [raw] { return raw->fd(); }, [&net, raw] { return net.next_due(SessionTesting::client_port(*raw)); }});
    }
    REQUIRE(drive_simulated(net, parts, [&] { return server->finished() && clients[0]->finished() && clients[1]->finished(); },
                            60'000'000'000LL));
    CHECK(left);
    CHECK(server->executed_tick() == cfg.last_tick);
    REQUIRE(server->reports().size() == 1);
    const DesyncReport& r = server->reports()[0];
    CHECK(r.tick == diverge_at);
    CHECK(r.slot == 1);
    CHECK(r.note.find("its connection closed before the desync was localized") != std::string::npos);
    CHECK(std::filesystem::exists(dir / ("desync-" + std::to_string(diverge_at) + "-1.json")));
    std::filesystem::remove_all(dir);
  }
}
