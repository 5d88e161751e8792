// lockstep_compare_game and lockstep_bisect_game (lockstep_session.h): a game's own implementation
// of a module's rules beside the module, over the synctest's variants and input streams tick by
// tick, or over a recorded session's keyframes; the first difference is named by tick, entity and
// field (or byte offset). The _v4 entry points answer with API version 4's codes; the plain names
// with versions 2 and 3's.
#define LOCKSTEP_PLAIN_NAMES  // this file defines both names
#include <algorithm>
#include <cstring>
#include <string>

#include "game_simulation.hpp"
#include "handles.hpp"
#include "lockstep/bisect.hpp"
#include "lockstep/desync.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/replay.hpp"
#include "lockstep/lockstep_session.h"
#include "lockstep/synctest.hpp"

using namespace lockstep;

namespace {

// Where two states of one tick differ, in words: the first entity (then the global state) whose
// fields differ by name or bits, else the first byte.
std::string where_they_differ(const Simulation& module, const Simulation& game, const std::vector<std::uint8_t>& a,
                              const std::vector<std::uint8_t>& b) {
  auto field_diff = [](const std::vector<FieldValue>& x, const std::vector<FieldValue>& y, std::string* out) {
    for (std::size_t i = 0; i < std::max(x.size(), y.size()); ++i) {
      if (i >= x.size() || i >= y.size()) {
        *out = "field " + std::to_string(i) + ": the module has " + std::to_string(x.size()) + " fields, the game " +
               std::to_string(y.size());
        return true;
      }
      if (x[i].name != y[i].name || x[i].kind != y[i].kind || x[i].bits != y[i].bits) {
        *out = "field " + x[i].name + ": module " + field_hex(x[i]) + ", game " +
               (x[i].name == y[i].name ? "" : "(its field " + y[i].name + ") ") + field_hex(y[i]);
        return true;
      }
    }
    return false;
  };
  std::string what;
  const std::uint32_t n = module.entity_count(), m = game.entity_count();
  for (std::uint32_t e = 0; e < std::min(n, m); ++e)
    if (field_diff(module.entity_fields(e), game.entity_fields(e), &what)) return "entity " + std::to_string(e) + " " + what;
  if (field_diff(module.global_fields(), game.global_fields(), &what)) return "the global state's " + what;
  if (n != m) return "the module has " + std::to_string(n) + " entities, the game " + std::to_string(m);
  std::size_t at = 0;
  while (at < std::min(a.size(), b.size()) && a[at] == b[at]) ++at;
  return "no field differs (or the game gives none): the saved bytes differ from offset " + std::to_string(at) + " (module " +
         std::to_string(a.size()) + " bytes, game " + std::to_string(b.size()) + ")";
}

// The game's table read (`given`, of the caller's version) into `g` and held to the module's
// identity: LOCKSTEP_OK, or the error with its sentence in `why`. Both comparisons start here.
lockstep_status prepared_game(const Module& mod, const lockstep_game& given, lockstep_game* g, std::string* why) {
  lockstep_game_defaults(g);
  if (!c_api::read_versioned(given, g, sizeof(lockstep_game), "game", why)) return LOCKSTEP_ERROR_ARGUMENT;
  if (!g->name || !g->reset || !g->step || !g->save || !g->load || !g->tick) {
    *why = "game: name, reset, step, save, load and tick must be set";
    return LOCKSTEP_ERROR_ARGUMENT;
  }
  // The identity first: a join with another one is refused before any tick is compared.
  if (std::string(g->name) != mod.name || g->version != mod.version || g->input_size != mod.input_size ||
      (mod.build_id != 0 && g->build_id != mod.build_id)) {
    *why = "the identity differs: the module is " + std::string(mod.name) + " version " + std::to_string(mod.version) +
           " build " + hash_hex(mod.build_id) + " input " + std::to_string(mod.input_size) + " bytes; the game says " +
           g->name + " version " + std::to_string(g->version) + " build " + hash_hex(g->build_id) + " input " +
           std::to_string(g->input_size) + " bytes";
    return LOCKSTEP_ERROR_DIFFERS;
  }
  return LOCKSTEP_OK;
}

}  // namespace

