// A server without the simulation (relay mode, ServerConfig::relay). It relays inputs and keeps
// time as always; every tick is settled by a strict majority of the voters' hashes
// (TickConsensus), and a peer that joins, rejoins or is resynced loads a state another peer
// saved, forwarded only once its bytes hash to the settled value (docs/PROTOCOL.md §15).
#include <algorithm>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {
constexpr std::int64_t kFetchPatienceNs = 2'000'000'000;  // a source that has not answered whole by then
                                                          // (or in four of its round trips) is passed over
constexpr std::int64_t kSettleWaitNs = 300'000'000;       // a voter's hash is waited for at least this long
constexpr Tick kSourceSearchTicks = 200;                  // settled ticks searched back for one a source holds
}  // namespace

bool ServerSession::Impl::votes(const Peer& p) const {
  if (p.role == Role::Pending || p.closing || p.audit.verifying || p.audit.resyncing) return false;
  return p.role == Role::Player || cfg.spectators_vote;
}

void ServerSession::Impl::take_vote(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now) {
  if (t > consensus.decided_through()) return consensus.vote(p.id, t, theirs);
  // Decided before this hash came: compared with the settled hash, as the server's own would be.
  std::uint64_t settled = 0;
  if (!consensus.settled_hash(t, &settled)) return;  // a split or unvoted tick: nothing to hold it to
  if (p.audit.verifying && !verify(p, t, theirs, settled, now)) return;
  compare_hash(p, t, theirs, settled, now);
}

// Ticks are decided in order, each once every voter's hash of it is in (or can no longer come),
// or after two of the longest round trips past its deadline (at least 300 ms): a far or silent
// voter delays the verdict, never the session. Hash silence drops a voter that stays silent.
void ServerSession::Impl::settle_ticks(std::int64_t now, bool force) {
  if (consensus.decided_through() >= executed()) return;
  std::vector<std::uint32_t>& voters = voters_scratch;
  voters.clear();
  for (const auto& [id, p] : peers)
    if (votes(p)) voters.push_back(id);
  std::int64_t wait = -1;  // worked out only when a vote is missing
  while (consensus.decided_through() < executed()) {
    const Tick t = consensus.decided_through() + 1;
    const bool in = std::all_of(voters.begin(), voters.end(), [&](std::uint32_t id) {
      return consensus.voted(id, t) || peers.at(id).audit.hashes.check(t, executed()) == HashLedger::Verdict::Already;
    });
    if (!in && !force) {
      if (wait < 0)
        wait = std::max<std::int64_t>(kSettleWaitNs,
                                      2 * longest_rtt([](const Peer& q) { return q.role != Role::Pending && !q.closing; }));
      if (now < deadline_of(t) + wait && executed() - t < TickConsensus::kHistory / 2) break;
    }
    decide_tick(t, voters, now);
    // A verdict may drop or resync voters: count them again.
    std::erase_if(voters, [&](std::uint32_t id) { return !votes(peers.at(id)); });
  }
}

void ServerSession::Impl::decide_tick(Tick t, const std::vector<std::uint32_t>& voters, std::int64_t now) {
  const TickConsensus::Verdict v = consensus.settle(t, voters);
  if (v.settled) ++stats.ticks_settled;
  else if (v.voters > 0) ++stats.ticks_split;
  else ++stats.ticks_unvoted;
  record_tick(t, v.hash, v.settled);
  // (Comparing a hash never changes the votes: the span stays valid.)
  for (const auto& [id, theirs] : consensus.votes(t)) {
    const auto it = peers.find(id);
    if (it == peers.end() || it->second.closing) continue;
    Peer& p = it->second;
    if (p.audit.verifying) {  // a joiner's first hash after its state is held to the settled one
      if (v.settled && t > p.audit.verify_tick && verify(p, t, theirs, v.hash, now)) compare_hash(p, t, theirs, v.hash, now);
      continue;
    }
    if (v.settled) compare_hash(p, t, theirs, v.hash, now);
    else if (v.voters > 0 && std::find(voters.begin(), voters.end(), id) != voters.end())
      compare_hash(p, t, theirs, 0, now, /*split=*/true);
  }
}

