// The server in play: inputs and hashes in, each tick's frame assembled, stepped, hashed and
// sent (with redundancy), every client hash compared, and a desync localized and acted on.
#include <algorithm>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {
constexpr std::int64_t kReportIntervalNs = 100'000'000;  // at most one desync report per peer this often
constexpr Tick kSteadyTick = 2 * kTickRate;              // steady-state figures count from this tick (2 s in)
constexpr std::int64_t kResyncPatienceNs = 2'000'000'000;  // a resync snapshot not taken by then is sent again
constexpr std::uint32_t kResyncTries = 2;                  // snapshots a client may drop before it is dropped
}  // namespace

void ServerSession::Impl::on_client_play(Peer& p, const protocol::ClientPlay& m, std::int64_t now,
                                         std::int64_t arrived) {
  if (p.role == Role::Pending) return drop(p, DropReason::NotJoined);
  // Frame ack: what the client has, used to choose which frames to send again.
  if (m.frame_ack > executed()) return drop(p, DropReason::FrameAckOutOfRange);
  if (m.frame_ack > p.frame_ack) {
    p.frame_ack = m.frame_ack;
    p.frame_ack_moved = now;
  }
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];
    s.last_heard = now;
    if (m.has_lead) s.lead_us = std::clamp<std::int32_t>(m.lead_us, 0, 10'000'000);
    if (m.input_count > 0) {
      if (!check_packed(m.inputs.view(), m.input_count, sim->input_size()).empty()) return drop(p, DropReason::BadInputs);
      if (!s.inputs.receive(m.input_first_tick, m.inputs.view(), m.input_count, next_tick, pacer.next_deadline(), arrived))
        drop(p, DropReason::InputTooFarAhead);
    }
  }
  if (m.hashes.empty()) return;
  if (m.epoch == p.epoch) {
    p.resync_tries = 0;
    take_hashes(p, m, now);
  } else if (p.resync_tries > 0) {
    resync_not_taken(p, now);
  }
}

// Hashes still of the epoch before a resync: the client has not loaded the snapshot. It may still
// be on its way (a large state takes a while) or waiting for the frames up to it; long after it
// has been delivered, the client dropped it (it did not load, or did not fit): the state once
// more, in the same epoch (either snapshot is the server's state), and a client that takes
// neither is dropped, never silently left unchecked.
void ServerSession::Impl::resync_not_taken(Peer& p, std::int64_t now) {
  if (peer_sending(p.enet)) {  // the patience counts from its delivery
    p.resync_at = now;
    return;
  }
  const std::int64_t rtt_ns = p.enet ? std::int64_t{peer_net(p.enet).rtt_us} * 1000 : 0;
  if (now - p.resync_at < std::max<std::int64_t>(kResyncPatienceNs, 8 * rtt_ns)) return;
  ++stats.resyncs_not_taken;
  if (p.resync_tries >= kResyncTries) {
    LOCKSTEP_LOG_ERROR("resync: %s %d (%s) took none of %u snapshots", p.role == Role::Player ? "player" : "spectator",
                       p.slot, p.name.c_str(), p.resync_tries);
    return kick(p, "it did not load the state sent to resync it (" + std::to_string(p.resync_tries) + " tries)");
  }
  LOCKSTEP_LOG_WARN("resync: %s still reports hashes of the state before its resync %lld ms after it arrived; sending "
                    "the state again",
                    p.name.c_str(), static_cast<long long>((now - p.resync_at) / 1'000'000));
  resync(p, now, /*again=*/true);
}

