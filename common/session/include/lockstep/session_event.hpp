// What a session tells the game that runs it: the same events on both sides, so a game's
// handling reads alike whether it joins (ClientSession, Client) or hosts (ServerSession, Host).
#pragma once

#include <cstdint>
#include <string>

#include "lockstep/export.h"
#include "lockstep/input.hpp"

namespace lockstep {

/// Something that happened in the session, for the game's own handling (the stock client logs
/// them). Taken in order with ClientSession::take_events() and ServerSession::take_events().
struct LOCKSTEP_API SessionEvent {
  enum class Kind : std::uint8_t {
    Joined,         ///< the welcome: `slot` is ours (-1 a spectator), `detail` the rejoin secret
    Started,        ///< the session runs: ticks are sampled and executed from here
    PlayerJoined,   ///< `slot`, `name` came into the session (a rejoin too)
    PlayerLeft,     ///< `slot`, `name` left from `tick` on; `detail` why
    Desync,         ///< a desync at `tick`: on a client, ours (found by the server); on a host, `slot`'s
                    ///< (`detail` where it was localized, `code` 3)
    Resynced,       ///< the server's state of `tick` was loaded after a desync
    Kicked,         ///< the server dropped us: `detail` why
    Ended,          ///< the session is over: `code` the exit code, `detail` why
  };
  Kind kind = Kind::Started;
  Tick tick = 0;
  std::int32_t slot = -1;
  std::string name;
  std::string detail;
  int code = 0;
};
LOCKSTEP_API const char* to_string(SessionEvent::Kind k);

}  // namespace lockstep
