// Who may come in: the server's decision on a join request (refuse, a spectator seat, a player
// slot in the lobby, a rejoin into the holder's slot, a late join into a vacated one), made from
// the request and the seats alone. Pure: the session carries out what it decides.
#pragma once

#include <cstdint>
#include <span>
#include <string>

#include "lockstep/wire/messages_generated.h"

namespace lockstep {

/// The request, as read from the wire.
struct JoinFacts {
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  std::string token, name, rejoin_secret;
  bool spectate = false;
  /// Joined with a connect token (§4.6): its client id, which a seat is bound to, and its slot.
  bool has_client_id = false;
  std::uint64_t client_id = 0;
  std::uint32_t token_slot = 0xffffffffu;  ///< 0xffffffff: any
};

/// The server's side of the decision.
struct AdmissionRules {
  std::uint32_t protocol_version = 0;
  std::uint64_t fingerprint = 0;
  std::string token;            ///< "" = none required
  bool lobby = true;            ///< the session has not started
  bool allow_late_join = false;
  std::uint32_t spectators = 0, max_spectators = 0;
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

/// Compares two secrets in time that does not depend on where they differ.
bool same_secret(std::string_view a, std::string_view b);

}  // namespace lockstep
