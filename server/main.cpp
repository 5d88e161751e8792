// lockstep-server: hosts one session. Parses options and wires the parts together.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <filesystem>

#include "lockstep/agones.hpp"
#include "lockstep/json.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/log.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/server_session.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/status.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

// Each player's network figures as a JSON array (summary and --status).
std::string seats_json(const std::vector<protocol::SeatStatus>& seats) {
  std::string out = "[";
  for (std::size_t i = 0; i < seats.size(); ++i) {
    const protocol::SeatStatus& p = seats[i];
    char buf[512];
    std::snprintf(buf, sizeof buf,
                  "%s{\"slot\":%u,\"name\":\"%s\",\"rtt_ms\":%.1f,\"jitter_ms\":%.1f,\"loss\":%.4f,\"lead_ms\":%.1f,"
                  "\"fills\":{\"late\":%u,\"lost\":%u,\"silent\":%u},\"latency_us\":{\"p50\":%u,\"p99\":%u},"
                  "\"hashes_checked\":%u}",
                  i ? "," : "", p.slot, json_escape(p.name).c_str(), p.rtt_us / 1e3, p.jitter_us / 1e3, p.loss_ppm / 1e6,
                  p.lead_us / 1e3, p.fills_late, p.fills_lost, p.fills_silent, p.latency_p50_us, p.latency_p99_us,
                  p.hashes_checked);
    out += buf;
  }
  return out + "]";
}

