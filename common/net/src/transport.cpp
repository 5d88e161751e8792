#include "lockstep/transport.hpp"

#include <enet/enet.h>

#include <linux/sockios.h>
#include <sys/ioctl.h>
#include <cstdlib>
#include <mutex>

#include "lockstep/clock.hpp"

namespace lockstep {
namespace {

void ensure_enet() {
  static std::once_flag once;
  std::call_once(once, [] {
    if (enet_initialize() != 0) std::abort();
    std::atexit(enet_deinitialize);
  });
}

void apply_limits(ENetHost* host, const TransportLimits& limits) {
  host->maximumPacketSize = limits.max_packet_bytes;
  host->maximumWaitingData = limits.max_waiting_bytes;
}

}  // namespace

// Kernel receive timestamps of datagrams, taken as ENet reads them (its intercept hook runs once
// per datagram, inside enet_host_service). The header's peer id says whose datagram it is; a
// malformed id is ignored here and rejected by ENet itself.
struct DatagramStamps {
  static thread_local Transport* serving;

  static int ENET_CALLBACK on_datagram(ENetHost* host, ENetEvent*) {
    Transport* self = serving;
    if (!self || self->host_ != host || host->receivedDataLength < 2) return 0;
    const auto raw = static_cast<std::uint16_t>((host->receivedData[0] << 8) | host->receivedData[1]);
    const std::uint16_t id = raw & ~(ENET_PROTOCOL_HEADER_FLAG_MASK | ENET_PROTOCOL_HEADER_SESSION_MASK);
    if (id >= host->peerCount) return 0;  // includes connection requests (no peer yet)
    const ENetAddress& from = host->peers[id].address;
    if (from.host != host->receivedAddress.host || from.port != host->receivedAddress.port) return 0;  // ENet drops it
    timespec ts{};
    if (ioctl(host->socket, SIOCGSTAMPNS, &ts) != 0) {
      self->arrival_[id] = 0;  // unknown (the first datagrams, before the kernel stamps them): read time is used
      self->heard_[id] = monotonic_ns();
      return 0;
    }
    // Socket timestamps are on the realtime clock; carry this one over to the monotonic clock.
    self->arrival_[id] = to_ns(ts) - (clock_ns(CLOCK_REALTIME) - monotonic_ns());
    self->heard_[id] = self->arrival_[id];
    return 0;  // ENet goes on to handle the datagram as usual
  }
};
thread_local Transport* DatagramStamps::serving = nullptr;

Transport::Transport(_ENetHost* host) : host_(host), arrival_(host->peerCount, 0), heard_(host->peerCount, 0) { host_->intercept = &DatagramStamps::on_datagram; }

NetEvent::NetEvent(NetEvent&& o) noexcept { *this = std::move(o); }
NetEvent& NetEvent::operator=(NetEvent&& o) noexcept {
  if (this != &o) {
    if (packet_) enet_packet_destroy(packet_);
    type = o.type;
    peer = o.peer;
    channel = o.channel;
    data = o.data;
    arrived_ns = o.arrived_ns;
    packet_ = o.packet_;
    o.packet_ = nullptr;
    o.type = Type::None;
  }
  return *this;
}
NetEvent::~NetEvent() {
  if (packet_) enet_packet_destroy(packet_);
}

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
  return std::unique_ptr<Transport>(new Transport(host));
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
  return std::unique_ptr<Transport>(new Transport(host));
}

Transport::~Transport() { enet_host_destroy(host_); }

EnetPeer* Transport::connect(const std::string& host, std::uint16_t port, std::string* error) {
  ENetAddress address{};
  if (enet_address_set_host(&address, host.c_str()) != 0) {
    if (error) *error = "cannot resolve '" + host + "'";
    return nullptr;
  }
  address.port = port;
  ENetPeer* peer = enet_host_connect(host_, &address, kChannelCount, 0);
  if (!peer && error) *error = "cannot start a connection";
  return peer;
}

NetEvent Transport::poll() {
  NetEvent out;
  ENetEvent ev;
  DatagramStamps::serving = this;
  const int r = enet_host_service(host_, &ev, 0);
  DatagramStamps::serving = nullptr;
  if (r <= 0) return out;
  out.peer = ev.peer;
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
      out.packet_ = ev.packet;
      out.data = {ev.packet->data, ev.packet->dataLength};
      out.arrived_ns = arrival_[static_cast<std::size_t>(ev.peer - host_->peers)];
      break;
    default: break;
  }
  return out;
}

