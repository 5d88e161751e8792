// The client in play: the tick clock from Start and the frames, inputs sampled ahead of it and
// sent with the hashes, confirmed frames executed in order and hashed, snapshots loaded (join,
// resync), and the server's desync probes answered.
#include <algorithm>

#include "client_session_impl.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_probe.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

void ClientSession::Impl::on_start(const wire::SessionStart& m, std::int64_t now) {
  // Start comes reliably once and unreliably until tick 1; like the frames, the copy that
  // arrives earliest says best when the server's ticks fall due here.
  const std::int64_t estimate = now + std::int64_t{m.starts_in_us()} * 1000;
  if (clock.known()) {
    if (phase == Phase::Running) clock.earlier_start(estimate);
    return;
  }
  // An unreliable copy (play channel) may overtake a welcome that was lost and is being resent:
  // the reliable copy follows the welcome, so this one is only a sign of life, not a fault.
  if (phase == Phase::Connecting) return;
  if (phase != Phase::Joined) return drop(ClientDrop::UnexpectedMessage, "a session start out of turn");
  clock.start(estimate);
  phase = Phase::Running;
  emit({SessionEvent::Kind::Started, executed, slot, "", "", 0});
  // The first inputs go out before any report on them can come back: start from the join's
  // round trip (plus a quarter for jitter) less the input delay, and let the reports correct it.
  if (join_sent_at > 0 && welcome_at > join_sent_at) {
    const std::int64_t rtt = welcome_at - join_sent_at;
    lead.seed(rtt + rtt / 4 - std::int64_t{input_delay} * kTickNs + lead.config().margin_ns);
    stats.lead_ns = lead.lead_ns();
    LOCKSTEP_LOG_INFO("the join took %lld ms there and back: sampling starts %.1f ms ahead",
                      static_cast<long long>(rtt / 1'000'000), static_cast<double>(lead.lead_ns()) / 1e6);
  }
  // A spectator joining a running session starts sampling at the current tick.
  const std::int64_t since = now - clock.origin() + lead.lead_ns();
  sample_tick = since > 0 ? static_cast<Tick>(since / kTickNs) : 0;
}

void ClientSession::Impl::on_server_play(const protocol::ServerPlay& m, std::int64_t now) {
  if (phase != Phase::Running && phase != Phase::Leaving) return;
  // Every message with frames times the server's clock, whether or not its frames are taken here,
  // and while the state is still on its way: a joiner's Start says only that tick 0 is past, and
  // once its state is in it takes only old frames while the newest ones (too far ahead for its
  // buffer) are what tell the time. An old or repeated message only gives a later origin, which
  // the clock's minimum passes over.
  const Tick last = m.first_tick + static_cast<Tick>(m.frame_count()) - 1;
  if (m.frame_count() > 0) {
    clock.frames_arrived(now, last, m.clock_shift);
    newest_frame_seen = std::max(newest_frame_seen, last);
  }
  if (joining) return;  // frames count only after the snapshot
  if (m.frame_count() > 0) down_loss.saw(last);
  clock.shifted(m.clock_shift);
  input_ack = std::max(input_ack, std::min(m.input_ack, last_input));
  take_slack(m);
  if (std::min(m.hash_ack, executed) > hash_ack) {
    hash_ack = std::min(m.hash_ack, executed);
    hash_ack_moved = now;
  }
  const std::uint32_t input_size = sim ? sim->input_size() : 0;
  protocol::read_frames(m, players, input_size, [&](const InputFrame& f) {
    if (intake.wants(f.tick, executed) && intake.add(f, executed)) ++stats.frames_received;
  });
  if (held_resync && held_resync->tick() <= intake.received()) resync_from(std::move(held_resync), held_epoch, now);
}

