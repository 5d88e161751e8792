// The ENet host and its events (enet_transport.hpp says which file holds which job).
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
#include "enet_transport.hpp"

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

std::string version_text(ENetVersion v) {
  return std::to_string(ENET_VERSION_GET_MAJOR(v)) + "." + std::to_string(ENET_VERSION_GET_MINOR(v)) + "." +
         std::to_string(ENET_VERSION_GET_PATCH(v));
}

void apply_limits(ENetHost* host, const TransportLimits& limits) {
  host->maximumPacketSize = limits.max_packet_bytes;
  host->maximumWaitingData = limits.max_waiting_bytes;
}

}  // namespace

NetPeer* EnetTransport::connect(const std::string& host, std::uint16_t port, std::string* error) {
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

NetEvent EnetTransport::poll() {
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

void EnetTransport::send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) {
  if (!peer) return;  // an in-process peer (tests, fuzzing): nothing to send to
  const enet_uint32 flags = channel == Channel::Control ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED;
  ENetPacket* packet = enet_packet_create(bytes.data(), bytes.size(), flags);
  if (enet_peer_send(static_cast<EnetLink*>(peer)->peer, static_cast<enet_uint8>(channel), packet) != 0)
    enet_packet_destroy(packet);
  queued_ = true;
}

void EnetTransport::flush() {
  serve([&] { enet_host_flush(host_); });
  queued_ = false;
}

bool EnetTransport::readable() const {
  if (batch_.pending()) return true;
  if (batch_.drained()) return false;
  pollfd p{static_cast<int>(host_->socket), POLLIN, 0};
  return ::poll(&p, 1, 0) > 0 && (p.revents & POLLIN) != 0;
}

void EnetTransport::authenticate(NetPeer* peer, const DatagramKeys& keys, bool speaks_first) {
  if (!peer) return;
  const std::size_t i = static_cast<EnetLink*>(peer)->index;
  // A side that speaks keyed takes keyed datagrams only. The side that speaks first (the client)
  // does from now on, but for a lone DISCONNECT until the other side is heard keyed: the server
  // sends nothing else it needs in the clear after the challenge, and a keyless message would be
  // one an attacker could have written (§1.1). The other side takes either until it has checked
  // a keyed datagram, and speaks keyed from then on.
  auth_[i] = {keys, host_->peers[i].connectID, true, speaks_first, false};
}

std::string EnetTransport::take_drop_sources() {
  const BusiestSources& best =
      drop_sources_.busiest().second >= batch_.drop_sources().busiest().second ? drop_sources_ : batch_.drop_sources();
  std::string text = best.describe();
  drop_sources_.clear();
  batch_.clear_drop_sources();
  return text;
}

bool EnetTransport::reliable_in_flight() const {
  for (std::size_t i = 0; i < host_->peerCount; ++i) {
    const ENetPeer& p = host_->peers[i];
    if (p.state == ENET_PEER_STATE_DISCONNECTED) continue;
    if (p.state != ENET_PEER_STATE_CONNECTED) return true;
    if (!enet_list_empty(&p.sentReliableCommands) || commands_queued(p)) return true;
  }
  return false;
}

NetTraffic EnetTransport::traffic() const {
  const SocketBatch::Counts& c = batch_.counts();
  return {host_->totalSentData, host_->totalReceivedData, host_->totalSentPackets, host_->totalReceivedPackets,
          datagrams_refused_, c.reads, c.writes, c.empty_in, c.oversized_in, datagrams_unknown_, c.overflowed_in};
}

void EnetTransport::tend() {
  const enet_uint32 now_ms = host_->serviceTime;
  if (now_ms - tended_ms_ < kTendEveryMs) return;  // ENet's milliseconds, wrapping
  tended_ms_ = now_ms;
  const std::int64_t now = monotonic_ns();
  for (std::size_t i = 0; i < host_->peerCount; ++i) {
    ENetPeer& p = host_->peers[i];
    if (p.state == ENET_PEER_STATE_DISCONNECTED) {  // most slots, most of the time
      if (half_open_since_[i] != 0) half_open_since_[i] = 0;  // (written only when it changes: a line kept clean)
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
    if (half_open_since_[i] != 0) half_open_since_[i] = 0;
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

void EnetTransport::answer_again(std::size_t i, std::size_t bytes) {
  ENetPeer& p = host_->peers[i];
  handshake_credit_[i] += bytes;
  if (handshake_credit_[i] < kVerifyBytes || enet_list_empty(&p.sentReliableCommands)) return;
  handshake_credit_[i] -= kVerifyBytes;
  for_each_sent(p, [](ENetOutgoingCommand& c) { c.roundTripTimeout = 0; });  // due: ENet resends it
  p.nextTimeout = host_->serviceTime;
}

void EnetTransport::close_half_open(std::size_t i) {
  enet_peer_reset(&host_->peers[i]);
  half_open_since_[i] = 0;
  ++handshakes_cut_;
}

bool EnetTransport::on_connect_request(const ENetAddress& from, enet_uint32 connect_id, std::size_t bytes) {
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

bool Transport::enet_batching(std::string* why) {
  static const std::pair<bool, std::string> checked = [] {
    ensure_enet();
    // Built against one ENet, run with another: the replacements read ENet's structs and return
    // its codes as the built-against version has them, so they stand aside.
    if (enet_linked_version() != ENET_VERSION)
      return std::pair{false, "ENet " + version_text(enet_linked_version()) + " is linked, lockstep was built against " +
                                  version_text(ENET_VERSION)};
    ENetAddress address{};
    enet_address_set_host_ip(&address, "127.0.0.1");
    ENetHost* probe = enet_host_create(&address, 1, kChannelCount, 0, 0);
    if (!probe) return std::pair{false, std::string("no UDP socket to check with")};
    const std::uint64_t before = g_replaced_socket_calls.load();
    ENetEvent ev;
    enet_host_service(probe, &ev, 0);  // reads the (empty) socket once, through whichever call is bound
    const bool reached = g_replaced_socket_calls.load() != before;
    enet_host_destroy(probe);
    return std::pair{reached, std::string(reached ? "" : "ENet calls its own socket functions: the program does not define them "
                                                       "(lockstep/enet_batching.h), or ENet binds them inside itself "
                                                       "(a static ENet, -Bsymbolic-functions)")};
  }();
  if (why) *why = checked.second;
  return checked.first;
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

