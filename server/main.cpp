// lockstep-server: hosts one session. Parses options and wires the parts together.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <arpa/inet.h>

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>
#include <fstream>
#include <sstream>
#include <optional>
#include <random>
#include <tuple>

#include "lockstep/clock.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/bytes.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/game_description.hpp"
#include "lockstep/log.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/session_recorder.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/status.hpp"
#include "lockstep/summary.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"
#include "agones.hpp"
#include "ops_http.hpp"
#include "result_webhook.hpp"
#include "server_metrics.hpp"

using namespace lockstep;

namespace {

/// --sessions: sessions whose ticks fall due together, at most.
constexpr std::uint32_t kSessionsPerWake = 8;
/// The session finished, but its result never reached --result-webhook.
constexpr int kExitResultUndelivered = 5;

// Everything the command line says; durations in milliseconds until host() converts them.
struct Options {
  ServerConfig cfg;
  std::uint32_t ticks = 0;
  std::string on_desync = "report";
  double grace_ms = 20, silent_ms = 5000, play_silence_ms = 0, hash_silence_ms = 5000;
  std::string hash_log_path, record_path, summary_path, status_of;
  std::uint32_t keyframe_seconds = kDefaultKeyframeInterval / kTickRate;
  std::string token_key, status_key, result_key, result_path, result_webhook;
  long webhook_timeout_ms = 5000;
  std::vector<std::string> public_addresses;
  bool agones = false;
  std::string sim = std::string(default_module().name), sim_lib, world;
  std::string relay;  // a game description (lockstep-synctest --describe): host without the simulation
  std::string equal_builds;  // lockstep-gate's equal-builds report: other machine code admitted
  std::optional<std::uint64_t> seed;
  std::optional<std::uint32_t> bodies;
  // Operating in a fleet: the ops port, the drain on SIGTERM, the log format, the session's id.
  std::optional<std::uint16_t> metrics_port;
  std::string metrics_bind;
  double drain_grace_s = 300;
  std::string log_format = "text", session_id;
  std::uint32_t sessions = 1;  // hosted at once on one thread
};

void declare_options(CLI::App& app, Options& o) {
  using lockstep::cli::finite;
  using lockstep::cli::unsigned_number;
  ServerConfig& cfg = o.cfg;
  app.add_option("--port", cfg.port, "UDP port to listen on (0: any free port)")->check(unsigned_number())->capture_default_str();
  app.add_option("--bind", cfg.bind, "address to listen on (default: all)");
  app.add_option("--websocket-port", cfg.websocket_port,
                 "also admit browser players through a WebSocket door on this TCP port (0: any free port)")
      ->check(unsigned_number());
  app.add_option_function<double>(
         "--join-timeout", [&cfg](double s) { cfg.join_timeout_ns = static_cast<std::int64_t>(s * 1e9); },
         "a connection (ENet or WebSocket) must send its join within this many seconds (default 20)")
      ->check(CLI::Range(0.5, 600.0));
  app.add_option("--web-root", cfg.web_root, "serve this folder (the browser client's page) over HTTP on the WebSocket port")
      ->check(CLI::ExistingDirectory);
  app.add_option("--tls-cert", cfg.tls_cert, "PEM certificate for the WebSocket door: wss:// and https://")
      ->check(CLI::ExistingFile);
  app.add_option("--tls-key", cfg.tls_key, "PEM private key of --tls-cert")->check(CLI::ExistingFile);
  app.add_option("--websocket-handshakes", cfg.websocket_handshakes,
                 "unfinished WebSocket handshakes held at once (default 1024); when full, a new connection "
                 "takes the place of the oldest")
      ->check(CLI::Range(1, 100000));
  app.add_option("--trusted-proxy", cfg.trusted_proxies,
                 "an address (IP) of a proxy in front of the WebSocket door, as a TLS proxy on this machine: "
                 "its connections are held to the per-address bound by X-Forwarded-For (repeat for more)")
      ->check(CLI::Validator(
          [](const std::string& ip) {
            unsigned char buf[16];
            return inet_pton(AF_INET, ip.c_str(), buf) == 1 || inet_pton(AF_INET6, ip.c_str(), buf) == 1
                       ? std::string()
                       : "not an IPv4 or IPv6 address: " + ip;
          },
          "IP"));
  app.add_option("--players", cfg.players, "player slots; the session starts when all are joined")->check(unsigned_number())
      ->check(CLI::Range(1, kMaxPlayers))->capture_default_str();
  app.add_option("--ticks", o.ticks, "stop cleanly after this tick (0: run until stopped)")->check(unsigned_number())->capture_default_str();
  app.add_option("--input-delay", cfg.input_delay, "ticks between sampling an input and executing it")->check(unsigned_number())
      ->check(CLI::Range(0u, protocol::kMaxInputDelay))->capture_default_str();
  app.add_option("--send-every", cfg.send_every,
                 "send play messages every Nth tick, both ways (1..5: fewer datagrams for thin links; the "
                 "input delay rises by N - 1)")
      ->check(unsigned_number())->check(CLI::Range(1u, protocol::kMaxSendEvery))->capture_default_str();
  app.add_option("--sim", o.sim, "the simulation module (built in by name; 'list' lists them)")->capture_default_str();
  app.add_option("--sim-lib", o.sim_lib, "load the simulation module from this shared library (docs/MODULES.md)");
  app.add_option("--world", o.world, "the module's world settings, key=value,... or @FILE of key=value lines (--sim list shows them); sent to clients at join");
  app.add_option("--seed", o.seed, "shorthand for --world seed=N")->check(unsigned_number());
  app.add_option("--bodies", o.bodies, "shorthand for --world bodies=N")->check(unsigned_number());
  app.add_option("--relay", o.relay,
                 "host without the simulation: the game described in FILE (lockstep-synctest --describe writes it); "
                 "each tick is settled by a strict majority of the players' hashes, and joins and resyncs load a "
                 "player's saved state checked against that hash (--sim, --world are not used)");
  app.add_option("--equal-builds", o.equal_builds,
                 "admit peers whose module is other machine code than this server's (another flag, architecture "
                 "or statically linked library) when the determinism gate replayed both equal: the equal-builds "
                 "report lockstep-gate writes (docs/CI.md); without it only this build's machine code joins");
  app.add_flag("--spectators-vote", cfg.spectators_vote,
               "with --relay: spectators' hashes count in the majority (a backend's trusted observer)");
  app.add_option("--hash-log", o.hash_log_path, "write '<tick> <hash>' per executed tick to this file (with --relay: "
                 "the settled hash of every settled tick)");
  app.add_option("--on-desync", o.on_desync,
                 "after reporting a desync: keep going (exit 3 at the end), stop with exit 3, or resync the client")
      ->check(CLI::IsMember({"report", "stop", "resync"}))->capture_default_str();
  app.add_option("--max-resyncs", cfg.max_resyncs,
                 "with --on-desync resync: drop a player that diverges again after this many resyncs, with the reason "
                 "(0: no limit)")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_option("--collusion-after", cfg.collusion_episodes,
                 "relay mode: report a player outvoted this many times by the same other players as possible collusion "
                 "(0: never)")
      ->check(CLI::Range(0, 1000000))->capture_default_str();
  app.add_flag("--allow-late-join", cfg.allow_late_join,
               "admit new players into a vacated slot of a running session through a verified snapshot");
  app.add_option("--silent-drop-ms", o.silent_ms, "drop a player that sends nothing for this long")->check(finite())
      ->check(CLI::Range(100.0, 600000.0))->capture_default_str();
  app.add_option("--play-silence-ms", o.play_silence_ms,
                 "drop a player in play from which no message has come for this long (a player sends every tick); "
                 "its seat is vacant at once for its rejoin or a late joiner (0: --silent-drop-ms)")
      ->check(finite())->check(CLI::Range(0.0, 600000.0))->capture_default_str();
  app.add_option("--hash-silence-ms", o.hash_silence_ms,
                 "drop a player whose state hashes stop arriving for this long (reported as hash silence)")
      ->check(finite())->check(CLI::Range(500.0, 600000.0))->capture_default_str();
  app.add_option("--desync-dir", cfg.desync_dir, "where desync-<tick>-<player>.json reports are written")->capture_default_str();
  app.add_option("--state-history", cfg.state_history,
                 "ticks of past states kept for desync probes, at least (more as the peers' round trips ask, "
                 "up to --state-history-max)")->check(CLI::Range(std::size_t{1}, std::size_t{100000}))->capture_default_str();
  app.add_option("--state-history-max", cfg.state_history_max, "ticks of past states kept at most")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))->capture_default_str();
  app.add_option("--token", cfg.token, "join secret clients must present (LAN play; see --token-key)");
  app.add_option("--token-key", o.token_key,
                 "admit only players with a connect token (lockstep-token) sealed with this key, and seal all play: "
                 "FILE holding 64 hex digits (mode 600), env:NAME, or agones (the match's key, from the GameServer's "
                 "lockstep.dev/token-key annotation an allocation sets; with --agones)");
  app.add_option("--protocol-id", cfg.protocol_id, "the game's protocol id: tokens minted for another are refused")
      ->capture_default_str();
  app.add_option("--public-address", o.public_addresses,
                 "IP:PORT players reach this server at, one of which a token must name (repeatable; default: any "
                 "address with this server's port)");
  app.add_option("--status-key", o.status_key,
                 "status replies name players and give figures only to askers with this key (FILE or env:NAME); "
                 "with --status, ask with it");
  app.add_option("--max-pending-per-address", cfg.max_pending_per_address,
                 "connections waiting to join from one IP address")->check(CLI::Range(1u, 64u))->capture_default_str();
  app.add_option("--record", o.record_path, "record the session as a replay file (written as it runs)");
  app.add_option("--keyframe-every", o.keyframe_seconds, "seconds between the replay's keyframes, the whole state a "
                 "reader can start from (0: none); in relay mode a voter's saved state, checked against the settled hash, "
                 "which also serves joins at once")->capture_default_str()->check(CLI::Range(0u, 3600u));
  app.add_option("--result", o.result_path,
                 "write the session's result here at the end: the players' reported results settled by majority, "
                 "the final settled hash and the seats, authenticated (lockstep-token verify-result checks it)");
  app.add_option("--result-key", o.result_key,
                 "authenticate the result with this key (FILE or env:NAME); default: one derived from --token-key");
  app.add_option("--result-webhook", o.result_webhook,
                 "POST the session's result (JSON) to this http:// or https:// URL at the end, retried on failure "
                 "(4 tries)");
  app.add_option("--result-webhook-timeout-ms", o.webhook_timeout_ms, "each try of --result-webhook gives up after this long")
      ->check(CLI::Range(100L, 60000L))->capture_default_str();
  app.add_option("--summary", o.summary_path, "write the JSON summary to this file instead of stdout");
  app.add_option("--input-grace-ms", o.grace_ms, "wait at most this long past a tick's deadline for a late input, then fill it")
      ->check(finite())->check(CLI::Range(0.0, 1000.0))->capture_default_str();
  app.add_option("--max-spectators", cfg.max_spectators, "spectator seats")->check(unsigned_number())
      ->check(CLI::Range(0u, 256u))->capture_default_str();
  app.add_flag("--agones", o.agones,
               "report to the Agones SDK sidecar (AGONES_SDK_HTTP_PORT, default 9358): ready, health, shutdown");
  app.add_option("--metrics-port", o.metrics_port,
                 "serve Prometheus metrics (/metrics), liveness (/healthz) and readiness (/readyz) over HTTP on "
                 "this TCP port (0: any free one; default: no ops port)")
      ->check(unsigned_number());
  app.add_option("--metrics-bind", o.metrics_bind, "address the ops port listens on (default: all)");
  app.add_option("--drain-grace", o.drain_grace_s,
                 "on SIGTERM, admit no one new and let the running match play to its end for at most this many "
                 "seconds, then stop it (its result marked incomplete); a second SIGTERM stops at once")
      ->check(finite())->check(CLI::Range(0.0, 86400.0))->capture_default_str();
  app.add_option("--log-format", o.log_format,
                 "text (default) or json: one object per line with time, level, session, tick, slot, event, message")
      ->check(CLI::IsMember({"text", "json"}))->capture_default_str();
  app.add_option("--session-id", o.session_id,
                 "this session's id in JSON logs, metrics and the summary (default: 16 random hex digits)");
  app.add_option("--sessions", o.sessions,
                 "host this many sessions of the game at once, on one thread: UDP ports --port, --port+1, ... (and "
                 "WebSocket ports likewise); each plays its match, and the process ends when all have. The paths of "
                 "--summary, --record, --hash-log and --result name each session's file with {session}; desync "
                 "reports go to a folder per session in --desync-dir. Not with --agones or --metrics-port")
      ->check(CLI::Range(1u, 1024u))->capture_default_str();
  app.add_option("--status", o.status_of,
                 "do not host: ask the server at HOST:PORT for its status, print it as JSON, exit 0 (or 4 when it "
                 "does not answer); for health checks");
}