// The server's report of how early our newest input arrived moves the input lead (lead.hpp).
void ClientSession::Impl::take_slack(const protocol::ServerPlay& m) {
  if (!m.has_slack || m.slack_tick == 0) return;
  lead.report(m.slack_tick, std::int64_t{m.input_slack_us} * 1000);
  stats.lead_ns = lead.lead_ns();
  if (lead.over_limit() && !lead_limit_told) {
    lead_limit_told = true;
    LOCKSTEP_LOG_WARN("round trip %u ms exceeds the session's limit: a lead of %lld ms would be needed, at most "
                      "%lld ms is allowed, so some of this player's inputs will be filled",
                      server ? peer_rtt_ms(server) : 0u, static_cast<long long>(lead.wanted_ns() / 1'000'000),
                      static_cast<long long>(lead.config().max_ns / 1'000'000));
  }
}

void ClientSession::Impl::write_desync_bundle(Tick t, std::uint64_t ours, std::uint64_t server_hash) {
  constexpr std::uint32_t kMaxBundles = 8;  // per session: a client that keeps diverging fills no disk
  if (!history || t > executed || ++bundles_written > kMaxBundles) return;  // (a tick we have not run: nothing to keep)
  const std::string who = (slot >= 0 ? "player " + std::to_string(slot) : std::string("spectator")) + " (" + cfg.name + ")";
  DesyncBundle b;
  b.written_by = "client";
  b.tick = t;
  b.report = Json{{"tick", t}, {"player", slot}, {"name", cfg.name}, {"client_hash", hash_hex(ours)},
                  {"server_hash", hash_hex(server_hash)}, {"where", "unknown"},
                  {"note", "written by the client the server told it diverged; the server's report and bundle "
                           "localize it"},
                  {"votes", Json::array({Json{{"hash", hash_hex(server_hash)}, {"peers", Json::array({"server"})}},
                                         Json{{"hash", hash_hex(ours)}, {"peers", Json::array({who})}}})}};
  BundleParty me{who, {}, {}};
  for (Tick s = t > kBundleTicksBefore ? t - kBundleTicksBefore : 0; s <= t; ++s) {
    const std::vector<std::uint8_t>* bytes = history->bytes(s);
    if (!bytes) continue;
    const std::uint64_t h = hash_bytes(*bytes);
    me.hashes.emplace_back(s, h);
    me.states.push_back({s, h, *bytes});
  }
  b.parties.push_back(std::move(me));
  b.parties.push_back({"server", {{t, server_hash}}, {}});
  Replay& r = b.replay;
  r.header.protocol_version = kProtocolVersion;
  r.header.fingerprint = sim ? sim->fingerprint() : 0;
  r.header.world = world;
  r.header.input_size = sim ? sim->input_size() : 0;
  r.header.module = cfg.module_name;
  r.header.input_delay = input_delay;
  r.header.names = roster_names;
  const std::vector<BundleState>& states = b.parties[0].states;
  const Tick from = states.empty() ? t : states.front().tick;
  r.header.start_tick = r.frames_from = from;
  if (!states.empty() && from != 0) r.keyframes.push_back({from, states.front().hash, states.front().bytes});
  for (Tick s = from + 1; !states.empty() && s <= t; ++s) {
    if (s > intake.received() || intake.at(s).tick != s) break;
    const BundleState* st = b.parties[0].state(s);
    if (!st) break;
    r.frames.push_back(intake.at(s));
    r.hashes.push_back(st->hash);
  }
  r.end_reason = "diverged at tick " + std::to_string(t);
  const std::string path = cfg.desync_dir + "/desync-" + std::to_string(t) + "-" + std::to_string(slot) + ".client.bundle";
  std::string error;
  if (write_bundle(path, b, &error)) LOCKSTEP_LOG_ERROR("desync bundle of this client's states: %s", path.c_str());
  else LOCKSTEP_LOG_ERROR("desync bundle: %s", error.c_str());
}

// The server localizes a desync by asking about our state at its tick, level by level.
void ClientSession::Impl::on_probe(const wire::DesyncProbe& m) {
  if (!sim || !server) return;
  const ProbeQuestion q{m.tick(), m.level(), m.first(), m.count(), m.block_size()};
  ProbeAnswer a;
  if (!answer_probe(q, history->load(m.tick(), *scratch) ? scratch.get() : nullptr, &a))
    return drop(ClientDrop::ProbeOutOfRange, "a desync probe out of range for this state");
  send(Channel::Control, protocol::desync_detail(a.tick, a.level, a.first, a.available, a.hashes, a.values));
  transport->flush();
}

