// The session events' names, as logs and the C API's events give them (session_event.hpp).
#include "lockstep/session_event.hpp"

namespace lockstep {

const char* to_string(SessionEvent::Kind k) {
  switch (k) {
    case SessionEvent::Kind::Joined: return "joined";
    case SessionEvent::Kind::Started: return "started";
    case SessionEvent::Kind::PlayerJoined: return "player_joined";
    case SessionEvent::Kind::PlayerLeft: return "player_left";
    case SessionEvent::Kind::Desync: return "desync";
    case SessionEvent::Kind::Resynced: return "resynced";
    case SessionEvent::Kind::Kicked: return "kicked";
    case SessionEvent::Kind::Ended: return "ended";
  }
  return "?";
}

}  // namespace lockstep
