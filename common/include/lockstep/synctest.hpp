// The desync checks a team runs on its own simulation module in CI (lockstep-synctest): each
// check steps the module through a seeded stream of inputs and commands and names the first tick,
// and where it can the entity and field, at which the module breaks the Simulation contract.
// Pure: no clock, no sockets; the cross-process checks take the other process's results.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/input.hpp"
#include "lockstep/json.hpp"
#include "lockstep/module.hpp"

namespace lockstep {

struct SyncTestConfig {
  const Module* module = nullptr;
  WorldParams world;       ///< the module's settings and the players
  Tick ticks = 600;        ///< ticks of each run
  std::uint64_t seed = 1;  ///< of the input and command streams
  Tick rollback = 8;       ///< k of the rollback check
  std::uint32_t sample = 8;  ///< entities whose every field the localization check perturbs
};

/// One check's outcome. `tick` 0: not tied to a tick; `entity` -1: no entity named.
struct CheckResult {
  std::string check;   ///< "replay", "rollback", "roundtrip", "clone", "assign", "hash", "localization", "fingerprint"
  bool ok = true;
  Tick tick = 0;
  std::int64_t entity = -1;
  std::string field;
  std::string detail;  ///< a sentence: what differed
};
Json result_json(const CheckResult& r);

/// Frame t of the seeded stream: every player present; each player's input is its module's bot's
/// or random bytes (half the ticks each, so invalid inputs are exercised too), its commands the
/// bot's and now and then a random one.
InputFrame synctest_frame(const SyncTestConfig& cfg, Tick t);

/// The hash after every tick of one run (ticks 1..cfg.ticks), and the world's fingerprint.
struct Trace {
  std::uint64_t fingerprint = 0;
  std::vector<std::uint64_t> hashes;
};
/// Runs the stream from tick 0; false with `error` set when the module cannot build the world.
bool run_trace(const SyncTestConfig& cfg, Trace* out, std::string* error);
/// Trace as text ("fingerprint HEX" then "TICK HEX" lines) and back, for the child processes.
std::string trace_text(const Trace& t);
bool parse_trace(const std::string& text, Trace* out);

/// The same frames twice in separate processes (`a` and `b`, as run_trace made them) give the
/// same trace; the first differing tick is named.
CheckResult check_replay(const Trace& a, const Trace& b);
/// GGPO's SyncTest: at every tick save, step k, load, step k again: the hashes agree.
CheckResult check_rollback(const SyncTestConfig& cfg);
/// Serialize then deserialize into a new world gives the same bytes, the same hash and the same
/// next ticks; clone and assign the same; hash() is XXH3 of the serialized bytes. Returns the
/// roundtrip, clone, assign and hash checks.
std::vector<CheckResult> check_state_copies(const SyncTestConfig& cfg);
/// Every field of a sample of entities, perturbed by one bit (Simulation::perturb over its
/// selectors), is caught by the hash and named by the desync probe as that entity's field.
CheckResult check_localization(const SyncTestConfig& cfg);
/// The world's fingerprint is the same in another process (`other`) and a changed setting
/// (`changed`, the fingerprint of the same module with one setting changed; 0: not checked)
/// changes it.
CheckResult check_fingerprint(std::uint64_t ours, std::uint64_t other, std::uint64_t changed);

}  // namespace lockstep
