// lockstep-bench-load: the clients of the server-cost benchmark, many in one process. Every
// client has its own ENet host (its own UDP socket), as separate machines would. With --raw the
// clients speak to lockstep-bench-relay instead: one packet of --up-bytes per 10 ms each.
//
// One loop serves them all: epoll says which sockets are readable, a min-heap says which client
// asked to be woken next, and only those clients are updated.
#include <CLI/CLI.hpp>
#include <sys/epoll.h>
#include <sys/resource.h>

#include <algorithm>
#include <cstdio>
#include <memory>
#include <optional>
#include <queue>
#include <string>
#include <vector>

#include "lockstep/bot.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/enet_batching.h"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/version.hpp"
#include "lockstep/transport.hpp"

// Hundreds of clients on one core: each client's socket read and written in batches.
LOCKSTEP_DEFINE_ENET_BATCHING()

using namespace lockstep;

namespace {

/// A raw client of the relay: connects, sends a fixed-size packet every tick, counts what comes back.
struct RawClient {
  std::unique_ptr<Transport> host;
  NetPeer* peer = nullptr;
  bool connected = false, done = false;
  std::uint64_t received = 0;

  /// Handles what arrived; true when this call saw the relay disconnect.
  bool drain() {
    const bool was_done = done;
    for (NetEvent ev = host->poll(); ev.type != NetEvent::Type::None; ev = host->poll()) {
      if (ev.type == NetEvent::Type::Connect) connected = true;
      if (ev.type == NetEvent::Type::Receive) ++received;
      if (ev.type == NetEvent::Type::Disconnect) done = true;
    }
    return done && !was_done;
  }
};

/// Poll without sleeping (--busy-poll): the load process has its core to itself, and a sleeping
/// receiver makes every sender pay for waking it (on loopback the sender's core runs the
/// receiver's network stack), a cost a server does not pay when its clients are other machines.
bool g_busy_poll = false;

/// Waits until `deadline_ns` or until a socket in `epfd` is readable; fills `ready` with their indices.
void wait_ready(int epfd, std::int64_t deadline_ns, std::vector<std::size_t>& ready) {
  ready.clear();
  epoll_event events[256];
  const std::int64_t wait = g_busy_poll ? 0 : std::max<std::int64_t>(0, deadline_ns - monotonic_ns());
  const timespec ts = to_timespec(wait);
  const int n = epoll_pwait2(epfd, events, 256, &ts, nullptr);
  for (int i = 0; i < n; ++i) ready.push_back(events[i].data.u64);
}

void watch(int epfd, int fd, std::size_t index) {
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = index;
  epoll_ctl(epfd, EPOLL_CTL_ADD, fd, &ev);
}

int run_sessions(const std::string& host, std::uint16_t base_port, std::uint32_t sessions, std::uint32_t players,
                 int epfd, const std::optional<SecretKey>& token_key) {
  std::vector<std::unique_ptr<ClientSession>> clients;
  for (std::uint32_t s = 0; s < sessions; ++s) {
    for (std::uint32_t p = 0; p < players; ++p) {
      ClientConfig cc;
      cc.host = host;
      cc.port = static_cast<std::uint16_t>(base_port + s);
      cc.name = "load" + std::to_string(s) + "-" + std::to_string(p);
      cc.connect_timeout_ns = 30'000'000'000;
      cc.factory = make_arena;
      if (token_key) {  // as a matchmaker would: a token per player for its session's server
        TokenRequest q;
        q.client_id = s * 64 + p + 1;
        q.servers.push_back({{127, 0, 0, 1}, cc.port});
        q.lifetime_seconds = 600;
        ConnectToken t;
        std::string why;
        if (!mint_connect_token(q, *token_key, &t, &why)) {
          LOCKSTEP_LOG_ERROR("client %u/%u: %s", s, p, why.c_str());
          return 1;
        }
        cc.connect_token = std::move(t);
      }
      Error err;
      auto c = ClientSession::create(cc, &err);
      if (!c) {
        LOCKSTEP_LOG_ERROR("client %u/%u: %s", s, p, err.detail.c_str());
        return 1;
      }
      const std::uint64_t seed = s * 64 + p + 1;
      c->set_input_source([seed](Tick t, PlayerTick* out) { bot_input(seed, t).encode(out->input); });
      watch(epfd, c->fd(), clients.size());
      clients.push_back(std::move(c));
    }
  }
  // Min-heap of (wake time, client); an entry is current only if it matches wake[client].
  using Entry = std::pair<std::int64_t, std::size_t>;
  std::priority_queue<Entry, std::vector<Entry>, std::greater<>> due;
  std::vector<std::int64_t> wake(clients.size(), 0);
  for (std::size_t i = 0; i < clients.size(); ++i) due.push({0, i});
  std::size_t running = clients.size();
  std::vector<std::size_t> ready;
  auto serve = [&](std::size_t i, std::int64_t now) {
    if (clients[i]->finished()) return;
    wake[i] = clients[i]->update(now);
    due.push({wake[i], i});
    if (clients[i]->finished()) --running;
  };
  while (running > 0) {
    std::int64_t now = monotonic_ns();
    while (!due.empty() && due.top().first <= now) {
      const auto [t, i] = due.top();
      due.pop();
      if (t == wake[i]) serve(i, now);
    }
    if (running == 0) break;
    wait_ready(epfd, due.empty() ? now + 100'000'000 : due.top().first, ready);
    now = monotonic_ns();
    for (std::size_t i : ready) serve(i, now);
  }
  int worst = 0;
  for (const auto& c : clients) worst = std::max(worst, c->exit_code());
  std::printf("%s\n", json_text(Json{{"clients", clients.size()}, {"worst_exit_code", worst}}).c_str());
  return worst;
}

int run_raw(const std::string& host, std::uint16_t base_port, std::uint32_t sessions, std::uint32_t players,
            std::uint32_t up_bytes, int epfd) {
  std::vector<RawClient> clients(static_cast<std::size_t>(sessions) * players);
  for (std::size_t i = 0; i < clients.size(); ++i) {
    std::string err;
    clients[i].host = Transport::client({}, &err);
    if (clients[i].host) clients[i].peer = clients[i].host->connect(host, static_cast<std::uint16_t>(base_port + i / players), &err);
    if (!clients[i].peer) {
      LOCKSTEP_LOG_ERROR("raw client %zu: %s", i, err.c_str());
      return 1;
    }
    watch(epfd, clients[i].host->fd(), i);
  }
  std::vector<std::uint8_t> payload(up_bytes, 0x5a);
  std::vector<std::size_t> ready;
  std::int64_t next_tick = monotonic_ns();
  const std::int64_t give_up = next_tick + 120'000'000'000;
  std::size_t running = clients.size();
  while (running > 0 && monotonic_ns() < give_up) {
    if (monotonic_ns() >= next_tick) {
      for (RawClient& c : clients) {
        if (c.connected && !c.done) c.host->send(c.peer, Channel::Play, payload);
        if (c.drain()) --running;  // also flushes what was queued and keeps ENet's handshakes and pings going
      }
      next_tick += 10'000'000;
    }
    wait_ready(epfd, next_tick, ready);
    for (std::size_t i : ready)
      if (clients[i].drain()) --running;
  }
  std::uint64_t received = 0;
  for (const RawClient& c : clients) received += c.received;
  std::printf("%s\n",
              json_text(Json{{"clients", clients.size()}, {"packets_received", received}, {"unfinished", running}}).c_str());
  return running == 0 ? 0 : 4;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-bench-load", LogLevel::Error);
  CLI::App app{"lockstep-bench-load: many bot clients in one process, for lockstep-bench's server row"};
  std::string host = "127.0.0.1";
  std::uint16_t base_port = 0;
  std::uint32_t sessions = 1, players = 4, up_bytes = 0;
  app.add_option("--host", host, "server address")->capture_default_str();
  app.add_option("--base-port", base_port, "session i listens on base-port + i")->required();
  app.add_option("--sessions", sessions, "sessions to join")->check(CLI::Range(1u, 1024u))->capture_default_str();
  app.add_option("--players", players, "clients per session")->check(CLI::Range(1u, 32u))->capture_default_str();
  app.add_option("--raw", up_bytes, "talk to lockstep-bench-relay: send this many bytes per client every 10 ms")
      ->check(CLI::Range(1u, 60'000u));
  std::string token_key;
  app.add_option("--token-key", token_key, "join with connect tokens minted with this key (FILE or env:NAME)");
  app.add_flag("--busy-poll", g_busy_poll, "poll the sockets without sleeping (this process should have a core of its own)");
  app.set_version_flag("--version", std::string("lockstep-bench-load ") + lockstep::kVersion);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  // One socket per client: raise the descriptor limit as far as allowed.
  rlimit lim{};
  if (getrlimit(RLIMIT_NOFILE, &lim) == 0) {
    lim.rlim_cur = lim.rlim_max;
    setrlimit(RLIMIT_NOFILE, &lim);
  }
  std::optional<SecretKey> key;
  if (!token_key.empty()) {
    std::string error;
    key.emplace();
    if (!load_key(token_key, &*key, &error)) {
      LOCKSTEP_LOG_ERROR("--token-key: %s", error.c_str());
      return 2;
    }
  }
  const int epfd = epoll_create1(EPOLL_CLOEXEC);
  if (epfd < 0) return 1;
  return up_bytes > 0 ? run_raw(host, base_port, sessions, players, up_bytes, epfd)
                      : run_sessions(host, base_port, sessions, players, epfd, key);
}
