// Records a server's session as a replay file while it runs: the header at the first executed
// tick (the roster is known then), every tick's frame and hash after it, a keyframe of the
// server's world at the interval (in relay mode, each keyframe a voter sent the server, checked
// against the settled hash), the end record at close.
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
  std::uint32_t keyframe_interval_ = 0;
  std::vector<std::uint8_t> state_;  // the keyframe's bytes, reused
  Tick last_keyframe_ = 0;
  void hook_keyframes();

 public:
  /// Hooks into `session`'s ticks (it must outlive the recorder); writes to `path`, with a
  /// keyframe every `keyframe_interval` ticks (0: none).
  SessionRecorder(ServerSession& session, std::string path, std::string module_name,
                  std::uint32_t keyframe_interval = kDefaultKeyframeInterval);
  /// Writes the end record: the session's last tick, and "desync" or "complete".
  void close();
  /// The file could not be written (reported once in the log).
  [[nodiscard]] bool failed() const { return failed_; }
};

}  // namespace lockstep
