// The browser's transport: one WebSocket to the server's WebSocket door (docs/PROTOCOL.md §17),
// over the browser's own WebSocket (emscripten/websocket.h), and beside it, when the server offers
// one, a WebRTC data channel for the play messages (§17.1, datagram_channel.js): unordered and
// unreliable, as ENet's play channel is, so a lost message holds up nothing after it. The page
// offers the channel as soon as the WebSocket opens; until it opens, and whenever it fails, play
// goes over the WebSocket. A browser has no UDP socket of its own, so this is the network the
// client session gets in the web build (udp_network() below). The browser calls back from its
// event loop between the page's frames; events wait in a queue for poll().
#include <emscripten/websocket.h>

#include <cstring>
#include <deque>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/transport.hpp"
#include "web_transport.hpp"

extern "C" {
// datagram_channel.js
void ls_rtc_open();
void ls_rtc_answer(const char* text, int length);
int ls_rtc_send(const std::uint8_t* bytes, int length);
void ls_rtc_close();
}

namespace lockstep {
namespace {

bool g_secure = false;
bool g_datagrams = true;
constexpr std::uint8_t kSignalChannel = 2;               // the door's signalling messages (§17.1)
constexpr std::int64_t kDatagramOpenWithinNs = 10'000'000'000;  // from the WebSocket's open
class WebTransport;
WebTransport* g_transport = nullptr;  // the one the data channel's reports go to

class WebLink final : public NetPeer {
 public:
  EMSCRIPTEN_WEBSOCKET_T socket = 0;
  std::string url;
  bool open = false, closed = false, event_owed = true;
  std::uintptr_t tag_ = 0;

  void disconnect_later() override { close(1000, "leaving"); }
  void disconnect_now() override {
    event_owed = false;
    close(1000, "leaving");
  }
  void reset() override { disconnect_now(); }
  [[nodiscard]] bool told_all() const override { return closed || buffered() == 0; }
  [[nodiscard]] bool sending() const override { return buffered() > 0; }
  [[nodiscard]] PeerNet net() const override { return {}; }  // the browser measures no round trip for a page
  [[nodiscard]] std::size_t channel_count() const override { return kChannelCount; }
  [[nodiscard]] std::uint32_t ip() const override { return 0; }
  [[nodiscard]] std::string address() const override { return url; }
  void set_tag(std::uintptr_t tag) override { tag_ = tag; }
  [[nodiscard]] std::uintptr_t tag() const override { return tag_; }
  void set_backstop_timeout(std::uint32_t) override {}  // the session's own silence bound judges
  [[nodiscard]] bool stream() const override { return true; }