// A server without the simulation asks for our saved state of a tick whose hash we reported, to
// bring another peer in or back (§15). It forwards the bytes only if they hash to the tick's
// settled value. Not held any more: an empty answer, and it asks someone else.
void ClientSession::Impl::on_state_request(const wire::StateRequest& m) {
  if (!sim || !server || joining) return drop(ClientDrop::UnexpectedMessage, "a state request before this client has a state");
  state_scratch.clear();
  std::uint64_t hash = 0;
  if (history->load(m.tick(), *scratch)) {
    scratch->serialize(state_scratch);
    hash = scratch->hash();
    if (cfg.inject_forged_states && !state_scratch.empty()) state_scratch[state_scratch.size() / 2] ^= 0x01;
  }
  if (cfg.inject_trickled_states && !state_scratch.empty()) {
    trickle = Trickle{m.tick(), m.request(), hash, state_scratch, 0, INT64_MIN / 2};
    return;  // the chunks go out from update(), a byte each
  }
  for (const auto& chunk : protocol::snapshot(m.tick(), epoch, hash, state_scratch, /*join=*/false, m.request()))
    send(Channel::Control, chunk);
  ++stats.states_served;
  transport->flush();
}

// A server without the simulation cannot localize our divergence: it sends the majority's state
// of the tick, checked against the settled hash, and we name the entity and field by our own
// rules, as its probe would, and the first byte where the two states differ.
void ClientSession::Impl::compare_with(const Simulation& reference) {
  const Tick t = reference.tick();
  DesyncReport r;
  r.tick = t;
  r.slot = slot;
  std::int64_t first_byte = -1;
  const bool held = history->load(t, *scratch);
  if (held) {
    r = localize_locally(std::move(r), reference, *scratch);
    std::vector<std::uint8_t> ref_bytes;
    reference.serialize(ref_bytes);
    state_scratch.clear();
    scratch->serialize(state_scratch);
    const std::size_t n = std::min(ref_bytes.size(), state_scratch.size());
    for (std::size_t i = 0; i < n && first_byte < 0; ++i)
      if (ref_bytes[i] != state_scratch[i]) first_byte = static_cast<std::int64_t>(i);
    if (first_byte < 0 && ref_bytes.size() != state_scratch.size()) first_byte = static_cast<std::int64_t>(n);
    r.state_bytes = state_scratch.size();
    LOCKSTEP_LOG_ERROR("desync at tick %u, by this client's rules against the majority's state: %s%s%s", t, r.where.c_str(),
                       r.entity >= 0 ? (" " + std::to_string(r.entity)).c_str() : "",
                       r.server_fields.empty() ? "" : (" field " + r.server_fields[0].name).c_str());
  }
  send(Channel::Control, protocol::desync_located(r, held, first_byte));
  transport->flush();
}

// Snapshots arrive in order on the reliable channel, in chunks; a chunk out of place drops the
// partial state (the server sends a fresh snapshot when it needs to).
void ClientSession::Impl::on_snapshot(const wire::Snapshot& m, std::int64_t now) {
  if (!sim) return drop(ClientDrop::UnexpectedMessage, "a snapshot before the welcome");
  const std::size_t n = m.data() ? m.data()->size() : 0;
  if (m.offset() == 0) {
    snap.clear();
    snap.reserve(m.total_size());
    snap_tick = m.tick();
    snap_hash = m.hash();
    snap_total = m.total_size();
    snap_epoch = m.epoch();
    snap_join = m.join();
    snap_compare = m.compare();
    snap_started = now;
  } else if (m.offset() != snap.size() || m.tick() != snap_tick || m.total_size() != snap_total) {
    snap.clear();
    return drop(ClientDrop::SnapshotOutOfPlace,
                "a snapshot chunk out of place (tick " + std::to_string(m.tick()) + " offset " + std::to_string(m.offset()) + ")");
  }
  if (n > 0) snap.insert(snap.end(), m.data()->begin(), m.data()->end());
  if (snap.size() < snap_total) return;
  auto loaded = sim->clone();
  if (!loaded->deserialize(snap) || loaded->tick() != snap_tick || loaded->hash() != snap_hash) {
    snap.clear();
    return drop(ClientDrop::SnapshotInvalid,
                "the snapshot of tick " + std::to_string(snap_tick) + " does not load or does not match its hash");
  }
  if (snap_compare) {
    snap.clear();
    return compare_with(*loaded);
  }
  stats.snapshot_bytes = snap.size();
  snap.clear();
  if (snap_join) return join_from(std::move(loaded), now);
  stats.snapshot_ns = now - snap_started;
  resync_from(std::move(loaded), snap_epoch, now);
}

