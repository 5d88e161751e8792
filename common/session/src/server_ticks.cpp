// The server's ticks: each player's inputs in, each tick's frame assembled (late inputs filled),
// stepped by the simulation part and hashed, presence changed at tick boundaries, and the seats'
// figures.
#include <algorithm>

#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {
constexpr Tick kSteadyTick = 2 * kTickRate;  // steady-state figures count from this tick (2 s in)
}  // namespace

void ServerSession::Impl::on_client_play(Peer& p, const protocol::ClientPlay& m, std::int64_t now,
                                         std::int64_t arrived) {
  PeerAudit& record = audit(p);
  if (p.role == Role::Pending) return drop(p, DropReason::NotJoined);
  if (m.input_count > 0 && p.slot >= 0 && static_cast<std::size_t>(p.slot) < slots.size()) {
    SeenLoss& up = slots[static_cast<std::size_t>(p.slot)].up_loss;
    const Tick newest = m.input_first_tick + m.input_count - 1;
    // A stream (the WebSocket door) loses nothing: its one message a frame covers its ticks.
    if (p.link && p.link->stream()) up.saw_range(m.input_first_tick, newest);
    else up.saw(newest);
  }
  // Frame ack: what the client has, used to choose which frames to send again.
  if (m.frame_ack > executed()) return drop(p, DropReason::FrameAckOutOfRange);
  feed.acknowledge(p.index, m.frame_ack, now);
  if (p.role == Role::Player) {
    Slot& s = slots[static_cast<std::size_t>(p.slot)];
    s.last_heard = now;
    if (m.has_lead) s.lead_us = std::clamp<std::int32_t>(m.lead_us, 0, 10'000'000);
    if (m.input_count > 0) {
      if (!check_packed(m.inputs.view(), m.input_count, input_size).empty()) return drop(p, DropReason::BadInputs);
      if (!s.inputs.receive(m.input_first_tick, m.inputs.view(), m.input_count, next_tick, pacer.next_deadline(), arrived))
        drop(p, DropReason::InputTooFarAhead);
    }
  }
  if (m.hashes.empty()) return;
  if (m.epoch == record.epoch) {
    record.resync_tries = 0;
    take_hashes(p, m, now);
  } else if (record.resync_tries > 0) {
    resync_not_taken(p, now);
  }
}

// Every player in play has its input for tick t in, or is silent: one that has said nothing for
// a while is filled at the deadline, not waited for up to the grace every tick.
bool ServerSession::Impl::inputs_complete(Tick t, std::int64_t now) const {
  if (t < first_input_tick) return true;
  for (const Slot& s : slots)
    if (s.taken && s.present && !s.leaving && !s.inputs.has(t) && !InputWindow::silent(now, s.last_heard)) return false;
  return true;
}

void ServerSession::Impl::assemble_and_step(std::int64_t now) {
  const Tick t = next_tick;
  InputFrame& f = feed.at(t);
  f.reset(t, cfg.players, input_size);
  // When the tick could run: its deadline, or after it the arrival of the last input it took, or
  // the end of its wait for an input that did not come (the grace, or the player's silence), and
  // not before the tick ahead of it could. Lateness past that is the server's own.
  const std::int64_t deadline = pacer.next_deadline();
  std::int64_t ready = std::max(deadline, last_ready);
  for (std::size_t i = 0; i < slots.size(); ++i) {
    update_presence(i, t);
    Slot& s = slots[i];
    if (!s.taken || !s.present) continue;
    f.present |= 1u << i;
    if (t < first_input_tick) continue;  // before the first sampled input: neutral
    ready = std::max(ready, s.inputs.arrived(t));
    const InputWindow::Fill fill = s.inputs.take(t, now, s.inputs.has(t) ? net_of(s).rtt_us : 0, s.last_heard);
    if (fill != InputWindow::Fill::None) {
      f.filled |= 1u << i;
      ++stats.filled_inputs;
      // Waited for, to the grace's end: a late or lost input, or a player that went silent only
      // after the tick fell due (the server wakes for inputs and the grace's end, not for a
      // silence beginning). One silent before that was not waited for.
      if (fill != InputWindow::Fill::Silent || s.last_heard + InputWindow::kSilentFillNs > deadline)
        ready = std::max(ready, deadline + cfg.input_grace_ns);
    }
    const auto in = s.inputs.last();
    std::copy(in.begin(), in.end(), f.input(static_cast<std::uint32_t>(i)).begin());
    if (!s.inputs.commands().empty()) {
      f.add_commands(static_cast<std::uint32_t>(i), s.inputs.commands());
      stats.commands += s.inputs.commands().size();
    }
  }
  // Without the simulation the tick's hash is settled later, by the voters (server_relay.cpp).
  const std::uint64_t h = simulation ? simulation->step(f) : 0;
  stats.own_lateness.add_us(std::max<std::int64_t>(0, now - ready) / 1000);
  last_ready = ready;
  ++next_tick;
  after_step(t, now);
  if (simulation) record_tick(t, h);
}

