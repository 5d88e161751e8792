// The WebSocket door over libwebsockets (docs/PROTOCOL.md §17). libwebsockets runs its own event
// loop (this Debian build has no external poll hooks), so the door runs it on a thread of its
// own; the session's thread and that one meet in a queue of events (with an eventfd the session
// waits on) and each link's queue of messages to send, all under one mutex. Every libwebsockets
// call but lws_cancel_service() is made on the door's thread.
#include "lockstep/websocket_door.hpp"

#include <libwebsockets.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/eventfd.h>
#include <sys/resource.h>
#include <sys/socket.h>
#include <sys/stat.h>
#include <unistd.h>

#include <climits>
#include <cstdlib>

#include <algorithm>
#include <atomic>
#include <cstring>
#include <deque>
#include <map>
#include <mutex>
#include <string>
#include <string_view>
#include <thread>
#include <vector>

#include "lockstep/busiest_sources.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"

namespace lockstep {
namespace {

constexpr char kSubprotocol[] = "lockstep";
constexpr unsigned kPingEveryUs = 500'000;

// The address of a connected socket: its text (no port), and 32 bits of it for the session (an
// IPv4 address, or an IPv6 one folded).
struct PeerAddress {
  std::string text;
  std::uint16_t port = 0;
  std::uint32_t ip = 0;
  bool ok = false;
  bool loopback = false;
};
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

class WsDoor;

// One WebSocket connection: the handle the session holds. Its fields are the door's mutex's,
// but for those marked as the door thread's own.
class WsLink final : public NetPeer {
 public:
  explicit WsLink(WsDoor* door) : door_(door) {}
  void disconnect_later() override;
  void disconnect_now() override;
  void reset() override { disconnect_now(); }
  [[nodiscard]] bool told_all() const override;
  [[nodiscard]] bool sending() const override;
  [[nodiscard]] PeerNet net() const override;
  [[nodiscard]] std::size_t channel_count() const override { return kChannelCount; }
  [[nodiscard]] std::uint32_t ip() const override { return ip_; }
  [[nodiscard]] std::string address() const override { return "ws:" + address_; }
  void set_tag(std::uintptr_t tag) override { tag_ = tag; }
  [[nodiscard]] std::uintptr_t tag() const override { return tag_; }
  void set_backstop_timeout(std::uint32_t ms) override;
  [[nodiscard]] bool stream() const override { return true; }

  WsDoor* door_;
  lws* wsi = nullptr;        // null once libwebsockets has closed it
  bool for_session = false;  // the session holds it: a Disconnect event is owed when it closes
  std::deque<std::vector<std::uint8_t>> out;  // LWS_PRE bytes, the channel, the message
  std::size_t out_bytes = 0;
  bool close_now = false, close_when_sent = false;
  std::int64_t close_by = 0;  // a close not done by then (the peer reads nothing) is done without its frame
  std::uint64_t generation = 0;  // which connection of this handle: events of an earlier one are dropped
  lws_close_status close_code = LWS_CLOSE_STATUS_NORMAL;
  std::string close_reason;
  std::uint32_t ip_ = 0;
  std::string address_;
  std::uintptr_t tag_ = 0;
  std::int64_t heard = 0;
  std::uint32_t backstop_ms = 30'000;
  PeerNet net_{};
  std::size_t waiting_bytes = 0;  // received, not yet taken by the session
  // The door thread's own:
  std::vector<std::uint8_t> in;  // the message being assembled from its fragments
  std::int64_t window_start = 0;
  std::uint32_t window_messages = 0;
  bool ping_due = false;
};

struct InEvent {
  NetEvent::Type type;
  WsLink* link;
  std::uint64_t generation = 0;
  std::uint8_t channel = 0;
  std::vector<std::uint8_t> bytes;
  std::int64_t arrived_ns = 0;
};

class WsDoor final : public Transport {
 public:
  WsDoor(const WebSocketDoorConfig& cfg, const TransportLimits& limits) : cfg_(cfg), limits_(limits) {}
  ~WsDoor() override {
    stopping_ = true;
    if (context_) lws_cancel_service(context_);
    if (thread_.joinable()) thread_.join();
    if (context_) lws_context_destroy(context_);
    if (event_fd_ >= 0) close(event_fd_);
  }

