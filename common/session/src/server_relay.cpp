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
constexpr std::int64_t kFetchPatienceNs = 3'000'000'000;  // a source silent this long (or eight of its round
                                                          // trips) after the request reached it, or since
                                                          // its last chunk, is passed over
constexpr std::int64_t kSettleWaitNs = 1'000'000'000;     // without a majority of all voters yet, the missing
                                                          // hashes are waited for at least this long
constexpr std::int64_t kNotHeldPauseNs = 100'000'000;   // after a "not held", the next request waits this long
                                                          // (or the source's round trip, if longer)
constexpr std::int64_t kSourceBenchNs = 15'000'000'000;   // a source passed over is not asked again for this long
constexpr std::int64_t kMinSourceBytesPerSecond = 64 * 1024;  // a whole answer's slowest honest pace: a source
                                                              // slower than this is passed over as a trickle
constexpr Tick kSourceSearchTicks = 200;                  // settled ticks searched back for one a source holds
constexpr Tick kResyncReach = 128;                        // a resync state at most this old is forwarded: half
                                                          // the frames a client keeps to play on from it
}  // namespace

bool ServerSession::Impl::votes(const Peer& p) const {
  if (p.role == Role::Pending || p.closing || audit(p).verifying || relay_of(p).resyncing || relay_of(p).outvoted) return false;
  return p.role == Role::Player || cfg.spectators_vote;
}

void ServerSession::Impl::take_vote(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now) {
  if (t > relay_mode.consensus.decided_through()) return relay_mode.consensus.vote(p.id, t, theirs);
  if (relay_mode.consensus.unvoted(t) && votes(p)) return late_vote(p, t, theirs, now);
  // Decided before this hash came: compared with the settled hash, as the server's own would be.
  std::uint64_t settled = 0;
  if (!relay_mode.consensus.settled_hash(t, &settled)) return;  // a split or unvoted tick: nothing to hold it to
  if (audit(p).verifying && !verify(p, t, theirs, settled, now)) return;
  compare_hash(p, t, theirs, settled, now);
}

// Ticks are decided in order, each as soon as more than half of all the voters agree on it (those
// still to report cannot change that), or once every voter's hash of it is in (or can no longer
// come), or four of the longest round trips past its deadline (at least 1 s): a far or silent
// voter delays only a disputed verdict, never the session. Hash silence drops a silent voter.
void ServerSession::Impl::settle_ticks(std::int64_t now, bool force) {
  if (relay_mode.consensus.decided_through() >= executed()) return;
  std::vector<std::uint32_t>& voters = relay_mode.voters_scratch;
  voters.clear();
  for (const auto& [id, p] : peers)
    if (votes(p)) voters.push_back(id);
  std::int64_t wait = -1;  // worked out only when a vote is missing
  while (relay_mode.consensus.decided_through() < executed()) {
    const Tick t = relay_mode.consensus.decided_through() + 1;
    const bool in = std::all_of(voters.begin(), voters.end(), [&](std::uint32_t id) {
      return relay_mode.consensus.voted(id, t) || audit(peers.at(id)).hashes.check(t, executed()) == HashLedger::Verdict::Already;
    });
    if (!in && !force && 2 * relay_mode.consensus.leading(t, voters) <= voters.size()) {
      if (wait < 0)
        wait = std::max<std::int64_t>(kSettleWaitNs,
                                      4 * longest_rtt([](const Peer& q) { return q.role != Role::Pending && !q.closing; }));
      if (now < deadline_of(t) + wait && executed() - t < TickConsensus::kHistory / 2) break;
    }
    decide_tick(t, voters, now);
    // A verdict may drop or resync voters: count them again.
    std::erase_if(voters, [&](std::uint32_t id) { return !votes(peers.at(id)); });
  }
}

// A hash of a tick decided with none (a stall held every voter's past the wait): a vote after all.
// Once more than half of the voters agree, or all have reported, the tick is decided again and
// every hash of it compared, as at its time; its hash log line stays as it was (unvoted).
void ServerSession::Impl::late_vote(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now) {
  relay_mode.consensus.vote(p.id, t, theirs);
  std::vector<std::uint32_t> voters;
  for (const auto& [id, q] : peers)
    if (votes(q)) voters.push_back(id);
  const bool all = std::all_of(voters.begin(), voters.end(), [&](std::uint32_t id) { return relay_mode.consensus.voted(id, t); });
  if (!all && 2 * relay_mode.consensus.leading(t, voters) <= voters.size()) return;
  --stats.ticks_unvoted;
  ++stats.ticks_settled_late;
  const TickConsensus::Verdict v = relay_mode.consensus.settle_late(t, voters);
  compare_votes(t, v, voters, now);
}

