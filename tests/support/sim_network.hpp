// An in-process network with simulated time for the session tests, as yojimbo's tests drive
// their connections through a network simulator: transports that sessions use exactly as they
// use ENet's, whose datagrams meet lockstep's seeded fault model (loss, delay, jitter,
// reordering) and arrive when the simulated clock says so. Nothing waits on a real clock:
// drive_simulated() moves the clock straight to the next thing due, so a 10 s session with
// 100 ms round trips runs as fast as the machine can step it, and runs the same way each time.
//
// What it keeps of ENet: a reliable, ordered control channel (a lost datagram is sent again
// after a retransmission timeout that doubles, so loss turns into delay); an unreliable play
// channel (loss and reordering reach the session, duplicates do not: ENet drops them); the
// connect and disconnect handshakes with their events; queued messages leaving together at a
// flush, in one datagram with one fate; pings every 500 ms on an idle connection; the packet
// size limit. What it does not: congestion, fragmentation, throttling.
#pragma once

#include <cstdint>
#include <deque>
#include <functional>
#include <map>
#include <memory>
#include <queue>
#include <string>
#include <vector>

#include "lockstep/faults.hpp"
#include "lockstep/transport.hpp"
#include "support/loop.hpp"

namespace lockstep::testing {

class SimTransport;

class SimNetwork final : public Network {
 public:
  /// One datagram on its way.
  struct Datagram {
    enum class Kind : std::uint8_t { Connect, Accept, Data, Ping, Disconnect, DisconnectNow, DisconnectAck };
    struct Message {
      Channel channel = Channel::Control;
      std::vector<std::uint8_t> bytes;
    };
    Kind kind = Kind::Data;
    std::uint16_t from_port = 0, to_port = 0;
    std::uint32_t from_ip = 0;                  // the sender's IPv4 address, network order
    std::uint32_t from_peer = 0, to_peer = 0;  // connection ids, unique in the network (0: not known yet)
    FaultConfig faults;                         // Connect: the link's faults, for the answering side
    std::vector<Message> messages;
  };

  explicit SimNetwork(std::int64_t start_ns = 1'000'000'000) : now_(start_ns) {}
  ~SimNetwork();
  SimNetwork(const SimNetwork&) = delete;
  SimNetwork& operator=(const SimNetwork&) = delete;

  std::unique_ptr<Transport> listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                    const TransportLimits& limits, Error* error) override;
  /// A client transport on 127.0.0.1, or on the loopback address `bind` names (127.0.0.x: an
  /// address of its own, as an attacker's socket or another player's machine).
  std::unique_ptr<Transport> client(const TransportLimits& limits, std::string* error, const std::string& bind) override;

  /// The faults of the links of client transports made from now on, in both directions (the
  /// seed's streams keep each direction of each link independent). Default: none, no delay.
  void set_link_faults(const FaultConfig& faults) { link_faults_ = faults; }
  /// A test's own fault on top of the model's: every datagram with messages, as it is sent, may
  /// be altered (damage) or held back (the nanoseconds hold returns are added to its delay).
  void set_damage(std::function<void(Datagram&)> damage) { damage_ = std::move(damage); }
  void set_hold(std::function<std::int64_t(const Datagram&)> hold) { hold_ = std::move(hold); }

  [[nodiscard]] std::int64_t now() const { return now_; }
  void advance_to(std::int64_t t) { now_ = std::max(now_, t); }
  /// When the next datagram for the transport on `port` falls due (INT64_MAX: none).
  [[nodiscard]] std::int64_t next_due(std::uint16_t port) const;
  /// Datagrams sent, and how many of them the faults lost (retransmissions included).
  [[nodiscard]] std::uint64_t datagrams() const { return datagrams_; }
  [[nodiscard]] std::uint64_t lost() const { return lost_; }

 private:
  friend class SimTransport;
  friend class SimPeer;
  struct Pending {
    std::int64_t due;
    std::uint64_t seq;
    Datagram datagram;
    bool operator>(const Pending& o) const { return due != o.due ? due > o.due : seq > o.seq; }
  };
  using Queue = std::priority_queue<Pending, std::vector<Pending>, std::greater<>>;

  bool post(Datagram d, std::int64_t due);  // false: no transport on its port
  std::uint32_t next_peer_id() { return ++peer_ids_; }

  std::int64_t now_;
  std::map<std::uint16_t, SimTransport*> transports_;
  std::map<std::uint16_t, Queue> queues_;  // by destination port
  std::uint16_t next_port_ = 61000;  // past Linux's ephemeral ports: a real socket's port is silent here
  std::uint32_t peer_ids_ = 0;
  std::uint64_t seq_ = 0, datagrams_ = 0, lost_ = 0;
  FaultConfig link_faults_;
  std::function<void(Datagram&)> damage_;
  std::function<std::int64_t(const Datagram&)> hold_;
};

/// Updates every part until `done()` or `timeout_ns` of simulated time has passed; false on
/// timeout. Each part is updated when its wake time has come or something is due for it (its
/// `due`), and the clock then jumps to the earliest of those.
bool drive_simulated(SimNetwork& net, const std::vector<Driven>& parts, const std::function<bool()>& done,
                     std::int64_t timeout_ns);

}  // namespace lockstep::testing