// Leaves and returns take effect at a tick boundary, and everyone is told from which tick.
void ServerSession::Impl::update_presence(std::size_t i, Tick t) {
  Slot& s = slots[i];
  if (s.taken && s.leaving && s.present) {
    s.present = false;
    departures.push_back(Departure{t, static_cast<std::uint32_t>(i), s.name, s.leave_reason});
    emit(SessionEvent::Kind::PlayerLeft, t, static_cast<std::int32_t>(i), s.name, s.leave_reason);
    broadcast(Channel::Control, protocol::player_left(static_cast<std::uint32_t>(i), t, s.leave_reason));
    const LogScope scope(static_cast<int>(i));
    LOCKSTEP_LOG_INFO("player %zu (%s) is out of the session from tick %u", i, s.name.c_str(), t);
  }
  if (s.taken && s.return_pending) {
    s.return_pending = false;
    s.present = true;
    s.inputs.reset_last();
    broadcast(Channel::Control, protocol::player_joined(static_cast<std::uint32_t>(i), s.name));
    const LogScope scope(static_cast<int>(i));
    LOCKSTEP_LOG_INFO("player %zu (%s) is in the session again from tick %u", i, s.name.c_str(), t);
  }
}

// Figures and the pacer's schedule after tick t.
void ServerSession::Impl::after_step(Tick t, std::int64_t now) {
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
}

void ServerSession::Impl::record_tick(Tick t, std::uint64_t h, bool settled) {
  if (hash_log && settled) hash_log->write(t, h);
  if (tick_fn) tick_fn(feed.at(t), h);
  if (t % (10 * kTickRate) == 0)
    LOCKSTEP_LOG_INFO("tick %u hash %s players %u filled %llu desyncs %llu", t, hash_hex(h).c_str(),
                      active_players_count(), static_cast<unsigned long long>(stats.filled_inputs),
                      static_cast<unsigned long long>(stats.desyncs));
}

std::vector<protocol::Seat> ServerSession::Impl::roster() const {
  std::vector<protocol::Seat> r;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].taken) r.push_back({static_cast<std::uint32_t>(i), slots[i].name});
  return r;
}

// ENet's figures of a player's connection: live while it is connected, as last measured after.
PeerNet ServerSession::Impl::net_of(const Slot& s) const {
  const auto it = s.taken ? peers.find(s.peer_id) : peers.end();
  return it != peers.end() && it->second.link ? peer_net(it->second.link) : s.net;
}

protocol::SeatStatus ServerSession::Impl::seat_status(std::size_t i) const {
  const Slot& s = slots[i];
  const PeerNet net = net_of(s);
  protocol::SeatStatus st;
  st.slot = static_cast<std::uint32_t>(i);
  st.name = s.name;
  st.rtt_us = net.rtt_us;
  st.jitter_us = net.rtt_var_us;
  // The loss the session sees (its play messages that never came), not ENet's estimate. A page's
  // stream loses nothing; over its data channel, the door counts the datagrams that never came.
  st.loss_ppm = static_cast<std::uint32_t>(s.up_loss.loss() * 1e6 + 0.5);
  if (s.stream) st.loss_ppm = std::max(st.loss_ppm, net.loss_ppm);  // set when it took the seat
  st.lead_us = s.lead_us;
  st.hashes_checked = s.hashes_checked;
  st.fills_late = static_cast<std::uint32_t>(s.inputs.fills_late());
  st.fills_lost = static_cast<std::uint32_t>(s.inputs.fills_lost());
  st.fills_silent = static_cast<std::uint32_t>(s.inputs.fills_silent());
  st.latency_p50_us = static_cast<std::uint32_t>(s.inputs.latency().percentile_us(50));
  st.latency_p99_us = static_cast<std::uint32_t>(s.inputs.latency().percentile_us(99));
  return st;
}

std::vector<protocol::SeatStatus> ServerSession::Impl::seat_statuses() const {
  std::vector<protocol::SeatStatus> r;
  for (std::size_t i = 0; i < slots.size(); ++i)
    if (slots[i].taken) r.push_back(seat_status(i));
  return r;
}

}  // namespace lockstep
