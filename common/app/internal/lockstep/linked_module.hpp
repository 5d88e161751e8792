// A team's module linked into a program instead of loaded from a file: WebAssembly loads no module
// built apart, so the wasm replay and the browser client are built once per module with its static
// library and LOCKSTEP_LINKED_MODULE (replay/CMakeLists.txt and web/CMakeLists.txt:
// LOCKSTEP_LINKED_MODULES), and take its lockstep_module() entry here.
#pragma once

#ifdef LOCKSTEP_LINKED_MODULE

#include <cstdint>
#include <string>

#include "lockstep/module.hpp"
#include "lockstep/module_abi.h"

extern "C" const lockstep_module_v2* lockstep_module(std::uint32_t host_abi_version);

namespace lockstep {

/// The linked module, made from its table once; nullptr with the reason in *error.
inline const Module* linked_module(std::string* error) {
  static std::string why;
  static const Module* const module = [] {
    const lockstep_module_v2* table = lockstep_module(LOCKSTEP_MODULE_ABI_VERSION);
    if (!table) {
      why = "the linked module cannot serve module ABI version " + std::to_string(LOCKSTEP_MODULE_ABI_VERSION);
      return static_cast<const Module*>(nullptr);
    }
    const Module* m = module_from_table(table, &why);
    if (!m) why = "the linked module: " + why;
    return m;
  }();
  if (!module) *error = why;
  return module;
}

}  // namespace lockstep

#endif
