// The transport the sessions speak through: peers, events and the few calls sessions need, with
// ENet over UDP behind it in the executables (transport.cpp and the files enet_transport.hpp names) and an in-process network in tests.
#pragma once

#include <algorithm>
#include <array>
#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <vector>

#include "lockstep/error.hpp"
#include "lockstep/net_types.hpp"

namespace lockstep {

/// ENet channels.
enum class Channel : std::uint8_t {
  Control = 0,  ///< reliable, ordered
  Play = 1,     ///< unreliable, unsequenced: every play message is tick-numbered and redundant, so one
                ///< that arrives after a newer one is still used, not dropped
};
inline constexpr std::size_t kChannelCount = 2;

/// ENet's view of a peer's link: smoothed round trip, its variance, and the packet loss estimate.
struct PeerNet {
  std::uint32_t rtt_us = 0, rtt_var_us = 0, loss_ppm = 0;
};

/// One connection of a transport, owned by it: the handle a session keeps for a peer. A
/// transport may hand the same handle out again for a later connection once this one has
/// ended with a Disconnect event, a reset or a disconnect_now.
class NetPeer {
 public:
  virtual void disconnect_later() = 0;  ///< after queued packets are sent
  virtual void disconnect_now() = 0;    ///< at once, no acknowledgement awaited; no event follows
  virtual void reset() = 0;             ///< forget the peer without telling it; no event follows
  /// Closed with disconnect_later and every queued packet acknowledged: only the disconnect
  /// handshake is left (which a peer that has gone away never completes).
  [[nodiscard]] virtual bool told_all() const = 0;
  /// Reliable data to the peer is queued or not yet acknowledged.
  [[nodiscard]] virtual bool sending() const = 0;
  [[nodiscard]] virtual PeerNet net() const = 0;
  /// Channels the connection opened (the protocol needs kChannelCount).
  [[nodiscard]] virtual std::size_t channel_count() const = 0;
  /// The peer's IPv4 address (network byte order).
  [[nodiscard]] virtual std::uint32_t ip() const = 0;
  /// "a.b.c.d:port" of the peer.
  [[nodiscard]] virtual std::string address() const = 0;
  /// A small integer the session attaches to the connection.
  virtual void set_tag(std::uintptr_t tag) = 0;
  [[nodiscard]] virtual std::uintptr_t tag() const = 0;
  /// The transport's own silence bound, a backstop behind the session's (see backstop_ms).
  virtual void set_backstop_timeout(std::uint32_t ms) = 0;
  /// The peer came through the WebSocket door: one ordered, reliable stream carries both
  /// channels, and TLS (wss://) protects it in place of sealed messages (docs/PROTOCOL.md §17).
  [[nodiscard]] virtual bool stream() const { return false; }

