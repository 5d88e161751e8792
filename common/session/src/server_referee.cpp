// The server as referee: every peer's hashes compared with the server's (DesyncReferee keeps the
// votes and the reports), a join verified by its first hash, a desync localized by probes
// (desync_probe.hpp) and acted on as --on-desync asks: reported, the session stopped, or the
// peer resynced.
#include <algorithm>
#include <tuple>
#include <utility>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {
constexpr std::int64_t kReportIntervalNs = 100'000'000;  // at most one desync report per peer this often
constexpr std::int64_t kResyncPatienceNs = 2'000'000'000;  // a resync snapshot not taken by then is sent again
constexpr std::uint32_t kResyncTries = 2;                  // snapshots a client may drop before it is dropped
constexpr Tick kHashSlackTicks = 50;                       // hashes may lag this far (0.5 s) before hash silence is timed
}  // namespace

void ServerSession::Impl::take_hashes(Peer& p, const protocol::ClientPlay& m, std::int64_t now) {
  PeerAudit& record = audit(p);
  const Tick first = m.hash_first_tick;
  for (std::size_t i = 0; i < m.hashes.size(); ++i) {
    const Tick t = first + static_cast<Tick>(i);
    if (t < first) continue;  // wrapped
    switch (record.hashes.check(t, executed())) {
      case HashLedger::Verdict::Already: continue;
      case HashLedger::Verdict::Future: drop(p, DropReason::HashForFutureTick); break;
      case HashLedger::Verdict::TooOld: drop(p, DropReason::HashTooOld); continue;
      case HashLedger::Verdict::Compare:
        if (record.verifying && t <= record.verify_tick) continue;
        if (relay()) {
          take_vote(p, t, m.hashes[i], now);
          if (p.closing) return;
          record.hashes.mark(t);
          continue;
        }
        if (record.verifying && !verify(p, t, m.hashes[i], simulation->hash_at(t), now)) return;
        compare_hash(p, t, m.hashes[i], simulation->hash_at(t), now);
        record.hashes.mark(t);
        continue;
    }
    break;  // a hash for a tick not executed yet: the rest are newer still
  }
  // Hashes arrive newest first; the acknowledgement covers every one up to a gap.
  record.hashes.advance(executed(), now);
  if (p.role == Role::Player) slots[static_cast<std::size_t>(p.slot)].hashes_checked = record.hashes.ack();
}

// A player in play must report its state hashes: one whose hashes stop is reported and dropped.
void ServerSession::Impl::check_hash_silence(Peer& p, std::int64_t now) {
  PeerAudit& record = audit(p);
  if (phase != Phase::Running || record.verifying || executed() <= record.hashes.ack() + kHashSlackTicks) {
    record.hashes.set_moved_at(now);
    return;
  }
  if (record.hashes.moved_at() == 0) record.hashes.set_moved_at(now);  // owes hashes from now
  if (now - record.hashes.moved_at() <= cfg.hash_silence_ns) return;
  ++stats.hash_silences;
  LOCKSTEP_LOG_ERROR("hash silence: player %d (%s) reported no state hash past tick %u for %lld ms", p.slot,
                     p.name.c_str(), record.hashes.ack(), static_cast<long long>(cfg.hash_silence_ns / 1'000'000));
  kick(p, "hash silence: no state hashes for " + std::to_string(cfg.hash_silence_ns / 1'000'000) +
              " ms; every player must report one per tick");
}

// A probe the client does not answer in time ends, and its report goes as far as it got.
void ServerSession::Impl::expire_probes(std::int64_t now) {
  for (auto& [id, p] : peers) {
    DesyncLocalizer& probe = audit(p).probe;
    if (probe.active() && now - probe.started_at() > std::max(cfg.probe_timeout_ns, 8 * rtt_ns(p))) {
      probe.give_up("the client did not answer the desync probe in time");
      follow_probe(p, DesyncLocalizer::Outcome::Done, now);
    }
  }
}

// The session ends: every report still open is written as far as it got, and nothing more is done.
void ServerSession::Impl::close_reports(std::int64_t now) {
  for (auto& [id, p] : peers) close_report(p, "the session ended", now);
  settle_reports(now, /*force=*/true, /*act=*/false);
}

