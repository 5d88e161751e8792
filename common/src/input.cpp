#include "lockstep/input.hpp"

namespace lockstep {

PackedFrames pack_frames(std::span<const InputFrame> frames, std::uint32_t players) {
  PackedFrames out;
  pack_frames(frames, players, out);
  return out;
}

void pack_frames(std::span<const InputFrame> frames, std::uint32_t players, PackedFrames& out) {
  out.present.clear();
  out.filled.clear();
  out.inputs.clear();
  out.present.reserve(frames.size());
  out.filled.reserve(frames.size());
  out.inputs.reserve(frames.size() * players);
  for (const InputFrame& f : frames) {
    out.present.push_back(f.present);
    out.filled.push_back(f.filled);
    for (std::uint32_t p = 0; p < players; ++p) out.inputs.push_back(f.inputs[p].pack());
  }
}

}  // namespace lockstep
