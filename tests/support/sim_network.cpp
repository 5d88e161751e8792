#include "support/sim_network.hpp"

#include <arpa/inet.h>

#include <algorithm>
#include <climits>

namespace lockstep::testing {
namespace {

constexpr std::int64_t kPingIdleNs = 500'000'000;       // ENet pings a connection idle this long
constexpr std::int64_t kMinRetransmitNs = 20'000'000;   // the first retransmission timeout, at least
constexpr int kMaxSends = 24;                           // a datagram lost this often is lost for good
constexpr std::size_t kHeaderBytes = 4, kMessageHeaderBytes = 8;  // about ENet's, for the traffic counters
constexpr std::uint32_t kLoopback = 0x0100007f;         // 127.0.0.1, network byte order

using Kind = SimNetwork::Datagram::Kind;

}  // namespace

class SimPeer final : public NetPeer {
 public:
  enum class State { Connecting, Connected, Closing, Gone };

  SimPeer(SimTransport* owner, std::uint32_t id, std::uint16_t remote_port, const FaultConfig& faults, std::uint64_t stream)
      : owner_(owner), id_(id), remote_port_(remote_port), faults_(faults), out_(faults, stream) {}

  void disconnect_later() override;
  void disconnect_now() override;
  void reset() override { state = State::Gone; }
  [[nodiscard]] bool told_all() const override;
  [[nodiscard]] bool sending() const override;
  [[nodiscard]] PeerNet net() const override {
    PeerNet n;
    n.rtt_us = static_cast<std::uint32_t>(std::max<std::int64_t>(2 * faults_.delay_ns, 1'000'000) / 1000);
    n.rtt_var_us = static_cast<std::uint32_t>(faults_.jitter_ns / 1000);
    n.loss_ppm = static_cast<std::uint32_t>(faults_.loss_pct * 10'000);
    return n;
  }
  [[nodiscard]] std::size_t channel_count() const override { return kChannelCount; }
  [[nodiscard]] std::uint32_t ip() const override { return remote_ip; }
  [[nodiscard]] std::string address() const override {
    char text[INET_ADDRSTRLEN] = "?";
    ::inet_ntop(AF_INET, &remote_ip, text, sizeof text);
    return std::string(text) + ":" + std::to_string(remote_port_);
  }
  void set_tag(std::uintptr_t tag) override { tag_ = tag; }
  [[nodiscard]] std::uintptr_t tag() const override { return tag_; }
  void set_backstop_timeout(std::uint32_t) override {}  // the sessions' own bounds act first

  State state = State::Connecting;
  std::uint32_t remote_id = 0;
  std::uint32_t remote_ip = kLoopback;
  std::int64_t heard = 0, last_sent = 0;
  std::vector<SimNetwork::Datagram::Message> queued;

  [[nodiscard]] std::uint32_t id() const { return id_; }
  [[nodiscard]] std::uint16_t remote_port() const { return remote_port_; }
  [[nodiscard]] const FaultConfig& faults() const { return faults_; }
  /// Sends a datagram of `kind` with `messages` to the remote peer now, reliably or not.
  void send_datagram(Kind kind, std::vector<SimNetwork::Datagram::Message> messages, bool reliable);
  /// Sends what is queued, in one datagram (two when reliable and unreliable messages mix).
  void flush();

 private:
  SimTransport* owner_;
  std::uint32_t id_;
  std::uint16_t remote_port_;
  FaultConfig faults_;
  FaultModel out_;
  std::uintptr_t tag_ = 0;
  std::int64_t reliable_due_ = 0;  // the latest reliable datagram's arrival: the next arrives no earlier
  std::int64_t acked_at_ = 0;      // when the latest reliable datagram's acknowledgement is back
  std::int64_t told_at_ = 0;       // closing: when everything sent before the disconnect is acknowledged
  bool disconnect_pending_ = false;
};

class SimTransport final : public Transport {
 public:
  SimTransport(SimNetwork& net, std::uint16_t port, std::size_t max_peers, const TransportLimits& limits,
               std::uint32_t ip = kLoopback)
      : net_(net), port_(port), ip_(ip), max_peers_(max_peers), limits_(limits) {
    net_.transports_[port_] = this;
  }
  ~SimTransport() override {
    net_.transports_.erase(port_);
    net_.queues_.erase(port_);
  }

  NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) override {
    if (host != "127.0.0.1" && host != "localhost") {
      if (error) *error = "cannot resolve '" + host + "' (the simulated network has only 127.0.0.1)";
      return nullptr;
    }
    SimPeer* p = add_peer(port, net_.link_faults_);
    p->send_datagram(Kind::Connect, {}, true);
    return p;
  }

  NetEvent poll() override {
    flush();
    for (;;) {
      if (!events_.empty()) {
        NetEvent ev = std::move(events_.front());
        events_.pop_front();
        return ev;
      }
      auto q = net_.queues_.find(port_);
      if (q == net_.queues_.end() || q->second.empty() || q->second.top().due > net_.now()) return {};
      SimNetwork::Datagram d = std::move(const_cast<SimNetwork::Datagram&>(q->second.top().datagram));
      q->second.pop();
      receive(std::move(d));
    }
  }

  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override {
    if (!peer) return;
    auto* p = static_cast<SimPeer*>(peer);
    if (p->state == SimPeer::State::Gone || bytes.size() > limits_.max_packet_bytes) return;
    p->queued.push_back({channel, {bytes.begin(), bytes.end()}});
  }

  void flush() override {
    for (auto& p : peers_) {
      if (p->state == SimPeer::State::Connected || p->state == SimPeer::State::Closing) {
        p->flush();
        if (p->state == SimPeer::State::Connected && net_.now() - p->last_sent >= kPingIdleNs)
          p->send_datagram(Kind::Ping, {}, false);
      }
    }
  }

  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] bool reliable_in_flight() const override {
    return std::any_of(peers_.begin(), peers_.end(), [](const auto& p) {
      return p->state == SimPeer::State::Connecting || p->state == SimPeer::State::Closing || p->sending();
    });
  }
  [[nodiscard]] std::int64_t heard_ns(const NetPeer* peer) const override {
    return peer ? static_cast<const SimPeer*>(peer)->heard : 0;
  }
  [[nodiscard]] std::uint16_t port() const override { return port_; }
  [[nodiscard]] NetTraffic traffic() const override { return traffic_; }

  SimNetwork& net() { return net_; }
  [[nodiscard]] std::uint32_t ip() const { return ip_; }
  NetTraffic& counters() { return traffic_; }

 private:
  SimPeer* add_peer(std::uint16_t remote_port, const FaultConfig& faults) {
    const std::uint32_t id = net_.next_peer_id();
    peers_.push_back(std::make_unique<SimPeer>(this, id, remote_port, faults, id));
    return peers_.back().get();
  }
  SimPeer* find(std::uint32_t id) {
    for (auto& p : peers_)
      if (p->id() == id) return p.get();
    return nullptr;
  }
  void event(NetEvent::Type type, SimPeer* p) {
    NetEvent ev;
    ev.type = type;
    ev.peer = p;
    events_.push_back(std::move(ev));
  }

