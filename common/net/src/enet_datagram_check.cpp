// The datagram check on every datagram an ENet transport reads and sends (docs/PROTOCOL.md §1.1,
// datagram_check.hpp): keyless before a connection has keys, keyed after (enet_transport.hpp).
#include <cstring>

#include "lockstep/clock.hpp"
#include "enet_transport.hpp"

namespace lockstep {

bool EnetTransport::lone_disconnect(std::span<const std::uint8_t> d, std::size_t at) {
  const std::size_t command_at = at + kCheckBytes;
  return d.size() == command_at + sizeof(ENetProtocolDisconnect) &&
         (d[command_at] & ENET_PROTOCOL_COMMAND_MASK) == ENET_PROTOCOL_COMMAND_DISCONNECT;
}

bool EnetTransport::check_received(std::uint16_t id) {
  const std::span<std::uint8_t> d{host_->receivedData, host_->receivedDataLength};
  const std::size_t at = check_field_at(d);
  if (at == 0) return false;
  const bool peer = id != ENET_PROTOCOL_MAXIMUM_PEER_ID;
  const enet_uint32 seed = peer ? host_->peers[id].connectID : 0;
  enet_uint32 field;
  std::memcpy(&field, d.data() + at, kCheckBytes);
  std::memcpy(d.data() + at, &seed, kCheckBytes);
  bool ok = false;
  if (peer && keyed(id)) {
    Auth& a = auth_[id];
    ok = keyed_check(a.keys.receive, d) == field;
    if (ok) a.heard_keyed = a.speak_keyed = true;
    // Not yet keyed from that side; or the server closing a connection whose keyed datagrams
    // it has not heard yet (its pending places full, its join timeout), which goes keyless.
    else if (!a.speak_keyed || (!a.heard_keyed && lone_disconnect(d, at))) ok = keyless_check(d) == field;
  } else {
    ok = keyless_check(d) == field;
  }
  std::memcpy(d.data() + at, &field, kCheckBytes);
  checked_field_ = field;
  return ok;
}

enet_uint32 ENET_CALLBACK EnetTransport::datagram_check(const ENetBuffer* buffers, std::size_t count) {
  EnetTransport* self = serving;
  if (!self) return keyless_check(buffers, count);
  if (count == 1 && buffers[0].data == self->host_->receivedData) return self->checked_field_;  // see check_received
  // Sending: the header (the first buffer) ends with the check field, holding the seed.
  if (const Auth* a = self->sending_keyed(buffers[0])) {
    std::size_t total = 0;
    for (std::size_t b = 0; b < count; ++b) total += buffers[b].dataLength;
    if (total <= self->outgoing_.size()) {  // always: ENet's datagrams are at most its MTU
      std::size_t at = 0;
      for (std::size_t b = 0; b < count; ++b) {
        std::memcpy(self->outgoing_.data() + at, buffers[b].data, buffers[b].dataLength);
        at += buffers[b].dataLength;
      }
      return keyed_check(a->keys.send, {self->outgoing_.data(), total});
    }
  }
  return keyless_check(buffers, count);
}

const EnetTransport::Auth* EnetTransport::sending_keyed(const ENetBuffer& header) const {
  if (header.dataLength < kCheckBytes) return nullptr;
  enet_uint32 seed;
  std::memcpy(&seed, static_cast<const std::uint8_t*>(header.data) + header.dataLength - kCheckBytes, kCheckBytes);
  if (seed == 0) return nullptr;
  for (std::size_t i = 0; i < host_->peerCount; ++i)
    if (host_->peers[i].connectID == seed && host_->peers[i].state != ENET_PEER_STATE_DISCONNECTED)
      return keyed(i) && auth_[i].speak_keyed ? &auth_[i] : nullptr;
  return nullptr;
}
}  // namespace lockstep
