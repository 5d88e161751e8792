// The sessions' test and fuzzing seam, kept out of the public headers: sessions on another
// network than ENet over UDP (the tests' simulated one), and a server peer with no socket with a
// way to hand it datagrams. The server treats those exactly as it treats a connection's; what it
// would send to the peer is dropped.
#pragma once

#include <cstdint>
#include <span>

#include "lockstep/packet_seal.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

struct SessionTesting {
  /// ServerSession::create and ClientSession::create with their transports from `network`, which
  /// must outlive the session.
  static std::unique_ptr<ServerSession> create_server(Network& network, const ServerConfig& config, Error* error) {
    return ServerSession::create_on(network, config, error);
  }
  static std::unique_ptr<ClientSession> create_client(Network& network, const ClientConfig& config, Error* error) {
    return ClientSession::create_on(network, config, error);
  }
  /// The local port of a client session's transport.
  static std::uint16_t client_port(const ClientSession& c);
  static std::uint32_t attach_peer(ServerSession& s, std::int64_t now_ns);
  /// A peer that joined with a connect token of `client_id` and the server's side of `keys`:
  /// what it is handed is opened as a sealed connection's messages are.
  static std::uint32_t attach_sealed_peer(ServerSession& s, std::int64_t now_ns, const ConnectionKeys& keys,
                                          std::uint64_t client_id);
  static void receive(ServerSession& s, std::uint32_t peer, std::span<const std::uint8_t> bytes, std::uint8_t channel,
                      std::int64_t now_ns);
};

}  // namespace lockstep