void ServerSession::Impl::take_hashes(Peer& p, const protocol::ClientPlay& m, std::int64_t now) {
  const Tick first = m.hash_first_tick;
  for (std::size_t i = 0; i < m.hashes.size(); ++i) {
    const Tick t = first + static_cast<Tick>(i);
    if (t < first) continue;  // wrapped
    switch (p.hashes.check(t, executed())) {
      case HashLedger::Verdict::Already: continue;
      case HashLedger::Verdict::Future: drop(p, DropReason::HashForFutureTick); break;
      case HashLedger::Verdict::TooOld: drop(p, DropReason::HashTooOld); continue;
      case HashLedger::Verdict::Compare:
        if (p.verifying) {
          if (t <= p.verify_tick) continue;
          if (!verify(p, t, m.hashes[i], now)) return;
        }
        compare_hash(p, t, m.hashes[i], now);
        p.hashes.mark(t);
        continue;
    }
    break;  // a hash for a tick not executed yet: the rest are newer still
  }
  // Hashes arrive newest first; the acknowledgement covers every one up to a gap.
  p.hashes.advance(executed(), now);
  if (p.role == Role::Player) slots[static_cast<std::size_t>(p.slot)].hashes_checked = p.hashes.ack();
}

// The first hash after a join snapshot decides: equal, and the player counts from the next tick;
// another, and the server localizes the difference like any desync, writes its report, counts it
// and then closes the connection.
bool ServerSession::Impl::verify(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now) {
  p.verifying = false;
  const std::uint64_t ours = hashes[t % kHistory];
  if (theirs != ours) {
    const std::string why = "its state after the snapshot does not match the server's at tick " + std::to_string(t);
    if (p.role == Role::Spectator) ++stats.spectator_desyncs;
    else ++stats.desyncs;
    ++stats.join_mismatches;
    p.desynced = true;
    p.last_report_at = now;
    desync_events.push_back(DesyncEvent{t, p.slot, p.name, ours, theirs});
    LOCKSTEP_LOG_ERROR("DESYNC at tick %u after a join snapshot: %s %d (%s) reports %s, the server has %s", t,
                       p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(),
                       hash_hex(theirs).c_str(), hash_hex(ours).c_str());
    p.kick_after_probe = why;
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

// Who reported what for tick t, kept for the majority of a report.
void ServerSession::Impl::note_vote(const Peer& p, Tick t, std::uint64_t theirs) {
  TickVotes& v = votes[t % kHistory];
  if (v.tick != t) {
    v.tick = t;
    v.agree.clear();
    v.differ.clear();
  }
  if (theirs == hashes[t % kHistory]) v.agree.push_back(p.id);
  else v.differ.emplace_back(p.id, theirs);
  auto& label = peer_labels[p.id];
  if (label.empty())
    label = (p.role == Role::Player ? "player " + std::to_string(p.slot) : std::string("spectator")) + " (" + p.name + ")";
}

// The report's votes and, with three or more voters, who is outside the majority.
void ServerSession::Impl::decide_majority(DesyncReport& r) const {
  const TickVotes& v = votes[r.tick % kHistory];
  if (v.tick != r.tick) return;
  const auto label = [&](std::uint32_t id) {
    const auto it = peer_labels.find(id);
    return it != peer_labels.end() ? it->second : "peer " + std::to_string(id);
  };
  r.votes.clear();
  r.votes.push_back({r.server_hash, {"server"}});
  for (const std::uint32_t id : v.agree) r.votes[0].second.push_back(label(id));
  for (const auto& vote : v.differ) {
    const std::uint32_t id = vote.first;
    const std::uint64_t h = vote.second;
    auto it = std::find_if(r.votes.begin(), r.votes.end(), [h](const auto& g) { return g.first == h; });
    if (it == r.votes.end()) {
      r.votes.push_back({h, {}});
      it = r.votes.end() - 1;
    }
    it->second.push_back(label(id));
  }
  std::size_t voters = 0, largest = 0;
  for (std::size_t i = 0; i < r.votes.size(); ++i) {
    voters += r.votes[i].second.size();
    if (r.votes[i].second.size() > r.votes[largest].second.size()) largest = i;  // ties: the server's group, listed first
  }
  r.odd_one_out.clear();
  if (voters < 3 || 2 * r.votes[largest].second.size() <= voters) return;
  for (std::size_t i = 0; i < r.votes.size(); ++i) {
    if (i == largest) continue;
    for (const std::string& who : r.votes[i].second) r.odd_one_out += (r.odd_one_out.empty() ? "" : ", ") + who;
  }
}

// The state history covers the longest round trip of any peer, so that a desync is localized
// at any latency (history_for_round_trip); it shrinks only when far too long.
void ServerSession::Impl::fit_history() {
  std::int64_t rtt_ns = 0;
  for (const auto& [id, p] : peers)
    if (p.enet && p.role != Role::Pending && !p.closing) rtt_ns = std::max(rtt_ns, std::int64_t{peer_net(p.enet).rtt_us} * 1000);
  const std::size_t want = history_for_round_trip(rtt_ns, cfg.state_history, cfg.state_history_max);
  if (want > history->capacity() || 2 * want < history->capacity()) history->resize(want);
  stats.state_history_ticks = std::max<std::uint64_t>(stats.state_history_ticks, history->capacity());
}

void ServerSession::Impl::compare_hash(Peer& p, Tick t, std::uint64_t theirs, std::int64_t now) {
  ++stats.hashes_compared;
  note_vote(p, t, theirs);
  const std::uint64_t ours = hashes[t % kHistory];
  if (theirs == ours) return;
  // Every divergent tick counts; the first of a divergence (again after a resync) is reported,
  // at most one report per peer every 100 ms.
  ++stats.divergent_ticks;
  if (p.desynced || p.probe.active() || now - p.last_report_at < kReportIntervalNs) return;
  p.desynced = true;
  p.last_report_at = now;
  if (p.role == Role::Spectator) ++stats.spectator_desyncs;
  else ++stats.desyncs;
  desync_events.push_back(DesyncEvent{t, p.slot, p.name, ours, theirs});
  LOCKSTEP_LOG_ERROR("DESYNC at tick %u: %s %d (%s) reports %s, the server has %s", t,
                     p.role == Role::Player ? "player" : "spectator", p.slot, p.name.c_str(), hash_hex(theirs).c_str(),
                     hash_hex(ours).c_str());
  send(p, Channel::Control, protocol::desync_notice(t, p.slot, ours, theirs));
  start_probe(p, t, ours, theirs, now);
}

// ---- localizing a desync (desync_probe.hpp) ----

const Simulation* ServerSession::Impl::state_at(Tick t) { return history->load(t, *scratch) ? scratch.get() : nullptr; }

void ServerSession::Impl::start_probe(Peer& p, Tick t, std::uint64_t ours, std::uint64_t theirs, std::int64_t now) {
  DesyncReport r;
  r.tick = t;
  r.slot = p.slot;
  r.name = p.name;
  r.server_hash = ours;
  r.client_hash = theirs;
  r.replay_file = cfg.record_path;
  // The state of the desync's tick stays until the probe is done, however long its round trips.
  p.probe_pinned = history->pin(t);
  follow_probe(p, p.probe.start(std::move(r), state_at(t), now), now);
}

void ServerSession::Impl::on_detail(Peer& p, const wire::DesyncDetail& m, std::size_t size, std::int64_t now) {
  ProbeAnswer a;
  a.tick = m.tick();
  a.level = m.level();
  a.first = m.first();
  a.available = m.available();
  if (m.hashes()) a.hashes.assign(m.hashes()->begin(), m.hashes()->end());
  if (m.values()) a.values.assign(m.values()->begin(), m.values()->end());
  const auto outcome = p.probe.answer(a, size, state_at(m.tick()));
  if (outcome == DesyncLocalizer::Outcome::Unasked) return drop(p, DropReason::UnexpectedMessage, " (unasked desync detail)");
  if (outcome == DesyncLocalizer::Outcome::OutOfRange) return drop(p, DropReason::FieldOutOfRange);
  follow_probe(p, outcome, now);
}

// Sends the next question; once the probe is done, its report waits for the tick's votes.
void ServerSession::Impl::follow_probe(Peer& p, DesyncLocalizer::Outcome outcome, std::int64_t now) {
  if (outcome == DesyncLocalizer::Outcome::Ask) {
    const ProbeQuestion& q = p.probe.question();
    const auto bytes = protocol::desync_probe(q.tick, q.level, q.first, q.count, q.block_size);
    p.probe.count_sent(bytes.size());
    return send(p, Channel::Control, bytes);
  }
  if (outcome != DesyncLocalizer::Outcome::Done) return;
  if (p.probe_pinned) history->unpin(p.probe.report().tick);
  p.probe_pinned = false;
  pending_reports.push_back(PendingReport{p.id, p.probe.report(), now, p.kick_after_probe});
  settle_reports(now, /*force=*/false, /*act=*/true);
}

// Every peer in play has reported its hash of tick t (or can no longer).
bool ServerSession::Impl::votes_in(Tick t) const {
  for (const auto& [id, q] : peers) {
    if (q.role == Role::Pending || q.closing || q.verifying) continue;
    const auto verdict = q.hashes.check(t, executed());
    if (verdict == HashLedger::Verdict::Compare || verdict == HashLedger::Verdict::Future) return false;
  }
  return true;
}

// A report is written once every peer's hash of its tick is in, so the majority counts them all,
// or after two of the longest round trips (at least 300 ms) when one never comes; then what
// --on-desync asks is done (`act`; not while the session ends).
void ServerSession::Impl::settle_reports(std::int64_t now, bool force, bool act) {
  std::int64_t rtt_ns = 0;
  for (const auto& [id, q] : peers)
    if (q.enet && !q.closing) rtt_ns = std::max(rtt_ns, std::int64_t{peer_net(q.enet).rtt_us} * 1000);
  const std::int64_t wait_ns = std::max<std::int64_t>(300'000'000, 2 * rtt_ns);
  std::vector<PendingReport> ready;
  for (auto it = pending_reports.begin(); it != pending_reports.end();) {
    if (force || now - it->since >= wait_ns || votes_in(it->report.tick)) {
      ready.push_back(std::move(*it));
      it = pending_reports.erase(it);
    } else {
      ++it;
    }
  }
  for (PendingReport& pr : ready) {
    if (!pr.kick_reason.empty())
      pr.report.note += (pr.report.note.empty() ? "" : "; ") + std::string("found after a join snapshot");
    record_report(pr.report);
    if (!act) continue;
    const auto found = peers.find(pr.peer_id);
    if (found == peers.end() || found->second.closing) continue;
    Peer& p = found->second;
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
      case OnDesync::Resync: resync(p, now); break;
    }
  }
}

void ServerSession::Impl::record_report(DesyncReport r) {
  decide_majority(r);
  if (!r.odd_one_out.empty())
    LOCKSTEP_LOG_ERROR("desync at tick %u: by majority of %zu hashes the odd one out is %s", r.tick,
                       [&] { std::size_t n = 0; for (const auto& g : r.votes) n += g.second.size(); return n; }(),
                       r.odd_one_out.c_str());
  std::string error;
  const std::string path = write_report(r, cfg.desync_dir, &error);
  if (path.empty()) LOCKSTEP_LOG_ERROR("desync report: %s", error.c_str());
  if (!r.server_fields.empty())
    LOCKSTEP_LOG_ERROR("desync at tick %u localized: %s %lld field %s: server %s (%s), client %s (%s); %llu probe bytes, "
                       "state %llu bytes; report %s",
                       r.tick, r.where.c_str(), static_cast<long long>(r.entity), r.server_fields[0].name.c_str(),
                       field_hex(r.server_fields[0]).c_str(), field_decimal(r.server_fields[0]).c_str(),
                       field_hex(r.client_fields[0]).c_str(), field_decimal(r.client_fields[0]).c_str(),
                       static_cast<unsigned long long>(r.probe_bytes), static_cast<unsigned long long>(r.state_bytes),
                       path.c_str());
  else
    LOCKSTEP_LOG_ERROR("desync at tick %u not localized: %s; report %s", r.tick, r.note.c_str(), path.c_str());
  reports.push_back(std::move(r));
}

// Sends the authoritative current state; the client loads it and plays on from there.
void ServerSession::Impl::resync(Peer& p, std::int64_t now, bool again) {
  if (!again) ++p.epoch;
  ++stats.resyncs;
  p.resync_at = now;
  ++p.resync_tries;
  send_snapshot(p, /*join=*/false);
  p.hashes.reset_to(executed());
  p.desynced = false;
  LOCKSTEP_LOG_INFO("resync: sent %s the state of tick %u (%lld bytes)", p.name.c_str(), executed(),
                    static_cast<long long>(stats.last_snapshot_bytes));
}

// ---- each tick: assemble, step, hash, send ----

void ServerSession::Impl::assemble_and_step(std::int64_t now) {
  const Tick t = next_tick;
  InputFrame& f = frames[t % kHistory];
  f.reset(t, cfg.players, sim->input_size());
  for (std::size_t i = 0; i < slots.size(); ++i) {
    update_presence(i, t);
    Slot& s = slots[i];
    if (!s.taken || !s.present) continue;
    f.present |= 1u << i;
    if (t < first_input_tick) continue;  // before the first sampled input: neutral
    if (s.inputs.take(t, now, s.inputs.has(t) ? net_of(s).rtt_us : 0, s.last_heard) != InputWindow::Fill::None) {
      f.filled |= 1u << i;
      ++stats.filled_inputs;
    }
    const auto in = s.inputs.last();
    std::copy(in.begin(), in.end(), f.input(static_cast<std::uint32_t>(i)).begin());
    if (!s.inputs.commands().empty()) {
      f.add_commands(static_cast<std::uint32_t>(i), s.inputs.commands());
      stats.commands += s.inputs.commands().size();
    }
  }
  sim->step(f);
  const std::uint64_t h = sim->hash();
  history->record(*sim);
  hashes[t % kHistory] = h;
  ++next_tick;
  after_step(t, h, now);
}

// Leaves and returns take effect at a tick boundary, and everyone is told from which tick.
void ServerSession::Impl::update_presence(std::size_t i, Tick t) {
  Slot& s = slots[i];
  if (s.taken && s.leaving && s.present) {
    s.present = false;
    departures.push_back(Departure{t, static_cast<std::uint32_t>(i), s.name, s.leave_reason});
    broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(i), t, s.leave_reason));
    LOCKSTEP_LOG_INFO("player %zu (%s) is out of the session from tick %u", i, s.name.c_str(), t);
  }
  if (s.taken && s.return_pending) {
    s.return_pending = false;
    s.present = true;
    s.inputs.reset_last();
    broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(i), s.name));
    LOCKSTEP_LOG_INFO("player %zu (%s) is in the session again from tick %u", i, s.name.c_str(), t);
  }
}

