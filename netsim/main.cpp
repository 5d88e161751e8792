// lockstep-netsim: a seeded UDP relay between clients and a server that injects loss, delay,
// jitter, duplicates and reordering. Each client address gets its own upstream socket, so the
// server sees one peer per client. The same seed and the same order of clients give the same faults.
// It can also act as an attacker on the path (attack.hpp) and capture what it relays (capture.hpp).
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
#include "attack.hpp"
#include "capture.hpp"
#include "tcp.hpp"

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

// The relay's sockets around a FaultRelay: one listener for every client, and per client (flow)
// an upstream socket connected to the server, so the server sees one peer per client.
class UdpRelay {
 private:
  FaultRelay relay_;
  int listener_;
  sockaddr_in server_;
  std::vector<sockaddr_in> clients_;  // by flow
  std::vector<int> upstream_;         // by flow
  std::map<std::pair<std::uint32_t, std::uint16_t>, std::size_t> by_addr_;
  std::vector<std::uint8_t> buf_ = std::vector<std::uint8_t>(kMaxDatagram);
  netsim::AttackConfig attack_;
  std::vector<netsim::Attacker> attackers_;  // by flow: up at 2 * flow, down at 2 * flow + 1
  netsim::PcapWriter* capture_ = nullptr;
  sockaddr_in local_{};

 public:
  UdpRelay(const FaultConfig& faults, int listener, const sockaddr_in& server, const netsim::AttackConfig& attack,
           netsim::PcapWriter* capture, const sockaddr_in& local)
      : relay_(faults), listener_(listener), server_(server), attack_(attack), capture_(capture), local_(local) {}
  ~UdpRelay() {
    for (const int fd : upstream_) close(fd);
    close(listener_);
  }
  UdpRelay(const UdpRelay&) = delete;
  UdpRelay& operator=(const UdpRelay&) = delete;

  /// Relays until a stop signal or `stop_at` (monotonic ns).
  void run(std::int64_t stop_at) {
    while (!g_stop_requested && monotonic_ns() < stop_at) {
      std::vector<pollfd> fds{{listener_, POLLIN, 0}};
      for (const int fd : upstream_) fds.push_back({fd, POLLIN, 0});
      const std::int64_t due = relay_.next_due();
      const timespec ts = to_timespec(due == INT64_MAX ? 100'000'000 : std::max<std::int64_t>(0, due - monotonic_ns()));
      ::ppoll(fds.data(), fds.size(), &ts, nullptr);
      if (fds[0].revents & POLLIN) from_client();
      // Only the flows polled this round (one may have been added above).
      for (std::size_t i = 0; i + 1 < fds.size(); ++i)
        if (fds[i + 1].revents & POLLIN) from_server(i);
      relay_.update(monotonic_ns(), [this](const FaultRelay::Datagram& d) { deliver(d); });
    }
  }

  [[nodiscard]] Json summary() const {
    auto dir = [](const FaultRelay::Counters& c) {
      return Json{{"in", c.in}, {"out", c.out}, {"lost", c.lost}, {"duplicated", c.duplicated}, {"reordered", c.reordered},
                  {"late", c.late}, {"max_late_ms", static_cast<double>(c.max_late_ns) / 1e6}};
    };
    netsim::Attacker::Counters up, down;
    for (std::size_t i = 0; i < attackers_.size(); ++i) {
      auto& to = i % 2 == 0 ? up : down;
      to.tampered += attackers_[i].counters().tampered;
      to.tampered_control += attackers_[i].counters().tampered_control;
      to.replayed += attackers_[i].counters().replayed;
      to.injected += attackers_[i].counters().injected;
    }
    auto attacks = [](const netsim::Attacker::Counters& c) {
      return Json{{"tampered", c.tampered}, {"tampered_control", c.tampered_control}, {"replayed", c.replayed}, {"injected", c.injected}};
    };
    return Json{{"flows", relay_.flows()},
                {"up", dir(relay_.up())},
                {"down", dir(relay_.down())},
                {"attacks", {{"up", attacks(up)}, {"down", attacks(down)}}},
                {"captured", capture_ ? capture_->packets() : 0}};
  }

