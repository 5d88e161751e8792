// The WebSocket door's HTTP serving and admission (websocket_door_impl.hpp): a peer's address (or a
// trusted proxy's X-Forwarded-For), requests taken, the per-address and handshake budgets, the
// sweep of handshakes past their time, and which page requests stay inside the web root.
#include "websocket_door_impl.hpp"

namespace lockstep {
namespace ws {

// 32 bits of an IPv6 address for the session: its four words folded.
std::uint32_t fold(const in6_addr& a) {
  std::uint32_t ip = 0;
  for (int i = 0; i < 16; i += 4) {
    std::uint32_t w;
    std::memcpy(&w, a.s6_addr + i, 4);
    ip ^= w;
  }
  return ip;
}

// `a` with its text, ok, and loopback set from its ip.
PeerAddress named(PeerAddress a, std::string text) {
  a.text = std::move(text);
  a.ok = true;
  a.loopback = (ntohl(a.ip) >> 24) == 127;
  return a;
}

PeerAddress address_of(int fd) {
  PeerAddress a;
  sockaddr_storage ss{};
  socklen_t len = sizeof ss;
  if (fd < 0 || getpeername(fd, reinterpret_cast<sockaddr*>(&ss), &len) != 0) return a;
  char text[INET6_ADDRSTRLEN] = "?";
  if (ss.ss_family == AF_INET) {
    const auto* in = reinterpret_cast<const sockaddr_in*>(&ss);
    inet_ntop(AF_INET, &in->sin_addr, text, sizeof text);
    a.ip = in->sin_addr.s_addr;
    a.port = ntohs(in->sin_port);
  } else if (ss.ss_family == AF_INET6) {
    const auto* in = reinterpret_cast<const sockaddr_in6*>(&ss);
    if (IN6_IS_ADDR_V4MAPPED(&in->sin6_addr)) {
      std::memcpy(&a.ip, in->sin6_addr.s6_addr + 12, 4);
      inet_ntop(AF_INET, in->sin6_addr.s6_addr + 12, text, sizeof text);
    } else {
      a.ip = fold(in->sin6_addr);
      inet_ntop(AF_INET6, &in->sin6_addr, text, sizeof text);
    }
    a.port = ntohs(in->sin6_port);
  } else {
    return a;
  }
  return named(a, text);
}

// The address a trusted proxy names last in X-Forwarded-For ("client, proxy1, ..." : the last is
// the one that proxy saw), as address_of() gives it; not ok when the header holds no address.
PeerAddress forwarded_address(std::string_view list) {
  PeerAddress a;
  const std::size_t comma = list.rfind(',');
  std::string_view last = comma == std::string_view::npos ? list : list.substr(comma + 1);
  while (!last.empty() && last.front() == ' ') last.remove_prefix(1);
  while (!last.empty() && last.back() == ' ') last.remove_suffix(1);
  if (last.empty() || last.size() >= INET6_ADDRSTRLEN) return a;
  std::string text(last);
  in_addr v4{};
  in6_addr v6{};
  if (inet_pton(AF_INET, text.c_str(), &v4) == 1) a.ip = v4.s_addr;
  else if (inet_pton(AF_INET6, text.c_str(), &v6) == 1) a.ip = fold(v6);
  else return a;
  return named(a, std::move(text));
}

// Whether a Sec-WebSocket-Protocol header's comma-separated list names "lockstep" itself.
bool names_subprotocol(std::string_view list) {
  while (!list.empty()) {
    const std::size_t comma = list.find(',');
    std::string_view name = list.substr(0, comma);
    while (!name.empty() && name.front() == ' ') name.remove_prefix(1);
    while (!name.empty() && name.back() == ' ') name.remove_suffix(1);
    if (name == kSubprotocol) return true;
    if (comma == std::string_view::npos) break;
    list.remove_prefix(comma + 1);
  }
  return false;
}

std::size_t frame_header_bytes(std::size_t payload, bool masked) {
  return (payload < 126 ? 2 : payload < 65536 ? 4 : 10) + (masked ? 4 : 0);
}

// A connection's request is whole (an upgrade or a page): it is no longer held to the handshake
// time. A trusted proxy's is counted from here by the browser's address, X-Forwarded-For's last;
// false when that address already holds its bound (the connection is refused).
bool WsDoor::take_request(lws* wsi) {
  char header[512] = "";
  const int n = lws_hdr_copy(wsi, header, sizeof header, WSI_TOKEN_X_FORWARDED_FOR);
  std::lock_guard lock(mutex_);
  const auto it = open_.find(wsi);
  if (it == open_.end()) return true;
  Open& o = it->second;
  o.requested = true;
  if (!o.proxied || !o.address.empty()) return true;
  // A keep-alive connection's later requests keep the address of its first.
  o.forwarded = n > 0 ? forwarded_address(std::string_view(header, static_cast<std::size_t>(n))) : PeerAddress{};
  if (!o.forwarded.ok) return true;  // the proxy named nobody: counted as itself, exempt as loopback
  auto& count = per_address_[o.forwarded.text];
  if (count >= kDoorConnectionsPerAddress) {
    ++stats_.refused_address;
    cut_sources_.note(o.forwarded.ip);
    return false;
  }
  ++count;
  o.address = o.forwarded.text;
  return true;
}

// Closes an unfinished handshake (under the mutex, on the door's thread): it stops counting
// toward the budget now and is destroyed by libwebsockets on its next round.
void WsDoor::close_handshake(lws* wsi) {
  Open& o = open_[wsi];
  if (o.upgraded || o.closing) return;
  o.closing = true;
  --handshakes_;
  cut_sources_.note(o.forwarded.ok ? o.forwarded.ip : o.ip);
  lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
}

const WsDoor::Open* WsDoor::live_handshake(lws* wsi, std::uint64_t seq) const {
  const auto it = open_.find(wsi);
  if (it == open_.end() || it->second.seq != seq || it->second.upgraded || it->second.closing) return nullptr;
  return &it->second;
}

void WsDoor::evict_oldest_handshake() {
  while (!handshake_order_.empty()) {
    const auto [wsi, seq] = handshake_order_.front();
    handshake_order_.pop_front();
    if (!live_handshake(wsi, seq)) continue;
    close_handshake(wsi);
    ++stats_.handshakes_evicted;
    return;
  }
}

// Every 100 ms: handshakes past their time are closed, 5 s normally and 1 s while more than half
// the budget is taken, whatever libwebsockets' own timeouts (which a byte at a time renews) say.
void WsDoor::sweep(lws_sorted_usec_list_t* sul) {
  WsDoor* door = reinterpret_cast<Sweep*>(sul)->door;
  {
    std::lock_guard lock(door->mutex_);
    const std::int64_t now = monotonic_ns();
    const unsigned seconds = door->handshakes_ * 2 > door->cfg_.max_handshakes ? kDoorHandshakeSecondsUnderPressure
                                                                                : kDoorHandshakeSeconds;
    const std::int64_t due = now - std::int64_t{seconds} * 1'000'000'000;
    auto& order = door->handshake_order_;
    std::deque<std::pair<lws*, std::uint64_t>> kept;
    for (const auto& [wsi, seq] : order) {
      const Open* o = door->live_handshake(wsi, seq);
      if (!o) continue;
      if (!o->requested && o->since_ns < due) {
        door->close_handshake(wsi);
        ++door->stats_.handshakes_timed_out;
        continue;
      }
      kept.emplace_back(wsi, seq);
    }
    order.swap(kept);
    if (now - door->cut_noted_at_ >= kCutNoteNs) {
      const std::uint64_t total = door->cut_total();
      if (total > door->cut_noted_ && door->cut_noted_at_ != 0) {
        const std::string sources = door->cut_sources_.describe();
        LOCKSTEP_LOG_WARN("WebSocket door: %llu connections refused or cut in the last %lld s (%zu handshakes open, "
                          "%llu evicted and %llu timed out so far)%s%s",
                          static_cast<unsigned long long>(total - door->cut_noted_),
                          static_cast<long long>((now - door->cut_noted_at_) / 1'000'000'000), door->handshakes_,
                          static_cast<unsigned long long>(door->stats_.handshakes_evicted),
                          static_cast<unsigned long long>(door->stats_.handshakes_timed_out),
                          sources.empty() ? "" : "; ", sources.c_str());
      }
      door->cut_noted_ = total;
      door->cut_noted_at_ = now;
      door->cut_sources_.clear();
    }
  }
  lws_sul_schedule(door->context_, 0, sul, &WsDoor::sweep, 100 * LWS_US_PER_MS);
}

// Whether the file a page request names (its URI path, which libwebsockets has already cleaned
// of '..') resolves inside the web root: a link in the root that leads out of it is not followed.
// A file that does not exist is left to the mount to answer (404).
bool WsDoor::inside_web_root(const char* uri, std::size_t len) const {
  if (web_root_real_.empty() || !uri) return true;
  std::string path = cfg_.web_root + "/" + std::string(uri, strnlen(uri, len));
  if (path.back() == '/') path += "index.html";
  char resolved[PATH_MAX];
  if (!realpath(path.c_str(), resolved)) return true;
  const std::string_view r(resolved);
  return r == web_root_real_ || (r.size() > web_root_real_.size() && r.substr(0, web_root_real_.size()) == web_root_real_ &&
                                 r[web_root_real_.size()] == '/');
}

}  // namespace ws
}  // namespace lockstep
