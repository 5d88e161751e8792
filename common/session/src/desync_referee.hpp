// The desync referee: each peer's record (its hashes, a join being verified, a desync being
// localized, its resyncs), who reported which hash for each recent tick, and the desync reports
// that wait for their tick's votes before they are decided by majority, written and kept. One part of
// ServerSession: it knows peers only by id and label, and nothing of sockets or clocks (times
// are passed in). The reference hash of a tick is handed to it (the server's own, from
// ServerSimulation), so the same ledger serves a session that settles ticks otherwise.
#pragma once

#include <climits>
#include <cstdint>
#include <functional>
#include <map>
#include <string>
#include <utility>
#include <vector>

#include "lockstep/desync.hpp"
#include "lockstep/desync_bundle.hpp"
#include "lockstep/desync_probe.hpp"
#include "lockstep/hash_ledger.hpp"
#include "lockstep/input.hpp"
#include "peer_records.hpp"

namespace lockstep {

/// The referee's record of a peer: its hashes, a join being verified, a desync being localized,
/// and its resyncs (server_referee.cpp).
struct PeerAudit {
  HashLedger hashes;           // its state hashes, compared with the reference
  bool verifying = false;      // joined a running session: not counted until a hash matches
  Tick verify_tick = 0;        // the snapshot's tick
  bool desynced = false;
  std::int64_t last_report_at = INT64_MIN / 2;  // when its last desync report was started
  DesyncLocalizer probe;       // the desync being localized, one question at a time
  bool probe_pinned = false;   // the server's state of the probe's tick is pinned in the history
  std::string kick_after_probe;  // a rejoin whose state did not match: kicked with this once reported
  std::uint32_t epoch = 0;     // resyncs sent; hashes from older epochs are stale
  std::int64_t resync_at = 0;  // when the last resync snapshot went out
  std::uint32_t resync_tries = 0;  // snapshots sent since its last hash of the current epoch
  std::uint32_t resyncs = 0;       // resyncs started for it (ServerConfig::max_resyncs)
};

class DesyncReferee {
 public:
  /// The record of the peer at index `peer` (peer_records.hpp: made on first use, fresh for an index not in use).
  PeerAudit& audit(std::uint32_t peer) { return audits_[peer]; }
  [[nodiscard]] const PeerAudit& audit(std::uint32_t peer) const { return audits_.get(peer); }
  /// A peer gone: its record goes (its label and episode stay, for the reports that name it).
  void forget(std::uint32_t peer) { audits_.forget(peer); }

  static constexpr std::size_t kHistory = HashLedger::kHistory;  ///< ticks whose votes are kept

  /// A localized desync waiting for the other peers' hashes of its tick.
  struct Pending {
    std::uint32_t peer_id = 0;
    DesyncReport report;
    std::int64_t since = 0;
    std::string kick_reason;  ///< a join whose state did not match: closed once reported
    bool split = false;       ///< no strict majority settled its tick: reported, nobody resynced
    std::vector<BundleState> states{};  ///< the server's states at the tick and before, for its bundle
  };

  /// Who holds the reference hash in reports: "server" (its own world, a voter too), or "" for a
  /// server without the simulation, whose reference is the voters' majority and which is no voter.
  void set_reference_voter(std::string name) { reference_voter_ = std::move(name); }

  /// Records peer `peer`'s hash of tick t against `reference`, the settled hash of that tick;
  /// true when they are equal. Votes of a tick older than kHistory ticks are forgotten.
  bool vote(std::uint32_t peer, Tick t, std::uint64_t theirs, std::uint64_t reference);
  /// Makes room in every tick's record for `voters` agreeing votes up front, so that voting
  /// never allocates while the ring fills (a differing vote, the rare one, still may).
  void reserve(std::size_t voters) {
    for (TickVotes& v : votes_) v.agree.reserve(voters);
  }
  /// Whether `peer` has its label yet ("player N (name)"), and gives it one: the name reports use.
  [[nodiscard]] bool labelled(std::uint32_t peer) const { return labels_.count(peer) != 0; }
  void set_label(std::uint32_t peer, std::string label) { labels_[peer] = std::move(label); }

