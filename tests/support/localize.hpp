// Localizes the divergence between two states of one simulation the way a session does, question
// by question, without a network: `server` is the reference, `client` the diverged one.
#pragma once

#include <doctest/doctest.h>

#include "lockstep/desync_probe.hpp"

namespace lockstep::testing {

inline DesyncReport localize(Simulation& server, Simulation& client) {
  DesyncReport base;
  base.tick = server.tick();
  DesyncLocalizer loc;
  auto outcome = loc.start(base, &server, 0);
  while (outcome == DesyncLocalizer::Outcome::Ask) {
    ProbeAnswer ans;
    REQUIRE(answer_probe(loc.question(), &client, &ans));
    outcome = loc.answer(ans, 0, &server);
  }
  return loc.report();
}

}  // namespace lockstep::testing
