// Who may come in: the server's decisions on connections, tokens and joins, pure (admission.hpp).
#include "lockstep/admission.hpp"

#include <algorithm>

#include "lockstep/protocol.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

bool same_secret(std::string_view a, std::string_view b) {
  unsigned diff = a.size() == b.size() ? 0u : 1u;
  const std::size_t n = std::max(a.size(), b.size());
  for (std::size_t i = 0; i < n; ++i) {
    const unsigned char x = i < a.size() ? static_cast<unsigned char>(a[i]) : 0;
    const unsigned char y = i < b.size() ? static_cast<unsigned char>(b[i]) : 0;
    diff |= static_cast<unsigned>(x ^ y);
  }
  return diff == 0;
}

namespace {

JoinDecision refuse(wire::RefuseReason reason, std::string detail) {
  return {JoinDecision::Kind::Refuse, reason, std::move(detail), 0};
}
JoinDecision admit(JoinDecision::Kind kind, std::size_t slot) { return {kind, wire::RefuseReason::BadRequest, "", slot}; }

std::string all_taken(std::size_t seats) { return "all " + std::to_string(seats) + " player slots are taken"; }

// A player coming back with the secret of its slot.
JoinDecision rejoin(const JoinFacts& q, const AdmissionRules& rules, std::span<const SeatView> seats) {
  using R = wire::RefuseReason;
  for (std::size_t i = 0; i < seats.size(); ++i) {
    if (!seats[i].taken || seats[i].secret.empty() || !same_secret(q.rejoin_secret, seats[i].secret)) continue;
    if (rules.lobby) return refuse(R::BadRequest, "the session has not started: join normally");
    // A seat taken with a connect token comes back only with a token of the same client.
    if (seats[i].bound && (!q.has_client_id || seats[i].client_id != q.client_id))
      return refuse(R::BadRequest, "unknown rejoin secret");
    return admit(JoinDecision::Kind::Rejoin, i);
  }
  return refuse(R::BadRequest, "unknown rejoin secret");
}

}  // namespace

JoinDecision decide_join(const JoinFacts& q, const AdmissionRules& rules, std::span<const SeatView> seats) {
  using R = wire::RefuseReason;
  using K = JoinDecision::Kind;
  if (q.protocol_version != rules.protocol_version)
    return refuse(R::WrongVersion, "protocol version " + std::to_string(q.protocol_version) +
                                       " is not this server's version " + std::to_string(rules.protocol_version));
  if (q.fingerprint != rules.fingerprint) {
    std::string why = "simulation fingerprint " + hash_hex(q.fingerprint) + " differs from the server's " +
                      hash_hex(rules.fingerprint);
    // A library named says more than two fingerprints, and a Refuse carries 256 bytes.
    if (const std::string libs = library_difference(q.libraries, rules.libraries, "the joining peer", "the server");
        !libs.empty())
      why = "simulation fingerprint differs: " + libs;
    return refuse(R::WrongFingerprint, why);
  }
  // The same rules, but other machine code: another compiler flag (FMA contraction), another
  // architecture or a statically linked library built otherwise can compute other results. Only
  // code the determinism gate replayed equal to the server's meets it.
  // A code as a refusal names it: a build id's first hex digits, or a hash of several whole.
  const auto brief = [](const std::string& c, std::size_t n) { return c.rfind("xxh3:", 0) == 0 ? c : c.substr(0, n); };
  const auto shown = [&](const std::string& c) {
    return std::find(rules.equal_builds.begin(), rules.equal_builds.end(), c) != rules.equal_builds.end();
  };
  if (!rules.code.empty() && !q.code.empty() && q.code != rules.code && !(shown(q.code) && shown(rules.code))) {
    // The cause, when the two builds' fused multiply-adds say it: one built with FMA contraction.
    if (q.code_fma != rules.code_fma && (q.code_fma == 0 || rules.code_fma == 0))
      return refuse(R::WrongFingerprint, "the module's machine code differs: the joining peer's build has " +
                                             std::to_string(q.code_fma) + " fused multiply-adds, the server's " +
                                             std::to_string(rules.code_fma) + " (FMA contraction gives other results); " +
                                             brief(q.code, 12) + " vs " + brief(rules.code, 12) +
                                             ", no gate run showed them equal (--equal-builds)");
    return refuse(R::WrongFingerprint, "the module's machine code differs: the joining peer's " + brief(q.code, 16) +
                                           ", the server's " + brief(rules.code, 16) +
                                           "; no gate run showed them equal (another flag, FMA, architecture or "
                                           "static library; --equal-builds)");
  }
  if (!same_secret(q.join_secret, rules.join_secret)) return refuse(R::WrongToken, "wrong join token");
  if (!protocol::valid_name(q.name)) return refuse(R::BadRequest, "a name must be 1-32 printable ASCII characters");
  if (rules.draining && q.rejoin_secret.empty())
    return refuse(R::Draining, "the server is shutting down: it lets its match finish and admits no one new");
  if (q.spectate) {
    if (q.has_client_id && std::find(rules.spectating_clients.begin(), rules.spectating_clients.end(), q.client_id) !=
                               rules.spectating_clients.end())
      return refuse(R::TokenInUse, "client " + std::to_string(q.client_id) + " already watches from a spectator seat");
    if (rules.spectators >= rules.max_spectators) return refuse(R::Full, "no spectator seats left");
    return admit(K::Spectate, 0);
  }
  if (!q.rejoin_secret.empty()) return rejoin(q, rules, seats);
  if (q.has_client_id)
    for (std::size_t i = 0; i < seats.size(); ++i)
      if (seats[i].taken && seats[i].bound && seats[i].client_id == q.client_id)
        return refuse(R::TokenInUse, "client " + std::to_string(q.client_id) + " already holds player slot " +
                                         std::to_string(i) + ": come back with its rejoin secret");
  if (q.token_slot != 0xffffffffu) {  // the token names the slot
    if (q.token_slot >= seats.size())
      return refuse(R::Full, "the token's slot " + std::to_string(q.token_slot) + " is not one of the " +
                                 std::to_string(seats.size()) + " player slots");
    const SeatView& s = seats[q.token_slot];
    if (rules.lobby ? s.taken : !s.vacant)
      return refuse(R::Full, "the token's slot " + std::to_string(q.token_slot) + " is taken");
    if (!rules.lobby && !rules.allow_late_join)
      return refuse(R::AlreadyStarted, "the session has already started (late joins are off)");
    return admit(rules.lobby ? K::Seat : K::LateJoin, q.token_slot);
  }
  if (!rules.lobby) {
    const auto vacant = std::find_if(seats.begin(), seats.end(), [](const SeatView& s) { return s.vacant; });
    if (vacant == seats.end()) return refuse(R::Full, all_taken(seats.size()));
    if (!rules.allow_late_join) return refuse(R::AlreadyStarted, "the session has already started (late joins are off)");
    return admit(K::LateJoin, static_cast<std::size_t>(vacant - seats.begin()));
  }
  const auto free = std::find_if(seats.begin(), seats.end(), [](const SeatView& s) { return !s.taken; });
  if (free == seats.end()) return refuse(R::Full, all_taken(seats.size()));
  return admit(K::Seat, static_cast<std::size_t>(free - seats.begin()));
}

