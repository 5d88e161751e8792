// lockstep-replay: reads replay files. verify, info, trace, diff; and record-scenario, which
// writes the shared scenario as a replay (how tests/golden/golden.replay was made).
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"
#include <unistd.h>

#include <chrono>
#include <cstdio>
#include <fstream>
#include <map>

#include "lockstep/hash_log.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/scenario.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

constexpr int kExitOk = 0, kExitBadInput = 2, kExitMismatch = 3;

// Loads a replay; on a fault prints the reason and returns false. An incomplete (crash-cut)
// replay is accepted when `allow_incomplete` is set and the fault is only the missing end.
bool load(const std::string& path, Replay* r, bool allow_incomplete = false) {
  std::string detail;
  const ReplayError e = read_replay(path, r, &detail);
  if (e == ReplayError::None) return true;
  if (e == ReplayError::Truncated && allow_incomplete && !r->frames.empty()) {
    LOCKSTEP_LOG_WARN("%s: %s; using the %zu complete ticks", path.c_str(), detail.c_str(), r->frames.size());
    return true;
  }
  LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
  return false;
}

// A trace is a replay's recorded hashes or a hash log's lines, by tick.
bool load_trace(const std::string& path, std::map<Tick, std::uint64_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) {
    LOCKSTEP_LOG_ERROR("cannot open %s", path.c_str());
    return false;
  }
  char sig[8] = {};
  in.read(sig, 8);
  if (in.gcount() == 8 && std::string(sig, 8) == "LSREPLAY") {
    Replay r;
    if (!load(path, &r, true)) return false;
    for (std::size_t i = 0; i < r.frames.size(); ++i) (*out)[r.frames[i].tick] = r.hashes[i];
    return true;
  }
  in.clear();
  in.seekg(0);
  std::string line;
  std::size_t n = 0;
  while (std::getline(in, line)) {
    ++n;
    if (line.empty()) continue;
    const auto th = parse_hash_line(line);
    if (!th) {
      LOCKSTEP_LOG_ERROR("%s:%zu: not a replay and not a hash log line: '%.40s'", path.c_str(), n, line.c_str());
      return false;
    }
    (*out)[th->tick] = th->hash;
  }
  return true;
}

int verify(const Module& module, const std::string& path, Tick perturb_at, bool allow_incomplete) {
  Replay r;
  if (!load(path, &r, allow_incomplete)) return kExitBadInput;
  auto sim = module.create(r.header.world);
  if (!sim) {
    LOCKSTEP_LOG_ERROR("%s: the %.*s module cannot build this replay's world (%zu bytes of settings, %u players); "
                       "was it recorded with another --sim?",
                       path.c_str(), static_cast<int>(module.name.size()), module.name.data(),
                       r.header.world.settings.size(), r.header.world.players);
    return kExitBadInput;
  }
  if (sim->input_size() != r.header.input_size) {
    LOCKSTEP_LOG_ERROR("%s: recorded with %u-byte inputs (module '%s'); the %.*s module's are %u bytes",
                       path.c_str(), r.header.input_size, r.header.module.c_str(), static_cast<int>(module.name.size()),
                       module.name.data(), sim->input_size());
    return kExitBadInput;
  }
  if (sim->fingerprint() != r.header.fingerprint)
    LOCKSTEP_LOG_WARN("recorded with simulation fingerprint %s, this build has %s: results may differ",
                      hash_hex(r.header.fingerprint).c_str(), hash_hex(sim->fingerprint()).c_str());
  // (A replay of another module would mismatch at tick 1: the warning above says why.)
  const bool bar = isatty(STDERR_FILENO);
  const std::size_t n = r.frames.size();
  const auto t0 = std::chrono::steady_clock::now();
  for (std::size_t i = 0; i < n; ++i) {
    sim->step(r.frames[i]);
    if (perturb_at != 0 && r.frames[i].tick == perturb_at) sim->perturb(12345);
    const std::uint64_t h = sim->hash();
    if (h != r.hashes[i]) {
      if (bar) std::fputs("\n", stderr);
      std::printf("MISMATCH at tick %u: replay %s, recomputed %s\n", r.frames[i].tick, hash_hex(r.hashes[i]).c_str(),
                  hash_hex(h).c_str());
      return kExitMismatch;
    }
    if (bar && (i % 256 == 0 || i + 1 == n)) {
      const int width = 40;
      const auto done = static_cast<int>(static_cast<double>(i + 1) / static_cast<double>(n) * width);
      std::fprintf(stderr, "\r[%.*s%*s] tick %u/%zu", done, "########################################", width - done, "",
                   r.frames[i].tick, n);
    }
  }
  const double secs = std::chrono::duration<double>(std::chrono::steady_clock::now() - t0).count();
  if (bar) std::fputs("\n", stderr);
  const double tps = secs > 0 ? static_cast<double>(n) / secs : 0.0;
  std::printf("OK %zu ticks verified (%.*s %s, %u players), %.0f ticks/s, %.0fx real time\n", n,
              static_cast<int>(module.name.size()), module.name.data(), module.settings_text(r.header.world.settings).c_str(),
              r.header.world.players, tps, tps / kTickRate);
  return kExitOk;
}

