// Hash consensus of a server without the simulation: every voter's hash of each recent tick, and
// the tick settled by a strict majority of the voters. Pure: peers are ids, no sockets, no clock.
#pragma once

#include <cstdint>
#include <span>
#include <utility>
#include <vector>

#include "lockstep/hash_ledger.hpp"
#include "lockstep/input.hpp"

namespace lockstep {

class TickConsensus {
 public:
  static constexpr std::size_t kHistory = HashLedger::kHistory;  ///< ticks whose votes and settled hash are kept

  /// How a tick was decided.
  struct Verdict {
    bool settled = false;      ///< a strict majority of the voters agreed
    std::uint64_t hash = 0;    ///< the majority's hash (0 when not settled)
    std::size_t voters = 0;    ///< voters that reported a hash of the tick
    std::size_t majority = 0;  ///< voters in the largest group
  };

  /// Makes room in every tick's record for `voters` votes up front, so that voting never
  /// allocates while the ring fills (its first kHistory ticks, 41 s of play).
  void reserve(std::size_t voters) {
    for (TickRecord& r : ticks_) r.votes.reserve(voters);
  }
  /// Records `peer`'s hash of tick t (its first one counts; a tick older than kHistory is forgotten).
  void vote(std::uint32_t peer, Tick t, std::uint64_t hash);
  /// Takes back `peer`'s hashes of the ticks not decided yet (it was resynced: they were of the
  /// state it left).
  void forget(std::uint32_t peer);
  /// Whether `peer` has reported a hash of tick t.
  [[nodiscard]] bool voted(std::uint32_t peer, Tick t) const;
  /// The hashes of tick t reported so far: (peer, hash), in the order they came.
  [[nodiscard]] std::span<const std::pair<std::uint32_t, std::uint64_t>> votes(Tick t) const;

  /// The size of the largest group of equal hashes of tick t among `voters`' votes so far: once it
  /// is more than half of all the voters, the voters still to report cannot change the verdict.
  [[nodiscard]] std::size_t leading(Tick t, std::span<const std::uint32_t> voters);
  /// Decides tick t by the votes of `voters` (peer ids; others' votes do not count): settled when
  /// more than half of those that reported agree. The verdict is kept (settled_hash()).
  Verdict settle(Tick t, std::span<const std::uint32_t> voters);
  /// The ticks up to here are decided.
  [[nodiscard]] Tick decided_through() const { return decided_; }
  /// Tick t's settled hash, when t is decided, settled and one of the last kHistory decided ticks.
  [[nodiscard]] bool settled_hash(Tick t, std::uint64_t* hash) const;
  /// Whether tick t was decided without a strict majority of the voters that reported (none
  /// reported: not a split, only unvoted).
  [[nodiscard]] bool split(Tick t) const;
  /// Whether tick t was decided with no voter's hash (a stall held them all past the wait), and is
  /// still in the ring: its hashes may yet come, and settle it late.
  [[nodiscard]] bool unvoted(Tick t) const;
  /// Decides an unvoted tick again by the votes that came since (vote() takes them): settled or
  /// split as settle() would, counted as such instead of unvoted. The ticks after it keep their
  /// verdicts.
  Verdict settle_late(Tick t, std::span<const std::uint32_t> voters);
  /// Ticks decided so far: with a strict majority, without one, and with no voter's hash.
  [[nodiscard]] std::uint64_t settled_count() const { return settled_count_; }
  [[nodiscard]] std::uint64_t split_count() const { return split_count_; }
  [[nodiscard]] std::uint64_t unvoted_count() const { return unvoted_count_; }

 private:
  struct TickRecord {
    Tick tick = 0;
    std::vector<std::pair<std::uint32_t, std::uint64_t>> votes;
    bool decided = false, settled = false;
    std::size_t voters = 0;
    std::uint64_t hash = 0;
  };
  static void reset(TickRecord& r, Tick t);
  /// Groups tick t's votes of `voters` into groups_ (hash, members); returns how many voted.
  std::size_t group(Tick t, std::span<const std::uint32_t> voters);
  std::vector<TickRecord> ticks_ = std::vector<TickRecord>(kHistory);
  std::vector<std::pair<std::uint64_t, std::size_t>> groups_;  // settle()'s, reused
  Tick decided_ = 0;  // tick 0 is the world every peer builds from the settings: never voted on
  std::uint64_t settled_count_ = 0, split_count_ = 0, unvoted_count_ = 0;
};

}  // namespace lockstep
