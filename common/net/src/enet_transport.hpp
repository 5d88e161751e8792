// lockstep's ENet transport inside: an ENet host and a handle for each of its peer slots
// (EnetTransport, EnetLink), shared by its four files, one job each:
//   transport.cpp            the host and its events: rounds of service, sending, how peers resend,
//                            half-open handshakes, Transport::listen() and client()
//   enet_socket_calls.cpp    ENet's two socket calls as a program replaces them when it asks
//                            (lockstep/enet_batching.h): batches (socket_batch.hpp) for the
//                            socket being served
//   enet_datagram_check.cpp  the datagram check on every datagram in and out (PROTOCOL.md §1.1)
//   enet_arrivals.cpp        ENet's intercept hook: each datagram's kernel arrival stamp, given to
//                            the messages it brought; unknown and refused datagrams counted
#pragma once

#include <enet/enet.h>

#include <arpa/inet.h>
#include <array>
#include <atomic>
#include <cstddef>
#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/busiest_sources.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/socket_batch.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

/// Calls of ENet's socket calls that reached this library's replacements (enet_socket_calls.cpp).
extern std::atomic<std::uint64_t> g_replaced_socket_calls;
/// What the linked ENet's enet_socket_receive() returns for a truncated datagram: -1 up to 1.3.17,
/// -2 from 1.3.18 (which skips such a datagram instead of failing the service).
int truncated_receive_result();

// ENet's address (host in network order, port in host order) and the socket API's.
inline sockaddr_in to_sockaddr(const ENetAddress& a) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(a.port);
  s.sin_addr.s_addr = a.host;
  return s;
}
inline void to_enet(const sockaddr_in& s, ENetAddress* a) {
  a->host = s.sin_addr.s_addr;
  a->port = ntohs(s.sin_port);
}

class EnetTransport;

/// Whether a peer has commands queued that ENet has not sent yet. ENet 1.3.18 keeps reliable ones
/// in a list of their own.
inline bool commands_queued(const ENetPeer& p) {
#if ENET_VERSION >= ENET_VERSION_CREATE(1, 3, 18)
  if (!enet_list_empty(&p.outgoingSendReliableCommands)) return true;
#endif
  return !enet_list_empty(&p.outgoingCommands);
}

// One ENet peer slot, the handle sessions hold. ENet reuses a slot for a later connection, and so
// does its handle.
class EnetLink final : public NetPeer {
 public:
  ENetPeer* peer = nullptr;
  std::size_t index = 0;
  EnetTransport* owner = nullptr;

  void disconnect_later() override;  // queued: the owner sends it at the end of its round
  void disconnect_now() override;  // sends at once: the owner checks the datagram
  void reset() override { enet_peer_reset(peer); }
  [[nodiscard]] bool told_all() const override {
    return peer->state == ENET_PEER_STATE_DISCONNECTING || peer->state == ENET_PEER_STATE_ACKNOWLEDGING_DISCONNECT ||
           peer->state == ENET_PEER_STATE_ZOMBIE || peer->state == ENET_PEER_STATE_DISCONNECTED;
  }
  [[nodiscard]] bool sending() const override {
    // Data, not ENet's own pings (reliable too, but without data).
    return peer->reliableDataInTransit > 0 || commands_queued(*peer);
  }
  [[nodiscard]] PeerNet net() const override {
    PeerNet n;
    n.rtt_us = peer->roundTripTime * 1000;
    n.rtt_var_us = peer->roundTripTimeVariance * 1000;
    n.loss_ppm = static_cast<std::uint32_t>(std::uint64_t{peer->packetLoss} * 1'000'000 / ENET_PEER_PACKET_LOSS_SCALE);
    return n;
  }
  [[nodiscard]] std::size_t channel_count() const override { return peer->channelCount; }
  [[nodiscard]] std::uint32_t ip() const override { return peer->address.host; }
  [[nodiscard]] std::string address() const override {
    char ip[64] = "?";
    enet_address_get_host_ip(&peer->address, ip, sizeof ip);
    return std::string(ip) + ":" + std::to_string(peer->address.port);
  }
  void set_tag(std::uintptr_t tag) override { peer->data = reinterpret_cast<void*>(tag); }
  [[nodiscard]] std::uintptr_t tag() const override { return reinterpret_cast<std::uintptr_t>(peer->data); }
  void set_backstop_timeout(std::uint32_t ms) override { enet_peer_timeout(peer, 0, ms, ms); }
};