  bool start(Error* error);
  [[nodiscard]] bool inside_web_root(const char* uri, std::size_t len) const;

  NetPeer* connect(const std::string&, std::uint16_t, std::string* error) override {
    if (error) *error = "the WebSocket door only listens";
    return nullptr;
  }
  NetEvent poll() override {
    flush();
    std::unique_lock lock(mutex_);
    for (WsLink* l : released_) free_.push_back(l);  // the session is done with last poll's Disconnects
    released_.clear();
    for (;;) {
      if (in_.empty()) {
        lock.unlock();
        std::uint64_t n;
        while (read(event_fd_, &n, sizeof n) > 0) {
        }
        lock.lock();
        if (in_.empty()) return {};
      }
      InEvent ev = std::move(in_.front());
      in_.pop_front();
      WsLink* link = ev.link;
      if (ev.generation != link->generation) continue;  // an earlier connection's, on a handle used again
      if (ev.type == NetEvent::Type::Receive) link->waiting_bytes -= std::min(link->waiting_bytes, ev.bytes.size());
      if (ev.type == NetEvent::Type::Disconnect) {
        // Queued only while the session held the link; it is free once the session is done with
        // this event, whether or not the session let the link go meanwhile (then no event is owed).
        const bool owed = link->for_session;
        link->for_session = false;
        released_.push_back(link);
        if (!owed) continue;
      }
      if (!link->for_session && ev.type != NetEvent::Type::Disconnect) continue;  // let go: what was on its way is dropped
      NetEvent out;
      out.type = ev.type;
      out.peer = link;
      if (ev.type == NetEvent::Type::Receive) {
        auto* held = new std::vector<std::uint8_t>(std::move(ev.bytes));
        out.channel = ev.channel;
        out.data = *held;
        out.arrived_ns = ev.arrived_ns;
        out.holder = {held, [](void* p) { delete static_cast<std::vector<std::uint8_t>*>(p); }};
      }
      return out;
    }
  }
  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override {
    auto* link = static_cast<WsLink*>(peer);
    std::lock_guard lock(mutex_);
    if (!link->for_session || link->close_now || link->close_when_sent || !link->wsi) return;
    if (channel == Channel::Play && link->out_bytes > kDoorPlayBacklogBytes) {
      ++stats_.play_dropped;  // as a datagram lost: the play messages after it carry it again
      return;
    }
    if (link->out_bytes + bytes.size() > kDoorBacklogBytes) {
      ++stats_.backlog_cut;
      LOCKSTEP_LOG_WARN("closing WebSocket peer %s: %zu bytes sent to it wait unread", link->address_.c_str(), link->out_bytes);
      close_link(*link, LWS_CLOSE_STATUS_POLICY_VIOLATION, "not reading what it is sent");
      link->out.clear();
      link->out_bytes = 0;
      return;
    }
    std::vector<std::uint8_t> frame(LWS_PRE + 1 + bytes.size());
    frame[LWS_PRE] = static_cast<std::uint8_t>(channel);
    std::memcpy(frame.data() + LWS_PRE + 1, bytes.data(), bytes.size());
    link->out_bytes += frame.size() - LWS_PRE;
    link->out.push_back(std::move(frame));
    dirty_ = true;
  }
  void flush() override {
    bool wake = false;
    {
      std::lock_guard lock(mutex_);
      wake = std::exchange(dirty_, false);
    }
    if (wake) lws_cancel_service(context_);
  }
  [[nodiscard]] int fd() const override { return event_fd_; }
  [[nodiscard]] bool reliable_in_flight() const override { return false; }  // the door's thread serves it
  [[nodiscard]] std::int64_t heard_ns(const NetPeer* peer) const override {
    std::lock_guard lock(mutex_);
    return static_cast<const WsLink*>(peer)->heard;
  }
  [[nodiscard]] std::uint16_t port() const override { return port_; }
  [[nodiscard]] std::uint16_t websocket_port() const override { return port_; }
  [[nodiscard]] NetTraffic traffic() const override {
    std::lock_guard lock(mutex_);
    return traffic_;
  }
  [[nodiscard]] bool owns(const NetPeer* peer) const override { return dynamic_cast<const WsLink*>(peer) != nullptr; }
  [[nodiscard]] DoorStats door_stats() const override {
    std::lock_guard lock(mutex_);
    DoorStats out = stats_;
    out.traffic = traffic_;
    return out;
  }

