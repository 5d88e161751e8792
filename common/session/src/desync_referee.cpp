// The desync referee (desync_referee.hpp): votes, majority, reports.
#include "desync_referee.hpp"

#include <algorithm>

#include "lockstep/log.hpp"

namespace lockstep {

bool DesyncReferee::vote(std::uint32_t peer, Tick t, std::uint64_t theirs, std::uint64_t reference) {
  TickVotes& v = votes_[t % kHistory];
  if (v.tick != t) {
    v.tick = t;
    v.agree.clear();
    v.differ.clear();
  }
  if (theirs == reference) {
    v.agree.push_back(peer);
    return true;
  }
  v.differ.emplace_back(peer, theirs);
  return false;
}

void DesyncReferee::decide(DesyncReport& r) const {
  const TickVotes& v = votes_[r.tick % kHistory];
  if (v.tick != r.tick) return;
  const auto label = [&](std::uint32_t id) {
    const auto it = labels_.find(id);
    return it != labels_.end() ? it->second : "peer " + std::to_string(id);
  };
  r.votes.clear();
  r.votes.push_back({r.server_hash, {}});
  if (!reference_voter_.empty()) r.votes[0].second.push_back(reference_voter_);
  for (const std::uint32_t id : v.agree) r.votes[0].second.push_back(label(id));
  for (const auto& [id, h] : v.differ) {
    auto it = std::find_if(r.votes.begin(), r.votes.end(), [h = h](const auto& g) { return g.first == h; });
    if (it == r.votes.end()) {
      r.votes.push_back({h, {}});
      it = r.votes.end() - 1;
    }
    it->second.push_back(label(id));
  }
  if (r.votes[0].second.empty()) r.votes.erase(r.votes.begin());  // no one holds the reference (a split tick)
  if (r.votes.empty()) return;
  std::size_t voters = 0, largest = 0;
  for (std::size_t i = 0; i < r.votes.size(); ++i) {
    voters += r.votes[i].second.size();
    if (r.votes[i].second.size() > r.votes[largest].second.size()) largest = i;  // ties: the reference's group, listed first
  }
  r.odd_one_out.clear();
  if (voters < 3 || 2 * r.votes[largest].second.size() <= voters) return;
  for (std::size_t i = 0; i < r.votes.size(); ++i) {
    if (i == largest) continue;
    for (const std::string& who : r.votes[i].second) r.odd_one_out += (r.odd_one_out.empty() ? "" : ", ") + who;
  }
}

std::vector<DesyncReferee::Pending> DesyncReferee::take_ready(std::int64_t now, std::int64_t wait_ns, bool force,
                                                              const std::function<bool(Tick)>& votes_in) {
  std::vector<Pending> ready;
  for (auto it = pending_.begin(); it != pending_.end();) {
    if (force || now - it->since >= wait_ns || votes_in(it->report.tick)) {
      ready.push_back(std::move(*it));
      it = pending_.erase(it);
    } else {
      ++it;
    }
  }
  return ready;
}

const DesyncReport& DesyncReferee::repeat(std::uint32_t peer, Tick t, std::int64_t now, const std::string& dir,
                                          const std::string& collusion) {
  Episode& e = episodes_.at(peer);
  e.last_ns = now;
  DesyncReport& r = reports_[e.report];
  if (!collusion.empty()) r.collusion = collusion;
  ++r.episode_divergences;
  r.episode_last_tick = std::max(r.episode_last_tick, t);
  // Logged when the count doubles: a peer diverging for a whole match leaves a few lines.
  if ((r.episode_divergences & (r.episode_divergences - 1)) == 0)
    LOCKSTEP_LOG_ERROR("desync at tick %u: %s diverged again, %u times since tick %u; counted in its report", t,
                       r.name.c_str(), r.episode_divergences, r.tick);
  std::string error;
  if (write_report(r, dir, &error).empty()) LOCKSTEP_LOG_ERROR("desync report: %s", error.c_str());
  return r;
}

const DesyncReport& DesyncReferee::record(DesyncReport r, const std::string& dir, const std::string& bundle_path) {
  decide(r);
  r.episode_last_tick = r.tick;
  if (reports_.size() >= kMaxReports) {
    // Files and memory bounded for any match: the report is logged and counted, not kept.
    if (unwritten_++ == 0)
      LOCKSTEP_LOG_ERROR("desync reports: %zu written; later ones are counted, not written", kMaxReports);
    LOCKSTEP_LOG_ERROR("desync at tick %u of %s: not written (%llu unwritten)", r.tick, r.name.c_str(),
                       static_cast<unsigned long long>(unwritten_));
    overflow_ = std::move(r);
    last_kept_ = false;
    return overflow_;
  }
  last_kept_ = true;
  r.bundle_file = bundle_path;
  if (!r.odd_one_out.empty()) {
    std::size_t voters = 0;
    for (const auto& g : r.votes) voters += g.second.size();
    LOCKSTEP_LOG_ERROR("desync at tick %u: by majority of %zu hashes the odd one out is %s", r.tick, voters,
                       r.odd_one_out.c_str());
  }
  std::string error;
  const std::string path = write_report(r, dir, &error);
  if (path.empty()) LOCKSTEP_LOG_ERROR("desync report: %s", error.c_str());
  if (!r.server_fields.empty())
    LOCKSTEP_LOG_ERROR("desync at tick %u localized: %s %lld field %s: server %s (%s), client %s (%s); %llu probe bytes, "
                       "state %llu bytes; report %s",
                       r.tick, r.where.c_str(), static_cast<long long>(r.entity), r.server_fields[0].name.c_str(),
                       field_hex(r.server_fields[0]).c_str(), field_decimal(r.server_fields[0]).c_str(),
                       field_hex(r.client_fields[0]).c_str(), field_decimal(r.client_fields[0]).c_str(),
                       static_cast<unsigned long long>(r.probe_bytes), static_cast<unsigned long long>(r.state_bytes),
                       path.c_str());
  else
    LOCKSTEP_LOG_ERROR("desync at tick %u not localized: %s; report %s", r.tick, r.note.c_str(), path.c_str());
  reports_.push_back(std::move(r));
  return reports_.back();
}

}  // namespace lockstep
