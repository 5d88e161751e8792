// The server session's test and fuzzing seam, kept out of the public header: a peer with no
// socket, and a way to hand it datagrams. The server treats them exactly as it treats a
// connection's; what it would send to the peer is dropped.
#pragma once

#include <cstdint>
#include <span>

#include "lockstep/packet_seal.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep {

struct ServerSessionTesting {
  static std::uint32_t attach_peer(ServerSession& s, std::int64_t now_ns);
  /// A peer that joined with a connect token of `client_id` and the server's side of `keys`:
  /// what it is handed is opened as a sealed connection's messages are.
  static std::uint32_t attach_sealed_peer(ServerSession& s, std::int64_t now_ns, const ConnectionKeys& keys,
                                          std::uint64_t client_id);
  static void receive(ServerSession& s, std::uint32_t peer, std::span<const std::uint8_t> bytes, std::uint8_t channel,
                      std::int64_t now_ns);
};

}  // namespace lockstep
