// lockstep-server: hosts one session. Parses options and wires the parts together.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "lockstep/agones.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/log.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/session_recorder.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/status.hpp"
#include "lockstep/summary.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

int main(int argc, char** argv) {
  log_setup("lockstep-server");
  CLI::App app{"lockstep-server: hosts one deterministic lockstep session. It relays input frames at 100 Hz, steps its\n"
               "own copy of the simulation and compares every client's per-tick state hash with its own.\n"
               "Exit codes: 0 finished, 1 runtime failure, 2 bad usage, 3 desync detected, 4 connection failure."};
  app.set_version_flag("--version", std::string("lockstep-server ") + kVersion + " (protocol " +
                                        std::to_string(kProtocolVersion) + ")");
  ServerConfig cfg;
  std::string hash_log_path, on_desync = "report";
  std::uint32_t ticks = 0;
  double grace_ms = 20;
  app.add_option("--port", cfg.port, "UDP port to listen on (0: any free port)")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--bind", cfg.bind, "address to listen on (default: all)");
  app.add_option("--players", cfg.players, "player slots; the session starts when all are joined")->check(lockstep::cli::unsigned_number())
      ->check(CLI::Range(1, kMaxPlayers))->capture_default_str();
  app.add_option("--ticks", ticks, "stop cleanly after this tick (0: run until stopped)")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--input-delay", cfg.input_delay, "ticks between sampling an input and executing it")->check(lockstep::cli::unsigned_number())
      ->check(CLI::Range(0u, protocol::kMaxInputDelay))->capture_default_str();
  app.add_option("--seed", cfg.world.seed, "world seed, sent to clients at join")->check(lockstep::cli::unsigned_number())->capture_default_str();
  app.add_option("--bodies", cfg.world.bodies, "passive bodies in the world")->check(lockstep::cli::unsigned_number())
      ->check(CLI::Range(0u, kMaxBodies))->capture_default_str();
  app.add_option("--hash-log", hash_log_path, "write '<tick> <hash>' per executed tick to this file");
  app.add_option("--on-desync", on_desync,
                 "after reporting a desync: keep going (exit 3 at the end), stop with exit 3, or resync the client")
      ->check(CLI::IsMember({"report", "stop", "resync"}))->capture_default_str();
  app.add_flag("--allow-late-join", cfg.allow_late_join,
               "admit new players into a vacated slot of a running session through a verified snapshot");
  double silent_ms = 5000;
  app.add_option("--silent-drop-ms", silent_ms, "drop a player that sends nothing for this long")->check(lockstep::cli::finite())
      ->check(CLI::Range(100.0, 600000.0))->capture_default_str();
  double hash_silence_ms = 5000;
  app.add_option("--hash-silence-ms", hash_silence_ms,
                 "drop a player whose state hashes stop arriving for this long (reported as hash silence)")
      ->check(lockstep::cli::finite())->check(CLI::Range(500.0, 600000.0))->capture_default_str();
  app.add_option("--desync-dir", cfg.desync_dir, "where desync-<tick>-<player>.json reports are written")->capture_default_str();
  app.add_option("--token", cfg.token, "join secret clients must present");
  std::string record_path;
  app.add_option("--record", record_path, "record the session as a replay file (written as it runs)");
  std::string summary_path;
  app.add_option("--summary", summary_path, "write the JSON summary to this file instead of stdout");
  app.add_option("--input-grace-ms", grace_ms, "wait at most this long past a tick's deadline for a late input, then fill it")->check(lockstep::cli::finite())
      ->check(CLI::Range(0.0, 1000.0))->capture_default_str();
  app.add_option("--max-spectators", cfg.max_spectators, "spectator seats")->check(lockstep::cli::unsigned_number())->check(CLI::Range(0u, 256u))->capture_default_str();
  bool agones = false;
  app.add_flag("--agones", agones,
               "report to the Agones SDK sidecar (AGONES_SDK_HTTP_PORT, default 9358): ready, health, shutdown");
  std::string status_of;
  app.add_option("--status", status_of,
                 "do not host: ask the server at HOST:PORT for its status, print it as JSON, exit 0 (or 4 when it "
                 "does not answer); for health checks");
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (!status_of.empty()) {
    std::string host, error;
    std::uint16_t port = 0;
    if (!split_host_port(status_of, &host, &port)) {
      LOCKSTEP_LOG_ERROR("--status wants HOST:PORT, got '%s'", status_of.c_str());
      return 2;
    }
    const auto st = query_status(host, port, 2'000'000'000, &error);
    if (!st) {
      LOCKSTEP_LOG_ERROR("%s", error.c_str());
      return 4;
    }
    std::printf("%s\n", json_text(status_json(*st)).c_str());
    return 0;
  }
  cfg.last_tick = ticks;
  cfg.on_desync = on_desync == "stop" ? OnDesync::Stop : on_desync == "resync" ? OnDesync::Resync : OnDesync::Report;
  cfg.record_path = record_path;
  cfg.input_grace_ns = static_cast<std::int64_t>(grace_ms * 1e6);
  cfg.silent_drop_ns = static_cast<std::int64_t>(silent_ms * 1e6);
  cfg.hash_silence_ns = static_cast<std::int64_t>(hash_silence_ms * 1e6);

  if (!std::filesystem::is_directory(cfg.desync_dir)) {
    LOCKSTEP_LOG_ERROR("--desync-dir %s is not a directory", cfg.desync_dir.c_str());
    return 2;
  }
  HashLogWriter hash_log;
  if (!hash_log_path.empty() && !hash_log.open(hash_log_path)) {
    LOCKSTEP_LOG_ERROR("cannot write --hash-log %s: %s", hash_log_path.c_str(), std::strerror(errno));
    return 2;
  }
  Error error;
  auto session = ServerSession::create(cfg, &error);
  if (!session) {
    LOCKSTEP_LOG_ERROR("%s", error.detail.c_str());
    return exit_code(error.kind);
  }
  if (hash_log.is_open()) session->set_hash_log(&hash_log);
  std::unique_ptr<SessionRecorder> recorder;
  if (!record_path.empty()) recorder = std::make_unique<SessionRecorder>(*session, record_path);
  LOCKSTEP_LOG_INFO("listening on UDP port %u for %u players", session->port(), cfg.players);
  std::unique_ptr<AgonesHeartbeat> agones_beat;
  if (agones) agones_beat = std::make_unique<AgonesHeartbeat>(AgonesSdk::port_from_env(), monotonic_ns());
  install_stop_signals();
  TickCpuMeter play_cpu;
  run_event_loop(
      session->fd(),
      [&](std::int64_t now) {
        if (g_stop_requested) session->stop();
        std::int64_t wake = session->update(now);
        play_cpu.observe(session->executed_tick(), session->executed_tick() == cfg.last_tick);
        if (agones_beat) wake = std::min(wake, agones_beat->update(now));
        // In steady play the socket is read once per tick, at the tick's deadline.
        return Wake{wake, !session->receive_can_wait()};
      },
      [&] { return session->finished(); }, PacerConfig::sleep_only());
  if (agones_beat) agones_beat->shutdown();
  hash_log.close();
  if (recorder) recorder->close();
  const ServerStats& st = session->stats();
  LOCKSTEP_LOG_INFO("done at tick %u: lateness p50 %.0f us, p99 %.0f us; %llu inputs filled, %llu messages dropped",
                    session->executed_tick(), st.lateness.percentile_us(50), st.lateness.percentile_us(99),
                    static_cast<unsigned long long>(st.filled_inputs), static_cast<unsigned long long>(st.total_drops()));
  if (!redirect_summary(summary_path)) return 1;
  std::printf("%s\n", json_text(server_summary(*session, play_cpu.us_per_tick())).c_str());
  std::fflush(stdout);
  return session->exit_code();
}