 private:
  void from_client() {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = recvfrom(listener_, buf_.data(), buf_.size(), MSG_DONTWAIT, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;
    if (const auto flow = flow_of(from)) take(FaultRelay::Direction::Up, *flow, static_cast<std::size_t>(n));
  }
  void from_server(std::size_t flow) {
    const ssize_t n = recv(upstream_[flow], buf_.data(), buf_.size(), MSG_DONTWAIT);
    if (n >= 0) take(FaultRelay::Direction::Down, flow, static_cast<std::size_t>(n));
  }
  // A datagram as it arrived: captured, then attacked, then handed to the faults.
  void take(FaultRelay::Direction dir, std::size_t flow, std::size_t n) {
    const bool up = dir == FaultRelay::Direction::Up;
    if (capture_) capture_->write(up ? clients_[flow] : server_, up ? server_ : clients_[flow], {buf_.data(), n});
    std::vector<std::uint8_t> datagram(buf_.begin(), buf_.begin() + static_cast<std::ptrdiff_t>(n));
    const auto extra = attackers_[2 * flow + (up ? 0 : 1)].on_datagram(datagram);
    const std::int64_t now = monotonic_ns();
    relay_.push(dir, flow, datagram, now);
    for (const auto& e : extra) relay_.push(dir, flow, e, now);
  }
  void deliver(const FaultRelay::Datagram& d) {
    if (d.direction == FaultRelay::Direction::Down)
      sendto(listener_, d.bytes.data(), d.bytes.size(), MSG_DONTWAIT, reinterpret_cast<const sockaddr*>(&clients_[d.flow]),
             sizeof(sockaddr_in));
    else
      send(upstream_[d.flow], d.bytes.data(), d.bytes.size(), MSG_DONTWAIT);
  }
  // A new client address gets a flow and its own upstream socket; nullopt when none is left.
  std::optional<std::size_t> flow_of(const sockaddr_in& from) {
    const auto key = std::make_pair(from.sin_addr.s_addr, from.sin_port);
    if (const auto it = by_addr_.find(key); it != by_addr_.end()) return it->second;
    const int fd = socket(AF_INET, SOCK_DGRAM, 0);
    if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&server_), sizeof server_) != 0) {
      if (fd >= 0) close(fd);
      return std::nullopt;
    }
    const auto flow = relay_.add_flow();
    if (!flow) {
      close(fd);
      return std::nullopt;
    }
    clients_.push_back(from);
    upstream_.push_back(fd);
    attackers_.emplace_back(attack_, 2 * *flow);
    attackers_.emplace_back(attack_, 2 * *flow + 1);
    by_addr_.emplace(key, *flow);
    return flow;
  }
};

struct Options {
  std::uint16_t listen_port = 0;
  std::string forward, bind = "127.0.0.1", summary_path, dump_path;
  double delay_ms = 0, jitter_ms = 0, duration_s = 0;
  bool tcp = false;
  FaultConfig faults;
  netsim::AttackConfig attack;
};