void print_summary(const ServerSession& s, const TickCpuMeter& cpu) {
  const ServerStats& st = s.stats();
  std::printf("{\"ticks\":%u,\"final_hash\":\"%s\",\"filled_inputs\":%llu,\"hashes_compared\":%llu,\"refused\":%llu,"
              "\"dropped\":%llu,\"lateness_us\":{\"p50\":%.0f,\"p99\":%.0f,\"max\":%lld},\"desyncs\":[",
              s.executed_tick(), hash_hex(s.simulation().hash()).c_str(),
              static_cast<unsigned long long>(st.filled_inputs), static_cast<unsigned long long>(st.hashes_compared),
              static_cast<unsigned long long>(st.refused), static_cast<unsigned long long>(st.total_drops()),
              st.lateness.percentile_us(50), st.lateness.percentile_us(99), static_cast<long long>(st.lateness.max_us()));
  for (std::size_t i = 0; i < s.desyncs().size(); ++i) {
    const DesyncEvent& d = s.desyncs()[i];
    std::printf("%s{\"tick\":%u,\"slot\":%d,\"name\":\"%s\",\"server_hash\":\"%s\",\"client_hash\":\"%s\"}", i ? "," : "",
                d.tick, d.slot, json_escape(d.name).c_str(), hash_hex(d.server_hash).c_str(), hash_hex(d.client_hash).c_str());
  }
  std::printf("],\"drops\":{");
  bool first = true;
  for (std::size_t r = 0; r < st.drops.size(); ++r) {
    if (st.drops[r] == 0) continue;
    std::printf("%s\"%s\":%llu", first ? "" : ",", to_string(static_cast<DropReason>(r)),
                static_cast<unsigned long long>(st.drops[r]));
    first = false;
  }
  // Wire cost per client per tick: ENet's counters are UDP payloads; add 28 bytes of IPv4+UDP
  // header per datagram for the bytes on the wire.
  const NetHost& h = s.host();
  const double client_ticks = static_cast<double>(st.ticks) * std::max<std::uint32_t>(1, s.peak_peers());
  const double up = (static_cast<double>(h.bytes_received()) + 28.0 * static_cast<double>(h.packets_received())) / client_ticks;
  const double down = (static_cast<double>(h.bytes_sent()) + 28.0 * static_cast<double>(h.packets_sent())) / client_ticks;
  const double run_s = static_cast<double>(st.last_tick_ns - st.first_tick_ns) / 1e9;
  const double steady_s = static_cast<double>(st.last_tick_ns - st.steady_tick_ns) / 1e9;
  const double steady_tps = st.steady_tick_ns > 0 && steady_s > 0 ? static_cast<double>(s.executed_tick() - 200) / steady_s : 0.0;
  std::printf("},\"refusals\":{");
  first = true;
  for (std::size_t r = 0; r < st.refusals.size(); ++r) {
    if (st.refusals[r] == 0) continue;
    std::printf("%s\"%s\":%llu", first ? "" : ",", wire::EnumNameRefuseReason(static_cast<wire::RefuseReason>(r)),
                static_cast<unsigned long long>(st.refusals[r]));
    first = false;
  }
  std::printf("},\"seats\":%s,\"ticks_per_second_after_2s\":%.2f", seats_json(s.seats()).c_str(), steady_tps);
  std::printf(",\"wire_bytes_per_client_tick\":{\"up\":%.1f,\"down\":%.1f},\"run_seconds\":%.3f,\"ticks_per_second\":%.2f,"
              "\"kicked\":%llu,\"joins_running\":%llu,\"verified\":%llu,\"resyncs\":%llu,\"players\":%u,"
              "\"cpu_us_per_tick\":%.2f,\"spectator_desyncs\":%llu,\"divergent_ticks\":%llu,\"hash_silences\":%llu}\n",
              st.ticks ? up : 0.0, st.ticks ? down : 0.0, run_s, run_s > 0 ? static_cast<double>(st.ticks - 1) / run_s : 0.0,
              static_cast<unsigned long long>(st.kicked), static_cast<unsigned long long>(st.joins_running),
              static_cast<unsigned long long>(st.verified), static_cast<unsigned long long>(st.resyncs),
              s.config().players, cpu.us_per_tick(), static_cast<unsigned long long>(st.spectator_desyncs),
              static_cast<unsigned long long>(st.divergent_ticks), static_cast<unsigned long long>(st.hash_silences));
  std::fflush(stdout);
}

}  // namespace

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
    std::printf("{\"phase\":\"%s\",\"tick\":%u,\"players\":%u,\"joined\":%u,\"active\":%u,\"spectators\":%u,"
                "\"desyncs\":%u,\"lateness_p99_us\":%u,\"protocol_version\":%u,\"fingerprint\":\"%s\",\"last_tick\":%u,"
                "\"seats\":%s}\n",
                st->phase.c_str(), st->tick, st->players, st->joined, st->active, st->spectators, st->desyncs,
                st->lateness_p99_us, st->protocol_version, hash_hex(st->fingerprint).c_str(), st->last_tick,
                seats_json(st->seats).c_str());
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
  std::string error;
  auto session = ServerSession::create(cfg, &error);
  if (!session) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return error.find("listen") != std::string::npos ? 1 : 2;
  }
  if (hash_log.is_open()) session->set_hash_log(&hash_log);
  ReplayWriter recorder;
  bool record_failed = false;
  if (!record_path.empty()) {
    session->on_tick([&](const InputFrame& frame, std::uint64_t hash) {
      if (!recorder.is_open() && !record_failed) {
        ReplayHeader h;
        h.protocol_version = kProtocolVersion;
        h.fingerprint = session->simulation().fingerprint();
        h.world = session->config().world;
        h.input_delay = session->config().input_delay;
        h.start_tick = frame.tick - 1;
        h.names = session->player_names();
        std::string err;
        if (!recorder.open(record_path, h, &err)) {
          LOCKSTEP_LOG_ERROR("--record: %s", err.c_str());
          record_failed = true;
        }
      }
      recorder.add(frame, hash);
    });
  }
  LOCKSTEP_LOG_INFO("listening on UDP port %u for %u players", session->port(), cfg.players);

  std::unique_ptr<AgonesSdk> sdk;
  std::int64_t next_health = 0;
  bool ready_sent = false;
  if (agones) {
    // The sidecar may start after this container: Ready is retried every 500 ms until it is taken.
    sdk = std::make_unique<AgonesSdk>(AgonesSdk::port_from_env());
    ready_sent = sdk->ready();
    next_health = monotonic_ns() + (ready_sent ? kAgonesHealthPeriodMs : kAgonesReadyRetryMs) * 1'000'000;
  }
  install_stop_signals();
  TickCpuMeter play_cpu;
  run_event_loop(
      session->fd(),
      [&](std::int64_t now) {
        if (g_stop_requested) session->stop();
        std::int64_t wake = session->update(now);
        play_cpu.observe(session->executed_tick(), session->executed_tick() == cfg.last_tick);
        if (sdk) {
          if (now >= next_health) {
            if (!ready_sent) ready_sent = sdk->ready();
            else sdk->health();  // a localhost call, well under a millisecond
            next_health = now + (ready_sent ? kAgonesHealthPeriodMs : kAgonesReadyRetryMs) * 1'000'000;
          }
          wake = std::min(wake, next_health);
        }
        // In steady play the socket is read once per tick, at the tick's deadline.
        return Wake{wake, !session->receive_can_wait()};
      },
      [&] { return session->finished(); }, PacerConfig::sleep_only());
  if (sdk) sdk->shutdown();
  hash_log.close();
  recorder.close(session->executed_tick(), session->exit_code() == 3 ? "desync" : "complete");
  const ServerStats& st = session->stats();
  LOCKSTEP_LOG_INFO("done at tick %u: lateness p50 %.0f us, p99 %.0f us; %llu inputs filled, %llu messages dropped",
                    session->executed_tick(), st.lateness.percentile_us(50), st.lateness.percentile_us(99),
                    static_cast<unsigned long long>(st.filled_inputs), static_cast<unsigned long long>(st.total_drops()));
  if (!redirect_summary(summary_path)) return 1;
  print_summary(*session, play_cpu);
  return session->exit_code();
}
