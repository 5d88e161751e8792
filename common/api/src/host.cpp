// The embedding API's host (host.hpp): a ServerSession and its events.
#include "lockstep/host.hpp"

namespace lockstep {

std::unique_ptr<Host> Host::create(const ServerConfig& config, Error* error) {
  auto session = ServerSession::create(config, error);
  if (!session) return nullptr;
  return std::unique_ptr<Host>(new Host(std::move(session)));
}

std::int64_t Host::update(std::int64_t now_ns) { return session_->update(now_ns); }

std::vector<SessionEvent> Host::take_events() { return session_->take_events(); }

}  // namespace lockstep
