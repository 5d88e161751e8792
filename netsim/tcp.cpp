#include "tcp.hpp"

#include <fcntl.h>
#include <netinet/tcp.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <cerrno>
#include <cstring>
#include <deque>
#include <memory>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/log.hpp"

namespace lockstep::netsim {
namespace {

// A lost segment is resent by fast retransmit: a steady stream (a message every tick) brings the
// sender three duplicate acknowledgements about a round trip after the loss, and it resends then.
// (A lone segment would wait for the retransmission timeout, 200 ms at least on Linux; a session's
// stream never leaves one alone.)
std::int64_t resend_after(const FaultConfig& f) { return 2 * f.delay_ns + 2 * f.jitter_ns + 10'000'000; }

struct Chunk {
  std::int64_t due;
  std::vector<std::uint8_t> bytes;
  std::size_t sent = 0;  // written so far (a non-blocking write may take part of it)
};

// One direction of one connection: chunks read from `from`, written to `to` when due, in order.
struct Pipe {
  int from, to;
  FaultModel faults;
  std::deque<Chunk> queue;
  std::int64_t last_due = 0;
  bool read_closed = false;  // `from` sent its end (or failed): nothing more comes
  bool finished = false;     // everything read has been written (or `to` takes nothing more)
  Pipe(int f, int t, const FaultConfig& cfg, std::uint64_t stream) : from(f), to(t), faults(cfg, stream) {}
};

struct Connection {
  int client, server;
  std::unique_ptr<Pipe> up, down;
  std::int64_t half_closed_at = 0;  // when the first direction finished
  bool done = false;
};

// How long a connection with one direction finished waits for the other's end.
constexpr std::int64_t kLingerNs = 5'000'000'000;

struct Counters {
  std::uint64_t bytes = 0, chunks = 0, lost = 0;
};

}  // namespace

Json relay_tcp(const FaultConfig& cfg, int listener, const sockaddr_in& server, std::int64_t stop_at) {
  std::vector<std::unique_ptr<Connection>> conns;
  std::uint64_t accepted = 0;
  Counters up, down;
  std::vector<std::uint8_t> buf(65536);
  while (!g_stop_requested && monotonic_ns() < stop_at) {
    std::vector<pollfd> fds{{listener, POLLIN, 0}};
    std::int64_t due = INT64_MAX;
    for (const auto& c : conns)
      for (Pipe* p : {c->up.get(), c->down.get()}) {
        fds.push_back({p->read_closed ? -1 : p->from, POLLIN, 0});  // a closed side is not polled (its hang-up would spin)
        if (!p->queue.empty()) due = std::min(due, p->queue.front().due);
      }
    const std::int64_t now0 = monotonic_ns();
    // At least 1 ms: a chunk that is due but meets a full socket waits without spinning.
    const int wait_ms = due == INT64_MAX ? 100 : static_cast<int>(std::clamp<std::int64_t>((due - now0) / 1'000'000, 1, 100));
    ::poll(fds.data(), fds.size(), wait_ms);
    const std::int64_t now = monotonic_ns();
    if (fds[0].revents & POLLIN) {
      const int c = accept(listener, nullptr, nullptr);
      if (c >= 0) {
        const int s = socket(AF_INET, SOCK_STREAM, 0);
        if (s >= 0 && connect(s, reinterpret_cast<const sockaddr*>(&server), sizeof server) == 0) {
          const int one = 1;
          setsockopt(c, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          setsockopt(s, IPPROTO_TCP, TCP_NODELAY, &one, sizeof one);
          // Writes never block the relay: what a full socket does not take waits for the next round.
          fcntl(c, F_SETFL, fcntl(c, F_GETFL) | O_NONBLOCK);
          fcntl(s, F_SETFL, fcntl(s, F_GETFL) | O_NONBLOCK);
          auto conn = std::make_unique<Connection>();
          conn->client = c;
          conn->server = s;
          conn->up = std::make_unique<Pipe>(c, s, cfg, 2 * accepted);
          conn->down = std::make_unique<Pipe>(s, c, cfg, 2 * accepted + 1);
          conns.push_back(std::move(conn));
          ++accepted;
        } else {
          LOCKSTEP_LOG_WARN("cannot reach the server for a TCP connection: %s", std::strerror(errno));
          if (s >= 0) close(s);
          close(c);
        }
      }
    }
    std::size_t i = 1;
    for (auto& c : conns) {
      for (Pipe* p : {c->up.get(), c->down.get()}) {
        Counters& n = p == c->up.get() ? up : down;
        if (i < fds.size() && (fds[i].revents & (POLLIN | POLLHUP | POLLERR))) {
          const ssize_t got = recv(p->from, buf.data(), buf.size(), MSG_DONTWAIT);
          if (got > 0 && p->finished) {
            // Nothing more goes to a side that has gone: what still comes for it is read and dropped.
          } else if (got > 0) {
            const Fate fate = p->faults.next();
            std::int64_t at = now + fate.hold_ns[0];
            if (fate.lost) {
              at += resend_after(cfg);
              ++n.lost;
            }
            p->last_due = std::max(p->last_due, at);  // a stream keeps its order
            p->queue.push_back({p->last_due, {buf.begin(), buf.begin() + got}});
            n.bytes += static_cast<std::uint64_t>(got);
            ++n.chunks;
          } else if (got == 0 || (errno != EAGAIN && errno != EWOULDBLOCK)) {
            p->read_closed = true;
          }
        }
        ++i;
        while (!p->finished && !p->queue.empty() && p->queue.front().due <= now) {
          Chunk& chunk = p->queue.front();
          const ssize_t wrote = send(p->to, chunk.bytes.data() + chunk.sent, chunk.bytes.size() - chunk.sent, MSG_NOSIGNAL);
          if (wrote < 0) {
            if (errno != EAGAIN && errno != EWOULDBLOCK) {  // `to` is gone: this direction ends here
              p->queue.clear();
              p->finished = true;
            }
            break;
          }
          chunk.sent += static_cast<std::size_t>(wrote);
          if (chunk.sent < chunk.bytes.size()) break;
          p->queue.pop_front();
        }
        // A side's end reaches the other side after everything it sent before it, as a half
        // close: the other direction goes on until its own end. (Closing both sockets at the first
        // end, or when a write to a side that has gone fails, would drop what is still on its way
        // the other way: the last messages before a server's close, say.)
        if (!p->finished && p->read_closed && p->queue.empty()) {
          shutdown(p->to, SHUT_WR);
          p->finished = true;
        }
        if (p->finished && c->half_closed_at == 0) c->half_closed_at = now;
      }
    }
    for (auto& c : conns)
      if ((c->up->finished && c->down->finished) || (c->half_closed_at != 0 && now - c->half_closed_at > kLingerNs))
        c->done = true;
    for (auto& c : conns)
      if (c->done) {
        close(c->client);
        close(c->server);
      }
    conns.erase(std::remove_if(conns.begin(), conns.end(), [](const auto& c) { return c->done; }), conns.end());
  }
  for (auto& c : conns) {
    close(c->client);
    close(c->server);
  }
  auto dir = [](const Counters& n) { return Json{{"bytes", n.bytes}, {"chunks", n.chunks}, {"lost", n.lost}}; };
  return Json{{"tcp", true}, {"connections", accepted}, {"up", dir(up)}, {"down", dir(down)}};
}

}  // namespace lockstep::netsim
