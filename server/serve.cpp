// lockstep-server's hosting: its sessions (one, or --sessions on one thread), their hash logs,
// recordings, results and summaries, Agones and the ops port, and the event loop (serve.hpp).
#include "serve.hpp"

#include <algorithm>
#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <memory>
#include <string_view>

#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/error.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/hash_log.hpp"
#include "lockstep/log.hpp"
#include "lockstep/session_result.hpp"
#include "lockstep/session_recorder.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/summary.hpp"
#include "lockstep/transport.hpp"
#include "agones.hpp"
#include "ops_http.hpp"
#include "result_webhook.hpp"
#include "server_metrics.hpp"

namespace lockstep::server {
namespace {

/// --sessions: sessions whose ticks fall due together, at most.
constexpr std::uint32_t kSessionsPerWake = 8;
/// The session finished, but its result never reached --result-webhook.
constexpr int kExitResultUndelivered = 5;

// One session a process hosts, with what it writes.
struct Hosted {
  std::string id, summary_path, result_path;
  std::unique_ptr<ServerSession> session;
  HashLogWriter hash_log;
  std::unique_ptr<SessionRecorder> recorder;
  std::unique_ptr<ResultWebhook> webhook;
  TickCpuMeter play_cpu;
  std::unique_ptr<ServerMetrics> metrics;  // what the ops port says of it
  bool draining = false, stopping = false;
  std::int64_t drain_deadline = 0;
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

}  // namespace

int serve(Options o, const std::string& module_name, const std::string& settings_text) {
  ServerConfig& cfg = o.cfg;
  if (!o.equal_builds.empty()) {
    std::ifstream in(o.equal_builds, std::ios::binary);
    std::string text(64 * 1024 + 1, '\0');
    in.read(text.data(), static_cast<std::streamsize>(text.size()));
    text.resize(static_cast<std::size_t>(in.gcount()));
    std::string why;
    if (!in.eof() && text.size() > 64 * 1024) why = "over 64 KiB";
    else if (text.empty()) why = "cannot read it";
    if (!why.empty() || !parse_equal_builds(text, &cfg.equal_builds, &why)) {
      LOCKSTEP_LOG_ERROR("--equal-builds %s: %s", o.equal_builds.c_str(), why.c_str());
      return 2;
    }
  }
  if (!cfg.code.empty()) {
    const bool listed = std::find(cfg.equal_builds.begin(), cfg.equal_builds.end(), cfg.code) != cfg.equal_builds.end();
    if (cfg.equal_builds.empty())
      LOCKSTEP_LOG_INFO("machine code %s: peers with this build of the module join (--equal-builds admits others the determinism gate replayed equal)",
                        cfg.code.c_str());
    else if (listed)
      LOCKSTEP_LOG_INFO("machine code %s: peers with this build or any of the %zu builds --equal-builds lists join",
                        cfg.code.c_str(), cfg.equal_builds.size());
    else
      LOCKSTEP_LOG_WARN("machine code %s is not among the %zu builds --equal-builds lists: only this build joins",
                        cfg.code.c_str(), cfg.equal_builds.size());
  }
  cfg.last_tick = o.ticks;
  cfg.on_desync = o.on_desync == "stop" ? OnDesync::Stop : o.on_desync == "resync" ? OnDesync::Resync : OnDesync::Report;
  cfg.record_path = o.record_path;
  cfg.module_name = module_name;
  // Relay mode keeps a keyframe from the voters at the same interval: joins are served from it.
  if (cfg.relay) cfg.relay_keyframe_interval = o.keyframe_seconds * kTickRate;
  cfg.input_grace_ns = static_cast<std::int64_t>(o.grace_ms * 1e6);
  cfg.silent_drop_ns = static_cast<std::int64_t>(o.silent_ms * 1e6);
  cfg.play_silence_ns = static_cast<std::int64_t>(o.play_silence_ms * 1e6);
  cfg.hash_silence_ns = static_cast<std::int64_t>(o.hash_silence_ms * 1e6);
  if (!o.result_webhook.empty() && o.result_webhook.rfind("http://", 0) != 0 && o.result_webhook.rfind("https://", 0) != 0) {
    LOCKSTEP_LOG_ERROR("--result-webhook wants an http:// or https:// URL, got '%s'", o.result_webhook.c_str());
    return 2;
  }
  if (!std::filesystem::is_directory(cfg.desync_dir)) {
    LOCKSTEP_LOG_ERROR("--desync-dir %s is not a directory", cfg.desync_dir.c_str());
    return 2;
  }
  const std::uint32_t count = o.sessions;
  if (count > 1) {
    // One match per Agones GameServer.
    if (o.agones) {
      LOCKSTEP_LOG_ERROR("--sessions %u: --agones serves one session a process (one match a GameServer)", count);
      return 2;
    }
    for (auto [path, option] : {std::pair{&o.record_path, "--record"}, std::pair{&o.hash_log_path, "--hash-log"},
                                std::pair{&o.result_path, "--result"}, std::pair{&o.summary_path, "--summary"}}) {
      if (!path->empty() && path->find("{session}") == std::string::npos) {
        LOCKSTEP_LOG_ERROR("--sessions %u: %s needs {session} in its path, for each session's file", count, option);
        return 2;
      }
    }
    if (cfg.port != 0 && cfg.port + count - 1 > 65535) {
      LOCKSTEP_LOG_ERROR("--sessions %u from --port %u: the ports run past 65535", count, cfg.port);
      return 2;
    }
    if (cfg.websocket_port && *cfg.websocket_port != 0 && *cfg.websocket_port + count - 1 > 65535) {
      LOCKSTEP_LOG_ERROR("--sessions %u from --websocket-port %u: the ports run past 65535", count, *cfg.websocket_port);
      return 2;
    }
  }
  // Each session's own: its ports, its files, its id (the process's id, then "-N" when several).
  std::vector<std::unique_ptr<Hosted>> hosted;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto h = std::make_unique<Hosted>();
    const std::string index = std::to_string(i);
    auto own = [&](const std::string& path) { return replace_all(path, "{session}", index); };  // 0 when alone
    h->id = count > 1 ? o.session_id + "-" + index : o.session_id;
    h->summary_path = own(o.summary_path);
    h->result_path = own(o.result_path);
    ServerConfig c = cfg;
    c.record_path = own(c.record_path);
    if (count > 1) {
      // Ticks in groups of up to kSessionsPerWake sessions, the groups' phases spread over the
      // period: one wake serves a group (fewer wakes than sessions), and the last of a group
      // waits for at most the others' turns (about 90 us each for 4 players in relay mode).
      const std::uint32_t groups = std::min<std::uint32_t>(10, (count + kSessionsPerWake - 1) / kSessionsPerWake);
      c.tick_phase_ns = static_cast<std::int64_t>(i % groups) * (kTickNs / groups);
      if (c.port != 0) c.port = static_cast<std::uint16_t>(c.port + i);
      if (c.websocket_port && *c.websocket_port != 0) c.websocket_port = static_cast<std::uint16_t>(*c.websocket_port + i);
      // Reports are named by tick and seat: each session writes into a folder of its own, made
      // with its first report.
      c.desync_dir = (std::filesystem::path(cfg.desync_dir) / h->id).string();
    }
    LogSessionScope scope(h->id);
    const std::string hash_log_path = own(o.hash_log_path);
    if (!hash_log_path.empty() && !h->hash_log.open(hash_log_path)) {
      LOCKSTEP_LOG_ERROR("cannot write --hash-log %s: %s", hash_log_path.c_str(), std::strerror(errno));
      return 2;
    }
    Error error;
    h->session = ServerSession::create(c, &error);
    if (!h->session) {
      LOCKSTEP_LOG_ERROR("%s", option_sentence(error).c_str());
      return exit_code(error.kind);
    }
    if (h->hash_log.is_open()) h->session->set_hash_log(&h->hash_log);
    if (!c.record_path.empty())
      h->recorder = std::make_unique<SessionRecorder>(*h->session, c.record_path, module_name, o.keyframe_seconds * kTickRate);
    LOCKSTEP_LOG_INFO("listening on UDP port %u for %u players: %s (%s)%s", h->session->port(), cfg.players, module_name.c_str(),
                      settings_text.c_str(), cfg.relay ? ", relay mode: no simulation, ticks settled by the players' majority" : "");
    if (h->session->websocket_port())
      LOCKSTEP_LOG_INFO("WebSocket door on TCP port %u (%s)%s", h->session->websocket_port(),
                        cfg.tls_cert.empty() ? "ws://" : "wss://",
                        cfg.web_root.empty() ? "" : (", serving " + cfg.web_root).c_str());
    hosted.push_back(std::move(h));
  }
  if (count > 1 && cfg.port != 0)
    LOCKSTEP_LOG_INFO("hosting %u sessions on one thread, UDP ports %u-%u", count, hosted.front()->session->port(),
                      hosted.back()->session->port());
  else if (count > 1)
    LOCKSTEP_LOG_INFO("hosting %u sessions on one thread, each on the free UDP port it names above", count);
  std::string batching_off;
  const bool batching = Transport::enet_batching(&batching_off);
  if (batching) LOCKSTEP_LOG_INFO("socket batching: on (recvmmsg and sendmmsg under ENet, with kernel arrival stamps)");
  else LOCKSTEP_LOG_WARN("socket batching: off, ENet reads one datagram a call: %s", batching_off.c_str());
  std::unique_ptr<AgonesHeartbeat> agones;
  if (o.agones) agones = std::make_unique<AgonesHeartbeat>(AgonesSdk::port_from_env(), monotonic_ns());
  bool awaiting_key = o.token_key == "agones";
  // The ops port answers from its own thread, for every session hosted; the loop below publishes
  // what it reads, each session's figures apart.
  std::vector<const ServerMetrics*> all_metrics;
  for (auto& h : hosted) {
    h->metrics = std::make_unique<ServerMetrics>(h->id, module_name, cfg.relay.has_value());
    all_metrics.push_back(h->metrics.get());
  }
  std::unique_ptr<OpsHttp> ops;
  if (o.metrics_port) {
    std::string ops_error;
    ops = OpsHttp::start({o.metrics_bind, *o.metrics_port},
                         [&all_metrics](std::string_view path, const OpsHttpStats& counts) {
                           return ServerMetrics::answer_all(all_metrics, path, monotonic_ns(), counts);
                         },
                         &ops_error);
    if (!ops) {
      LOCKSTEP_LOG_ERROR("--metrics-port: %s", ops_error.c_str());
      return 2;
    }
    LOCKSTEP_LOG_INFO("ops port on TCP %u: /metrics, /healthz, /readyz", ops->port());
  }
  install_stop_signals(/*term_drains=*/true);
  const std::int64_t grace_ns = static_cast<std::int64_t>(o.drain_grace_s * 1e9);
  // One session's turn of the loop.
  auto update = [&](Hosted& h, std::int64_t now) -> Wake {
    ServerSession& session = *h.session;
    LogSessionScope scope(h.id);
    if (g_stop_requested) session.stop();
    // SIGTERM (Kubernetes ending the pod, Agones' shutdown): admit no one new and let the
    // match finish within the grace; a second SIGTERM or the grace's end stops it.
    const int terms = g_terms_received.load();
    const bool drain_begins = terms > 0 && !h.draining;
    if (drain_begins) {
      h.draining = true;
      h.drain_deadline = now + grace_ns;
      session.stop_admitting();
      if (!session.started()) {
        LOCKSTEP_LOG_INFO("SIGTERM before the match started: stopping");
        session.stop();
      } else {
        LOCKSTEP_LOG_INFO("SIGTERM: draining; the match has %.0f s to finish (a second SIGTERM stops it)", o.drain_grace_s);
      }
    }
    if (h.draining && !session.finished() && (terms > 1 || now >= h.drain_deadline)) {
      if (!h.stopping) LOCKSTEP_LOG_WARN("%s: stopping the match; its result is marked incomplete",
                                         terms > 1 ? "a second SIGTERM" : "the drain's grace is over");
      h.stopping = true;
      session.stop();
    }
    set_log_tick(session.executed_tick());
    const Tick before = session.executed_tick();
    std::int64_t wake = session.update(now);
    if (ops) {
      const std::int64_t after = monotonic_ns();
      // Published at once when the drain begins and when the session ends, else once a second.
      h.metrics->observe(session, after, after - now, session.executed_tick() != before, h.draining,
                         drain_begins || session.finished());
      wake = std::min(wake, after + ServerMetrics::kPublishNs);
    }
    if (h.draining && !session.finished()) wake = std::min(wake, h.drain_deadline);
    h.play_cpu.observe(session.executed_tick(), session.executed_tick() == cfg.last_tick);
    if (agones) wake = std::min(wake, agones->update(now));
    if (agones && awaiting_key) {
      if (const auto match = agones->poll_token_key(now)) {
        session.set_token_key(match->key, match->addresses);
        awaiting_key = false;
        LOCKSTEP_LOG_INFO("agones: the match's token key arrived with the allocation; players may join%s%s",
                          match->addresses.empty() ? "" : " at ",
                          match->addresses.empty() ? "" : match->addresses.front().text().c_str());
      }
      wake = std::min(wake, now + kAgonesKeyPollMs * 1'000'000);
    }
    // In steady play the socket is read once per tick, at the tick's deadline.
    return Wake{wake, !session.receive_can_wait()};
  };
  // Real-time priority for the loop's thread alone: the ops port's thread started above keeps its
  // own, and any started from here on is ordinary (enter_realtime).
  std::string realtime_off = "not asked (--realtime)";
  const bool realtime = o.realtime && enter_realtime(&realtime_off);
  if (realtime) LOCKSTEP_LOG_INFO("real-time priority: on (SCHED_FIFO 1 for the thread that runs the ticks)");
  else if (o.realtime) LOCKSTEP_LOG_WARN("--realtime: %s; the ticks run at ordinary priority", realtime_off.c_str());
  Histogram wake_delay;
  if (count == 1) {
    run_event_loop(
        hosted[0]->session->fd(), [&](std::int64_t now) { return update(*hosted[0], now); },
        [&] { return hosted[0]->session->finished(); }, PacerConfig::sleep_only());
  } else {
    std::vector<int> fds;
    for (const auto& h : hosted) fds.push_back(h->session->fd());
    run_event_loops(
        fds, [&](std::size_t i, std::int64_t now) { return update(*hosted[i], now); },
        [&](std::size_t i) { return hosted[i]->session->finished(); }, &wake_delay);
  }
  if (realtime) leave_realtime();
  // Each session's result, every way asked for; the webhooks post in the background meanwhile.
  for (auto& h : hosted) {
    LogSessionScope scope(h->id);
    h->hash_log.close();
    if (h->recorder) h->recorder->close();
    if (const auto& result = h->session->result()) {
      const Json doc = result_json(*result);
      const std::string text = json_text(doc);
      if (!o.result_webhook.empty()) {
        h->webhook = std::make_unique<ResultWebhook>(ResultWebhook::Config{o.result_webhook, 4, o.webhook_timeout_ms});
        h->webhook->post(text);
      }
      if (!h->result_path.empty()) {
        std::ofstream out(h->result_path, std::ios::binary | std::ios::trunc);
        out << json_text(doc, 1) << "\n";
        if (!out.flush()) LOCKSTEP_LOG_ERROR("cannot write --result %s", h->result_path.c_str());
      }
      if (agones && !agones->set_annotation(kAgonesResultAnnotation, text))
        LOCKSTEP_LOG_WARN("agones: could not set the %s annotation", kAgonesResultAnnotation);
    }
  }
  if (agones) agones->shutdown();
  int code = 0;
  for (std::size_t i = 0; i < hosted.size(); ++i) {
    Hosted& h = *hosted[i];
    const ServerSession& session = *h.session;
    LogSessionScope scope(h.id);
    // A result the backend never got: the session's own outcome (a desync, a lost connection) says
    // more and stays; otherwise the server ends with exit 5 and says so.
    bool undelivered = false;
    if (h.webhook && !h.webhook->finish()) {
      undelivered = true;
      LOCKSTEP_LOG_ERROR("the session's result was not delivered to --result-webhook %s: every try failed (see above); "
                         "it is in the summary%s",
                         o.result_webhook.c_str(), h.result_path.empty() ? "" : " and in --result");
    }
    const ServerStats& st = session.stats();
    LOCKSTEP_LOG_INFO("done at tick %u: lateness p50 %.0f us, p99 %.0f us; %llu inputs filled, %llu messages dropped",
                      session.executed_tick(), st.lateness.percentile_us(50), st.lateness.percentile_us(99),
                      static_cast<unsigned long long>(st.filled_inputs), static_cast<unsigned long long>(st.total_drops()));
    // The process's CPU is shared by its sessions, which play at once: each is given its share.
    Json summary = server_summary(session, h.play_cpu.us_per_tick() / static_cast<double>(count));
    summary["session_id"] = h.id;
    summary["socket_batching"] = batching;
    if (count > 1) summary["host"] = Json{{"sessions", count}, {"index", i}};
    // How the process's thread was scheduled: at real-time priority or not, and (hosting several
    // sessions) how late the machine woke it for its deadlines, the part of a tick's lateness
    // that is not the server's own work.
    Json scheduling{{"realtime", realtime}};
    if (!realtime && o.realtime) scheduling["realtime_refused"] = realtime_off;
    if (count > 1)
      scheduling["wake_delay_us"] = Json{{"p50", wake_delay.percentile_us(50)},  {"p99", wake_delay.percentile_us(99)},
                                         {"p99.9", wake_delay.percentile_us(99.9)}, {"max", wake_delay.max_us()},
                                         {"wakes", wake_delay.count()},
                                         {"over_1ms", wake_delay.count() - wake_delay.count_at_most(1000)}};
    summary["scheduling"] = scheduling;
    if (h.draining) summary["drained"] = Json{{"grace_s", o.drain_grace_s}, {"stopped", g_terms_received.load() > 1 ||
                                                                                  (session.result() && session.result()->incomplete)}};
    if (count == 1) {
      if (!redirect_summary(h.summary_path)) return 1;
      std::printf("%s\n", json_text(summary).c_str());
      std::fflush(stdout);
    } else if (h.summary_path.empty()) {
      std::printf("%s\n", json_text(summary).c_str());  // one line a session
      std::fflush(stdout);
    } else {
      std::ofstream out(h.summary_path, std::ios::binary | std::ios::trunc);
      out << json_text(summary) << "\n";
      if (!out.flush()) {
        LOCKSTEP_LOG_ERROR("cannot write --summary %s", h.summary_path.c_str());
        if (code == 0) code = 1;
      }
    }
    const int own = undelivered && session.exit_code() == 0 ? kExitResultUndelivered : session.exit_code();
    if (code == 0) code = own;
  }
  return code;
}


}  // namespace lockstep::server
