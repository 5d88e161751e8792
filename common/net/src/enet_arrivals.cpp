// ENet's intercept hook (enet_transport.hpp): each datagram's kernel arrival stamp, given to the
// messages it brought; datagrams naming no connection, or failing the datagram check, counted
// and dropped before ENet reads them.
#include <linux/sockios.h>
#include <sys/ioctl.h>

#include <utility>
#include <cstring>

#include "lockstep/clock.hpp"
#include "enet_transport.hpp"

namespace lockstep {

void EnetTransport::stamp_messages(const ENetEvent* taken) {
  if (stamping_.peer < 0) return;
  const std::uint64_t at = next_arrival_++ % kArrivals;
  arrivals_[at] = stamping_.arrived;
  void* const tag = reinterpret_cast<void*>(static_cast<std::uintptr_t>(at) + 1);
  ENetPeer& peer = host_->peers[static_cast<std::size_t>(stamping_.peer)];
  if (taken && taken->peer == &peer && !taken->packet->userData) taken->packet->userData = tag;
  ENetList& queue = peer.dispatchedCommands;
  for (ENetListIterator it = enet_list_previous(enet_list_end(&queue)); it != enet_list_end(&queue); it = enet_list_previous(it)) {
    ENetPacket* packet = reinterpret_cast<ENetIncomingCommand*>(it)->packet;
    if (!packet || packet->userData) break;
    packet->userData = tag;
  }
  stamping_.peer = -1;
}

std::int64_t EnetTransport::arrival_of(const ENetPacket& packet) const {
  return packet.userData ? arrivals_[(reinterpret_cast<std::uintptr_t>(packet.userData) - 1) % kArrivals] : 0;
}

int ENET_CALLBACK EnetTransport::on_datagram(ENetHost* host, ENetEvent*) {
  EnetTransport* self = serving;
  if (!self || self->host_ != host) return 0;
  // The stamp came with the datagram from the batch; a datagram ENet read itself (where the
  // library binds its socket calls internally, so that ours are never called) is asked for it.
  const std::int64_t from_batch = std::exchange(self->reading_arrival_, -1);
  ++self->read_in_service_;
  if (host->receivedDataLength < 2) {
    ++self->datagrams_unknown_;
    self->drop_sources_.note(host->receivedAddress.host);
    return 1;  // no header: nothing ENet could read
  }
  const auto raw = static_cast<std::uint16_t>((host->receivedData[0] << 8) | host->receivedData[1]);
  const std::uint16_t id = raw & ~(ENET_PROTOCOL_HEADER_FLAG_MASK | ENET_PROTOCOL_HEADER_SESSION_MASK);
  if (id != ENET_PROTOCOL_MAXIMUM_PEER_ID && id >= host->peerCount) {
    ++self->datagrams_unknown_;
    self->drop_sources_.note(host->receivedAddress.host);
    return 1;  // a peer slot this host does not have: ENet would drop it
  }
  if (!self->check_received(id)) {
    ++self->datagrams_refused_;
    self->drop_sources_.note(host->receivedAddress.host);
    return 1;  // dropped before ENet reads any of it
  }
  if (id == ENET_PROTOCOL_MAXIMUM_PEER_ID) {  // no peer yet: a connection request, or garbage
    // A whole, uncompressed CONNECT command; ENet checks the rest itself.
    const std::size_t command_at = check_field_at({host->receivedData, host->receivedDataLength}) + kCheckBytes;
    if ((raw & ENET_PROTOCOL_HEADER_FLAG_COMPRESSED) == 0 &&
        host->receivedDataLength >= command_at + sizeof(ENetProtocolConnect) &&
        (host->receivedData[command_at] & ENET_PROTOCOL_COMMAND_MASK) == ENET_PROTOCOL_COMMAND_CONNECT) {
      ENetProtocolConnect connect;
      std::memcpy(&connect, host->receivedData + command_at, sizeof connect);
      return self->on_connect_request(host->receivedAddress, connect.connectID, host->receivedDataLength) ? 0 : 1;
    }
    return 0;
  }
  const ENetAddress& from = host->peers[id].address;
  if (from.host != host->receivedAddress.host || from.port != host->receivedAddress.port) {
    ++self->datagrams_unknown_;
    self->drop_sources_.note(host->receivedAddress.host);
    return 0;  // ENet drops it (and may count it as its own)
  }
  if (host->peers[id].state == ENET_PEER_STATE_ACKNOWLEDGING_CONNECT)  // its acknowledgement was lost
    self->answer_again(id, host->receivedDataLength);
  std::int64_t arrived = from_batch;
  if (arrived < 0) {
    timespec ts{};
    arrived = ioctl(host->socket, SIOCGSTAMPNS, &ts) == 0 ? to_ns(ts) - realtime_ahead_ns() : 0;
  }
  self->heard_[id] = arrived != 0 ? arrived : monotonic_ns();
  self->stamp_messages();  // of the datagram before this one
  self->stamping_ = {id, arrived};
  return 0;  // ENet goes on to handle the datagram as usual
}
}  // namespace lockstep
