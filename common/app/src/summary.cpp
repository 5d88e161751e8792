// The JSON documents the stock executables print: summaries and status replies (summary.hpp).
#include "lockstep/summary.hpp"

#include <algorithm>
#include <cmath>

#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

double round_to(double v, int decimals) {
  const double scale = std::pow(10.0, decimals);
  return std::round(v * scale) / scale;
}

namespace {

Json percentiles(const Histogram& h) {
  return Json{{"p50", h.percentile_us(50)}, {"p99", h.percentile_us(99)}, {"max", h.max_us()}};
}

Json seats_json(const std::vector<protocol::SeatStatus>& seats) {
  Json out = Json::array();
  for (const auto& s : seats) out.push_back(seat_json(s));
  return out;
}

// Bytes on the wire of `bytes` of payload in `packets` messages, `door_messages` of them the
// WebSocket door's: 28 bytes of IPv4+UDP header per ENet datagram, 52 of TCP/IPv4 (with
// timestamps) per WebSocket message.
double wire_bytes(std::uint64_t bytes, std::uint64_t packets, std::uint64_t door_messages = 0) {
  return static_cast<double>(bytes) + 28.0 * static_cast<double>(packets - door_messages) +
         52.0 * static_cast<double>(door_messages);
}

}  // namespace

Json seat_json(const protocol::SeatStatus& p) {
  return Json{{"slot", p.slot},
              {"name", p.name},
              {"rtt_ms", round_to(p.rtt_us / 1e3, 1)},
              {"jitter_ms", round_to(p.jitter_us / 1e3, 1)},
              {"loss", round_to(p.loss_ppm / 1e6, 4)},
              {"lead_ms", round_to(p.lead_us / 1e3, 1)},
              {"fills", {{"late", p.fills_late}, {"lost", p.fills_lost}, {"silent", p.fills_silent}}},
              {"latency_us", {{"p50", p.latency_p50_us}, {"p99", p.latency_p99_us}}},
              {"hashes_checked", p.hashes_checked}};
}

Json status_json(const protocol::Status& st) {
  const std::uint32_t free_seats = st.players > st.joined ? st.players - st.joined : 0;
  if (!st.full)  // what a server with keys tells anyone (docs/PROTOCOL.md §11)
    return Json{{"phase", st.phase},           {"players", st.players},
                {"joined", st.joined},         {"seats_free", free_seats},
                {"protocol_version", st.protocol_version}, {"fingerprint", hash_hex(st.fingerprint)},
                {"full", false}};
  return Json{{"phase", st.phase},
              {"full", true},
              {"seats_free", free_seats},
              {"tick", st.tick},
              {"players", st.players},
              {"joined", st.joined},
              {"active", st.active},
              {"spectators", st.spectators},
              {"desyncs", st.desyncs},
              {"lateness_p99_us", st.lateness_p99_us},
              {"protocol_version", st.protocol_version},
              {"fingerprint", hash_hex(st.fingerprint)},
              {"last_tick", st.last_tick},
              {"seats", seats_json(st.seats)},
              {"datagrams_dropped", {{"refused", st.dropped.refused},
                                     {"empty", st.dropped.empty},
                                     {"oversized", st.dropped.oversized},
                                     {"unknown_connection", st.dropped.unknown_connection},
                                     {"socket_buffer_full", st.dropped.socket_buffer_full}}},
              {"websocket_refused", st.dropped.websocket_refused},
              {"refused_and_dropped", {{"messages_dropped", st.dropped.messages_dropped},
                                       {"kicked", st.dropped.kicked},
                                       {"pending_refused", st.dropped.pending_refused},
                                       {"pending_evicted", st.dropped.pending_evicted},
                                       {"handshakes_cut", st.dropped.handshakes_cut},
                                       {"replies_withheld", st.dropped.replies_withheld},
                                       {"states_unanswered", st.dropped.states_unanswered},
                                       {"states_forged", st.dropped.states_forged}}}};
}