// --status: asks a running server and prints its answer.
int ask_status(const std::string& of, const std::string& key_source) {
  std::string host, error;
  std::optional<SecretKey> key;
  if (!key_source.empty()) {
    key.emplace();
    if (!load_key(key_source, &*key, &error)) {
      LOCKSTEP_LOG_ERROR("--status-key: %s", error.c_str());
      return 2;
    }
  }
  std::uint16_t port = 0;
  if (!split_host_port(of, &host, &port)) {
    LOCKSTEP_LOG_ERROR("--status wants HOST:PORT, got '%s'", of.c_str());
    return 2;
  }
  const auto st = query_status(host, port, 2'000'000'000, &error, key ? &*key : nullptr);
  if (!st) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return 4;
  }
  std::printf("%s\n", json_text(status_json(*st)).c_str());
  return 0;
}

// The keys of --token-key and --status-key, and the addresses tokens must name.
bool load_keys(Options& o) {
  std::string error;
  if (o.token_key == "agones") {
    if (!o.agones) {
      LOCKSTEP_LOG_ERROR("--token-key agones takes the key from an Agones allocation: it needs --agones");
      return false;
    }
    o.cfg.token_key_later = true;  // connect requests wait for the match's key
  }
  for (auto [source, key, option] : {std::tuple{&o.token_key, &o.cfg.token_key, "--token-key"},
                                     std::tuple{&o.status_key, &o.cfg.status_key, "--status-key"},
                                     std::tuple{&o.result_key, &o.cfg.result_key, "--result-key"}}) {
    if (source->empty() || *source == "agones") continue;
    key->emplace();
    if (!load_key(*source, &**key, &error)) {
      LOCKSTEP_LOG_ERROR("%s: %s", option, error.c_str());
      return false;
    }
  }
  for (const std::string& a : o.public_addresses) {
    TokenAddress t;
    if (!parse_token_address(a, &t)) {
      LOCKSTEP_LOG_ERROR("--public-address wants IP:PORT (a numeric IPv4 address), got '%s'", a.c_str());
      return false;
    }
    o.cfg.public_addresses.push_back(t);
  }
  return true;
}

