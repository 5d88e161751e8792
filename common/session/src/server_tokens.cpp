// Connect tokens on the server (docs/PROTOCOL.md §4.6, §4.7): the ConnectRequest and its
// challenge, sealed messages in and out, room for new connections, and the rule that a peer not
// yet authenticated is never sent more bytes than it has sent.
#include <algorithm>

#include "lockstep/log.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

namespace {

constexpr std::size_t kMaxTokenUses = 4096;           // tokens remembered, beyond those of seated clients
// Loopback (127.0.0.0/8, network order) is this machine: its own bots, tests and relays.
bool is_loopback(std::uint32_t ip) { return (ip & 0xffu) == 127u; }
constexpr std::int64_t kIdlePendingNs = 1'000'000'000;  // a pending connection silent this long may make room

wire::RefuseReason refusal_for(TokenError e) {
  switch (e) {
    case TokenError::Expired: return wire::RefuseReason::TokenExpired;
    case TokenError::WrongProtocol:
    case TokenError::WrongServer: return wire::RefuseReason::WrongServer;
    default: return wire::RefuseReason::BadToken;
  }
}

}  // namespace

void ServerSession::Impl::send(Peer& p, Channel ch, const protocol::Bytes& bytes) {
  std::span<const std::uint8_t> out = bytes;
  if (p.seal) {
    p.seal->seal(ch, bytes, seal_scratch);
    out = seal_scratch;
  }
  // No amplification: before a peer proves it holds its token's keys, it is sent at most what it sent.
  if (tokens_required() && !p.authenticated && p.enet) {
    if (p.bytes_out + out.size() > p.bytes_in) {
      ++stats.replies_withheld;
      return;
    }
    p.bytes_out += out.size();
  }
  host->send(p.enet, ch, out);
}

bool ServerSession::Impl::open_sealed(Peer& p, std::span<const std::uint8_t> data, std::uint8_t channel) {
  const Channel ch = channel == static_cast<std::uint8_t>(Channel::Play) ? Channel::Play : Channel::Control;
  const OpenError e = p.seal->open(ch, data, opened_scratch);
  if (e == OpenError::None) {
    p.authenticated = true;
    return true;
  }
  // Counted, never held against the peer: anyone on the path can send such a datagram.
  const std::uint64_t n = e == OpenError::Replayed ? ++stats.sealed_replayed : ++stats.sealed_forged;
  if (n <= kLogFirstDrops || n % 1000 == 0)
    LOCKSTEP_LOG_WARN("dropped a sealed message from %s (%s): %s [%llu so far]", peer_address(p.enet).c_str(),
                      p.name.empty() ? "not joined" : p.name.c_str(), to_string(e), static_cast<unsigned long long>(n));
  // Control messages are reliable and counted by both sides: one that did not open was lost for
  // good (ENet acknowledged the forgery in its place), so the connection cannot go on.
  if (ch == Channel::Control && e != OpenError::Replayed && p.authenticated)
    kick(p, "a control message failed authentication");
  return false;
}

bool ServerSession::Impl::names_this_server(const std::vector<TokenAddress>& servers) const {
  for (const TokenAddress& a : servers) {
    if (cfg.public_addresses.empty() ? a.port == host->port()
                                     : std::find(cfg.public_addresses.begin(), cfg.public_addresses.end(), a) !=
                                           cfg.public_addresses.end())
      return true;
  }
  return false;
}

void ServerSession::Impl::on_connect_request(Peer& p, const wire::ConnectRequest& m) {
  if (!tokens_required()) return drop(p, DropReason::UnexpectedMessage, " (a connect token: this server takes plain joins)");
  if (p.role != Role::Pending || p.seal || p.closing || !p.deferred_token.empty())
    return drop(p, DropReason::UnexpectedMessage, " (second connect request)");
  // Before the key arrives (an allocation hands it over) the request waits for it, within the
  // join timeout: a player the matchmaker sent at once is not turned away.
  if (!cfg.token_key) {
    p.deferred_token.assign(m.token()->begin(), m.token()->end());
    return;
  }
  open_token(p, {m.token()->data(), m.token()->size()});
}

void ServerSession::Impl::take_token_key(const SecretKey& key, const std::vector<TokenAddress>& addresses) {
  cfg.token_key = key;
  if (!addresses.empty()) cfg.public_addresses = addresses;
  for (auto& [id, p] : peers)
    if (!p.deferred_token.empty() && !p.closing) {
      const std::vector<std::uint8_t> token = std::move(p.deferred_token);
      p.deferred_token.clear();
      open_token(p, token);
    }
}

