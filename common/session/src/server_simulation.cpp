// The server's own copy of the simulation (server_simulation.hpp).
#include "server_simulation.hpp"

#include <algorithm>
#include <string>

#include "lockstep/module.hpp"

namespace lockstep {

std::unique_ptr<ServerSimulation> ServerSimulation::create(const WorldFactory& factory, const WorldParams& world,
                                                           std::size_t history, Error* error) {
  auto fail = [&](const std::string& why) -> std::unique_ptr<ServerSimulation> {
    if (error) *error = {ErrorKind::Usage, why, ""};
    return nullptr;
  };
  std::unique_ptr<ServerSimulation> s(new ServerSimulation());
  s->sim_ = factory(world);
  if (world.settings.size() > kMaxSettingsBytes)
    return fail("the world settings are over " + std::to_string(kMaxSettingsBytes) + " bytes");
  if (!s->sim_) return fail("the simulation cannot build a world of these settings and players");
  if (s->sim_->input_size() > kMaxInputBytes)
    return fail("the simulation's input size is over " + std::to_string(kMaxInputBytes) + " bytes");
  s->hashes_[0] = s->sim_->hash();
  // Clients know only the module before the welcome: they present its default world's fingerprint.
  s->join_fingerprint_ = lockstep::join_fingerprint(factory);
  if (s->join_fingerprint_ == 0) s->join_fingerprint_ = s->sim_->fingerprint();
  s->history_ = StateHistory(std::max<std::size_t>(1, history));
  s->history_.record(*s->sim_);
  s->scratch_ = s->sim_->clone();
  return s;
}

std::uint64_t ServerSimulation::step(const InputFrame& frame) {
  sim_->step(frame);
  const std::uint64_t h = sim_->hash();
  history_.record(*sim_);
  hashes_[frame.tick % kHistory] = h;
  return h;
}

const Simulation* ServerSimulation::state_at(Tick t) { return history_.load(t, *scratch_) ? scratch_.get() : nullptr; }

std::size_t ServerSimulation::fit(std::int64_t rtt_ns, std::size_t minimum, std::size_t maximum) {
  const std::size_t want = history_for_round_trip(rtt_ns, minimum, maximum);
  if (want > history_.capacity() || 2 * want < history_.capacity()) history_.resize(want);
  return history_.capacity();
}

}  // namespace lockstep