  // Called under the mutex: the link's connection is closed with `code` and `reason` on the
  // door's thread.
  void close_link(WsLink& link, lws_close_status code, const char* reason) {
    if (!link.close_now) {
      link.close_code = code;
      link.close_reason = reason;
    }
    link.close_now = true;
    link.close_by = monotonic_ns() + kCloseWithin;
    dirty_ = true;
  }
  static constexpr std::int64_t kCloseWithin = 2'000'000'000;  // a close frame, or a peer's unsent rest, waits this long at most
  void request_service() { lws_cancel_service(context_); }
  std::mutex& mutex() const { return mutex_; }

  static int callback(lws* wsi, lws_callback_reasons reason, void* user, void* in, std::size_t len);

 private:
  int on_callback(lws* wsi, lws_callback_reasons reason, WsLink** slot, void* in, std::size_t len);
  void push(InEvent ev) {  // under the mutex
    in_.push_back(std::move(ev));
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = write(event_fd_, &one, sizeof one);
  }
  int refuse(lws* wsi, WsLink& link, std::uint64_t& counter, lws_close_status code, const char* why) {
    ++counter;
    cut_sources_.note(link.ip_);
    LOCKSTEP_LOG_WARN("closing WebSocket peer %s: %s", link.address_.c_str(), why);
    lws_close_reason(wsi, code, reinterpret_cast<unsigned char*>(const_cast<char*>(why)), std::strlen(why));
    return -1;
  }
  int on_receive(lws* wsi, WsLink& link, const std::uint8_t* data, std::size_t len);
  bool take_request(lws* wsi);
  [[nodiscard]] bool trusted(const std::string& address) const {
    return std::find(cfg_.trusted_proxies.begin(), cfg_.trusted_proxies.end(), address) != cfg_.trusted_proxies.end();
  }
  void evict_oldest_handshake();
  void close_handshake(lws* wsi);
  static void sweep(lws_sorted_usec_list_t* sul);
  int on_writable(lws* wsi, WsLink& link);