  void close(unsigned short code, const char* reason) {
    if (socket && !closed) emscripten_websocket_close(socket, code, reason);
  }
  [[nodiscard]] std::size_t buffered() const {
    unsigned long long n = 0;
    if (socket && open && !closed) emscripten_websocket_get_buffered_amount(socket, &n);
    return static_cast<std::size_t>(n);
  }
};

struct Pending {
  NetEvent::Type type;
  std::uint8_t channel = 0;
  std::vector<std::uint8_t> bytes;
  std::int64_t at = 0;
};

class WebTransport final : public Transport {
 public:
  WebTransport() { g_transport = this; }
  ~WebTransport() override {
    if (g_transport == this) g_transport = nullptr;
    end_datagrams();
    if (link_.socket) {
      link_.close(1000, "leaving");
      emscripten_websocket_delete(link_.socket);
    }
  }
  NetPeer* connect(const std::string& host, std::uint16_t port, std::string* error) override {
    if (link_.socket) {  // a new connection: the old one closed, and nothing of it delivered
      end_datagrams();  // the next connection says which way its play goes
      link_.close(1000, "reconnecting");
      emscripten_websocket_delete(link_.socket);
      link_ = WebLink{};
      events_.clear();
    }
    link_.url = std::string(g_secure ? "wss://" : "ws://") + host + ":" + std::to_string(port) + "/";
    EmscriptenWebSocketCreateAttributes attributes;
    emscripten_websocket_init_create_attributes(&attributes);
    attributes.url = link_.url.c_str();
    attributes.protocols = "lockstep";
    attributes.createOnMainThread = EM_TRUE;
    const EMSCRIPTEN_WEBSOCKET_T socket = emscripten_websocket_new(&attributes);
    if (socket <= 0) {
      if (error) *error = "the browser cannot open a WebSocket to " + link_.url;
      return nullptr;
    }
    link_.socket = socket;
    emscripten_websocket_set_onopen_callback(socket, this, &WebTransport::on_open);
    emscripten_websocket_set_onmessage_callback(socket, this, &WebTransport::on_message);
    emscripten_websocket_set_onclose_callback(socket, this, &WebTransport::on_close);
    emscripten_websocket_set_onerror_callback(socket, this, &WebTransport::on_error);
    return &link_;
  }
  NetEvent poll() override {
    const std::int64_t now = monotonic_ns();
    if (datagrams_ == Path::Offered && now - offered_at_ > kDatagramOpenWithinNs)
      close_datagrams("the data channel did not open within 10 s (UDP blocked on the way?)");
    if (!fallback_.empty() && now - fallback_at_ > 500'000'000) {
      if (link_.open && !link_.closed) {
        path_ = fallback_;
        LOCKSTEP_LOG_INFO("playing over the %s", fallback_.c_str());
      }
      fallback_.clear();
    }
    while (!events_.empty()) {
      Pending p = std::move(events_.front());
      events_.pop_front();
      if (p.type == NetEvent::Type::Disconnect && !link_.event_owed) continue;
      NetEvent ev;
      ev.type = p.type;
      ev.peer = &link_;
      ev.arrived_ns = p.at;
      if (p.type == NetEvent::Type::Receive) {
        auto* held = new std::vector<std::uint8_t>(std::move(p.bytes));
        ev.channel = p.channel;
        ev.data = *held;
        ev.holder = {held, [](void* x) { delete static_cast<std::vector<std::uint8_t>*>(x); }};
      }
      return ev;
    }
    return {};
  }
  void send(NetPeer*, Channel channel, std::span<const std::uint8_t> bytes) override {
    if (!link_.open || link_.closed) return;
    if (channel == Channel::Play && datagrams_ == Path::Open) {
      if (ls_rtc_send(bytes.data(), static_cast<int>(bytes.size()))) {
        traffic_.bytes_sent += bytes.size() + kDatagramOverhead;
        ++traffic_.packets_sent;
        ++datagrams_sent_;
        return;
      }
      close_datagrams("the data channel would not send");
    }
    send_frame(static_cast<std::uint8_t>(channel), bytes);
  }
  void flush() override {}  // the browser sends at once
  [[nodiscard]] int fd() const override { return -1; }
  [[nodiscard]] bool reliable_in_flight() const override { return false; }
  [[nodiscard]] std::int64_t heard_ns(const NetPeer*) const override { return heard_; }
  [[nodiscard]] std::uint16_t port() const override { return 0; }
  [[nodiscard]] NetTraffic traffic() const override { return traffic_; }