  /// Fills r.votes (the reference's group first, with the reference voter when there is one) from
  /// tick r.tick's votes, and, with three or more voters and a strict majority, r.odd_one_out
  /// with everyone outside it.
  void decide(DesyncReport& r) const;

  /// Queues a report until its tick's votes are in.
  void queue(Pending p) { pending_.push_back(std::move(p)); }
  [[nodiscard]] bool has_pending() const { return !pending_.empty(); }
  /// Takes out, in the order they were queued, the reports whose votes are in (`votes_in(tick)`),
  /// those that waited `wait_ns` or more, or all of them with `force`.
  std::vector<Pending> take_ready(std::int64_t now, std::int64_t wait_ns, bool force,
                                  const std::function<bool(Tick)>& votes_in);

  /// Decides the report's majority, logs it, writes it under `dir` (desync-<tick>-<player>.json)
  /// and keeps it; returns the kept report. `bundle_path`: the bundle written beside it, named in
  /// the report ("" for none).
  const DesyncReport& record(DesyncReport r, const std::string& dir, const std::string& bundle_path = "");

  /// One report per episode: peer `peer`'s divergences found in the same place (where, entity,
  /// field) within kEpisodeGapNs of the one before belong to the report the first made; one in
  /// another place is a finding of its own. Whether `r`, found at `now`, continues an episode.
  static constexpr std::int64_t kEpisodeGapNs = 30'000'000'000;
  [[nodiscard]] bool continues_episode(std::uint32_t peer, const DesyncReport& r, std::int64_t now) const {
    const auto it = episodes_.find(peer);
    return it != episodes_.end() && now - it->second.last_ns < kEpisodeGapNs && it->second.place == place_of(r);
  }
  /// Starts an episode of `peer` at `now` with the report recorded last.
  void open_episode(std::uint32_t peer, std::int64_t now) {
    if (last_kept_) episodes_[peer] = {reports_.size() - 1, now, place_of(reports_.back())};
  }
  /// Folds a divergence of tick t into the peer's open episode (continues_episode() is true):
  /// its report counts it and is written again under `dir`. Returns that report.
  /// (`collusion`: the peer's possible-collusion sentence, when there is one by now.)
  const DesyncReport& repeat(std::uint32_t peer, Tick t, std::int64_t now, const std::string& dir,
                             const std::string& collusion = "");
  /// Reports written at most; later ones are counted (unwritten()) and logged once.
  static constexpr std::size_t kMaxReports = 256;
  [[nodiscard]] std::uint64_t unwritten() const { return unwritten_; }
  /// A desync found (before it is localized); the first kMaxEvents are kept.
  static constexpr std::size_t kMaxEvents = 4096;
  void note(DesyncEvent e) {
    if (events_.size() < kMaxEvents) events_.push_back(std::move(e));
  }

  /// The reports written so far, in the order they were completed.
  [[nodiscard]] const std::vector<DesyncReport>& reports() const { return reports_; }
  /// Every desync found, in order.
  [[nodiscard]] const std::vector<DesyncEvent>& events() const { return events_; }

 private:
  struct TickVotes {
    Tick tick = 0;
    std::vector<std::uint32_t> agree;                              // peer ids
    std::vector<std::pair<std::uint32_t, std::uint64_t>> differ;  // peer id, its hash
  };
  PeerRecords<PeerAudit> audits_;
  std::vector<TickVotes> votes_ = std::vector<TickVotes>(kHistory);
  std::string reference_voter_ = "server";
  std::map<std::uint32_t, std::string> labels_;  // of every peer that voted; ordered for a fixed output
  std::vector<Pending> pending_;
  std::vector<DesyncReport> reports_;
  std::vector<DesyncEvent> events_;
  struct Episode {
    std::size_t report = 0;  // in reports_
    std::int64_t last_ns = 0;
    std::string place;       // place_of() its report
  };
  static std::string place_of(const DesyncReport& r) {
    return r.where + "/" + std::to_string(r.entity) + "/" + (r.server_fields.empty() ? "" : r.server_fields[0].name);
  }
  std::map<std::uint32_t, Episode> episodes_;  // by peer id
  std::uint64_t unwritten_ = 0;
  DesyncReport overflow_;  // the last report past kMaxReports (returned, not kept)
  bool last_kept_ = false;  // whether record() kept its report
};

}  // namespace lockstep
