#include "lockstep/log.hpp"

#include <cstdarg>
#include <cerrno>
#include <cstdio>
#include <cstring>

namespace lockstep {
namespace {
const char* g_program = "lockstep";
LogLevel g_level = LogLevel::Info;
LogSink g_sink = nullptr;
void* g_sink_user = nullptr;
}  // namespace

void set_log_sink(LogSink sink, void* user) {
  g_sink = sink;
  g_sink_user = user;
}

void log_setup(const char* program, LogLevel level) {
  g_program = program;
  g_level = level;
}

void log(LogLevel level, const char* fmt, ...) {
  if (level < g_level) return;
  static const char* const names[] = {"debug", "info", "warn", "error"};
  char line[1024];
  va_list args;
  va_start(args, fmt);
  std::vsnprintf(line, sizeof line, fmt, args);
  va_end(args);
  if (g_sink) return g_sink(level, line, g_sink_user);
  std::fprintf(stderr, "%s: %s: %s\n", g_program, names[static_cast<int>(level)], line);
}

bool redirect_summary(const std::string& path) {
  if (path.empty() || std::freopen(path.c_str(), "w", stdout)) return true;
  log(LogLevel::Error, "cannot write --summary %s: %s", path.c_str(), std::strerror(errno));
  return false;
}

}  // namespace lockstep
