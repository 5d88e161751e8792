// The WebSocket door's datagram path (docs/PROTOCOL.md §17.1): a WebRTC data channel from a page,
// unordered and without retransmissions, that carries the play channel's messages beside the
// page's WebSocket, which keeps the control channel and the signalling. Debian's libraries do the
// work: libnice for ICE, OpenSSL for DTLS, libusrsctp for SCTP. Each data channel belongs to one
// WebSocket link: it is offered on that link (its TLS carries the offer, and the DTLS peer must
// show the certificate the offer names), so nothing over it needs sealing.
//
// Everything runs on a thread of its own with a GLib main loop (libnice's); the door's thread and
// the session's meet it through calls that only queue work (offer, send, close) and a sink that
// the thread calls back with answers, messages and closes.
#pragma once

#include <cstdint>
#include <memory>
#include <span>
#include <string>
#include <string_view>

#include "lockstep/error.hpp"

namespace lockstep {
namespace rtc {

/// Where the datagram path listens and what it tells the page.
struct RtcConfig {
  std::string bind;                     ///< the only address to listen on ("" = every local IPv4 address)
  std::uint16_t port_min = 0, port_max = 0;  ///< UDP ports for the channels (0, 0 = any free port)
  /// The one candidate the answer names, "HOST" or "HOST:PORT" (a public address in front of a
  /// NAT, or a relay's): "" names the local addresses with the channel's own port.
  std::string advertise;
  /// A channel not open this long after its offer (ICE, DTLS or SCTP stalled: UDP blocked, or a
  /// peer that never finishes) is closed, as is an open one that hears nothing this long.
  std::int64_t open_within_ns = 10'000'000'000;
  std::int64_t silent_ns = 20'000'000'000;
};

/// What a page's data channel is known by: the door's link and which connection of it.
struct RtcKey {
  const void* link = nullptr;
  std::uint64_t generation = 0;
};

/// The door's side, called on the datagram thread.
class RtcSink {
 public:
  /// The answer to an offer (an SDP text), or "" and why there is none.
  virtual void on_answer(RtcKey key, std::string answer, std::string why) = 0;
  /// A message from the page's data channel.
  virtual void on_message(RtcKey key, std::span<const std::uint8_t> bytes, std::int64_t arrived_ns) = 0;
  /// The channel is gone (ICE, DTLS or SCTP failed, timed out or closed): play goes back to the
  /// WebSocket.
  virtual void on_closed(RtcKey key, const std::string& why) = 0;
  /// The share of the page's datagrams lost on the way, in millionths: the gaps in its DTLS
  /// records' sequence numbers (every datagram it sends on an open channel is one or more), over
  /// all its datagrams so far. Called about once a second while the channel is open.
  virtual void on_loss(RtcKey key, std::uint32_t loss_ppm) = 0;

 protected:
  ~RtcSink() = default;
};

/// Counters of the datagram path (all since the start).
struct RtcStats {
  std::uint64_t offers = 0, answered = 0, refused = 0, opened = 0, failed = 0;
  std::uint64_t messages_in = 0, messages_out = 0, dropped_out = 0;
  std::uint64_t bytes_in = 0, bytes_out = 0;  ///< UDP payloads (DTLS records), both ways
};

/// Data channels for every page of one door.
class RtcDoor {
 public:
  /// nullptr with `error` set when a port cannot be had or the libraries fail to start.
  static std::unique_ptr<RtcDoor> start(const RtcConfig& config, RtcSink* sink, Error* error);
  virtual ~RtcDoor() = default;
  /// A page's offer: the answer (or why not) comes through RtcSink::on_answer.
  virtual void offer(RtcKey key, std::string sdp) = 0;
  /// Queues a play message to the page; false when it has no open channel (send it another way).
  virtual bool send(RtcKey key, std::span<const std::uint8_t> bytes) = 0;
  /// Closes the channel of `key`'s link, if any (no on_closed follows).
  virtual void close(RtcKey key) = 0;
  [[nodiscard]] virtual RtcStats stats() const = 0;

 protected:
  RtcDoor() = default;
};

/// The parts of an SDP offer the answer needs, read from its text; `error` says what is missing.
struct Offer {
  std::string ice_ufrag, ice_pwd;
  std::string fingerprint;  ///< sha-256, as "AB:CD:..." (upper case)
  std::string mid = "0";
  std::uint16_t sctp_port = 5000;
};
bool parse_offer(std::string_view sdp, Offer* out, std::string* error);

}  // namespace rtc
}  // namespace lockstep
