// The desync checks a team runs on its own simulation module in CI (lockstep-synctest): each
// check steps the module through a seeded stream of inputs and commands and names the first tick,
// and where it can the entity and field, at which the module breaks the Simulation contract.
// Pure: no clock, no sockets; the cross-process checks take the other process's results.
#pragma once

#include <cstdint>
#include <functional>
#include <string>
#include <vector>

#include "lockstep/bytes.hpp"
#include "lockstep/input.hpp"
#include "lockstep/json.hpp"
#include "lockstep/module.hpp"

namespace lockstep {

struct SyncTestConfig {
  const Module* module = nullptr;
  std::string variant;     ///< which variant of a run this is ("world=golden players=8 seed=3"), for results
  WorldParams world;       ///< the module's settings and the players
  Tick ticks = 600;        ///< ticks of each run
  std::uint64_t seed = 1;  ///< of the input and command streams
  Tick rollback = 8;       ///< k of the rollback check
  Tick history = 60;       ///< ticks the history check steps after each load
  std::uint32_t sample = 8;  ///< entities whose every field the localization check perturbs
};

/// One check's outcome. `tick` 0: the new world, or not tied to a tick (the fingerprint);
/// `entity` -1: no entity named.
struct CheckResult {
  std::string check;   ///< "replay", "memory", "rollback", "history", "roundtrip", "clone", "assign", "hash",
                       ///< "localization", "fingerprint"
  bool ok = true;
  std::string variant;  ///< the variant that failed (SyncTestConfig::variant); "" for a pass over all of them
  Tick tick = 0;
  std::int64_t entity = -1;
  std::string field;
  std::string detail;  ///< a sentence: what differed
  std::string bundle, page;  ///< the desync bundle and its viewer page, when written (--bundle-dir)
  /// A failed check's own two sides within one process (rollback: the first pass and the pass
  /// after the load; history: the world that ran from tick 0 and the one loaded from its bytes),
  /// for the bundle: each one's hashes tick by tick and its state at `tick`.
  struct Side {
    std::string name;
    std::vector<std::pair<Tick, std::uint64_t>> hashes;
    std::vector<std::uint8_t> state;
  };
  std::vector<Side> sides;
};
Json result_json(const CheckResult& r);

/// The variants a run covers: every world in `worlds` (label, settings) crossed with every
/// player count in `players`, each with its own seed (`seed` + its index), so one run varies what
/// must not matter. Worlds or counts the module cannot build are left out.
struct WorldChoice {
  std::string label;   ///< "default", "golden" or "given"
  WorldParams world;   ///< settings only; players are the variant's
};
std::vector<SyncTestConfig> synctest_variants(const SyncTestConfig& base, const std::vector<WorldChoice>& worlds,
                                              const std::vector<std::uint32_t>& players);
/// Player counts to cover when none is given: 1, 2 and the most the module builds (up to 8).
std::vector<std::uint32_t> default_player_counts(const Module& m, const WorldParams& world);

/// Frame t of the seeded stream: every player present; each player's input is its module's bot's
/// or random bytes (half the ticks each, so invalid inputs are exercised too), its commands the
/// bot's and now and then a random one.
InputFrame synctest_frame(const SyncTestConfig& cfg, Tick t);

/// The hash after every tick of one run (ticks 1..cfg.ticks), and the world's fingerprint.
struct Trace {
  std::uint64_t fingerprint = 0;
  std::uint64_t initial = 0;  ///< the hash of the new world (tick 0)
  std::vector<std::uint64_t> hashes;
};
/// Runs the stream from tick 0; false with `error` set when the module cannot build the world.
bool run_trace(const SyncTestConfig& cfg, Trace* out, std::string* error);
/// Trace as text ("fingerprint HEX", "initial HEX", then "TICK HEX" lines) and back, for the child
/// processes.
std::string trace_text(const Trace& t);
bool parse_trace(const std::string& text, Trace* out);

/// The state after tick `t` of the stream (serialized), as a child process reports it.
bool run_state(const SyncTestConfig& cfg, Tick t, std::vector<std::uint8_t>* out, std::string* error);
// The children's states travel as text: bytes_hex and parse_bytes_hex (bytes.hpp).

/// The first tick at which two traces differ: 0 for the new worlds, -1 for none; a length
/// mismatch differs at the end.
std::int64_t first_divergence(const Trace& a, const Trace& b);
/// The same frames twice in separate processes (`a` and `b`, as run_trace made them) give the
/// same trace; the first differing tick is named.
CheckResult check_replay(const Trace& a, const Trace& b);
/// The same frames in two processes whose freed and freshly allocated heap memory is filled with
/// different byte patterns (glibc's malloc perturbation) give the same trace: no field is left
/// uninitialised and no padding is hashed. `a` and `b` are those runs.
CheckResult check_memory(const Trace& a, const Trace& b);
/// Names where two states of the same tick differ (`a` and `b`: serialized, from two runs of
/// `cfg`): the entity and field, a global field, or "bytes outside the declared fields" with the
/// first differing byte offset. Fills r's entity, field and appends to its detail.
void localize_states(const SyncTestConfig& cfg, const std::vector<std::uint8_t>& a, const std::vector<std::uint8_t>& b,
                     CheckResult* r);
/// GGPO's SyncTest: at every tick save, step k, load, step k again: the hashes agree.
CheckResult check_rollback(const SyncTestConfig& cfg);
/// A world stepped from tick 0 and never copied against a fresh world loaded from its bytes, at
/// several ticks (history_points), each stepped cfg.history ticks: they agree. The check for what a
/// physics engine keeps beside its bodies (contact caches, warm starting, sleep timers), which a
/// clone made through the same lossy load cannot see.
CheckResult check_history(const SyncTestConfig& cfg);
/// The ticks at which check_history loads: 1, a quarter, half and three quarters of the run, each at
/// least cfg.history after the last and cfg.history before the end (at least tick 1).
std::vector<Tick> history_points(const SyncTestConfig& cfg);
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