int serve(Options o, const std::string& module_name, const std::string& settings_text);
int host_relay(Options o);

// Hosts one session of the module --sim or --sim-lib names, with its --world.
int host(Options o) {
  ServerConfig& cfg = o.cfg;
  if (o.session_id.empty()) {
    std::random_device random;  // an id for logs and metrics, never the simulation's
    const std::uint64_t id = (std::uint64_t{random()} << 32) | random();
    char hex[17];
    std::snprintf(hex, sizeof hex, "%016llx", static_cast<unsigned long long>(id));
    o.session_id = hex;
  }
  set_log_session(o.session_id);
  if (o.log_format == "json") set_log_format(LogFormat::JsonLines);
  if (!o.relay.empty()) return host_relay(std::move(o));
  int code = 0;
  const Module* module = module_from_options(o.sim, o.sim_lib, &code);
  if (!module) return code;
  // The shorthands first, so --world has the last word.
  std::string world = o.seed ? "seed=" + std::to_string(*o.seed) : "";
  if (o.bodies) world += (world.empty() ? "" : ",") + std::string("bodies=") + std::to_string(*o.bodies);
  std::string error_text, from_option;
  if (!world_settings_text(o.world, &from_option, &error_text)) {
    LOCKSTEP_LOG_ERROR("--world: %s", error_text.c_str());
    return 2;
  }
  if (!from_option.empty()) world += (world.empty() ? "" : ",") + from_option;
  cfg.world.players = cfg.players;  // a module may bound its settings by the player count
  if (!module->parse_world(world, &cfg.world, &error_text)) {
    LOCKSTEP_LOG_ERROR("--world: %s", error_text.c_str());
    return 2;
  }
  cfg.factory = module->create;
  cfg.libraries.assign(module->libraries.begin(), module->libraries.end());
  cfg.code = module->code;
  cfg.code_fma = module->fma_instructions;
  return serve(std::move(o), std::string(module->name), module->settings_text(cfg.world.settings));
}

