// What lockstep.h's and lockstep_session.h's implementations share: the module handle and the
// way a failure is answered.
#pragma once

#include <algorithm>
#include <cstring>
#include <string>

#include "lockstep/lockstep.h"
#include "lockstep/module.hpp"

struct lockstep_module {
  const lockstep::Module* module;
};

namespace lockstep::c_api {

/// Returns `r` after writing `why` into `error` (cap bytes, NUL-terminated, truncated; error may be NULL).
inline lockstep_result fail(lockstep_result r, const std::string& why, char* error, std::size_t cap) {
  if (error && cap > 0) {
    const std::size_t n = std::min(why.size(), cap - 1);
    std::memcpy(error, why.data(), n);
    error[n] = '\0';
  }
  return r;
}

}  // namespace lockstep::c_api