void ServerSession::Impl::decide_tick(Tick t, const std::vector<std::uint32_t>& voters, std::int64_t now) {
  const TickConsensus::Verdict v = relay_mode.consensus.settle(t, voters);
  record_tick(t, v.hash, v.settled);
  compare_votes(t, v, voters, now);
}

// Every hash of tick t held to its verdict (a joiner's first one after its state, to verify it).
void ServerSession::Impl::compare_votes(Tick t, const TickConsensus::Verdict& v, const std::vector<std::uint32_t>& voters,
                                        std::int64_t now) {
  if (v.settled) ++stats.ticks_settled;
  else if (v.voters > 0) ++stats.ticks_split;
  else ++stats.ticks_unvoted;
  // (Comparing a hash never changes the votes: the span stays valid.)
  for (const auto& [id, theirs] : relay_mode.consensus.votes(t)) {
    const auto it = peers.find(id);
    if (it == peers.end() || it->second.closing) continue;
    Peer& p = it->second;
    if (audit(p).verifying) {  // a joiner's first hash after its state is held to the settled one
      if (v.settled && t > audit(p).verify_tick && verify(p, t, theirs, v.hash, now)) compare_hash(p, t, theirs, v.hash, now);
      continue;
    }
    if (v.settled) compare_hash(p, t, theirs, v.hash, now);
    else if (v.voters > 0 && std::find(voters.begin(), voters.end(), id) != voters.end())
      compare_hash(p, t, theirs, 0, now, /*split=*/true);
  }
}

// A state for p to join from or resync to: the newest settled tick's, from a peer that reported
// the settled hash of it. It travels to p only after its bytes hash to that value.
void ServerSession::Impl::serve_state(Peer& p, StateFetch::Purpose purpose, std::int64_t now, Tick want,
                                      std::uint32_t from) {
  using P = StateFetch::Purpose;
  if (purpose == P::Join && serve_from_keyframe(p, now)) return;
  // A peer waits for one state to load and one to compare with at a time.
  std::erase_if(relay_mode.fetches, [&](const StateFetch& f) { return f.target == p.id && (f.purpose == P::Compare) == (purpose == P::Compare); });
  StateFetch f;
  f.target = p.id;
  f.purpose = purpose;
  f.want = want;
  f.from = from;
  f.started_at = now;
  if (purpose == P::Resync) relay_of(p).resyncing = true;
  // A joiner holds no frame yet: until its state arrives, frames go to it whole (it drops them).
  if (purpose == P::Join) feed.loads_state(p.index, executed());
  relay_mode.fetches.push_back(std::move(f));
  if (!ask_for_state(relay_mode.fetches.back(), now))
    LOCKSTEP_LOG_INFO("relay: no peer holds a settled state for %s yet; asking again shortly", label(p).c_str());
}

// Every relay_keyframe_interval ticks, the newest settled tick's state from a voter: the latest
// keyframe, for joins and the recording. One fetch at a time; no target peer.
void ServerSession::Impl::fetch_keyframe(std::int64_t now) {
  if (cfg.relay_keyframe_interval == 0 || relay_mode.consensus.decided_through() < relay_mode.next_keyframe) return;
  if (std::any_of(relay_mode.fetches.begin(), relay_mode.fetches.end(), [](const StateFetch& f) { return f.purpose == StateFetch::Purpose::Keyframe; }))
    return;
  relay_mode.next_keyframe = relay_mode.consensus.decided_through() + cfg.relay_keyframe_interval;
  StateFetch f;
  f.purpose = StateFetch::Purpose::Keyframe;
  f.started_at = now;
  relay_mode.fetches.push_back(std::move(f));
  if (!ask_for_state(relay_mode.fetches.back(), now)) relay_mode.fetches.pop_back();  // no voter holds one yet: at the next interval
}

