// The Agones game-server SDK over its local REST endpoints (the sidecar in the pod), with libcurl
// (the result webhook's HTTP client too): POST /ready when the server listens, /health while it
// runs, /shutdown when the session ends; GET /gameserver for the match's token key an allocation
// hands it (--token-key agones). A part of the server executable alone, as the webhook is.
#pragma once

#include <cstddef>
#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "lockstep/connect_token.hpp"

namespace lockstep {

/// How often a server started with --agones pings /health (milliseconds). The manifests'
/// `health.periodSeconds` must be longer than this (docker/agones/check.py checks it).
inline constexpr std::int64_t kAgonesHealthPeriodMs = 2000;
/// How often Ready is retried until the sidecar takes it (milliseconds).
inline constexpr std::int64_t kAgonesReadyRetryMs = 500;
/// The annotation an allocation sets to hand a server its match's token key (64 hex digits), and
/// how often a server started with --token-key agones looks for it (milliseconds).
inline constexpr const char* kAgonesTokenKeyAnnotation = "lockstep.dev/token-key";
inline constexpr std::int64_t kAgonesKeyPollMs = 250;
/// The annotation a server sets to hand its backend the session's result (its JSON, compact).
inline constexpr const char* kAgonesResultAnnotation = "lockstep.dev/result";

class AgonesSdk {
 public:
  /// The sidecar's port: AGONES_SDK_HTTP_PORT from the environment, else 9358.
  static std::uint16_t port_from_env();
  explicit AgonesSdk(std::uint16_t port) : port_(port) {}

  bool ready() { return post("/ready"); }
  bool health() { return post("/health"); }
  bool shutdown() { return post("/shutdown"); }
  /// What an allocation handed this GameServer (GET /gameserver): the annotation `name` ("" when
  /// it is not there yet, or the sidecar does not answer) and the address players reach it at
  /// (status.address and its first port; port 0 when unknown).
  struct Allocation {
    std::string annotation;
    TokenAddress address;
  };
  Allocation allocation(const std::string& annotation_name);
  /// Sets an annotation on the GameServer (PUT /metadata/annotation): what the fleet's backend reads.
  bool set_annotation(const std::string& key, const std::string& value);

 private:
  static constexpr long kRequestTimeoutMs = 300;
  static constexpr std::size_t kMaxAnswerBytes = 64 * 1024;
  /// One HTTP/1.1 request to 127.0.0.1 with `send_body` as its JSON body (POST and PUT); true on a 2xx
  /// answer within kRequestTimeoutMs, its body (at most kMaxAnswerBytes) into `body` when given.
  bool request(const char* method, const char* path, std::string* body, const std::string& send_body = "{}");
  bool post(const char* path) { return request("POST", path, nullptr); }
  std::uint16_t port_;
};

/// The schedule a game server keeps with the sidecar: Ready (retried every kAgonesReadyRetryMs
/// until it is taken), then Health every kAgonesHealthPeriodMs, and Shutdown at the end.
class AgonesHeartbeat {
 private:
  AgonesSdk sdk_;
  bool ready_ = false;
  std::int64_t next_ = 0;

 public:
  AgonesHeartbeat(std::uint16_t port, std::int64_t now) : sdk_(port) {
    ready_ = sdk_.ready();
    schedule(now);
  }
  /// Does what is due at `now`; returns when the next call is due.
  std::int64_t update(std::int64_t now) {
    if (now >= next_) {
      if (!ready_) ready_ = sdk_.ready();
      else sdk_.health();  // a localhost call, well under a millisecond
      schedule(now);
    }
    return next_;
  }
  void shutdown() { sdk_.shutdown(); }
  bool set_annotation(const std::string& key, const std::string& value) { return sdk_.set_annotation(key, value); }
  /// Looks for the match's token key in the GameServer's annotations (at most every
  /// kAgonesKeyPollMs); once it is there and well formed, the key and the address the GameServer
  /// is reached at (a Dynamic port policy maps the container's port to another on the node).
  struct MatchKey {
    SecretKey key;
    std::vector<TokenAddress> addresses;  ///< empty when the status names none
  };
  std::optional<MatchKey> poll_token_key(std::int64_t now) {
    if (now < next_key_poll_) return std::nullopt;
    next_key_poll_ = now + kAgonesKeyPollMs * 1'000'000;
    const AgonesSdk::Allocation a = sdk_.allocation(kAgonesTokenKeyAnnotation);
    MatchKey m;
    if (a.annotation.empty() || !parse_key_hex(a.annotation, &m.key)) return std::nullopt;
    if (a.address.port != 0) m.addresses.push_back(a.address);
    return m;
  }

 private:
  std::int64_t next_key_poll_ = 0;
  void schedule(std::int64_t now) { next_ = now + (ready_ ? kAgonesHealthPeriodMs : kAgonesReadyRetryMs) * 1'000'000; }
};

}  // namespace lockstep
