// Sessions in one process over real loopback sockets (and, for loss, an in-process relay that
// drops datagrams as lockstep-netsim does): input latency at several input delays; bytes on the
// wire per client per tick for both built-in games at 2..32 players beside the minimum, steady
// and under 10 % loss; bytes per second and input latency at each send rate; and the plot of
// bytes against players.
#include <algorithm>
#include <fstream>
#include <memory>
#include <string>
#include <vector>

#include "bench.hpp"
#include "lockstep/bot.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/games.hpp"
#include "lockstep/log.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/skirmish.hpp"
#include "support/loop.hpp"
#include "support/lossy_link.hpp"

namespace lockstep::bench {
namespace {

constexpr double kUdpIp = 28;  // IPv4 + UDP header, per datagram
constexpr double kEnet = 12;   // the minimum counts ENet's 4-byte protocol header and 8-byte send command

struct SessionRun {
  Histogram latency;
  double up_bytes = 0, down_bytes = 0;  // per client per tick, UDP/IP headers included
  double up_datagrams = 0, down_datagrams = 0;  // per client per tick
  double command_bytes = 0;  // commands the bots issued, per client per tick
  bool ok = true;
};

struct SessionSpec {
  const Module* module = nullptr;
  std::uint32_t players = 4, input_delay = 2, send_every = 1;
  double loss_pct = 0;
  Tick ticks = 1000;
};

// The world a session of `module` plays: the golden world, but a skirmish of 320 units in all, so
// that up to 33 copies step at 100 Hz on one core (the bytes depend on the bots' commands, not on
// how many units they move).
WorldParams world_of(const Module& module, std::uint32_t players) {
  Scenario sc = golden_scenario(module);
  if (module.name == "skirmish") {
    std::string error;
    module.parse_world("units=" + std::to_string(std::max(4u, 320 / players)) + ",map=64", &sc.world, &error);
  }
  return sc.world;
}

// A session of bots. Up counts what the clients send (before any loss), down what the server sends.
SessionRun run_session(const SessionSpec& spec) {
  const Module& module = *spec.module;
  ServerConfig cfg;
  cfg.world = world_of(module, spec.players);
  cfg.factory = module.create;
  cfg.port = 0;
  cfg.players = spec.players;
  cfg.last_tick = spec.ticks;
  cfg.input_delay = spec.input_delay;
  cfg.send_every = spec.send_every;
  cfg.start_delay_ns = 50'000'000;
  Error err;
  auto server = ServerSession::create(cfg, &err);
  std::unique_ptr<testing::LossyLink> link;
  FaultConfig faults;
  faults.loss_pct = spec.loss_pct;
  faults.seed = 17;
  if (spec.loss_pct > 0) link = std::make_unique<testing::LossyLink>(faults, server->port());
  std::vector<std::unique_ptr<ClientSession>> clients;
  double command_bytes = 0;
  std::vector<testing::Driven> parts{{[&](std::int64_t now) { return server->update(now); }, [&] { return server->fd(); }}};
  if (link) parts.push_back(link->part());
  for (std::uint32_t i = 0; i < spec.players; ++i) {
    ClientConfig cc;
    cc.port = link ? link->port() : server->port();
    cc.name = "bench" + std::to_string(i);
    cc.factory = module.create;
    clients.push_back(ClientSession::create(cc, &err));
    clients.back()->set_input_source([&module, &command_bytes, i](Tick t, PlayerTick* out) {
      module.bot(i + 1, t, out);
      command_bytes += static_cast<double>(out->commands.bytes());
    });
    ClientSession* c = clients.back().get();
    parts.push_back({[c](std::int64_t now) { return c->finished() ? now + 1'000'000'000 : c->update(now); },
                     [c] { return c->finished() ? -1 : c->fd(); }});
  }
  SessionRun r;
  r.ok = testing::drive(
      parts,
      [&] {
        if (!server->finished()) return false;
        return std::all_of(clients.begin(), clients.end(), [](const auto& c) { return c->finished(); });
      },
      std::int64_t{spec.ticks} * 10'000'000 * 3 + 20'000'000'000);
  r.latency = clients.front()->stats().input_latency;
  const double client_ticks = static_cast<double>(spec.ticks) * spec.players;
  double up = 0, up_packets = 0;
  for (const auto& c : clients) {
    up += static_cast<double>(c->traffic().bytes_sent);
    up_packets += static_cast<double>(c->traffic().packets_sent);
  }
  const NetTraffic host = server->traffic();
  r.up_bytes = (up + kUdpIp * up_packets) / client_ticks;
  r.down_bytes = (static_cast<double>(host.bytes_sent) + kUdpIp * static_cast<double>(host.packets_sent)) / client_ticks;
  r.up_datagrams = up_packets / client_ticks;
  r.down_datagrams = static_cast<double>(host.packets_sent) / client_ticks;
  r.command_bytes = command_bytes / client_ticks;
  return r;
}

std::string fixed(double v, int digits = 1) {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%.*f", digits, v);
  return buf;
}

struct WirePoint {
  std::string game;
  std::uint32_t players;
  double up, down, min_up, min_down;
};

// Bytes per client-tick against players, up and down for both games, with the minimum and 1.5x it.
void write_wire_svg(const std::vector<WirePoint>& pts, const std::string& path) {
  std::ofstream out(path);
  const double w = 900, h = 460, left = 70, right = 860, top = 50, bottom = 400, max_b = 220;
  const std::vector<std::uint32_t> xs{2, 4, 8, 32};
  auto x_of = [&](std::uint32_t p) {
    const auto i = static_cast<double>(std::find(xs.begin(), xs.end(), p) - xs.begin());
    return left + (right - left) * (i + 0.5) / static_cast<double>(xs.size());
  };
  auto y_of = [&](double b) { return bottom - (bottom - top) * std::min(b, max_b) / max_b; };
  out << "<svg xmlns='http://www.w3.org/2000/svg' width='" << w << "' height='" << h
      << "' font-family='sans-serif' font-size='12'>\n<rect width='100%' height='100%' fill='white'/>\n"
      << "<text x='" << w / 2 << "' y='18' text-anchor='middle' font-size='14'>bytes on the wire per client per tick "
      << "(UDP/IP included), steady play, one datagram a tick</text>\n"
      << "<text x='" << w / 2 << "' y='36' text-anchor='middle'>ours (solid), the minimum (dotted), 1.5x the minimum "
      << "(dashed)</text>\n"
      << "<line x1='" << left << "' y1='" << bottom << "' x2='" << right << "' y2='" << bottom << "' stroke='black'/>\n"
      << "<line x1='" << left << "' y1='" << top << "' x2='" << left << "' y2='" << bottom << "' stroke='black'/>\n";
  for (double b = 0; b <= max_b; b += 20)
    out << "<text x='" << left - 8 << "' y='" << y_of(b) + 4 << "' text-anchor='end'>" << b << "</text>\n";
  for (std::uint32_t p : xs)
    out << "<text x='" << x_of(p) << "' y='" << bottom + 18 << "' text-anchor='middle'>" << p << " players</text>\n";
  struct Series {
    const char* game;
    bool up;
    const char* color;
  };
  const Series series[] = {{"arena", true, "#1f77b4"}, {"arena", false, "#d62728"},
                           {"skirmish", true, "#2ca02c"}, {"skirmish", false, "#9467bd"}};
  int row = 0;
  for (const Series& s : series) {
    std::string ours, minimum, goal;
    for (const WirePoint& p : pts) {
      if (p.game != s.game) continue;
      const double v = s.up ? p.up : p.down, m = s.up ? p.min_up : p.min_down;
      ours += fixed(x_of(p.players)) + "," + fixed(y_of(v)) + " ";
      minimum += fixed(x_of(p.players)) + "," + fixed(y_of(m)) + " ";
      goal += fixed(x_of(p.players)) + "," + fixed(y_of(1.5 * m)) + " ";
      out << "<circle cx='" << x_of(p.players) << "' cy='" << y_of(v) << "' r='3' fill='" << s.color << "'/>\n";
    }
    out << "<polyline points='" << ours << "' fill='none' stroke='" << s.color << "' stroke-width='2'/>\n"
        << "<polyline points='" << minimum << "' fill='none' stroke='" << s.color << "' stroke-dasharray='1 3'/>\n"
        << "<polyline points='" << goal << "' fill='none' stroke='" << s.color << "' stroke-dasharray='6 3'/>\n"
        << "<text x='" << left + 12 << "' y='" << top + 4 + 16 * row++ << "' fill='" << s.color << "'>" << s.game << ", "
        << (s.up ? "up (client to server)" : "down (server to client)") << "</text>\n";
  }
  out << "<text x='20' y='" << (top + bottom) / 2 << "' transform='rotate(-90 20 " << (top + bottom) / 2
      << ")' text-anchor='middle'>bytes per client-tick</text>\n</svg>\n";
}

}  // namespace

void run_net(const Options& opt, std::vector<Row>& rows) {
  log_setup("lockstep-bench", LogLevel::Error);
  const Tick ticks = opt.quick ? 100 : 1000;
  const Module& arena = *find_module("arena");
  auto session = [&](const Module& m, std::uint32_t players, std::uint32_t delay, std::uint32_t every, double loss) {
    SessionRun r = run_session({&m, players, delay, every, loss, ticks});
    if (!r.ok) g_section_failed = true;
    return r;
  };
  // A --quick smoke run takes one point of each sweep's every kind (a session is a second or two).
  const std::vector<std::uint32_t> delays = opt.quick ? std::vector<std::uint32_t>{2} : std::vector<std::uint32_t>{0, 2, 5};
  const std::vector<std::uint32_t> sizes = opt.quick ? std::vector<std::uint32_t>{2} : std::vector<std::uint32_t>{2, 4, 8, 32};
  const std::vector<std::uint32_t> rate_sizes = opt.quick ? std::vector<std::uint32_t>{4} : std::vector<std::uint32_t>{4, 8};
  const std::vector<std::uint32_t> everies = opt.quick ? std::vector<std::uint32_t>{1, 3} : std::vector<std::uint32_t>{1, 2, 3, 5};
  for (const std::uint32_t delay : delays) {
    const SessionRun r = session(arena, 4, delay, 1, 0);
    const double p50 = r.latency.percentile_us(50), p99 = r.latency.percentile_us(99);
    const double budget = delay * 10'000.0 + 1000.0;
    rows.push_back({"net", "input latency p50 @delay " + std::to_string(delay), p50 / 1000.0, "ms", budget / 1000.0,
                    "delay + 1 ms", "< anchor", p50 < budget, "p99 " + std::to_string(static_cast<int>(p99)) + " us"});
  }
  // Bytes per client-tick for both games: the minimum is UDP/IP and ENet's headers once per tick,
  // the input bits, the commands the bots issued, and (up) one hash.
  std::vector<WirePoint> plot;
  for (const Module* m : {&arena, &skirmish_module()}) {
    for (const std::uint32_t players : sizes) {
      for (const double loss : {0.0, 10.0}) {
        const SessionRun r = session(*m, players, 2, 1, loss);
        const std::string at = std::string(m->name) + " @" + std::to_string(players) + "p" +
                               (loss > 0 ? " 10% loss" : "");
        const double min_up = kUdpIp + kEnet + m->input_size + 8 + r.command_bytes;
        const double min_down = kUdpIp + kEnet + (m->input_size + r.command_bytes) * players;
        const bool steady = loss == 0;
        rows.push_back({"wire", "bytes up per client-tick " + at, r.up_bytes, "B", min_up, "headers+input+commands+hash",
                        steady ? "<= 1.5x" : "", !steady || r.up_bytes <= 1.5 * min_up,
                        fixed(r.up_bytes / min_up, 2) + "x; " + fixed(r.up_datagrams, 2) + " datagrams"});
        rows.push_back({"wire", "bytes down per client-tick " + at, r.down_bytes, "B", min_down, "headers+inputs+commands",
                        steady ? "<= 1.5x" : "", !steady || r.down_bytes <= 1.5 * min_down,
                        fixed(r.down_bytes / min_down, 2) + "x; " + fixed(r.down_datagrams, 2) + " datagrams"});
        if (steady) plot.push_back({std::string(m->name), players, r.up_bytes, r.down_bytes, min_up, min_down});
      }
    }
  }
  if (!opt.wire_svg_path.empty()) write_wire_svg(plot, opt.wire_svg_path);
  // Send rates for thin links: bytes per second per client, both ways together, beside OpenTTD's
  // published ~1.5 KB/s per client and a 28.8 kbit/s modem (3.6 KB/s), Age of Empires' 8-player link.
  for (const std::uint32_t players : rate_sizes) {
    for (const std::uint32_t every : everies) {
      const SessionRun r = session(arena, players, 2, every, 0);
      const double per_second = (r.up_bytes + r.down_bytes) * kTickRate;
      const std::string at = " @" + std::to_string(players) + "p every " + std::to_string(every);
      rows.push_back({"rate", "bytes/s per client, up+down" + at, per_second, "B/s", 1500, "OpenTTD ~1.5 KB/s", "", true,
                      "up " + fixed(r.up_bytes * kTickRate, 0) + " down " + fixed(r.down_bytes * kTickRate, 0) +
                          "; modem 3600 B/s: " + fixed(per_second / 3600.0, 2) + "x"});
      rows.push_back({"rate", "input latency p50" + at, r.latency.percentile_us(50) / 1000.0, "ms", 0, "", "", true,
                      "input delay " + std::to_string(2 + every - 1) + " ticks; p99 " +
                          fixed(r.latency.percentile_us(99) / 1000.0) + " ms"});
    }
  }
}

}  // namespace lockstep::bench