  // The data channel's reports (datagram_channel.js through the exported functions below).
  void on_offer(const char* sdp) {
    if (datagrams_ != Path::Offering || !link_.open || link_.closed) return;
    send_frame(kSignalChannel, {reinterpret_cast<const std::uint8_t*>(sdp), std::strlen(sdp)});
    datagrams_ = Path::Offered;
  }
  void on_state(bool open, const char* why) {
    if (open) {
      if (datagrams_ != Path::Offered) return;
      datagrams_ = Path::Open;
      path_ = "datagrams (WebRTC data channel)";
      LOCKSTEP_LOG_INFO("playing over a WebRTC data channel");
      return;
    }
    if (datagrams_ == Path::None) return;
    const bool was_open = datagrams_ == Path::Open;
    datagrams_ = Path::None;
    const std::string said = std::string("WebSocket (") + (why ? why : "no data channel") + ")";
    if (!was_open) {
      path_ = said;
      LOCKSTEP_LOG_INFO("playing over the WebSocket: %s", why ? why : "");
      return;
    }
    // An open channel that closes as its connection ends (the session over, the server gone) is
    // not a fallback: the path is said to change only if the WebSocket is still open a moment on.
    fallback_ = said;
    fallback_at_ = monotonic_ns();
  }
  void on_datagram(const std::uint8_t* bytes, std::size_t length) {
    if (datagrams_ != Path::Open || length == 0) return;
    const std::int64_t now = monotonic_ns();
    heard_ = now;
    traffic_.bytes_received += length + kDatagramOverhead;
    ++traffic_.packets_received;
    ++datagrams_received_;
    events_.push_back({NetEvent::Type::Receive, static_cast<std::uint8_t>(Channel::Play), {bytes, bytes + length}, now});
  }
  [[nodiscard]] const std::string& path() const { return path_; }
  [[nodiscard]] std::uint64_t datagrams_sent() const { return datagrams_sent_; }
  [[nodiscard]] std::uint64_t datagrams_received() const { return datagrams_received_; }

 private:
  // The data channel: none (play over the WebSocket), its offer being made, offered, or open.
  enum class Path { None, Offering, Offered, Open };
  // A data channel message's headers on the wire: IP and UDP, DTLS's record, SCTP's common
  // header and DATA chunk.
  static constexpr std::size_t kDatagramOverhead = 20 + 8 + 13 + 16 + 12 + 16;

  void close_datagrams(const char* why) {
    if (datagrams_ == Path::None) return;
    ls_rtc_close();
    on_state(false, why);
  }
  // The connection is over: the channel goes with it, and the path says what play went over.
  void end_datagrams() {
    if (datagrams_ == Path::None) return;
    ls_rtc_close();
    datagrams_ = Path::None;
  }
  void on_signal(const std::uint8_t* data, std::size_t length) {
    if (length < 1) return;
    const std::string_view text(reinterpret_cast<const char*>(data) + 1, length - 1);
    if (data[0] == 'a' && datagrams_ == Path::Offered) return ls_rtc_answer(text.data(), static_cast<int>(text.size()));
    if (data[0] == 'n' || data[0] == 'x') close_datagrams(std::string(text).c_str());
  }

  static EM_BOOL on_open(int, const EmscriptenWebSocketOpenEvent*, void* user) {
    auto* self = static_cast<WebTransport*>(user);
    self->link_.open = true;
    self->heard_ = monotonic_ns();
    self->events_.push_back({NetEvent::Type::Connect, 0, {}, self->heard_});
    self->path_ = "WebSocket";
    if (g_datagrams) {
      self->datagrams_ = Path::Offering;
      self->offered_at_ = self->heard_;
      self->path_ = "WebSocket (a data channel is being opened)";
      ls_rtc_open();
    }
    return EM_TRUE;
  }
  static EM_BOOL on_message(int, const EmscriptenWebSocketMessageEvent* e, void* user) {
    auto* self = static_cast<WebTransport*>(user);
    const std::int64_t now = monotonic_ns();
    self->heard_ = now;
    self->traffic_.bytes_received += e->numBytes + (e->numBytes < 126 ? 2 : 4);
    ++self->traffic_.packets_received;
    // The server sends binary messages of a channel byte and a protocol message; anything else is
    // not from a lockstep server and is dropped.
    if (!e->isText && e->numBytes >= 1 && e->data[0] == kSignalChannel) {
      self->on_signal(e->data + 1, e->numBytes - 1);
      return EM_TRUE;
    }
    if (e->isText || e->numBytes < 2 || e->data[0] >= kChannelCount) return EM_TRUE;
    self->events_.push_back({NetEvent::Type::Receive, e->data[0], {e->data + 1, e->data + e->numBytes}, now});
    return EM_TRUE;
  }
  static EM_BOOL on_close(int, const EmscriptenWebSocketCloseEvent* e, void* user) {
    auto* self = static_cast<WebTransport*>(user);
    if (self->link_.closed) return EM_TRUE;
    self->link_.closed = true;
    self->end_datagrams();
    if (e->code != 1000) LOCKSTEP_LOG_WARN("the WebSocket closed: %u %s", e->code, e->reason);
    self->events_.push_back({NetEvent::Type::Disconnect, 0, {}, monotonic_ns()});
    return EM_TRUE;
  }
  static EM_BOOL on_error(int, const EmscriptenWebSocketErrorEvent*, void* user) {
    auto* self = static_cast<WebTransport*>(user);
    if (self->link_.closed) return EM_TRUE;
    self->link_.closed = true;
    self->end_datagrams();
    self->events_.push_back({NetEvent::Type::Disconnect, 0, {}, monotonic_ns()});
    return EM_TRUE;
  }