// A state for p to join from or resync to: the newest settled tick's, from a peer that reported
// the settled hash of it. It travels to p only after its bytes hash to that value.
void ServerSession::Impl::serve_state(Peer& p, bool join, std::int64_t now) {
  std::erase_if(fetches, [&](const StateFetch& f) { return f.target == p.id; });
  StateFetch f;
  f.request = next_request++;
  if (next_request == 0) next_request = 1;
  f.target = p.id;
  f.join = join;
  f.started_at = now;
  if (!join) p.audit.resyncing = true;
  // A joiner holds no frame yet: until its state arrives, frames go to it whole (it drops them).
  if (join) p.stream.base_from = executed() + 1;
  fetches.push_back(std::move(f));
  if (!ask_for_state(fetches.back(), now))
    LOCKSTEP_LOG_INFO("relay: no peer holds a settled state for %s yet; asking again shortly", label(p).c_str());
}

bool ServerSession::Impl::ask_for_state(StateFetch& f, std::int64_t now) {
  f.source = 0;
  f.bytes.clear();
  f.total = 0;
  for (int round = 0; round < 2; ++round) {
    for (Tick t = consensus.decided_through(); t > 0 && consensus.decided_through() - t < kSourceSearchTicks; --t) {
      std::uint64_t settled = 0;
      if (!consensus.settled_hash(t, &settled)) continue;
      Peer* best = nullptr;
      for (const auto& [id, h] : consensus.votes(t)) {
        const auto it = peers.find(id);
        if (h != settled || id == f.target || it == peers.end()) continue;
        Peer& q = it->second;
        if (q.closing || q.role == Role::Pending || q.audit.wrong_state || q.audit.resyncing || q.audit.verifying ||
            std::find(f.asked.begin(), f.asked.end(), id) != f.asked.end())
          continue;
        if (!best || rtt_ns(q) < rtt_ns(*best)) best = &q;
      }
      if (!best) continue;
      f.tick = t;
      f.hash = settled;
      f.source = best->id;
      f.asked_at = now;
      f.asked.push_back(best->id);
      ++stats.states_requested;
      send(*best, Channel::Control, protocol::state_request(t, f.request));
      transport->flush();
      LOCKSTEP_LOG_INFO("relay: asked %s for its state of tick %u (settled hash %s) for %s", label(*best).c_str(), t,
                        hash_hex(settled).c_str(), f.join ? "a join" : "a resync");
      return true;
    }
    f.asked.clear();  // every source was asked once: those that did not send a wrong state may be asked again
  }
  return false;
}

// A player's saved state, in chunks on the reliable channel: bounded by the protocol's snapshot
// limit, in order, of the tick asked for, and forwarded only when it hashes to the settled value.
void ServerSession::Impl::on_state_answer(Peer& p, const wire::Snapshot& m, std::int64_t now) {
  if (!relay() || m.request() == 0) return drop(p, DropReason::UnexpectedMessage, " (a snapshot from a client)");
  const auto it = std::find_if(fetches.begin(), fetches.end(),
                               [&](const StateFetch& f) { return f.request == m.request() && f.source == p.id; });
  if (it == fetches.end()) {
    // The rest of an answer that was passed over (too late) or replaced: nothing to do with it.
    if (m.request() < next_request) return;
    return drop(p, DropReason::UnexpectedMessage, " (an answer to no state request)");
  }
  StateFetch& f = *it;
  const std::size_t n = m.data() ? m.data()->size() : 0;
  auto wrong = [&](const char* why) {
    ++stats.states_forged;
    p.audit.wrong_state = true;
    LOCKSTEP_LOG_ERROR("relay: %s sent a wrong state of tick %u (%s); it is not asked again", label(p).c_str(), f.tick, why);
    if (!ask_for_state(f, now)) LOCKSTEP_LOG_INFO("relay: no other peer holds tick %u's settled state yet", f.tick);
  };
  if (m.tick() != f.tick) return wrong("another tick");
  if (m.offset() == 0) {
    f.bytes.clear();
    f.total = m.total_size();
    if (f.total == 0) {  // no longer held: another tick or another peer
      ++stats.states_not_held;
      LOCKSTEP_LOG_INFO("relay: %s no longer holds tick %u", label(p).c_str(), f.tick);
      ask_for_state(f, now);
      return;
    }
    f.bytes.reserve(f.total);
  } else if (m.offset() != f.bytes.size() || m.total_size() != f.total) {
    return wrong("chunks out of place");
  }
  if (n > 0) f.bytes.insert(f.bytes.end(), m.data()->begin(), m.data()->end());
  if (f.bytes.size() < f.total) return;
  if (hash_bytes(f.bytes) != f.hash) return wrong("its bytes do not hash to the settled value");
  deliver_state(f, now);
  fetches.erase(fetches.begin() + (&f - fetches.data()));
}

