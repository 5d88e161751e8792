// Who may come in: the server's decisions on a new connection (room among those waiting to join),
// on a connect token (the address it is bound to) and on a join request (refuse, a spectator
// seat, a player slot in the lobby, a rejoin into the holder's slot, a late join into a vacated
// one), each made from what it is shown alone. Pure: the session carries out what they decide.
#pragma once

#include <array>
#include <cstdint>
#include <functional>
#include <map>
#include <span>
#include <string>
#include <vector>

#include "lockstep/simulation.hpp"
#include "lockstep/wire/messages_generated.h"

namespace lockstep {

/// The request, as read from the wire.
struct JoinFacts {
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  std::string join_secret, name, rejoin_secret;  // join_secret: the JoinRequest's token field (--token)
  bool spectate = false;
  /// Joined with a connect token (§4.6): its client id, which a seat is bound to, and its slot.
  bool has_client_id = false;
  std::uint64_t client_id = 0;
  std::uint32_t token_slot = 0xffffffffu;  ///< 0xffffffff: any
  std::vector<LibraryBuild> libraries;  ///< the libraries the joining module's fingerprint covers
  std::string code;  ///< the joining module file's machine code (Module::code), "" when not from a file
  std::uint32_t code_fma = 0;  ///< fused multiply-adds in it (Module::fma_instructions)
};

/// The server's side of the decision.
struct AdmissionRules {
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  std::string join_secret;      ///< the server's --token, "" = none required
  bool lobby = true;            ///< the session has not started
  bool allow_late_join = false;
  bool draining = false;        ///< the server is shutting down: no new player or spectator, rejoins only
  std::uint32_t spectators = 0, max_spectators = 0;
  /// The client ids of the spectators that joined with a connect token: a token's client watches
  /// from one spectator seat at most, so one token cannot fill them all.
  std::vector<std::uint64_t> spectating_clients;
  std::vector<LibraryBuild> libraries;  ///< the server's module's covered libraries (ServerConfig::libraries)
  std::string code;  ///< the server's module file's machine code (ServerConfig::code), "" = not checked
  std::uint32_t code_fma = 0;  ///< fused multiply-adds in it
  /// Machine code the determinism gate replayed equal, one build to another (ServerConfig::
  /// equal_builds): a joining peer's other code is admitted when both it and `code` are listed.
  std::vector<std::string> equal_builds;
};


/// One player slot as admission sees it.
struct SeatView {
  bool taken = false;           ///< a player holds it
  bool vacant = true;           ///< nobody holds it, or its holder is out of the session and gone
  std::string_view secret;      ///< its rejoin secret ("" = none)
  bool bound = false;           ///< its holder joined with a connect token of client id `client_id`
  std::uint64_t client_id = 0;
};

struct JoinDecision {
  enum class Kind { Refuse, Spectate, Seat, Rejoin, LateJoin };
  Kind kind = Kind::Refuse;
  wire::RefuseReason reason = wire::RefuseReason::BadRequest;  ///< for Refuse
  std::string detail;                                          ///< for Refuse: says why
  std::size_t slot = 0;                                        ///< for Seat, Rejoin, LateJoin
};

JoinDecision decide_join(const JoinFacts& request, const AdmissionRules& rules, std::span<const SeatView> seats);

/// A connection that has not joined yet, as room-making sees it.
struct PendingView {
  std::uint32_t id = 0;            ///< the session's peer id: older connections have smaller ids
  std::uint32_t ip = 0;            ///< IPv4, network order; 0 in-process
  bool closing = false;            ///< already answered (refused, timed out) and closing
  std::int64_t connected_at = 0;   ///< monotonic ns
  std::int64_t last_received = 0;  ///< monotonic ns of its last message; 0: none yet
  bool misbehaved = false;         ///< a message of its was dropped (garbage, out of turn) or did not open
};

struct PendingLimits {
  std::uint32_t max_pending = 8;
  std::uint32_t max_per_address = 4;     ///< loopback (this machine's own bots and relays) is not held to it
  std::int64_t idle_ns = 1'000'000'000;  ///< a connection silent this long since it opened may make room
  /// A connection still not joined this long after it opened may make room however busy it is: an
  /// honest client joins within a few round trips, even far away and through loss.
  std::int64_t stale_ns = 3'000'000'000;
};

struct RoomDecision {
  bool admit = false;
  std::uint32_t evict = 0;  ///< a pending connection to close first to make the room (0: none)
};

/// Room for a new connection from `ip` among `pending` (in id order). Its address holding its
/// share already: turned away. Room left: admitted. Full: a connection already answered and
/// closing gives up its place first; else the address holding the most waiting connections gives
/// up its oldest (one address can never hold every place); else the oldest that misbehaved; else
/// the oldest that has sent nothing for idle_ns; else the oldest not joined after stale_ns; else
/// turned away. So neither silent nor busy connections hold the places long enough to keep a
/// player out.
RoomDecision make_room(std::span<const PendingView> pending, std::uint32_t ip, std::int64_t now, const PendingLimits& limits);

/// The connect tokens a server has opened, by nonce: the address that first used each, so the
/// same token from another address is refused as a replay. Bounded: past kMaxUses, tokens that
/// have expired and hold no seat are forgotten, and if none can be a new one is refused.
class TokenLedger {
 public:
  static constexpr std::size_t kMaxUses = 4096;
  enum class Claim { Ok, InUse, Full };
  using Nonce = std::array<std::uint8_t, 24>;
  /// Claims the token `nonce` (of client `client_id`, expiring at `expire_time`, Unix s) for `ip`:
  /// Ok the first time and again from the same address; InUse from another; Full when the ledger
  /// is full of tokens that are still good or hold a seat. `seated(client_id)` says whether a seat
  /// is bound to that client (its token is kept past its expiry).
  Claim claim(const Nonce& nonce, std::uint32_t ip, std::uint64_t expire_time, std::uint64_t client_id,
              std::uint64_t now_s, const std::function<bool(std::uint64_t)>& seated);
  /// Whether the token `nonce` is claimed already, from another address than `ip`.
  [[nodiscard]] bool claimed_elsewhere(const Nonce& nonce, std::uint32_t ip) const {
    const auto it = uses_.find(nonce);
    return it != uses_.end() && it->second.ip != ip;
  }
  [[nodiscard]] std::size_t size() const { return uses_.size(); }

 private:
  struct Use {
    std::uint32_t ip = 0;
    std::uint64_t expire_time = 0, client_id = 0;
  };
  std::map<Nonce, Use> uses_;
};

/// Compares two secrets in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b);

}  // namespace lockstep