void ServerSession::Impl::open_token(Peer& p, std::span<const std::uint8_t> sealed_token) {
  OpenedToken t;
  TokenError e = open_connect_token(sealed_token, *cfg.token_key, cfg.protocol_id, unix_now(), &t);
  // A token's expiry bounds a client's first join; a client that holds a seat may come back with it.
  if (e == TokenError::Expired &&
      std::any_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.taken && s.bound && s.client_id == t.client_id; }))
    e = TokenError::None;
  if (e == TokenError::None && !names_this_server(t.servers)) e = TokenError::WrongServer;
  if (e != TokenError::None) return refuse(p, refusal_for(e), to_string(e));
  // A token is good from the address that first used it; from another it is a replay.
  if (const auto it = token_uses.find(t.nonce); it != token_uses.end() && it->second.ip != p.ip)
    return refuse(p, wire::RefuseReason::TokenInUse, "this connect token was already used from another address");
  if (token_uses.size() >= kMaxTokenUses) {
    const std::uint64_t now_s = unix_now();
    std::erase_if(token_uses, [&](const auto& u) {
      return u.second.expire_time <= now_s &&
             std::none_of(slots.begin(), slots.end(), [&](const Slot& s) { return s.bound && s.client_id == u.second.client_id; });
    });
    if (token_uses.size() >= kMaxTokenUses)
      return refuse(p, wire::RefuseReason::Full, "too many connect tokens in use; try again later");
  }
  token_uses.emplace(t.nonce, TokenUse{p.ip, t.expire_time, t.client_id});
  p.client_id = t.client_id;
  p.user_data = t.user_data;
  p.token_slot = t.slot;
  std::array<std::uint8_t, protocol::kChallengeNonceBytes> nonce;
  random_bytes(nonce);
  send(p, Channel::Control, protocol::connect_challenge(nonce));  // in the clear: the keys follow from it
  p.seal = std::make_unique<PacketSeal>(derive_connection_keys(t.client_to_server, t.server_to_client, nonce, /*server_side=*/true));
}

bool ServerSession::Impl::admit_pending(std::uint32_t ip, std::int64_t now) {
  // A connection refused (or timed out) before joining holds no place once its answer has been
  // acknowledged: only ENet's disconnect handshake is left, which a client that exits on the
  // answer never completes. It is closed at once, so the peers ENet holds stay bounded too.
  for (auto it = peers.begin(); it != peers.end();) {
    if (it->second.role == Role::Pending && it->second.closing && peer_told_all(it->second.enet)) {
      peer_disconnect_now(it->second.enet);
      it = peers.erase(it);
    } else {
      ++it;
    }
  }
  std::map<std::uint32_t, std::uint32_t> by_ip;  // pending connections per address
  std::uint32_t total = 0;
  for (const auto& [id, q] : peers)
    if (q.role == Role::Pending) {
      ++total;
      ++by_ip[q.ip];
    }
  if (ip != 0 && !is_loopback(ip) && by_ip[ip] >= cfg.max_pending_per_address) return false;
  if (total < cfg.max_pending) return true;
  // Full: a connection already answered and closing gives up its place first; else the address
  // holding the most waiting connections gives up its oldest (one address can never hold every
  // place), or else the oldest connection that has sent nothing for a second.
  std::uint32_t crowded = 0, most = 1;
  for (const auto& [addr, n] : by_ip)
    if (addr != 0 && !is_loopback(addr) && n > most) crowded = addr, most = n;
  std::uint32_t victim = 0;
  for (const auto& [id, q] : peers)
    if (q.role == Role::Pending && q.closing) {
      victim = id;
      break;
    }
  for (const auto& [id, q] : peers) {
    if (victim != 0) break;
    if (q.role != Role::Pending) continue;
    if (crowded != 0 ? q.ip == crowded : q.last_received == 0 && now - q.connected_at > kIdlePendingNs) victim = id;
  }
  if (victim == 0) return false;
  const auto it = peers.find(victim);
  if (!it->second.closing)
    LOCKSTEP_LOG_INFO("closing %s, which has not joined yet: a new connection needs its place",
                      peer_address(it->second.enet).c_str());
  ++stats.pending_evicted;
  peer_disconnect_now(it->second.enet);
  peers.erase(it);
  return true;
}

}  // namespace lockstep
