// What the server sends: every message through send() (sealed on a sealed connection, and never
// more to an unauthenticated peer than it sent), frames with redundancy and their resends, the
// start, and snapshots.
#include <algorithm>

#include "server_session_impl.hpp"

namespace lockstep {

void ServerSession::Impl::send(Peer& p, Channel ch, std::span<const std::uint8_t> bytes) {
  bool withheld = false;
  const auto out = gate.outgoing(p.index, ch, bytes, tokens_required() && p.link, &withheld);
  if (withheld) {
    ++stats.replies_withheld;
    return;
  }
  transport->send(p.link, ch, out);
}

void ServerSession::Impl::broadcast(Channel ch, std::span<const std::uint8_t> bytes) {
  for (auto& [id, p] : peers)
    if (p.role != Role::Pending) send(p, ch, bytes);
}

void ServerSession::Impl::send_start(Peer& p, std::int64_t now, Channel channel) {
  // Tell the time to tick 0's deadline; a peer joining later gets the same origin.
  const std::int64_t in = std::max<std::int64_t>(0, deadline_of(0) - now);
  send(p, channel, protocol::start(static_cast<std::uint32_t>(std::min<std::int64_t>(in / 1000, 10'000'000))));
}

void ServerSession::Impl::send_snapshot(Peer& p, bool join) {
  std::vector<std::uint8_t> state;
  simulation->current().serialize(state);
  for (const auto& chunk : protocol::snapshot(executed(), audit(p).epoch, simulation->current().hash(), state, join)) send(p, Channel::Control, chunk);
  // Its hashes count from the state's next tick. Set where a state is sent, to that state's tick
  // (relay mode: in deliver_state): one acknowledged earlier would tell the client its hashes up
  // to then are in when they never are.
  audit(p).hashes.reset_to(executed());
  feed.loads_state(p.index, executed());
  stats.last_snapshot_bytes = static_cast<std::int64_t>(state.size());
  transport->flush();
}

void ServerSession::Impl::send_frames(std::int64_t now) {
  for (auto& held : peers) {
    Peer& p = held.second;  // (a name of its own: a lambda below takes it, which clang 14 allows no binding)
    if (p.role == Role::Pending) continue;
    // A player always hears its acknowledgements; a spectator once it reports hashes.
    const bool acks_when_idle = p.role == Role::Player || audit(p).hashes.ack() > 0;
    const std::int64_t rtt = p.link ? std::int64_t{peer_rtt_ms(p.link)} * 1'000'000 : 0;
    if (!feed.feed(p.index, executed(), now, rtt, acks_when_idle, play_header(p), inputs_of(p),
                   [&](std::span<const std::uint8_t> bytes) { send(p, Channel::Play, bytes); }))
      kick(p, "fell more than " + std::to_string(kHistory) + " ticks behind the session");
  }
}

void ServerSession::Impl::send_play(Peer& p, Tick from, Tick to) {
  send(p, Channel::Play, feed.play(p.index, from, to, executed(), play_header(p), inputs_of(p)));
}

protocol::ServerPlayHeader ServerSession::Impl::play_header(const Peer& p) const {
  protocol::ServerPlayHeader h;
  // Clients time their inputs by this server's tick clock, so they are told when it moves.
  h.clock_shift = static_cast<std::uint32_t>(std::min<std::uint64_t>(pacer.stats().skipped, UINT32_MAX));
  h.hash_ack = audit(p).hashes.ack();
  return h;
}

}  // namespace lockstep
