// Sessions over loopback in one process: input latency (sampled -> executed) at several input
// delays, and bytes on the wire per client per tick beside the minimum.
#include <poll.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/skirmish.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep::bench {
namespace {

struct SessionRun {
  Histogram latency;
  double up_bytes = 0, down_bytes = 0;  // per client per tick, UDP/IP headers included
};

// A session of `players` bots of `module` (its golden world) over loopback.
SessionRun run_session(const Module& module, std::uint32_t players, std::uint32_t input_delay, Tick ticks) {
  Scenario sc = golden_scenario(module);
  ServerConfig cfg;
  cfg.world = sc.world;
  cfg.factory = module.create;
  cfg.port = 0;
  cfg.players = players;
  cfg.last_tick = ticks;
  cfg.input_delay = input_delay;
  cfg.start_delay_ns = 50'000'000;
  Error err;
  auto server = ServerSession::create(cfg, &err);
  std::vector<std::unique_ptr<ClientSession>> clients;
  for (std::uint32_t i = 0; i < players; ++i) {
    ClientConfig cc;
    cc.port = server->port();
    cc.name = "bench" + std::to_string(i);
    cc.factory = module.create;
    clients.push_back(ClientSession::create(cc, &err));
    clients.back()->set_input_source([&module, i](Tick t, PlayerTick* out) { module.bot(i + 1, t, out); });
  }
  Pacer waiter;
  auto done = [&] {
    if (!server->finished()) return false;
    for (auto& c : clients)
      if (!c->finished()) return false;
    return true;
  };
  while (!done()) {
    std::int64_t now = monotonic_ns();
    std::int64_t wake = server->update(now);
    for (auto& c : clients)
      if (!c->finished()) wake = std::min(wake, c->update(now));
    std::vector<pollfd> fds{{server->fd(), POLLIN, 0}};
    for (auto& c : clients) fds.push_back({c->fd(), POLLIN, 0});
    now = monotonic_ns();
    if (wake > now) {
      const std::int64_t wait = std::min<std::int64_t>(wake - now, 50'000'000);
      const timespec ts = to_timespec(wait);
      ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    }
  }
  SessionRun r;
  for (auto& c : clients) {
    const Histogram& h = c->stats().input_latency;
    // Merge by re-adding percentiles is lossy; take the first client's histogram as representative.
    if (r.latency.count() == 0) r.latency = h;
  }
  const NetHost& host = server->host();
  const double client_ticks = static_cast<double>(ticks) * players;
  r.up_bytes = (static_cast<double>(host.bytes_received()) + 28.0 * static_cast<double>(host.packets_received())) / client_ticks;
  r.down_bytes = (static_cast<double>(host.bytes_sent()) + 28.0 * static_cast<double>(host.packets_sent())) / client_ticks;
  return r;
}

}  // namespace

void run_net(const Options& opt, std::vector<Row>& rows) {
  log_setup("lockstep-bench", LogLevel::Error);
  const Tick ticks = opt.quick ? 100 : 1000;
  constexpr double kUdpIp = 28, kEnet = 12;  // IPv4+UDP; ENet protocol header + unreliable send command
  const Module& arena = *find_module("arena");
  for (std::uint32_t delay : {0u, 2u, 5u}) {
    const SessionRun r = run_session(arena, 4, delay, ticks);
    const double p50 = r.latency.percentile_us(50), p99 = r.latency.percentile_us(99);
    const double budget = delay * 10'000.0 + 1000.0;
    rows.push_back({"net", "input latency p50 @delay " + std::to_string(delay), p50 / 1000.0, "ms", budget / 1000.0,
                    "delay + 1 ms", "< anchor", p50 < budget, "p99 " + std::to_string(static_cast<int>(p99)) + " us"});
    if (delay == 2) {
      const double min_up = kUdpIp + kEnet + 2 + 8;     // one input and one hash
      const double min_down = kUdpIp + kEnet + 2 * 4;   // four players' inputs
      rows.push_back({"wire", "bytes up per client-tick", r.up_bytes, "B", min_up, "UDP/IP+ENet+input+hash", "<= 1.5x",
                      r.up_bytes <= 1.5 * min_up, ""});
      rows.push_back({"wire", "bytes down per client-tick", r.down_bytes, "B", min_down, "UDP/IP+ENet+4 inputs",
                      "<= 1.5x", r.down_bytes <= 1.5 * min_down, ""});
    }
  }
  // Both games at 2, 4 and 8 players: bytes per client-tick beside the minimum (headers, one
  // hash up; every player's input down), commands included.
  for (const Module* m : {&arena, &skirmish_module()}) {
    for (const std::uint32_t players : {2u, 4u, 8u}) {
      const SessionRun r = run_session(*m, players, 2, ticks);
      const std::string at = std::string(m->name) + " @" + std::to_string(players) + "p";
      const double min_up = kUdpIp + kEnet + m->input_size + 8;
      const double min_down = kUdpIp + kEnet + static_cast<double>(m->input_size * players);
      rows.push_back({"wire", "bytes up per client-tick " + at, r.up_bytes, "B", min_up, "UDP/IP+ENet+input+hash", "", true,
                      ""});
      rows.push_back({"wire", "bytes down per client-tick " + at, r.down_bytes, "B", min_down, "UDP/IP+ENet+inputs", "",
                      true, ""});
    }
  }
}

}  // namespace lockstep::bench
