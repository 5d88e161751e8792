// The server's frames on their way to the peers: the executed frames of the last kHistory ticks,
// what each peer has acknowledged, the base its messages may be encoded against, its catch-up
// stream, and the encodings peers with the same window share. One part of ServerSession: it knows
// peers by their index (peer_records.hpp), and nothing of sockets, sealing or clocks (times are
// passed in); the session sends the bytes it makes. Every `peer` argument is a peer's index.
#pragma once

#include <array>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/hash_ledger.hpp"
#include "lockstep/input.hpp"
#include "lockstep/input_window.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/resend.hpp"
#include "peer_records.hpp"

namespace lockstep {

class FrameFeed {
 public:
  static constexpr std::size_t kHistory = HashLedger::kHistory;  ///< executed frames kept for resends

  /// Tick t's place in the ring of executed frames (the session assembles the frame there).
  [[nodiscard]] InputFrame& at(Tick t) { return frames_[t % kHistory]; }
  [[nodiscard]] const InputFrame& at(Tick t) const { return frames_[t % kHistory]; }

  /// Every frame of the ring empty, for `players` players of `input_size` bytes each.
  void prepare(std::uint32_t players, std::uint32_t input_size) {
    for (InputFrame& f : frames_) f.reset(0, players, input_size);
  }

  /// A peer's record; made on first use and forgotten with forget().
  void forget(std::uint32_t peer) { streams_.forget(peer); }
  /// Every frame up to tick t is held by the peer (its acknowledgement, or the state it loads).
  /// Never moves it back.
  void acknowledge(std::uint32_t peer, Tick t, std::int64_t now);
  /// The peer starts from tick t (it joins with a state of that tick): its acknowledgement is
  /// set there, earlier than before if need be.
  void starts_at(std::uint32_t peer, Tick t, std::int64_t now) {
    Stream& s = streams_[peer];
    s.frame_ack = t;
    s.frame_ack_moved = now;
  }
  /// The peer plays on from a state of tick t (a join or resync snapshot, or a peer's state):
  /// the frames after it go out whole until it acknowledges one sent as a frame.
  void loads_state(std::uint32_t peer, Tick t) { streams_[peer].base_from = t + 1; }

  /// What a peer is sent each round (send_every ticks): its acknowledgements at least, the newest
  /// window, and a catch-up range for a peer more than a window behind. `send(bytes)` is called
  /// for each message; `header` carries the session's acknowledgements (input_ack and the slack
  /// report are filled here from `inputs`, a player's input window, null for a spectator).
  /// False when the peer fell more than kHistory ticks behind (nothing was sent).
  template <class Send>
  bool feed(std::uint32_t peer, Tick executed, std::int64_t now, std::int64_t rtt_ns, bool acks_when_idle,
            const protocol::ServerPlayHeader& header, const InputWindow* inputs, Send&& send);

  /// The peer's ServerPlay of frames from..to (fewer when their commands are many); the bytes stay
  /// valid until the next call. `*last`: the last tick sent (from when none).
  [[nodiscard]] std::span<const std::uint8_t> play(std::uint32_t peer, Tick from, Tick to, Tick executed,
                                                   protocol::ServerPlayHeader header, const InputWindow* inputs,
                                                   Tick* last = nullptr);
  /// Acknowledgements only, no frames (a lobby heartbeat, a peer with nothing new).
  [[nodiscard]] std::span<const std::uint8_t> acks(std::uint32_t peer, Tick executed, const protocol::ServerPlayHeader& header,
                                                   const InputWindow* inputs) {
    return play(peer, 1, 0, executed, header, inputs);
  }

 private:
  struct Stream {
    Tick frame_ack = 0;          // all frames up to here received by the client
    std::int64_t frame_ack_moved = 0;
    GapResend frame_gap;         // frames lost in every copy go out again
    Tick catch_up_next = 0;      // a peer far behind: the next frame its catch-up stream sends
    Tick base_from = 1;          // frames from here on were sent to it as frames (not in a state):
                                 // those it acknowledged may serve as the base of a ServerPlay
    std::uint32_t plays_sent = 0;  // ServerPlays sent: every kRefreshEvery-th goes without base, with slack
    Tick slack_sent = 0;         // the slack report last sent
  };
  // The last frame windows encoded, by first and last tick and whether they are based: peers
  // whose windows agree (most of them, most ticks) share one encoding, and only each message's
  // header is written per peer. An executed frame never changes, so an entry stays true for its
  // ticks across rounds; the oldest is reused.
  struct EncodedWindow {
    Tick from = 0, to = 0;  // 0: unused
    bool based = false;
    protocol::EncodedFrames frames;
  };
  [[nodiscard]] const protocol::EncodedFrames& encoded(std::span<const InputFrame* const> batch, const InputFrame* base);

  std::vector<InputFrame> frames_ = std::vector<InputFrame>(kHistory);
  PeerRecords<Stream> streams_;
  std::vector<const InputFrame*> batch_;     // frames of one outgoing message, reused
  std::array<EncodedWindow, 4> windows_;
  std::size_t next_window_ = 0;
};

// A peer more than a window behind (a joiner from an old state, a client back from a stall) is
// streamed the frames after its acknowledgement, ahead of the newest ones: up to kMessages
// windows a round, at most kAhead frames past the acknowledgement in flight (a sliding window:
// the stream goes on as the acknowledgement moves). When the acknowledgement stands still for a
// round trip and more, a frame of the stream was lost in every copy: it starts over from the
// acknowledgement (GapResend). It gains kAhead frames a round trip on the session, so a joiner
// catches up at any latency.
template <class Send>
bool FrameFeed::feed(std::uint32_t peer, Tick executed, std::int64_t now, std::int64_t rtt_ns, bool acks_when_idle,
                     const protocol::ServerPlayHeader& header, const InputWindow* inputs, Send&& send) {
  Stream& s = streams_[peer];
  const Tick from = s.frame_ack + 1;
  if (from > executed) {
    // Nothing new: still acknowledge inputs and hashes, so the client trims its window.
    if (acks_when_idle) send(acks(peer, executed, header, inputs));
    return true;
  }
  if (executed - from >= kHistory - 1) return false;
  // The newest frames go out in every message, and a range lost in every copy again (resend.hpp).
  const auto window = static_cast<Tick>(protocol::kMaxWindow);
  const Tick newest_from = executed >= window ? std::max(from, executed - window + 1) : from;
  send(play(peer, newest_from, executed, executed, header, inputs));
  if (newest_from == from) return true;
  constexpr int kMessages = 2;
  constexpr Tick kAhead = 4 * window;  // well inside a client's frame buffer
  Tick& next = s.catch_up_next;
  if (next <= from || next > from + kAhead || s.frame_gap.due(now, s.frame_ack_moved, rtt_ns)) next = from;
  for (int m = 0; m < kMessages && next < newest_from && next < from + kAhead; ++m) {
    Tick last = next;
    send(play(peer, next, std::min<Tick>(newest_from - 1, next + window - 1), executed, header, inputs, &last));
    next = last + 1;
  }
  return true;
}

}  // namespace lockstep
