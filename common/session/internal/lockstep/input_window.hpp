// The server's view of one player slot's inputs: a ring by tick of what has arrived (input bytes
// and commands), the acknowledgement sent back, the slack report (how long before its deadline
// the newest input arrived), and, when a tick is assembled, the input and commands it contributes
// or why the input was filled. Commands are delivered exactly once and in order: those of a tick
// that was filled are carried to the next assembled tick when they arrive after all, and any
// beyond a tick's limits wait for the next. Pure: no sockets, no clock; times are passed in.
#pragma once

#include <array>
#include <bitset>
#include <climits>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/histogram.hpp"
#include "lockstep/input.hpp"

namespace lockstep {

class InputWindow {
 public:
  static constexpr std::size_t kSize = 256;             ///< ticks ahead of the next tick an input may be for
  static constexpr std::int64_t kSilentFillNs = 500'000'000;  ///< a fill counts as "silent" after this long unheard

  /// Why a tick's input was filled with the previous one.
  enum class Fill { None, Late, Lost, Silent };

 private:
  // Laid out for the tick's few cache lines: the figures first, then one 16-byte entry a tick (what
  // a message and an assembly read and write together), the commands last and read only where a
  // tick has some.
  struct Entry {
    Tick tick = 0;                  // == t: tick t's input is in
    Tick delivered = UINT32_MAX;    // == t: tick t's commands are taken
    std::int64_t arrived = 0;       // when tick t's input first arrived
  };
  std::uint32_t input_size_ = 0;
  Tick ack_ = 0;          // every input up to here is in or settled
  Tick seen_ = 0;         // the newest input tick seen
  std::int32_t slack_us_ = 0;  // slack of the newest input first seen ...
  Tick slack_tick_ = 0;        // ... and its tick (0: none yet)
  std::uint64_t fills_late_ = 0, fills_lost_ = 0, fills_silent_ = 0;
  std::uint64_t commands_carried_ = 0;
  Histogram latency_;          // first arrival -> execution, plus the round trip, microseconds
  std::vector<std::uint8_t> input_;               // kSize x input_size_
  std::vector<std::uint8_t> last_;  // the input of the last assembled tick (repeated when one is missing)
  std::vector<std::uint8_t> carry_bytes_;         // commands waiting for a tick: their bytes ...
  std::vector<std::uint16_t> carry_sizes_;        // ... and sizes, oldest first
  Commands taken_;                                // the commands of the last assembled tick
  std::bitset<kSize> with_commands_;  // bit t % kSize: commands_[t % kSize] holds some
  std::array<Entry, kSize> ring_{};
  std::array<Commands, kSize> commands_{};

 public:
  explicit InputWindow(std::uint32_t input_size = 0);

  /// Takes the inputs for ticks first, first+1, ... (`inputs`, checked: input_size bytes each)
  /// that arrived at `arrived`. `next_tick` is the next tick to assemble and `next_deadline` its
  /// deadline. Inputs for ticks already assembled are ignored (their commands, if that tick was
  /// filled, wait for the next tick); inputs kSize or more ticks ahead are dropped (returns false).
  bool receive(Tick first, const PackedView& inputs, std::size_t count, Tick next_tick, std::int64_t next_deadline,
               std::int64_t arrived);
  [[nodiscard]] bool has(Tick t) const { return ring_[t % kSize].tick == t; }
  /// When tick t's input first arrived (0 when it is not in).
  [[nodiscard]] std::int64_t arrived(Tick t) const { return has(t) ? ring_[t % kSize].arrived : 0; }
  /// A player last heard from at `last_heard` is silent at `now`: its missing inputs are filled
  /// as Fill::Silent, and the server does not wait for them.
  [[nodiscard]] static bool silent(std::int64_t now, std::int64_t last_heard) {
    return now - last_heard > kSilentFillNs;
  }
  /// Assembles tick t at `now`: the input arrived (latency counted with `rtt_us` added) or the
  /// previous one is repeated, counted by cause (`last_heard`: the player's latest message).
  /// Either way tick t is settled. The input is last() afterwards, the commands commands().
  Fill take(Tick t, std::int64_t now, std::uint32_t rtt_us, std::int64_t last_heard);
  /// Everything up to `t` is settled (a player joining a running session at tick t).
  void settle(Tick t);
  /// The repeated input starts from neutral again (a player back in the session).
  /// Commands not yet delivered are dropped: the player was out of the session.
  void reset_last();

  [[nodiscard]] std::span<const std::uint8_t> last() const { return last_; }
  [[nodiscard]] const Commands& commands() const { return taken_; }
  /// Commands that arrived after their tick was filled and went with a later tick, so far.
  [[nodiscard]] std::uint64_t commands_carried() const { return commands_carried_; }
  [[nodiscard]] Tick ack() const { return ack_; }
  [[nodiscard]] Tick seen() const { return seen_; }
  [[nodiscard]] std::int32_t slack_us() const { return slack_us_; }
  [[nodiscard]] Tick slack_tick() const { return slack_tick_; }
  [[nodiscard]] std::uint64_t fills_late() const { return fills_late_; }
  [[nodiscard]] std::uint64_t fills_lost() const { return fills_lost_; }
  [[nodiscard]] std::uint64_t fills_silent() const { return fills_silent_; }
  [[nodiscard]] const Histogram& latency() const { return latency_; }

 private:
  void advance_ack(Tick next_tick);
  void queue(const Commands& cmds);
};

}  // namespace lockstep
