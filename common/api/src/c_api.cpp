// The C API (lockstep.h) over the C++ core: a thin shell that checks every argument, turns
// lockstep_frame into InputFrame, and never lets an exception cross into C.
#include "lockstep/lockstep.h"
#include "lockstep/lockstep_session.h"

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <exception>
#include <memory>
#include <mutex>
#include <string>

#include "lockstep/games.hpp"
#include "lockstep/log.hpp"
#include "lockstep/module.hpp"
#include "lockstep/simulation.hpp"
#include "handles.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;


struct lockstep_world {
  const lockstep_module* module;
  std::unique_ptr<Simulation> sim;
  InputFrame frame;  // reused by every step
  // The fields the last lockstep_world_*_fields call returned: their names point in here.
  mutable std::vector<FieldValue> fields;
};

namespace lockstep::c_api {

void (*g_entry_hook)(const char* entry) = nullptr;

lockstep_status caught(const char* entry, char* error, std::size_t cap) noexcept {
  const char* what = "an exception that is not a std::exception";
  try {
    throw;  // the exception being handled, to read it
  } catch (const std::exception& e) {
    what = e.what();
  } catch (...) {
  }
  char line[256];
  std::snprintf(line, sizeof line, "%s: internal error: %s", entry, what);
  try {
    LOCKSTEP_LOG_ERROR("%s", line);
  } catch (...) {  // a log sink that throws: the sentence still reaches the caller
  }
  if (error && cap > 0) std::snprintf(error, cap, "%s", line);
  return LOCKSTEP_ERROR_INTERNAL;
}

}  // namespace lockstep::c_api

namespace {

using c_api::fail;

// Handles of the modules handed out so far: one per Module, kept for the process's life.
std::mutex g_mutex;
std::vector<std::unique_ptr<lockstep_module>> g_handles;
std::string g_loaded_path;

const lockstep_module* handle_of(const Module* m) {
  for (const auto& h : g_handles)
    if (h->module == m) return h.get();
  g_handles.push_back(std::make_unique<lockstep_module>(lockstep_module{m}));
  return g_handles.back().get();
}

// The checks lockstep_world_step makes before a frame reaches the simulation: the same bounds the
// wire decoder holds, so no frame a C caller builds can be one the network could not deliver.
bool to_input_frame(const lockstep_world& w, const lockstep_frame& f, InputFrame* out, std::string* why) {
  const std::uint32_t players = w.frame.players;
  const std::uint32_t size = w.module->module->input_size;
  if (f.tick != w.sim->tick() + 1) {
    *why = "frame for tick " + std::to_string(f.tick) + ", the world is at tick " + std::to_string(w.sim->tick());
    return false;
  }
  if (f.players != players || f.input_size != size) {
    *why = "frame of " + std::to_string(f.players) + " players and " + std::to_string(f.input_size) +
           "-byte inputs; the world has " + std::to_string(players) + " and " + std::to_string(size);
    return false;
  }
  if ((f.present & ~slot_mask(players)) != 0 || (f.filled & ~f.present) != 0) {
    *why = "present/filled masks name slots outside the world, or filled slots not present";
    return false;
  }
  if (size > 0 && f.inputs == nullptr) {
    *why = "no input bytes";
    return false;
  }
  if (f.command_count > 0 && f.commands == nullptr) {
    *why = "no commands array";
    return false;
  }
  out->reset(f.tick, players, size);
  out->present = f.present;
  out->filled = f.filled;
  if (size > 0) std::memcpy(out->inputs.data(), f.inputs, std::size_t{players} * size);
  Commands cmds;
  std::uint32_t slot = 0;
  bool any = false;
  for (std::uint32_t i = 0; i < f.command_count; ++i) {
    const lockstep_command& c = f.commands[i];
    if (c.slot >= players || (any && c.slot < slot) || ((f.present >> c.slot) & 1u) == 0) {
      *why = "command " + std::to_string(i) + ": slot " + std::to_string(c.slot) +
             " is out of order, outside the world or not present";
      return false;
    }
    if (any && c.slot != slot) {
      out->add_commands(slot, cmds);
      cmds.clear();
    }
    slot = c.slot;
    any = true;
    if (c.size == 0 || c.bytes == nullptr || !cmds.add(std::span<const std::uint8_t>(c.bytes, c.size))) {
      *why = "command " + std::to_string(i) + " of slot " + std::to_string(c.slot) + ": " + std::to_string(c.size) +
             " bytes is empty or breaks a limit (" + std::to_string(kMaxCommandsPerTick) + " commands, " +
             std::to_string(kMaxCommandBytesPerTick) + " bytes per slot and tick)";
      return false;
    }
  }
  if (any) out->add_commands(slot, cmds);
  return true;
}

// lockstep_world_entity_fields and lockstep_world_global_fields once their arguments hold: keeps
// the fields in the world (the names' storage) and copies them out when they fit.
lockstep_status copy_fields(const lockstep_world& w, std::vector<FieldValue> fields, lockstep_field* out,
                            std::size_t cap, std::size_t* count, char* error, std::size_t error_cap) {
  w.fields = std::move(fields);
  *count = w.fields.size();
  if (w.fields.size() > cap)
    return fail(LOCKSTEP_ERROR_BUFFER, "there are " + std::to_string(w.fields.size()) + " fields", error, error_cap);
  for (std::size_t i = 0; i < w.fields.size(); ++i)
    out[i] = lockstep_field{w.fields[i].name.c_str(), static_cast<uint32_t>(w.fields[i].kind), w.fields[i].bits};
  return LOCKSTEP_OK;
}

}  // namespace

