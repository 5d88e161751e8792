// What the sessions' public faces say of the network, without the transport or the wire code:
// the transport's limits (a config field), a seat's network figures (the server's seats() and
// status replies) and a host's traffic counters.
#pragma once

#include <cstddef>
#include <cstdint>
#include <string>

#include "lockstep/input.hpp"

namespace lockstep {

/// Limits applied to every host. ENet's own defaults (32 MiB) are far too trusting.
struct TransportLimits {
  std::size_t max_packet_bytes = 64 * 1024;      ///< larger incoming packets are refused by ENet
  std::size_t max_waiting_bytes = 256 * 1024;    ///< per-peer buffered incoming data
  /// A client's connection ids count up from this (0: from a random start, drawn from the
  /// system's random source). ENet's own start is the host's address and the current second, so
  /// a client made again in the same second would repeat its id.
  std::uint32_t connect_id_seed = 0;
};

/// One player's network figures (see SeatStatus in schemas/messages.fbs).
struct SeatStatus {
  std::uint32_t slot = 0;
  std::string name;
  std::uint32_t rtt_us = 0, jitter_us = 0, loss_ppm = 0;
  std::int32_t lead_us = 0;
  std::uint32_t fills_late = 0, fills_lost = 0, fills_silent = 0;
  std::uint32_t latency_p50_us = 0, latency_p99_us = 0;
  Tick hashes_checked = 0;  ///< its state hashes compared with the server's up to this tick
};

/// A host's traffic so far: UDP payloads and datagrams, both ways (add 28 bytes of IPv4 and UDP
/// header per datagram for the bytes on the wire).
struct NetTraffic {
  std::uint64_t bytes_sent = 0, bytes_received = 0;
  std::uint64_t packets_sent = 0, packets_received = 0;
  /// Datagrams that failed the datagram check (docs/PROTOCOL.md §1.1): altered, forged, sent
  /// without the connection's key once it was in use, or late ones of a connection that has
  /// ended and whose slot a new one holds. Dropped before ENet read them.
  std::uint64_t datagrams_refused = 0;
  /// System calls that read and wrote the UDP socket, each for many datagrams (recvmmsg, up to
  /// 32 of those waiting; sendmmsg, those a round queued); 0 for a transport that is not a UDP
  /// socket, and where ENet reads and writes its socket itself (docs/GUIDE.md).
  std::uint64_t socket_reads = 0, socket_writes = 0;
  /// Datagrams dropped unread, by kind, beside datagrams_refused: empty ones, ones larger than any
  /// ENet sends (both taken off the socket and counted in the batched reads only), and ones that
  /// name no connection of this host (a peer slot it does not have, or one held from another
  /// address).
  std::uint64_t datagrams_empty = 0, datagrams_oversized = 0, datagrams_unknown = 0;
  /// Datagrams the kernel dropped before they were read, the socket's buffer full (a flood
  /// faster than the server reads; SO_RXQ_OVFL). Players' datagrams may be among them.
  std::uint64_t datagrams_overflowed = 0;
};

/// The WebSocket door's counters (docs/PROTOCOL.md §17): connections taken, and the ones refused
/// or closed, by reason.
struct DoorStats {
  std::uint64_t connections = 0;          ///< TCP connections accepted
  std::uint64_t upgraded = 0;             ///< of those, WebSocket connections handed to the session
  std::uint64_t pages_served = 0;         ///< HTTP requests for the web root
  std::uint64_t refused_address = 0;      ///< over the open connections one address may hold
  std::uint64_t refused_full = 0;         ///< over the open connections the door holds
  std::uint64_t refused_protocol = 0;     ///< an upgrade without the "lockstep" subprotocol
  std::uint64_t refused_outside_root = 0; ///< a page request for a file that resolves outside the web root (a link)
  std::uint64_t malformed = 0;            ///< closed for a message without a channel byte, or of channel >= 2
  std::uint64_t text_refused = 0;         ///< closed for a text message (1003)
  std::uint64_t oversized_refused = 0;    ///< closed for a message over the size bound (1009)
  std::uint64_t flooding_cut = 0;         ///< closed for sending over the message rate
  std::uint64_t backlog_cut = 0;          ///< closed for not reading what it was sent
  std::uint64_t play_dropped = 0;         ///< play messages not queued to a peer that had a backlog
  std::uint64_t closed_before_request = 0;  ///< closed before a complete request (slow or idle)
  /// Unfinished handshakes closed to make room for a new connection (the oldest first), and ones
  /// closed for taking longer than the handshake time (5 s, 1 s while the budget is half taken).
  std::uint64_t handshakes_evicted = 0, handshakes_timed_out = 0;
  std::uint64_t handshakes_peak = 0;      ///< the most unfinished handshakes open at once
  /// The datagram path (WebRTC data channels, docs/PROTOCOL.md §17.1): offers from pages,
  /// channels opened, offers refused and channels that failed or went silent, play messages each
  /// way over them, and play messages dropped because the path's queue was full.
  std::uint64_t datagram_offers = 0, datagram_channels = 0, datagram_failed = 0;
  std::uint64_t datagram_messages_in = 0, datagram_messages_out = 0, datagram_dropped = 0;
  std::uint64_t datagram_oversized = 0;  ///< messages from a page's channel over the message bound, dropped
  /// Connections refused or closed for a reason above (refused_* to backlog_cut), all together.
  [[nodiscard]] std::uint64_t refused() const {
    return refused_address + refused_full + refused_protocol + refused_outside_root + malformed + text_refused +
           oversized_refused + flooding_cut + backlog_cut;
  }
  /// The door's own traffic: WebSocket messages and their frame headers (add the TCP/IP headers
  /// of the segments that carry them for the bytes on the wire). Also in the host's traffic().
  NetTraffic traffic;
};

}  // namespace lockstep