// Rejoin or late join: start from the server's state; frames after it follow.
void ClientSession::Impl::join_from(std::unique_ptr<Simulation> loaded, std::int64_t now) {
  const Tick s = loaded->tick();
  stats.snapshot_ns = now - welcome_at;  // the whole transfer: welcome, chunks, load and check
  sim = std::move(loaded);
  held_resync.reset();
  if (prev) prev->assign(*sim);
  intake.reset(s);
  executed = s;
  joined_at = s;
  last_input = std::max(last_input, s);
  if (first_input != 0 && first_input <= s) first_input = s + 1;
  history->record(*sim);
  last_hash = hashes.put(s) = sim->hash();
  hash_ack = s;
  hashes_sent = s;
  joining = false;
  LOCKSTEP_LOG_INFO("loaded the session's state at tick %u (%llu bytes, hash %s, %lld us)", s,
                    static_cast<unsigned long long>(stats.snapshot_bytes), hash_hex(last_hash).c_str(),
                    static_cast<long long>(stats.snapshot_ns / 1000));
}

// Resync: take the server's state, re-execute the frames after it and play on. The server sends
// its newest state, which can arrive before the frames up to it: then it waits for them (a newer
// resync replaces it), and the diverged state plays on meanwhile.
void ClientSession::Impl::resync_from(std::unique_ptr<Simulation> loaded, std::uint32_t with_epoch, std::int64_t now) {
  const Tick s = loaded->tick();
  if (executed > s && executed - s >= kRing)
    return drop(ClientDrop::SnapshotInvalid, "a resync snapshot of tick " + std::to_string(s) +
                                                 " that is older than this client's frames (executed " +
                                                 std::to_string(executed) + ")");
  if (s > intake.received()) {
    LOCKSTEP_LOG_INFO("resync: the snapshot of tick %u waits for the frames up to it (received up to %u)", s, intake.received());
    if (!held_resync) ++stats.resyncs_waited;
    held_resync = std::move(loaded);
    held_epoch = with_epoch;
    return;
  }
  held_resync.reset();
  const Tick was = executed;
  for (Tick t = was + 1; t <= s; ++t) intake.release(t);  // frames the snapshot already holds
  sim = std::move(loaded);
  if (prev) prev->assign(*sim);
  executed = s;
  history->record(*sim);
  hashes.put(s) = sim->hash();
  epoch = with_epoch;
  hash_ack = s;
  hashes_sent = std::min(hashes_sent, s);  // the ticks after it run again, their hashes anew
  desynced = false;
  ++stats.resyncs;
  // Frames after the snapshot that were executed on the diverged state run again.
  for (Tick t = s + 1; t <= was && t <= intake.received(); ++t) {
    intake.keep(t);
    execute_next(now);
  }
  LOCKSTEP_LOG_INFO("resync: loaded the server's state of tick %u and caught up to tick %u", s, executed);
  emit({SessionEvent::Kind::Resynced, s, slot, "", "", 0});
}

