// The server's Prometheus metrics, health and readiness (server_metrics.hpp).
#include "server_metrics.hpp"

#include <array>
#include <atomic>
#include <charconv>
#include <cmath>
#include <initializer_list>
#include <map>

#include "lockstep/version.hpp"
#include "lockstep/protocol.hpp"

namespace lockstep {

namespace {

// Metric names of the message drops, in DropReason order.
constexpr std::array<const char*, static_cast<std::size_t>(DropReason::Count)> kDropNames = {
    "too_large",           "malformed",         "field_out_of_range", "wrong_channel",
    "unexpected_message",  "not_joined",        "input_too_far_ahead", "hash_for_future_tick",
    "hash_too_old",        "frame_ack_out_of_range", "bad_inputs"};

// Bucket edges in microseconds, as Prometheus reads them in seconds.
constexpr std::array<std::int64_t, 11> kTickBuckets = {50, 100, 250, 500, 1000, 2000, 5000, 10000, 20000, 50000, 100000};
constexpr std::array<std::int64_t, 9> kJoinBuckets = {1000, 10000, 50000, 100000, 250000, 500000, 1000000, 2000000, 4000000};

// Prometheus' text format (0.0.4), written straight into one string: a family's HELP and TYPE
// lines, then its samples, `name{label="value",...} number`. prometheus-cpp's TextSerializer, over
// its data model, took 1.24 million instructions a scrape (callgrind: ostream formatting and a
// ClientMetric per sample), which at a scrape a second cost a server about 2.7 % more CPU per
// client-tick (lockstep-bench --only metrics), past the 2 % allowed; this writer takes a small
// fraction of that (docs/PERFORMANCE.md), and the format is four kinds of line.
class Exposition {
 public:
  Exposition() { out_.reserve(16 * 1024); }
  void family(const char* name, const char* help, const char* type) {
    out_ += "# HELP ";
    out_ += name;
    out_ += ' ';
    out_ += help;
    out_ += "\n# TYPE ";
    out_ += name;
    out_ += ' ';
    out_ += type;
    out_ += '\n';
  }
  /// One sample; `labels` as written between the braces ("" for none).
  void sample(const char* name, const char* suffix, std::string_view labels, double v) {
    out_ += name;
    out_ += suffix;
    if (!labels.empty()) {
      out_ += '{';
      out_ += labels;
      out_ += '}';
    }
    out_ += ' ';
    number(v);
    out_ += '\n';
  }
  void counter(const char* name, const char* help, double v) {
    family(name, help, "counter");
    sample(name, "", "", v);
  }
  void gauge(const char* name, const char* help, double v) {
    family(name, help, "gauge");
    sample(name, "", "", v);
  }
  /// One family with a series per value of `label`.
  template <typename T>
  void labelled(const char* name, const char* help, const char* type, const char* label,
                std::initializer_list<std::pair<const char*, T>> values) {
    family(name, help, type);
    for (const auto& [value, v] : values) sample(name, "", pair(label, value), static_cast<double>(v));
  }
  template <std::size_t N>
  void histogram(const char* name, const char* help, const Histogram& h, const std::array<std::int64_t, N>& edges_us) {
    family(name, help, "histogram");
    sample(name, "_count", "", static_cast<double>(h.count()));
    sample(name, "_sum", "", static_cast<double>(h.sum_us()) / 1e6);
    std::array<std::uint64_t, N> at{};
    h.counts_at_most(edges_us, at);
    for (std::size_t i = 0; i < N; ++i) {
      std::string le = "le=\"";
      append_number(le, static_cast<double>(edges_us[i]) / 1e6);
      le += '"';
      sample(name, "_bucket", le, static_cast<double>(at[i]));
    }
    sample(name, "_bucket", "le=\"+Inf\"", static_cast<double>(h.count()));
  }
  /// `key="value"`, the value escaped as the format asks (backslash, quote, newline).
  static std::string pair(std::string_view key, std::string_view value) {
    std::string s(key);
    s += "=\"";
    for (const char c : value) {
      if (c == '\\' || c == '"') s += '\\';
      if (c == '\n') {
        s += "\\n";
        continue;
      }
      s += c;
    }
    s += '"';
    return s;
  }
  [[nodiscard]] std::string take() { return std::move(out_); }