// p's desync being localized (its probe, or in relay mode its state compared) ends unfinished,
// `cause` saying why: its report is queued as far as it got. A peer that leaves mid-probe is still
// reported (its audit is forgotten with it).
void ServerSession::Impl::close_report(Peer& p, const std::string& cause, std::int64_t now) {
  if (audit(p).probe.active()) {
    audit(p).probe.give_up(cause + " before the desync was localized");
    queue_report(p, now);
  }
  if (relay_of(p).locating) locate_failed(p, cause + " before the peer localized its desync", now);
}

// The first hash after a join snapshot decides: equal to `ours` (the server's, or the settled
// one), and the player counts from the next tick; another, and the server localizes the
// difference like any desync, writes its report, counts it and then closes the connection.
bool ServerSession::Impl::verify(Peer& p, Tick t, std::uint64_t theirs, std::uint64_t ours, std::int64_t now) {
  PeerAudit& record = audit(p);
  record.verifying = false;
  if (theirs != ours) {
    const std::string why = "its state after the snapshot does not match the server's at tick " + std::to_string(t);
    if (p.role == Role::Spectator) ++stats.spectator_desyncs;
    else ++stats.desyncs;
    ++stats.join_mismatches;
    record.desynced = true;
    record.last_report_at = now;
    referee.note(DesyncEvent{t, p.slot, p.name, ours, theirs});
    LOCKSTEP_LOG_ERROR("DESYNC at tick %u after a join snapshot: %s %d (%s) reports %s, the server has %s", t,
                       p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(),
                       hash_hex(theirs).c_str(), hash_hex(ours).c_str());
    record.kick_after_probe = why;
    send(p, Channel::Control, protocol::desync_notice(t, p.slot, ours, theirs));
    start_probe(p, t, ours, theirs, now);
    return false;
  }
  ++stats.verified;
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];
    if (!s.present) s.return_pending = true;
  }
  LOCKSTEP_LOG_INFO("%s %d (%s) verified: its hash at tick %u matches the server's",
                    p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(), t);
  return true;
}

// `ours` is the reference: the server's hash, or the voters' settled one; on a `split` tick
// (relay mode, no strict majority) there is none, and every voter is reported.
void ServerSession::Impl::compare_hash(Peer& p, Tick t, std::uint64_t theirs, std::uint64_t ours, std::int64_t now,
                                       bool split) {
  RelayMode::Standing& r = relay_of(p);
  PeerAudit& record = audit(p);
  ++stats.hashes_compared;
  if (!referee.labelled(p.id)) referee.set_label(p.id, label(p));
  if (referee.vote(p.id, t, theirs, ours) && !split) {
    r.outvoted = false;  // back in step with the majority: its votes count again
    return;
  }
  // Relay mode: a hash that lost to a settled majority; its votes no longer count (below).
  if (relay() && !split && ours != 0) r.outvoted = true;
  // Every divergent tick counts; the first of a divergence (again after a resync) is reported,
  // at most one report per peer every 100 ms.
  ++stats.divergent_ticks;
  if (record.desynced || record.probe.active() || now - record.last_report_at < kReportIntervalNs) return;
  record.desynced = true;
  record.last_report_at = now;
  if (p.role == Role::Spectator) ++stats.spectator_desyncs;
  else ++stats.desyncs;
  if (relay() && !split && ours != 0 && p.role == Role::Player) note_outvoted(p, t, ours);
  referee.note(DesyncEvent{t, p.slot, p.name, ours, theirs});
  LOCKSTEP_LOG_ERROR("DESYNC at tick %u: %s %d (%s) reports %s, %s%s", t, p.role == Role::Player ? "player" : "spectator",
                     p.slot, p.name.c_str(), hash_hex(theirs).c_str(),
                     split ? "and no strict majority of the voters agrees on any hash"
                           : relay() ? "the voters' majority has " : "the server has ",
                     split ? "" : hash_hex(ours).c_str());
  send(p, Channel::Control, protocol::desync_notice(t, p.slot, ours, theirs));
  if (split) r.split = true;
  start_probe(p, t, ours, theirs, now);
}

