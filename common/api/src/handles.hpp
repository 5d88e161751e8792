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
inline lockstep_status fail(lockstep_status r, const std::string& why, char* error, std::size_t cap) {
  if (error && cap > 0) {
    const std::size_t n = std::min(why.size(), cap - 1);
    std::memcpy(error, why.data(), n);
    error[n] = '\0';
  }
  return r;
}

/// Every C entry point runs its body in a function-try-block that begins with entered() and whose
/// handler answers with caught(): no exception (out of memory, a bug, a throwing callback of a
/// C++ game) crosses into C, where a C, C#, Python or browser caller could not survive it.
/// A test's hook, called by entered() with the entry point's name when set (tests/api make it throw
/// there, to check every entry point's handler). Null in use.
LOCKSTEP_API extern void (*g_entry_hook)(const char* entry);
inline void entered(const char* entry) {
  if (g_entry_hook) g_entry_hook(entry);
}
/// In the handler of an entry point's function-try-block: logs the exception being handled and
/// writes "ENTRY: internal error: WHAT" into `error` (as fail() does); LOCKSTEP_ERROR_INTERNAL.
/// Allocates nothing, so it works when memory has run out.
LOCKSTEP_API lockstep_status caught(const char* entry, char* error, std::size_t cap) noexcept;

/// API version 4's error codes as versions 2 and 3 answered them, for the checks' plain names
/// (their binaries know no other): a difference, a failed callback or a forged result was STATE,
/// a file that cannot be opened NOT_FOUND, a damaged one SETTINGS.
inline lockstep_status as_v3(lockstep_status r) {
  switch (r) {
    case LOCKSTEP_ERROR_DIFFERS:
    case LOCKSTEP_ERROR_CALLBACK:
    case LOCKSTEP_ERROR_FORGED: return LOCKSTEP_ERROR_STATE;
    case LOCKSTEP_ERROR_FILE: return LOCKSTEP_ERROR_NOT_FOUND;
    case LOCKSTEP_ERROR_FORMAT: return LOCKSTEP_ERROR_SETTINGS;
    default: return r;
  }
}

/// Versioned structs (lockstep_session.h): the caller's struct_size says how much of the struct
/// its header knows. `first_size` is the struct's size at API version 2, where struct_size began;
/// every size from there to this library's is a header of some version (fields only grow at the
/// end). The sentence when struct_size is none of those, saying which side is newer.
inline std::string versioned_size_refusal(std::size_t n, std::size_t first_size, std::size_t size, const char* what) {
  const std::string range = std::to_string(first_size) + (first_size == size ? "" : ".." + std::to_string(size));
  std::string why = std::string(what) + ".struct_size is " + std::to_string(n) + "; this library (API version " +
                    std::to_string(LOCKSTEP_API_VERSION) + ") takes " + range;
  if (n > size) return why + ": the game was built against a newer lockstep header than this library; link a newer lockstep";
  if (n == 0) return why + ": the struct was never set up; fill it with its _defaults() or _init() call first";
  return why + ": that is no lockstep header's size (older than API version 2, or not set with the _defaults() call)";
}
/// Reads struct_size bytes of `in` over `out`, which holds the defaults (the fields an older header
/// lacks keep them); false with a sentence when struct_size is out of range.
template <class T>
bool read_versioned(const T& in, T* out, std::size_t first_size, const char* what, std::string* why) {
  const std::size_t n = in.struct_size;
  if (n < first_size || n > sizeof(T)) {
    *why = versioned_size_refusal(n, first_size, sizeof(T), what);
    return false;
  }
  std::memcpy(static_cast<void*>(out), &in, n);
  out->struct_size = static_cast<std::uint32_t>(sizeof(T));
  return true;
}
/// A versioned struct's *_init(): `defaults` into the first `size` bytes of `*out` (a caller's
/// struct may be shorter than this library's, or longer), with struct_size = size.
template <class T>
void init_versioned(T defaults, T* out, std::size_t size) {
  if (!out || size < sizeof(std::uint32_t)) return;
  defaults.struct_size = static_cast<std::uint32_t>(size);
  std::memcpy(static_cast<void*>(out), &defaults, std::min(size, sizeof(T)));
}
/// Writes `in` into `*out` up to out->struct_size, within the same bounds (false with a sentence).
template <class T>
bool write_versioned(const T& in, T* out, std::size_t first_size, const char* what, std::string* why) {
  const std::size_t n = out->struct_size;
  if (n < first_size || n > sizeof(T)) {
    *why = versioned_size_refusal(n, first_size, sizeof(T), what);
    return false;
  }
  std::memcpy(static_cast<void*>(out), &in, n);
  out->struct_size = static_cast<std::uint32_t>(n);
  return true;
}

}  // namespace lockstep::c_api
