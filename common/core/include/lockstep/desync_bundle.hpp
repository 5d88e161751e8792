// Desync bundles (schemas/bundle.fbs): one file per desync holding every party's states at the
// divergent tick and a few before it, the replay from the first of them through that tick (its
// inputs and world), the report with the votes and the localized entity and field. Written by the
// server, by a client told it diverged and by lockstep-synctest; read by `lockstep-replay view`
// and `seek`. A bundle is untrusted input: it is checked whole on read.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/json.hpp"
#include "lockstep/replay.hpp"

namespace lockstep {

inline constexpr std::uint32_t kBundleFormatVersion = 1;
inline constexpr std::size_t kMaxBundleBytes = 64u << 20;       ///< the whole file
inline constexpr std::size_t kMaxBundleReplayBytes = 32u << 20;  ///< its replay
inline constexpr std::size_t kMaxBundleReportBytes = 256u << 10;
inline constexpr std::size_t kMaxBundleParties = kMaxPlayers + 2;  ///< the server, players, a spectator
inline constexpr std::size_t kMaxBundleStates = 16;                ///< per party
inline constexpr std::size_t kMaxBundleHashes = 4096;              ///< per party
/// States a writer keeps before the divergent tick, when it holds them.
inline constexpr Tick kBundleTicksBefore = 4;

struct LOCKSTEP_API BundleState {
  Tick tick = 0;
  std::uint64_t hash = 0;
  std::vector<std::uint8_t> bytes;
};

struct LOCKSTEP_API BundleParty {
  std::string name;
  std::vector<std::pair<Tick, std::uint64_t>> hashes;  ///< ascending ticks
  std::vector<BundleState> states;                     ///< ascending ticks
  /// The state of tick t, or nullptr.
  [[nodiscard]] const BundleState* state(Tick t) const;
};

struct LOCKSTEP_API DesyncBundle {
  std::string written_by;  ///< "server", "client" or "synctest"
  Tick tick = 0;           ///< the first divergent tick
  Json report = Json::object();
  /// From the first state held (header.start_tick, its keyframe) through `tick`. Without a start
  /// state (relay mode has none) it still holds the inputs and names the world, but cannot be run.
  Replay replay;
  std::vector<BundleParty> parties;
};

/// Writes `b` to `path` (its replay with replay_bytes); false with `error` set. Parts over the
/// bounds are cut: the oldest states first, then the replay's frames (a replay over its bound is
/// left out, keeping its header).
LOCKSTEP_API bool write_bundle(const std::string& path, const DesyncBundle& b, std::string* error);
/// Reads and checks a bundle: the checksum, every bound, every state's hash against its bytes, the
/// replay as read_replay checks one, the report as JSON. ReplayError::NotAReplay: not a bundle.
LOCKSTEP_API ReplayError read_bundle(const std::string& path, DesyncBundle* out, std::string* detail);
/// The same from bytes in memory.
LOCKSTEP_API ReplayError parse_bundle(std::span<const std::uint8_t> bytes, DesyncBundle* out, std::string* detail);
/// Whether the file starts like a bundle ("LSDESYNC").
LOCKSTEP_API bool is_bundle_file(const std::string& path);
/// desync-<tick>-<slot>.bundle in `dir`.
LOCKSTEP_API std::string bundle_path(const std::string& dir, Tick tick, std::int32_t slot);

}  // namespace lockstep
