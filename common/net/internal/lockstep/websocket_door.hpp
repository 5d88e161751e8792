// The WebSocket door (docs/PROTOCOL.md §17): browsers reach the same session as ENet peers, over
// one TCP stream each, with the same protocol messages as binary WebSocket messages. A transport
// of its own (libwebsockets, on a thread of its own), joined to the ENet one with
// join_transports() (transport.hpp) so the session sees one transport and one set of peers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>

#include "lockstep/error.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

/// Where and how the door listens.
struct WebSocketDoorConfig {
  std::string bind;         ///< "" = all addresses
  std::uint16_t port = 0;   ///< 0 = any free port
  std::string web_root;     ///< a folder served over HTTP(S) on the same port ("" = none)
  std::string tls_cert, tls_key;  ///< PEM files: wss:// and https:// (both or neither)
  std::size_t max_peers = 64;     ///< open connections, handshakes included
};

/// Bounds of the door, beside TransportLimits' message size and waiting bytes.
/// Open at once from one address; loopback is exempt (behind a TLS proxy on the same machine
/// every browser comes from it).
inline constexpr std::size_t kDoorConnectionsPerAddress = 8;
inline constexpr unsigned kDoorHandshakeSeconds = 5;          ///< to send a complete upgrade request
/// Play messages to a peer are dropped (as a datagram would be lost) while this much waits to be
/// written to it: a hidden tab or a slow link falls behind alone.
inline constexpr std::size_t kDoorPlayBacklogBytes = 64 * 1024;
/// Past this much waiting, control messages included, the peer is closed (it cannot keep up).
inline constexpr std::size_t kDoorBacklogBytes = 16 * 1024 * 1024;
/// Messages a connection may send a second (a 100 Hz player sends a few hundred at most).
inline constexpr std::uint32_t kDoorMessagesPerSecond = 2000;

/// Listens for WebSocket connections (and serves `web_root`). nullptr with `error` set when the
/// port is taken, a certificate does not load, or the folder does not exist.
std::unique_ptr<Transport> listen_websocket(const WebSocketDoorConfig& config, const TransportLimits& limits,
                                            Error* error);

}  // namespace lockstep
