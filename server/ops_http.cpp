// The ops port over libwebsockets (ops_http.hpp).
#include "ops_http.hpp"

#include <libwebsockets.h>

#include <cstring>
#include <string>
#include <thread>

#include "lockstep/log.hpp"

namespace lockstep {

namespace {
// A connection's answer in the making: headers and body, written as the socket takes them.
struct Answer {
  std::string* bytes;  // LWS_PRE bytes, then the body; owned, freed when the connection closes
  std::size_t sent;
};

void free_answer(Answer* a) {
  delete a->bytes;
  a->bytes = nullptr;
}

bool is_get(lws* wsi) { return lws_hdr_total_length(wsi, WSI_TOKEN_GET_URI) > 0; }
}  // namespace

struct OpsHttp::Impl {
  OpsHttpConfig cfg;
  Handler handler;
  lws_context* context = nullptr;
  lws_protocols protocols[2]{};
  std::thread thread;
  std::atomic<bool> stopping{false};
  std::atomic<std::uint64_t> answered{0}, not_found{0}, not_allowed{0};
  std::uint16_t port = 0;

  static int callback(lws* wsi, lws_callback_reasons reason, void* user, void* in, std::size_t len);
  int on_http(lws* wsi, Answer* a, const char* uri);
  int reply(lws* wsi, Answer* a, const OpsReply& r, bool allow_header);
};

int OpsHttp::Impl::reply(lws* wsi, Answer* a, const OpsReply& r, bool allow_header) {
  unsigned char headers[512];
  unsigned char* p = headers;
  unsigned char* end = headers + sizeof headers;
  if (lws_add_http_common_headers(wsi, r.status, r.content_type.c_str(), r.body.size(), &p, end)) return -1;
  if (allow_header &&
      lws_add_http_header_by_name(wsi, reinterpret_cast<const unsigned char*>("allow:"),
                                  reinterpret_cast<const unsigned char*>("GET"), 3, &p, end))
    return -1;
  if (lws_add_http_header_by_name(wsi, reinterpret_cast<const unsigned char*>("cache-control:"),
                                  reinterpret_cast<const unsigned char*>("no-store"), 8, &p, end))
    return -1;
  if (lws_finalize_write_http_header(wsi, headers, &p, end)) return -1;
  free_answer(a);
  a->bytes = new std::string(LWS_PRE, '\0');
  a->bytes->append(r.body);
  a->sent = 0;
  lws_callback_on_writable(wsi);
  return 0;
}

int OpsHttp::Impl::on_http(lws* wsi, Answer* a, const char* uri) {
  // The whole exchange, from here to the last byte of the answer, has one deadline.
  lws_set_timeout(wsi, PENDING_TIMEOUT_HTTP_CONTENT, static_cast<int>(cfg.deadline_seconds));
  if (!is_get(wsi)) {
    ++not_allowed;
    return reply(wsi, a, {405, "text/plain; charset=utf-8", "only GET: /metrics, /healthz, /readyz\n"}, true);
  }
  std::string_view path(uri ? uri : "");
  if (const auto q = path.find('?'); q != std::string_view::npos) path = path.substr(0, q);
  OpsReply r = handler(path, OpsHttpStats{answered, not_found, not_allowed});
  if (r.status == 404) {
    ++not_found;
    r.body = "not found: the ops port serves /metrics, /healthz and /readyz\n";
    r.content_type = "text/plain; charset=utf-8";
  } else {
    ++answered;
  }
  return reply(wsi, a, r, false);
}

int OpsHttp::Impl::callback(lws* wsi, lws_callback_reasons reason, void* user, void* in, std::size_t len) {
  lws_context* context = lws_get_context(wsi);
  auto* self = context ? static_cast<Impl*>(lws_context_user(context)) : nullptr;
  auto* a = static_cast<Answer*>(user);
  switch (reason) {
    case LWS_CALLBACK_HTTP:
      if (!self || !a) return -1;
      return self->on_http(wsi, a, static_cast<const char*>(in));
    case LWS_CALLBACK_HTTP_BODY: return 0;  // a body (of a refused method) is read and ignored
    case LWS_CALLBACK_HTTP_BODY_COMPLETION: return 0;
    case LWS_CALLBACK_HTTP_WRITEABLE: {
      if (!a || !a->bytes) return 0;
      std::string& b = *a->bytes;
      const std::size_t left = b.size() - LWS_PRE - a->sent;
      const std::size_t n = std::min<std::size_t>(left, 16 * 1024);
      const bool last = n == left;
      auto* at = reinterpret_cast<unsigned char*>(b.data()) + LWS_PRE + a->sent;
      if (lws_write(wsi, at, n, last ? LWS_WRITE_HTTP_FINAL : LWS_WRITE_HTTP) != static_cast<int>(n)) return -1;
      a->sent += n;
      if (!last) {
        lws_callback_on_writable(wsi);
        return 0;
      }
      free_answer(a);
      return lws_http_transaction_completed(wsi) ? -1 : 0;
    }
    case LWS_CALLBACK_HTTP_DROP_PROTOCOL:
    case LWS_CALLBACK_CLOSED_HTTP:
      if (a) free_answer(a);
      return 0;
    default: break;
  }
  return lws_callback_http_dummy(wsi, reason, user, in, len);
}

std::unique_ptr<OpsHttp> OpsHttp::start(const OpsHttpConfig& config, Handler handler, std::string* error) {
  auto impl = std::make_unique<Impl>();
  impl->cfg = config;
  impl->handler = std::move(handler);
  lws_set_log_level(LLL_ERR, [](int, const char* line) {
    std::string text(line);
    while (!text.empty() && (text.back() == '\n' || text.back() == '\r')) text.pop_back();
    LOCKSTEP_LOG_WARN("libwebsockets: %s", text.c_str());
  });
  impl->protocols[0] = {"http", &Impl::callback, sizeof(Answer), 0, 0, nullptr, 0};
  impl->protocols[1] = {nullptr, nullptr, 0, 0, 0, nullptr, 0};
  lws_context_creation_info info{};
  info.port = config.port;
  info.iface = config.bind.empty() ? nullptr : config.bind.c_str();
  info.protocols = impl->protocols;
  info.user = impl.get();
  info.gid = -1;
  info.uid = -1;
  info.timeout_secs = config.deadline_seconds;
  info.timeout_secs_ah_idle = config.deadline_seconds;
  info.keepalive_timeout = static_cast<int>(config.deadline_seconds);
  // The listening socket, the event pipe and the connections: lws stops accepting at the limit.
  info.fd_limit_per_thread = config.max_connections + 4;
  info.max_http_header_pool = static_cast<unsigned short>(config.max_connections);
  info.max_http_header_data = 2048;
  info.options = LWS_SERVER_OPTION_DISABLE_IPV6;
  impl->context = lws_create_context(&info);
  if (!impl->context) {
    *error = "cannot open the ops port " + std::to_string(config.port) +
             (config.bind.empty() ? "" : " on " + config.bind) + " (in use, or not an address of this machine?)";
    return nullptr;
  }
  lws_vhost* vhost = lws_get_vhost_by_name(impl->context, "default");
  const int port = vhost ? lws_get_vhost_listen_port(vhost) : -1;
  if (port <= 0) {
    lws_context_destroy(impl->context);
    *error = "the ops port did not open";
    return nullptr;
  }
  impl->port = static_cast<std::uint16_t>(port);
  Impl* raw = impl.get();
  impl->thread = std::thread([raw] {
    while (!raw->stopping) lws_service(raw->context, 0);
  });
  return std::unique_ptr<OpsHttp>(new OpsHttp(std::move(impl)));
}

OpsHttp::OpsHttp(std::unique_ptr<Impl> impl) : impl_(std::move(impl)) {}

OpsHttp::~OpsHttp() {
  impl_->stopping = true;
  lws_cancel_service(impl_->context);
  if (impl_->thread.joinable()) impl_->thread.join();
  lws_context_destroy(impl_->context);
}

std::uint16_t OpsHttp::port() const { return impl_->port; }

OpsHttpStats OpsHttp::stats() const { return {impl_->answered, impl_->not_found, impl_->not_allowed}; }

}  // namespace lockstep