 protected:
  NetPeer() = default;
  ~NetPeer() = default;
  NetPeer(const NetPeer&) = default;
  NetPeer& operator=(const NetPeer&) = default;
};

/// The keys that authenticate one connection's datagrams (docs/PROTOCOL.md §1.1): SipHash-2-4
/// keys, one for each direction.
struct DatagramKeys {
  std::array<std::uint8_t, 16> send{}, receive{};
};

/// One received event. `data` is valid until the event is destroyed.
struct NetEvent {
  enum class Type { None, Connect, Disconnect, Receive } type = Type::None;
  NetPeer* peer = nullptr;
  std::uint8_t channel = 0;
  std::span<const std::uint8_t> data;
  /// Receive: when the datagram carrying it reached the socket (monotonic ns, from the kernel's
  /// receive timestamp), so a caller that reads its socket late still knows how early it came.
  /// 0 when the kernel gave no timestamp.
  std::int64_t arrived_ns = 0;
  /// What holds `data`: released with the event.
  std::unique_ptr<void, void (*)(void*)> holder{nullptr, [](void*) {}};
};

/// A transport: one endpoint of the network, server or client side, that the sessions read and
/// write through. ENet over UDP is the one the executables use (listen(), client()); the tests
/// drive sessions through an in-process one with simulated time. Not copyable; destroying it
/// closes the endpoint.
class Transport {
 public:
  /// An ENet host listening on `bind` ("" = all addresses) and `port` (0 = any free port).
  static std::unique_ptr<Transport> listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                         const TransportLimits& limits, Error* error);
  /// An ENet host that can make one outgoing connection, from `bind` ("" = any local address).
  static std::unique_ptr<Transport> client(const TransportLimits& limits, std::string* error, const std::string& bind = "");
  /// Whether ENet's socket calls reach this library's replacements in this process, which read
  /// and write a transport's socket in batches with kernel arrival stamps (enet_socket_calls.cpp).
  /// Checked once, by servicing a loopback host: a static ENet, -Bsymbolic-functions or another
  /// load order leaves ENet calling its own. Off as well when the ENet linked at run time is not
  /// the version the library was built against (`why` says which). Without batching, ENet reads
  /// one datagram a call and the arrival stamps come from SIOCGSTAMPNS: sessions work the same.
  static bool enet_batching(std::string* why = nullptr);
  virtual ~Transport() = default;
  Transport() = default;
  Transport(const Transport&) = delete;
  Transport& operator=(const Transport&) = delete;

  /// Starts connecting to host:port; nullptr when the address does not resolve.
  virtual NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) = 0;
  /// Returns the next event without blocking (and sends what is queued); Type::None when there is none.
  /// Call it until it returns None: the events one read of the socket brought come first, without
  /// reading it again, and None ends that round; the next call reads the socket anew.
  virtual NetEvent poll() = 0;
  /// Queues `bytes` to `peer` on `channel`; reliability follows the channel.
  virtual void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) = 0;
  /// Sends everything queued now.
  virtual void flush() = 0;
  /// The socket, for waiting with poll(2); -1 when there is none (an in-process transport).
  [[nodiscard]] virtual int fd() const = 0;
  /// True while a peer is connecting or disconnecting, or reliable data waits to be sent or
  /// acknowledged: then the transport needs serving promptly to make progress.
  [[nodiscard]] virtual bool reliable_in_flight() const = 0;
  /// True when the last service left datagrams on the socket unread (its round's reads were spent,
  /// as under a flood): the caller should serve it again as soon as it is readable, not sleep to
  /// its next tick, or the kernel's buffer fills and drops players' datagrams with the flood's.
  [[nodiscard]] virtual bool backlogged() const { return false; }
  /// "the most from ADDRESS (at least N)" of the datagrams dropped unread since the last call
  /// ("" when none stands out), and a new window begins: for one log line a window.
  virtual std::string take_drop_sources() { return ""; }
  /// When the latest datagram from `peer`'s address arrived (monotonic ns; 0: none yet). Any
  /// datagram counts, the transport's own pings and acknowledgements too: the peer is alive and
  /// serving its socket, even while it has nothing of its own to say (a server waiting in the lobby).
  [[nodiscard]] virtual std::int64_t heard_ns(const NetPeer* peer) const = 0;
  /// The bound port.
  [[nodiscard]] virtual std::uint16_t port() const = 0;
  /// Total bytes and datagrams sent and received (UDP payloads, the transport's headers included).
  [[nodiscard]] virtual NetTraffic traffic() const = 0;
  /// From now on `peer`'s datagrams may carry a keyed check (docs/PROTOCOL.md §1.1). A side that
  /// `speaks_first` sends keyed at once; the other sends keyed once a keyed datagram from the peer
  /// has verified. Each side takes the keyless check from the peer only until then. A later
  /// connection on the same handle starts keyless again.
  virtual void authenticate(NetPeer* peer, const DatagramKeys& keys, bool speaks_first) {
    (void)peer, (void)keys, (void)speaks_first;
  }
  /// Half-open connection requests closed to make room for a new one (none by default).
  [[nodiscard]] virtual std::uint64_t handshakes_cut() const { return 0; }
  /// Whether `peer` is one of this transport's (a joined pair asks its second transport).
  [[nodiscard]] virtual bool owns(const NetPeer* peer) const { return peer != nullptr; }
  /// The WebSocket door's port and counters (0 and zeros without one).
  [[nodiscard]] virtual std::uint16_t websocket_port() const { return 0; }
  [[nodiscard]] virtual DoorStats door_stats() const { return {}; }
};

