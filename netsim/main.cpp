// lockstep-netsim: a seeded UDP relay between clients and a server that injects loss, delay,
// jitter, duplicates and reordering. Each client address gets its own upstream socket, so the
// server sees one peer per client. The same seed and the same order of clients give the same faults.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"
#include <arpa/inet.h>
#include <netdb.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <optional>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/faults.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

constexpr std::size_t kMaxDatagram = 65536;

bool resolve(const std::string& host, std::uint16_t port, sockaddr_in* out) {
  addrinfo hints{}, *res = nullptr;
  hints.ai_family = AF_INET;
  hints.ai_socktype = SOCK_DGRAM;
  if (getaddrinfo(host.c_str(), nullptr, &hints, &res) != 0 || !res) return false;
  *out = *reinterpret_cast<sockaddr_in*>(res->ai_addr);
  out->sin_port = htons(port);
  freeaddrinfo(res);
  return true;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-netsim");
  CLI::App app{"lockstep-netsim: a seeded UDP relay that injects loss, delay, jitter, duplicates and reordering\n"
               "between lockstep clients and a server. Clients connect to --listen; it forwards to --forward.\n"
               "Exit codes: 0 stopped, 1 runtime failure, 2 bad usage."};
  app.set_version_flag("--version", std::string("lockstep-netsim ") + kVersion);
  std::uint16_t listen_port = 0;
  std::string forward, bind = "127.0.0.1", summary_path;
  double delay_ms = 0, jitter_ms = 0, duration_s = 0;
  FaultConfig f;
  app.add_option("--listen", listen_port, "UDP port clients connect to")->check(lockstep::cli::unsigned_number())->required();
  app.add_option("--bind", bind, "address to listen on")->capture_default_str();
  app.add_option("--forward", forward, "server HOST:PORT")->required();
  app.add_option("--loss", f.loss_pct, "percent of datagrams dropped")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--delay", delay_ms, "one-way delay, ms")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 10000.0));
  app.add_option("--jitter", jitter_ms, "uniform +- jitter around the delay, ms")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 10000.0));
  app.add_option("--duplicate", f.duplicate_pct, "percent of datagrams sent twice")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--reorder", f.reorder_pct, "percent of datagrams held back 5-30 ms past later ones")->check(lockstep::cli::finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--seed", f.seed, "fault pattern seed")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--duration", duration_s, "stop after this many seconds (0: until SIGINT/SIGTERM)")->check(lockstep::cli::finite());
  app.add_option("--summary", summary_path, "write the JSON summary here instead of stdout");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  f.delay_ns = static_cast<std::int64_t>(delay_ms * 1e6);
  f.jitter_ns = static_cast<std::int64_t>(jitter_ms * 1e6);
  std::string fhost;
  std::uint16_t fport = 0;
  sockaddr_in server{}, local{};
  if (!split_host_port(forward, &fhost, &fport) || !resolve(fhost, fport, &server)) {
    LOCKSTEP_LOG_ERROR("--forward wants a reachable HOST:PORT, got '%s'", forward.c_str());
    return 2;
  }
  if (!resolve(bind, listen_port, &local)) {
    LOCKSTEP_LOG_ERROR("--bind: cannot resolve '%s'", bind.c_str());
    return 2;
  }
  const int listener = socket(AF_INET, SOCK_DGRAM, 0);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    LOCKSTEP_LOG_ERROR("cannot listen on %s:%u: %s", bind.c_str(), listen_port, std::strerror(errno));
    return 1;
  }
  LOCKSTEP_LOG_INFO("relaying %s:%u -> %s (loss %.1f%%, delay %.0f ms +- %.0f ms, duplicate %.1f%%, reorder %.1f%%, seed %llu)",
                    bind.c_str(), listen_port, forward.c_str(), f.loss_pct, delay_ms, jitter_ms, f.duplicate_pct,
                    f.reorder_pct, static_cast<unsigned long long>(f.seed));

  // The sockets: one listener for every client, and per client (flow) an upstream socket
  // connected to the server, so the server sees one peer per client.
  FaultRelay relay(f);
  std::vector<sockaddr_in> clients;
  std::vector<int> upstream;
  std::map<std::pair<std::uint32_t, std::uint16_t>, std::size_t> by_addr;
  std::vector<std::uint8_t> buf(kMaxDatagram);
  install_stop_signals();
  const std::int64_t stop_at = duration_s > 0 ? monotonic_ns() + static_cast<std::int64_t>(duration_s * 1e9) : INT64_MAX;
  const auto deliver = [&](const FaultRelay::Datagram& d) {
    if (d.direction == FaultRelay::Direction::Down)
      sendto(listener, d.bytes.data(), d.bytes.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&clients[d.flow]),
             sizeof(sockaddr_in));
    else
      send(upstream[d.flow], d.bytes.data(), d.bytes.size(), MSG_DONTWAIT);
  };
  // A new client address gets a flow and its own upstream socket; nullopt when none is left.
  const auto flow_of = [&](const sockaddr_in& from) -> std::optional<std::size_t> {
    const auto key = std::make_pair(from.sin_addr.s_addr, from.sin_port);
    if (const auto it = by_addr.find(key); it != by_addr.end()) return it->second;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&server), sizeof server) != 0) {
      if (fd >= 0) close(fd);
      return std::nullopt;
    }
    const auto flow = relay.add_flow();
    if (!flow) {
      close(fd);
      return std::nullopt;
    }
    clients.push_back(from);
    upstream.push_back(fd);
    by_addr.emplace(key, *flow);
    return flow;
  };

  while (!g_stop_requested && monotonic_ns() < stop_at) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    for (const int fd : upstream) fds.push_back({fd, POLLIN, 0});
    const std::int64_t due = relay.next_due();
    const std::int64_t wait = due == INT64_MAX ? 100'000'000 : std::max<std::int64_t>(0, due - monotonic_ns());
    const timespec ts = to_timespec(wait);
    ::ppoll(fds.data(), fds.size(), &ts, nullptr);
    if (fds[0].revents & POLLIN) {
      sockaddr_in from{};
      socklen_t len = sizeof from;
      const ssize_t n = recvfrom(listener, buf.data(), buf.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
      if (n >= 0)
        if (const auto flow = flow_of(from))
          relay.push(FaultRelay::Direction::Up, *flow, {buf.data(), static_cast<std::size_t>(n)}, monotonic_ns());
    }
    // Only the flows polled this round (one may have been added above).
    for (std::size_t i = 0; i + 1 < fds.size(); ++i) {
      if (!(fds[i + 1].revents & POLLIN)) continue;
      const ssize_t n = recv(upstream[i], buf.data(), buf.size(), MSG_DONTWAIT);
      if (n >= 0) relay.push(FaultRelay::Direction::Down, i, {buf.data(), static_cast<std::size_t>(n)}, monotonic_ns());
    }
    relay.update(monotonic_ns(), deliver);
  }
  if (!redirect_summary(summary_path)) return 1;
  auto dir = [](const FaultRelay::Counters& c) {
    return Json{{"in", c.in}, {"out", c.out}, {"lost", c.lost}, {"duplicated", c.duplicated}, {"reordered", c.reordered}};
  };
  std::printf("%s\n", json_text(Json{{"flows", relay.flows()}, {"up", dir(relay.up())}, {"down", dir(relay.down())}}).c_str());
  for (const int fd : upstream) close(fd);
  close(listener);
  return 0;
}