// A player outvoted at the start of a divergence: by which players (the settled hash's voters), and
// whether the same ones have done so collusion_episodes times. Two players sharing other rules
// outvote an honest third every time, and resync it into their world: this cannot tell them from
// an honest majority, but it can say that the same majority keeps winning against the same player.
void ServerSession::Impl::note_outvoted(Peer& p, Tick t, std::uint64_t settled) {
  std::uint32_t mask = 0;
  for (const auto& [id, hash] : relay_mode.consensus.votes(t)) {
    const auto it = peers.find(id);
    if (hash == settled && it != peers.end() && it->second.role == Role::Player && it->second.slot >= 0 && it->second.slot < 32)
      mask |= 1u << it->second.slot;
  }
  Slot& s = slots[static_cast<std::size_t>(p.slot)];
  ++s.outvoted;
  const std::uint32_t times = ++s.outvoted_by[mask];
  if (cfg.collusion_episodes == 0 || times < cfg.collusion_episodes) return;
  std::string by;
  for (std::uint32_t i = 0, n = 0; i < 32; ++i)
    if (mask & (1u << i)) by += std::string(n++ ? ", " : "") + std::to_string(i) + " (" + slots[i].name + ")";
  relay_of(p).collusion = "player " + std::to_string(p.slot) + " (" + p.name + ") has been outvoted " + std::to_string(times) +
                      " times by the same players, " + by + ": possible collusion (docs/GUIDE.md, \"Relay verdicts\")";
  if (times == cfg.collusion_episodes) {
    ++stats.collusion_suspected;
    LOCKSTEP_LOG_WARN("relay: %s", relay_of(p).collusion.c_str());
  }
}

// The state history covers the longest round trip of any peer, so that a desync is localized
// at any latency (history_for_round_trip); it shrinks only when far too long.
void ServerSession::Impl::fit_history() {
  if (relay()) return;  // no states held
  const std::int64_t longest = longest_rtt([](const Peer& p) { return p.role != Role::Pending && !p.closing; });
  const std::size_t held = simulation->fit(longest, cfg.state_history, cfg.state_history_max);
  stats.state_history_ticks = std::max<std::uint64_t>(stats.state_history_ticks, held);
}

void ServerSession::Impl::start_probe(Peer& p, Tick t, std::uint64_t ours, std::uint64_t theirs, std::int64_t now) {
  RelayMode::Standing& standing = relay_of(p);
  PeerAudit& record = audit(p);
  DesyncReport r;
  r.tick = t;
  r.slot = p.slot;
  r.name = p.name;
  r.server_hash = ours;
  r.client_hash = theirs;
  r.replay_file = cfg.record_path;
  r.collusion = standing.collusion;
  if (relay()) {
    // No state of its own: on a split tick the votes are all there is; otherwise the peer
    // compares its state with the majority's (server_relay.cpp), and the report waits for that.
    if (standing.split) {
      // No majority, no blame: each side localizes against another side's state of the tick (a
      // voter with another hash), held to that side's own hash. With none to ask, the votes alone.
      std::uint32_t other = 0;
      for (const auto& [id, hash] : relay_mode.consensus.votes(t)) {
        const auto it = peers.find(id);
        if (id != p.id && hash != theirs && it != peers.end() && votes(it->second)) {
          other = id;
          break;
        }
      }
      if (other == 0) {
        r.note = "relay mode: no strict majority of the voters settled this tick; every side is reported";
        referee.queue({p.id, std::move(r), now, record.kick_after_probe, std::exchange(standing.split, false), {}});
        return;
      }
      standing.locating = true;
      standing.located = std::move(r);
      standing.locate_sent_at = 0;
      serve_state(p, StateFetch::Purpose::Compare, now, t, other);
      return;
    }
    standing.locating = true;
    standing.located = std::move(r);
    standing.locate_sent_at = 0;
    serve_state(p, StateFetch::Purpose::Compare, now, t);
    return;
  }
  // The state of the desync's tick stays until the probe is done, however long its round trips.
  record.probe_pinned = simulation->pin(t);
  follow_probe(p, record.probe.start(std::move(r), simulation->state_at(t), now), now);
}