// Figures, the pacer's schedule, the hash log and the tick callback after tick t.
void ServerSession::Impl::after_step(Tick t, std::uint64_t h, std::int64_t now) {
  ++stats.ticks;
  if (stats.first_tick_ns == 0) stats.first_tick_ns = now;
  if (t == kSteadyTick) stats.steady_tick_ns = now;
  stats.last_tick_ns = now;
  stats.lateness.add_us((now - pacer.next_deadline()) / 1000);
  const std::uint64_t skipped_before = pacer.stats().skipped;
  // Waiting up to the grace for a late input is the schedule, not falling behind: only time
  // past that counts, so the clock moves later only when the server's own work is too slow.
  pacer.reached(now - cfg.input_grace_ns);
  stats.ticks_skipped = pacer.stats().skipped;
  if (pacer.stats().skipped != skipped_before && now - last_overload_log > 1'000'000'000) {
    last_overload_log = now;
    LOCKSTEP_LOG_WARN("cannot keep up: the server's own work fell more than %d ticks behind and slowed the "
                      "session clock (%llu ticks skipped so far; lateness p50 %.0f us, p99 %.0f us, max %lld us)",
                      PacerConfig{}.max_catch_up, static_cast<unsigned long long>(pacer.stats().skipped),
                      stats.lateness.percentile_us(50), stats.lateness.percentile_us(99),
                      static_cast<long long>(stats.lateness.max_us()));
  }
  if (hash_log) hash_log->write(t, h);
  if (tick_fn) tick_fn(frames[t % kHistory], h);
  if (t % (10 * kTickRate) == 0)
    LOCKSTEP_LOG_INFO("tick %u hash %s players %u filled %llu desyncs %llu", t, hash_hex(h).c_str(),
                      active_players_count(), static_cast<unsigned long long>(stats.filled_inputs),
                      static_cast<unsigned long long>(stats.desyncs));
}

