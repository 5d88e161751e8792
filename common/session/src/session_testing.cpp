// The sessions' test and fuzzing seam (session_testing.hpp).
#include "session_testing.hpp"

#include "client_session_impl.hpp"
#include "server_session_impl.hpp"

namespace lockstep {

std::uint16_t SessionTesting::client_port(const ClientSession& c) { return c.impl_->transport->port(); }

std::uint32_t SessionTesting::attach_peer(ServerSession& s, std::int64_t now_ns) {
  ServerSession::Impl& m = *s.impl_;
  const std::uint32_t id = m.next_peer_id++;
  ServerSession::Impl::Peer p;
  p.id = id;
  p.index = m.take_index();
  p.connected_at = now_ns;
  m.gate.open(p.index, 0, m.cfg.message_burst, now_ns);
  m.peers.emplace(id, std::move(p));
  return id;
}

std::uint32_t SessionTesting::attach_sealed_peer(ServerSession& s, std::int64_t now_ns, const ConnectionKeys& keys,
                                                       std::uint64_t client_id) {
  const std::uint32_t id = attach_peer(s, now_ns);
  ServerSession::Impl::Peer& p = s.impl_->peers.at(id);
  PeerGate::Entry& e = s.impl_->gate.entry(p.index);
  e.seal = std::make_unique<PacketSeal>(keys);
  e.by_token = true;
  e.client_id = client_id;
  return id;
}

void SessionTesting::receive(ServerSession& s, std::uint32_t peer, std::span<const std::uint8_t> bytes,
                                   std::uint8_t channel, std::int64_t now_ns) {
  if (auto it = s.impl_->peers.find(peer); it != s.impl_->peers.end())
    s.impl_->receive(it->second, bytes, channel, now_ns, now_ns);
}

}  // namespace lockstep