void declare_options(CLI::App& app, Options& o) {
  using lockstep::cli::finite;
  FaultConfig& f = o.faults;
  app.add_option("--listen", o.listen_port, "UDP port clients connect to")->check(lockstep::cli::unsigned_number())->required();
  app.add_option("--bind", o.bind, "address to listen on")->capture_default_str();
  app.add_option("--forward", o.forward, "server HOST:PORT")->required();
  app.add_option("--loss", f.loss_pct, "percent of datagrams dropped")->check(finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--delay", o.delay_ms, "one-way delay, ms")->check(finite())->check(CLI::Range(0.0, 10000.0));
  app.add_option("--jitter", o.jitter_ms, "uniform +- jitter around the delay, ms")->check(finite())->check(CLI::Range(0.0, 10000.0));
  app.add_option("--duplicate", f.duplicate_pct, "percent of datagrams sent twice")->check(finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--reorder", f.reorder_pct, "percent of datagrams held back 5-30 ms past later ones")->check(finite())
      ->check(CLI::Range(0.0, 100.0));
  app.add_option("--seed", f.seed, "fault pattern seed")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--duration", o.duration_s, "stop after this many seconds (0: until SIGINT/SIGTERM)")->check(finite());
  app.add_flag("--tcp", o.tcp,
               "relay TCP connections (a browser's WebSocket) instead of UDP: delay and jitter in order, and a lost "
               "segment holds the stream until it is resent");
  app.add_option("--summary", o.summary_path, "write the JSON summary here instead of stdout");
  app.add_option("--dump", o.dump_path, "capture every datagram relayed, as it arrived, to this pcap file (raw IPv4)");
  // An attacker on the path, for testing the datagram check and sealed play (docs/PROTOCOL.md §1.1, §4.7).
  app.add_option("--tamper", o.attack.tamper_pct, "percent of datagrams with a message (control or play) that get one bit of it flipped")
      ->check(finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--tamper-control", o.attack.tamper_control_pct,
                 "percent of datagrams with a control message that get one bit of it flipped (default: --tamper)")
      ->check(finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--replay", o.attack.replay_pct, "percent of play datagrams followed by an earlier play message sent again")
      ->check(finite())->check(CLI::Range(0.0, 100.0));
  app.add_option("--inject", o.attack.inject_pct, "percent of play datagrams followed by a message of random bytes")
      ->check(finite())->check(CLI::Range(0.0, 100.0));
}

int relay(Options o) {
  FaultConfig& f = o.faults;
  f.delay_ns = static_cast<std::int64_t>(o.delay_ms * 1e6);
  f.jitter_ns = static_cast<std::int64_t>(o.jitter_ms * 1e6);
  std::string fhost;
  std::uint16_t fport = 0;
  sockaddr_in server{}, local{};
  if (!split_host_port(o.forward, &fhost, &fport) || !resolve(fhost, fport, &server)) {
    LOCKSTEP_LOG_ERROR("--forward wants a reachable HOST:PORT, got '%s'", o.forward.c_str());
    return 2;
  }
  if (!resolve(o.bind, o.listen_port, &local)) {
    LOCKSTEP_LOG_ERROR("--bind: cannot resolve '%s'", o.bind.c_str());
    return 2;
  }
  if (o.tcp) {
    const int tcp = socket(AF_INET, SOCK_STREAM, 0);
    const int one = 1;
    if (tcp >= 0) setsockopt(tcp, SOL_SOCKET, SO_REUSEADDR, &one, sizeof one);
    if (tcp < 0 || ::bind(tcp, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0 || listen(tcp, 16) != 0) {
      LOCKSTEP_LOG_ERROR("cannot listen on TCP %s:%u: %s", o.bind.c_str(), o.listen_port, std::strerror(errno));
      return 1;
    }
    LOCKSTEP_LOG_INFO("relaying TCP %s:%u -> %s (loss %.1f%%, delay %.0f ms +- %.0f ms, seed %llu)", o.bind.c_str(),
                      o.listen_port, o.forward.c_str(), f.loss_pct, o.delay_ms, o.jitter_ms,
                      static_cast<unsigned long long>(f.seed));
    install_stop_signals();
    const Json summary =
        netsim::relay_tcp(f, tcp, server, o.duration_s > 0 ? monotonic_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : INT64_MAX);
    close(tcp);
    if (!redirect_summary(o.summary_path)) return 1;
    std::printf("%s\n", json_text(summary).c_str());
    return 0;
  }
  const int listener = socket(AF_INET, SOCK_DGRAM, 0);
  if (listener < 0 || ::bind(listener, reinterpret_cast<sockaddr*>(&local), sizeof local) != 0) {
    LOCKSTEP_LOG_ERROR("cannot listen on %s:%u: %s", o.bind.c_str(), o.listen_port, std::strerror(errno));
    return 1;
  }
  LOCKSTEP_LOG_INFO("relaying %s:%u -> %s (loss %.1f%%, delay %.0f ms +- %.0f ms, duplicate %.1f%%, reorder %.1f%%, seed %llu)",
                    o.bind.c_str(), o.listen_port, o.forward.c_str(), f.loss_pct, o.delay_ms, o.jitter_ms, f.duplicate_pct,
                    f.reorder_pct, static_cast<unsigned long long>(f.seed));
  netsim::PcapWriter capture;
  if (!o.dump_path.empty() && !capture.open(o.dump_path)) {
    LOCKSTEP_LOG_ERROR("cannot write --dump %s: %s", o.dump_path.c_str(), std::strerror(errno));
    return 1;
  }
  o.attack.seed = f.seed;
  UdpRelay udp(f, listener, server, o.attack, o.dump_path.empty() ? nullptr : &capture, local);
  install_stop_signals();
  udp.run(o.duration_s > 0 ? monotonic_ns() + static_cast<std::int64_t>(o.duration_s * 1e9) : INT64_MAX);
  if (!redirect_summary(o.summary_path)) return 1;
  std::printf("%s\n", json_text(udp.summary()).c_str());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-netsim");
  CLI::App app{"lockstep-netsim: a seeded UDP relay that injects loss, delay, jitter, duplicates and reordering\n"
               "between lockstep clients and a server. Clients connect to --listen; it forwards to --forward.\n"
               "Exit codes: 0 stopped, 1 runtime failure, 2 bad usage."};
  app.set_version_flag("--version", std::string("lockstep-netsim ") + kVersion);
  return lockstep::cli::main_with<Options>(app, argc, argv, declare_options, relay);
}
