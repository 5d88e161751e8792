// ENet's datagrams written by hand, as an attacker or a third-party client would write them, for
// the tests of the UDP transport (test_handshake.cpp, test_datagram_check.cpp).
#pragma once

#include <doctest/doctest.h>
#include <enet/enet.h>

#include <arpa/inet.h>

#include <cstdint>
#include <cstring>
#include <vector>

#include "lockstep/datagram_check.hpp"
#include "lockstep/transport.hpp"

namespace lockstep::testing {

// Fills in a datagram's keyless check (docs/PROTOCOL.md §1.1), seeded with `connect_id`.
inline void put_check(std::vector<std::uint8_t>& d, std::uint32_t connect_id) {
  const std::size_t at = check_field_at(d);
  REQUIRE(at != 0);
  std::memcpy(d.data() + at, &connect_id, kCheckBytes);
  const std::uint32_t check = keyless_check(d);
  std::memcpy(d.data() + at, &check, kCheckBytes);
}

// ENet's CONNECT datagram: the header with its sent time and the check, then the command.
inline constexpr std::size_t kConnectAt = 4 + kCheckBytes;
inline std::vector<std::uint8_t> connect_datagram(std::uint32_t connect_id) {
  std::vector<std::uint8_t> d(kConnectAt + sizeof(ENetProtocolConnect), 0);
  const std::uint16_t peer = htons(static_cast<std::uint16_t>(int{ENET_PROTOCOL_MAXIMUM_PEER_ID} | int{ENET_PROTOCOL_HEADER_FLAG_SENT_TIME}));
  std::memcpy(d.data(), &peer, 2);
  ENetProtocolConnect c{};
  c.header.command = static_cast<enet_uint8>(int{ENET_PROTOCOL_COMMAND_CONNECT} | int{ENET_PROTOCOL_COMMAND_FLAG_ACKNOWLEDGE});
  c.header.channelID = 0xFF;
  c.header.reliableSequenceNumber = htons(1);
  c.outgoingPeerID = htons(0);
  c.incomingSessionID = 0xFF;
  c.outgoingSessionID = 0xFF;
  c.mtu = htonl(ENET_HOST_DEFAULT_MTU);
  c.windowSize = htonl(ENET_PROTOCOL_MAXIMUM_WINDOW_SIZE);
  c.channelCount = htonl(kChannelCount);
  c.packetThrottleInterval = htonl(ENET_PEER_PACKET_THROTTLE_INTERVAL);
  c.packetThrottleAcceleration = htonl(ENET_PEER_PACKET_THROTTLE_ACCELERATION);
  c.packetThrottleDeceleration = htonl(ENET_PEER_PACKET_THROTTLE_DECELERATION);
  c.connectID = connect_id;
  std::memcpy(d.data() + kConnectAt, &c, sizeof c);
  put_check(d, 0);  // no connection yet: seed 0
  return d;
}

}  // namespace lockstep::testing