// A joiner served from the latest keyframe, when it is recent enough to catch up from: no peer is
// asked, the state goes out at once, and the joiner's first hash after it is held to the settled
// one as with any join.
bool ServerSession::Impl::serve_from_keyframe(Peer& p, std::int64_t now) {
  if (!relay_mode.keyframe || relay_mode.keyframe->tick > executed() || executed() - relay_mode.keyframe->tick > relay_mode.kKeyframeReach) return false;
  StateFetch f;
  f.target = p.id;
  f.purpose = StateFetch::Purpose::Join;
  f.tick = relay_mode.keyframe->tick;
  f.hash = relay_mode.keyframe->hash;
  f.bytes = relay_mode.keyframe->bytes;
  f.started_at = now;
  ++stats.joins_from_keyframe;
  deliver_state(f, now);
  return true;
}

// Whether q may be asked for its state of tick t for f: a voter (a spectator only where
// spectators vote) that reported the tick's settled hash, is not the fetch's target, has never
// sent a wrong state, is not passed over for silence, and has not said it no longer holds t.
bool ServerSession::Impl::may_source(const StateFetch& f, const Peer& q, Tick t, std::int64_t now) const {
  if (q.id == f.target || q.closing || q.role == Role::Pending || (q.role == Role::Spectator && !cfg.spectators_vote))
    return false;
  if (relay_of(q).wrong_state || relay_of(q).resyncing || audit(q).verifying || now < relay_of(q).source_benched_until) return false;
  if (std::find(f.asked.begin(), f.asked.end(), q.id) != f.asked.end()) return false;
  return std::none_of(f.not_held.begin(), f.not_held.end(),
                      [&](const StateFetch::NotHeld& n) { return n.peer == q.id && t <= n.tick; });
}

// Asks the nearest source for the newest settled tick it may hold. False when the fetch has
// sent all its requests (ServerSession::kMaxRequestsPerFetch) or no peer may be asked now.
bool ServerSession::Impl::ask_for_state(StateFetch& f, std::int64_t now) {
  f.forget_source();
  if (f.requests >= ServerSession::kMaxRequestsPerFetch) return false;
  if (f.from != 0) {  // a split tick: the other party's state, held to its own hash of the tick
    const auto it = peers.find(f.from);
    const auto votes = relay_mode.consensus.votes(f.want);
    const auto vote = std::find_if(votes.begin(), votes.end(), [&](const auto& v) { return v.first == f.from; });
    if (it == peers.end() || vote == votes.end() || !may_source(f, it->second, f.want, now)) return false;
    request_state(f, it->second, f.want, vote->second, now);
    return true;
  }
  const Tick newest = f.want != 0 ? f.want : relay_mode.consensus.decided_through();
  const Tick searched = f.want != 0 ? 1 : kSourceSearchTicks;  // a comparison needs its own tick
  for (int round = 0; round < 2; ++round) {
    for (Tick t = newest; t > 0 && newest - t < searched; --t) {
      std::uint64_t settled = 0;
      if (!relay_mode.consensus.settled_hash(t, &settled)) continue;
      Peer* best = nullptr;
      for (const auto& [id, h] : relay_mode.consensus.votes(t)) {
        const auto it = peers.find(id);
        if (h != settled || it == peers.end() || !may_source(f, it->second, t, now)) continue;
        if (!best || rtt_ns(it->second) < rtt_ns(*best)) best = &it->second;
      }
      if (!best) continue;
      request_state(f, *best, t, settled, now);
      return true;
    }
    f.asked.clear();  // every source was asked once: those that did not send a wrong state may be asked again
  }
  return false;
}

void ServerSession::Impl::request_state(StateFetch& f, Peer& source, Tick t, std::uint64_t hash, std::int64_t now) {
  // Every request its own id: the rest of an answer that was passed over is told from the new one.
  f.request = relay_mode.next_request++;
  if (relay_mode.next_request == 0) relay_mode.next_request = 1;
  f.tick = t;
  f.hash = hash;
  f.source = source.id;
  f.asked_at = now;
  f.asked.push_back(source.id);
  ++f.requests;
  ++stats.states_requested;
  send(source, Channel::Control, protocol::state_request(t, f.request));
  transport->flush();
  static constexpr const char* kFor[] = {"a join", "a resync", "a desynced peer to compare with", "the session's keyframe"};
  LOCKSTEP_LOG_INFO("relay: asked %s for its state of tick %u (%s hash %s) for %s (request %u of at most %u)",
                    label(source).c_str(), t, f.from != 0 ? "its own" : "settled", hash_hex(hash).c_str(),
                    kFor[static_cast<int>(f.purpose)], f.requests, ServerSession::kMaxRequestsPerFetch);
}

