// The WebSocket door's inside (websocket_door.hpp is its face): the door (WsDoor, a Transport),
// its connections (WsLink) and what its files share. One job a file:
//   websocket_door.cpp            the session's side: events out, messages in, starting the door
//   websocket_door_session.cpp    the WebSocket session on the door's thread: libwebsockets'
//                                 callback, messages assembled and bounded, frames written, pings
//   websocket_door_admission.cpp  HTTP serving and admission: requests taken, the per-address and
//                                 handshake budgets, the sweep of slow handshakes, the web root
// libwebsockets runs its own event loop (this Debian build has no external poll hooks), so the
// door runs it on a thread of its own; the session's thread and that one meet in a queue of
// events (with an eventfd the session waits on) and each link's queue of messages to send, all
// under one mutex. Every libwebsockets call but lws_cancel_service() is made on the door's thread.
#pragma once

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
#include "webrtc_door.hpp"


namespace lockstep {
namespace ws {
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
std::uint32_t fold(const in6_addr& a);
// `a` with its text, ok, and loopback set from its ip.
PeerAddress named(PeerAddress a, std::string text);
PeerAddress address_of(int fd);
// The address a trusted proxy names last in X-Forwarded-For ("client, proxy1, ..." : the last is
// the one that proxy saw), as address_of() gives it; not ok when the header holds no address.
PeerAddress forwarded_address(std::string_view list);
// Whether a Sec-WebSocket-Protocol header's comma-separated list names "lockstep" itself.
bool names_subprotocol(std::string_view list);
std::size_t frame_header_bytes(std::size_t payload, bool masked);

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
  // The datagram path (under the mutex): offers made, and whether the page's play messages come
  // over its data channel (the last one did), so that the server's go that way too.
  std::uint32_t offers = 0;
  bool datagrams = false;
};

struct InEvent {
  NetEvent::Type type;
  WsLink* link;
  std::uint64_t generation = 0;
  std::uint8_t channel = 0;
  std::vector<std::uint8_t> bytes;
  std::int64_t arrived_ns = 0;
};

class WsDoor final : public Transport, public rtc::RtcSink {
 public:
  WsDoor(const WebSocketDoorConfig& cfg, const TransportLimits& limits) : cfg_(cfg), limits_(limits) {}
  ~WsDoor() override {
    rtc_.reset();  // its thread calls back into the door: stopped first
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
  NetEvent poll() override;

  void send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) override;

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
    DoorStats out;
    {
      std::lock_guard lock(mutex_);
      out = stats_;
      out.traffic = traffic_;
    }
    if (rtc_) {
      const rtc::RtcStats r = rtc_->stats();
      out.datagram_offers = r.offers;
      out.datagram_channels = r.opened;
      out.datagram_failed = r.failed + r.refused;
      out.datagram_messages_in = r.messages_in;
      out.datagram_messages_out = r.messages_out;
      out.datagram_dropped = r.dropped_out;
      out.traffic.bytes_received += r.bytes_in;
      out.traffic.bytes_sent += r.bytes_out;
    }
    return out;
  }

  // The datagram path's calls, on its thread (rtc::RtcSink).
  void on_answer(rtc::RtcKey key, std::string answer, std::string why) override;
  void on_message(rtc::RtcKey key, std::span<const std::uint8_t> bytes, std::int64_t arrived_ns) override;
  void on_closed(rtc::RtcKey key, const std::string& why) override;
  void on_loss(rtc::RtcKey key, std::uint32_t loss_ppm) override;

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
  // Under the mutex: the source of a connection refused or cut, for the log of what was cut.
  void note_cut(lws* wsi) {
    const auto it = open_.find(wsi);
    if (it != open_.end()) cut_sources_.note(it->second.forwarded.ok ? it->second.forwarded.ip : it->second.ip);
  }
  // Under the mutex: a signalling message to the page ('a' answer, 'n' refusal, 'x' close).
  void signal(WsLink& link, char kind, std::string_view text);
  // Under the mutex: one frame queued for `link` (LWS_PRE, the channel byte, `head`, then `bytes`),
  // its bytes counted as waiting, the service loop told.
  void queue_frame(WsLink& link, std::uint8_t channel, std::string_view head, std::span<const std::uint8_t> bytes);
  // The link `key` names, while that connection of it is open and the session's; else null.
  WsLink* link_of(rtc::RtcKey key);
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
  std::unique_ptr<rtc::RtcDoor> rtc_;  // the datagram path, with cfg_.webrtc
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
  lws_http_mount mount_{}, hashed_mount_{};
  std::string hashed_root_;
  lws_protocol_vhost_options wasm_type_{}, js_type_{};
  // The page's files as libwebsockets reads them: its own file operations, except that a browser
  // that takes gzip gets FILE.gz where the web root has one (web/CMakeLists.txt writes them).
  struct GzipFiles {
    lws_plat_file_ops ops;                 // first: libwebsockets hands these back to open()
    const lws_plat_file_ops* plain = nullptr;
    std::string root;  // the web root's real path: a .gz that resolves outside it is not opened
  } gzip_files_{};
};

}  // namespace ws
}  // namespace lockstep
