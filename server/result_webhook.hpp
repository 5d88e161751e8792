// Posts the session's result to a backend (lockstep-server --result-webhook URL), with libcurl:
// in a thread of its own, so nothing waits on a backend that hangs. Each try has a timeout; a try
// that fails (no connection, no answer in time, a status other than 2xx) is retried after a
// pause that doubles, and every outcome is logged. Every try carries the same Idempotency-Key
// (derived from the document), so a backend that took a try whose answer was lost can tell the
// retry is the same result. The whole is bounded: tries x timeout + the pauses (23.5 s by default). A part of the server executable alone, so a
// game that links lockstep never links libcurl.
#pragma once

#include <atomic>
#include <string>
#include <thread>

namespace lockstep {

class ResultWebhook {
 public:
  struct Config {
    std::string url;
    int tries = 4;                    ///< the first and up to three retries
    long timeout_ms = 5000;           ///< per try, connecting included
    long first_pause_ms = 500;        ///< before the first retry; doubles each time
  };
  explicit ResultWebhook(Config config) : config_(std::move(config)) {}
  ~ResultWebhook();
  ResultWebhook(const ResultWebhook&) = delete;
  ResultWebhook& operator=(const ResultWebhook&) = delete;

  /// Starts posting `json` (Content-Type: application/json) in the background.
  void post(std::string json);
  /// The Idempotency-Key every try of posting `json` carries: 32 hex digits of BLAKE2b-128 of it.
  static std::string idempotency_key(const std::string& json);
  /// Waits until the posting has ended (at most the tries' timeouts and pauses); true when a try
  /// was answered with 2xx.
  bool finish();

 private:
  void run(std::string json);
  Config config_;
  std::thread thread_;
  std::atomic<bool> delivered_{false};
};

}  // namespace lockstep