// Whether p's message is a chunk of an answer the server asked p for: those do not count toward
// its message rate (a state of many chunks is the server's own doing).
bool ServerSession::Impl::asked_for(const Peer& p, std::span<const std::uint8_t> data) const {
  if (!relay() || relay_mode.fetches.empty()) return false;
  const wire::Message* m = protocol::decode(data, nullptr, protocol::kMaxDetailMessageBytes);
  if (!m || m->body_type() != wire::Body::Snapshot) return false;
  const wire::Snapshot& s = *m->body_as_Snapshot();
  const std::size_t n = s.data() ? s.data()->size() : 0;
  return s.request() != 0 && std::any_of(relay_mode.fetches.begin(), relay_mode.fetches.end(), [&](const StateFetch& f) {
           return f.source == p.id && f.request == s.request() && f.advanced_by(s.offset(), n);
         });
}

// A player's saved state, in chunks on the reliable channel: bounded by the protocol's snapshot
// limit, in order, of the tick asked for, and forwarded only when it hashes to the settled value.
void ServerSession::Impl::on_state_answer(Peer& p, const wire::Snapshot& m, std::int64_t now) {
  if (!relay() || m.request() == 0) return drop(p, DropReason::UnexpectedMessage, " (a snapshot from a client)");
  const auto it = std::find_if(relay_mode.fetches.begin(), relay_mode.fetches.end(),
                               [&](const StateFetch& f) { return f.request == m.request() && f.source == p.id; });
  if (it == relay_mode.fetches.end()) {
    // The rest of an answer that was passed over (too late) or replaced: nothing to do with it.
    if (m.request() < relay_mode.next_request) return;
    return drop(p, DropReason::UnexpectedMessage, " (an answer to no state request)");
  }
  StateFetch& f = *it;
  const std::size_t n = m.data() ? m.data()->size() : 0;
  // A chunk of an answer asked for that brings the answer on (its first, or one with bytes) is not
  // counted toward the peer's message rate (asked_for lets it past the limit): a state of many
  // chunks is the server's own doing, while empty chunks are nobody's answer.
  const bool first = m.offset() == 0 && f.total == 0;
  if (f.advanced_by(m.offset(), n)) gate.refund(p.index, cfg.message_burst);
  auto wrong = [&](const char* why) {
    ++stats.states_forged;
    relay_of(p).wrong_state = true;
    // Reported as a desync is, in a file of its own that names the forger (and the exit is 3).
    DesyncReport r;
    r.tick = f.tick;
    r.slot = p.role == Role::Player ? p.slot : -1;
    r.name = p.name;
    r.server_hash = f.hash;
    r.where = "forged state";
    r.odd_one_out = label(p);
    r.note = "relay mode: " + label(p) + " sent a state of tick " + std::to_string(f.tick) + " that is not the settled one (" +
             why + "); it was not forwarded, and the peer is never asked for a state again";
    std::string error;
    const std::string path = write_report(r, cfg.desync_dir, &error);
    LOCKSTEP_LOG_ERROR("relay: %s sent a wrong state of tick %u (%s); it is not asked again; report %s", label(p).c_str(),
                       f.tick, why, path.empty() ? error.c_str() : path.c_str());
    if (!ask_for_state(f, now)) LOCKSTEP_LOG_INFO("relay: no other peer holds tick %u's settled state yet", f.tick);
  };
  if (m.tick() != f.tick) return wrong("another tick");
  if (first) {
    f.bytes.clear();
    f.total = m.total_size();
    if (f.total == 0) {  // no longer held: another tick or another peer, after a pause
      ++stats.states_not_held;
      f.not_held.push_back({p.id, f.tick});
      f.source = 0;
      f.retry_at = now + std::max(kNotHeldPauseNs, rtt_ns(p));
      LOCKSTEP_LOG_INFO("relay: %s no longer holds tick %u", label(p).c_str(), f.tick);
      return;
    }
    f.bytes.reserve(f.total);
    f.first_chunk_at = now;  // from here the answer must come at the slowest honest pace
  } else if (m.offset() != f.bytes.size() || m.total_size() != f.total) {
    return wrong("chunks out of place");
  }
  // Every chunk of a state that is held carries bytes (protocol::snapshot): an empty one is no answer.
  if (n == 0 && f.total > 0) return wrong("an empty chunk");
  if (n > 0) {
    f.bytes.insert(f.bytes.end(), m.data()->begin(), m.data()->end());
    f.asked_at = now;  // it is answering: patience counts from its newest chunk with bytes
  }
  if (f.bytes.size() < f.total) return;
  if (hash_bytes(f.bytes) != f.hash) return wrong("its bytes do not hash to the settled value");
  // A resync's state that took so long that the peer can no longer play on from it (it holds the
  // frames of kResyncReach ticks): a fresher one.
  if (f.purpose == StateFetch::Purpose::Resync && executed() - f.tick >= kResyncReach) {
    LOCKSTEP_LOG_WARN("relay: the state of tick %u for %s came %u ticks late; asking for a newer one", f.tick,
                      peers.count(f.target) ? label(peers.at(f.target)).c_str() : "a peer", executed() - f.tick);
    ask_for_state(f, now);
    return;
  }
  if (f.purpose == StateFetch::Purpose::Keyframe) {
    ++stats.keyframes_fetched;
    relay_mode.keyframe = RelayMode::Keyframe{f.tick, f.hash, std::move(f.bytes)};
    LOCKSTEP_LOG_INFO("relay: keyframe of tick %u from %s (%zu bytes, hash %s checked)", relay_mode.keyframe->tick, label(p).c_str(),
                      relay_mode.keyframe->bytes.size(), hash_hex(relay_mode.keyframe->hash).c_str());
    relay_mode.fetches.erase(relay_mode.fetches.begin() + (&f - relay_mode.fetches.data()));
    if (keyframe_fn) keyframe_fn(relay_mode.keyframe->tick, relay_mode.keyframe->hash, relay_mode.keyframe->bytes);
    return;
  }
  deliver_state(f, now);
  relay_mode.fetches.erase(relay_mode.fetches.begin() + (&f - relay_mode.fetches.data()));
}

