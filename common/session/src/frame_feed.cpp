// The server's frames on their way to the peers (frame_feed.hpp): acknowledgements, and each
// peer's ServerPlay encoded against the newest frame it holds.
#include "frame_feed.hpp"

#include <algorithm>

namespace lockstep {

void FrameFeed::acknowledge(std::uint32_t peer, Tick t, std::int64_t now) {
  Stream& s = streams_[peer];
  if (t <= s.frame_ack) return;
  s.frame_ack = t;
  s.frame_ack_moved = now;
}

std::span<const std::uint8_t> FrameFeed::play(std::uint32_t peer, Tick from, Tick to, Tick executed,
                                              protocol::ServerPlayHeader h, const InputWindow* inputs, Tick* last) {
  Stream& s = streams_[peer];
  // Frames with many commands are spread over several messages: past the first frame, at most
  // kPlayCommandBudget bytes of commands go in one.
  batch_.clear();
  std::size_t command_bytes = 0;
  for (Tick t = from; t <= to; ++t) {
    const InputFrame& f = at(t);
    command_bytes += f.command_bytes.size();
    if (!batch_.empty() && command_bytes > protocol::kPlayCommandBudget) break;
    batch_.push_back(&f);
  }
  if (last) *last = batch_.empty() ? from : batch_.back()->tick;
  // Every kRefreshEvery-th message carries its frames whole and repeats the slack report, so a
  // client that lost the base frame or a report is back in step within that many ticks.
  constexpr std::uint32_t kRefreshEvery = 16;
  const bool refresh = s.plays_sent++ % kRefreshEvery == 0;
  if (inputs) {
    h.input_ack = inputs->ack();
    if (inputs->slack_tick() != 0 && (inputs->slack_tick() != s.slack_sent || refresh)) {
      h.has_slack = true;
      h.input_slack_us = inputs->slack_us();
      h.slack_tick = inputs->slack_tick();
      s.slack_sent = inputs->slack_tick();
    }
  }
  // The frame before the first, when the client holds it: the first frame travels as its change.
  const InputFrame* base = nullptr;
  if (!batch_.empty() && !refresh) {
    const Tick b = batch_.front()->tick - 1;
    if (b >= s.base_from && b <= s.frame_ack && b + kHistory > executed + 1) base = &at(b);
  }
  return protocol::server_play(encoded(batch_, base), h);
}

const protocol::EncodedFrames& FrameFeed::encoded(std::span<const InputFrame* const> batch, const InputFrame* base) {
  static const protocol::EncodedFrames kNone;  // a message of acknowledgements only
  if (batch.empty()) return kNone;
  const Tick from = batch.front()->tick, to = batch.back()->tick;
  const bool based = base != nullptr;
  for (const EncodedWindow& w : windows_)
    if (w.from != 0 && w.from == from && w.to == to && w.based == based) return w.frames;
  EncodedWindow& w = windows_[next_window_++ % windows_.size()];
  protocol::encode_frames(batch, base, w.frames);
  w.from = from;
  w.to = to;
  w.based = based;
  return w.frames;
}

}  // namespace lockstep