// An ENet host and a handle for each of its peer slots.
class EnetTransport final : public Transport {
 public:
  explicit EnetTransport(ENetHost* host)
      : host_(host), batch_(static_cast<int>(host->socket)), half_open_since_(host->peerCount, 0), handshake_credit_(host->peerCount, 0), links_(host->peerCount),
        heard_(host->peerCount, 0), auth_(host->peerCount) {
    host_->intercept = &EnetTransport::on_datagram;
    host_->checksum = &EnetTransport::datagram_check;
    for (std::size_t i = 0; i < host->peerCount; ++i) {
      links_[i].peer = &host->peers[i];
      links_[i].index = i;
      links_[i].owner = this;
    }
  }
  ~EnetTransport() override { enet_host_destroy(host_); }

  // Runs `f` (an ENet call that may send or receive) with this transport as the one whose
  // datagrams the hooks check and whose socket is read and written in batches; what `f` sent
  // goes out when it returns.
  template <class F>
  auto serve(F&& f) {
    struct Guard {
      EnetTransport* self;
      EnetTransport* before;
      ~Guard() {
        serving = before;
        self->batch_.write();
      }
    } guard{this, serving};
    serving = this;
    return f();
  }

  // ENet's two socket calls (enet_socket_calls.cpp), for the socket of the transport being
  // served: datagrams come from its batch, each with its kernel stamp, and go to its queue.
  static int socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count);
  static int socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count);
  // ENet's own socket calls, for every other socket (unix.c: one datagram a call).
  static int plain_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count);
  static int plain_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count);

  NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) override;

  // One service of ENet reads the socket until it is empty (or kReceiveBatch datagrams) and queues
  // what it read; the calls after it take the queued events without touching the socket again
  // (no empty read, no second walk over every peer slot), and the round ends when the queue is
  // empty. A service that stopped reading early (at a connection's or a disconnection's event,
  // or a full batch), or that left datagrams in the socket (ENet stops at an empty one, and
  // more may have come meanwhile), is served again before the round ends. What the caller queued
  // during the round goes out at its end, as the next service would have sent it.
  NetEvent poll() override;

  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override;

  void flush() override;
  void queued() { queued_ = true; }
  // Datagrams wait to be taken in this round: in the batch, or in the socket unless the round
  // reads no more (a read found it empty, or the round's reads are spent: what waits, or came
  // since, is taken in the next round, which the socket's readiness wakes).
  [[nodiscard]] bool readable() const;
  void authenticate(NetPeer* peer, const DatagramKeys& keys, bool speaks_first) override;
  [[nodiscard]] bool backlogged() const override { return batch_.spent(); }
  std::string take_drop_sources() override;
  [[nodiscard]] bool reliable_in_flight() const override;
  [[nodiscard]] int fd() const override { return static_cast<int>(host_->socket); }
  [[nodiscard]] std::int64_t heard_ns(const NetPeer* peer) const override {
    return peer ? heard_[static_cast<const EnetLink*>(peer)->index] : 0;
  }
  [[nodiscard]] std::uint16_t port() const override {
    ENetAddress a{};
    enet_socket_get_address(host_->socket, &a);
    return a.port;
  }
  [[nodiscard]] std::uint64_t handshakes_cut() const override { return handshakes_cut_; }

  // One service reads many datagrams, and a peer may have sent several of them, before its events
  // are taken: each message is given the arrival of the datagram it came in (of the datagram that
  // completed it, for a reliable message that waited for an earlier one). ENet queues a peer's
  // messages for delivery as it reads each datagram, so the messages at the end of the peer's
  // queue without a stamp are the ones the datagram just read brought; when the service that
  // read it hands out its first message (`taken`, a receive event), that one has already left the
  // queue. A packet's user data holds its place (plus one) in a ring of arrivals.
  void stamp_messages(const ENetEvent* taken = nullptr);
  [[nodiscard]] std::int64_t arrival_of(const ENetPacket& packet) const;
  [[nodiscard]] NetTraffic traffic() const override;

 private:
  EnetLink* link(ENetPeer* peer) { return &links_[static_cast<std::size_t>(peer - host_->peers)]; }

  // How ENet's peers resend, applied after each service (ENet has no setting for either rule):
  // - A connection's reliable messages are resent after at most twice its retransmission timeout
  //   (round trip plus four variances), and never less often than once a second. ENet doubles
  //   the timeout at each loss without end, so at 40 % loss one message in forty waited 8 s or
  //   more; the bound keeps a join, a rejoin and a lost command within a few seconds, and the
  //   messages are few and small.
  // - A half-open handshake (a request answered, the answer not yet acknowledged) never resends
  //   on its own: its answer goes again only when the requester sends again, and only while the
  //   bytes it sent cover the bytes of the answers (handshake_credit_), so a request from a forged
  //   source draws no more bytes than it carried. It is closed after kHalfOpenLimitMs.
  void tend();
  template <class F>
  static void for_each_sent(ENetPeer& p, F&& f) {
    for (ENetListIterator it = enet_list_begin(&p.sentReliableCommands); it != enet_list_end(&p.sentReliableCommands);
         it = enet_list_next(it))
      f(*reinterpret_cast<ENetOutgoingCommand*>(it));
  }
  // The requester of half-open handshake `i` sent `bytes` more: its answer goes again at once if
  // they pay for it.
  void answer_again(std::size_t i, std::size_t bytes);
  void close_half_open(std::size_t i);

  // Kernel receive timestamps of datagrams, taken as ENet reads them (its intercept hook runs once
  // per datagram, inside enet_host_service). The header's peer id says whose datagram it is; a
  // malformed id is ignored here and rejected by ENet itself.
  static thread_local EnetTransport* serving;
  static int ENET_CALLBACK on_datagram(ENetHost* host, ENetEvent*);

  // A connection request arrives from `from`. ENet gives it a free peer slot, where it waits
  // half-open until the requester acknowledges ENet's answer; a requester that never does (a
  // spoofed source, or one that sends requests and nothing else) would hold the slot until ENet's
  // timeout, and enough of them hold every slot, so that no player can connect or rejoin. When no
  // slot is free the request takes the place of the oldest half-open one. An honest handshake
  // completes within a round trip, so a burst of requests that are never completed keeps nobody
  // out; a flood of more than the slots in every round trip still would.
  //
  // A request that comes again (same source, same connection id: its answer was lost) is answered
  // again on its slot (answer_again); a new request from the source of a half-open one replaces
  // it, as the requester has given that one up.
  //
  // A connection id is the key to a connection's datagram keys when a datagram is sent
  // (datagram_check), so a request that names the id of another source's connection is refused
  // (false: ENet never reads it). Ids are random: an honest client that meets one tries again.
  //
  // The new connection takes a slot that holds none (DISCONNECTED): whatever keys a connection
  // before it had there are forgotten first, so a new connection never inherits them, even one
  // that brings the same id.
  bool on_connect_request(const ENetAddress& from, enet_uint32 connect_id, std::size_t bytes);

  // The datagram check (docs/PROTOCOL.md §1.1, datagram_check.hpp). ENet calls its checksum hook
  // for each datagram it sends, and for each it receives after putting the seed (the connection
  // id, or 0 before the connection has one) in the check field. The hook cannot try both forms
  // on a received datagram, having lost the field's value, so received datagrams are checked
  // here, in the intercept hook that sees them first; the hook then confirms the field.
  struct Auth {
    DatagramKeys keys;
    enet_uint32 connect_id = 0;  // the connection they belong to: the slot may hold a later one
    bool set = false, speak_keyed = false, heard_keyed = false;
  };
  // A datagram of one DISCONNECT command and nothing else (ENet's disconnect at once: its queues,
  // acknowledgements included, are dropped first), its check field at `at`.
  static bool lone_disconnect(std::span<const std::uint8_t> d, std::size_t at);
  bool keyed(std::size_t i) const { return auth_[i].set && auth_[i].connect_id == host_->peers[i].connectID; }

  // Checks the datagram ENet has just read from peer slot `id` (ENET_PROTOCOL_MAXIMUM_PEER_ID:
  // none) and keeps its check field for the checksum hook.
  bool check_received(std::uint16_t id);
  static enet_uint32 ENET_CALLBACK datagram_check(const ENetBuffer* buffers, std::size_t count);
  // The keys of the connection a datagram with this header is sent on, when it sends keyed.
  const Auth* sending_keyed(const ENetBuffer& header) const;

  static constexpr enet_uint32 kFirstRoundTripMs = 100;   // a client's guess before its first measurement
  static constexpr enet_uint32 kResendFloorMs = 100;      // bounds of the longest wait before a resend
  static constexpr enet_uint32 kResendCeilingMs = 1000;
  static constexpr enet_uint32 kNeverMs = 3'600'000;      // a half-open answer's own timer: never
  static constexpr std::int64_t kHalfOpenLimitMs = 5000;  // a client gives up on one after 3 s
  static constexpr enet_uint32 kTendEveryMs = 10;
  static constexpr std::size_t kReceiveBatch = 256;  // ENet reads at most this many datagrams in one service
  // ENet's answer to a connection request: its header with the sent time and the check, and the command.
  static constexpr std::size_t kVerifyBytes = 2 * sizeof(enet_uint16) + kCheckBytes + sizeof(ENetProtocolVerifyConnect);

  ENetHost* host_;
  SocketBatch batch_;                    // the socket, read and written in batches
  std::int64_t reading_arrival_ = -1;    // the stamp of the datagram ENet is reading, from the batch (-1: none)
  bool in_round_ = false;                // poll() is in a round (it has not returned None since it began)
  enet_uint32 tended_ms_ = 0;
  std::vector<std::int64_t> half_open_since_;  // by ENet peer index: when first seen half-open (0: not)
  std::vector<std::size_t> handshake_credit_;  // by ENet peer index: bytes a half-open requester sent, not yet answered
  std::uint64_t handshakes_cut_ = 0;
  std::vector<EnetLink> links_;        // by ENet peer index
  static constexpr std::size_t kArrivals = 1024;  // more than the messages that wait to be taken
  std::array<std::int64_t, kArrivals> arrivals_{};  // arrivals of datagrams, by packet user data (stamp_messages)
  std::uint64_t next_arrival_ = 0;
  struct {
    std::int64_t peer = -1;  // ENet peer index of the datagram read last, whose messages are not yet stamped
    std::int64_t arrived = 0;
  } stamping_;
  std::vector<std::int64_t> heard_;    // by ENet peer index: the latest datagram's arrival, stamped or read
  std::vector<Auth> auth_;             // by ENet peer index: the datagram keys
  enet_uint32 checked_field_ = 0;      // the check field of the datagram check_received passed
  bool draining_ = false;              // events the last service queued are being taken (see poll())
  bool queued_ = false;                // something was queued to send since the last service or flush
  std::size_t read_in_service_ = 0;    // datagrams the current service has read
  std::uint64_t datagrams_refused_ = 0;
  BusiestSources drop_sources_;  // of the datagrams dropped since take_drop_sources()
  std::uint64_t datagrams_unknown_ = 0;  // naming no connection of this host
  std::array<std::uint8_t, ENET_PROTOCOL_MAXIMUM_MTU> outgoing_{};  // a datagram being sent, in one piece
};

}  // namespace lockstep