void ServerSession::Impl::deliver_state(StateFetch& f, std::int64_t now) {
  const auto it = peers.find(f.target);
  if (it == peers.end() || it->second.closing) return;
  Peer& p = it->second;
  RelayMode::Standing& r = relay_of(p);
  PeerAudit& record = audit(p);
  const std::string source = peers.count(f.source) ? label(peers.at(f.source))
                             : f.source == 0 ? std::string("the latest keyframe") : std::string("a peer");
  if (f.purpose == StateFetch::Purpose::Compare) {
    // Not to load: the peer compares it with its own state of that tick and answers DesyncLocated.
    if (!r.locating) return;
    for (const auto& chunk : protocol::snapshot(f.tick, record.epoch, f.hash, f.bytes, false, 0, /*compare=*/true))
      send(p, Channel::Control, chunk);
    transport->flush();
    r.locate_sent_at = now;
    r.locate_source = source;
    r.located.probe_bytes += f.bytes.size();
    ++stats.states_forwarded;
    LOCKSTEP_LOG_INFO("relay: sent %s the majority's state of tick %u from %s to compare with its own", label(p).c_str(),
                      f.tick, source.c_str());
    return;
  }
  const bool join = f.purpose == StateFetch::Purpose::Join;
  if (join) {
    // The joiner starts from tick f.tick: the frames after it follow, and its first hash after
    // it is held to the settled one.
    record.verify_tick = f.tick;
    record.hashes.reset_to(f.tick);
    feed.starts_at(p.index, f.tick, now);
  } else {
    ++record.epoch;
    ++stats.resyncs;
    record.resync_at = now;
    ++record.resync_tries;
    record.hashes.reset_to(executed());  // its hashes count again from the next tick, of the new epoch
    relay_mode.consensus.forget(p.id);                // and its diverged ones of ticks not decided yet no longer do
    record.desynced = false;
    r.resyncing = false;
    r.outvoted = false;
  }
  feed.loads_state(p.index, f.tick);
  for (const auto& chunk : protocol::snapshot(f.tick, record.epoch, f.hash, f.bytes, join)) send(p, Channel::Control, chunk);
  if (join && f.tick < executed()) {
    // The newest frames first, with the state: they tell the joiner the session's time before
    // it samples its first input (the frames after the state alone would put it in the past).
    const auto window = static_cast<Tick>(protocol::kMaxWindow);
    if (executed() - f.tick > window) send_play(p, executed() - window + 1, executed());
    send_play(p, f.tick + 1, std::min<Tick>(executed(), f.tick + window));
  }
  transport->flush();
  stats.last_snapshot_bytes = static_cast<std::int64_t>(f.bytes.size());
  ++stats.states_forwarded;
  LOCKSTEP_LOG_INFO("relay: sent %s the state of tick %u from %s (%zu bytes, hash %s checked, %lld ms after it was asked for)",
                    label(p).c_str(), f.tick, source.c_str(), f.bytes.size(), hash_hex(f.hash).c_str(), static_cast<long long>((now - f.started_at) / 1'000'000));
}

