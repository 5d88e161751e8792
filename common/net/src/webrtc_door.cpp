// The datagram path of the WebSocket door (webrtc_door.hpp): per page, a libnice agent (ICE, as
// the controlled side; the page's checks teach it the page's address), an OpenSSL DTLS server on
// memory BIOs over that agent, and a usrsctp association over DTLS whose stream 0 is the data
// channel (negotiated by both sides as id 0, so no DCEP is needed; an opened one is acknowledged).
// All of it on one thread with a GLib main loop; the door queues work to it.
#include "webrtc_door.hpp"

#include <agent.h>
#include <interfaces.h>
#include <openssl/err.h>
#include <openssl/evp.h>
#include <openssl/rand.h>
#include <openssl/ssl.h>
#include <openssl/x509.h>
#include <usrsctp.h>

#include <arpa/inet.h>
#include <glib-unix.h>
#include <sys/eventfd.h>
#include <unistd.h>

#include <algorithm>
#include <atomic>
#include <cstdio>
#include <cstring>
#include <deque>
#include <functional>
#include <map>
#include <mutex>
#include <thread>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"
#include "lockstep/seen_loss.hpp"

namespace lockstep {
namespace rtc {

bool parse_offer(std::string_view sdp, Offer* out, std::string* error) {
  *out = Offer{};
  bool application = false;
  while (!sdp.empty()) {
    const std::size_t end = sdp.find('\n');
    std::string_view line = sdp.substr(0, end);
    sdp = end == std::string_view::npos ? std::string_view{} : sdp.substr(end + 1);
    if (!line.empty() && line.back() == '\r') line.remove_suffix(1);
    auto value = [&](std::string_view key, std::string* to) {
      if (line.substr(0, key.size()) != key) return false;
      *to = std::string(line.substr(key.size()));
      return true;
    };
    std::string v;
    if (line.substr(0, 14) == "m=application ") application = true;
    else if (value("a=ice-ufrag:", &v)) out->ice_ufrag = v;
    else if (value("a=ice-pwd:", &v)) out->ice_pwd = v;
    else if (value("a=mid:", &v)) out->mid = v;
    else if (value("a=sctp-port:", &v)) {
      const long port = std::strtol(v.c_str(), nullptr, 10);
      if (port > 0 && port < 65536) out->sctp_port = static_cast<std::uint16_t>(port);
    } else if (value("a=fingerprint:", &v)) {
      if (v.size() > 8 && (v.substr(0, 8) == "sha-256 " || v.substr(0, 8) == "SHA-256 ")) {
        out->fingerprint = v.substr(8);
        for (char& c : out->fingerprint) c = static_cast<char>(std::toupper(static_cast<unsigned char>(c)));
      }
    }
  }
  auto fail = [&](const char* why) {
    if (error) *error = why;
    return false;
  };
  if (!application) return fail("the offer has no data channel (m=application)");
  if (out->ice_ufrag.empty() || out->ice_pwd.empty() || out->ice_ufrag.size() > 256 || out->ice_pwd.size() > 256)
    return fail("the offer has no ICE credentials");
  if (out->fingerprint.size() != 95) return fail("the offer has no sha-256 fingerprint");
  for (char c : out->mid)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '-' && c != '_') return fail("the offer's mid is not a token");
  for (char c : out->ice_ufrag + out->ice_pwd)
    if (!std::isalnum(static_cast<unsigned char>(c)) && c != '+' && c != '/') return fail("the offer's ICE credentials are not ICE characters");
  return true;
}

namespace {

constexpr std::size_t kMaxOfferBytes = 16 * 1024;
constexpr std::size_t kMaxChannels = 1024;             // pages with a channel (or one on its way) at once
constexpr std::size_t kOutboxMessages = 256;            // queued to the thread, all pages together
constexpr int kMtu = 1200;
constexpr std::uint32_t kPpidControl = 50, kPpidBinary = 53, kPpidBinaryEmpty = 57;

/// One SCTP message on stream `sid` with payload protocol `ppid`: a play message unordered and
/// never sent again (a datagram), a control message ordered and reliable. True when SCTP took it.
bool sctp_send(struct socket* sctp, std::uint16_t sid, std::uint32_t ppid, bool play, const void* data, std::size_t len) {
  sctp_sendv_spa spa{};
  spa.sendv_flags = SCTP_SEND_SNDINFO_VALID;
  spa.sendv_sndinfo.snd_sid = sid;
  spa.sendv_sndinfo.snd_ppid = htonl(ppid);
  if (play) {
    spa.sendv_flags |= SCTP_SEND_PRINFO_VALID;
    spa.sendv_sndinfo.snd_flags = SCTP_UNORDERED;
    spa.sendv_prinfo.pr_policy = SCTP_PR_SCTP_RTX;
    spa.sendv_prinfo.pr_value = 0;
  }
  return usrsctp_sendv(sctp, data, len, nullptr, 0, &spa, sizeof spa, SCTP_SENDV_SPA, 0) >= 0;
}

std::string hex_fingerprint(const unsigned char* md, unsigned len) {
  std::string out;
  char b[4];
  for (unsigned i = 0; i < len; ++i) {
    std::snprintf(b, sizeof b, i ? ":%02X" : "%02X", md[i]);
    out += b;
  }
  return out;
}

std::string openssl_error() {
  const unsigned long e = ERR_get_error();
  if (!e) return "unknown";
  char b[256];
  ERR_error_string_n(e, b, sizeof b);
  return b;
}

struct Channel;

class Door final : public RtcDoor {
 public:
  Door(const RtcConfig& config, RtcSink* sink) : cfg_(config), sink_(sink) {}
  ~Door() override;
  bool start(Error* error);