extern "C" {

uint32_t lockstep_api_version(void) try {
  c_api::entered(__func__);
  return LOCKSTEP_API_VERSION;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
const char* lockstep_version(void) try {
  c_api::entered(__func__);
  return kVersion;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return nullptr;
}
uint32_t lockstep_protocol_version(void) try {
  c_api::entered(__func__);
  return kProtocolVersion;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

lockstep_status lockstep_module_builtin(const char* name, const lockstep_module** out, char* error,
                                        size_t error_cap) try {
  c_api::entered(__func__);
  if (!name || !out) return fail(LOCKSTEP_ERROR_ARGUMENT, "name and out must not be NULL", error, error_cap);
  const Module* m = find_module(name);
  if (!m) return fail(LOCKSTEP_ERROR_NOT_FOUND, std::string("no built-in module '") + name + "'", error, error_cap);
  std::lock_guard lock(g_mutex);
  *out = handle_of(m);
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_module_load(const char* path, const lockstep_module** out, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (!path || !out) return fail(LOCKSTEP_ERROR_ARGUMENT, "path and out must not be NULL", error, error_cap);
  std::lock_guard lock(g_mutex);
  static const Module* loaded = nullptr;  // load_module_library takes one library per process
  if (loaded) {
    if (g_loaded_path != path)
      return fail(LOCKSTEP_ERROR_MODULE, "a module library (" + g_loaded_path + ") is already loaded in this process",
                  error, error_cap);
    *out = handle_of(loaded);
    return LOCKSTEP_OK;
  }
  std::string why;
  loaded = load_module_library(path, &why);
  if (!loaded) return fail(LOCKSTEP_ERROR_MODULE, why, error, error_cap);
  g_loaded_path = path;
  *out = handle_of(loaded);
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_module_from_table(const lockstep_module_v2* table, const lockstep_module** out, char* error,
                                           size_t error_cap) try {
  c_api::entered(__func__);
  if (!table || !out) return fail(LOCKSTEP_ERROR_ARGUMENT, "table and out must not be NULL", error, error_cap);
  std::lock_guard lock(g_mutex);
  static const Module* installed = nullptr;
  static const lockstep_module_v2* installed_table = nullptr;
  if (installed && installed_table == table) {
    *out = handle_of(installed);
    return LOCKSTEP_OK;
  }
  std::string why;
  const Module* m = module_from_table(table, &why);
  if (!m) return fail(LOCKSTEP_ERROR_MODULE, why, error, error_cap);
  installed = m;
  installed_table = table;
  *out = handle_of(m);
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

const char* lockstep_module_name(const lockstep_module* module) try {
  c_api::entered(__func__);
  return module ? module->module->name.data() : nullptr;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return nullptr;
}
uint32_t lockstep_module_version(const lockstep_module* module) try {
  c_api::entered(__func__);
  return module ? module->module->version : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint32_t lockstep_module_input_size(const lockstep_module* module) try {
  c_api::entered(__func__);
  return module ? module->module->input_size : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint64_t lockstep_module_build_id(const lockstep_module* module) try {
  c_api::entered(__func__);
  return module ? module->module->build_id : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint64_t lockstep_module_join_fingerprint(const lockstep_module* module) try {
  c_api::entered(__func__);
  return module ? join_fingerprint(module->module->create) : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

lockstep_status lockstep_module_settings(const lockstep_module* module, const char* text, uint8_t* out, size_t cap,
                                         size_t* out_len, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (!module || !out_len || (cap > 0 && !out))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module and out_len must not be NULL", error, error_cap);
  WorldParams world;
  std::string why;
  if (!module->module->parse_world(text ? text : "", &world, &why))
    return fail(LOCKSTEP_ERROR_SETTINGS, why, error, error_cap);
  *out_len = world.settings.size();
  if (world.settings.size() > cap)
    return fail(LOCKSTEP_ERROR_BUFFER, "the settings need " + std::to_string(world.settings.size()) + " bytes", error,
                error_cap);
  if (!world.settings.empty()) std::memcpy(out, world.settings.data(), world.settings.size());
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_world_create(const lockstep_module* module, const uint8_t* settings, size_t n,
                                      uint32_t players, lockstep_world** out, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (!module || !out || (n > 0 && !settings))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "module and out must not be NULL", error, error_cap);
  if (players < 1 || players > static_cast<uint32_t>(kMaxPlayers))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "players must be 1.." + std::to_string(kMaxPlayers), error, error_cap);
  if (n > kMaxSettingsBytes)
    return fail(LOCKSTEP_ERROR_SETTINGS, "settings of " + std::to_string(n) + " bytes; at most " +
                                             std::to_string(kMaxSettingsBytes), error, error_cap);
  try {
    WorldParams world;
    world.settings.assign(settings, settings + n);
    world.players = players;
    auto sim = module->module->create(world);
    if (!sim) return fail(LOCKSTEP_ERROR_SETTINGS, "the module refuses these settings", error, error_cap);
    auto* w = new lockstep_world{module, std::move(sim), {}, {}};
    w->frame.reset(0, players, module->module->input_size);
    *out = w;
    return LOCKSTEP_OK;
  } catch (const std::exception& e) {
    return fail(LOCKSTEP_ERROR_SETTINGS, e.what(), error, error_cap);
  }
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_world* lockstep_world_clone(const lockstep_world* world) try {
  c_api::entered(__func__);
  if (!world) return nullptr;
  return new lockstep_world{world->module, world->sim->clone(), world->frame, {}};
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return nullptr;
}

void lockstep_world_destroy(lockstep_world* world) try {
  c_api::entered(__func__);
  delete world;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
}

uint32_t lockstep_world_tick(const lockstep_world* world) try {
  c_api::entered(__func__);
  return world ? world->sim->tick() : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint32_t lockstep_world_players(const lockstep_world* world) try {
  c_api::entered(__func__);
  return world ? world->frame.players : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

lockstep_status lockstep_world_step(lockstep_world* world, const lockstep_frame* frame, char* error,
                                    size_t error_cap) try {
  c_api::entered(__func__);
  if (!world || !frame) return fail(LOCKSTEP_ERROR_ARGUMENT, "world and frame must not be NULL", error, error_cap);
  std::string why;
  InputFrame next = world->frame;  // keeps its buffers' capacity
  if (!to_input_frame(*world, *frame, &next, &why)) return fail(LOCKSTEP_ERROR_FRAME, why, error, error_cap);
  world->frame = std::move(next);
  world->sim->step(world->frame);
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

uint64_t lockstep_world_hash(const lockstep_world* world) try {
  c_api::entered(__func__);
  return world ? world->sim->hash() : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint64_t lockstep_world_fingerprint(const lockstep_world* world) try {
  c_api::entered(__func__);
  return world ? world->sim->fingerprint() : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint32_t lockstep_world_entity_count(const lockstep_world* world) try {
  c_api::entered(__func__);
  return world ? world->sim->entity_count() : 0;
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}
uint64_t lockstep_world_entity_hash(const lockstep_world* world, uint32_t entity) try {
  c_api::entered(__func__);
  if (!world || entity >= world->sim->entity_count()) return 0;
  return world->sim->entity_hash(entity);
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

lockstep_status lockstep_world_entity_fields(const lockstep_world* world, uint32_t entity, lockstep_field* out,
                                             size_t cap, size_t* count, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (count) *count = 0;
  if (!world || !count || (cap > 0 && !out))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "world and count must not be NULL, nor out with cap > 0", error, error_cap);
  const std::uint32_t entities = world->sim->entity_count();
  if (entity >= entities)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "entity " + std::to_string(entity) + " of " + std::to_string(entities),
                error, error_cap);
  return copy_fields(*world, world->sim->entity_fields(entity), out, cap, count, error, error_cap);
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_world_global_fields(const lockstep_world* world, lockstep_field* out, size_t cap,
                                             size_t* count, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (count) *count = 0;
  if (!world || !count || (cap > 0 && !out))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "world and count must not be NULL, nor out with cap > 0", error, error_cap);
  return copy_fields(*world, world->sim->global_fields(), out, cap, count, error, error_cap);
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_world_save(const lockstep_world* world, uint8_t* out, size_t cap, size_t* out_len) try {
  c_api::entered(__func__);
  if (out_len) *out_len = 0;
  if (!world || !out_len || (!out && cap > 0)) return LOCKSTEP_ERROR_ARGUMENT;
  std::vector<std::uint8_t> bytes;
  world->sim->serialize(bytes);
  *out_len = bytes.size();
  if (bytes.size() > cap) return LOCKSTEP_ERROR_BUFFER;
  if (!bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, nullptr, 0);
}

size_t lockstep_world_serialize(const lockstep_world* world, uint8_t* out, size_t cap) try {
  c_api::entered(__func__);
  if (!world) return 0;
  std::vector<std::uint8_t> bytes;
  world->sim->serialize(bytes);
  if (out && bytes.size() <= cap && !bytes.empty()) std::memcpy(out, bytes.data(), bytes.size());
  return bytes.size();
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
  return 0;
}

lockstep_status lockstep_world_load(lockstep_world* world, const uint8_t* bytes, size_t n, char* error,
                                    size_t error_cap) try {
  c_api::entered(__func__);
  if (!world || (n > 0 && !bytes)) return fail(LOCKSTEP_ERROR_ARGUMENT, "world and bytes must not be NULL", error, error_cap);
  auto copy = world->sim->clone();
  if (!copy->deserialize(std::span<const std::uint8_t>(bytes, n)))
    return fail(LOCKSTEP_ERROR_STATE, "the bytes are not a state of module " + std::string(world->module->module->name),
                error, error_cap);
  world->sim = std::move(copy);
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

}  // extern "C"
