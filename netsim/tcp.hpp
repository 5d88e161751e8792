// lockstep-netsim --tcp: the same faults on TCP connections (a browser's WebSocket), as a TCP
// connection meets them: delay and jitter on every chunk, order kept; a lost segment is resent by
// the sender a round trip later (fast retransmit), and everything behind it waits (head-of-line
// blocking). Duplicates and reordering never reach a TCP reader and do not apply.
#pragma once

#include <netinet/in.h>

#include <cstdint>

#include "lockstep/faults.hpp"
#include "lockstep/json.hpp"

namespace lockstep::netsim {

/// Relays TCP connections accepted on `listener` (listening) to `server` until a stop signal or
/// `stop_at`; returns the summary (connections, bytes and chunks each way, chunks lost and resent).
Json relay_tcp(const FaultConfig& faults, int listener, const sockaddr_in& server, std::int64_t stop_at);

}  // namespace lockstep::netsim
