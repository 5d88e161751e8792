// Typed errors for the parts that can fail before they run (sessions, transport), and the one
// place where an error's kind becomes an exit code (README.md lists them).
#pragma once

#include <string>
#include <utility>

#include "lockstep/export.h"

namespace lockstep {

enum class ErrorKind {
  None,
  Usage,       ///< the configuration asks for something invalid (exit 2)
  Runtime,     ///< the system refused (a socket, a port in use) (exit 1)
  Connection,  ///< the peer cannot be reached (exit 4)
};

struct LOCKSTEP_API Error {
  Error() = default;
  Error(ErrorKind k, std::string d, std::string f = {}) : kind(k), detail(std::move(d)), field(std::move(f)) {}

  ErrorKind kind = ErrorKind::None;
  std::string detail;  ///< a sentence for the user; for a config error it begins with the field's name
  std::string field;   ///< the config field at fault ("players", "input_delay"), "" for none

  explicit operator bool() const { return kind != ErrorKind::None; }
};

/// The sentence of `e` with its field named as the option that sets it: the field's name with
/// '_' as '-' behind "--" ("input_delay must be 0..50" becomes "--input-delay must be 0..50"),
/// for executables whose options are named after the fields.
inline std::string option_sentence(const Error& e) {
  if (e.field.empty() || e.detail.compare(0, e.field.size(), e.field) != 0) return e.detail;
  std::string option = "--" + e.field;
  for (char& c : option)
    if (c == '_') c = '-';
  return option + e.detail.substr(e.field.size());
}

/// The exit code for an error of this kind: 2 usage, 1 runtime, 4 connection (0 none).
constexpr int exit_code(ErrorKind kind) {
  switch (kind) {
    case ErrorKind::None: return 0;
    case ErrorKind::Usage: return 2;
    case ErrorKind::Runtime: return 1;
    case ErrorKind::Connection: return 4;
  }
  return 1;
}

}  // namespace lockstep