bool ClientSession::Impl::execute_next(std::int64_t now) {
  if (!sim || executed >= intake.received()) return false;
  if (cfg.last_tick != 0 && executed >= cfg.last_tick) return false;
  // Never so far past the server's hash acknowledgement that a hash it has not taken leaves the
  // ring before it can go again (the server would wait for it to the hash silence): a client
  // catching up waits for the acknowledgement instead, so it gains at most a ring a round trip.
  // (In steady play the acknowledgement trails by a round trip, far less than the ring.)
  // (Not once the session has ended: no acknowledgement comes any more, and the frames it has
  // are executed to the end.)
  if (!end_after_frames && hash_ack != 0 && executed + 1 > hash_ack + static_cast<Tick>(kRing - protocol::kMaxWindow))
    return false;
  const Tick t = executed + 1;
  const InputFrame& f = intake.at(t);
  if (cfg.on_confirmed) cfg.on_confirmed(f);
  if (prev) prev->assign(*sim);
  sim->step(f);
  if (cfg.inject_desync_at != 0 && t == cfg.inject_desync_at) {
    sim->perturb(cfg.inject_selector);
    LOCKSTEP_LOG_WARN("test hook: flipped the lowest bit of one stored value after tick %u", t);
  }
  if (cfg.after_step) cfg.after_step(t, *sim);
  last_hash = sim->hash();
  history->record(*sim);
  // Test hook: the state stays right, the hash reported of it is wrong.
  const bool lie = cfg.inject_wrong_hashes_from != 0 && t >= cfg.inject_wrong_hashes_from &&
                   (cfg.inject_wrong_hashes_until == 0 || t <= cfg.inject_wrong_hashes_until);
  hashes.put(t) = lie ? last_hash ^ 1 : last_hash;
  executed = t;
  intake.release(t);
  if (hash_log) hash_log->write(t, last_hash);
  if (tick_fn) tick_fn(t, last_hash);
  if (stats.first_exec_ns == 0) stats.first_exec_ns = now;
  stats.last_exec_ns = now;
  ++stats.executed_ticks;
  if (slot >= 0 && ((f.filled >> slot) & 1u)) ++stats.inputs_filled;
  else if (const Sampled* own = slot >= 0 ? inputs.find(t) : nullptr) stats.input_latency.add_us((now - own->at) / 1000);
  if (cfg.last_tick != 0 && t >= cfg.last_tick) begin_leave(now, "reached its last tick");
  return true;
}

void ClientSession::Impl::sample(std::int64_t now) {
  // Joining a running session: Start only says the session began, so the clock waits for the
  // first frames after the snapshot before any input is sampled (they would all be late).
  if (joining || (joined_running && stats.frames_received == 0)) return;
  // Every tick-clock reading that has come due samples once (a stalled client catches up,
  // bounded by the ring), then one message carries them all.
  sample_held = false;
  while (now >= clock.due_at(sample_tick) - lead.lead_ns()) {
    if (now - clock.due_at(sample_tick) > 32 * kTickNs)  // far behind: resume at the present
      sample_tick = static_cast<Tick>(std::max<std::int64_t>(0, (now - clock.origin()) / kTickNs - clock.shift()));
    const Tick target = sample_tick + input_delay;
    // Never run far ahead of the frames the server has sent: if its clock slowed, the local
    // estimate of it is early for a while, and inputs past the server's window are lost. (The
    // newest frame seen, not the newest taken: a joiner catching up samples at the present.)
    if (target > std::max(intake.received(), newest_frame_seen) + input_delay + kMaxSampleAhead) {
      sample_held = true;
      break;
    }
    if (slot >= 0 && target >= 1 && target > last_input && target > executed) {
      Sampled& own = inputs.put(target);
      PlayerTick& in = own.input;
      in.input.assign(sim->input_size(), 0);
      in.commands.clear();
      if (input_source) input_source(target, &in);
      in.input.resize(sim->input_size(), 0);  // whatever the source did, exactly the input size
      stats.commands_sent += in.commands.size();
      own.at = now;
      lead.sampled(target);
      if (first_input == 0) first_input = target;
      last_input = target;
    }
    ++sample_tick;
    ++due_unsent;
  }
  // One message every send_every sampled ticks carries them all (the Welcome's send rate); while
  // sampling waits for frames, hashes and acknowledgements still go out as often.
  if (due_unsent >= send_every || (sample_held && now - last_sent >= std::int64_t{send_every} * kTickNs)) {
    due_unsent = 0;
    send_tick(now);
    transport->flush();  // out now, not at the next poll
    last_sent = now;
  }
}