// --relay: the game from its description, no module.
int host_relay(Options o) {
  std::string text, error;
  std::ifstream in(o.relay, std::ios::binary);
  std::stringstream buf;
  buf << in.rdbuf();
  GameDescription d;
  if (!in || !parse_description(buf.str(), &d, &error)) {
    LOCKSTEP_LOG_ERROR("--relay %s: %s", o.relay.c_str(), in ? error.c_str() : "cannot read it");
    return 2;
  }
  if (!o.sim_lib.empty() || !o.world.empty() || o.seed || o.bodies) {
    LOCKSTEP_LOG_ERROR("--relay hosts the game its file describes: --sim-lib, --world, --seed and --bodies do not apply");
    return 2;
  }
  o.cfg.relay = d.game;
  o.cfg.libraries = d.libraries;
  o.cfg.code = d.code;
  o.cfg.code_fma = d.code_fma;
  o.cfg.world.settings = d.settings;
  o.cfg.world.players = o.cfg.players;
  const std::string name = d.name.empty() ? "relay" : d.name;
  return serve(std::move(o), name, d.settings_text.empty() ? bytes_hex(d.settings) : d.settings_text);
}

// One session a process hosts, with what it writes.
struct Hosted {
  std::string id, summary_path, result_path;
  std::unique_ptr<ServerSession> session;
  HashLogWriter hash_log;
  std::unique_ptr<SessionRecorder> recorder;
  std::unique_ptr<ResultWebhook> webhook;
  TickCpuMeter play_cpu;
  bool draining = false, stopping = false;
  std::int64_t drain_deadline = 0;
};

