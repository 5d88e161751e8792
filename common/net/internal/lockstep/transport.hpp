// ENet, wrapped once: RAII for the library, hosts and packets, and the few calls sessions need.
#pragma once

#include <algorithm>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/error.hpp"
#include "lockstep/net_types.hpp"

struct _ENetHost;
struct _ENetPeer;
struct _ENetPacket;

namespace lockstep {

using EnetPeer = _ENetPeer;

/// ENet channels.
enum class Channel : std::uint8_t {
  Control = 0,  ///< reliable, ordered
  Play = 1,     ///< unreliable, unsequenced: every play message is tick-numbered and redundant, so one
                ///< that arrives after a newer one is still used, not dropped
};
inline constexpr std::size_t kChannelCount = 2;

/// One received event. `data` is valid until the event is destroyed.
struct NetEvent {
  enum class Type { None, Connect, Disconnect, Receive } type = Type::None;
  EnetPeer* peer = nullptr;
  std::uint8_t channel = 0;
  std::span<const std::uint8_t> data;
  /// Receive: when the datagram carrying it reached the socket (monotonic ns, from the kernel's
  /// receive timestamp), so a caller that reads its socket late still knows how early it came.
  /// 0 when the kernel gave no timestamp.
  std::int64_t arrived_ns = 0;
  NetEvent() = default;
  NetEvent(NetEvent&&) noexcept;
  NetEvent& operator=(NetEvent&&) noexcept;
  ~NetEvent();

 private:
  friend class Transport;
  _ENetPacket* packet_ = nullptr;
};

/// The transport: one ENet host (server or client side). Not copyable; destroying it closes its socket.
class Transport {
 public:
  /// A listening host on `bind` ("" = all addresses) and `port` (0 = any free port).
  static std::unique_ptr<Transport> listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                         const TransportLimits& limits, Error* error);
  /// A client host that can make one outgoing connection, from `bind` ("" = any local address).
  static std::unique_ptr<Transport> client(const TransportLimits& limits, std::string* error, const std::string& bind = "");
  ~Transport();
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// Starts connecting to host:port; nullptr when the address does not resolve.
  EnetPeer* connect(const std::string& host, std::uint16_t port, std::string* error);
  /// Returns the next event without blocking (and sends what is queued); Type::None when there is none.
  NetEvent poll();
  /// Queues `bytes` to `peer` on `channel`; reliability follows the channel.
  void send(EnetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes);
  /// Sends everything queued now.
  void flush();
  /// The UDP socket, for waiting with poll(2).
  [[nodiscard]] int fd() const;
  /// True while a peer is connecting or disconnecting, or reliable data waits to be sent or
  /// acknowledged: then ENet needs its socket served promptly to make progress.
  [[nodiscard]] bool reliable_in_flight() const;
  /// When the latest datagram from `peer`'s address arrived (monotonic ns; 0: none yet). Any
  /// datagram counts, ENet's own pings and acknowledgements too: the peer is alive and serving
  /// its socket, even while it has nothing of its own to say (a server waiting in the lobby).
  [[nodiscard]] std::int64_t heard_ns(const EnetPeer* peer) const;
  /// The bound port.
  [[nodiscard]] std::uint16_t port() const;
  /// Total bytes sent and received on the socket (UDP payloads, ENet headers included).
  [[nodiscard]] NetTraffic traffic() const { return {bytes_sent(), bytes_received(), packets_sent(), packets_received()}; }
  [[nodiscard]] std::uint64_t bytes_sent() const;
  [[nodiscard]] std::uint64_t bytes_received() const;
  [[nodiscard]] std::uint64_t packets_sent() const;
  [[nodiscard]] std::uint64_t packets_received() const;


 private:
  explicit Transport(_ENetHost* host);
  friend struct DatagramStamps;
  _ENetHost* host_;
  std::vector<std::int64_t> arrival_;  // by ENet peer index: the latest datagram's kernel stamp (0: none)
  std::vector<std::int64_t> heard_;    // by ENet peer index: the latest datagram's arrival, stamped or read
};

/// Peer helpers. Sending to, disconnecting or naming a null peer (an in-process test peer) is a no-op.
void peer_disconnect_later(EnetPeer* peer);  ///< after queued packets are sent
void peer_disconnect_now(EnetPeer* peer);    ///< at once, no acknowledgement awaited
void peer_reset(EnetPeer* peer);             ///< forget the peer without telling it
/// A peer closed with peer_disconnect_later whose queued packets have all been acknowledged: only
/// ENet's disconnect handshake is left (which a peer that has gone away never completes).
bool peer_told_all(const EnetPeer* peer);
/// Reliable data to the peer is queued or not yet acknowledged (false for a null peer).
bool peer_sending(const EnetPeer* peer);
/// Smoothed round-trip time in milliseconds, as ENet measures it.
std::uint32_t peer_rtt_ms(const EnetPeer* peer);
/// ENet's view of a peer's link: smoothed round trip, its variance, and the packet loss estimate.
struct PeerNet {
  std::uint32_t rtt_us = 0, rtt_var_us = 0, loss_ppm = 0;
};
PeerNet peer_net(const EnetPeer* peer);
/// ENet channels the connection opened (the protocol needs kChannelCount); kChannelCount for an in-process peer.
std::size_t peer_channel_count(const EnetPeer* peer);
/// The peer's IPv4 address (network byte order); 0 for an in-process peer.
std::uint32_t peer_ip(const EnetPeer* peer);
/// "a.b.c.d:port" of the peer.
std::string peer_address(const EnetPeer* peer);
/// A small integer the caller may attach to a peer (ENet's data pointer).
void peer_set_tag(EnetPeer* peer, std::uintptr_t tag);
std::uintptr_t peer_tag(const EnetPeer* peer);
/// Whether a peer is alive is the session layer's to judge, by what it hears (Transport::heard_ns)
/// and within its own bounds. ENet's timeout counts only acknowledgements of reliable commands,
/// its own pings among them, and on a lossy link a run of lost ones would end a live connection
/// (at 10 % loss each way a ping and its acknowledgement fail together 19 % of the time), so it
/// is set to `backstop_ms` flat, well past the session's bounds.
void peer_set_backstop_timeout(EnetPeer* peer, std::uint32_t backstop_ms);
/// The backstop for a session whose own silence bound is `bound_ns`: 30 s, or twice the bound.
inline std::uint32_t backstop_ms(std::int64_t bound_ns) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(2 * bound_ns / 1'000'000, 30'000, 3'600'000));
}

/// Splits "host:port"; false when it is not of that form or the port is out of range.
bool split_host_port(const std::string& text, std::string* host, std::uint16_t* port);

}  // namespace lockstep