/// Where a session gets its transports: ENet over UDP (udp_network()) in the executables, an
/// in-process network with simulated time in the tests.
class Network {
 public:
  virtual std::unique_ptr<Transport> listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                            const TransportLimits& limits, Error* error) = 0;
  virtual std::unique_ptr<Transport> client(const TransportLimits& limits, std::string* error, const std::string& bind) = 0;

 protected:
  Network() = default;
  ~Network() = default;
  Network(const Network&) = default;
  Network& operator=(const Network&) = default;
};
/// ENet over UDP: Transport::listen and Transport::client.
Network& udp_network();

/// One transport over two (transport_pair.cpp): events from both in turn, each peer's sends to
/// the transport that owns it (Transport::owns), fd() ready when either is; port() is the first's.
std::unique_ptr<Transport> join_transports(std::unique_ptr<Transport> first, std::unique_ptr<Transport> second);

/// Peer helpers. Sending to, disconnecting or naming a null peer (an in-process test peer) is a no-op.
inline void peer_disconnect_later(NetPeer* peer) {
  if (peer) peer->disconnect_later();
}
inline void peer_disconnect_now(NetPeer* peer) {
  if (peer) peer->disconnect_now();
}
inline void peer_reset(NetPeer* peer) {
  if (peer) peer->reset();
}
inline bool peer_stream(const NetPeer* peer) { return peer && peer->stream(); }
inline bool peer_told_all(const NetPeer* peer) { return peer && peer->told_all(); }
inline bool peer_sending(const NetPeer* peer) { return peer && peer->sending(); }
inline PeerNet peer_net(const NetPeer* peer) { return peer ? peer->net() : PeerNet{}; }
/// Smoothed round-trip time in milliseconds.
inline std::uint32_t peer_rtt_ms(const NetPeer* peer) { return peer_net(peer).rtt_us / 1000; }
/// kChannelCount for an in-process peer.
inline std::size_t peer_channel_count(const NetPeer* peer) { return peer ? peer->channel_count() : kChannelCount; }
/// 0 for an in-process peer.
inline std::uint32_t peer_ip(const NetPeer* peer) { return peer ? peer->ip() : 0; }
inline std::string peer_address(const NetPeer* peer) { return peer ? peer->address() : "in-process"; }
inline void peer_set_tag(NetPeer* peer, std::uintptr_t tag) {
  if (peer) peer->set_tag(tag);
}
inline std::uintptr_t peer_tag(const NetPeer* peer) { return peer ? peer->tag() : 0; }
/// Whether a peer is alive is the session layer's to judge, by what it hears (Transport::heard_ns)
/// and within its own bounds. ENet's timeout counts only acknowledgements of reliable commands,
/// its own pings among them, and on a lossy link a run of lost ones would end a live connection
/// (at 10 % loss each way a ping and its acknowledgement fail together 19 % of the time), so it
/// is set to `backstop_ms` flat, well past the session's bounds.
inline void peer_set_backstop_timeout(NetPeer* peer, std::uint32_t backstop_ms) {
  if (peer) peer->set_backstop_timeout(backstop_ms);
}
/// The backstop for a session whose own silence bound is `bound_ns`: 30 s, or twice the bound.
inline std::uint32_t backstop_ms(std::int64_t bound_ns) {
  return static_cast<std::uint32_t>(std::clamp<std::int64_t>(2 * bound_ns / 1'000'000, 30'000, 3'600'000));
}

/// Splits "host:port"; false when it is not of that form or the port is out of range.
bool split_host_port(const std::string& text, std::string* host, std::uint16_t* port);

}  // namespace lockstep