Json server_summary(const ServerSession& s, double cpu_us_per_tick) {
  const ServerStats& st = s.stats();
  // A seat taken with a connect token names its client and the token's user data (hex).
  Json seats = seats_json(s.seats());
  for (Json& seat : seats)
    if (const auto token = s.seat_token(seat["slot"].get<std::uint32_t>())) {
      seat["client_id"] = token->client_id;
      seat["user_data"] = bytes_hex(token->user_data);
    }
  Json desyncs = Json::array();
  for (const DesyncEvent& d : s.desyncs())
    desyncs.push_back(Json{{"tick", d.tick},
                           {"slot", d.slot},
                           {"name", d.name},
                           {"server_hash", hash_hex(d.server_hash)},
                           {"client_hash", hash_hex(d.client_hash)}});
  Json drops = Json::object();
  for (std::size_t r = 0; r < st.drops.size(); ++r)
    if (st.drops[r] != 0) drops[to_string(static_cast<DropReason>(r))] = st.drops[r];
  Json departures = Json::array();
  for (const Departure& d : s.departures())
    departures.push_back(Json{{"tick", d.tick}, {"slot", d.slot}, {"name", d.name}, {"reason", d.reason}});
  Json refusals = Json::object();
  for (std::size_t r = 0; r < st.refusals.size(); ++r)
    if (st.refusals[r] != 0) refusals[wire::EnumNameRefuseReason(static_cast<wire::RefuseReason>(r))] = st.refusals[r];
  // Wire cost per client per tick. The host's counters hold the WebSocket door's messages too.
  const NetTraffic h = s.traffic();
  const NetTraffic door = s.door_stats().traffic;
  const double client_ticks = static_cast<double>(st.ticks) * std::max<std::uint32_t>(1, s.peak_peers());
  const double up = wire_bytes(h.bytes_received, h.packets_received, door.packets_received) / client_ticks;
  const double down = wire_bytes(h.bytes_sent, h.packets_sent, door.packets_sent) / client_ticks;
  const double run_s = static_cast<double>(st.last_tick_ns - st.first_tick_ns) / 1e9;
  const double steady_s = static_cast<double>(st.last_tick_ns - st.steady_tick_ns) / 1e9;
  const double steady_tps =
      st.steady_tick_ns > 0 && steady_s > 0 ? static_cast<double>(s.executed_tick() - 200) / steady_s : 0.0;
  // The settled hash of the newest settled tick: the server's own, or in relay mode the voters'.
  const auto [settled_tick, settled_hash] = s.settled();
  Json relay = nullptr;
  Json outvoted = Json::array();
  for (const ServerSession::Outvoted& o : s.outvoted()) {
    Json by = Json::array();
    for (std::uint32_t i = 0; i < 32; ++i)
      if (o.by_mask & (1u << i)) by.push_back(i);
    outvoted.push_back(Json{{"slot", o.slot}, {"name", o.name}, {"times", o.times}, {"by", by}, {"by_times", o.by_times},
                            {"collusion_suspected", o.suspected}});
  }
  if (s.config().relay)
    relay = Json{{"ticks_settled", st.ticks_settled},
                 {"outvoted", outvoted},
                 {"collusion_suspected", st.collusion_suspected},
                 {"ticks_split", st.ticks_split},
                 {"ticks_unvoted", st.ticks_unvoted},
                 {"ticks_settled_late", st.ticks_settled_late},
                 {"settled_tick", settled_tick},
                 {"states", {{"requested", st.states_requested},
                             {"forwarded", st.states_forwarded},
                             {"forged", st.states_forged},
                             {"not_held", st.states_not_held},
                             {"unanswered", st.states_unanswered},
                             {"keyframes", st.keyframes_fetched},
                             {"joins_from_keyframe", st.joins_from_keyframe}}}};
  Json websocket = nullptr;
  if (s.websocket_port()) {
    const DoorStats d = s.door_stats();
    websocket = Json{{"port", s.websocket_port()},
                     {"connections", d.connections},
                     {"upgraded", d.upgraded},
                     {"pages_served", d.pages_served},
                     {"refused", {{"address", d.refused_address},
                                  {"full", d.refused_full},
                                  {"protocol", d.refused_protocol}, {"outside_root", d.refused_outside_root},
                                  {"malformed", d.malformed},
                                  {"text", d.text_refused},
                                  {"oversized", d.oversized_refused},
                                  {"flooding", d.flooding_cut},
                                  {"backlog", d.backlog_cut},
                                  {"before_request", d.closed_before_request}}},
                     {"handshakes", {{"evicted", d.handshakes_evicted},
                                     {"timed_out", d.handshakes_timed_out},
                                     {"peak", d.handshakes_peak}}},
                     {"play_dropped", d.play_dropped},
                     {"datagrams", {{"offers", d.datagram_offers},
                                    {"channels", d.datagram_channels},
                                    {"failed", d.datagram_failed},
                                    {"messages_in", d.datagram_messages_in},
                                    {"messages_out", d.datagram_messages_out},
                                    {"dropped", d.datagram_dropped},
                                    {"oversized", d.datagram_oversized}}},
                     {"traffic", {{"bytes_sent", d.traffic.bytes_sent},
                                  {"bytes_received", d.traffic.bytes_received},
                                  {"messages_sent", d.traffic.packets_sent},
                                  {"messages_received", d.traffic.packets_received}}}};
  }
  return Json{{"ticks", s.executed_tick()},
              {"final_hash", hash_hex(settled_hash)},
              {"websocket", websocket},
              {"relay", relay},
              {"result", s.result() ? result_json(*s.result()) : Json(nullptr)},
              {"players", s.config().players},
              {"filled_inputs", st.filled_inputs},
              {"commands", st.commands},
              {"hashes_compared", st.hashes_compared},
              {"refused", st.refused},
              {"dropped", st.total_drops()},
              {"lateness_us", percentiles(st.lateness)},
              {"own_lateness_us", percentiles(st.own_lateness)},
              {"desyncs", desyncs},
              {"spectator_desyncs", st.spectator_desyncs},
              {"divergent_ticks", st.divergent_ticks},
              {"hash_silences", st.hash_silences},
              {"departures", departures},
              {"ticks_skipped", st.ticks_skipped},
              {"drops", drops},
              {"refusals", refusals},
              {"seats", seats},
              {"ticks_per_second_after_2s", round_to(steady_tps, 2)},
              {"send_every", s.config().send_every},
              {"input_delay", s.config().input_delay},
              {"wire_bytes_per_client_tick", {{"up", round_to(st.ticks ? up : 0.0, 1)}, {"down", round_to(st.ticks ? down : 0.0, 1)}}},
              {"run_seconds", round_to(run_s, 3)},
              {"ticks_per_second", round_to(run_s > 0 ? static_cast<double>(st.ticks - 1) / run_s : 0.0, 2)},
              {"kicked", st.kicked},
              {"sealed", s.config().token_key.has_value() || s.config().token_key_later},
              {"sealed_dropped", {{"forged", st.sealed_forged}, {"replayed", st.sealed_replayed}}},
              {"datagrams_refused", h.datagrams_refused},  // failed the datagram check (PROTOCOL.md §1.1)
              {"datagrams_dropped", {{"refused", h.datagrams_refused},  // every datagram dropped unread, by kind
                                     {"empty", h.datagrams_empty},
                                     {"oversized", h.datagrams_oversized},
                                     {"unknown_connection", h.datagrams_unknown},
                                     {"socket_buffer_full", h.datagrams_overflowed}}},
              {"replies_withheld", st.replies_withheld},
              {"pending_refused", st.pending_refused},
              {"pending_evicted", st.pending_evicted},
              {"handshakes_cut", st.handshakes_cut},
              {"status_replies", {{"public", st.status_public}, {"full", st.status_full}}},
              {"joins_running", st.joins_running},
              {"verified", st.verified},
              {"join_mismatches", st.join_mismatches},
              {"state_history_ticks", st.state_history_ticks},
              {"resyncs", st.resyncs},
              {"resyncs_not_taken", st.resyncs_not_taken},
              {"desync_reports", {{"written", s.reports().size()},
                                  {"divergences_in_episodes", st.desyncs_in_episodes},
                                  {"unwritten", st.reports_unwritten}}},
              {"cpu_us_per_tick", round_to(cpu_us_per_tick, 2)}};
}