void Transport::send(EnetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) {
  if (!peer) return;  // an in-process peer (tests, fuzzing): nothing to send to
  const enet_uint32 flags = channel == Channel::Control ? ENET_PACKET_FLAG_RELIABLE : ENET_PACKET_FLAG_UNSEQUENCED;
  ENetPacket* packet = enet_packet_create(bytes.data(), bytes.size(), flags);
  if (enet_peer_send(peer, static_cast<enet_uint8>(channel), packet) != 0) enet_packet_destroy(packet);
}

void Transport::flush() { enet_host_flush(host_); }
bool Transport::reliable_in_flight() const {
  for (std::size_t i = 0; i < host_->peerCount; ++i) {
    const ENetPeer& p = host_->peers[i];
    if (p.state == ENET_PEER_STATE_DISCONNECTED) continue;
    if (p.state != ENET_PEER_STATE_CONNECTED) return true;
    if (!enet_list_empty(&p.sentReliableCommands) || !enet_list_empty(&p.outgoingCommands)) return true;
  }
  return false;
}
int Transport::fd() const { return static_cast<int>(host_->socket); }
std::int64_t Transport::heard_ns(const EnetPeer* peer) const {
  return peer ? heard_[static_cast<std::size_t>(peer - host_->peers)] : 0;
}
std::uint16_t Transport::port() const {
  ENetAddress a{};
  enet_socket_get_address(host_->socket, &a);
  return a.port;
}
std::uint64_t Transport::bytes_sent() const { return host_->totalSentData; }
std::uint64_t Transport::bytes_received() const { return host_->totalReceivedData; }
std::uint64_t Transport::packets_sent() const { return host_->totalSentPackets; }
std::uint64_t Transport::packets_received() const { return host_->totalReceivedPackets; }

void peer_disconnect_later(EnetPeer* peer) {
  if (peer) enet_peer_disconnect_later(peer, 0);
}
void peer_disconnect_now(EnetPeer* peer) {
  if (peer) enet_peer_disconnect_now(peer, 0);
}
void peer_reset(EnetPeer* peer) { enet_peer_reset(peer); }
bool peer_sending(const EnetPeer* peer) {
  // Data, not ENet's own pings (reliable too, but without data).
  return peer && (peer->reliableDataInTransit > 0 || !enet_list_empty(&peer->outgoingCommands));
}
bool peer_told_all(const EnetPeer* peer) {
  return peer && (peer->state == ENET_PEER_STATE_DISCONNECTING || peer->state == ENET_PEER_STATE_ACKNOWLEDGING_DISCONNECT ||
                  peer->state == ENET_PEER_STATE_ZOMBIE || peer->state == ENET_PEER_STATE_DISCONNECTED);
}
std::uint32_t peer_rtt_ms(const EnetPeer* peer) { return peer->roundTripTime; }
std::size_t peer_channel_count(const EnetPeer* peer) { return peer ? peer->channelCount : kChannelCount; }
PeerNet peer_net(const EnetPeer* peer) {
  PeerNet n;
  if (!peer) return n;
  n.rtt_us = peer->roundTripTime * 1000;
  n.rtt_var_us = peer->roundTripTimeVariance * 1000;
  n.loss_ppm = static_cast<std::uint32_t>(std::uint64_t{peer->packetLoss} * 1'000'000 / ENET_PEER_PACKET_LOSS_SCALE);
  return n;
}
std::uint32_t peer_ip(const EnetPeer* peer) { return peer ? peer->address.host : 0; }
std::string peer_address(const EnetPeer* peer) {
  if (!peer) return "in-process";
  char ip[64] = "?";
  enet_address_get_host_ip(&peer->address, ip, sizeof ip);
  return std::string(ip) + ":" + std::to_string(peer->address.port);
}
void peer_set_tag(EnetPeer* peer, std::uintptr_t tag) { peer->data = reinterpret_cast<void*>(tag); }
std::uintptr_t peer_tag(const EnetPeer* peer) { return reinterpret_cast<std::uintptr_t>(peer->data); }
void peer_set_backstop_timeout(EnetPeer* peer, std::uint32_t backstop_ms) {
  enet_peer_timeout(peer, 0, backstop_ms, backstop_ms);
}

bool split_host_port(const std::string& text, std::string* host, std::uint16_t* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  unsigned long p = 0;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    p = p * 10 + static_cast<unsigned long>(text[i] - '0');
    if (p > 65535) return false;
  }
  if (p == 0) return false;
  *host = text.substr(0, colon);
  *port = static_cast<std::uint16_t>(p);
  return true;
}

}  // namespace lockstep
