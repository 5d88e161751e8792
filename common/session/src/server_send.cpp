// What the server sends: every message through send() (sealed on a sealed connection, and never
// more to an unauthenticated peer than it sent), frames with redundancy and their resends, the
// start, and snapshots.
#include <algorithm>

#include "server_session_impl.hpp"

namespace lockstep {

void ServerSession::Impl::send(Peer& p, Channel ch, std::span<const std::uint8_t> bytes) {
  std::span<const std::uint8_t> out = bytes;
  if (p.entry.seal) {
    p.entry.seal->seal(ch, bytes, seal_scratch);
    out = seal_scratch;
  }
  // No amplification: before a peer proves it holds its token's keys, it is sent at most what it sent.
  if (tokens_required() && !p.entry.authenticated && p.link) {
    if (p.entry.bytes_out + out.size() > p.entry.bytes_in) {
      ++stats.replies_withheld;
      return;
    }
    p.entry.bytes_out += out.size();
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
  for (const auto& chunk : protocol::snapshot(executed(), p.audit.epoch, simulation->current().hash(), state, join)) send(p, Channel::Control, chunk);
  // Its hashes count from the state's next tick. Set where a state is sent, to that state's tick
  // (relay mode: in deliver_state): one acknowledged earlier would tell the client its hashes up
  // to then are in when they never are.
  p.audit.hashes.reset_to(executed());
  p.stream.base_from = executed() + 1;
  stats.last_snapshot_bytes = static_cast<std::int64_t>(state.size());
  transport->flush();
}

void ServerSession::Impl::send_frames(std::int64_t now) {
  for (auto& [id, p] : peers) {
    if (p.role == Role::Pending) continue;
    const Tick from = p.stream.frame_ack + 1;
    if (from > executed()) {
      // Nothing new: still acknowledge inputs and hashes, so the client trims its window.
      if (p.role == Role::Player || p.audit.hashes.ack() > 0) send(p, Channel::Play, play_for(p, {}));
      continue;
    }
    if (executed() - from >= kHistory - 1) {
      kick(p, "fell more than " + std::to_string(kHistory) + " ticks behind the session");
      continue;
    }
    // The newest frames go out in every message, and a range lost in every copy again (resend.hpp).
    const auto window = static_cast<Tick>(protocol::kMaxWindow);
    const Tick newest_from = executed() >= window ? std::max(from, executed() - window + 1) : from;
    send_range(p, newest_from, executed());
    if (newest_from > from) catch_up(p, from, newest_from, now);
  }
}

// A peer more than a window behind (a joiner from an old state, a client back from a stall) is
// streamed the frames after its acknowledgement, ahead of the newest ones: up to kMessages
// windows a tick, at most kAhead frames past the acknowledgement in flight (a sliding window:
// the stream goes on as the acknowledgement moves). When the acknowledgement stands still for a
// round trip and more, a frame of the stream was lost in every copy: it starts over from the
// acknowledgement (GapResend). It gains kAhead frames a round trip on the session, so a joiner
// catches up at any latency: one window a stall gained less than the session moved at 80 ms.
void ServerSession::Impl::catch_up(Peer& p, Tick from, Tick newest_from, std::int64_t now) {
  constexpr int kMessages = 2;
  constexpr Tick kAhead = 4 * static_cast<Tick>(protocol::kMaxWindow);  // well inside a client's frame buffer
  Tick& next = p.stream.catch_up_next;
  const std::int64_t rtt_ns = p.link ? std::int64_t{peer_rtt_ms(p.link)} * 1'000'000 : 0;
  if (next <= from || next > from + kAhead || p.stream.frame_gap.due(now, p.stream.frame_ack_moved, rtt_ns)) next = from;
  for (int m = 0; m < kMessages && next < newest_from && next < from + kAhead; ++m)
    next = send_range(p, next, std::min<Tick>(newest_from - 1, next + static_cast<Tick>(protocol::kMaxWindow) - 1)) + 1;
}

// Sends frames from..to (fewer when their commands are many) in one message; the last tick sent.
Tick ServerSession::Impl::send_range(Peer& p, Tick from, Tick to) {
  // Frames with many commands are spread over several messages: past the first frame, at most
  // kPlayCommandBudget bytes of commands go in one.
  batch_scratch.clear();
  std::size_t command_bytes = 0;
  for (Tick t = from; t <= to; ++t) {
    const InputFrame& f = frames[t % kHistory];
    command_bytes += f.command_bytes.size();
    if (!batch_scratch.empty() && command_bytes > protocol::kPlayCommandBudget) break;
    batch_scratch.push_back(&f);
  }
  send(p, Channel::Play, play_for(p, batch_scratch));
  return batch_scratch.empty() ? from : batch_scratch.back()->tick;
}

std::span<const std::uint8_t> ServerSession::Impl::play_for(Peer& p, std::span<const InputFrame* const> batch) {
  // Every kRefreshEvery-th message carries its frames whole and repeats the slack report, so a
  // client that lost the base frame or a report is back in step within that many ticks.
  constexpr std::uint32_t kRefreshEvery = 16;
  const bool refresh = p.stream.plays_sent++ % kRefreshEvery == 0;
  protocol::ServerPlayHeader h;
  // Clients time their inputs by this server's tick clock, so they are told when it moves.
  h.clock_shift = static_cast<std::uint32_t>(std::min<std::uint64_t>(pacer.stats().skipped, UINT32_MAX));
  h.hash_ack = p.audit.hashes.ack();
  if (p.role == Role::Player) {
    const InputWindow& in = slots[static_cast<std::size_t>(p.slot)].inputs;
    h.input_ack = in.ack();
    if (in.slack_tick() != 0 && (in.slack_tick() != p.stream.slack_sent || refresh)) {
      h.has_slack = true;
      h.input_slack_us = in.slack_us();
      h.slack_tick = in.slack_tick();
      p.stream.slack_sent = in.slack_tick();
    }
  }
  // The frame before the first, when the client holds it: the first frame travels as its change.
  const InputFrame* base = nullptr;
  if (!batch.empty() && !refresh) {
    const Tick b = batch.front()->tick - 1;
    if (b >= p.stream.base_from && b <= p.stream.frame_ack && b + kHistory > executed() + 1) base = &frames[b % kHistory];
  }
  return protocol::server_play(encoded_window(batch, base), h);
}

const protocol::EncodedFrames& ServerSession::Impl::encoded_window(std::span<const InputFrame* const> batch,
                                                                 const InputFrame* base) {
  static const protocol::EncodedFrames kNone;  // a message of acknowledgements only
  if (batch.empty()) return kNone;
  const Tick from = batch.front()->tick, to = batch.back()->tick;
  const bool based = base != nullptr;
  for (const EncodedWindow& w : encoded_windows)
    if (w.from != 0 && w.from == from && w.to == to && w.based == based) return w.frames;
  EncodedWindow& w = encoded_windows[next_encoded_window++ % encoded_windows.size()];
  protocol::encode_frames(batch, base, w.frames);
  w.from = from;
  w.to = to;
  w.based = based;
  return w.frames;
}

}  // namespace lockstep
