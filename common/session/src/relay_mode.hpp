// What a server without the simulation keeps (relay mode, server_relay.cpp): every voter's hash
// of each tick and the settled one (TickConsensus), the states on their way from a peer for a
// join, a resync or a comparison, the newest keyframe, and each peer's standing as a voter and as
// a source of states. One part of ServerSession: peers by id (their standings by index), times
// passed in.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/input.hpp"
#include "lockstep/tick_consensus.hpp"
#include "peer_records.hpp"

namespace lockstep {

/// Relay mode: a saved state asked of a peer whose hash of its tick is the settled one, for a
/// peer joining or resyncing (server_relay.cpp).
struct StateFetch {
  std::uint32_t request = 0;    // the StateRequest's id
  enum class Purpose { Join, Resync, Compare, Keyframe };
  std::uint32_t target = 0;     // the peer it is for
  Purpose purpose = Purpose::Join;  // a join or rejoin, a resync, or a desynced peer's comparison
  Tick want = 0;                // the tick wanted (Compare), or 0: the newest settled
  std::uint32_t from = 0;       // Compare on a split tick: this peer's state, held to its own hash of it
  Tick tick = 0;                // the state asked for, and its settled hash
  std::uint64_t hash = 0;
  std::uint32_t source = 0;     // the peer asked (0: none yet)
  std::int64_t asked_at = 0;    // when the source was asked, or last sent state bytes
  std::int64_t first_chunk_at = 0;  // when the source's first chunk came (0: none yet)
  std::int64_t started_at = 0;
  std::int64_t retry_at = 0;    // no request before then (a pause after a "not held")
  std::uint32_t requests = 0;   // StateRequests sent, at most ServerSession::kMaxRequestsPerFetch
  std::uint32_t total = 0;      // the answer's size, as its first chunk says
  std::vector<std::uint8_t> bytes;
  std::vector<std::uint32_t> asked;  // every peer asked for this target so far
  struct NotHeld {
    std::uint32_t peer;
    Tick tick;  // that peer holds neither this tick nor any older one
  };
  std::vector<NotHeld> not_held;
  /// No source any more: the answer so far is dropped.
  void forget_source() {
    source = 0;
    bytes.clear();
    total = 0;
    first_chunk_at = 0;
  }
  /// Whether a chunk at `offset` with `n` bytes brings the answer on: its first, or one with bytes.
  [[nodiscard]] bool advanced_by(std::uint32_t offset, std::size_t n) const { return n > 0 || (offset == 0 && total == 0); }
};

struct RelayMode {
  /// A peer's standing in relay mode: as a voter, as a source of states, and its desync being
  /// localized against the majority's state.
  struct Standing {
    bool split = false;          // its desync's tick had no strict majority (nobody is resynced)
    bool resyncing = false;      // a peer's state is being fetched for it; no voter meanwhile
    bool outvoted = false;       // its hash lost to a settled majority; no voter until a hash of
                                 // its matches again or it is resynced (OpenFront's rule)
    std::string collusion;       // the possible-collusion sentence for its reports, or ""
    bool wrong_state = false;    // sent a state that did not hash to the settled value; never asked again
    std::int64_t source_benched_until = 0;  // passed over as a source for silence or a trickle;
                                            // not asked for a state again before then
    // A desync report waiting for the peer's own localization against the majority's state.
    bool locating = false;
    DesyncReport located;
    std::int64_t locate_sent_at = 0;  // when the majority's state went to it (0: not yet)
    std::string locate_source;        // who the majority's state came from
  };
  /// The newest keyframe a voter sent (checked).
  struct Keyframe {
    Tick tick = 0;
    std::uint64_t hash = 0;
    std::vector<std::uint8_t> bytes;
  };
  /// A join served from the keyframe must catch up from its tick: at most this far back (the
  /// frames ring holds kHistory ticks).
  static constexpr Tick kKeyframeReach = 30 * kTickRate;

  TickConsensus consensus;          // every voter's hash of each tick, and the settled one
  std::vector<StateFetch> fetches;  // states on their way from a peer
  std::optional<Keyframe> keyframe;
  Tick next_keyframe = 0;           // when the next keyframe is due
  std::uint32_t next_request = 1;
  std::vector<std::uint32_t> voters_scratch;  // settle_ticks(), reused

  /// The standing of the peer at index `peer` (peer_records.hpp: made on first use, fresh for an index not in use).
  Standing& standing(std::uint32_t peer) { return standings_[peer]; }
  [[nodiscard]] const Standing& standing(std::uint32_t peer) const { return standings_.get(peer); }
  void forget(std::uint32_t peer) { standings_.forget(peer); }

 private:
  PeerRecords<Standing> standings_;
};

}  // namespace lockstep