int info(const Module& module, const std::string& path) {
  Replay r;
  std::string detail;
  const ReplayError e = read_replay(path, &r, &detail);
  if (e != ReplayError::None && !(e == ReplayError::Truncated && !r.frames.empty())) {
    LOCKSTEP_LOG_ERROR("%s: %s", path.c_str(), detail.c_str());
    return kExitBadInput;
  }
  std::size_t filled = 0, commands = 0;
  for (const auto& f : r.frames) {
    filled += static_cast<std::size_t>(__builtin_popcount(f.filled));
    commands += f.commands.size();
  }
  const Json out{{"protocol_version", r.header.protocol_version},
                 {"fingerprint", hash_hex(r.header.fingerprint)},
                 {"sim", r.header.module.empty() ? std::string(module.name) : r.header.module},
                 {"input_size", r.header.input_size},
                 // Settings are the module's to read: null when the replay's module is not the one loaded.
                 {"settings", r.header.module.empty() || r.header.module == module.name
                                  ? Json(module.settings_text(r.header.world.settings))
                                  : Json(nullptr)},
                 {"settings_bytes", r.header.world.settings.size()},
                 {"players", r.header.world.players},
                 {"input_delay", r.header.input_delay},
                 {"start_tick", r.header.start_tick},
                 {"ticks", r.frames.size()},
                 {"seconds", static_cast<double>(r.frames.size()) / kTickRate},
                 {"complete", r.complete},
                 {"final_hash", r.hashes.empty() ? "" : hash_hex(r.hashes.back())},
                 {"filled_inputs", filled},
                 {"commands", commands},
                 {"names", r.header.names}};
  std::printf("%s\n", json_text(out).c_str());
  if (!r.complete) LOCKSTEP_LOG_WARN("%s", detail.c_str());
  return kExitOk;
}

int trace(const std::string& path, Tick from, Tick to) {
  Replay r;
  if (!load(path, &r, true)) return kExitBadInput;
  for (std::size_t i = 0; i < r.frames.size(); ++i) {
    const Tick t = r.frames[i].tick;
    if (t < from || (to != 0 && t > to)) continue;
    std::printf("%s\n", format_hash_line(t, r.hashes[i]).c_str());
  }
  return kExitOk;
}

