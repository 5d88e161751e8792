// The Agones game-server SDK over its local REST endpoints (the sidecar in the pod):
// POST /ready when the server listens, /health while it runs, /shutdown when the session ends.
#pragma once

#include <cstdint>
#include <string>

namespace lockstep {

/// How often a server started with --agones pings /health (milliseconds). The manifests'
/// `health.periodSeconds` must be longer than this (docker/agones/check.py checks it).
inline constexpr std::int64_t kAgonesHealthPeriodMs = 2000;
/// How often Ready is retried until the sidecar takes it (milliseconds).
inline constexpr std::int64_t kAgonesReadyRetryMs = 500;

class AgonesSdk {
 public:
  /// The sidecar's port: AGONES_SDK_HTTP_PORT from the environment, else 9358.
  static std::uint16_t port_from_env();
  explicit AgonesSdk(std::uint16_t port) : port_(port) {}

  bool ready() { return post("/ready"); }
  bool health() { return post("/health"); }
  bool shutdown() { return post("/shutdown"); }

 private:
  /// One HTTP/1.1 POST with an empty JSON body to 127.0.0.1; true on a 2xx answer within 300 ms.
  bool post(const char* path);
  std::uint16_t port_;
};

}  // namespace lockstep
