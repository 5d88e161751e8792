// The web build's transport (web_transport.cpp): the client session's network is the browser's
// WebSocket to the server's WebSocket door.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// wss:// (a page served over https) or ws://, for the connections made from now on.
void set_web_secure(bool secure);
/// Whether connections from now on offer the server a data channel for play (default on).
void set_web_datagrams(bool datagrams);
/// What play goes over now, in words: "datagrams (WebRTC data channel)", or "WebSocket (why)".
std::string web_play_path();
/// Play messages sent and received over data channels, all connections together.
std::uint64_t web_datagrams_sent();
std::uint64_t web_datagrams_received();

}  // namespace lockstep
