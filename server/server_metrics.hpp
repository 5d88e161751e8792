// The server's figures for an operator: Prometheus' text format for /metrics, and the answers of
// /healthz and /readyz. The tick
// loop publishes a view of its session once a second; a scrape, on the ops port's thread, reads
// the latest one. The tick loop never waits for a scrape: the two share one pointer swapped under
// a lock held only for the swap, and the loop writes into a spare view no scrape holds (no
// allocation once both exist).
#pragma once

#include <cstdint>
#include <memory>
#include <mutex>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/histogram.hpp"
#include "lockstep/net_types.hpp"
#include "lockstep/server_session.hpp"
#include "ops_http.hpp"

namespace lockstep {

/// What the tick loop publishes: its session's figures at one moment.
struct ServerView {
  std::int64_t at_ns = 0;  ///< monotonic time it was taken
  ServerStats stats;
  NetTraffic traffic;
  DoorStats door;
  std::vector<SeatStatus> seats;
  std::uint64_t localized = 0;  ///< desync reports localized to a tick and fields
  std::uint32_t players = 0, peak_peers = 0;
  Tick tick = 0;
  bool started = false, finished = false, accepting = false, draining = false;
  Histogram update_duration;  ///< updates that executed ticks: their wall time, microseconds
};

class ServerMetrics {
 public:
  /// Published at most this often (Prometheus scrapes every 15 s by default).
  static constexpr std::int64_t kPublishNs = 1'000'000'000;
  /// /healthz fails when the tick loop has published nothing for this long (a loop that hangs).
  static constexpr std::int64_t kStaleNs = 5'000'000'000;

  /// `session_id` and `mode` ("simulation" or "relay") label lockstep_info.
  ServerMetrics(std::string session_id, std::string module, bool relay);

  /// The tick loop, after every update: how long it took and whether it executed ticks. Publishes
  /// a new view every kPublishNs, and at once when `force` (the session ended, a drain began).
  void observe(const ServerSession& session, std::int64_t now, std::int64_t update_ns, bool ticked, bool draining,
               bool force = false);

  /// Any thread: the answer to GET `path` (/metrics, /healthz, /readyz; 404 otherwise) at `now`.
  [[nodiscard]] OpsReply answer(std::string_view path, std::int64_t now, const OpsHttpStats& ops) const;
  /// The text exposition of the latest view.
  [[nodiscard]] std::string text(std::int64_t now, const OpsHttpStats& ops) const;

  /// A process hosting several sessions (lockstep-server --sessions): one ops port for them all.
  /// /metrics gives each family once, its samples from every session, each labelled with its
  /// session (as lockstep_info names it); the ops port's own counters once, unlabelled. /healthz is
  /// ok while every session's loop publishes; /readyz is ready while any session admits players,
  /// and names each session's state.
  [[nodiscard]] static OpsReply answer_all(const std::vector<const ServerMetrics*>& sessions, std::string_view path,
                                           std::int64_t now, const OpsHttpStats& ops);
  /// Expositions of several sessions merged as answer_all's /metrics gives them: `texts[i]` is
  /// session `ids[i]`'s text(). Pure.
  [[nodiscard]] static std::string merge(const std::vector<std::string>& ids, const std::vector<std::string>& texts);

 private:
  [[nodiscard]] std::shared_ptr<const ServerView> latest() const;
  void publish(const ServerSession& session, std::int64_t now, bool draining);

  std::string session_id_, module_;
  bool relay_;
  Histogram update_duration_;
  std::int64_t next_publish_ = 0;
  mutable std::mutex mutex_;
  std::shared_ptr<const ServerView> latest_;
  std::shared_ptr<ServerView> spare_;  // the view before the latest, written again once no scrape holds it
};

}  // namespace lockstep
