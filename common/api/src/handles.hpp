// The C API's module handle, shared by lockstep.h's and lockstep_session.h's implementations.
#pragma once

#include "lockstep/module.hpp"

struct lockstep_module {
  const lockstep::Module* module;
};