  void receive(SimNetwork::Datagram d) {
    ++traffic_.packets_received;
    traffic_.bytes_received += kHeaderBytes;
    for (const auto& m : d.messages) traffic_.bytes_received += kMessageHeaderBytes + m.bytes.size();
    if (d.kind == Kind::Connect) {
      const auto live = std::count_if(peers_.begin(), peers_.end(), [](const auto& p) { return p->state != SimPeer::State::Gone; });
      if (static_cast<std::size_t>(live) >= max_peers_) return;  // no free slot: ENet ignores the request
      SimPeer* p = add_peer(d.from_port, d.faults);
      p->remote_id = d.from_peer;
      p->remote_ip = d.from_ip;
      p->state = SimPeer::State::Connected;
      p->heard = net_.now();
      event(NetEvent::Type::Connect, p);
      p->send_datagram(Kind::Accept, {}, true);
      return;
    }
    SimPeer* p = find(d.to_peer);
    if (!p || p->state == SimPeer::State::Gone) return;
    if (p->remote_id != 0 && p->remote_id != d.from_peer) return;
    p->heard = net_.now();
    switch (d.kind) {
      case Kind::Accept:
        if (p->state != SimPeer::State::Connecting) return;
        p->remote_id = d.from_peer;
        p->state = SimPeer::State::Connected;
        event(NetEvent::Type::Connect, p);
        return;
      case Kind::Data:
        if (p->state == SimPeer::State::Connecting) return;
        for (auto& m : d.messages) {
          if (m.bytes.size() > limits_.max_packet_bytes) continue;  // refused, as ENet refuses it
          auto* held = new std::vector<std::uint8_t>(std::move(m.bytes));
          NetEvent ev;
          ev.type = NetEvent::Type::Receive;
          ev.peer = p;
          ev.channel = static_cast<std::uint8_t>(m.channel);
          ev.data = *held;
          ev.arrived_ns = net_.now();
          ev.holder = {held, [](void* v) { delete static_cast<std::vector<std::uint8_t>*>(v); }};
          events_.push_back(std::move(ev));
        }
        return;
      case Kind::Ping: return;
      case Kind::Disconnect:
        if (p->state == SimPeer::State::Connecting) return;
        p->send_datagram(Kind::DisconnectAck, {}, true);
        p->state = SimPeer::State::Gone;
        event(NetEvent::Type::Disconnect, p);
        return;
      case Kind::DisconnectNow:
        p->state = SimPeer::State::Gone;
        event(NetEvent::Type::Disconnect, p);
        return;
      case Kind::DisconnectAck:
        if (p->state != SimPeer::State::Closing) return;
        p->state = SimPeer::State::Gone;
        event(NetEvent::Type::Disconnect, p);
        return;
      case Kind::Connect: return;
    }
  }

  SimNetwork& net_;
  std::uint16_t port_;
  std::uint32_t ip_;
  std::size_t max_peers_;
  TransportLimits limits_;
  std::vector<std::unique_ptr<SimPeer>> peers_;  // never reused: a handle names one connection
  std::deque<NetEvent> events_;
  NetTraffic traffic_;
};

void SimPeer::send_datagram(Kind kind, std::vector<SimNetwork::Datagram::Message> messages, bool reliable) {
  SimNetwork& net = owner_->net();
  SimNetwork::Datagram d;
  d.kind = kind;
  d.from_port = owner_->port();
  d.from_ip = owner_->ip();
  d.to_port = remote_port_;
  d.from_peer = id_;
  d.to_peer = remote_id;
  d.faults = faults_;
  d.messages = std::move(messages);
  if (net.damage_ && !d.messages.empty()) net.damage_(d);
  const std::int64_t extra = net.hold_ && !d.messages.empty() ? net.hold_(d) : 0;
  std::size_t bytes = kHeaderBytes;
  for (const auto& m : d.messages) bytes += kMessageHeaderBytes + m.bytes.size();
  last_sent = net.now();
  // Each send (the first, then every retransmission) draws its fate; a reliable datagram is
  // sent again after a timeout that doubles until one copy gets through.
  std::int64_t sent_at = net.now();
  std::int64_t timeout = std::max(kMinRetransmitNs, 2 * faults_.delay_ns + 4 * faults_.jitter_ns);
  for (int attempt = 0; attempt < kMaxSends; ++attempt) {
    NetTraffic& c = owner_->counters();
    ++c.packets_sent;
    c.bytes_sent += bytes;
    ++net.datagrams_;
    const Fate fate = out_.next();
    if (!fate.lost) {
      std::int64_t due = sent_at + fate.hold_ns[0] + extra;
      if (reliable) due = std::max(due, reliable_due_);
      const bool posted = net.post(std::move(d), due);
      if (reliable) {
        reliable_due_ = due;
        acked_at_ = posted ? due + faults_.delay_ns : INT64_MAX;  // nobody there to acknowledge it
      }
      return;
    }
    ++net.lost_;
    if (!reliable) return;
    sent_at += timeout;
    timeout *= 2;
  }
}