  void offer(RtcKey key, std::string sdp) override;
  bool send(RtcKey key, std::span<const std::uint8_t> bytes) override;
  void close(RtcKey key) override;
  [[nodiscard]] RtcStats stats() const override {
    std::lock_guard lock(mutex_);
    return stats_;
  }

  // The thread's own, and what usrsctp and libnice call back.
  void on_ice_data(Channel& c, const std::uint8_t* data, std::size_t len);
  void dtls_out(Channel& c);
  void send_datagram(Channel& c, std::vector<std::uint8_t> datagram);
  void send_unsent(Channel& c);
  void sctp_out(Channel& c, const void* data, std::size_t len);
  void on_sctp(Channel& c, const std::uint8_t* data, std::size_t len, std::uint32_t ppid, std::uint16_t sid, int flags);
  void drop(Channel& c, const std::string& why, bool tell);

 private:
  void run_queue();
  void answer(RtcKey key, const std::string& sdp);
  // DTLS retransmissions, SCTP timers and the channels' deadlines, every 20 ms while there is a
  // channel (a door without one does not wake).
  bool tick();
  void start_ticks() {
    if (ticking_) return;
    ticking_ = true;
    GSource* timer = g_timeout_source_new(20);
    g_source_set_callback(
        timer, [](gpointer self) -> gboolean { return static_cast<Door*>(self)->tick() ? G_SOURCE_CONTINUE : G_SOURCE_REMOVE; },
        this, nullptr);
    g_source_attach(timer, context_);
    g_source_unref(timer);
  }
  void start_sctp(Channel& c);
  void post(std::function<void()> work) {
    {
      std::lock_guard lock(mutex_);
      queue_.push_back(std::move(work));
    }
    const std::uint64_t one = 1;
    [[maybe_unused]] const ssize_t w = write(wake_fd_, &one, sizeof one);
  }

