#include "lockstep/transport.hpp"

#include <enet/enet.h>
#include <sodium.h>

#include <arpa/inet.h>
#include <linux/sockios.h>
#include <poll.h>
#include <sys/ioctl.h>
#include <sys/socket.h>
#include <algorithm>
#include <cerrno>
#include <cstddef>
#include <cstdlib>
#include <cstring>
#include <mutex>
#include <utility>

#include "lockstep/clock.hpp"
#include "lockstep/datagram_check.hpp"
#include "lockstep/busiest_sources.hpp"
#include "lockstep/socket_batch.hpp"

namespace lockstep {
namespace {

constexpr int kServerReceiveBuffer = 8 * 1024 * 1024;  // bytes of datagrams the server's socket holds

void ensure_enet() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (enet_initialize() != 0) std::abort();
    std::atexit(enet_deinitialize);
  });
}

// ENet's address (host in network order, port in host order) and the socket API's.
sockaddr_in to_sockaddr(const ENetAddress& a) {
  sockaddr_in s{};
  s.sin_family = AF_INET;
  s.sin_port = htons(a.port);
  s.sin_addr.s_addr = a.host;
  return s;
}
void to_enet(const sockaddr_in& s, ENetAddress* a) {
  a->host = s.sin_addr.s_addr;
  a->port = ntohs(s.sin_port);
}

void apply_limits(ENetHost* host, const TransportLimits& limits) {
  host->maximumPacketSize = limits.max_packet_bytes;
  host->maximumWaitingData = limits.max_waiting_bytes;
}

}  // namespace

