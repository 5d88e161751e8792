// Typed errors for the parts that can fail before they run (sessions, transport), and the one
// place where an error's kind becomes an exit code (README.md lists them).
#pragma once

#include <string>

namespace lockstep {

enum class ErrorKind {
  None,
  Usage,       ///< the configuration asks for something invalid (exit 2)
  Runtime,     ///< the system refused (a socket, a port in use) (exit 1)
  Connection,  ///< the peer cannot be reached (exit 4)
};

struct Error {
  ErrorKind kind = ErrorKind::None;
  std::string detail;  ///< a sentence for the user

  explicit operator bool() const { return kind != ErrorKind::None; }
};

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
