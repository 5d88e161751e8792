// Asking a running server for its status over the protocol, for health checks (status.hpp).
#include "lockstep/status.hpp"

#include "lockstep/clock.hpp"
#include "lockstep/packet_seal.hpp"
#include "lockstep/pacer.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

namespace {

protocol::Status read_status(const wire::StatusReply& reply) {
  const auto* r = &reply;
  protocol::Status st;
  st.phase = r->phase() ? r->phase()->str() : "";
  st.tick = r->tick();
  st.players = r->players();
  st.joined = r->joined();
  st.active = r->active();
  st.spectators = r->spectators();
  st.desyncs = r->desyncs();
  st.lateness_p99_us = r->lateness_p99_us();
  st.protocol_version = r->protocol_version();
  st.fingerprint = r->fingerprint();
  st.last_tick = r->last_tick();
  if (r->seats())
    for (const auto* s : *r->seats()) {
      protocol::SeatStatus seat;
      seat.slot = s->slot();
      seat.name = s->name() ? s->name()->str() : "";
      seat.rtt_us = s->rtt_us();
      seat.jitter_us = s->jitter_us();
      seat.loss_ppm = s->loss_ppm();
      seat.lead_us = s->lead_us();
      seat.fills_late = s->fills_late();
      seat.fills_lost = s->fills_lost();
      seat.fills_silent = s->fills_silent();
      seat.latency_p50_us = s->latency_p50_us();
      seat.latency_p99_us = s->latency_p99_us();
      seat.hashes_checked = s->hashes_checked();
      st.seats.push_back(std::move(seat));
    }
  st.full = r->seats() != nullptr;  // a public reply carries no seats vector at all
  if (const auto* d = r->dropped())
    st.dropped = {d->refused(),          d->empty(),           d->oversized(),       d->unknown_connection(),
                  d->socket_buffer_full(), d->websocket_refused(), d->messages_dropped(), d->kicked(),
                  d->pending_refused(),  d->pending_evicted(),  d->handshakes_cut(),   d->replies_withheld(),
                  d->states_unanswered(), d->states_forged()};
  return st;
}

}  // namespace

std::optional<protocol::Status> query_status(const std::string& host, std::uint16_t port, std::int64_t timeout_ns,
                                             std::string* error, const SecretKey* status_key) {
  auto net = Transport::client({}, error);
  if (!net) return std::nullopt;
  NetPeer* peer = net->connect(host, port, error);
  if (!peer) return std::nullopt;
  Pacer waiter;
  const std::int64_t give_up = monotonic_ns() + timeout_ns;
  while (monotonic_ns() < give_up) {
    for (NetEvent ev = net->poll(); ev.type != NetEvent::Type::None; ev = net->poll()) {
      if (ev.type == NetEvent::Type::Connect) {
        net->send(peer, Channel::Control,
                  status_key ? protocol::status_request(status_key_proof(*status_key, unix_seconds()), protocol::kMaxStatusPadding)
                             : protocol::status_request({}, protocol::kMaxStatusPadding));
        net->flush();
      } else if (ev.type == NetEvent::Type::Receive) {
        protocol::DecodeError err;
        const wire::Message* m = protocol::decode(ev.data, &err);
        if (!m || m->body_type() != wire::Body::StatusReply) continue;
        const auto* r = m->body_as_StatusReply();
        protocol::Status st = read_status(*r);
        if (status_key && r->sealed()) {
          // The names and figures, sealed with the status key: a reply nobody else can read.
          std::vector<std::uint8_t> inner;
          const wire::Message* full = nullptr;
          if (open_with_key(*status_key, {r->sealed()->data(), r->sealed()->size()}, "lockstep status reply", inner))
            full = protocol::decode(inner, &err);
          if (!full || full->body_type() != wire::Body::StatusReply) {
            if (error) *error = "the status reply's sealed part does not open with this status key";
            return std::nullopt;
          }
          st = read_status(*full->body_as_StatusReply());
        }
        peer_disconnect_now(peer);
        net->flush();
        return st;
      } else if (ev.type == NetEvent::Type::Disconnect) {
        if (error) *error = "the server closed the connection without a status";
        return std::nullopt;
      }
    }
    waiter.wait_until(std::min(give_up, monotonic_ns() + 20'000'000), net->fd());
  }
  if (error) *error = "no status from " + host + ":" + std::to_string(port);
  return std::nullopt;
}

}  // namespace lockstep
