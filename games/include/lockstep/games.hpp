// The built-in games (games/registry.cpp): the arena and the skirmish, each a Module like a
// team's. Only the executables, the tools and the C API look games up by name.
#pragma once

#include <span>
#include <string>
#include <string_view>

#include "lockstep/export.h"
#include "lockstep/module.hpp"

namespace lockstep {

/// Every module built into this build, the default first.
LOCKSTEP_API std::span<const Module* const> builtin_modules();
/// The built-in module called `name`, or nullptr.
LOCKSTEP_API const Module* find_module(std::string_view name);
/// The module used when none is named (the arena).
LOCKSTEP_API const Module& default_module();
/// One line per built-in module: name, version, description and settings with their defaults
/// (what --sim list prints).
LOCKSTEP_API std::string module_list();

/// The module the options name: --sim-lib FILE when given, else --sim NAME (see choose_module).
/// nullptr after printing the list or logging why, with the exit code in `*exit_code`.
LOCKSTEP_API const Module* module_from_options(std::string_view sim, const std::string& sim_lib, int* exit_code);

/// What --sim NAME asks for: the built-in module, or nullptr after printing the list to stdout
/// for "list" (`*exit_code` 0) or logging the known names for an unknown one (`*exit_code` 2).
LOCKSTEP_API const Module* choose_module(std::string_view name, int* exit_code);


}  // namespace lockstep
