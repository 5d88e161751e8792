// Two transports as one (join_transports): the server's ENet host and its WebSocket door, so the
// session sees one set of peers and its event loop waits on one descriptor.
#include <sys/epoll.h>
#include <unistd.h>

#include "lockstep/transport.hpp"

namespace lockstep {
namespace {

// Two transports as one.
class TransportPair final : public Transport {
 public:
  TransportPair(std::unique_ptr<Transport> a, std::unique_ptr<Transport> b) : a_(std::move(a)), b_(std::move(b)) {
    epoll_ = epoll_create1(EPOLL_CLOEXEC);
    for (Transport* t : {a_.get(), b_.get()})
      if (t->fd() >= 0) {
        epoll_event ev{};
        ev.events = EPOLLIN;
        ev.data.ptr = t;
        epoll_ctl(epoll_, EPOLL_CTL_ADD, t->fd(), &ev);
      }
  }
  ~TransportPair() override {
    if (epoll_ >= 0) close(epoll_);
  }
  NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) override {
    return a_->connect(host, port, error);
  }
  NetEvent poll() override {
    // Turn about, so a flood on one side never starves the other.
    first_ = !first_;
    Transport* x = first_ ? a_.get() : b_.get();
    Transport* y = first_ ? b_.get() : a_.get();
    NetEvent ev = x->poll();
    if (ev.type != NetEvent::Type::None) return ev;
    return y->poll();
  }
  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override {
    of(peer).send(peer, channel, bytes);
  }
  void flush() override {
    a_->flush();
    b_->flush();
  }
  [[nodiscard]] int fd() const override { return epoll_; }
  [[nodiscard]] bool reliable_in_flight() const override { return a_->reliable_in_flight() || b_->reliable_in_flight(); }
  [[nodiscard]] bool backlogged() const override { return a_->backlogged() || b_->backlogged(); }
  std::string take_drop_sources() override {
    std::string a = a_->take_drop_sources(), b = b_->take_drop_sources();
    return a.empty() ? b : a;
  }
  [[nodiscard]] std::int64_t heard_ns(const NetPeer* peer) const override { return of(peer).heard_ns(peer); }
  [[nodiscard]] std::uint16_t port() const override { return a_->port(); }
  [[nodiscard]] NetTraffic traffic() const override {
    NetTraffic x = a_->traffic();
    const NetTraffic y = b_->traffic();
    x.bytes_sent += y.bytes_sent;
    x.bytes_received += y.bytes_received;
    x.packets_sent += y.packets_sent;
    x.packets_received += y.packets_received;
    x.datagrams_refused += y.datagrams_refused;
    x.datagrams_empty += y.datagrams_empty;
    x.datagrams_oversized += y.datagrams_oversized;
    x.datagrams_unknown += y.datagrams_unknown;
    x.datagrams_overflowed += y.datagrams_overflowed;
    x.socket_reads += y.socket_reads;
    x.socket_writes += y.socket_writes;
    return x;
  }
  void authenticate(NetPeer* peer, const DatagramKeys& keys, bool speaks_first) override {
    of(peer).authenticate(peer, keys, speaks_first);
  }
  [[nodiscard]] std::uint64_t handshakes_cut() const override { return a_->handshakes_cut() + b_->handshakes_cut(); }
  [[nodiscard]] bool owns(const NetPeer* peer) const override { return a_->owns(peer) || b_->owns(peer); }
  [[nodiscard]] std::uint16_t websocket_port() const override {
    return b_->websocket_port() ? b_->websocket_port() : a_->websocket_port();
  }
  [[nodiscard]] DoorStats door_stats() const override { return b_->websocket_port() ? b_->door_stats() : a_->door_stats(); }

 private:
  Transport& of(const NetPeer* peer) const { return b_->owns(peer) ? *b_ : *a_; }
  std::unique_ptr<Transport> a_, b_;
  int epoll_ = -1;
  bool first_ = false;
};

}  // namespace

std::unique_ptr<Transport> join_transports(std::unique_ptr<Transport> first, std::unique_ptr<Transport> second) {
  return std::make_unique<TransportPair>(std::move(first), std::move(second));
}

}  // namespace lockstep