void ServerSession::Impl::on_detail(Peer& p, const wire::DesyncDetail& m, std::size_t size, std::int64_t now) {
  if (relay()) return drop(p, DropReason::UnexpectedMessage, " (desync detail: relay mode sends no probes)");
  ProbeAnswer a;
  a.tick = m.tick();
  a.level = m.level();
  a.first = m.first();
  a.available = m.available();
  if (m.hashes()) a.hashes.assign(m.hashes()->begin(), m.hashes()->end());
  if (m.values()) a.values.assign(m.values()->begin(), m.values()->end());
  const auto outcome = audit(p).probe.answer(a, size, simulation->state_at(m.tick()));
  if (outcome == DesyncLocalizer::Outcome::Unasked) return drop(p, DropReason::UnexpectedMessage, " (unasked desync detail)");
  if (outcome == DesyncLocalizer::Outcome::OutOfRange) return drop(p, DropReason::FieldOutOfRange);
  follow_probe(p, outcome, now);
}

// Sends the next question; once the probe is done, its report waits for the tick's votes.
void ServerSession::Impl::follow_probe(Peer& p, DesyncLocalizer::Outcome outcome, std::int64_t now) {
  if (outcome == DesyncLocalizer::Outcome::Ask) {
    const ProbeQuestion& q = audit(p).probe.question();
    const auto bytes = protocol::desync_probe(q.tick, q.level, q.first, q.count, q.block_size);
    audit(p).probe.count_sent(bytes.size());
    return send(p, Channel::Control, bytes);
  }
  if (outcome != DesyncLocalizer::Outcome::Done) return;
  queue_report(p, now);
  settle_reports(now, /*force=*/false, /*act=*/true);
}

void ServerSession::Impl::queue_report(Peer& p, std::int64_t now) {
  PeerAudit& record = audit(p);
  const Tick t = record.probe.report().tick;
  // A divergence that continues its peer's episode is counted in that report, without a bundle:
  // its states are not serialized for nothing.
  const bool bundled = cfg.desync_bundles && bundles_written < kMaxBundles &&
                       !referee.continues_episode(p.id, record.probe.report(), now);
  std::vector<BundleState> states = bundled ? bundle_states(t) : std::vector<BundleState>{};
  if (record.probe_pinned) simulation->unpin(t);
  record.probe_pinned = false;
  referee.queue({p.id, record.probe.report(), now, record.kick_after_probe, std::exchange(relay_of(p).split, false),
                 std::move(states)});
}

// The server's states at tick t and the few before it that it still holds (none in relay mode).
std::vector<BundleState> ServerSession::Impl::bundle_states(Tick t) {
  std::vector<BundleState> out;
  if (!simulation) return out;
  for (Tick s = t > kBundleTicksBefore ? t - kBundleTicksBefore : 0; s <= t && s <= executed(); ++s) {
    const Simulation* sim = simulation->state_at(s);
    if (!sim) continue;
    BundleState st{s, 0, {}};
    sim->serialize(st.bytes);
    st.hash = hash_bytes(st.bytes);
    out.push_back(std::move(st));
  }
  return out;
}

