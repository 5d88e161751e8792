// Logging: a line per event to stderr (text or JSON) or to a game's sink (log.hpp).
#include "lockstep/log.hpp"

#include <cerrno>
#include <cstdarg>
#include <cstdio>
#include <cstring>
#include <ctime>
#include <string_view>

#include "lockstep/json.hpp"

namespace lockstep {
namespace {
const char* g_program = "lockstep";
LogLevel g_level = LogLevel::Info;
LogFormat g_format = LogFormat::Text;
std::string g_session;
LogSink g_sink = nullptr;
void* g_sink_user = nullptr;
// What this thread's lines name (the JSON format).
thread_local std::int64_t t_tick = -1;
thread_local int t_slot = -1;
thread_local const char* t_event = nullptr;
thread_local const std::string* t_session = nullptr;  // a LogSessionScope's, over g_session

const char* const kLevelNames[] = {"debug", "info", "warn", "error"};

// "common/session/src/server_admission.cpp" -> "admission".
std::string_view kind_of(const char* file) {
  std::string_view f = file ? file : "";
  if (const auto slash = f.find_last_of('/'); slash != std::string_view::npos) f.remove_prefix(slash + 1);
  if (const auto dot = f.find('.'); dot != std::string_view::npos) f = f.substr(0, dot);
  if (f.rfind("server_", 0) == 0 && f.size() > 7) f.remove_prefix(7);
  return f;
}

std::string json_line(LogLevel level, std::string_view kind, const char* line) {
  char when[40];
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);  // the log's own wall clock: never the simulation's
  tm utc{};
  gmtime_r(&ts.tv_sec, &utc);
  const std::size_t n = std::strftime(when, sizeof when, "%Y-%m-%dT%H:%M:%S", &utc);
  std::snprintf(when + n, sizeof when - n, ".%03ldZ", ts.tv_nsec / 1'000'000);
  Json j = Json::object();
  j["time"] = when;
  j["level"] = kLevelNames[static_cast<int>(level)];
  j["program"] = g_program;
  const std::string& session = t_session ? *t_session : g_session;
  j["session"] = session.empty() ? Json(nullptr) : Json(session);
  j["tick"] = t_tick < 0 ? Json(nullptr) : Json(t_tick);
  j["slot"] = t_slot < 0 ? Json(nullptr) : Json(t_slot);
  j["event"] = t_event ? std::string(t_event) : kind.empty() ? std::string("log") : std::string(kind);
  j["message"] = line;
  return j.dump(-1, ' ', false, Json::error_handler_t::replace);
}

void vlog(LogLevel level, const char* file, const char* fmt, va_list args) {
  if (level < g_level) return;
  char line[1024];
  std::vsnprintf(line, sizeof line, fmt, args);
  if (g_sink) return g_sink(level, line, g_sink_user);
  if (g_format == LogFormat::JsonLines) {
    const std::string text = json_line(level, kind_of(file), line) + "\n";
    std::fwrite(text.data(), 1, text.size(), stderr);
    return;
  }
  if (t_session)
    std::fprintf(stderr, "%s: %s: session %s: %s\n", g_program, kLevelNames[static_cast<int>(level)], t_session->c_str(), line);
  else
    std::fprintf(stderr, "%s: %s: %s\n", g_program, kLevelNames[static_cast<int>(level)], line);
}
}  // namespace

void set_log_sink(LogSink sink, void* user) {
  g_sink = sink;
  g_sink_user = user;
}

void log_setup(const char* program, LogLevel level) {
  g_program = program;
  g_level = level;
}

void set_log_format(LogFormat format) { g_format = format; }
void set_log_session(const std::string& id) { g_session = id; }
void set_log_tick(std::uint32_t tick) { t_tick = tick; }

LogSessionScope::LogSessionScope(const std::string& id) : previous_(t_session) { t_session = &id; }
LogSessionScope::~LogSessionScope() { t_session = previous_; }

LogScope::LogScope(int slot, const char* event) : slot_(t_slot), event_(t_event) {
  t_slot = slot;
  if (event) t_event = event;
}
LogScope::~LogScope() {
  t_slot = slot_;
  t_event = event_;
}

void log(LogLevel level, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(level, nullptr, fmt, args);
  va_end(args);
}

void log_from(LogLevel level, const char* file, const char* fmt, ...) {
  va_list args;
  va_start(args, fmt);
  vlog(level, file, fmt, args);
  va_end(args);
}

bool redirect_summary(const std::string& path) {
  if (path.empty() || std::freopen(path.c_str(), "w", stdout)) return true;
  log(LogLevel::Error, "cannot write --summary %s: %s", path.c_str(), std::strerror(errno));
  return false;
}

}  // namespace lockstep