extern "C" lockstep_status lockstep_bisect_game_v4(const lockstep_module* module, const lockstep_game* given,
                                                   const char* replay_path, int linear, char* report, size_t report_cap) try {
  c_api::entered(__func__);
  using c_api::fail;
  if (!module || !given || !replay_path)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module, game and replay_path must not be NULL", report, report_cap);
  const Module& mod = *module->module;
  lockstep_game g;
  std::string why;
  if (const lockstep_status bad = prepared_game(mod, *given, &g, &why); bad != LOCKSTEP_OK)
    return fail(bad, why, report, report_cap);
  Replay r;
  std::string detail;
  ReplayError e;
  if (is_bundle_file(replay_path)) {
    DesyncBundle b;
    e = read_bundle(replay_path, &b, &detail);
    r = std::move(b.replay);
  } else {
    e = read_replay(replay_path, &r, &detail);
  }
  if (e == ReplayError::CannotOpen) return fail(LOCKSTEP_ERROR_FILE, detail, report, report_cap);
  if (e != ReplayError::None) return fail(LOCKSTEP_ERROR_FORMAT, std::string(replay_path) + ": " + detail, report, report_cap);
  if (r.header.input_size != mod.input_size)
    return fail(LOCKSTEP_ERROR_FORMAT, std::string(replay_path) + " was recorded with " + std::to_string(r.header.input_size) +
                                             "-byte inputs; the module's are " + std::to_string(mod.input_size),
                report, report_cap);
  if (!r.header.module.empty() && r.header.module != mod.name)
    return fail(LOCKSTEP_ERROR_FORMAT, std::string(replay_path) + " was recorded with module '" + r.header.module +
                                             "', not " + std::string(mod.name), report, report_cap);
  auto ctx = std::make_shared<GameContext>();
  ctx->game = g;
  ctx->code = module_code_fingerprint(g.name, g.version, g.build_id, g.input_size);
  const BisectResult res = bisect_replay(mod.create, game_factory(ctx), r, linear != 0);
  if (!ctx->failure.empty()) return fail(LOCKSTEP_ERROR_CALLBACK, "the game failed: " + ctx->failure, report, report_cap);
  if (!res.ok) return fail(LOCKSTEP_ERROR_FORMAT, std::string(replay_path) + ": " + res.error, report, report_cap);
  const std::string cost = std::to_string(res.ticks_simulated) + " ticks simulated (" + std::to_string(res.stretches_tested) +
                           " of " + std::to_string(res.stretches) + " stretches between keyframes); a linear search: " +
                           std::to_string(res.linear_ticks);
  if (!res.unsteady.empty())
    return fail(LOCKSTEP_ERROR_DIFFERS, std::string(res.unsteady == "a" ? "the module" : res.unsteady == "b" ? "the game" : "both") +
                                          " gave another result when tick " + std::to_string(res.tick) +
                                          " was stepped again from the same keyframe: it differs from itself (uninitialised "
                                          "memory, an address or a clock in the state), not from the other; " + cost,
                report, report_cap);
  if (!res.parted) return fail(LOCKSTEP_OK, "equal at every tick: " + cost, report, report_cap);
  std::string where = difference_text(res.difference);
  return fail(LOCKSTEP_ERROR_DIFFERS, "parted at tick " + std::to_string(res.tick) + ": " + where + " (module vs game); " + cost +
                                        (res.exhaustive ? "" : "; galloping skipped stretches before it"),
              report, report_cap);
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_compare_game_v4(const lockstep_module* module, const lockstep_game* given,
                                                    const uint8_t* settings, size_t n, uint32_t ticks, char* report,
                                                    size_t report_cap) try {
  c_api::entered(__func__);
  using c_api::fail;
  if (!module || !given || (n > 0 && !settings) || ticks == 0)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module and game must not be NULL, nor settings with n > 0, and ticks at least 1",
                report, report_cap);
  const Module& mod = *module->module;
  lockstep_game g;
  std::string why;
  if (const lockstep_status bad = prepared_game(mod, *given, &g, &why); bad != LOCKSTEP_OK)
    return fail(bad, why, report, report_cap);
  auto ctx = std::make_shared<GameContext>();
  ctx->game = g;
  ctx->code = module_code_fingerprint(g.name, g.version, g.build_id, g.input_size);
  const WorldFactory game_world = game_factory(ctx);
  SyncTestConfig base;
  base.module = &mod;
  base.ticks = ticks;
  base.world.settings.assign(settings, settings + n);
  const std::vector<SyncTestConfig> variants =
      synctest_variants(base, {{"given", base.world}}, default_player_counts(mod, base.world));
  if (variants.empty()) return fail(LOCKSTEP_ERROR_SETTINGS, "the module builds no world of these settings", report, report_cap);
  std::vector<std::uint8_t> a, b;
  for (const SyncTestConfig& cfg : variants) {
    auto x = mod.create(cfg.world);
    auto y = game_world(cfg.world);
    if (!y || !ctx->failure.empty())
      return fail(LOCKSTEP_ERROR_CALLBACK, cfg.variant + ": the game cannot build this world" +
                                            (ctx->failure.empty() ? "" : " (" + ctx->failure + ")"), report, report_cap);
    for (Tick t = 0; t <= cfg.ticks; ++t) {
      if (t > 0) {
        const InputFrame f = synctest_frame(cfg, t);
        x->step(f);
        y->step(f);
        if (!ctx->failure.empty())
          return fail(LOCKSTEP_ERROR_CALLBACK, cfg.variant + " tick " + std::to_string(t) + ": " + ctx->failure, report, report_cap);
      }
      a.clear();
      b.clear();
      x->serialize(a);
      y->serialize(b);
      if (a != b)
        return fail(LOCKSTEP_ERROR_DIFFERS,
                    cfg.variant + " tick " + std::to_string(t) + ": " + where_they_differ(*x, *y, a, b), report, report_cap);
    }
  }
  return fail(LOCKSTEP_OK,
              "equal: " + std::to_string(variants.size()) + " variants (" + variants.front().variant + " ...), " +
                  std::to_string(ticks) + " ticks each, the same bytes and fields at every tick",
              report, report_cap);
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_bisect_game(const lockstep_module* module, const lockstep_game* given,
                                                const char* replay_path, int linear, char* report, size_t report_cap) try {
  c_api::entered(__func__);
  return c_api::as_v3(lockstep_bisect_game_v4(module, given, replay_path, linear, report, report_cap));
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}

extern "C" lockstep_status lockstep_compare_game(const lockstep_module* module, const lockstep_game* given,
                                                 const uint8_t* settings, size_t n, uint32_t ticks, char* report,
                                                 size_t report_cap) try {
  c_api::entered(__func__);
  return c_api::as_v3(lockstep_compare_game_v4(module, given, settings, n, ticks, report, report_cap));
} catch (...) {
  return c_api::caught(__func__, report, report_cap);
}