// The desync's bundle: the server's states, every voter's hash of the tick, and the replay from
// the server's first state held through the tick (the executed frames it keeps). "" when none
// was written.
std::string ServerSession::Impl::write_desync_bundle(const DesyncReport& decided, std::vector<BundleState> states) {
  if (!cfg.desync_bundles) return "";
  if (bundles_written == kMaxBundles) LOCKSTEP_LOG_WARN("desync bundles: %u written; no more this session", kMaxBundles);
  if (bundles_written++ >= kMaxBundles) return "";
  DesyncBundle b;
  b.written_by = "server";
  b.tick = decided.tick;
  b.report = report_json(decided);
  const Tick t = decided.tick;
  if (simulation) {
    BundleParty server{"server", {}, std::move(states)};
    const Tick from = executed() >= kHistory ? executed() - static_cast<Tick>(kHistory) + 1 : 1;
    for (Tick s = from; s <= executed(); ++s) server.hashes.emplace_back(s, simulation->hash_at(s));
    b.parties.push_back(std::move(server));
  }
  for (const auto& [hash, who] : decided.votes)
    for (const std::string& name : who) {
      if (name == "server") continue;
      b.parties.push_back({name, {{t, hash}}, {}});
    }
  Replay& r = b.replay;
  r.header.protocol_version = kProtocolVersion;
  r.header.fingerprint = world_fingerprint;
  r.header.world = cfg.world;
  r.header.input_size = input_size;
  r.header.module = cfg.module_name;
  r.header.libraries = cfg.libraries;
  r.header.input_delay = cfg.input_delay;
  for (const auto& slot : slots) r.header.names.push_back(slot.name);
  const BundleState* start =
      simulation && !b.parties.empty() && !b.parties[0].states.empty() ? &b.parties[0].states.front() : nullptr;
  const Tick from = start ? start->tick : t;
  r.header.start_tick = from;
  r.frames_from = from;
  if (start && from != 0) r.keyframes.push_back({from, start->hash, start->bytes});
  if (start)
    for (Tick s = from + 1; s <= t && s <= executed() && executed() - s < kHistory; ++s) {
      r.frames.push_back(feed.at(s));
      r.hashes.push_back(simulation->hash_at(s));
    }
  r.end_reason = "desync at tick " + std::to_string(t);
  const std::string path = bundle_path(cfg.desync_dir, t, decided.slot);
  std::string error;
  if (!write_bundle(path, b, &error)) {
    LOCKSTEP_LOG_ERROR("desync bundle: %s", error.c_str());
    return "";
  }
  return path;
}

// Every peer in play has reported its hash of tick t (or can no longer).
bool ServerSession::Impl::votes_in(Tick t) const {
  for (const auto& [id, q] : peers) {
    if (q.role == Role::Pending || q.closing || audit(q).verifying) continue;
    const auto verdict = audit(q).hashes.check(t, executed());
    if (verdict == HashLedger::Verdict::Compare || verdict == HashLedger::Verdict::Future) return false;
  }
  return true;
}

// A report is written once every peer's hash of its tick is in, so the majority counts them all,
// or after two of the longest round trips (at least 300 ms) when one never comes; then what
// --on-desync asks is done (`act`; not while the session ends).
void ServerSession::Impl::settle_reports(std::int64_t now, bool force, bool act) {
  const std::int64_t wait_ns =
      std::max<std::int64_t>(300'000'000, 2 * longest_rtt([](const Peer& q) { return !q.closing; }));
  for (DesyncReferee::Pending& pr :
       referee.take_ready(now, wait_ns, force, [this](Tick t) { return votes_in(t); })) {
    if (!pr.kick_reason.empty())
      pr.report.note += (pr.report.note.empty() ? "" : "; ") + std::string("found after a join snapshot");
    record_report(pr.report, std::move(pr.states), pr.peer_id, now);
    if (!act) continue;
    const auto found = peers.find(pr.peer_id);
    if (found == peers.end() || found->second.closing) continue;
    Peer& p = found->second;
    PeerAudit& record = audit(p);
    const DesyncReport& r = pr.report;
    if (!pr.kick_reason.empty()) {
      kick(p, pr.kick_reason);
      continue;
    }
    // A spectator's divergence is its own: stop drops that spectator, never the session.
    if (p.role == Role::Spectator && cfg.on_desync == OnDesync::Stop) {
      kick(p, "its state diverged from the server's at tick " + std::to_string(r.tick));
      continue;
    }
    switch (cfg.on_desync) {
      case OnDesync::Report: break;
      case OnDesync::Stop:
        end_session(wire::EndReason::Desync,
                    "desync at tick " + std::to_string(r.tick) + " of player " + std::to_string(r.slot) + " (" + r.name + ")",
                    now);
        break;
      case OnDesync::Resync:
        if (pr.split) break;  // with no majority there is no state to resync to
        if (cfg.max_resyncs != 0 && record.resyncs >= cfg.max_resyncs) {
          kick(p, "it diverged again after " + std::to_string(record.resyncs) +
                      " resyncs: its rules or its machine differ from the majority's");
          break;
        }
        ++record.resyncs;
        resync(p, now);
        break;
    }
  }
}

