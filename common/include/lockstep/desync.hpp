// Localizing a desync: the states of recent ticks, hashes of entity blocks and entities, and
// the report that names the tick, player, entity and field with both exact values.
#pragma once

#include <cstdint>
#include <string>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/json.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep {

/// The serialized states of the last `capacity` ticks, so a desync can be examined after the fact.
class StateHistory {
 public:
  explicit StateHistory(std::size_t capacity = 64) : ticks_(capacity, UINT32_MAX), bytes_(capacity) {}
  /// Stores `sim`'s state under its tick, replacing the oldest.
  void record(const Simulation& sim);
  /// Loads the state of `tick` into `into` (same kind); false when it is no longer held.
  bool load(Tick tick, Simulation& into) const;
  /// The stored bytes of `tick`, or nullptr.
  [[nodiscard]] const std::vector<std::uint8_t>* bytes(Tick tick) const;

 private:
  std::vector<Tick> ticks_;
  std::vector<std::vector<std::uint8_t>> bytes_;
};

/// Entities per block for a probe, so that a state has at most 512 blocks.
std::uint32_t probe_block_size(std::uint32_t entities);
/// One hash per block of `block_size` entities: XXH3 of the block's entity hashes.
std::vector<std::uint64_t> block_hashes(const Simulation& sim, std::uint32_t block_size);
/// Hashes of entities first .. first+count-1 (clipped to the entity count).
std::vector<std::uint64_t> entity_hashes(const Simulation& sim, std::uint32_t first, std::uint32_t count);
/// The bit patterns of `fields`, in order.
std::vector<std::uint64_t> field_bits(const std::vector<FieldValue>& fields);
/// Index of the first differing element, or -1 when equal (a length mismatch differs at the shorter end).
std::int64_t first_difference(const std::vector<std::uint64_t>& a, const std::vector<std::uint64_t>& b);

/// What the server found out about one desync.
struct DesyncReport {
  Tick tick = 0;
  std::int32_t slot = -1;
  std::string name;
  std::uint64_t server_hash = 0, client_hash = 0;
  std::string where = "unknown";   ///< "entity", "global" or "unknown" (the client no longer had the tick)
  std::int64_t entity = -1;
  std::vector<FieldValue> server_fields;  ///< the fields that differ, server's values
  std::vector<FieldValue> client_fields;  ///< the same fields, client's values
  std::uint64_t probe_bytes = 0;   ///< bytes of probes and answers exchanged to localize it
  std::uint64_t state_bytes = 0;   ///< size of the whole serialized state, for comparison
  std::string replay_file;         ///< the session's recording, if any
  std::string note;
};

/// A value as exact hex float (or hex integer) and decimal text.
std::string field_hex(const FieldValue& f);
std::string field_decimal(const FieldValue& f);
/// The report as JSON (the document written by write_report).
Json report_json(const DesyncReport& r);
/// Writes desync-<tick>-<slot>.json into `dir`; returns the path, or "" with `error` set.
std::string write_report(const DesyncReport& r, const std::string& dir, std::string* error);

}  // namespace lockstep
