// Logging, one line per event. By default a line goes to stderr with the program's name in
// front; a game that embeds the library installs its own sink (netcode's set_printf_function)
// and gets every line the library logs, with its level.
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/export.h"

namespace lockstep {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

/// Sets the name printed before every line and the lowest level printed.
LOCKSTEP_API void log_setup(const char* program, LogLevel level = LogLevel::Info);
LOCKSTEP_API void log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/// Where lines go: `sink(level, line, user)` for every line at or above the level set, from the
/// thread that logs; nullptr restores stderr. The line has no program name and no newline. Threads
/// that log besides the caller's: Client::start_service's, and a server's WebSocket door's
/// (ServerConfig::websocket_port), so a sink for those must take lines from two threads at once.
using LogSink = void (*)(LogLevel level, const char* line, void* user);
LOCKSTEP_API void set_log_sink(LogSink sink, void* user);
/// How the program's own stderr lines look: `Text` ("program: level: message", the default), or
/// `JsonLines`, one object per line for a fleet's log shipper: {"time", "level", "program", "session",
/// "tick", "slot", "event", "message"}, tick and slot null where a line has none. A sink
/// (set_log_sink) gets the message alone either way.
enum class LogFormat { Text, JsonLines };
LOCKSTEP_API void set_log_format(LogFormat format);
/// The session id every JSON line names (a server sets it once, before its threads start).
LOCKSTEP_API void set_log_session(const std::string& id);
/// The tick this thread's lines name from now on (a server's tick loop sets it at every update).
LOCKSTEP_API void set_log_tick(std::uint32_t tick);
/// Within its scope, this thread's lines name `slot` (a player's seat; -1: none) and, when not
/// null, the event kind `event` (otherwise the kind is the logging source file's name).
class LOCKSTEP_API LogScope {
 public:
  explicit LogScope(int slot, const char* event = nullptr);
  ~LogScope();
  LogScope(const LogScope&) = delete;
  LogScope& operator=(const LogScope&) = delete;

 private:
  int slot_;
  const char* event_;
};
/// Within its scope, this thread's lines belong to session `id` in place of set_log_session()'s:
/// JSON lines name it, text lines begin with "session ID: " (a server hosting several sessions on
/// one thread, lockstep-server --sessions). `id` must outlive the scope.
class LOCKSTEP_API LogSessionScope {
 public:
  explicit LogSessionScope(const std::string& id);
  ~LogSessionScope();
  LogSessionScope(const LogSessionScope&) = delete;
  LogSessionScope& operator=(const LogSessionScope&) = delete;

 private:
  const std::string* previous_;
};
/// log() from a source file, whose name (without folder, extension or "server_") is the line's
/// event kind in the JSON format unless a LogScope names one. The LOCKSTEP_LOG_ macros call it.
LOCKSTEP_API void log_from(LogLevel level, const char* file, const char* fmt, ...) __attribute__((format(printf, 3, 4)));
/// Sends stdout (the machine-readable summary) to `path` when it is not empty; false (logged) if it cannot.
LOCKSTEP_API bool redirect_summary(const std::string& path);

#define LOCKSTEP_LOG_INFO(...) ::lockstep::log_from(::lockstep::LogLevel::Info, __FILE__, __VA_ARGS__)
#define LOCKSTEP_LOG_WARN(...) ::lockstep::log_from(::lockstep::LogLevel::Warn, __FILE__, __VA_ARGS__)
#define LOCKSTEP_LOG_ERROR(...) ::lockstep::log_from(::lockstep::LogLevel::Error, __FILE__, __VA_ARGS__)

}  // namespace lockstep
