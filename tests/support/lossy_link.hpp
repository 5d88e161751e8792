// An in-process lossy link for session tests: a UDP relay on loopback between clients and a
// server, with lockstep's FaultRelay deciding each datagram's fate (as lockstep-netsim does in
// its own process). It is one more part for drive(): its sockets sit behind one epoll fd.
#pragma once

#include <cstdint>
#include <functional>
#include <map>
#include <utility>
#include <vector>

#include "lockstep/faults.hpp"
#include "support/loop.hpp"

namespace lockstep::testing {

class LossyLink {
 private:
  FaultRelay relay_;
  int epoll_ = -1, listener_ = -1;
  std::uint16_t port_ = 0, server_port_ = 0;
  std::vector<int> upstream_;  // by flow: a socket connected to the server
  std::vector<std::pair<std::uint32_t, std::uint16_t>> clients_;  // by flow: the client's address
  std::map<std::pair<std::uint32_t, std::uint16_t>, std::size_t> by_addr_;
  std::function<std::int64_t(const FaultRelay::Datagram&, std::int64_t)> hold_;
  std::function<void(FaultRelay::Datagram&)> damage_;
  std::vector<std::pair<std::int64_t, FaultRelay::Datagram>> held_;  // (due, datagram), in order held

 public:
  /// Relays between clients (connecting to port()) and the server on 127.0.0.1:server_port.
  LossyLink(const FaultConfig& faults, std::uint16_t server_port);
  ~LossyLink();
  LossyLink(const LossyLink&) = delete;
  LossyLink& operator=(const LossyLink&) = delete;

  [[nodiscard]] std::uint16_t port() const { return port_; }
  [[nodiscard]] const FaultRelay& relay() const { return relay_; }
  /// Reads what arrived, delivers what is due; returns the next due time.
  std::int64_t update(std::int64_t now);
  [[nodiscard]] Driven part();
  /// A test's own fault on top of the model's: each datagram, as it falls due, may be held back
  /// for as many more nanoseconds as `hold` returns (0: delivered now).
  /// A test's own damage: each datagram may be altered as it falls due, before it is held or delivered.
  void set_damage(std::function<void(FaultRelay::Datagram&)> damage) { damage_ = std::move(damage); }
  void set_hold(std::function<std::int64_t(const FaultRelay::Datagram&, std::int64_t now)> hold) { hold_ = std::move(hold); }

 private:
  void read_all(int fd, bool from_client, std::size_t flow, std::int64_t now);
  std::size_t flow_of(std::uint32_t addr, std::uint16_t port);
  void deliver(const FaultRelay::Datagram& d);
};

}  // namespace lockstep::testing
