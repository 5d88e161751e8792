// lockstep-server's options, and serve(): hosting the sessions they describe.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/games.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep::server {

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
  bool realtime = false;       // the loop's thread at real-time priority (SCHED_FIFO)
};

/// Hosts the sessions of a configured game (one, or --sessions of them on one thread): keys
/// loaded, the module or relay description in `o.cfg`. Returns the process's exit code.
int serve(Options o, const std::string& module_name, const std::string& settings_text);

}  // namespace lockstep::server