int diff(const std::string& a, const std::string& b) {
  std::map<Tick, std::uint64_t> ta, tb;
  if (!load_trace(a, &ta) || !load_trace(b, &tb)) return kExitBadInput;
  auto ia = ta.begin();
  auto ib = tb.begin();
  while (ia != ta.end() && ib != tb.end()) {
    if (ia->first != ib->first) {
      const Tick t = std::min(ia->first, ib->first);
      std::printf("first difference at tick %u: only %s has it\n", t, ia->first < ib->first ? a.c_str() : b.c_str());
      return kExitMismatch;
    }
    if (ia->second != ib->second) {
      std::printf("first difference at tick %u: %s %s, %s %s\n", ia->first, a.c_str(), hash_hex(ia->second).c_str(),
                  b.c_str(), hash_hex(ib->second).c_str());
      return kExitMismatch;
    }
    ++ia;
    ++ib;
  }
  if (ia != ta.end() || ib != tb.end()) {
    const bool a_longer = ia != ta.end();
    std::printf("first difference at tick %u: only %s has it\n", a_longer ? ia->first : ib->first,
                a_longer ? a.c_str() : b.c_str());
    return kExitMismatch;
  }
  std::printf("identical: %zu ticks\n", ta.size());
  return kExitOk;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-replay");
  CLI::App app{"lockstep-replay: checks and reads lockstep replay files.\n"
               "Exit codes: 0 ok, 1 runtime failure, 2 bad usage or a corrupt/truncated/foreign file, 3 mismatch."};
  app.set_version_flag("--version", std::string("lockstep-replay ") + kVersion + " (replay format " +
                                        std::to_string(kReplayFormatVersion) + ")");
  app.require_subcommand(1);
  app.fallthrough();  // --sim and --sim-lib may come after the subcommand too
  std::string sim, sim_lib;
  app.add_option("--sim-lib", sim_lib, "load the simulation module from this shared library");
  app.add_option("--sim", sim, "the simulation module to replay with ('list' lists them); default: the one the "
                               "replay names, for record-scenario " + std::string(default_module().name));
  std::string file, other;
  Tick from = 0, to = 0, perturb_at = 0, ticks = 3000;
  bool allow_incomplete = false;
  auto* v = app.add_subcommand("verify", "re-simulate from the header and compare every tick's hash");
  v->add_option("FILE", file, "replay file")->required();
  v->add_option("--perturb-at", perturb_at, "test hook: perturb the recomputed state by one ULP after this tick")->check(lockstep::cli::unsigned_number());
  v->add_flag("--allow-incomplete", allow_incomplete, "verify the complete part of a replay cut short by a crash");
  auto* i = app.add_subcommand("info", "print the header and totals as JSON");
  i->add_option("FILE", file, "replay file")->required();
  auto* t = app.add_subcommand("trace", "print the recorded hashes in the --hash-log format");
  t->add_option("FILE", file, "replay file")->required();
  t->add_option("--from", from, "first tick")->check(lockstep::cli::unsigned_number());
  t->add_option("--to", to, "last tick (0: to the end)")->check(lockstep::cli::unsigned_number());
  auto* d = app.add_subcommand("diff", "first tick where two replays or hash logs differ");
  d->add_option("A", file, "replay or hash log")->required();
  d->add_option("B", other, "replay or hash log")->required();
  auto* rs = app.add_subcommand("record-scenario", "write the module's golden scenario (its bots) as a replay");
  rs->add_option("FILE", file, "output file")->required();
  rs->add_option("--ticks", ticks, "ticks to record")->check(lockstep::cli::unsigned_number())->check(CLI::Range(1u, 1'000'000u))->capture_default_str();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : kExitBadInput;
  }
  // Without --sim, a replay is read with the built-in module it names.
  if (sim.empty() && sim_lib.empty() && (v->parsed() || i->parsed())) {
    Replay r;
    std::string detail;
    read_replay(file, &r, &detail);
    if (!r.header.module.empty() && find_module(r.header.module)) sim = r.header.module;
    else if (!r.header.module.empty() && v->parsed()) {
      LOCKSTEP_LOG_ERROR("%s was recorded with module '%s', which is not built in: load it with --sim-lib FILE",
                         file.c_str(), r.header.module.c_str());
      return kExitBadInput;
    }
  }
  if (sim.empty()) sim = std::string(default_module().name);
  int code = 0;
  const Module* module = module_from_options(sim, sim_lib, &code);
  if (!module) return code;
  if (v->parsed()) return verify(*module, file, perturb_at, allow_incomplete);
  if (i->parsed()) return info(*module, file);
  if (t->parsed()) return trace(file, from, to);
  if (d->parsed()) return diff(file, other);
  if (rs->parsed()) {
    std::string error;
    if (!write_replay(file, scenario_replay(golden_scenario(*module), ticks), &error)) {
      LOCKSTEP_LOG_ERROR("%s", error.c_str());
      return 1;
    }
    return kExitOk;
  }
  return kExitBadInput;
}