  RtcConfig cfg_;
  RtcSink* sink_;
  GMainContext* context_ = nullptr;
  GMainLoop* loop_ = nullptr;
  std::thread thread_;
  int wake_fd_ = -1;
  SSL_CTX* ssl_ = nullptr;
  EVP_PKEY* key_ = nullptr;
  X509* cert_ = nullptr;
  std::string fingerprint_;
  // Under the mutex: work for the thread, the keys with a channel (open or on its way), counters.
  mutable std::mutex mutex_;
  std::deque<std::function<void()>> queue_;
  std::map<const void*, std::uint64_t> open_;  // link -> generation whose channel is open
  std::size_t queued_sends_ = 0;
  RtcStats stats_;
  // The thread's own. A channel dropped from inside a library's callback is destroyed later, at
  // the next tick, outside every call into the libraries.
  std::map<const void*, std::unique_ptr<Channel>> channels_;
  std::vector<std::unique_ptr<Channel>> graveyard_;
  bool ticking_ = false;
};

// One page's channel: its ICE agent, DTLS and SCTP association.
struct Channel {
  Door* door = nullptr;
  RtcKey key;
  NiceAgent* agent = nullptr;
  guint stream = 0;
  SSL* ssl = nullptr;
  BIO* in = nullptr;   // DTLS records from the page, for OpenSSL to read
  BIO* out = nullptr;  // DTLS records OpenSSL wrote, for the agent to send
  bool dtls_done = false, sctp_up = false, dead = false;
  std::string remote_fingerprint;
  std::uint16_t remote_sctp_port = 5000;
  struct socket* sctp = nullptr;
  std::int64_t created_ns = 0, heard_ns = 0;
  std::uint16_t play_sid = 0;
  std::deque<std::vector<std::uint8_t>> unsent;  // DTLS datagrams ICE could not send yet
  SeenLoss loss;               // the page's datagrams, by their first DTLS record's number
  std::int64_t loss_said_ns = 0;
  ~Channel() {
    if (sctp) {
      usrsctp_close(sctp);
      usrsctp_deregister_address(this);
    }
    if (ssl) SSL_free(ssl);  // frees the BIOs
    if (agent) {
      nice_agent_remove_stream(agent, stream);
      g_object_unref(agent);
    }
  }
};

int sctp_output(void* addr, void* buffer, std::size_t length, std::uint8_t, std::uint8_t) {
  auto* c = static_cast<Channel*>(addr);
  c->door->sctp_out(*c, buffer, length);
  return 0;
}

int sctp_receive(struct socket*, union sctp_sockstore, void* data, std::size_t len, struct sctp_rcvinfo info, int flags,
                 void* ulp) {
  auto* c = static_cast<Channel*>(ulp);
  if (data) {
    c->door->on_sctp(*c, static_cast<const std::uint8_t*>(data), len, ntohl(info.rcv_ppid), info.rcv_sid, flags);
    free(data);  // usrsctp hands the receiver its buffer
  }
  return 1;
}

Door::~Door() {
  if (loop_) {
    post([this] { g_main_loop_quit(loop_); });
    if (thread_.joinable()) thread_.join();
    channels_.clear();
    graveyard_.clear();
    g_main_loop_unref(loop_);
  }
  if (context_) g_main_context_unref(context_);
  if (wake_fd_ >= 0) ::close(wake_fd_);
  if (ssl_) SSL_CTX_free(ssl_);
  if (cert_) X509_free(cert_);
  if (key_) EVP_PKEY_free(key_);
}

bool Door::start(Error* error) {
  auto fail = [&](const std::string& why) {
    if (error) *error = {ErrorKind::Usage, why, "webrtc"};
    return false;
  };
  if (cfg_.port_min > cfg_.port_max) return fail("--webrtc-ports: the first port is past the last");
  // One certificate for the door's life: its fingerprint goes into every answer.
  key_ = EVP_EC_gen("prime256v1");
  cert_ = X509_new();
  if (!key_ || !cert_) return fail("cannot make the DTLS key: " + openssl_error());
  std::uint32_t serial = 0;
  RAND_bytes(reinterpret_cast<unsigned char*>(&serial), sizeof serial);
  X509_set_version(cert_, 2);
  ASN1_INTEGER_set(X509_get_serialNumber(cert_), static_cast<long>(serial & 0x7fffffff));
  X509_gmtime_adj(X509_getm_notBefore(cert_), -86400);
  X509_gmtime_adj(X509_getm_notAfter(cert_), 30L * 86400);
  X509_set_pubkey(cert_, key_);
  X509_NAME* name = X509_get_subject_name(cert_);
  X509_NAME_add_entry_by_txt(name, "CN", MBSTRING_ASC, reinterpret_cast<const unsigned char*>("lockstep"), -1, -1, 0);
  X509_set_issuer_name(cert_, name);
  if (!X509_sign(cert_, key_, EVP_sha256())) return fail("cannot sign the DTLS certificate: " + openssl_error());
  unsigned char md[EVP_MAX_MD_SIZE];
  unsigned md_len = 0;
  X509_digest(cert_, EVP_sha256(), md, &md_len);
  fingerprint_ = hex_fingerprint(md, md_len);
  ssl_ = SSL_CTX_new(DTLS_server_method());
  if (!ssl_ || SSL_CTX_use_certificate(ssl_, cert_) != 1 || SSL_CTX_use_PrivateKey(ssl_, key_) != 1)
    return fail("cannot set up DTLS: " + openssl_error());
  SSL_CTX_set_min_proto_version(ssl_, DTLS1_2_VERSION);
  // The page's certificate is self-signed: it is checked against the offer's fingerprint instead.
  SSL_CTX_set_verify(ssl_, SSL_VERIFY_PEER | SSL_VERIFY_FAIL_IF_NO_PEER_CERT, [](int, X509_STORE_CTX*) { return 1; });
  SSL_CTX_set_options(ssl_, SSL_OP_NO_QUERY_MTU);
  SSL_CTX_set_cipher_list(ssl_, "ECDHE-ECDSA-AES128-GCM-SHA256:ECDHE-ECDSA-AES256-GCM-SHA384:ECDHE-ECDSA-CHACHA20-POLY1305");

  static std::once_flag sctp_once;  // usrsctp is one per process; the thread drives its timers
  std::call_once(sctp_once, [] {
    usrsctp_init_nothreads(0, &sctp_output, nullptr);
    usrsctp_sysctl_set_sctp_ecn_enable(0);
    usrsctp_sysctl_set_sctp_blackhole(2);
    usrsctp_sysctl_set_sctp_no_csum_on_loopback(0);
    usrsctp_sysctl_set_sctp_delayed_sack_time_default(20);
  });

  wake_fd_ = eventfd(0, EFD_NONBLOCK | EFD_CLOEXEC);
  if (wake_fd_ < 0) return fail("cannot make an eventfd");
  context_ = g_main_context_new();
  loop_ = g_main_loop_new(context_, FALSE);
  GSource* wake = g_unix_fd_source_new(wake_fd_, G_IO_IN);
  g_source_set_callback(
      wake, reinterpret_cast<GSourceFunc>(reinterpret_cast<void (*)()>(+[](gint fd, GIOCondition, gpointer self) -> gboolean {
        std::uint64_t n;
        while (read(fd, &n, sizeof n) > 0) {
        }
        static_cast<Door*>(self)->run_queue();
        return G_SOURCE_CONTINUE;
      })),
      this, nullptr);
  g_source_attach(wake, context_);
  g_source_unref(wake);
  thread_ = std::thread([this] {
    g_main_context_push_thread_default(context_);
    g_main_loop_run(loop_);
    g_main_context_pop_thread_default(context_);
  });
  return true;
}

void Door::run_queue() {
  std::deque<std::function<void()>> work;
  {
    std::lock_guard lock(mutex_);
    work.swap(queue_);
  }
  for (auto& w : work) w();
}

void Door::offer(RtcKey key, std::string sdp) {
  {
    std::lock_guard lock(mutex_);
    ++stats_.offers;
  }
  post([this, key, sdp = std::move(sdp)] { answer(key, sdp); });
}

bool Door::send(RtcKey key, std::span<const std::uint8_t> bytes) {
  {
    std::lock_guard lock(mutex_);
    const auto it = open_.find(key.link);
    if (it == open_.end() || it->second != key.generation) return false;
    if (queued_sends_ >= kOutboxMessages) {
      ++stats_.dropped_out;  // as a datagram lost: the next play message carries it again
      return true;
    }
    ++queued_sends_;
  }
  post([this, key, message = std::vector<std::uint8_t>(bytes.begin(), bytes.end())] {
    {
      std::lock_guard lock(mutex_);
      --queued_sends_;
    }
    const auto it = channels_.find(key.link);
    if (it == channels_.end() || it->second->key.generation != key.generation || !it->second->sctp_up || it->second->dead)
      return;
    Channel& c = *it->second;
    const bool sent = sctp_send(c.sctp, c.play_sid, kPpidBinary, true, message.data(), message.size());
    std::lock_guard lock(mutex_);
    if (sent) ++stats_.messages_out;
    else ++stats_.dropped_out;
  });
  return true;
}

void Door::close(RtcKey key) {
  {
    std::lock_guard lock(mutex_);
    const auto it = open_.find(key.link);
    if (it != open_.end() && it->second == key.generation) open_.erase(it);
  }
  post([this, key] {
    const auto it = channels_.find(key.link);
    if (it != channels_.end() && it->second->key.generation == key.generation) drop(*it->second, "", false);
  });
}

void Door::answer(RtcKey key, const std::string& sdp) {
  auto refuse = [&](const std::string& why) {
    {
      std::lock_guard lock(mutex_);
      ++stats_.refused;
    }
    sink_->on_answer(key, "", why);
  };
  if (sdp.size() > kMaxOfferBytes) return refuse("the offer is over 16 KB");
  Offer o;
  std::string why;
  if (!parse_offer(sdp, &o, &why)) return refuse(why);
  if (const auto it = channels_.find(key.link); it != channels_.end()) drop(*it->second, "", false);  // offered again
  if (channels_.size() >= kMaxChannels) return refuse("the door holds as many data channels as it may");
  auto c = std::make_unique<Channel>();
  c->door = this;
  c->key = key;
  c->created_ns = monotonic_ns();
  c->remote_fingerprint = o.fingerprint;
  c->remote_sctp_port = o.sctp_port;
  c->agent = nice_agent_new(context_, NICE_COMPATIBILITY_RFC5245);
  g_object_set(c->agent, "controlling-mode", FALSE, "upnp", FALSE, "ice-tcp", FALSE, nullptr);
  // Every local IPv4 address, loopback too (a page on this machine), or only the one bound.
  if (!cfg_.bind.empty()) {
    NiceAddress a;
    nice_address_init(&a);
    if (!nice_address_set_from_string(&a, cfg_.bind.c_str())) return refuse("--bind is not an address");
    nice_agent_add_local_address(c->agent, &a);
  } else {
    GList* ips = nice_interfaces_get_local_ips(TRUE);
    for (GList* i = ips; i; i = i->next) {
      NiceAddress a;
      nice_address_init(&a);
      if (nice_address_set_from_string(&a, static_cast<const char*>(i->data)) && nice_address_ip_version(&a) == 4)
        nice_agent_add_local_address(c->agent, &a);
    }
    g_list_free_full(ips, g_free);
  }
  c->stream = nice_agent_add_stream(c->agent, 1);
  if (cfg_.port_max) nice_agent_set_port_range(c->agent, c->stream, 1, cfg_.port_min, cfg_.port_max);
  Channel* raw = c.get();
  nice_agent_attach_recv(
      c->agent, c->stream, 1, context_,
      [](NiceAgent*, guint, guint, guint len, gchar* buf, gpointer data) {
        auto* ch = static_cast<Channel*>(data);
        ch->door->on_ice_data(*ch, reinterpret_cast<const std::uint8_t*>(buf), len);
      },
      raw);
  if (!nice_agent_gather_candidates(c->agent, c->stream)) return refuse("no UDP port for the data channel (--webrtc-ports full?)");
  nice_agent_set_remote_credentials(c->agent, c->stream, o.ice_ufrag.c_str(), o.ice_pwd.c_str());
  gchar *ufrag = nullptr, *pwd = nullptr;
  nice_agent_get_local_credentials(c->agent, c->stream, &ufrag, &pwd);
  std::string candidates;
  GSList* locals = nice_agent_get_local_candidates(c->agent, c->stream, 1);
  std::uint16_t first_port = 0;
  int n = 0;
  for (GSList* i = locals; i; i = i->next) {
    auto* cand = static_cast<NiceCandidate*>(i->data);
    char ip[NICE_ADDRESS_STRING_LEN];
    nice_address_to_string(&cand->addr, ip);
    const unsigned port = nice_address_get_port(&cand->addr);
    if (!first_port || std::string_view(ip) == "127.0.0.1") first_port = static_cast<std::uint16_t>(port);
    if (cfg_.advertise.empty())
      candidates += "a=candidate:" + std::to_string(++n) + " 1 udp " + std::to_string(cand->priority) + " " + ip + " " +
                    std::to_string(port) + " typ host\r\n";
  }
  g_slist_free_full(locals, reinterpret_cast<GDestroyNotify>(&nice_candidate_free));
  if (!cfg_.advertise.empty()) {
    std::string host = cfg_.advertise;
    std::string port = std::to_string(first_port);
    if (const auto colon = host.rfind(':'); colon != std::string::npos) {
      port = host.substr(colon + 1);
      host.resize(colon);
    }
    candidates = "a=candidate:1 1 udp 2130706431 " + host + " " + port + " typ host\r\n";
  }
  if (candidates.empty()) {
    g_free(ufrag);
    g_free(pwd);
    return refuse("the data channel has no local address");
  }
  c->ssl = SSL_new(ssl_);
  c->in = BIO_new(BIO_s_mem());
  c->out = BIO_new(BIO_s_mem());
  BIO_set_mem_eof_return(c->in, -1);
  SSL_set_bio(c->ssl, c->in, c->out);
  SSL_set_mtu(c->ssl, kMtu);
  DTLS_set_link_mtu(c->ssl, kMtu);
  SSL_set_accept_state(c->ssl);
  std::string a = "v=0\r\no=- " + std::to_string(c->created_ns & 0x7fffffffffff) +
                  " 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE " + o.mid +
                  "\r\na=msid-semantic: WMS\r\nm=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n"
                  "c=IN IP4 0.0.0.0\r\n" +
                  candidates + "a=end-of-candidates\r\na=ice-ufrag:" + ufrag + "\r\na=ice-pwd:" + pwd +
                  "\r\na=fingerprint:sha-256 " + fingerprint_ + "\r\na=setup:passive\r\na=mid:" + o.mid +
                  "\r\na=sctp-port:5000\r\na=max-message-size:262144\r\n";
  g_free(ufrag);
  g_free(pwd);
  channels_[key.link] = std::move(c);
  start_ticks();
  {
    std::lock_guard lock(mutex_);
    ++stats_.answered;
  }
  sink_->on_answer(key, std::move(a), "");
}

void Door::on_ice_data(Channel& c, const std::uint8_t* data, std::size_t len) {
  if (c.dead) return;
  {
    std::lock_guard lock(mutex_);
    stats_.bytes_in += len;
  }
  if (len == 0 || data[0] < 20 || data[0] > 63) return;  // only DTLS records come this way
  c.heard_ns = monotonic_ns();
  send_unsent(c);
  // A record of epoch 1 or later (past the handshake): its 48-bit number counts the page's datagrams.
  if (len >= 13 && (data[3] | data[4]) != 0) {
    std::uint64_t seq = 0;
    for (int i = 5; i < 11; ++i) seq = seq << 8 | data[i];
    c.loss.saw(seq);
  }
  BIO_write(c.in, data, static_cast<int>(len));
  if (!c.dtls_done) {
    const int r = SSL_do_handshake(c.ssl);
    dtls_out(c);
    if (r != 1) {
      const int e = SSL_get_error(c.ssl, r);
      if (e != SSL_ERROR_WANT_READ && e != SSL_ERROR_WANT_WRITE) return drop(c, "the DTLS handshake failed: " + openssl_error(), true);
      return;
    }
    // The page must be the one that made the offer: its certificate is the one the offer names.
    X509* peer = SSL_get1_peer_certificate(c.ssl);
    unsigned char md[EVP_MAX_MD_SIZE];
    unsigned md_len = 0;
    const bool matches = peer && X509_digest(peer, EVP_sha256(), md, &md_len) && hex_fingerprint(md, md_len) == c.remote_fingerprint;
    if (peer) X509_free(peer);
    if (!matches) return drop(c, "the DTLS peer's certificate is not the one its offer names", true);
    c.dtls_done = true;
    start_sctp(c);
  }
  unsigned char plain[16 * 1024];
  for (;;) {
    const int n = SSL_read(c.ssl, plain, sizeof plain);
    if (n <= 0) {
      const int e = SSL_get_error(c.ssl, n);
      dtls_out(c);
      if (e == SSL_ERROR_ZERO_RETURN) return drop(c, "the page closed its DTLS session", true);
      if (e != SSL_ERROR_WANT_READ) return drop(c, "DTLS failed: " + openssl_error(), true);
      break;
    }
    usrsctp_conninput(&c, plain, static_cast<std::size_t>(n), 0);
    if (c.dead) return;  // dropped by what the packet held
  }
}

void Door::dtls_out(Channel& c) {
  // OpenSSL writes each flight's records one after another into the memory BIO: they go out in
  // datagrams of whole records up to the MTU.
  std::vector<std::uint8_t> pending;
  char buf[4096];
  int n;
  while ((n = BIO_read(c.out, buf, sizeof buf)) > 0) pending.insert(pending.end(), buf, buf + n);
  std::size_t at = 0;
  while (at < pending.size()) {
    std::size_t end = at;
    while (end + 13 <= pending.size()) {
      const std::size_t record = 13 + (std::size_t{pending[end + 11]} << 8 | pending[end + 12]);
      if (end > at && end + record - at > static_cast<std::size_t>(kMtu)) break;
      end += record;
    }
    if (end == at || end > pending.size()) end = pending.size();
    send_datagram(c, std::vector<std::uint8_t>(pending.begin() + static_cast<std::ptrdiff_t>(at),
                                              pending.begin() + static_cast<std::ptrdiff_t>(end)));
    at = end;
  }
}

void Door::send_datagram(Channel& c, std::vector<std::uint8_t> datagram) {
  // The page's first DTLS flight can come before ICE has a pair to answer on: what cannot be sent
  // yet waits (a few datagrams) and goes at the next tick, not at DTLS's retransmission a second on.
  if (!c.unsent.empty() || nice_agent_send(c.agent, c.stream, 1, static_cast<guint>(datagram.size()),
                                           reinterpret_cast<const gchar*>(datagram.data())) < 0) {
    if (c.unsent.size() < 16) c.unsent.push_back(std::move(datagram));
    return;
  }
  std::lock_guard lock(mutex_);
  stats_.bytes_out += datagram.size();
}

void Door::send_unsent(Channel& c) {
  while (!c.unsent.empty()) {
    const std::vector<std::uint8_t>& d = c.unsent.front();
    if (nice_agent_send(c.agent, c.stream, 1, static_cast<guint>(d.size()), reinterpret_cast<const gchar*>(d.data())) < 0) return;
    {
      std::lock_guard lock(mutex_);
      stats_.bytes_out += d.size();
    }
    c.unsent.pop_front();
  }
}

void Door::sctp_out(Channel& c, const void* data, std::size_t len) {
  if (!c.dtls_done) return;
  SSL_write(c.ssl, data, static_cast<int>(len));
  dtls_out(c);
}

void Door::start_sctp(Channel& c) {
  usrsctp_register_address(&c);
  c.sctp = usrsctp_socket(AF_CONN, SOCK_STREAM, IPPROTO_SCTP, &sctp_receive, nullptr, 0, &c);
  if (!c.sctp) return drop(c, "cannot open an SCTP socket", true);
  usrsctp_set_non_blocking(c.sctp, 1);
  linger no_linger{1, 0};
  usrsctp_setsockopt(c.sctp, SOL_SOCKET, SO_LINGER, &no_linger, sizeof no_linger);
  const int on = 1;
  usrsctp_setsockopt(c.sctp, IPPROTO_SCTP, SCTP_RECVRCVINFO, &on, sizeof on);
  usrsctp_setsockopt(c.sctp, IPPROTO_SCTP, SCTP_NODELAY, &on, sizeof on);
  sctp_assoc_value reset{};
  reset.assoc_id = SCTP_ALL_ASSOC;
  reset.assoc_value = SCTP_ENABLE_RESET_STREAM_REQ;
  usrsctp_setsockopt(c.sctp, IPPROTO_SCTP, SCTP_ENABLE_STREAM_RESET, &reset, sizeof reset);
  for (const int type : {SCTP_ASSOC_CHANGE, SCTP_STREAM_RESET_EVENT}) {
    sctp_event ev{};
    ev.se_assoc_id = SCTP_ALL_ASSOC;
    ev.se_on = 1;
    ev.se_type = static_cast<std::uint16_t>(type);
    usrsctp_setsockopt(c.sctp, IPPROTO_SCTP, SCTP_EVENT, &ev, sizeof ev);
  }
  sctp_paddrparams mtu{};
  mtu.spp_flags = SPP_PMTUD_DISABLE;
  mtu.spp_pathmtu = kMtu - 13 - 16 - 8;  // a DTLS record's header and AEAD tag inside the datagram
  usrsctp_setsockopt(c.sctp, IPPROTO_SCTP, SCTP_PEER_ADDR_PARAMS, &mtu, sizeof mtu);
  sockaddr_conn local{};
  local.sconn_family = AF_CONN;
  local.sconn_port = htons(5000);
  local.sconn_addr = &c;
  if (usrsctp_bind(c.sctp, reinterpret_cast<sockaddr*>(&local), sizeof local) < 0) return drop(c, "cannot bind SCTP", true);
  sockaddr_conn remote = local;
  remote.sconn_port = htons(c.remote_sctp_port);
  // Both sides connect (the page's side does too): SCTP takes the crossing INITs as one association.
  if (usrsctp_connect(c.sctp, reinterpret_cast<sockaddr*>(&remote), sizeof remote) < 0 && errno != EINPROGRESS)
    return drop(c, "cannot start SCTP", true);
}

void Door::on_sctp(Channel& c, const std::uint8_t* data, std::size_t len, std::uint32_t ppid, std::uint16_t sid, int flags) {
  if (flags & MSG_NOTIFICATION) {
    const auto* n = reinterpret_cast<const sctp_notification*>(data);
    if (len < sizeof n->sn_header) return;
    if (n->sn_header.sn_type == SCTP_ASSOC_CHANGE && len >= sizeof(sctp_assoc_change)) {
      const std::uint16_t state = n->sn_assoc_change.sac_state;
      if (state == SCTP_COMM_UP && !c.sctp_up) {
        c.sctp_up = true;
        std::lock_guard lock(mutex_);
        open_[c.key.link] = c.key.generation;
        ++stats_.opened;
      } else if (state == SCTP_COMM_LOST || state == SCTP_SHUTDOWN_COMP || state == SCTP_CANT_STR_ASSOC) {
        drop(c, "the page's SCTP association ended", true);
      }
    }
    return;
  }
  c.heard_ns = monotonic_ns();
  if (ppid == kPpidControl) {
    // DATA_CHANNEL_OPEN (3) for a channel the page did not negotiate: acknowledged (2), and its
    // stream is the play channel's from now on.
    if (len >= 1 && data[0] == 3) {
      c.play_sid = sid;
      const std::uint8_t ack = 2;
      sctp_send(c.sctp, sid, kPpidControl, false, &ack, 1);
    }
    return;
  }
  if (ppid != kPpidBinary && ppid != kPpidBinaryEmpty) return;  // text is not the protocol's
  {
    std::lock_guard lock(mutex_);
    ++stats_.messages_in;
  }
  sink_->on_message(c.key, std::span<const std::uint8_t>(data, ppid == kPpidBinaryEmpty ? 0 : len), c.heard_ns);
}

void Door::drop(Channel& c, const std::string& why, bool tell) {
  if (c.dead) return;
  c.dead = true;
  const RtcKey key = c.key;
  {
    std::lock_guard lock(mutex_);
    if (tell) ++stats_.failed;
    const auto it = open_.find(key.link);
    if (it != open_.end() && it->second == key.generation) open_.erase(it);
  }
  if (const auto it = channels_.find(key.link); it != channels_.end() && it->second.get() == &c) {
    graveyard_.push_back(std::move(it->second));
    channels_.erase(it);
  }
  if (tell) sink_->on_closed(key, why);
}

bool Door::tick() {
  graveyard_.clear();
  const std::int64_t now = monotonic_ns();
  {
    // usrsctp is one per process and its timers one clock: the doors of a process hosting many
    // sessions advance it together, each by the time since any of them last did.
    static std::mutex clock_mutex;
    static std::int64_t clock_ns = now;
    std::lock_guard lock(clock_mutex);
    const auto elapsed_ms = static_cast<std::uint32_t>(std::max<std::int64_t>(0, now - clock_ns) / 1'000'000);
    if (elapsed_ms > 0) {
      usrsctp_handle_timers(elapsed_ms);
      clock_ns += std::int64_t{elapsed_ms} * 1'000'000;
    }
  }
  std::vector<Channel*> late;
  for (auto& [link, c] : channels_) {
    send_unsent(*c);
    if (!c->dtls_done && DTLSv1_handle_timeout(c->ssl) > 0) dtls_out(*c);
    if (c->sctp_up && now - c->loss_said_ns > 1'000'000'000) {
      c->loss_said_ns = now;
      sink_->on_loss(c->key, static_cast<std::uint32_t>(c->loss.loss() * 1e6 + 0.5));
    }
    if (!c->sctp_up && now - c->created_ns > cfg_.open_within_ns) late.push_back(c.get());
    else if (c->sctp_up && now - c->heard_ns > cfg_.silent_ns) late.push_back(c.get());
  }
  for (Channel* c : late)
    drop(*c,
         c->sctp_up ? "the data channel went silent"
                    : "the data channel did not open within " + std::to_string(cfg_.open_within_ns / 1'000'000'000) +
                          " s (UDP blocked on the way?)",
         true);
  ticking_ = !channels_.empty() || !graveyard_.empty();
  return ticking_;
}

}  // namespace

std::unique_ptr<RtcDoor> RtcDoor::start(const RtcConfig& config, RtcSink* sink, Error* error) {
  auto door = std::make_unique<Door>(config, sink);
  if (!door->start(error)) return nullptr;
  return door;
}

}  // namespace rtc
}  // namespace lockstep
