// A server's session recorded as a replay file while it runs (session_recorder.hpp).
#include "lockstep/session_recorder.hpp"

#include "lockstep/log.hpp"
#include "lockstep/version.hpp"

namespace lockstep {

SessionRecorder::SessionRecorder(ServerSession& session, std::string path, std::string module_name,
                                 std::uint32_t keyframe_interval)
    : session_(session), path_(std::move(path)), module_(std::move(module_name)), keyframe_interval_(keyframe_interval) {
  if (!session_.simulation()) hook_keyframes();
  session_.on_tick([this](const InputFrame& frame, std::uint64_t hash) {
    if (!writer_.is_open() && !failed_) {
      ReplayHeader h;
      h.protocol_version = kProtocolVersion;
      h.fingerprint = session_.world_fingerprint();
      h.world = session_.config().world;
      h.input_size = session_.input_size();
      h.module = module_;
      h.libraries = session_.config().libraries;
      h.input_delay = session_.config().input_delay;
      h.start_tick = frame.tick - 1;
      h.names = session_.player_names();
      h.keyframe_interval = session_.simulation() ? keyframe_interval_ : session_.config().relay_keyframe_interval;
      std::string err;
      if (!writer_.open(path_, h, &err)) {
        LOCKSTEP_LOG_ERROR("--record: %s", err.c_str());
        failed_ = true;
      }
    }
    if (!writer_.is_open()) return;
    writer_.add(frame, hash);
    const Simulation* sim = session_.simulation();
    if (sim && writer_.keyframe_due(frame.tick) && sim->tick() == frame.tick) {
      state_.clear();
      sim->serialize(state_);
      writer_.add_keyframe(frame.tick, hash, state_);
    }
  });
}

void SessionRecorder::hook_keyframes() {
  // Relay mode: keyframes come from the voters, checked against the settled hash, a little after
  // their tick was recorded.
  session_.on_keyframe([this](Tick t, std::uint64_t hash, std::span<const std::uint8_t> state) {
    if (!writer_.is_open() || t <= last_keyframe_) return;
    last_keyframe_ = t;
    writer_.add_keyframe(t, hash, state);
  });
}

void SessionRecorder::close() {
  if (writer_.is_open()) writer_.close(session_.executed_tick(), session_.exit_code() == 3 ? "desync" : "complete");
}

}  // namespace lockstep