void ServerSession::Impl::send_frames(std::int64_t now) {
  for (auto& [id, p] : peers) {
    if (p.role == Role::Pending) continue;
    const Tick from = p.frame_ack + 1;
    if (from > executed()) {
      // Nothing new: still acknowledge inputs and hashes, so the client trims its window.
      if (p.role == Role::Player || p.hashes.ack() > 0) send(p, Channel::Play, play_for(p, {}));
      continue;
    }
    if (executed() - from >= kHistory - 1) {
      kick(p, "fell more than " + std::to_string(kHistory) + " ticks behind the session");
      continue;
    }
    // The newest frames go out in every message, and a range lost in every copy again (resend.hpp).
    const auto window = static_cast<Tick>(protocol::kMaxWindow);
    const Tick newest_from = executed() >= window ? std::max(from, executed() - window + 1) : from;
    send_range(p, newest_from, executed());
    const std::int64_t rtt_ns = p.enet ? std::int64_t{peer_rtt_ms(p.enet)} * 1'000'000 : 0;
    if (newest_from > from && p.frame_gap.due(now, p.frame_ack_moved, rtt_ns))
      send_range(p, from, std::min<Tick>(executed(), from + window - 1));
  }
}

void ServerSession::Impl::send_range(Peer& p, Tick from, Tick to) {
  // Frames with many commands are spread over several messages: past the first frame, at most
  // kPlayCommandBudget bytes of commands go in one.
  batch_scratch.clear();
  std::size_t command_bytes = 0;
  for (Tick t = from; t <= to; ++t) {
    const InputFrame& f = frames[t % kHistory];
    command_bytes += f.command_bytes.size();
    if (!batch_scratch.empty() && command_bytes > protocol::kPlayCommandBudget) break;
    batch_scratch.push_back(&f);
  }
  send(p, Channel::Play, play_for(p, batch_scratch));
}

