// The WebSocket door (docs/PROTOCOL.md §17): browsers reach the same session as ENet peers, over
// one TCP stream each, with the same protocol messages as binary WebSocket messages. A transport
// of its own (libwebsockets, on a thread of its own), joined to the ENet one with
// join_transports() (transport.hpp) so the session sees one transport and one set of peers.
#pragma once

#include <cstdint>
#include <memory>
#include <string>
#include <vector>

#include "lockstep/error.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

/// Bounds of the door, beside TransportLimits' message size and waiting bytes.
/// Open at once from one address. Loopback is exempt unless it is a trusted proxy (then each
/// browser behind it is held to the bound by its X-Forwarded-For address).
inline constexpr std::size_t kDoorConnectionsPerAddress = 8;
inline constexpr unsigned kDoorHandshakeSeconds = 5;          ///< to send a complete upgrade request
/// ... while more than half the handshake budget is taken: a crowd of slow handshakes is cut fast.
inline constexpr unsigned kDoorHandshakeSecondsUnderPressure = 1;
inline constexpr std::size_t kDoorHandshakes = 1024;          ///< the default handshake budget
/// Where and how the door listens.
struct WebSocketDoorConfig {
  std::string bind;         ///< "" = all addresses
  std::uint16_t port = 0;   ///< 0 = any free port
  std::string web_root;     ///< a folder served over HTTP(S) on the same port ("" = none)
  std::string tls_cert, tls_key;  ///< PEM files: wss:// and https:// (both or neither)
  std::size_t max_peers = 64;     ///< upgraded WebSocket connections the door holds at once
  /// Connections not yet upgraded (TCP or TLS handshakes, upgrade requests on their way, page
  /// requests): a budget of their own, so that upgraded players always have room. When it is
  /// full, a new connection takes the place of the oldest unfinished one.
  std::size_t max_handshakes = kDoorHandshakes;
  /// Addresses of proxies in front of the door (a TLS proxy on the same machine, say): their
  /// connections are held to the per-address bound by the last address of X-Forwarded-For.
  std::vector<std::string> trusted_proxies;
  /// The datagram path (§17.1): a page may move its play messages to a WebRTC data channel,
  /// offered over its WebSocket. UDP ports for the channels (0, 0 = any free port), and the
  /// address the answer names ("HOST" or "HOST:PORT"; "" = the local addresses).
  bool webrtc = false;
  std::uint16_t webrtc_port_min = 0, webrtc_port_max = 0;
  std::string webrtc_advertise;
};
/// The WebSocket message channel byte of the datagram path's signalling (§17.1): a page's offer,
/// the server's answer ('a' and the SDP), refusal ('n' and why) or close ('x' and why).
inline constexpr std::uint8_t kSignalChannel = 2;
/// Offers one connection may make (a page that retries after a failed channel).
inline constexpr std::uint32_t kDoorOffersPerConnection = 8;

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
