// Localizing a desync: the states of recent ticks, hashes of entity blocks and entities, and
// the report that names the tick, player, entity and field with both exact values.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/export.h"
#include "lockstep/input.hpp"
#include "lockstep/json.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

/// The serialized states of the last `capacity` ticks, so a desync can be examined after the fact,
/// and a few pinned states that outlive the window while a desync at their tick is examined.
class LOCKSTEP_API StateHistory {
 public:
  static constexpr std::size_t kMaxPinned = 8;  ///< pinned states kept at most (the oldest goes first)

  explicit StateHistory(std::size_t capacity = 64) : ticks_(capacity, UINT32_MAX), bytes_(capacity) {}
  /// Stores `sim`'s state under its tick, replacing the oldest.
  void record(const Simulation& sim);
  /// Loads the state of `tick` into `into` (same kind); false when it is no longer held.
  bool load(Tick tick, Simulation& into) const;
  /// The stored bytes of `tick`, or nullptr.
  [[nodiscard]] const std::vector<std::uint8_t>* bytes(Tick tick) const;
  /// Ticks the window holds.
  [[nodiscard]] std::size_t capacity() const { return ticks_.size(); }
  /// Holds `capacity` (at least 1) ticks from now on, keeping the newest states it holds.
  void resize(std::size_t capacity);
  /// Keeps the state of `tick` past the window until unpin(tick) (or kMaxPinned newer pins);
  /// false when it is not held. Pins of one tick count: each needs its unpin.
  bool pin(Tick tick);
  void unpin(Tick tick);
  /// Forgets every state (after the session's state was replaced by a snapshot).
  void clear();

 private:
  struct Pinned {
    Tick tick = 0;
    std::uint32_t count = 0;
    std::vector<std::uint8_t> bytes;
  };
  std::vector<Tick> ticks_;
  std::vector<std::vector<std::uint8_t>> bytes_;
  std::vector<Pinned> pinned_;  // oldest first
};

/// Ticks of history that let a desync be localized over a link of this round trip: the hash of
/// a tick arrives about one round trip after the server stepped it, the notice and the probe's
/// questions take up to four more, plus half a second for jitter and the peer's own lead; never
/// fewer than `minimum` nor more than `maximum`.
LOCKSTEP_API std::size_t history_for_round_trip(std::int64_t rtt_ns, std::size_t minimum, std::size_t maximum);

