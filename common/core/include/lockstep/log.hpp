// Logging, one line per event. By default a line goes to stderr with the program's name in
// front; a game that embeds the library installs its own sink (netcode's set_printf_function)
// and gets every line the library logs, with its level.
#pragma once

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
/// Sends stdout (the machine-readable summary) to `path` when it is not empty; false (logged) if it cannot.
LOCKSTEP_API bool redirect_summary(const std::string& path);

#define LOCKSTEP_LOG_INFO(...) ::lockstep::log(::lockstep::LogLevel::Info, __VA_ARGS__)
#define LOCKSTEP_LOG_WARN(...) ::lockstep::log(::lockstep::LogLevel::Warn, __VA_ARGS__)
#define LOCKSTEP_LOG_ERROR(...) ::lockstep::log(::lockstep::LogLevel::Error, __VA_ARGS__)

}  // namespace lockstep
