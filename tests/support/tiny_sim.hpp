// A second, tiny Simulation for the tests: players walk on a line. It keeps the interface
// honest (nothing above the simulation may depend on the arena) and is small enough to reason about.
#pragma once

#include <memory>

#include "lockstep/simulation.hpp"

namespace lockstep::testing {

std::unique_ptr<Simulation> make_tiny_sim(const WorldParams& params);

}  // namespace lockstep::testing
