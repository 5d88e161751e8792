// The embedding API's host (host.hpp): a ServerSession and its changes as events.
#include "lockstep/host.hpp"

namespace lockstep {

std::unique_ptr<Host> Host::create(const ServerConfig& config, Error* error) {
  auto session = ServerSession::create(config, error);
  if (!session) return nullptr;
  return std::unique_ptr<Host>(new Host(std::move(session)));
}

std::int64_t Host::update(std::int64_t now_ns) { return session_->update(now_ns); }

std::vector<SessionEvent> Host::take_events() {
  std::vector<SessionEvent> out;
  const Tick tick = session_->executed_tick();
  // Seats taken since the last look (a rejoin is a join of the same name).
  const std::vector<std::string> names = session_->player_names();
  if (names_.size() < names.size()) names_.resize(names.size());
  for (std::size_t s = 0; s < names.size(); ++s) {
    if (!names[s].empty() && names[s] != names_[s])
      out.push_back({SessionEvent::Kind::PlayerJoined, tick, static_cast<std::int32_t>(s), names[s], "", 0});
    names_[s] = names[s];
  }
  const auto& departures = session_->departures();
  for (; departures_seen_ < departures.size(); ++departures_seen_) {
    const Departure& d = departures[departures_seen_];
    out.push_back({SessionEvent::Kind::PlayerLeft, d.tick, static_cast<std::int32_t>(d.slot), d.name, d.reason, 0});
    if (d.slot < names_.size()) names_[d.slot].clear();
  }
  const auto& reports = session_->reports();
  for (; reports_seen_ < reports.size(); ++reports_seen_) {
    const DesyncReport& r = reports[reports_seen_];
    std::string detail = r.where == "entity" && !r.server_fields.empty()
                             ? "entity " + std::to_string(r.entity) + " field " + r.server_fields[0].name
                             : r.where + (r.note.empty() ? "" : ": " + r.note);
    if (!r.odd_one_out.empty()) detail += "; odd one out: " + r.odd_one_out;
    out.push_back({SessionEvent::Kind::Desync, r.tick, r.slot, r.name, detail, 3});
  }
  if (!ended_ && session_->finished()) {
    ended_ = true;
    out.push_back({SessionEvent::Kind::Ended, tick, -1, "", "the session is over", session_->exit_code()});
  }
  return out;
}

}  // namespace lockstep