void ClientSession::Impl::send_tick(std::int64_t now) {
  if (!server) return;
  // The newest unacknowledged inputs and hashes, at most kMaxWindow of each, and hashes lost in
  // every copy again (resend.hpp).
  const auto window = static_cast<Tick>(protocol::kMaxWindow);
  Tick in_from = std::max(input_ack + 1, first_input);
  if (last_input >= window) in_from = std::max(in_from, last_input - window + 1);
  // Ticks with many commands are spread over several messages: past the first tick, at most
  // kPlayCommandBudget bytes of commands go in one.
  // A tick never sampled (sampling resumed at the present after a stall) goes as the neutral
  // input, as the server would fill it.
  thread_local std::vector<const PlayerTick*> ins;
  thread_local PlayerTick neutral;
  ins.clear();
  neutral.input.assign(sim ? sim->input_size() : 0, 0);
  std::size_t command_bytes = 0;
  if (slot >= 0 && first_input != 0)
    for (Tick t = in_from; t <= last_input && ins.size() < protocol::kMaxWindow; ++t) {
      const Sampled* own = inputs.find(t);
      const PlayerTick& in = own ? own->input : neutral;
      command_bytes += in.commands.bytes();
      if (!ins.empty() && command_bytes > protocol::kPlayCommandBudget) break;
      ins.push_back(&in);
    }
  const Tick oldest = executed > kRing - 1 ? executed - static_cast<Tick>(kRing - 1) : 1;
  const Tick h_unacked = std::max<Tick>(hash_ack + 1, oldest);
  Tick h_from = h_unacked;
  if (executed >= window && executed - window + 1 > h_from &&
      !hash_gap.due(now, hash_ack_moved, std::int64_t{peer_rtt_ms(server)} * 1'000'000))
    h_from = executed - window + 1;
  thread_local protocol::ClientPlay m;
  m.frame_ack = intake.received();
  m.input_first_tick = in_from;
  m.input_count = static_cast<std::uint32_t>(ins.size());
  pack_ticks(ins, m.inputs);
  m.hash_first_tick = h_from;
  m.hashes.clear();
  for (Tick t = h_from; t <= executed && m.hashes.size() < protocol::kMaxWindow; ++t) {
    const std::uint64_t* h = hashes.find(t);
    if (!h) break;  // never executed here: the window ends before it
    m.hashes.push_back(*h);
  }
  m.epoch = epoch;
  // The lead is a figure for the server's reports: sent when it changes, and every 16th message.
  const auto lead_us = static_cast<std::int32_t>(std::min<std::int64_t>(lead.lead_ns() / 1000, 10'000'000));
  m.has_lead = lead_us != lead_sent || plays_sent % 16 == 0;
  m.lead_us = lead_us;
  lead_sent = lead_us;
  ++plays_sent;
  send(Channel::Play, protocol::client_play(m));
  // Every hash goes out at least once, however seldom the game calls update() (a hidden browser
  // tab is served about once a second): the hashes before this message's window that never went
  // out follow in messages of their own, oldest first, a window each.
  const Tick window_from = m.hash_first_tick;
  const Tick window_to = window_from + static_cast<Tick>(m.hashes.size()) - 1;
  for (Tick from = std::max(hashes_sent + 1, h_unacked); !m.hashes.empty() && from < window_from;) {
    const Tick first = from;
    m.input_count = 0;
    ins.clear();
    pack_ticks(ins, m.inputs);
    m.has_lead = false;
    m.hashes.clear();
    for (; from < window_from && m.hashes.size() < protocol::kMaxWindow; ++from) {
      const std::uint64_t* h = hashes.find(from);
      if (!h) break;
      m.hashes.push_back(*h);
    }
    if (m.hashes.empty()) break;
    m.hash_first_tick = first;
    send(Channel::Play, protocol::client_play(m));
  }
  if (window_to >= window_from) hashes_sent = std::max(hashes_sent, window_to);
}

}  // namespace lockstep
