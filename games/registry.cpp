// The registry of the built-in games: the one place that names them, and where the executables'
// --sim NAME or --sim-lib FILE.so becomes a module. Everything above the module table (sessions,
// tools, executables) reaches a game through it or through a module the caller passes in.
#include "lockstep/games.hpp"

#include <array>
#include <cstdio>

#include "lockstep/arena.hpp"
#include "lockstep/log.hpp"
#include "lockstep/skirmish.hpp"

namespace lockstep {

namespace {
const std::array<const Module*, 2>& builtin() {
  static const std::array<const Module*, 2> modules{&arena_module(), &skirmish_module()};
  return modules;
}
}  // namespace

std::span<const Module* const> builtin_modules() { return builtin(); }

const Module* find_module(std::string_view name) {
  for (const Module* m : builtin())
    if (m->name == name) return m;
  return nullptr;
}

const Module& default_module() { return *builtin().front(); }

const Module* module_from_options(std::string_view sim, const std::string& sim_lib, int* exit_code) {
  if (sim_lib.empty()) return choose_module(sim, exit_code);
  std::string error;
  const Module* m = load_module_library(sim_lib, &error);
  if (!m) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    *exit_code = 2;
  }
  return m;
}

const Module* choose_module(std::string_view name, int* exit_code) {
  if (name == "list") {
    std::fputs(module_list().c_str(), stdout);
    *exit_code = 0;
    return nullptr;
  }
  if (const Module* m = find_module(name)) return m;
  std::string known;
  for (const Module* m : builtin_modules()) known += (known.empty() ? "" : ", ") + std::string(m->name);
  LOCKSTEP_LOG_ERROR("--sim: no built-in simulation module '%.*s' (built in: %s; --sim list describes them)",
                     static_cast<int>(name.size()), name.data(), known.c_str());
  *exit_code = 2;
  return nullptr;
}

std::string module_list() {
  std::string out;
  for (const Module* m : builtin()) {
    out += std::string(m->name) + " " + std::to_string(m->version) + ": " + std::string(m->description) + "; settings:";
    for (const WorldSetting& s : m->settings)
      out += " " + std::string(s.key) + "=" + std::string(s.default_value) + " (" + std::string(s.help) + ")";
    out += "\n";
  }
  return out;
}

}  // namespace lockstep