 private:
  static void append_number(std::string& s, double v) {
    if (std::isinf(v)) {
      s += v > 0 ? "+Inf" : "-Inf";
      return;
    }
    if (std::isnan(v)) {
      s += "NaN";
      return;
    }
    char buf[32];
    // The shortest form that reads back, as %g writes it (0.0005, 5e-05): what Go clients write too.
    const auto r = std::to_chars(buf, buf + sizeof buf, v, std::chars_format::general);
    s.append(buf, r.ptr);
  }
  void number(double v) { append_number(out_, v); }
  std::string out_;
};

}  // namespace

ServerMetrics::ServerMetrics(std::string session_id, std::string module, bool relay)
    : session_id_(std::move(session_id)), module_(std::move(module)), relay_(relay) {}

void ServerMetrics::observe(const ServerSession& session, std::int64_t now, std::int64_t update_ns, bool ticked,
                            bool draining, bool force) {
  if (ticked) update_duration_.add_us(update_ns / 1000);
  if (force || now >= next_publish_) publish(session, now, draining);
}

void ServerMetrics::publish(const ServerSession& session, std::int64_t now, bool draining) {
  next_publish_ = now + kPublishNs;
  // The spare view, unless a scrape still holds it (then a new one; the held one goes with its scrape).
  std::shared_ptr<ServerView> v = spare_ && spare_.use_count() == 1 ? std::move(spare_) : std::make_shared<ServerView>();
  std::atomic_thread_fence(std::memory_order_acquire);  // after the last scrape that read it let go
  spare_.reset();
  v->at_ns = now;
  v->stats = session.stats();
  v->traffic = session.traffic();
  v->door = session.door_stats();
  v->seats = session.seats();
  v->localized = session.reports().size();
  v->players = session.active_players();
  v->peak_peers = session.peak_peers();
  v->tick = session.executed_tick();
  v->started = session.started();
  v->finished = session.finished();
  v->accepting = session.accepting_players();
  v->draining = draining;
  v->update_duration = update_duration_;
  std::shared_ptr<const ServerView> old;
  {
    std::lock_guard<std::mutex> lock(mutex_);
    old = std::exchange(latest_, std::move(v));
  }
  // Written by this thread alone from here; a scrape may still read it until its copy of the
  // pointer goes (use_count() above).
  spare_ = std::const_pointer_cast<ServerView>(std::move(old));
}

std::shared_ptr<const ServerView> ServerMetrics::latest() const {
  std::lock_guard<std::mutex> lock(mutex_);
  return latest_;
}

OpsReply ServerMetrics::answer(std::string_view path, std::int64_t now, const OpsHttpStats& ops) const {
  const auto v = latest();
  if (path == "/metrics") return {200, "text/plain; version=0.0.4; charset=utf-8", text(now, ops)};
  if (path == "/healthz") {
    if (!v) return {503, "text/plain; charset=utf-8", "starting\n"};
    if (now - v->at_ns > kStaleNs)
      return {503, "text/plain; charset=utf-8",
              "the tick loop has not run for " + std::to_string((now - v->at_ns) / 1'000'000'000) + " s\n"};
    return {200, "text/plain; charset=utf-8", "ok\n"};
  }
  if (path == "/readyz") {
    if (!v) return {503, "text/plain; charset=utf-8", "starting\n"};
    if (v->accepting) return {200, "text/plain; charset=utf-8", "ready: admitting players\n"};
    const char* why = v->draining ? "shutting down: the match plays on to its end, no one new is admitted\n"
                      : v->finished ? "the session is over\n"
                      : v->started ? "the match is running and admits no one new\n"
                                   : "every seat is taken\n";
    return {503, "text/plain; charset=utf-8", std::string("not ready: ") + why};
  }
  return {404, "", ""};
}

std::string ServerMetrics::text(std::int64_t now, const OpsHttpStats& ops) const {
  const auto view = latest();
  Exposition f;
  f.family("lockstep_info", "the session this server hosts (labels); always 1", "gauge");
  f.sample("lockstep_info", "",
           Exposition::pair("session", session_id_) + "," + Exposition::pair("version", kVersion) + "," +
               Exposition::pair("module", module_) + "," + Exposition::pair("mode", relay_ ? "relay" : "simulation"),
           1);
  f.labelled<std::uint64_t>("lockstep_ops_requests_total", "requests on the ops port, by outcome", "counter",
                            "outcome", {{"answered", ops.answered}, {"not_found", ops.not_found},
                                        {"method_not_allowed", ops.not_allowed}});
  if (!view) return f.take();
  const ServerView& v = *view;
  const ServerStats& s = v.stats;
  f.gauge("lockstep_metrics_age_seconds", "how old these figures are (the tick loop publishes once a second)",
          static_cast<double>(now - v.at_ns) / 1e9);
  const char* phase = v.finished ? "finished" : !v.started ? "lobby" : "running";
  f.labelled<int>("lockstep_sessions", "sessions on this server, by phase", "gauge",
                  "phase", {{"lobby", phase[0] == 'l'}, {"running", phase[0] == 'r'}, {"finished", phase[0] == 'f'}});
  f.gauge("lockstep_players", "players in the session", v.players);
  f.gauge("lockstep_peers_peak", "the most clients (players and spectators) connected at once", v.peak_peers);
  f.gauge("lockstep_accepting_players", "1 while a new player would be admitted (what /readyz says)", v.accepting);
  f.gauge("lockstep_draining", "1 once a shutdown began: the match plays on, no one new is admitted", v.draining);
  f.gauge("lockstep_tick", "the newest executed tick", v.tick);
  f.counter("lockstep_ticks_executed_total", "ticks executed", static_cast<double>(s.ticks));
  f.counter("lockstep_ticks_skipped_total", "ticks the clock moved later because the server fell behind",
            static_cast<double>(s.ticks_skipped));
  f.histogram("lockstep_tick_lateness_seconds", "each tick executed against its deadline", s.lateness, kTickBuckets);
  f.histogram("lockstep_tick_own_lateness_seconds",
              "each tick executed against the latest of its deadline, its last input's arrival, the end of a wait for an "
              "input that did not come and when the tick before it could run: the server's own delay",
              s.own_lateness, kTickBuckets);
  f.histogram("lockstep_tick_duration_seconds", "the tick loop's updates that executed ticks: their wall time",
              v.update_duration, kTickBuckets);
  f.counter("lockstep_inputs_filled_total", "inputs repeated because they were late, lost or never sent",
            static_cast<double>(s.filled_inputs));
  f.counter("lockstep_commands_total", "player commands executed", static_cast<double>(s.commands));

  // Per seat, labelled by slot (names are the players' and unbounded).
  const auto per_seat = [&](const char* name, const char* help, double (*value)(const SeatStatus&)) {
    f.family(name, help, "gauge");
    for (const SeatStatus& seat : v.seats) f.sample(name, "", Exposition::pair("slot", std::to_string(seat.slot)), value(seat));
  };
  per_seat("lockstep_seat_round_trip_seconds", "each taken seat's round trip", [](const SeatStatus& x) { return x.rtt_us / 1e6; });
  per_seat("lockstep_seat_jitter_seconds", "each taken seat's round-trip jitter",
           [](const SeatStatus& x) { return x.jitter_us / 1e6; });
  per_seat("lockstep_seat_loss_ratio", "each taken seat's packet loss, 0..1", [](const SeatStatus& x) { return x.loss_ppm / 1e6; });
  per_seat("lockstep_seat_lead_seconds", "how early each seat's inputs arrive", [](const SeatStatus& x) { return x.lead_us / 1e6; });
  f.family("lockstep_seat_fills_total", "each seat's inputs filled, by cause (resets when the seat's player changes)", "counter");
  for (const SeatStatus& seat : v.seats) {
    const std::string slot = Exposition::pair("slot", std::to_string(seat.slot));
    for (const auto& [cause, n] : {std::pair{"late", seat.fills_late}, std::pair{"lost", seat.fills_lost},
                                   std::pair{"silent", seat.fills_silent}})
      f.sample("lockstep_seat_fills_total", "", Exposition::pair("cause", cause) + "," + slot, n);
  }

  f.labelled<std::uint64_t>("lockstep_desyncs_total", "clients found desynced (again after a resync), by role",
                            "counter", "role", {{"player", s.desyncs}, {"spectator", s.spectator_desyncs}});
  f.counter("lockstep_desyncs_localized_total", "desync reports localized to a tick and fields",
            static_cast<double>(v.localized));
  f.counter("lockstep_divergent_ticks_total", "hashes that differed from the settled one", static_cast<double>(s.divergent_ticks));
  f.counter("lockstep_hashes_compared_total", "client hashes compared", static_cast<double>(s.hashes_compared));
  f.counter("lockstep_resyncs_total", "states sent to desynced clients", static_cast<double>(s.resyncs));
  f.counter("lockstep_hash_silences_total", "players dropped for not reporting hashes", static_cast<double>(s.hash_silences));
  f.labelled<std::uint64_t>(
      "lockstep_states_total", "saved states asked of peers (relay mode), by outcome", "counter", "outcome",
      {{"requested", s.states_requested}, {"forwarded", s.states_forwarded}, {"forged", s.states_forged},
       {"not_held", s.states_not_held}, {"unanswered", s.states_unanswered}, {"keyframe", s.keyframes_fetched}});
  f.labelled<std::uint64_t>("lockstep_relay_ticks_total", "relay mode: ticks by verdict", "counter", "verdict",
                            {{"settled", s.ticks_settled}, {"split", s.ticks_split}, {"unvoted", s.ticks_unvoted},
                             {"settled_late", s.ticks_settled_late}});
  f.labelled<std::uint64_t>("lockstep_joins_total", "players admitted, by kind", "counter", "kind",
                            {{"join", s.joins}, {"rejoin", s.rejoins}});
  f.counter("lockstep_joins_verified_total", "rejoins and late joins whose state was verified by a matching hash",
            static_cast<double>(s.verified));
  f.histogram("lockstep_join_latency_seconds", "players and spectators admitted: from their connection to their seat",
              s.join_latency, kJoinBuckets);
  f.family("lockstep_refusals_total", "joins refused, by reason", "counter");
  for (std::size_t r = 0; r < s.refusals.size(); ++r)
    f.sample("lockstep_refusals_total", "",
             Exposition::pair("reason", wire::EnumNameRefuseReason(static_cast<wire::RefuseReason>(r))),
             static_cast<double>(s.refusals[r]));
  f.labelled<std::uint64_t>("lockstep_datagrams_total", "UDP datagrams", "counter", "direction",
                            {{"in", v.traffic.packets_received}, {"out", v.traffic.packets_sent}});
  f.labelled<std::uint64_t>("lockstep_bytes_total", "UDP payload bytes", "counter", "direction",
                            {{"in", v.traffic.bytes_received}, {"out", v.traffic.bytes_sent}});
  // Everything dropped, by kind: messages, datagrams, floods and misbehaving connections.
  f.family("lockstep_drops_total", "what was dropped or cut, by kind", "counter");
  auto drop = [&](const std::string& kind, std::uint64_t n) {
    f.sample("lockstep_drops_total", "", Exposition::pair("kind", kind), static_cast<double>(n));
  };
  for (std::size_t r = 0; r < kDropNames.size(); ++r) drop(std::string("message_") + kDropNames[r], s.drops[r]);
  drop("datagram_refused", v.traffic.datagrams_refused);
  drop("datagram_empty", v.traffic.datagrams_empty);
  drop("datagram_oversized", v.traffic.datagrams_oversized);
  drop("datagram_unknown", v.traffic.datagrams_unknown);
  drop("datagram_overflowed", v.traffic.datagrams_overflowed);
  drop("sealed_forged", s.sealed_forged);
  drop("sealed_replayed", s.sealed_replayed);
  drop("peer_kicked", s.kicked);
  drop("pending_evicted", s.pending_evicted);
  drop("pending_refused", s.pending_refused);
  drop("handshake_cut", s.handshakes_cut);
  drop("websocket_flooding_cut", v.door.flooding_cut);
  drop("websocket_backlog_cut", v.door.backlog_cut);
  drop("websocket_refused_full", v.door.refused_full);
  drop("websocket_refused_address", v.door.refused_address);
  drop("websocket_malformed", v.door.malformed);
  return f.take();
}

std::string ServerMetrics::merge(const std::vector<std::string>& ids, const std::vector<std::string>& texts) {
  // Each text is families in one order, each a HELP and a TYPE line and its samples. The merged
  // text keeps the first text's order of families (a family another text has alone follows), each
  // family's header once, and its samples from every text in turn, with session="ID" added.
  struct Family {
    std::string header;
    std::string samples;
  };
  std::vector<std::string> order;
  std::map<std::string, Family, std::less<>> families;
  for (std::size_t i = 0; i < texts.size(); ++i) {
    const std::string label = Exposition::pair("session", ids[i]);
    std::string_view rest = texts[i];
    Family* current = nullptr;
    std::string_view current_name;
    while (!rest.empty()) {
      const std::size_t nl = rest.find('\n');
      const std::string_view line = rest.substr(0, nl == std::string_view::npos ? rest.size() : nl + 1);
      rest.remove_prefix(line.size());
      if (line.rfind("# HELP ", 0) == 0) {
        const std::string_view name = line.substr(7, line.find(' ', 7) - 7);
        auto [it, fresh] = families.try_emplace(std::string(name));
        if (fresh) order.emplace_back(name);
        current = &it->second;
        current_name = name;
        if (fresh) current->header += line;
        continue;
      }
      if (line.rfind("# TYPE ", 0) == 0) {
        if (current && current->header.find("# TYPE ") == std::string::npos) current->header += line;
        continue;
      }
      if (!current) continue;
      // The ops port's counters are the process's: once, from the first session.
      if (current_name == "lockstep_ops_requests_total") {
        if (i == 0) current->samples += line;
        continue;
      }
      // lockstep_info names its session already.
      if (line.find("session=\"") != std::string_view::npos) {
        current->samples += line;
        continue;
      }
      const std::size_t brace = line.find('{'), space = line.find(' ');
      if (brace != std::string_view::npos && brace < space) {
        current->samples.append(line.substr(0, brace + 1)).append(label).append(",").append(line.substr(brace + 1));
      } else {
        current->samples.append(line.substr(0, space)).append("{").append(label).append("}").append(line.substr(space));
      }
    }
  }
  std::string out;
  for (const std::string& name : order) {
    const Family& f = families.find(name)->second;
    out += f.header;
    out += f.samples;
  }
  return out;
}

OpsReply ServerMetrics::answer_all(const std::vector<const ServerMetrics*>& sessions, std::string_view path,
                                   std::int64_t now, const OpsHttpStats& ops) {
  if (sessions.size() == 1) return sessions.front()->answer(path, now, ops);
  if (path == "/metrics") {
    std::vector<std::string> ids, texts;
    for (const ServerMetrics* m : sessions) {
      ids.push_back(m->session_id_);
      texts.push_back(m->text(now, ops));
    }
    return {200, "text/plain; version=0.0.4; charset=utf-8", merge(ids, texts)};
  }
  if (path == "/healthz" || path == "/readyz") {
    // Every session's own answer, a line each; healthy when all are, ready when any is.
    int healthy = 0, ready = 0;
    std::string lines;
    for (const ServerMetrics* m : sessions) {
      const OpsReply r = m->answer(path, now, ops);
      const int ok = r.status == 200 ? 1 : 0;
      if (path == "/healthz") healthy += ok;
      else ready += ok;
      lines += m->session_id_ + ": " + r.body;
      if (lines.empty() || lines.back() != '\n') lines += '\n';
    }
    const auto n = static_cast<int>(sessions.size());
    if (path == "/healthz")
      return {healthy == n ? 200u : 503u, "text/plain; charset=utf-8",
              (healthy == n ? "ok\n" : std::to_string(n - healthy) + " of " + std::to_string(n) + " sessions unhealthy\n") + lines};
    return {ready > 0 ? 200u : 503u, "text/plain; charset=utf-8",
            (ready > 0 ? "ready: " + std::to_string(ready) + " of " + std::to_string(n) + " sessions admit players\n"
                       : std::string("not ready: no session admits players\n")) +
                lines};
  }
  return {404, "", ""};
}

}  // namespace lockstep