// A fetch's source that went away, fell silent or trickles is passed over (f.source 0 again),
// counted as unanswered, and not asked for any state for a while.
void ServerSession::Impl::pass_over_silent_source(StateFetch& f, std::int64_t now) {
  if (f.source == 0) return;
  const auto source = peers.find(f.source);
  const bool gone = source == peers.end() || source->second.closing;
  // Over a lossy path ENet may take seconds to deliver the request: patience counts from then.
  if (!gone && f.total == 0 && peer_sending(source->second.link)) f.asked_at = now;
  const std::int64_t patience = gone ? 0 : std::max(kFetchPatienceNs, 8 * rtt_ns(source->second));
  const bool silent = gone || now - f.asked_at > patience;
  // A trickle: past its patience, fewer bytes than the slowest honest pace would have brought.
  const std::int64_t pacing = f.first_chunk_at != 0 ? now - f.first_chunk_at - patience : 0;
  const bool slow = pacing > 0 && static_cast<double>(f.bytes.size()) <
                                      static_cast<double>(pacing) * 1e-9 * static_cast<double>(kMinSourceBytesPerSecond);
  if (!silent && !slow) return;
  ++stats.states_unanswered;
  if (!gone) relay_of(source->second).source_benched_until = now + kSourceBenchNs;
  LOCKSTEP_LOG_WARN("relay: %s did not send its state of tick %u in time (%zu of %u bytes); asking another peer",
                    gone ? "a peer that left" : label(source->second).c_str(), f.tick, f.bytes.size(), f.total);
  f.forget_source();
}

// Ends fetches[i] unserved: a keyframe waits for the next interval, a comparison is reported as
// not localized, and a peer waiting to join or to be resynced is dropped with `why`.
void ServerSession::Impl::fail_fetch(std::size_t i, const std::string& why, std::int64_t now) {
  const StateFetch f = std::move(relay_mode.fetches[i]);
  relay_mode.fetches.erase(relay_mode.fetches.begin() + static_cast<std::ptrdiff_t>(i));
  // A source still answering at the deadline did not answer in time: counted, and not asked soon.
  if (const auto source = f.source != 0 ? peers.find(f.source) : peers.end(); source != peers.end()) {
    ++stats.states_unanswered;
    relay_of(source->second).source_benched_until = now + kSourceBenchNs;
  }
  if (f.purpose == StateFetch::Purpose::Keyframe) {
    LOCKSTEP_LOG_WARN("relay: no keyframe this interval: %s", why.c_str());
    return;
  }
  const auto target = peers.find(f.target);
  if (target == peers.end() || target->second.closing) return;
  Peer& p = target->second;
  if (f.purpose == StateFetch::Purpose::Compare) {
    if (relay_of(p).locating) locate_failed(p, why, now);
    return;
  }
  relay_of(p).resyncing = false;
  kick(p, why);
}

