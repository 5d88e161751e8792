// The WebSocket door's sessions, on the door's thread (websocket_door_impl.hpp): libwebsockets'
// callback, each connection from its filter to its close, messages assembled from fragments and
// held to the door's bounds, frames and pings written.
#include "websocket_door_impl.hpp"

namespace lockstep {
namespace ws {

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
        note_cut(wsi);
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
        note_cut(wsi);
        return -1;
      }
      return 0;
    }
    case LWS_CALLBACK_FILTER_PROTOCOL_CONNECTION: {
      char wanted[256] = "";
      std::lock_guard lock(mutex_);
      if (lws_hdr_copy(wsi, wanted, sizeof wanted, WSI_TOKEN_PROTOCOL) <= 0 || !names_subprotocol(wanted)) {
        ++stats_.refused_protocol;
        note_cut(wsi);
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
      link->datagrams = false;
      if (rtc_) rtc_->close({link, link->generation});
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
  if (n >= 2 && link.in[0] == kSignalChannel) {  // an offer of a data channel (§17.1)
    if (++link.offers > kDoorOffersPerConnection)
      return refuse(wsi, link, stats_.flooding_cut, LWS_CLOSE_STATUS_POLICY_VIOLATION, "over the offers a connection may make");
    if (!rtc_) signal(link, 'n', "this server offers no datagram path (lockstep-server --webrtc)");
    else rtc_->offer({&link, link.generation}, std::string(link.in.begin() + 1, link.in.end()));
    link.in.clear();
    return 0;
  }
  if (n < 2 || link.in[0] >= kChannelCount)
    return refuse(wsi, link, stats_.malformed, LWS_CLOSE_STATUS_POLICY_VIOLATION, "a message without a channel");
  if (link.waiting_bytes + n > limits_.max_waiting_bytes)
    return refuse(wsi, link, stats_.flooding_cut, LWS_CLOSE_STATUS_POLICY_VIOLATION, "over the bytes that may wait");
  link.waiting_bytes += n - 1;
  if (link.in[0] == static_cast<std::uint8_t>(Channel::Play)) link.datagrams = false;  // the page plays over this stream again
  push({NetEvent::Type::Receive, &link, link.generation, link.in[0],
        std::vector<std::uint8_t>(link.in.begin() + 1, link.in.end()), now});
  link.in.clear();
  return 0;
}

void WsDoor::signal(WsLink& link, char kind, std::string_view text) {
  queue_frame(link, kSignalChannel, std::string_view(&kind, 1),
              {reinterpret_cast<const std::uint8_t*>(text.data()), text.size()});
}

void WsDoor::queue_frame(WsLink& link, std::uint8_t channel, std::string_view head, std::span<const std::uint8_t> bytes) {
  std::vector<std::uint8_t> frame(LWS_PRE + 1 + head.size() + bytes.size());
  frame[LWS_PRE] = channel;
  if (!head.empty()) std::memcpy(frame.data() + LWS_PRE + 1, head.data(), head.size());
  if (!bytes.empty()) std::memcpy(frame.data() + LWS_PRE + 1 + head.size(), bytes.data(), bytes.size());
  link.out_bytes += frame.size() - LWS_PRE;
  link.out.push_back(std::move(frame));
  dirty_ = true;
}

WsLink* WsDoor::link_of(rtc::RtcKey key) {
  auto* link = static_cast<WsLink*>(const_cast<void*>(key.link));
  if (link->generation != key.generation || !link->wsi || !link->for_session) return nullptr;
  return link;
}

void WsDoor::on_answer(rtc::RtcKey key, std::string answer, std::string why) {
  {
    std::lock_guard lock(mutex_);
    WsLink* link = link_of(key);
    if (!link) return;
    if (answer.empty()) LOCKSTEP_LOG_INFO("no data channel for WebSocket peer %s: %s", link->address_.c_str(), why.c_str());
    signal(*link, answer.empty() ? 'n' : 'a', answer.empty() ? why : answer);
  }
  request_service();
}

void WsDoor::on_message(rtc::RtcKey key, std::span<const std::uint8_t> bytes, std::int64_t arrived_ns) {
  std::lock_guard lock(mutex_);
  WsLink* link = link_of(key);
  if (!link || bytes.empty() || link->close_now || link->close_when_sent) return;
  if (bytes.size() > limits_.max_packet_bytes) {  // as a datagram over ENet's bound: dropped, counted
    ++stats_.datagram_oversized;
    return;
  }
  link->heard = std::max(link->heard, arrived_ns);
  if (link->waiting_bytes + bytes.size() > limits_.max_waiting_bytes) return;  // dropped, as a datagram over a full buffer
  if (!link->datagrams) LOCKSTEP_LOG_INFO("WebSocket peer %s plays over its data channel", link->address_.c_str());
  link->datagrams = true;
  link->waiting_bytes += bytes.size();
  push({NetEvent::Type::Receive, link, link->generation, static_cast<std::uint8_t>(Channel::Play),
        std::vector<std::uint8_t>(bytes.begin(), bytes.end()), arrived_ns});
}

void WsDoor::on_closed(rtc::RtcKey key, const std::string& why) {
  {
    std::lock_guard lock(mutex_);
    WsLink* link = link_of(key);
    if (!link) return;
    LOCKSTEP_LOG_INFO("WebSocket peer %s: its data channel closed (%s); play goes over the WebSocket", link->address_.c_str(),
                      why.c_str());
    link->datagrams = false;
    signal(*link, 'x', why);
  }
  request_service();
}

void WsDoor::on_loss(rtc::RtcKey key, std::uint32_t loss_ppm) {
  std::lock_guard lock(mutex_);
  if (WsLink* link = link_of(key)) link->net_.loss_ppm = loss_ppm;  // the page's datagrams lost on the way up
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

}  // namespace ws
}  // namespace lockstep
