// What an attacker on the path does to lockstep's datagrams, for testing the datagram check and
// sealed play: flip a bit of a message (control or play), send an old play message again, or
// send one of its own. It reads just enough of ENet's framing (protocol.h of ENet 1.3, with the
// 4-byte check field of docs/PROTOCOL.md §1.1) to find the messages, and builds datagrams ENet
// takes as new ones, with a keyless check that passes on a connection that has no keys (it
// learns the connection id from the handshake, as anyone on the path can). Pure: bytes in,
// bytes out.
#pragma once

#include <cstdint>
#include <deque>
#include <optional>
#include <span>
#include <vector>

#include "lockstep/rng.hpp"

namespace lockstep::netsim {

/// One ENet send inside a datagram: its kind, its payload's place and, for an unsequenced one,
/// its group number.
struct Send {
  enum class Kind { Reliable, Unsequenced, Other } kind = Kind::Other;
  std::size_t payload_at = 0, payload_size = 0;
  std::uint16_t group = 0;
};
/// The sends of one ENet datagram, in order; empty when it has none or is malformed.
std::vector<Send> sends_of(std::span<const std::uint8_t> datagram);
/// The connection id a CONNECT or VERIFY_CONNECT in `datagram` names, if it holds one.
std::optional<std::uint32_t> connect_id_of(std::span<const std::uint8_t> datagram);
/// A datagram of one unsequenced send on channel 1 carrying `payload`, in the name of the peer
/// whose datagrams start with `peer_field` (ENet's peer id and session bits), with the keyless
/// check seeded with `connect_id`.
std::vector<std::uint8_t> forge_unsequenced(std::uint16_t peer_field, std::uint16_t group, std::span<const std::uint8_t> payload,
                                            std::uint32_t connect_id);

struct AttackConfig {
  double tamper_pct = 0;          ///< of datagrams with a message: one bit of one message flipped
  double tamper_control_pct = -1; ///< of datagrams with a control message, when given (else tamper_pct)
  double replay_pct = 0;          ///< of datagrams with a play message: an earlier play message sent again
  double inject_pct = 0;          ///< of datagrams with a play message: a message of random bytes sent beside it
  std::uint64_t seed = 1;
};

/// One direction of one client's traffic, as the attacker sees it.
class Attacker {
 public:
  struct Counters {
    std::uint64_t tampered = 0, tampered_control = 0, replayed = 0, injected = 0;
  };
  explicit Attacker(const AttackConfig& cfg, std::uint64_t stream) : cfg_(cfg), rng_(Rng::seeded(cfg.seed * 1000003 + stream)) {}
  /// Alters `datagram` in place (tamper) and returns datagrams to send after it (replay, inject).
  std::vector<std::vector<std::uint8_t>> on_datagram(std::vector<std::uint8_t>& datagram);
  [[nodiscard]] const Counters& counters() const { return counters_; }

 private:
  bool roll(double pct) { return pct > 0 && rng_.below(1'000'000) < static_cast<std::uint32_t>(pct * 10'000); }
  void flip(std::vector<std::uint8_t>& datagram, const Send& s);
  /// A group number ENet has not seen from this peer, in the window it accepts without moving it.
  std::optional<std::uint16_t> fresh_group();
  AttackConfig cfg_;
  Rng rng_;
  Counters counters_;
  std::deque<std::vector<std::uint8_t>> seen_;  // recent play messages, oldest first
  std::uint16_t latest_group_ = 0;
  std::uint16_t used_ = 0;  // groups taken ahead of the latest
  std::uint32_t connect_id_ = 0;
};

}  // namespace lockstep::netsim
