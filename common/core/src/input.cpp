// Input frames and commands, the only things that cross the network in play (input.hpp).
#include "lockstep/input.hpp"

#include <algorithm>
#include <cassert>

namespace lockstep {

bool Commands::fits(std::size_t command_bytes) const {
  return command_bytes >= 1 && sizes_.size() < kMaxCommandsPerTick &&
         bytes_.size() + command_bytes <= kMaxCommandBytesPerTick;
}

bool Commands::add(std::span<const std::uint8_t> command) {
  if (!fits(command.size())) return false;
  bytes_.insert(bytes_.end(), command.begin(), command.end());
  sizes_.push_back(static_cast<std::uint16_t>(command.size()));
  return true;
}

std::span<const std::uint8_t> Commands::at(std::size_t i) const {
  std::size_t offset = 0;
  for (std::size_t k = 0; k < i; ++k) offset += sizes_[k];
  return std::span<const std::uint8_t>(bytes_).subspan(offset, sizes_[i]);
}

void InputFrame::reset(Tick t, std::uint32_t slot_count, std::uint32_t bytes_per_input) {
  tick = t;
  present = filled = 0;
  players = slot_count;
  input_size = bytes_per_input;
  inputs.assign(std::size_t{slot_count} * bytes_per_input, 0);
  commands.clear();
  command_bytes.clear();
}

void InputFrame::add_commands(std::uint32_t p, const Commands& cmds) {
  assert(commands.empty() || commands.back().slot <= p);
  std::uint32_t offset = static_cast<std::uint32_t>(command_bytes.size());
  for (const std::uint16_t size : cmds.sizes()) {
    commands.push_back(Command{p, offset, size});
    offset += size;
  }
  const auto all = cmds.all_bytes();
  command_bytes.insert(command_bytes.end(), all.begin(), all.end());
}

void PackedInputs::clear() {
  input_bytes.clear();
  command_counts.clear();
  command_sizes.clear();
  command_bytes.clear();
}

namespace {

// Appends item number `item` of the batch. Command counts are written only once some item has a
// command: the first such item writes zeros for the items before it.
void pack_item(std::span<const std::uint8_t> input, std::span<const std::uint16_t> sizes,
               std::span<const std::uint8_t> bytes, std::size_t item, PackedInputs& out) {
  out.input_bytes.insert(out.input_bytes.end(), input.begin(), input.end());
  if (!sizes.empty() && out.command_counts.size() < item) out.command_counts.resize(item, 0);
  if (!sizes.empty() || !out.command_counts.empty()) out.command_counts.push_back(static_cast<std::uint8_t>(sizes.size()));
  out.command_sizes.insert(out.command_sizes.end(), sizes.begin(), sizes.end());
  out.command_bytes.insert(out.command_bytes.end(), bytes.begin(), bytes.end());
}

}  // namespace

void pack_frames(std::span<const InputFrame* const> frames, PackedFrames& out) {
  out.present.clear();
  out.filled.clear();
  out.items.clear();
  std::size_t item = 0;
  std::vector<std::uint16_t> sizes;
  for (const InputFrame* fp : frames) {
    const InputFrame& f = *fp;
    out.present.push_back(f.present);
    out.filled.push_back(f.filled);
    std::size_t c = 0;
    for (std::uint32_t p = 0; p < f.players; ++p, ++item) {
      sizes.clear();
      const std::size_t first = c;
      for (; c < f.commands.size() && f.commands[c].slot == p; ++c) sizes.push_back(static_cast<std::uint16_t>(f.commands[c].size));
      const std::size_t from = first < f.commands.size() ? f.commands[first].offset : 0;
      std::size_t to = from;
      for (std::size_t k = first; k < c; ++k) to += f.commands[k].size;
      pack_item(f.input(p), sizes, std::span<const std::uint8_t>(f.command_bytes).subspan(from, to - from), item,
                out.items);
    }
  }
  if (!out.items.command_counts.empty()) out.items.command_counts.resize(item, 0);
}

void pack_ticks(std::span<const PlayerTick* const> ticks, PackedInputs& out) {
  out.clear();
  std::size_t item = 0;
  for (const PlayerTick* t : ticks) pack_item(t->input, t->commands.sizes(), t->commands.all_bytes(), item++, out);
}

std::string check_packed(const PackedView& v, std::size_t items, std::uint32_t input_size) {
  if (v.input_bytes.size() != items * input_size)
    return std::to_string(v.input_bytes.size()) + " input bytes for " + std::to_string(items) + " inputs of " +
           std::to_string(input_size) + " bytes";
  if (!v.command_counts.empty() && v.command_counts.size() != items)
    return std::to_string(v.command_counts.size()) + " command counts for " + std::to_string(items) + " inputs";
  std::size_t command = 0, bytes = 0;
  for (const std::uint8_t count : v.command_counts) {
    if (count > kMaxCommandsPerTick) return std::to_string(count) + " commands on one tick (at most " +
                                            std::to_string(kMaxCommandsPerTick) + ")";
    if (command + count > v.command_sizes.size()) return "fewer command sizes than commands";
    std::size_t item_bytes = 0;
    for (std::size_t k = 0; k < count; ++k) {
      const std::uint16_t size = v.command_sizes[command + k];
      if (size == 0) return "an empty command";
      item_bytes += size;
    }
    if (item_bytes > kMaxCommandBytesPerTick)
      return std::to_string(item_bytes) + " command bytes on one tick (at most " +
             std::to_string(kMaxCommandBytesPerTick) + ")";
    command += count;
    bytes += item_bytes;
  }
  if (command != v.command_sizes.size()) return "more command sizes than commands";
  if (bytes != v.command_bytes.size())
    return std::to_string(v.command_bytes.size()) + " command bytes where the sizes add up to " + std::to_string(bytes);
  return "";
}

std::span<const std::uint8_t> PackedReader::next(Commands* cmds) {
  const auto input = v_.input_bytes.subspan(item_ * input_size_, input_size_);
  cmds->clear();
  const std::size_t count = v_.command_counts.empty() ? 0 : v_.command_counts[item_];
  for (std::size_t k = 0; k < count; ++k) {
    const std::uint16_t size = v_.command_sizes[command_++];
    cmds->add(v_.command_bytes.subspan(byte_, size));
    byte_ += size;
  }
  ++item_;
  return input;
}

void read_frame(PackedReader& r, Tick tick, std::uint32_t players, std::uint32_t input_size, std::uint32_t present,
                std::uint32_t filled, InputFrame& f, Commands& scratch) {
  f.reset(tick, players, input_size);
  f.present = present & slot_mask(players);
  f.filled = filled & slot_mask(players);
  for (std::uint32_t p = 0; p < f.players; ++p) {
    const auto in = r.next(&scratch);
    if (!((f.present >> p) & 1u)) continue;
    std::copy(in.begin(), in.end(), f.input(p).begin());
    f.add_commands(p, scratch);
  }
}

}  // namespace lockstep