// Decided by majority, written and kept by the referee; the game hears of it as an event.
void ServerSession::Impl::record_report(DesyncReport r, std::vector<BundleState> states, std::uint32_t peer,
                                        std::int64_t now) {
  if (referee.continues_episode(peer, r, now)) {  // the same peer again: counted in its episode's report
    const DesyncReport& kept = referee.repeat(peer, r.tick, now, cfg.desync_dir, r.collusion);
    ++stats.desyncs_in_episodes;
    emit(SessionEvent::Kind::Desync, r.tick, r.slot, r.name,
         "diverged again (" + std::to_string(kept.episode_divergences) + " times since tick " + std::to_string(kept.tick) + ")",
         3);
    return;
  }
  DesyncReport decided = r;
  referee.decide(decided);
  const std::string bundle = write_desync_bundle(decided, std::move(states));
  const DesyncReport& kept = referee.record(std::move(r), cfg.desync_dir, bundle);
  referee.open_episode(peer, now);
  stats.reports_unwritten = referee.unwritten();
  std::string detail = kept.where == "entity" && !kept.server_fields.empty()
                           ? "entity " + std::to_string(kept.entity) + " field " + kept.server_fields[0].name
                           : kept.where + (kept.note.empty() ? "" : ": " + kept.note);
  if (!kept.odd_one_out.empty()) detail += "; odd one out: " + kept.odd_one_out;
  emit(SessionEvent::Kind::Desync, kept.tick, kept.slot, kept.name, std::move(detail), 3);
}

std::string ServerSession::Impl::label(const Peer& p) {
  return (p.role == Role::Player ? "player " + std::to_string(p.slot) : std::string("spectator")) + " (" + p.name + ")";
}

// Sends the authoritative current state; the client loads it and plays on from there.
void ServerSession::Impl::resync(Peer& p, std::int64_t now, bool again) {
  PeerAudit& record = audit(p);
  if (relay()) {  // the state comes from a peer; the epoch moves when it is delivered
    if (!relay_of(p).resyncing) serve_state(p, StateFetch::Purpose::Resync, now);
    return;
  }
  if (!again) ++record.epoch;
  ++stats.resyncs;
  record.resync_at = now;
  ++record.resync_tries;
  send_snapshot(p, /*join=*/false);  // (hashes count again from the next tick)
  record.desynced = false;
  LOCKSTEP_LOG_INFO("resync: sent %s the state of tick %u (%lld bytes)", p.name.c_str(), executed(),
                    static_cast<long long>(stats.last_snapshot_bytes));
}

// Hashes still of the epoch before a resync: the client has not loaded the snapshot. It may still
// be on its way (a large state takes a while) or waiting for the frames up to it; long after it
// has been delivered, the client dropped it (it did not load, or did not fit): the state once
// more, in the same epoch (either snapshot is the server's state), and a client that takes
// neither is dropped, never silently left unchecked.
void ServerSession::Impl::resync_not_taken(Peer& p, std::int64_t now) {
  PeerAudit& record = audit(p);
  if (peer_sending(p.link)) {  // the patience counts from its delivery
    record.resync_at = now;
    return;
  }
  if (now - record.resync_at < std::max<std::int64_t>(kResyncPatienceNs, 8 * rtt_ns(p))) return;
  ++stats.resyncs_not_taken;
  if (record.resync_tries >= kResyncTries) {
    LOCKSTEP_LOG_ERROR("resync: %s %d (%s) took none of %u snapshots", p.role == Role::Player ? "player" : "spectator",
                       p.slot, p.name.c_str(), record.resync_tries);
    return kick(p, "it did not load the state sent to resync it (" + std::to_string(record.resync_tries) + " tries)");
  }
  LOCKSTEP_LOG_WARN("resync: %s still reports hashes of the state before its resync %lld ms after it arrived; sending "
                    "the state again",
                    p.name.c_str(), static_cast<long long>((now - record.resync_at) / 1'000'000));
  resync(p, now, /*again=*/true);
}