class EnetTransport;

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
    return peer->reliableDataInTransit > 0 || !enet_list_empty(&peer->outgoingCommands);
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

  // ENet's two socket calls (see the end of this file), for the socket of the transport being
  // served: datagrams come from its batch, each with its kernel stamp, and go to its queue.
  static int socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count) {
    EnetTransport* self = serving;
    if (!self || self->host_->socket != socket || count != 1 || !address) return plain_receive(socket, address, buffers, count);
    self->stamp_messages();  // of the datagram before: ENet has queued its messages by now
    SocketBatch::Datagram d;
    for (;;) {
      const int r = self->batch_.next(&d);
      if (r <= 0) return r;
      if (d.bytes.size() <= buffers[0].dataLength) break;  // always: ENet's buffer is its largest MTU
    }
    std::memcpy(buffers[0].data, d.bytes.data(), d.bytes.size());
    to_enet(d.from, address);
    self->reading_arrival_ = d.arrived_ns;
    return static_cast<int>(d.bytes.size());
  }
  static int socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count) {
    EnetTransport* self = serving;
    if (self && self->host_->socket == socket && address) {
      std::size_t total = 0;
      for (std::size_t b = 0; b < count; ++b) total += buffers[b].dataLength;
      if (self->batch_.queue(to_sockaddr(*address), {reinterpret_cast<const iovec*>(buffers), count}))
        return static_cast<int>(total);
    }
    return plain_send(socket, address, buffers, count);
  }
  // ENet's own socket calls, for every other socket (unix.c: one datagram a call).
  static int plain_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count) {
    msghdr h{};
    sockaddr_in from{};
    if (address) {
      h.msg_name = &from;
      h.msg_namelen = sizeof from;
    }
    h.msg_iov = reinterpret_cast<iovec*>(buffers);
    h.msg_iovlen = count;
    const ssize_t n = recvmsg(socket, &h, MSG_NOSIGNAL);
    if (n < 0) return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
    if (h.msg_flags & MSG_TRUNC) return -1;
    if (address) to_enet(from, address);
    return static_cast<int>(n);
  }
  static int plain_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count) {
    msghdr h{};
    sockaddr_in to{};
    if (address) {
      to = to_sockaddr(*address);
      h.msg_name = &to;
      h.msg_namelen = sizeof to;
    }
    h.msg_iov = const_cast<iovec*>(reinterpret_cast<const iovec*>(buffers));
    h.msg_iovlen = count;
    const ssize_t n = sendmsg(socket, &h, MSG_NOSIGNAL);
    if (n < 0) return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
    return static_cast<int>(n);
  }

  NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) override {
    ENetAddress address{};
    if (enet_address_set_host(&address, host.c_str()) != 0) {
      if (error) *error = "cannot resolve '" + host + "'";
      return nullptr;
    }
    address.port = port;
    ENetPeer* peer = enet_host_connect(host_, &address, kChannelCount, 0);
    if (!peer) {
      if (error) *error = "cannot start a connection";
      return nullptr;
    }
    queued_ = true;  // the request goes at the end of the round at the latest
    // ENet assumes a 500 ms round trip until its first measurement, so a lost request would wait
    // 500 ms, then 1 s, before it goes again. The request is resent after 200 ms, then every
    // 400 ms (see tend()), until an answer comes; the first acknowledgement replaces the guess.
    peer->roundTripTime = kFirstRoundTripMs;
    peer->roundTripTimeVariance = kFirstRoundTripMs / 4;
    return link(peer);
  }

  // One service of ENet reads the socket until it is empty (or kReceiveBatch datagrams) and queues
  // what it read; the calls after it take the queued events without touching the socket again
  // (no empty read, no second walk over every peer slot), and the round ends when the queue is
  // empty. A service that stopped reading early (at a connection's or a disconnection's event,
  // or a full batch), or that left datagrams in the socket (ENet stops at an empty one, and
  // more may have come meanwhile), is served again before the round ends. What the caller queued
  // during the round goes out at its end, as the next service would have sent it.
  NetEvent poll() override {
    NetEvent out;
    ENetEvent ev;
    int r = 0;
    stamp_messages();  // of the last datagram the service before read
    if (!in_round_) {
      in_round_ = true;
      batch_.begin_round();
    }
    if (draining_) {
      r = serve([&] { return enet_host_check_events(host_, &ev); });
      if (r <= 0) {
        draining_ = false;
        // ENet stops reading at an empty datagram as if the socket were empty, and anyone can
        // send one: what waits behind it is read now, not at the next wake.
        if (!readable()) {
          if (queued_) {
            flush();
            flush();  // a connection closing once its data is out sends its DISCONNECT in the next pass
          }
          in_round_ = false;
          return out;
        }
      }
    }
    if (!draining_) {
      do {  // datagrams read into the batch are taken in this round: the socket no longer shows them
        read_in_service_ = 0;
        r = serve([&] { return enet_host_service(host_, &ev, 0); });
        stamp_messages(r > 0 && ev.type == ENET_EVENT_TYPE_RECEIVE ? &ev : nullptr);
        tend();
      } while (r <= 0 && batch_.pending());
      if (r <= 0) {
        queued_ = false;  // the service sent it
        in_round_ = false;
        return out;
      }
      draining_ = ev.type == ENET_EVENT_TYPE_RECEIVE && read_in_service_ > 0 && read_in_service_ < kReceiveBatch;
    }
    out.peer = link(ev.peer);
    switch (ev.type) {
      case ENET_EVENT_TYPE_CONNECT:
        // ENet's throttle drops unreliable packets when round trips vary, as they do on every real
        // path; play traffic carries its own redundancy, so the throttle never decelerates.
        enet_peer_throttle_configure(ev.peer, ENET_PEER_PACKET_THROTTLE_INTERVAL, ENET_PEER_PACKET_THROTTLE_ACCELERATION, 0);
        ev.peer->packetThrottle = ENET_PEER_PACKET_THROTTLE_SCALE;
        out.type = NetEvent::Type::Connect;
        break;
      case ENET_EVENT_TYPE_DISCONNECT: out.type = NetEvent::Type::Disconnect; break;
      case ENET_EVENT_TYPE_RECEIVE:
        out.type = NetEvent::Type::Receive;
        out.channel = ev.channelID;
        out.holder = {ev.packet, [](void* p) { enet_packet_destroy(static_cast<ENetPacket*>(p)); }};
        out.data = {ev.packet->data, ev.packet->dataLength};
        out.arrived_ns = arrival_of(*ev.packet);
        break;
      default: break;
    }
    return out;
  }

  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override {
    if (!peer) return;  // an in-process peer (tests, fuzzing): nothing to send to
    const enet_uint32 flags = channel == Channel::Control ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED;
    ENetPacket* packet = enet_packet_create(bytes.data(), bytes.size(), flags);
    if (enet_peer_send(static_cast<EnetLink*>(peer)->peer, static_cast<enet_uint8>(channel), packet) != 0)
      enet_packet_destroy(packet);
    queued_ = true;
  }

  void flush() override {
    serve([&] { enet_host_flush(host_); });
    queued_ = false;
  }
  void queued() { queued_ = true; }
  // Datagrams wait to be taken in this round: in the batch, or in the socket unless the round
  // reads no more (a read found it empty, or the round's reads are spent: what waits, or came
  // since, is taken in the next round, which the socket's readiness wakes).
  [[nodiscard]] bool readable() const {
    if (batch_.pending()) return true;
    if (batch_.drained()) return false;
    pollfd p{static_cast<int>(host_->socket), POLLIN, 0};
    return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
  }
  void authenticate(NetPeer* peer, const DatagramKeys& keys, bool speaks_first) override {
    if (!peer) return;
    const std::size_t i = static_cast<EnetLink*>(peer)->index;
    // A side that speaks keyed takes keyed datagrams only. The side that speaks first (the client)
    // does from now on, but for a lone DISCONNECT until the other side is heard keyed: the server
    // sends nothing else it needs in the clear after the challenge, and a keyless message would be
    // one an attacker could have written (§1.1). The other side takes either until it has checked
    // a keyed datagram, and speaks keyed from then on.
    auth_[i] = {keys, host_->peers[i].connectID, true, speaks_first, false};
  }
  [[nodiscard]] bool backlogged() const override { return batch_.spent(); }
  std::string take_drop_sources() override {
    const BusiestSources& best =
        drop_sources_.busiest().second >= batch_.drop_sources().busiest().second ? drop_sources_ : batch_.drop_sources();
    std::string text = best.describe();
    drop_sources_.clear();
    batch_.clear_drop_sources();
    return text;
  }
  [[nodiscard]] bool reliable_in_flight() const override {
    for (std::size_t i = 0; i < host_->peerCount; ++i) {
      const ENetPeer& p = host_->peers[i];
      if (p.state == ENET_PEER_STATE_DISCONNECTED) continue;
      if (p.state != ENET_PEER_STATE_CONNECTED) return true;
      if (!enet_list_empty(&p.sentReliableCommands) || !enet_list_empty(&p.outgoingCommands)) return true;
    }
    return false;
  }
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
  void stamp_messages(const ENetEvent* taken = nullptr) {
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
  [[nodiscard]] std::int64_t arrival_of(const ENetPacket& packet) const {
    return packet.userData ? arrivals_[(reinterpret_cast<std::uintptr_t>(packet.userData) - 1) % kArrivals] : 0;
  }
  [[nodiscard]] NetTraffic traffic() const override {
    const SocketBatch::Counts& c = batch_.counts();
    return {host_->totalSentData, host_->totalReceivedData, host_->totalSentPackets, host_->totalReceivedPackets,
            datagrams_refused_, c.reads, c.writes, c.empty_in, c.oversized_in, datagrams_unknown_, c.overflowed_in};
  }

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
  void tend() {
    const enet_uint32 now_ms = host_->serviceTime;
    if (now_ms - tended_ms_ < kTendEveryMs) return;  // ENet's milliseconds, wrapping
    tended_ms_ = now_ms;
    const std::int64_t now = monotonic_ns();
    for (std::size_t i = 0; i < host_->peerCount; ++i) {
      ENetPeer& p = host_->peers[i];
      if (p.state == ENET_PEER_STATE_DISCONNECTED) {  // most slots, most of the time
        half_open_since_[i] = 0;
        continue;
      }
      if (p.state == ENET_PEER_STATE_ACKNOWLEDGING_CONNECT) {
        if (half_open_since_[i] == 0) {  // new: its request paid for the first answer
          half_open_since_[i] = now;
          handshake_credit_[i] = 0;
        }
        if (now - half_open_since_[i] > kHalfOpenLimitMs * 1'000'000) {
          close_half_open(i);
          continue;
        }
        for_each_sent(p, [](ENetOutgoingCommand& c) { c.roundTripTimeout = kNeverMs; });
        continue;
      }
      half_open_since_[i] = 0;
      if (enet_list_empty(&p.sentReliableCommands)) continue;
      const enet_uint32 cap = std::clamp<enet_uint32>(2 * (p.roundTripTime + 4 * p.roundTripTimeVariance),
                                                      kResendFloorMs, kResendCeilingMs);
      bool changed = false;
      for_each_sent(p, [&](ENetOutgoingCommand& c) {
        if (c.roundTripTimeout > cap) {
          c.roundTripTimeout = cap;
          changed = true;
        }
      });
      if (changed) {
        const auto& first = *reinterpret_cast<const ENetOutgoingCommand*>(enet_list_front(&p.sentReliableCommands));
        p.nextTimeout = first.sentTime + first.roundTripTimeout;
      }
    }
  }
  template <class F>
  static void for_each_sent(ENetPeer& p, F&& f) {
    for (ENetListIterator it = enet_list_begin(&p.sentReliableCommands); it != enet_list_end(&p.sentReliableCommands);
         it = enet_list_next(it))
      f(*reinterpret_cast<ENetOutgoingCommand*>(it));
  }
  // The requester of half-open handshake `i` sent `bytes` more: its answer goes again at once if
  // they pay for it.
  void answer_again(std::size_t i, std::size_t bytes) {
    ENetPeer& p = host_->peers[i];
    handshake_credit_[i] += bytes;
    if (handshake_credit_[i] < kVerifyBytes || enet_list_empty(&p.sentReliableCommands)) return;
    handshake_credit_[i] -= kVerifyBytes;
    for_each_sent(p, [](ENetOutgoingCommand& c) { c.roundTripTimeout = 0; });  // due: ENet resends it
    p.nextTimeout = host_->serviceTime;
  }
  void close_half_open(std::size_t i) {
    enet_peer_reset(&host_->peers[i]);
    half_open_since_[i] = 0;
    ++handshakes_cut_;
  }

  // Kernel receive timestamps of datagrams, taken as ENet reads them (its intercept hook runs once
  // per datagram, inside enet_host_service). The header's peer id says whose datagram it is; a
  // malformed id is ignored here and rejected by ENet itself.
  static thread_local EnetTransport* serving;
  static int ENET_CALLBACK on_datagram(ENetHost* host, ENetEvent*) {
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
  bool on_connect_request(const ENetAddress& from, enet_uint32 connect_id, std::size_t bytes) {
    const std::int64_t now = monotonic_ns();
    for (std::size_t i = 0; i < host_->peerCount; ++i) {
      const ENetPeer& p = host_->peers[i];
      if (p.state != ENET_PEER_STATE_DISCONNECTED && p.connectID == connect_id &&
          (p.address.host != from.host || p.address.port != from.port))
        return false;
    }
    for (std::size_t i = 0; i < host_->peerCount; ++i)
      if (host_->peers[i].state == ENET_PEER_STATE_DISCONNECTED) auth_[i] = Auth{};
    std::size_t free = 0, oldest = host_->peerCount;
    for (std::size_t i = 0; i < host_->peerCount; ++i) {
      const ENetPeer& p = host_->peers[i];
      if (p.state == ENET_PEER_STATE_ACKNOWLEDGING_CONNECT) {
        if (p.address.host == from.host && p.address.port == from.port) {
          if (p.connectID == connect_id) {
            answer_again(i, bytes);
            return true;
          }
          close_half_open(i);
          ++free;
          continue;
        }
        if (half_open_since_[i] == 0) half_open_since_[i] = now;  // first seen half-open now
        if (oldest == host_->peerCount || half_open_since_[i] < half_open_since_[oldest]) oldest = i;
        continue;
      }
      half_open_since_[i] = 0;
      if (p.state == ENET_PEER_STATE_DISCONNECTED) ++free;
    }
    if (free == 0 && oldest != host_->peerCount) close_half_open(oldest);
    return true;
  }

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
  static bool lone_disconnect(std::span<const std::uint8_t> d, std::size_t at) {
    const std::size_t command_at = at + kCheckBytes;
    return d.size() == command_at + sizeof(ENetProtocolDisconnect) &&
           (d[command_at] & ENET_PROTOCOL_COMMAND_MASK) == ENET_PROTOCOL_COMMAND_DISCONNECT;
  }
  bool keyed(std::size_t i) const { return auth_[i].set && auth_[i].connect_id == host_->peers[i].connectID; }

  // Checks the datagram ENet has just read from peer slot `id` (ENET_PROTOCOL_MAXIMUM_PEER_ID:
  // none) and keeps its check field for the checksum hook.
  bool check_received(std::uint16_t id) {
    const std::span<std::uint8_t> d{host_->receivedData, host_->receivedDataLength};
    const std::size_t at = check_field_at(d);
    if (at == 0) return false;
    const bool peer = id != ENET_PROTOCOL_MAXIMUM_PEER_ID;
    const enet_uint32 seed = peer ? host_->peers[id].connectID : 0;
    enet_uint32 field;
    std::memcpy(&field, d.data() + at, kCheckBytes);
    std::memcpy(d.data() + at, &seed, kCheckBytes);
    bool ok = false;
    if (peer && keyed(id)) {
      Auth& a = auth_[id];
      ok = keyed_check(a.keys.receive, d) == field;
      if (ok) a.heard_keyed = a.speak_keyed = true;
      // Not yet keyed from that side; or the server closing a connection whose keyed datagrams
      // it has not heard yet (its pending places full, its join timeout), which goes keyless.
      else if (!a.speak_keyed || (!a.heard_keyed && lone_disconnect(d, at))) ok = keyless_check(d) == field;
    } else {
      ok = keyless_check(d) == field;
    }
    std::memcpy(d.data() + at, &field, kCheckBytes);
    checked_field_ = field;
    return ok;
  }
  static enet_uint32 ENET_CALLBACK datagram_check(const ENetBuffer* buffers, std::size_t count) {
    EnetTransport* self = serving;
    if (!self) return keyless_check(buffers, count);
    if (count == 1 && buffers[0].data == self->host_->receivedData) return self->checked_field_;  // see check_received
    // Sending: the header (the first buffer) ends with the check field, holding the seed.
    if (const Auth* a = self->sending_keyed(buffers[0])) {
      std::size_t total = 0;
      for (std::size_t b = 0; b < count; ++b) total += buffers[b].dataLength;
      if (total <= self->outgoing_.size()) {  // always: ENet's datagrams are at most its MTU
        std::size_t at = 0;
        for (std::size_t b = 0; b < count; ++b) {
          std::memcpy(self->outgoing_.data() + at, buffers[b].data, buffers[b].dataLength);
          at += buffers[b].dataLength;
        }
        return keyed_check(a->keys.send, {self->outgoing_.data(), total});
      }
    }
    return keyless_check(buffers, count);
  }
  // The keys of the connection a datagram with this header is sent on, when it sends keyed.
  const Auth* sending_keyed(const ENetBuffer& header) const {
    if (header.dataLength < kCheckBytes) return nullptr;
    enet_uint32 seed;
    std::memcpy(&seed, static_cast<const std::uint8_t*>(header.data) + header.dataLength - kCheckBytes, kCheckBytes);
    if (seed == 0) return nullptr;
    for (std::size_t i = 0; i < host_->peerCount; ++i)
      if (host_->peers[i].connectID == seed && host_->peers[i].state != ENET_PEER_STATE_DISCONNECTED)
        return keyed(i) && auth_[i].speak_keyed ? &auth_[i] : nullptr;
    return nullptr;
  }

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

void EnetLink::disconnect_later() {
  owner->serve([&] { enet_peer_disconnect_later(peer, 0); });  // may send at once: the owner checks the datagram
  owner->queued();
}

void EnetLink::disconnect_now() {
  owner->serve([&] { enet_peer_disconnect_now(peer, 0); });
}
thread_local EnetTransport* EnetTransport::serving = nullptr;

std::unique_ptr<Transport> Transport::listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                         const TransportLimits& limits, Error* error) {
  ensure_enet();
  ENetAddress address{};
  address.host = ENET_HOST_ANY;
  address.port = port;
  if (!bind.empty() && enet_address_set_host_ip(&address, bind.c_str()) != 0) {
    if (error) *error = {ErrorKind::Usage, "bad bind address '" + bind + "'"};
    return nullptr;
  }
  ENetHost* host = enet_host_create(&address, max_peers, kChannelCount, 0, 0);
  if (!host) {
    if (error) *error = {ErrorKind::Runtime, "cannot listen on UDP port " + std::to_string(port) + " (in use, or not permitted)"};
    return nullptr;
  }
  apply_limits(host, limits);
  // A server's socket buffers more than ENet's 256 KiB: a flood of large datagrams fills that in
  // a few of them, and every player's datagram behind it is dropped by the kernel uncounted.
  // As root the system's bound (net.core.rmem_max) does not apply.
  const int rcvbuf = kServerReceiveBuffer;
  if (setsockopt(static_cast<int>(host->socket), SOL_SOCKET, SO_RCVBUFFORCE, &rcvbuf, sizeof rcvbuf) != 0)
    setsockopt(static_cast<int>(host->socket), SOL_SOCKET, SO_RCVBUF, &rcvbuf, sizeof rcvbuf);
  return std::make_unique<EnetTransport>(host);
}

std::unique_ptr<Transport> Transport::client(const TransportLimits& limits, std::string* error, const std::string& bind) {
  ensure_enet();
  ENetAddress address{};
  address.host = ENET_HOST_ANY;
  if (!bind.empty() && enet_address_set_host_ip(&address, bind.c_str()) != 0) {
    if (error) *error = "bad bind address '" + bind + "'";
    return nullptr;
  }
  ENetHost* host = enet_host_create(bind.empty() ? nullptr : &address, 1, kChannelCount, 0, 0);
  if (!host) {
    if (error) *error = "cannot create a UDP socket";
    return nullptr;
  }
  apply_limits(host, limits);
  // Connection ids from a random start (docs/PROTOCOL.md §1.1): ENet's own repeats within a second.
  host->randomSeed = limits.connect_id_seed != 0 ? limits.connect_id_seed
                     : sodium_init() >= 0       ? randombytes_random()
                                                : host->randomSeed;
  return std::make_unique<EnetTransport>(host);
}

Network& udp_network() {
  struct Udp final : Network {
    std::unique_ptr<Transport> listen(const std::string& bind, std::uint16_t port, std::size_t max_peers,
                                      const TransportLimits& limits, Error* error) override {
      return Transport::listen(bind, port, max_peers, limits, error);
    }
    std::unique_ptr<Transport> client(const TransportLimits& limits, std::string* error, const std::string& bind) override {
      return Transport::client(limits, error, bind);
    }
  };
  static Udp udp;
  return udp;
}

}  // namespace lockstep

// ENet's socket layer calls these two through its library's symbol table, so the definitions here
// take their place in every program this library is part of (as a program's own malloc takes the
// C library's). For the socket of a transport being served they read and write in batches
// (socket_batch.hpp); for every other socket they do what ENet's own do.
static_assert(sizeof(ENetBuffer) == sizeof(iovec) && offsetof(ENetBuffer, data) == offsetof(iovec, iov_base) &&
              offsetof(ENetBuffer, dataLength) == offsetof(iovec, iov_len));
extern "C" __attribute__((visibility("default"))) int enet_socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, size_t count) {
  return lockstep::EnetTransport::socket_receive(socket, address, buffers, count);
}
extern "C" __attribute__((visibility("default"))) int enet_socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, size_t count) {
  return lockstep::EnetTransport::socket_send(socket, address, buffers, count);
}