protocol::Bytes ServerSession::Impl::play_for(Peer& p, std::span<const InputFrame* const> batch) {
  // Every kRefreshEvery-th message carries its frames whole and repeats the slack report, so a
  // client that lost the base frame or a report is back in step within that many ticks.
  constexpr std::uint32_t kRefreshEvery = 16;
  const bool refresh = p.plays_sent++ % kRefreshEvery == 0;
  protocol::ServerPlayHeader h;
  // Clients time their inputs by this server's tick clock, so they are told when it moves.
  h.clock_shift = static_cast<std::uint32_t>(std::min<std::uint64_t>(pacer.stats().skipped, UINT32_MAX));
  h.hash_ack = p.hashes.ack();
  if (p.role == Role::Player) {
    const InputWindow& in = slots[static_cast<std::size_t>(p.slot)].inputs;
    h.input_ack = in.ack();
    if (in.slack_tick() != 0 && (in.slack_tick() != p.slack_sent || refresh)) {
      h.has_slack = true;
      h.input_slack_us = in.slack_us();
      h.slack_tick = in.slack_tick();
      p.slack_sent = in.slack_tick();
    }
  }
  // The frame before the first, when the client holds it: the first frame travels as its change.
  const InputFrame* base = nullptr;
  if (!batch.empty() && !refresh) {
    const Tick b = batch.front()->tick - 1;
    if (b >= p.base_from && b <= p.frame_ack && b + kHistory > executed() + 1) base = &frames[b % kHistory];
  }
  return protocol::server_play(batch, base, h);
}

}  // namespace lockstep