namespace {
// Loopback (127.0.0.0/8, network order) is this machine: its own bots, tests and relays.
bool is_loopback(std::uint32_t ip) { return (ip & 0xffu) == 127u; }
}  // namespace

RoomDecision make_room(std::span<const PendingView> pending, std::uint32_t ip, std::int64_t now, const PendingLimits& limits) {
  std::map<std::uint32_t, std::uint32_t> by_ip;  // pending connections per address
  for (const PendingView& q : pending) ++by_ip[q.ip];
  if (ip != 0 && !is_loopback(ip) && by_ip[ip] >= limits.max_per_address) return {};
  if (pending.size() < limits.max_pending) return {true, 0};
  std::uint32_t crowded = 0, most = 1;
  for (const auto& [addr, n] : by_ip)
    if (addr != 0 && !is_loopback(addr) && n > most) crowded = addr, most = n;
  for (const PendingView& q : pending)
    if (q.closing) return {true, q.id};
  if (crowded != 0)
    for (const PendingView& q : pending)
      if (q.ip == crowded) return {true, q.id};
  for (const PendingView& q : pending)
    if (q.misbehaved) return {true, q.id};
  for (const PendingView& q : pending)
    if (q.last_received == 0 && now - q.connected_at > limits.idle_ns) return {true, q.id};
  for (const PendingView& q : pending)
    if (now - q.connected_at > limits.stale_ns) return {true, q.id};
  return {};
}

TokenLedger::Claim TokenLedger::claim(const Nonce& nonce, std::uint32_t ip, std::uint64_t expire_time,
                                      std::uint64_t client_id, std::uint64_t now_s,
                                      const std::function<bool(std::uint64_t)>& seated) {
  if (claimed_elsewhere(nonce, ip)) return Claim::InUse;
  if (uses_.size() >= kMaxUses) {
    std::erase_if(uses_, [&](const auto& u) { return u.second.expire_time <= now_s && !seated(u.second.client_id); });
    if (uses_.size() >= kMaxUses) return Claim::Full;
  }
  uses_.emplace(nonce, Use{ip, expire_time, client_id});
  return Claim::Ok;
}

}  // namespace lockstep
