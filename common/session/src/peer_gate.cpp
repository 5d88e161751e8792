// Admission's door for every message out (peer_gate.hpp): sealing, and the reply budget of a
// peer not yet authenticated.
#include "peer_gate.hpp"

#include <algorithm>

namespace lockstep {

std::span<const std::uint8_t> PeerGate::outgoing(std::uint32_t peer, Channel channel, std::span<const std::uint8_t> bytes,
                                                 bool budgeted, bool* withheld) {
  Entry& e = entries_[peer];
  std::span<const std::uint8_t> out = bytes;
  if (e.seal) {
    e.seal->seal(channel, bytes, sealed_);
    out = sealed_;
  }
  *withheld = false;
  // No amplification: before a peer proves it holds its token's keys, it is sent at most what it sent.
  if (budgeted && !e.authenticated) {
    if (e.bytes_out + out.size() > e.bytes_in) {
      *withheld = true;
      return {};
    }
    e.bytes_out += out.size();
  }
  return out;
}

}  // namespace lockstep
