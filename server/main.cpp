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
#include "serve.hpp"

using namespace lockstep;
using lockstep::server::Options;
using lockstep::server::serve;

namespace {

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
  app.add_flag("--webrtc", cfg.webrtc,
               "offer pages a datagram path beside their WebSocket: a WebRTC data channel, unordered and "
               "unreliable, for their play messages (needs --websocket-port)");
  app.add_option_function<std::string>(
         "--webrtc-ports",
         [&cfg](const std::string& range) {
           unsigned lo = 0, hi = 0;
           char tail = 0;
           if (std::sscanf(range.c_str(), "%u-%u%c", &lo, &hi, &tail) != 2 || lo == 0 || lo > hi || hi > 65535)
             throw CLI::ValidationError("--webrtc-ports", "not a range of UDP ports FIRST-LAST: " + range);
           cfg.webrtc_port_min = static_cast<std::uint16_t>(lo);
           cfg.webrtc_port_max = static_cast<std::uint16_t>(hi);
         },
         "UDP ports for the data channels, FIRST-LAST (one a browser player; default any free port)");
  app.add_option("--webrtc-address", cfg.webrtc_advertise,
                 "the address pages are told to send their datagrams to, HOST or HOST:PORT (a public address "
                 "in front of NAT, or a relay's; default the local addresses)");
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
                 "reports go to a folder per session in --desync-dir. Not with --agones")
      ->check(CLI::Range(1u, 1024u))->capture_default_str();
  app.add_flag("--realtime", o.realtime,
               "run the ticks at real-time priority (SCHED_FIFO 1; the ops port's and webhooks' threads stay "
               "ordinary): an ordinary process or kernel thread on the core gives way to a tick that falls due at its "
               "next chance instead of at the end of its turn, which on a busy core is milliseconds later. Needs "
               "CAP_SYS_NICE or ulimit -r of 1 or more; without, the server says so and plays on at ordinary priority");
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
  if (!load_keys(o)) return 2;
  if ((cfg.webrtc || cfg.webrtc_port_max || !cfg.webrtc_advertise.empty()) && !cfg.websocket_port) {
    LOCKSTEP_LOG_ERROR("--webrtc, --webrtc-ports and --webrtc-address need --websocket-port: the data channel is offered over a page's WebSocket");
    return 2;
  }
  if (cfg.webrtc_port_max || !cfg.webrtc_advertise.empty()) cfg.webrtc = true;
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