// Every fetch ends within its deadline, served or not: the join timeout for the whole of it
// (the probe timeout for a comparison no source is sending), or as soon as it has sent every
// request it may; meanwhile sources that went away, fell silent or trickle are passed over, and
// after a "not held" the next is asked once the pause is over.
void ServerSession::Impl::check_fetches(std::int64_t now) {
  for (std::size_t i = 0; i < relay_mode.fetches.size();) {
    StateFetch& f = relay_mode.fetches[i];
    const bool for_keyframe = f.purpose == StateFetch::Purpose::Keyframe;  // no target
    if (!for_keyframe) {
      const auto target = peers.find(f.target);
      if (target == peers.end() || target->second.closing) {
        relay_mode.fetches.erase(relay_mode.fetches.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      if (f.purpose == StateFetch::Purpose::Compare && !relay_of(target->second).locating) {
        relay_mode.fetches.erase(relay_mode.fetches.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
    }
    pass_over_silent_source(f, now);
    if (now - f.started_at > cfg.join_timeout_ns) {
      fail_fetch(i, "no peer sent a state that hashes to the settled one within " +
                        std::to_string(cfg.join_timeout_ns / 1'000'000) + " ms", now);
      continue;
    }
    if (f.source == 0 && f.purpose == StateFetch::Purpose::Compare && now - f.started_at > cfg.probe_timeout_ns) {
      fail_fetch(i, "no majority peer sent its state of the tick in time", now);
      continue;
    }
    if (f.source == 0 && now >= f.retry_at && !ask_for_state(f, now)) {
      if (f.requests >= ServerSession::kMaxRequestsPerFetch) {
        fail_fetch(i, "no peer sent a state that hashes to the settled one in " + std::to_string(f.requests) +
                          " requests (" + std::to_string(f.not_held.size()) + " no longer held the tick)", now);
        continue;
      }
      if (for_keyframe) {  // no voter holds one now: at the next interval
        relay_mode.fetches.erase(relay_mode.fetches.begin() + static_cast<std::ptrdiff_t>(i));
        continue;
      }
      f.retry_at = now + kNotHeldPauseNs;  // nobody to ask now: look again shortly
    }
    ++i;
  }
  // A peer that has the majority's state and does not answer with its localization in time.
  for (auto& [id, p] : peers) {
    RelayMode::Standing& r = relay_of(p);
    if (!r.locating || r.locate_sent_at == 0 || p.closing) continue;
    if (peer_sending(p.link)) r.locate_sent_at = now;  // the state is still on its way to it
    if (now - r.locate_sent_at > std::max(cfg.probe_timeout_ns, 8 * rtt_ns(p)))
      locate_failed(p, "the peer did not compare its state with the majority's in time", now);
  }
}

// The desynced peer's own localization, by its rules, against the majority's state the server
// forwarded: the report takes its entity, fields and both values (the majority's as the
// reference's), and the first byte where the two states differ. Its word is all there is, and
// the report says so; the votes stand on their own.
void ServerSession::Impl::on_located(Peer& p, const wire::DesyncLocated& m, std::int64_t now) {
  RelayMode::Standing& standing = relay_of(p);
  if (!relay() || !standing.locating || standing.locate_sent_at == 0 || m.tick() != standing.located.tick)
    return drop(p, DropReason::UnexpectedMessage, " (an unasked desync localization)");
  DesyncReport r = std::move(standing.located);
  standing.locating = false;
  const bool split = std::exchange(standing.split, false);
  r.probe_bytes += static_cast<std::uint64_t>(m.fields() ? m.fields()->size() * 24 : 0) + 64;
  if (!m.available()) {
    r.note = "relay mode: the peer no longer held its state of the tick to compare with the majority's";
  } else {
    r.where = m.where() ? m.where()->str() : "unknown";
    r.entity = m.entity() >= -1 ? m.entity() : -1;
    r.state_bytes = m.state_bytes();
    if (m.fields())
      for (const auto* f : *m.fields()) {
        const auto kind = static_cast<FieldValue::Kind>(f->kind());
        const std::string name = f->name() ? f->name()->str() : "";
        r.server_fields.push_back({name, kind, f->reference()});
        r.client_fields.push_back({name, kind, f->own()});
      }
    r.note = (split ? "relay mode: no strict majority, so neither side is blamed; localized by this peer's own rules "
                      "against the other side's state of the tick (from " + standing.locate_source +
                          ", checked against its own hash; the reference values are the other side's)"
                    : "relay mode: localized by the peer's own rules against the majority's state of the tick (from " +
                          standing.locate_source + ", checked against the settled hash)") +
             (m.first_byte() >= 0 ? "; the serialized states first differ at byte " + std::to_string(m.first_byte()) : "");
  }
  referee.queue({p.id, std::move(r), now, audit(p).kick_after_probe, split, {}});
}

void ServerSession::Impl::locate_failed(Peer& p, const std::string& note, std::int64_t now) {
  RelayMode::Standing& standing = relay_of(p);
  if (!standing.locating) return;
  standing.locating = false;
  DesyncReport r = std::move(standing.located);
  const bool split = std::exchange(standing.split, false);
  r.note = "relay mode: not localized: " + note +
           (split ? "; no strict majority of the voters settled this tick: every side is reported"
                  : "; the voters' majority names the odd one out");
  std::erase_if(relay_mode.fetches, [&](const StateFetch& f) { return f.target == p.id && f.purpose == StateFetch::Purpose::Compare; });
  referee.queue({p.id, std::move(r), now, audit(p).kick_after_probe, split, {}});
}

}  // namespace lockstep