// A player's game reports its result; the newest counts. Bounded by the protocol (256 bytes) and
// the message rate; a spectator's is not a player's and is dropped.
void ServerSession::Impl::on_game_result(Peer& p, const wire::GameResult& m) {
  if (p.role != Role::Player) return drop(p, DropReason::UnexpectedMessage, " (a game result from a non-player)");
  Slot& s = slots[static_cast<std::size_t>(p.slot)];
  s.result.clear();
  if (m.result()) s.result.assign(m.result()->begin(), m.result()->end());
  if (!s.result_reported)
    LOCKSTEP_LOG_INFO("player %d (%s) reported its game's result (%zu bytes) at tick %u", p.slot, p.name.c_str(),
                      s.result.size(), m.tick());
  s.result_reported = true;
  ++stats.results_received;
}

void ServerSession::Impl::settle_result() {
  SessionResult r;
  r.protocol_id = cfg.protocol_id;
  r.ticks = executed();
  std::tie(r.settled_tick, r.final_hash) = latest_settled();
  r.issued_at = unix_now();
  r.relay = relay();
  r.incomplete = incomplete;
  // Settled by the seats, not by those who reported: a claim settles the result when the seats
  // that played to the end and made it are more than half of all the seats. A seat that left
  // before the end has no say unless every seat makes the same claim. Anything less is disputed:
  // no bytes are chosen for it, and every seat's claim is in the document.
  for (std::size_t i = 0; i < slots.size(); ++i) {
    const Slot& s = slots[i];
    if (!s.taken) continue;
    SessionResult::Seat seat;
    seat.slot = static_cast<std::uint32_t>(i);
    seat.name = s.name;
    seat.client_id = s.bound ? s.client_id : 0;
    seat.reported = s.result_reported;
    seat.present = (s.present && !s.leaving) || s.return_pending;  // dropped or left in the last update: not
    if (s.result_reported) seat.claim = s.result;
    seat.outvoted = s.outvoted;
    seat.collusion_suspected = cfg.collusion_episodes > 0 &&
                               std::any_of(s.outvoted_by.begin(), s.outvoted_by.end(),
                                           [&](const auto& by) { return by.second >= cfg.collusion_episodes; });
    r.seats.push_back(std::move(seat));
  }
  const std::size_t reporters = static_cast<std::size_t>(
      std::count_if(r.seats.begin(), r.seats.end(), [](const SessionResult::Seat& s) { return s.reported; }));
  const bool unanimous = !r.seats.empty() && reporters == r.seats.size() &&
                         std::all_of(r.seats.begin(), r.seats.end(), [&](const auto& s) { return s.claim == r.seats[0].claim; });
  if (unanimous) {
    r.result = r.seats[0].claim;
  } else if (reporters > 0) {
    r.disputed = true;
    for (const auto& seat : r.seats) {
      if (!seat.reported || !seat.present) continue;
      const auto backers = std::count_if(r.seats.begin(), r.seats.end(), [&](const SessionResult::Seat& o) {
        return o.reported && o.present && o.claim == seat.claim;
      });
      if (2 * static_cast<std::size_t>(backers) > r.seats.size()) {
        r.result = seat.claim;
        r.disputed = false;
        break;
      }
    }
  }
  for (auto& seat : r.seats) seat.agreed = !r.disputed && seat.reported && seat.claim == r.result;
  if (result_key) sign_result(r, *result_key);
  if (reporters > 0)
    LOCKSTEP_LOG_INFO("the session's result: %zu of %zu players reported, %s%s", reporters, r.seats.size(),
                      r.disputed ? "disputed (no claim holds a strict majority of the seats)" : "settled by the seats",
                      r.mac ? "; authenticated" : "; unsigned (no token or result key)");
  result = std::move(r);
}

}  // namespace lockstep