  WebLink link_;
  Path datagrams_ = Path::None;
  std::int64_t offered_at_ = 0;
  std::string path_ = "WebSocket";
  std::string fallback_;  // an open channel closed: said as the path once the WebSocket outlives it
  std::int64_t fallback_at_ = 0;
  std::uint64_t datagrams_sent_ = 0, datagrams_received_ = 0;
  std::deque<Pending> events_;
  std::vector<std::uint8_t> scratch_;
  // One WebSocket message: the channel byte, then `bytes`, counted with its frame's header and mask.
  void send_frame(std::uint8_t channel, std::span<const std::uint8_t> bytes) {
    scratch_.resize(bytes.size() + 1);
    scratch_[0] = channel;
    if (!bytes.empty()) std::memcpy(scratch_.data() + 1, bytes.data(), bytes.size());
    if (emscripten_websocket_send_binary(link_.socket, scratch_.data(), static_cast<std::uint32_t>(scratch_.size())) ==
        EMSCRIPTEN_RESULT_SUCCESS) {
      traffic_.bytes_sent += scratch_.size() + (scratch_.size() < 126 ? 6 : 8);
      ++traffic_.packets_sent;
    }
  }
  NetTraffic traffic_;
  std::int64_t heard_ = 0;
};

class WebNetwork final : public Network {
 public:
  std::unique_ptr<Transport> listen(const std::string&, std::uint16_t, std::size_t, const TransportLimits&,
                                    Error* error) override {
    if (error) *error = {ErrorKind::Usage, "a browser cannot listen", ""};
    return nullptr;
  }
  std::unique_ptr<Transport> client(const TransportLimits&, std::string*, const std::string&) override {
    return std::make_unique<WebTransport>();
  }
};

}  // namespace

void set_web_secure(bool secure) { g_secure = secure; }
void set_web_datagrams(bool datagrams) { g_datagrams = datagrams; }
std::string web_play_path() { return g_transport ? g_transport->path() : "none"; }
std::uint64_t web_datagrams_sent() { return g_transport ? g_transport->datagrams_sent() : 0; }
std::uint64_t web_datagrams_received() { return g_transport ? g_transport->datagrams_received() : 0; }

// The browser has no UDP: in the web build the sessions' network is the WebSocket one.
Network& udp_network() {
  static WebNetwork network;
  return network;
}

}  // namespace lockstep

// The data channel's reports, called from datagram_channel.js.
extern "C" {
EMSCRIPTEN_KEEPALIVE void ls_rtc_offer(const char* sdp) {
  if (lockstep::g_transport) lockstep::g_transport->on_offer(sdp);
}
EMSCRIPTEN_KEEPALIVE void ls_rtc_state(int open, const char* why) {
  if (lockstep::g_transport) lockstep::g_transport->on_state(open != 0, why);
}
EMSCRIPTEN_KEEPALIVE void ls_rtc_message(const std::uint8_t* bytes, int length) {
  if (lockstep::g_transport && length > 0) lockstep::g_transport->on_datagram(bytes, static_cast<std::size_t>(length));
}
}
