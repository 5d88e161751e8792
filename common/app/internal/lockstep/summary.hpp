// The JSON documents the stock executables print: the server's and a client's end-of-session
// summaries, and a server's status reply. One place, one JSON library (json.hpp).
#pragma once

#include "lockstep/client_session.hpp"
#include "lockstep/histogram.hpp"
#include "lockstep/json.hpp"
#include "lockstep/protocol.hpp"
#include "lockstep/server_session.hpp"

namespace lockstep {

/// A figure to a sensible precision rather than every bit of a double.
double round_to(double v, int decimals);
/// One player's network figures (the server summary's and the status reply's "seats").
Json seat_json(const protocol::SeatStatus& seat);
/// A server's answer to --status.
Json status_json(const protocol::Status& status);
/// The server's summary after its session; `cpu_us_per_tick`: its process's CPU per tick in play.
Json server_summary(const ServerSession& session, double cpu_us_per_tick);

/// What the client's frame loop measured about its drawn frames.
struct FrameFigures {
  std::uint64_t frames = 0;
  Histogram jitter;  ///< |frame interval - frame period|, microseconds
  std::uint64_t commands_dropped = 0;  ///< commands the controls issued beyond what one tick carries
};
/// A client's summary after its session.
Json client_summary(const ClientSession& session, const FrameFigures& frames);

}  // namespace lockstep
