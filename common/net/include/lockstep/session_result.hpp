// A session's result as a backend can trust it: what the players' games reported at the end (a
// winner, scores: bytes each game defines), settled by the same strict majority as the ticks,
// with the settled final hash, the seats and their connect tokens' client ids, and a MAC a
// backend checks with the key it minted the players' tokens with (docs/PROTOCOL.md §16).
//
// The MAC is HMAC-SHA-256 (libsodium's crypto_auth_hmacsha256) under a key derived from the
// token key (crypto_kdf, context "lkresult"), not an Ed25519 signature: the party that checks a
// result is the backend that minted the match's tokens and holds that key already, so no second
// key is handed out, and the server holds nothing it did not hold before. (A result a third party
// must check without being able to forge one would want Ed25519 and a key pair.)
#pragma once

#include <array>
#include <cstdint>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

#include "lockstep/connect_token.hpp"
#include "lockstep/export.h"
#include "lockstep/json.hpp"

namespace lockstep {

inline constexpr std::size_t kMaxResultBytes = 256;  ///< a game's result, at most

struct LOCKSTEP_API SessionResult {
  struct Seat {
    std::uint32_t slot = 0;
    std::string name;
    std::uint64_t client_id = 0;   ///< its connect token's (0: joined without one)
    bool reported = false;         ///< its game reported a result
    bool agreed = false;           ///< ... the settled one
    bool present = false;          ///< it played to the session's end (a seat that left has no say
                                   ///< unless every seat agrees)
    std::vector<std::uint8_t> claim;  ///< the result its game reported (empty: none)
    /// Relay mode: divergences in which this seat's hash lost to a settled majority, and whether
    /// the same other seats outvoted it ServerConfig's collusion threshold of times or more (an
    /// honest player outvoted by players who share other rules looks exactly so).
    std::uint32_t outvoted = 0;
    bool collusion_suspected = false;
  };
  std::uint64_t protocol_id = 0;
  std::uint32_t ticks = 0;           ///< the session's last executed tick
  std::uint32_t settled_tick = 0;    ///< the newest tick with a settled hash
  std::uint64_t final_hash = 0;      ///< its settled hash
  std::uint64_t issued_at = 0;       ///< Unix seconds
  std::vector<Seat> seats;           ///< in slot order
  std::vector<std::uint8_t> result;  ///< the settled bytes (empty when disputed: see each seat's claim)
  bool disputed = false;             ///< no claim held a strict majority of all the seats
  bool relay = false;                ///< settled without the simulation (relay mode)
  /// The match did not reach its end: the operator stopped it (a second SIGTERM, a drain's grace
  /// ran out). Its result bytes are what the players had reported by then.
  bool incomplete = false;
  std::optional<std::array<std::uint8_t, 32>> mac;  ///< unset: the server had no key
};

/// The key results are authenticated with, derived from the token key.
LOCKSTEP_API SecretKey result_key_from(const SecretKey& token_key);
/// The canonical bytes the MAC covers: every field but the MAC, little-endian, in a fixed order.
LOCKSTEP_API std::vector<std::uint8_t> result_signed_bytes(const SessionResult& r);
/// Sets r.mac with `key` (a result key: result_key_from(token key)).
LOCKSTEP_API void sign_result(SessionResult& r, const SecretKey& key);
/// Whether r.mac is the MAC of r under `key` (compared in constant time).
LOCKSTEP_API bool verify_result(const SessionResult& r, const SecretKey& key);

/// {"format": "lockstep-result/4", ...}: hashes and bytes in hex, the MAC as "mac" (null unsigned).
LOCKSTEP_API Json result_json(const SessionResult& r);
/// Reads a result (untrusted text, at most 64 KiB); false with a sentence in `error`.
LOCKSTEP_API bool parse_result(std::string_view text, SessionResult* out, std::string* error);

}  // namespace lockstep