/// Entities per block for a probe, so that a state has at most 512 blocks.
LOCKSTEP_API std::uint32_t probe_block_size(std::uint32_t entities);
/// One hash per block of `block_size` entities: XXH3 of the block's entity hashes.
LOCKSTEP_API std::vector<std::uint64_t> block_hashes(const Simulation& sim, std::uint32_t block_size);
/// Hashes of entities first .. first+count-1 (clipped to the entity count).
LOCKSTEP_API std::vector<std::uint64_t> entity_hashes(const Simulation& sim, std::uint32_t first, std::uint32_t count);
/// The bit patterns of `fields`, in order.
LOCKSTEP_API std::vector<std::uint64_t> field_bits(const std::vector<FieldValue>& fields);
/// An entity's hash from its fields: XXH3-64 of their bit patterns (what C modules and games that
/// own their state are hashed by, entity by entity).
LOCKSTEP_API std::uint64_t fields_hash(const std::vector<FieldValue>& fields);
/// Index of the first differing element, or -1 when equal (a length mismatch differs at the shorter end).
LOCKSTEP_API std::int64_t first_difference(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

/// A desync the server found: the first differing tick of one client.
struct LOCKSTEP_API DesyncEvent {
  Tick tick = 0;
  std::int32_t slot = -1;  ///< -1: a spectator
  std::string name;
  std::uint64_t server_hash = 0, client_hash = 0;
};

/// What the server found out about one desync.
struct LOCKSTEP_API DesyncReport {
  Tick tick = 0;
  std::int32_t slot = -1;
  std::string name;
  std::uint64_t server_hash = 0, client_hash = 0;
  std::string where = "unknown";   ///< "entity", "global", "entity count" (one side holds `entity`, the other
                                   ///< not), "outside fields" (the hashes differ, no declared field does) or
                                   ///< "unknown" (a peer no longer had the tick)
  std::int64_t entity = -1;
  std::vector<FieldValue> server_fields;  ///< the fields that differ, server's values
  std::vector<FieldValue> client_fields;  ///< the same fields, client's values
  std::uint64_t probe_bytes = 0;   ///< bytes of probes and answers exchanged to localize it
  std::uint64_t state_bytes = 0;   ///< size of the whole serialized state, for comparison
  std::string replay_file;         ///< the session's recording, if any
  std::string bundle_file;         ///< the desync bundle written beside the report, if any
  std::string note;
  /// Relay mode: "slot 2 (carol) has been outvoted 3 times by slots 0 and 1: possible collusion",
  /// when the same others outvoted this player that often; "" otherwise.
  std::string collusion;
  /// Who is wrong, by majority of the peers that reported this tick (the server included):
  /// "server", "player N (name)", or "" when fewer than three voted or no group is a majority.
  std::string odd_one_out;
  /// The hashes of this tick and who reported each: "server" or "player N (name)".
  std::vector<std::pair<std::uint64_t, std::vector<std::string>>> votes;
  /// One report per episode: a peer that diverges again within a while of its last divergence
  /// (after a resync, say) is counted here, not reported anew. 1 = this divergence alone.
  std::uint32_t episode_divergences = 1;
  Tick episode_last_tick = 0;  ///< the tick of the episode's latest divergence (= tick when alone)
};

/// Where two states of one world differ, found from their own entity hashes and fields: a desync
/// located offline (two builds or architectures replaying one file, a world against its loaded
/// copy), with no probe exchange.
struct LOCKSTEP_API StateDifference {
  std::string where = "none";  ///< "none", "entity", "entity count", "global" or "outside fields"
  std::int64_t entity = -1;    ///< the first entity whose hash differs ("entity")
  std::vector<FieldValue> a_fields, b_fields;  ///< the fields that differ, each side's value
  std::int64_t byte_offset = -1;  ///< "outside fields": the first differing byte of the serializations
  std::size_t state_bytes = 0;    ///< the size of a's serialization
};
LOCKSTEP_API StateDifference locate_difference(const Simulation& a, const Simulation& b);
/// The difference as a phrase: "entity 37 field vx: 0x1p+0 vs 0x1.000002p+0", "global field tick:
/// ...", "no declared field differs: bytes outside the declared fields differ from byte offset 25
/// of 40", or "" for none.
LOCKSTEP_API std::string difference_text(const StateDifference& d);
/// The difference as JSON: {"where", "entity", "fields": [{"name", "a", "b"}], "byte_offset"}.
LOCKSTEP_API Json difference_json(const StateDifference& d, const char* a_name = "a", const char* b_name = "b");

/// A value as exact hex float (or hex integer) and decimal text.
LOCKSTEP_API std::string field_hex(const FieldValue& f);
LOCKSTEP_API std::string field_decimal(const FieldValue& f);
/// How far apart two values of one field are: b - a in decimal, signed ("+0.25", "-3"; exact for
/// integers, rounded to 9 or 17 digits for floats), and for floats the units in the last place
/// between them (+0 and -0 are 0 apart; none when either is NaN).
struct LOCKSTEP_API FieldGap {
  std::string difference;
  std::optional<std::uint64_t> ulps;
};
LOCKSTEP_API FieldGap field_gap(const FieldValue& a, const FieldValue& b);
/// The report as JSON (the document written by write_report).
LOCKSTEP_API Json report_json(const DesyncReport& r);
/// Writes desync-<tick>-<slot>.json into `dir`; returns the path, or "" with `error` set.
LOCKSTEP_API std::string write_report(const DesyncReport& r, const std::string& dir, std::string* error);

}  // namespace lockstep
