// Records a server's session as a replay file while it runs: the header at the first executed
// tick (the roster is known then), every tick's frame and hash after it, the end record at close.
#pragma once

#include <string>

#include "lockstep/replay.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep {

class SessionRecorder {
 private:
  ServerSession& session_;
  std::string path_;
  std::string module_;
  ReplayWriter writer_;
  bool failed_ = false;

 public:
  /// Hooks into `session`'s ticks (it must outlive the recorder); writes to `path`.
  SessionRecorder(ServerSession& session, std::string path, std::string module_name);
  /// Writes the end record: the session's last tick, and "desync" or "complete".
  void close();
  /// The file could not be written (reported once in the log).
  [[nodiscard]] bool failed() const { return failed_; }
};

}  // namespace lockstep
