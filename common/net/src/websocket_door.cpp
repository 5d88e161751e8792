// The WebSocket door over libwebsockets (docs/PROTOCOL.md §17), the session's side: events taken,
// messages queued to send, the links' commands, and starting the door (websocket_door_impl.hpp
// says which file holds the rest).
#include "lockstep/websocket_door.hpp"

#include "websocket_door_impl.hpp"

namespace lockstep {
namespace ws {

NetEvent WsDoor::poll() {
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

void WsDoor::send(NetPeer* peer, Channel channel, std::span<const std::uint8_t> bytes) {
  auto* link = static_cast<WsLink*>(peer);
  std::lock_guard lock(mutex_);
  if (!link->for_session || link->close_now || link->close_when_sent || !link->wsi) return;
  if (channel == Channel::Play && link->datagrams) {
    if (rtc_->send({link, link->generation}, bytes)) return;
    link->datagrams = false;  // the channel is gone: the stream carries play again
  }
  if (channel == Channel::Play && link->out_bytes > kDoorPlayBacklogBytes) {
    ++stats_.play_dropped;  // as a datagram lost: the play messages after it carry it again
    return;
  }
  if (link->out_bytes + bytes.size() > kDoorBacklogBytes) {
    ++stats_.backlog_cut;
    cut_sources_.note(link->ip_);
    LOCKSTEP_LOG_WARN("closing WebSocket peer %s: %zu bytes sent to it wait unread", link->address_.c_str(), link->out_bytes);
    close_link(*link, LWS_CLOSE_STATUS_POLICY_VIOLATION, "not reading what it is sent");
    link->out.clear();
    link->out_bytes = 0;
    return;
  }
  queue_frame(*link, static_cast<std::uint8_t>(channel), {}, bytes);
}

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
    // Cached and revalidated on every load: a warm load costs a 304 a file (the ETag is the
    // file's length and time), and a page rebuilt in place is never served stale.
    mount_.cache_max_age = 1;
    mount_.cache_reusable = 1;
    mount_.cache_revalidate = 1;
    // Files named by their content's hash (web/hashed_names.cmake writes them in h/): a new build
    // is a new name, so a browser keeps them a year without asking.
    hashed_root_ = cfg_.web_root + "/h";
    hashed_mount_ = mount_;
    hashed_mount_.mountpoint = "/h";
    hashed_mount_.mountpoint_len = 2;
    hashed_mount_.origin = hashed_root_.c_str();
    hashed_mount_.def = nullptr;
    hashed_mount_.cache_max_age = 365 * 24 * 3600;
    hashed_mount_.cache_revalidate = 0;
    mount_.mount_next = &hashed_mount_;
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
    // HTTP/1.1 only: offered HTTP/2, Chromium carries its WebSocket in a stream of a shared
    // connection (RFC 8441), which the door's accounting (one TCP connection, one handshake, one
    // player) would close at the handshake deadline, 5 s in. A WebSocket of its own keeps a
    // player's stream free of the page's other traffic too.
    info.alpn = "http/1.1";
  }
  context_ = lws_create_context(&info);
  if (!context_)
    return fail(cfg_.tls_cert.empty() ? "cannot open the WebSocket door on port " + std::to_string(cfg_.port)
                                      : "cannot open the WebSocket door on port " + std::to_string(cfg_.port) +
                                            " (does the certificate '" + cfg_.tls_cert + "' load with its key?)");
  if (!cfg_.web_root.empty()) {
    // A browser that takes gzip gets FILE.gz when the web root has one: libwebsockets tells the
    // open that gzip is acceptable, and sends Content-Encoding: gzip when the open says it is.
    gzip_files_.plain = lws_get_fops(context_);
    gzip_files_.root = web_root_real_;
    gzip_files_.ops = *gzip_files_.plain;
    gzip_files_.ops.next = nullptr;
    gzip_files_.ops.LWS_FOP_OPEN = [](const lws_plat_file_ops* fops, const char* filename, const char* vpath,
                                      lws_fop_flags_t* flags) -> lws_fop_fd_t {
      const auto* self = reinterpret_cast<const GzipFiles*>(fops);
      if (*flags & LWS_FOP_FLAG_COMPR_ACCEPTABLE_GZIP) {
        const std::string gz = std::string(filename) + ".gz";
        char real[PATH_MAX];
        lws_fop_flags_t gz_flags = *flags;
        if (realpath(gz.c_str(), real) == nullptr || std::string_view(real).rfind(self->root + "/", 0) != 0) {
          // none, or a link out of the web root (not followed, as for the plain files)
        } else if (lws_fop_fd_t fd = self->plain->LWS_FOP_OPEN(fops, real, vpath, &gz_flags)) {
          *flags = gz_flags | LWS_FOP_FLAG_COMPR_IS_GZIP;
          fd->flags = *flags;  // what the response's headers are written from
          return fd;
        }
      }
      return self->plain->LWS_FOP_OPEN(fops, filename, vpath, flags);
    };
    lws_set_fops(context_, &gzip_files_.ops);
  }
  lws_vhost* vhost = lws_get_vhost_by_name(context_, "default");
  const int port = vhost ? lws_get_vhost_listen_port(vhost) : -1;
  if (port <= 0) return fail("the WebSocket door did not open a port");
  port_ = static_cast<std::uint16_t>(port);
  if (cfg_.webrtc) {
    rtc::RtcConfig rc;
    rc.bind = cfg_.bind;
    rc.port_min = cfg_.webrtc_port_min;
    rc.port_max = cfg_.webrtc_port_max;
    rc.advertise = cfg_.webrtc_advertise;
    rtc_ = rtc::RtcDoor::start(rc, this, error);
    if (!rtc_) return false;
  }
  lws_sul_schedule(context_, 0, &sweep_.sul, &WsDoor::sweep, 100 * LWS_US_PER_MS);
  thread_ = std::thread([this] {
    while (!stopping_) lws_service(context_, 0);
  });
  return true;
}

}  // namespace ws

std::unique_ptr<Transport> listen_websocket(const WebSocketDoorConfig& config, const TransportLimits& limits,
                                            Error* error) {
  auto door = std::make_unique<ws::WsDoor>(config, limits);
  if (!door->start(error)) return nullptr;
  return door;
}


}  // namespace lockstep