Json client_summary(const ClientSession& s, const FrameFigures& frames) {
  const ClientStats& st = s.stats();
  Json drops = Json::object();
  for (std::size_t r = 0; r < st.drops.size(); ++r)
    if (st.drops[r] != 0) drops[to_string(static_cast<ClientDrop>(r))] = st.drops[r];
  const double tps = st.last_exec_ns > st.first_exec_ns ? static_cast<double>(st.executed_ticks - 1) * 1e9 /
                                                              static_cast<double>(st.last_exec_ns - st.first_exec_ns)
                                                        : 0.0;
  // This client's own wire cost per executed tick (its datagrams).
  const NetTraffic h = s.traffic();
  const double ticks = std::max<double>(1.0, static_cast<double>(s.executed_tick()));
  const double up = wire_bytes(h.bytes_sent, h.packets_sent) / ticks;
  const double down = wire_bytes(h.bytes_received, h.packets_received) / ticks;
  return Json{{"tick", s.executed_tick()},
              {"final_hash", hash_hex(s.last_hash())},
              {"exit", s.exit_code()},
              {"wire_bytes_per_tick", {{"up", round_to(up, 1)}, {"down", round_to(down, 1)}}},
              {"desynced", s.desynced()},  // the server said this client diverged
              {"end", s.end_message()},
              {"refused", st.refusal.empty() ? Json(nullptr) : Json(st.refusal)},
              {"joined_at", s.joined_at()},
              {"resyncs", st.resyncs},
              {"resyncs_waited", st.resyncs_waited},
              {"snapshot", {{"bytes", st.snapshot_bytes}, {"us", st.snapshot_ns / 1000}}},  // the last one loaded
              {"states_served", st.states_served},  // saved states sent to a relay server for other peers
              {"servers_tried", st.servers_tried},
              {"inputs_filled", st.inputs_filled},
              {"commands_sent", st.commands_sent},
              {"rtt_ms", st.rtt_ms},
              {"jitter_ms", st.rtt_var_ms},
              {"loss", round_to(st.loss, 4)},
              {"loss_enet", round_to(st.loss_enet, 4)},
              {"connect_attempts", st.connect_attempts},
              {"ticks_per_second", round_to(tps, 2)},
              {"latency_us", percentiles(st.input_latency)},
              {"lead_us", st.lead_ns / 1000},
              {"dropped", st.total_drops()},
              {"drops", drops},
              {"datagrams_refused", s.traffic().datagrams_refused},  // failed the datagram check (PROTOCOL.md §1.1)
              {"frames", frames.frames},
              {"frame_jitter_us", percentiles(frames.jitter)}};
}

}  // namespace lockstep