void SimPeer::flush() {
  if (!queued.empty()) {
    std::vector<SimNetwork::Datagram::Message> reliable, unreliable;
    for (auto& m : queued) (m.channel == Channel::Control ? reliable : unreliable).push_back(std::move(m));
    queued.clear();
    if (!unreliable.empty()) send_datagram(Kind::Data, std::move(unreliable), false);
    if (!reliable.empty()) send_datagram(Kind::Data, std::move(reliable), true);
  }
  if (disconnect_pending_) {
    disconnect_pending_ = false;
    told_at_ = acked_at_;
    send_datagram(Kind::Disconnect, {}, true);
  }
}

void SimPeer::disconnect_later() {
  if (state == State::Gone) return;
  if (state == State::Connecting) {
    state = State::Gone;
    return;
  }
  state = State::Closing;
  disconnect_pending_ = true;
}

void SimPeer::disconnect_now() {
  if (state == State::Connected || state == State::Closing) send_datagram(Kind::DisconnectNow, {}, false);
  state = State::Gone;
}

bool SimPeer::told_all() const {
  return state == State::Gone ||
         (state == State::Closing && !disconnect_pending_ && owner_->net().now() >= told_at_);
}

bool SimPeer::sending() const {
  if (state == State::Gone) return false;
  const bool queued_reliable =
      std::any_of(queued.begin(), queued.end(), [](const auto& m) { return m.channel == Channel::Control; });
  return queued_reliable || owner_->net().now() < acked_at_;
}

SimNetwork::~SimNetwork() = default;

std::unique_ptr<Transport> SimNetwork::listen(const std::string&, std::uint16_t port, std::size_t max_peers,
                                              const TransportLimits& limits, Error* error) {
  if (port == 0) port = next_port_++;
  if (transports_.count(port)) {
    if (error) *error = {ErrorKind::Runtime, "cannot listen on UDP port " + std::to_string(port) + " (in use, or not permitted)"};
    return nullptr;
  }
  return std::make_unique<SimTransport>(*this, port, max_peers, limits);
}

std::unique_ptr<Transport> SimNetwork::client(const TransportLimits& limits, std::string* error, const std::string& bind) {
  in_addr a{};
  a.s_addr = kLoopback;
  if (!bind.empty() && (::inet_pton(AF_INET, bind.c_str(), &a) != 1 || (a.s_addr & 0xffu) != 127u)) {
    if (error) *error = "bad bind address '" + bind + "' (the simulated network has 127.0.0.0/8 only)";
    return nullptr;
  }
  while (transports_.count(next_port_)) ++next_port_;
  return std::make_unique<SimTransport>(*this, next_port_++, 1, limits, a.s_addr);
}

bool SimNetwork::post(Datagram d, std::int64_t due) {
  if (!transports_.count(d.to_port)) return false;  // nobody listens there: the datagram is lost
  const std::uint16_t port = d.to_port;
  queues_[port].push(Pending{due, seq_++, std::move(d)});
  return true;
}

std::int64_t SimNetwork::next_due(std::uint16_t port) const {
  const auto q = queues_.find(port);
  return q == queues_.end() || q->second.empty() ? INT64_MAX : q->second.top().due;
}

namespace {
std::int64_t due(const Driven& part) { return part.due ? part.due() : INT64_MAX; }
}  // namespace

bool drive_simulated(SimNetwork& net, const std::vector<Driven>& parts, const std::function<bool()>& done,
                     std::int64_t timeout_ns) {
  const std::int64_t give_up = net.now() + timeout_ns;
  std::vector<std::int64_t> wake(parts.size(), 0);
  int same_instant = 0;
  while (!done()) {
    const std::int64_t now = net.now();
    if (now > give_up) return false;
    for (std::size_t i = 0; i < parts.size(); ++i)
      if (now >= wake[i] || due(parts[i]) <= now) wake[i] = parts[i].update(now);
    if (done()) return true;
    std::int64_t next = INT64_MAX;
    for (std::size_t i = 0; i < parts.size(); ++i) next = std::min({next, wake[i], due(parts[i])});
    // A part that asks for the present again and again still lets time pass.
    if (next <= now) next = ++same_instant > 100 ? now + 1000 : now;
    else same_instant = 0;
    if (next == INT64_MAX) next = now + 50'000'000;
    net.advance_to(next);
  }
  return true;
}

}  // namespace lockstep::testing
