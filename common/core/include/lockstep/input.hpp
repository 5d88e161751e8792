// Ticks, player inputs, commands and input frames: the only things that cross the network
// during play. The session layer never reads them: a player's input is the simulation's bytes,
// and its commands are the simulation's byte strings.
#pragma once

#include <cstdint>
#include <span>
#include <string>
#include <vector>

#include "lockstep/export.h"

namespace lockstep {

/// A simulation tick. Tick 0 is the initial state; executing input frame T turns state T-1 into state T.
using Tick = std::uint32_t;

inline constexpr int kTickRate = 100;                     ///< ticks per second, fixed
inline constexpr std::int64_t kTickNs = 1'000'000'000 / kTickRate;  ///< one tick, nanoseconds
inline constexpr int kMaxPlayers = 32;                    ///< player slots fit a 32-bit mask

inline constexpr std::uint32_t kMaxInputBytes = 64;       ///< a simulation's input size, 0..64 bytes
inline constexpr std::size_t kMaxCommandsPerTick = 8;     ///< commands one player issues on one tick
inline constexpr std::size_t kMaxCommandBytesPerTick = 512;  ///< their bytes together; each is 1..512

/// The commands one player issued on one tick, in order: variable-size byte strings the
/// simulation defines (an RTS order, a chat line, a build request...). At most
/// kMaxCommandsPerTick of them and kMaxCommandBytesPerTick bytes together.
class LOCKSTEP_API Commands {
 public:
  /// Appends one command; false (and nothing added) when it is empty or would break a limit.
  bool add(std::span<const std::uint8_t> command);
  /// Whether `command` could be added now.
  [[nodiscard]] bool fits(std::size_t command_bytes) const;
  [[nodiscard]] std::size_t size() const { return sizes_.size(); }
  [[nodiscard]] bool empty() const { return sizes_.empty(); }
  [[nodiscard]] std::size_t bytes() const { return bytes_.size(); }
  [[nodiscard]] std::span<const std::uint8_t> at(std::size_t i) const;
  void clear() {
    bytes_.clear();
    sizes_.clear();
  }
  [[nodiscard]] std::span<const std::uint8_t> all_bytes() const { return bytes_; }
  [[nodiscard]] std::span<const std::uint16_t> sizes() const { return sizes_; }
  friend bool operator==(const Commands&, const Commands&) = default;

 private:
  std::vector<std::uint8_t> bytes_;    // every command's bytes, concatenated
  std::vector<std::uint16_t> sizes_;   // per command
};

/// What one player contributes to one tick: its input (exactly the simulation's input size) and
/// the commands it issued.
struct LOCKSTEP_API PlayerTick {
  std::vector<std::uint8_t> input;
  Commands commands;
  friend bool operator==(const PlayerTick&, const PlayerTick&) = default;
};

/// Every player's input for one tick, as the server confirmed it.
struct LOCKSTEP_API InputFrame {
  /// One command of the frame: bytes [offset, offset + size) of command_bytes, issued by slot.
  struct Command {
    std::uint32_t slot = 0;
    std::uint32_t offset = 0, size = 0;
    friend bool operator==(const Command&, const Command&) = default;
  };

  Tick tick = 0;
  std::uint32_t present = 0;  ///< bit p set: slot p is in the session on this tick
  std::uint32_t filled = 0;   ///< bit p set: slot p's input did not arrive in time; its previous one was repeated
  std::uint32_t players = 0;     ///< slots
  std::uint32_t input_size = 0;  ///< bytes per slot's input
  std::vector<std::uint8_t> inputs;  ///< players x input_size, in slot order; a slot not present holds zeros
  std::vector<Command> commands;     ///< in slot order, each slot's in the order issued
  std::vector<std::uint8_t> command_bytes;