  WebSocketDoorConfig cfg_;
  std::string web_root_real_;  // the web root with every link resolved: no file outside it is served
  TransportLimits limits_;
  lws_context* context_ = nullptr;
  std::uint16_t port_ = 0;
  int event_fd_ = -1;
  std::thread thread_;
  std::atomic<bool> stopping_{false};
  mutable std::mutex mutex_;
  std::deque<InEvent> in_;
  std::vector<std::unique_ptr<WsLink>> links_;
  std::vector<WsLink*> free_, released_;
  bool dirty_ = false;
  NetTraffic traffic_;
  DoorStats stats_;
  // An open TCP connection (under the mutex). Until it is upgraded it is a handshake, held to
  // the handshake budget and time; `address` is what it counts toward in per_address_ ("" = none:
  // loopback, or a trusted proxy's until its request names the browser).
  struct Open {
    std::string address;
    std::int64_t since_ns = 0;
    std::uint64_t seq = 0;  // its place in handshake_order_
    std::uint32_t ip = 0;   // the peer's (IPv4, or IPv6 folded), for the log of what was cut
    bool requested = false, upgraded = false, closing = false, proxied = false;
    PeerAddress forwarded;  // from X-Forwarded-For, when a trusted proxy's
    PeerAddress peer;       // the socket's peer, as the connection came (over TLS the upgraded
                            // connection's socket no longer answers for it)
  };
  std::map<lws*, Open> open_;
  // The connection a handshake_order_ entry names while it is still an unfinished handshake;
  // null for a stale entry (gone, its handle reused, upgraded, or being closed).
  [[nodiscard]] const Open* live_handshake(lws* wsi, std::uint64_t seq) const;
  std::map<std::string, std::uint32_t> per_address_;
  std::deque<std::pair<lws*, std::uint64_t>> handshake_order_;  // oldest first; stale entries skipped
  std::uint64_t next_seq_ = 0;
  std::size_t handshakes_ = 0, upgraded_open_ = 0;
  // Connections refused or cut, logged once a window (kCutNoteNs) with their busiest source.
  static constexpr std::int64_t kCutNoteNs = 10'000'000'000;
  BusiestSources cut_sources_;
  std::int64_t cut_noted_at_ = 0;
  std::uint64_t cut_noted_ = 0;
  [[nodiscard]] std::uint64_t cut_total() const {
    return stats_.refused() + stats_.handshakes_evicted + stats_.handshakes_timed_out;
  }
  struct Sweep {
    lws_sorted_usec_list_t sul;  // first: the callback gets its address
    WsDoor* door;
  } sweep_{{}, this};
  lws_protocols protocols_[2]{};
  lws_http_mount mount_{};
  lws_protocol_vhost_options wasm_type_{}, js_type_{};
};

void WsLink::disconnect_later() {
  std::lock_guard lock(door_->mutex());
  if (close_now || close_when_sent) return;  // already closing: a close at once stays one
  close_when_sent = true;
  close_by = monotonic_ns() + 5'000'000'000;  // what is queued gets this long to go out
}
void WsLink::disconnect_now() {
  WsDoor* door;
  {
    std::lock_guard lock(door_->mutex());
    door = door_;
    for_session = false;  // no event follows
    door_->close_link(*this, LWS_CLOSE_STATUS_GOINGAWAY, "closed by the server");
  }
  door->request_service();
}
bool WsLink::told_all() const {
  std::lock_guard lock(door_->mutex());
  return !wsi || (close_when_sent && out.empty());
}
bool WsLink::sending() const {
  std::lock_guard lock(door_->mutex());
  return !out.empty();
}
PeerNet WsLink::net() const {
  std::lock_guard lock(door_->mutex());
  return net_;
}
void WsLink::set_backstop_timeout(std::uint32_t ms) {
  std::lock_guard lock(door_->mutex());
  backstop_ms = ms;
}

int WsDoor::callback(lws* wsi, lws_callback_reasons reason, void* user, void* in, std::size_t len) {
  lws_context* context = lws_get_context(wsi);
  auto* door = context ? static_cast<WsDoor*>(lws_context_user(context)) : nullptr;
  if (!door) return lws_callback_http_dummy(wsi, reason, user, in, len);
  return door->on_callback(wsi, reason, static_cast<WsLink**>(user), in, len);
}

int WsDoor::on_callback(lws* wsi, lws_callback_reasons reason, WsLink** slot, void* in, std::size_t len) {
  switch (reason) {
    case LWS_CALLBACK_FILTER_NETWORK_CONNECTION: {
      const PeerAddress a = address_of(static_cast<int>(reinterpret_cast<std::intptr_t>(in)));
      std::lock_guard lock(mutex_);
      if (upgraded_open_ >= cfg_.max_peers) {
        ++stats_.refused_full;
        cut_sources_.note(a.ip);
        return 1;
      }
      // A trusted proxy's connections are counted by the browser's address once their request
      // names it; loopback (not a trusted proxy) is exempt.
      if (a.ok && !a.loopback && !trusted(a.text)) {
        const auto it = per_address_.find(a.text);
        if (it != per_address_.end() && it->second >= kDoorConnectionsPerAddress) {
          ++stats_.refused_address;
          cut_sources_.note(a.ip);
          return 1;
        }
      }
      return 0;
    }
    case LWS_CALLBACK_SERVER_NEW_CLIENT_INSTANTIATED: {
      const PeerAddress a = address_of(lws_get_socket_fd(wsi));
      if (!a.ok) break;  // the listening socket
      std::lock_guard lock(mutex_);
      Open& o = open_[wsi];
      o = Open{};
      o.since_ns = monotonic_ns();
      o.seq = ++next_seq_;
      o.proxied = trusted(a.text);
      o.ip = a.ip;
      o.peer = a;
      if (!a.loopback && !o.proxied) {
        o.address = a.text;
        ++per_address_[a.text];
      }
      handshake_order_.emplace_back(wsi, o.seq);
      ++handshakes_;
      ++stats_.connections;
      // The budget is full: the oldest unfinished handshake makes room (it had the most time).
      if (handshakes_ > cfg_.max_handshakes) evict_oldest_handshake();
      stats_.handshakes_peak = std::max<std::uint64_t>(stats_.handshakes_peak, handshakes_);
      break;
    }
    case LWS_CALLBACK_WSI_DESTROY: {
      std::lock_guard lock(mutex_);
      const auto it = open_.find(wsi);
      if (it == open_.end()) break;
      const Open& o = it->second;
      if (!o.requested) ++stats_.closed_before_request;
      if (!o.address.empty() && --per_address_[o.address] == 0) per_address_.erase(o.address);
      if (o.upgraded) --upgraded_open_;
      else if (!o.closing) --handshakes_;
      open_.erase(it);
      break;
    }
    case LWS_CALLBACK_FILTER_HTTP_CONNECTION: {
      const bool page = lws_hdr_total_length(wsi, WSI_TOKEN_UPGRADE) == 0;
      const bool inside = !page || inside_web_root(static_cast<const char*>(in), len);
      if (!take_request(wsi)) return 1;
      std::lock_guard lock(mutex_);
      if (!inside) {
        ++stats_.refused_outside_root;
        return 1;
      }
      if (page) ++stats_.pages_served;
      break;
    }
    case LWS_CALLBACK_HTTP_CONFIRM_UPGRADE: {
      // Before libwebsockets matches the subprotocol (a list without "lockstep" would be closed
      // without a callback, uncounted): the request is whole here.
      if (!take_request(wsi)) return -1;
      char wanted[256] = "";
      std::lock_guard lock(mutex_);
      if (lws_hdr_copy(wsi, wanted, sizeof wanted, WSI_TOKEN_PROTOCOL) <= 0 || !names_subprotocol(wanted)) {
        ++stats_.refused_protocol;
        return -1;
      }
      return 0;
    }
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
      char wanted[256] = "";
      std::lock_guard lock(mutex_);
      if (lws_hdr_copy(wsi, wanted, sizeof wanted, WSI_TOKEN_PROTOCOL) <= 0 || !names_subprotocol(wanted)) {
        ++stats_.refused_protocol;
        return 1;
      }
      return 0;
    }
    case LWS_CALLBACK_ESTABLISHED: {
      PeerAddress a = address_of(lws_get_socket_fd(lws_get_network_wsi(wsi)));  // the TCP connection's, under TLS too
      std::lock_guard lock(mutex_);
      if (auto it = open_.find(wsi); it != open_.end()) {
        Open& o = it->second;
        if (!a.ok) a = o.peer;
        if (o.forwarded.ok) a = o.forwarded;
        if (!o.upgraded) {
          if (!o.closing) --handshakes_;
          o.upgraded = true;
          o.closing = false;
          ++upgraded_open_;
        }
      }
      WsLink* link;
      if (!free_.empty()) {
        link = free_.back();
        free_.pop_back();
        const std::uint64_t generation = link->generation + 1;
        *link = WsLink(this);
        link->generation = generation;
      } else {
        links_.push_back(std::make_unique<WsLink>(this));
        link = links_.back().get();
      }
      link->wsi = wsi;
      link->for_session = true;
      link->ip_ = a.ip;
      link->address_ = a.text + ":" + std::to_string(a.port);
      link->heard = monotonic_ns();
      *slot = link;
      ++stats_.upgraded;
      push({NetEvent::Type::Connect, link, link->generation, 0, {}, link->heard});
      lws_set_timer_usecs(wsi, kPingEveryUs);
      break;
    }
    case LWS_CALLBACK_CLOSED: {
      if (!slot || !*slot) break;
      std::lock_guard lock(mutex_);
      WsLink* link = *slot;
      *slot = nullptr;
      link->wsi = nullptr;
      link->out.clear();
      link->out_bytes = 0;
      if (link->for_session) push({NetEvent::Type::Disconnect, link, link->generation, 0, {}, monotonic_ns()});
      else free_.push_back(link);
      break;
    }
    case LWS_CALLBACK_RECEIVE:
      if (!slot || !*slot) return -1;
      return on_receive(wsi, **slot, static_cast<const std::uint8_t*>(in), len);
    case LWS_CALLBACK_RECEIVE_PONG: {
      if (!slot || !*slot) break;
      std::lock_guard lock(mutex_);
      WsLink& link = **slot;
      const std::int64_t now = monotonic_ns();
      link.heard = now;
      std::int64_t sent = 0;
      if (len == sizeof sent) {
        std::memcpy(&sent, in, sizeof sent);
        if (sent > 0 && sent <= now && now - sent < 60'000'000'000) {
          // Smoothed as ENet does: an eighth of each sample, the variance a quarter.
          const auto sample = static_cast<std::uint32_t>((now - sent) / 1000);
          PeerNet& n = link.net_;
          if (n.rtt_us == 0) {
            n.rtt_us = sample;
            n.rtt_var_us = sample / 2;
          } else {
            const std::uint32_t diff = sample > n.rtt_us ? sample - n.rtt_us : n.rtt_us - sample;
            n.rtt_var_us = n.rtt_var_us - n.rtt_var_us / 4 + diff / 4;
            n.rtt_us = n.rtt_us - n.rtt_us / 8 + sample / 8;
          }
        }
      }
      break;
    }
    case LWS_CALLBACK_TIMER: {
      if (!slot || !*slot) break;
      std::lock_guard lock(mutex_);
      WsLink& link = **slot;
      const std::int64_t now = monotonic_ns();
      if (now - link.heard > std::int64_t{link.backstop_ms} * 1'000'000)
        close_link(link, LWS_CLOSE_STATUS_GOINGAWAY, "silent past the backstop");
      // A peer that reads nothing never lets the socket be written, so a close (or the rest of
      // what it was sent) cannot go out: past its time the connection is dropped without it.
      if ((link.close_now || link.close_when_sent) && now > link.close_by) {
        lws_set_timeout(wsi, PENDING_TIMEOUT_USER_OK, LWS_TO_KILL_ASYNC);
        break;
      }
      link.ping_due = true;
      lws_callback_on_writable(wsi);
      lws_set_timer_usecs(wsi, kPingEveryUs);
      break;
    }
    case LWS_CALLBACK_SERVER_WRITEABLE:
      if (!slot || !*slot) return -1;
      return on_writable(wsi, **slot);
    case LWS_CALLBACK_EVENT_WAIT_CANCELLED: {
      std::lock_guard lock(mutex_);
      for (const auto& link : links_)
        if (link->wsi && (!link->out.empty() || link->close_now || link->close_when_sent || link->ping_due))
          lws_callback_on_writable(link->wsi);
      break;
    }
    default: break;
  }
  return lws_callback_http_dummy(wsi, reason, slot, in, len);
}

int WsDoor::on_receive(lws* wsi, WsLink& link, const std::uint8_t* data, std::size_t len) {
  std::lock_guard lock(mutex_);
  const std::int64_t now = monotonic_ns();
  link.heard = now;
  if (lws_is_first_fragment(wsi)) {
    if (now - link.window_start > 1'000'000'000) {
      link.window_start = now;
      link.window_messages = 0;
    }
    if (++link.window_messages > kDoorMessagesPerSecond)
      return refuse(wsi, link, stats_.flooding_cut, LWS_CLOSE_STATUS_POLICY_VIOLATION, "over the message rate");
    link.in.clear();
  }
  if (!lws_frame_is_binary(wsi))
    return refuse(wsi, link, stats_.text_refused, LWS_CLOSE_STATUS_UNACCEPTABLE_OPCODE, "binary messages only");
  if (link.in.size() + len > limits_.max_packet_bytes + 1)
    return refuse(wsi, link, stats_.oversized_refused, LWS_CLOSE_STATUS_MESSAGE_TOO_LARGE, "a message over the size bound");
  link.in.insert(link.in.end(), data, data + len);
  if (!lws_is_final_fragment(wsi) || lws_remaining_packet_payload(wsi) > 0) return 0;
  const std::size_t n = link.in.size();
  traffic_.bytes_received += n + frame_header_bytes(n, true);
  ++traffic_.packets_received;
  if (n < 2 || link.in[0] >= kChannelCount)
    return refuse(wsi, link, stats_.malformed, LWS_CLOSE_STATUS_POLICY_VIOLATION, "a message without a channel");
  if (link.waiting_bytes + n > limits_.max_waiting_bytes)
    return refuse(wsi, link, stats_.flooding_cut, LWS_CLOSE_STATUS_POLICY_VIOLATION, "over the bytes that may wait");
  link.waiting_bytes += n - 1;
  push({NetEvent::Type::Receive, &link, link.generation, link.in[0],
        std::vector<std::uint8_t>(link.in.begin() + 1, link.in.end()), now});
  link.in.clear();
  return 0;
}

int WsDoor::on_writable(lws* wsi, WsLink& link) {
  std::vector<std::uint8_t> frame;
  {
    std::lock_guard lock(mutex_);
    if (link.close_now) {
      lws_close_reason(wsi, link.close_code, reinterpret_cast<unsigned char*>(link.close_reason.data()),
                       link.close_reason.size());
      return -1;
    }
    if (link.ping_due) {
      link.ping_due = false;
      std::uint8_t ping[LWS_PRE + sizeof(std::int64_t)];
      const std::int64_t now = monotonic_ns();
      std::memcpy(ping + LWS_PRE, &now, sizeof now);
      if (lws_write(wsi, ping + LWS_PRE, sizeof now, LWS_WRITE_PING) < 0) return -1;
      if (!link.out.empty() || link.close_when_sent) lws_callback_on_writable(wsi);
      return 0;
    }
    if (link.out.empty()) {
      if (link.close_when_sent) {
        lws_close_reason(wsi, LWS_CLOSE_STATUS_NORMAL, nullptr, 0);
        return -1;
      }
      return 0;
    }
    frame = std::move(link.out.front());
    link.out.pop_front();
    const std::size_t n = frame.size() - LWS_PRE;
    link.out_bytes -= n;
    traffic_.bytes_sent += n + frame_header_bytes(n, false);
    ++traffic_.packets_sent;
  }
  const std::size_t n = frame.size() - LWS_PRE;
  if (lws_write(wsi, frame.data() + LWS_PRE, n, LWS_WRITE_BINARY) < static_cast<int>(n)) return -1;
  std::lock_guard lock(mutex_);
  if (!link.out.empty() || link.close_when_sent) lws_callback_on_writable(wsi);
  return 0;
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

bool WsDoor::start(Error* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = {ErrorKind::Usage, why, "websocket"};
    return false;
  };
  if (cfg_.tls_cert.empty() != cfg_.tls_key.empty()) return fail("the WebSocket door needs both a certificate and its key, or neither");
  if (!cfg_.web_root.empty()) {
    struct stat st {};
    if (stat(cfg_.web_root.c_str(), &st) != 0 || !S_ISDIR(st.st_mode))
      return fail("--web-root: '" + cfg_.web_root + "' is not a folder");
    char resolved[PATH_MAX];
    if (!realpath(cfg_.web_root.c_str(), resolved)) return fail("--web-root: '" + cfg_.web_root + "' cannot be resolved");
    web_root_real_ = resolved;
  }
  // Every handshake in the budget is a descriptor: the soft limit is raised to fit them (up to
  // the hard one), or the budget shrinks to what fits beside the session's own.
  const std::size_t wanted = cfg_.max_peers + cfg_.max_handshakes + 256;
  rlimit files{};
  if (getrlimit(RLIMIT_NOFILE, &files) == 0 && files.rlim_cur < wanted) {
    files.rlim_cur = std::min<rlim_t>(files.rlim_max, wanted);
    setrlimit(RLIMIT_NOFILE, &files);
    getrlimit(RLIMIT_NOFILE, &files);
    if (files.rlim_cur < wanted) {
      const std::size_t fits = files.rlim_cur > cfg_.max_peers + 256 + 16 ? files.rlim_cur - cfg_.max_peers - 256 : 16;
      LOCKSTEP_LOG_WARN("the WebSocket door holds %zu handshakes at once, not %zu: %llu open files allowed (ulimit -n)",
                        fits, cfg_.max_handshakes, static_cast<unsigned long long>(files.rlim_cur));
      cfg_.max_handshakes = fits;
    }
  }
  event_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (event_fd_ < 0) return fail("cannot make an eventfd");
  lws_set_log_level(LLL_ERR, [](int, const char* line) {
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    LOCKSTEP_LOG_WARN("WebSocket door: %s", text.c_str());
  });
  protocols_[0] = {kSubprotocol, &WsDoor::callback, sizeof(WsLink*), limits_.max_packet_bytes + 16, 0, nullptr, 0};
  protocols_[1] = {nullptr, nullptr, 0, 0, 0, nullptr, 0};
  wasm_type_ = {nullptr, nullptr, ".wasm", "application/wasm"};
  js_type_ = {&wasm_type_, nullptr, ".js", "text/javascript"};
  if (!cfg_.web_root.empty()) {
    mount_.mountpoint = "/";
    mount_.mountpoint_len = 1;
    mount_.origin = cfg_.web_root.c_str();
    mount_.def = "index.html";
    mount_.origin_protocol = LWSMPRO_FILE;
    mount_.extra_mimetypes = &js_type_;
  }
  lws_context_creation_info info{};
  info.port = cfg_.port;
  info.iface = cfg_.bind.empty() ? nullptr : cfg_.bind.c_str();
  info.protocols = protocols_;
  info.mounts = cfg_.web_root.empty() ? nullptr : &mount_;
  info.user = this;
  info.gid = -1;
  info.uid = -1;
  info.timeout_secs = kDoorHandshakeSeconds;
  info.timeout_secs_ah_idle = kDoorHandshakeSeconds;
  info.fd_limit_per_thread = static_cast<unsigned>(cfg_.max_peers + cfg_.max_handshakes + 32);
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  if (!cfg_.tls_cert.empty()) {
    info.options |= LWS_SERVER_OPTION_DO_SSL_GLOBAL_INIT;
    info.ssl_cert_filepath = cfg_.tls_cert.c_str();
    info.ssl_private_key_filepath = cfg_.tls_key.c_str();
  }
  context_ = lws_create_context(&info);
  if (!context_)
    return fail(cfg_.tls_cert.empty() ? "cannot open the WebSocket door on port " + std::to_string(cfg_.port)
                                      : "cannot open the WebSocket door on port " + std::to_string(cfg_.port) +
                                            " (does the certificate '" + cfg_.tls_cert + "' load with its key?)");
  lws_vhost* vhost = lws_get_vhost_by_name(context_, "default");
  const int port = vhost ? lws_get_vhost_listen_port(vhost) : -1;
  if (port <= 0) return fail("the WebSocket door did not open a port");
  port_ = static_cast<std::uint16_t>(port);
  lws_sul_schedule(context_, 0, &sweep_.sul, &WsDoor::sweep, 100 * LWS_US_PER_MS);
  thread_ = std::thread([this] {
    while (!stopping_) lws_service(context_, 0);
  });
  return true;
}

}  // namespace

std::unique_ptr<Transport> listen_websocket(const WebSocketDoorConfig& config, const TransportLimits& limits,
                                            Error* error) {
  auto door = std::make_unique<WsDoor>(config, limits);
  if (!door->start(error)) return nullptr;
  return door;
}


}  // namespace lockstep