std::string replace_all(std::string s, std::string_view from, std::string_view to) {
  for (std::size_t at = s.find(from); at != std::string::npos; at = s.find(from, at + to.size())) s.replace(at, from.size(), to);
  return s;
}

// Hosts the sessions of a configured game (one, or --sessions on one thread): keys, hash logs,
// recorders, Agones, the event loop, the summaries.
int serve(Options o, const std::string& module_name, const std::string& settings_text) {
  ServerConfig& cfg = o.cfg;
  if (!load_keys(o)) return 2;
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
    // One match per Agones GameServer, and the ops port describes one session.
    if (o.agones || o.metrics_port) {
      LOCKSTEP_LOG_ERROR("--sessions %u: --agones and --metrics-port serve one session a process", count);
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
  }
  // Each session's own: its ports, its files, its id (the process's id, then "-N" when several).
  std::vector<std::unique_ptr<Hosted>> hosted;
  for (std::uint32_t i = 0; i < count; ++i) {
    auto h = std::make_unique<Hosted>();
    const std::string index = std::to_string(i);
    auto own = [&](const std::string& path) { return count > 1 ? replace_all(path, "{session}", index) : path; };
    h->id = count > 1 ? o.session_id + "-" + index : o.session_id;
    h->summary_path = own(o.summary_path);
    h->result_path = own(o.result_path);
    ServerConfig c = cfg;
    if (count > 1) {
      // Ticks in groups of up to kSessionsPerWake sessions, the groups' phases spread over the
      // period: one wake serves a group (fewer wakes than sessions), and the last of a group
      // waits for at most the others' turns (about 90 us each for 4 players in relay mode).
      const std::uint32_t groups = std::min<std::uint32_t>(10, (count + kSessionsPerWake - 1) / kSessionsPerWake);
      c.tick_phase_ns = static_cast<std::int64_t>(i % groups) * (kTickNs / groups);
      if (c.port != 0) c.port = static_cast<std::uint16_t>(c.port + i);
      if (c.websocket_port && *c.websocket_port != 0) c.websocket_port = static_cast<std::uint16_t>(*c.websocket_port + i);
      c.record_path = own(c.record_path);
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
  if (count > 1)
    LOCKSTEP_LOG_INFO("hosting %u sessions on one thread, UDP ports %u-%u", count, hosted.front()->session->port(),
                      hosted.back()->session->port());
  std::string batching_off;
  const bool batching = Transport::enet_batching(&batching_off);
  if (batching) LOCKSTEP_LOG_INFO("socket batching: on (recvmmsg and sendmmsg under ENet, with kernel arrival stamps)");
  else LOCKSTEP_LOG_WARN("socket batching: off, ENet reads one datagram a call: %s", batching_off.c_str());
  std::unique_ptr<AgonesHeartbeat> agones;
  if (o.agones) agones = std::make_unique<AgonesHeartbeat>(AgonesSdk::port_from_env(), monotonic_ns());
  bool awaiting_key = o.token_key == "agones";
  // The ops port answers from its own thread; the loop below publishes what it reads.
  ServerMetrics metrics(o.session_id, module_name, cfg.relay.has_value());
  std::unique_ptr<OpsHttp> ops;
  if (o.metrics_port) {
    std::string ops_error;
    ops = OpsHttp::start({o.metrics_bind, *o.metrics_port},
                         [&metrics](std::string_view path, const OpsHttpStats& counts) {
                           return metrics.answer(path, monotonic_ns(), counts);
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
      metrics.observe(session, after, after - now, session.executed_tick() != before, h.draining,
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
  if (count == 1) {
    run_event_loop(
        hosted[0]->session->fd(), [&](std::int64_t now) { return update(*hosted[0], now); },
        [&] { return hosted[0]->session->finished(); }, PacerConfig::sleep_only());
  } else {
    std::vector<int> fds;
    for (const auto& h : hosted) fds.push_back(h->session->fd());
    run_event_loops(
        fds, [&](std::size_t i, std::int64_t now) { return update(*hosted[i], now); },
        [&](std::size_t i) { return hosted[i]->session->finished(); });
  }
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

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-server");
  CLI::App app{"lockstep-server: hosts one deterministic lockstep session. It relays input frames at 100 Hz, steps its\n"
               "own copy of the simulation and compares every client's per-tick state hash with its own (or, with\n"
               "--relay, runs no simulation and settles every tick by the players' majority).\n"
               "Exit codes: 0 finished, 1 runtime failure, 2 bad usage, 3 desync detected, 4 connection failure,\n"
               "5 the result was not delivered to --result-webhook (the session itself finished)."};
  app.set_version_flag("--version", std::string("lockstep-server ") + kVersion + " (protocol " +
                                        std::to_string(kProtocolVersion) + ")");
  return lockstep::cli::main_with<Options>(app, argc, argv, declare_options, [](Options o) {
    return o.status_of.empty() ? host(std::move(o)) : ask_status(o.status_of, o.status_key);
  });
}