  /// Clears to a frame of tick t with zero inputs and no commands (reusing storage).
  void reset(Tick t, std::uint32_t slot_count, std::uint32_t bytes_per_input);
  /// Slot p's input (p < players).
  [[nodiscard]] std::span<const std::uint8_t> input(std::uint32_t p) const {
    return std::span<const std::uint8_t>(inputs).subspan(std::size_t{p} * input_size, input_size);
  }
  [[nodiscard]] std::span<std::uint8_t> input(std::uint32_t p) {
    return std::span<std::uint8_t>(inputs).subspan(std::size_t{p} * input_size, input_size);
  }
  /// Command i's bytes.
  [[nodiscard]] std::span<const std::uint8_t> command(std::size_t i) const {
    return std::span<const std::uint8_t>(command_bytes).subspan(commands[i].offset, commands[i].size);
  }
  /// Appends slot p's commands (slots must come in ascending order).
  void add_commands(std::uint32_t p, const Commands& cmds);
  friend bool operator==(const InputFrame&, const InputFrame&) = default;
};

/// Player ticks or frames flattened the way the wire and replay formats store them: n items
/// (frames x players, or one player's consecutive ticks), each its input_size bytes, then the
/// number of commands of each item (none at all when no item has one), every command's size and
/// every command's bytes, in item order.
struct PackedView;
struct LOCKSTEP_API PackedInputs {
  std::vector<std::uint8_t> input_bytes;
  std::vector<std::uint8_t> command_counts;
  std::vector<std::uint16_t> command_sizes;
  std::vector<std::uint8_t> command_bytes;
  void clear();
  /// These items as a view (for check_packed and PackedReader).
  [[nodiscard]] PackedView view() const;
};

/// Frames flattened: per frame the present and filled masks, and `players` items.
struct LOCKSTEP_API PackedFrames {
  std::vector<std::uint32_t> present, filled;
  PackedInputs items;
};
/// Frames (each of `players` slots and the same input size) into `out`, reusing its memory.
LOCKSTEP_API void pack_frames(std::span<const InputFrame* const> frames, PackedFrames& out);
/// One player's consecutive ticks into `out`.
LOCKSTEP_API void pack_ticks(std::span<const PlayerTick* const> ticks, PackedInputs& out);

/// A view of packed items as they arrived (untrusted): spans into a message or a file.
struct LOCKSTEP_API PackedView {
  std::span<const std::uint8_t> input_bytes;
  std::span<const std::uint8_t> command_counts;
  std::span<const std::uint16_t> command_sizes;
  std::span<const std::uint8_t> command_bytes;
};
inline PackedView PackedInputs::view() const { return {input_bytes, command_counts, command_sizes, command_bytes}; }

/// Checks that `v` holds exactly `items` items of `input_size` bytes with commands inside the
/// limits; "" when it does, else a sentence saying what is wrong.
LOCKSTEP_API std::string check_packed(const PackedView& v, std::size_t items, std::uint32_t input_size);

/// Reads checked packed items in order.
class LOCKSTEP_API PackedReader {
 public:
  PackedReader(const PackedView& v, std::uint32_t input_size) : v_(v), input_size_(input_size) {}
  /// The next item's input bytes, and its commands into `cmds` (cleared first).
  std::span<const std::uint8_t> next(Commands* cmds);

 private:
  PackedView v_;
  std::uint32_t input_size_;
  std::size_t item_ = 0, command_ = 0, byte_ = 0;
};

/// Bit p set for every slot p < players (1..32).
[[nodiscard]] constexpr std::uint32_t slot_mask(std::uint32_t players) {
  return players >= 32 ? 0xffffffffu : (1u << players) - 1u;
}

/// The next `players` items of `r` as frame `f` of `tick`: its masks (bits beyond the slots
/// dropped), inputs and commands; absent slots' inputs and commands are skipped (an honest peer
/// sends zeros and none).
LOCKSTEP_API void read_frame(PackedReader& r, Tick tick, std::uint32_t players, std::uint32_t input_size, std::uint32_t present,
                std::uint32_t filled, InputFrame& f, Commands& scratch);

}  // namespace lockstep
