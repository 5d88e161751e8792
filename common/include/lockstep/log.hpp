// Logging to stderr, one line per event, with the program's name in front.
#pragma once

#include <string>

namespace lockstep {

enum class LogLevel { Debug = 0, Info = 1, Warn = 2, Error = 3 };

/// Sets the name printed before every line and the lowest level printed.
void log_setup(const char* program, LogLevel level = LogLevel::Info);
void log(LogLevel level, const char* fmt, ...) __attribute__((format(printf, 2, 3)));
/// Sends stdout (the machine-readable summary) to `path` when it is not empty; false (logged) if it cannot.
bool redirect_summary(const std::string& path);

#define LOCKSTEP_LOG_INFO(...) ::lockstep::log(::lockstep::LogLevel::Info, __VA_ARGS__)
#define LOCKSTEP_LOG_WARN(...) ::lockstep::log(::lockstep::LogLevel::Warn, __VA_ARGS__)
#define LOCKSTEP_LOG_ERROR(...) ::lockstep::log(::lockstep::LogLevel::Error, __VA_ARGS__)

}  // namespace lockstep
