// The server's ops port: GET /metrics, /healthz and /readyz over HTTP/1.1, served by libwebsockets
// on a thread of its own, so that a scrape, a client that never reads or a flood of requests never
// runs on the tick loop's thread. Anything but GET is refused (405), unknown paths get 404, a
// malformed request 400; every connection has a deadline for the whole request and answer.
#pragma once

#include <atomic>
#include <cstdint>
#include <functional>
#include <memory>
#include <string>
#include <string_view>

namespace lockstep {

struct OpsHttpConfig {
  std::string bind;        ///< address to listen on ("" = all)
  std::uint16_t port = 0;  ///< TCP port (0: any free one)
  std::uint32_t max_connections = 32;  ///< open at once; past it, new ones wait in the kernel's backlog
  std::uint32_t deadline_seconds = 5;  ///< for a request and its answer, and for an idle kept-alive connection
};

/// An answer to GET `path`.
struct OpsReply {
  unsigned status = 200;
  std::string content_type = "text/plain; charset=utf-8";
  std::string body;
};

/// Requests answered, by outcome.
struct OpsHttpStats {
  std::uint64_t answered = 0;     ///< GETs of the known paths
  std::uint64_t not_found = 0;    ///< GETs of other paths (404)
  std::uint64_t not_allowed = 0;  ///< another method (405)
};

class OpsHttp {
 public:
  /// Answers GET `path` (without its query), given the port's counters so far; runs on the ops
  /// thread. Return status 404 for a path it does not serve.
  using Handler = std::function<OpsReply(std::string_view path, const OpsHttpStats& stats)>;
  /// Listens and starts the thread; nullptr with `error` set when the port cannot be opened.
  static std::unique_ptr<OpsHttp> start(const OpsHttpConfig& config, Handler handler, std::string* error);
  ~OpsHttp();
  OpsHttp(const OpsHttp&) = delete;
  OpsHttp& operator=(const OpsHttp&) = delete;

  [[nodiscard]] std::uint16_t port() const;
  [[nodiscard]] OpsHttpStats stats() const;

  struct Impl;

 private:
  explicit OpsHttp(std::unique_ptr<Impl> impl);
  std::unique_ptr<Impl> impl_;
};

}  // namespace lockstep