void ServerSession::Impl::deliver_state(StateFetch& f, std::int64_t now) {
  const auto it = peers.find(f.target);
  if (it == peers.end() || it->second.closing) return;
  Peer& p = it->second;
  if (f.join) {
    // The joiner starts from tick f.tick: the frames after it follow, and its first hash after
    // it is held to the settled one.
    p.audit.verify_tick = f.tick;
    p.audit.hashes.reset_to(f.tick);
    p.stream.frame_ack = f.tick;
    p.stream.frame_ack_moved = now;
  } else {
    ++p.audit.epoch;
    ++stats.resyncs;
    p.audit.resync_at = now;
    ++p.audit.resync_tries;
    p.audit.hashes.reset_to(executed());  // its hashes count again from the next tick, of the new epoch
    consensus.forget(p.id);                // and its diverged ones of ticks not decided yet no longer do
    p.audit.desynced = false;
    p.audit.resyncing = false;
  }
  p.stream.base_from = f.tick + 1;
  for (const auto& chunk : protocol::snapshot(f.tick, p.audit.epoch, f.hash, f.bytes, f.join)) send(p, Channel::Control, chunk);
  if (f.join && f.tick < executed())
    send_range(p, f.tick + 1, std::min<Tick>(executed(), f.tick + static_cast<Tick>(protocol::kMaxWindow)));
  transport->flush();
  stats.last_snapshot_bytes = static_cast<std::int64_t>(f.bytes.size());
  ++stats.states_forwarded;
  LOCKSTEP_LOG_INFO("relay: sent %s the state of tick %u from %s (%zu bytes, hash %s checked, %lld ms after it was asked for)",
                    label(p).c_str(), f.tick, peers.count(f.source) ? label(peers.at(f.source)).c_str() : "a peer",
                    f.bytes.size(), hash_hex(f.hash).c_str(), static_cast<long long>((now - f.started_at) / 1'000'000));
}

// Sources that went away or take too long are passed over; a peer no source can serve within
// the join timeout is dropped (its state would be nobody's settled one).
void ServerSession::Impl::check_fetches(std::int64_t now) {
  for (std::size_t i = 0; i < fetches.size();) {
    StateFetch& f = fetches[i];
    const auto target = peers.find(f.target);
    if (target == peers.end() || target->second.closing) {
      fetches.erase(fetches.begin() + static_cast<std::ptrdiff_t>(i));
      continue;
    }
    if (f.source != 0) {
      const auto source = peers.find(f.source);
      const bool gone = source == peers.end() || source->second.closing;
      if (gone || now - f.asked_at > std::max(kFetchPatienceNs, 4 * rtt_ns(source->second))) {
        ++stats.states_unanswered;
        LOCKSTEP_LOG_WARN("relay: %s did not send its state of tick %u in time; asking another peer",
                          gone ? "a peer that left" : label(source->second).c_str(), f.tick);
        f.source = 0;
      }
    }
    if (f.source == 0) {
      if (now - f.started_at > cfg.join_timeout_ns) {
        Peer& p = target->second;
        p.audit.resyncing = false;
        fetches.erase(fetches.begin() + static_cast<std::ptrdiff_t>(i));
        kick(p, "no peer sent a state that hashes to the settled one within " +
                    std::to_string(cfg.join_timeout_ns / 1'000'000) + " ms");
        continue;
      }
      ask_for_state(f, now);
    }
    ++i;
  }
}

}  // namespace lockstep
