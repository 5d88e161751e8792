// The web build's transport (web_transport.cpp): the client session's network is the browser's
// WebSocket to the server's WebSocket door.
#pragma once

namespace lockstep {

/// wss:// (a page served over https) or ws://, for the connections made from now on.
void set_web_secure(bool secure);

}  // namespace lockstep
