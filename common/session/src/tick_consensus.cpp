// Hash consensus (tick_consensus.hpp).
#include "lockstep/tick_consensus.hpp"

#include <algorithm>

namespace lockstep {

void TickConsensus::vote(std::uint32_t peer, Tick t, std::uint64_t hash) {
  if (t == 0) return;
  TickRecord& r = ticks_[t % kHistory];
  if (r.tick != t) {
    if (r.tick > t) return;  // older than the ring
    reset(r, t);
  }
  if (std::any_of(r.votes.begin(), r.votes.end(), [&](const auto& v) { return v.first == peer; })) return;
  r.votes.emplace_back(peer, hash);
}

// Reuses the record's vote list: no allocation per tick once the ring is warm.
void TickConsensus::reset(TickRecord& r, Tick t) {
  r.tick = t;
  r.votes.clear();
  r.decided = r.settled = false;
  r.voters = 0;
  r.hash = 0;
}

void TickConsensus::forget(std::uint32_t peer) {
  for (TickRecord& r : ticks_)
    if (r.tick > decided_) std::erase_if(r.votes, [&](const auto& v) { return v.first == peer; });
}

bool TickConsensus::voted(std::uint32_t peer, Tick t) const {
  const TickRecord& r = ticks_[t % kHistory];
  return r.tick == t && std::any_of(r.votes.begin(), r.votes.end(), [&](const auto& v) { return v.first == peer; });
}

std::span<const std::pair<std::uint32_t, std::uint64_t>> TickConsensus::votes(Tick t) const {
  const TickRecord& r = ticks_[t % kHistory];
  if (r.tick != t) return {};
  return r.votes;
}

std::size_t TickConsensus::group(Tick t, std::span<const std::uint32_t> voters) {
  groups_.clear();
  const TickRecord& r = ticks_[t % kHistory];
  if (r.tick != t) return 0;
  std::size_t n = 0;
  for (const auto& [peer, hash] : r.votes) {
    if (std::find(voters.begin(), voters.end(), peer) == voters.end()) continue;
    ++n;
    auto it = std::find_if(groups_.begin(), groups_.end(), [h = hash](const auto& g) { return g.first == h; });
    if (it == groups_.end()) groups_.emplace_back(hash, 1);
    else ++it->second;
  }
  return n;
}

std::size_t TickConsensus::leading(Tick t, std::span<const std::uint32_t> voters) {
  group(t, voters);
  std::size_t most = 0;
  for (const auto& g : groups_) most = std::max(most, g.second);
  return most;
}

TickConsensus::Verdict TickConsensus::settle_late(Tick t, std::span<const std::uint32_t> voters) {
  if (!unvoted(t)) return {};
  --unvoted_count_;
  const Tick decided = decided_;
  const Verdict v = settle(t, voters);
  decided_ = decided;
  return v;
}

bool TickConsensus::unvoted(Tick t) const {
  const TickRecord& r = ticks_[t % kHistory];
  return r.tick == t && r.decided && r.voters == 0;
}

TickConsensus::Verdict TickConsensus::settle(Tick t, std::span<const std::uint32_t> voters) {
  TickRecord& r = ticks_[t % kHistory];
  if (r.tick != t) reset(r, t);
  // The groups of equal hashes among the voters, in the order their first member voted.
  Verdict v;
  v.voters = group(t, voters);
  for (const auto& [hash, n] : groups_)
    if (n > v.majority) {
      v.majority = n;
      v.hash = hash;
    }
  v.settled = v.voters > 0 && 2 * v.majority > v.voters;
  if (!v.settled) v.hash = 0;
  r.decided = true;
  r.settled = v.settled;
  r.voters = v.voters;
  r.hash = v.hash;
  decided_ = std::max(decided_, t);
  ++(v.settled ? settled_count_ : v.voters > 0 ? split_count_ : unvoted_count_);
  return v;
}

bool TickConsensus::settled_hash(Tick t, std::uint64_t* hash) const {
  const TickRecord& r = ticks_[t % kHistory];
  if (r.tick != t || !r.decided || !r.settled) return false;
  if (hash) *hash = r.hash;
  return true;
}

bool TickConsensus::split(Tick t) const {
  const TickRecord& r = ticks_[t % kHistory];
  return r.tick == t && r.decided && !r.settled && r.voters > 0;
}

}  // namespace lockstep
