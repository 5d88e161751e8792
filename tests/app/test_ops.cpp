// lockstep-server's ops port (server/ops_http.hpp) on real loopback sockets, and its figures
// (server/server_metrics.hpp) from a session on the simulated network.
#include <doctest/doctest.h>

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cctype>
#include <cstdlib>
#include <cstring>
#include <set>
#include <sstream>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/arena.hpp"
#include "lockstep/clock.hpp"
#include "ops_http.hpp"
#include "server_metrics.hpp"
#include "support/session_harness.hpp"

using namespace lockstep;
using lockstep::testing::client_named;
using lockstep::testing::kSeconds;
using lockstep::testing::Session;

namespace {

int connect_to(std::uint16_t port) {
  const int fd = socket(AF_INET, SOCK_STREAM, 0);
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  REQUIRE(connect(fd, reinterpret_cast<sockaddr*>(&a), sizeof a) == 0);
  return fd;
}

// Sends `request` on a new connection and reads until the server closes it or `wait_ms` passes.
std::string exchange(std::uint16_t port, const std::string& request, int wait_ms = 5000) {
  const int fd = connect_to(port);
  CHECK(send(fd, request.data(), request.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(request.size()));
  std::string got;
  const std::int64_t until = monotonic_ns() + std::int64_t{wait_ms} * 1'000'000;
  for (;;) {
    const std::int64_t left = (until - monotonic_ns()) / 1'000'000;
    if (left <= 0) break;
    pollfd p{fd, POLLIN, 0};
    if (poll(&p, 1, static_cast<int>(left)) <= 0) break;
    char buf[4096];
    const ssize_t n = recv(fd, buf, sizeof buf, 0);
    if (n <= 0) break;
    got.append(buf, static_cast<std::size_t>(n));
    // One answer with a length: done once the body is in.
    const auto head_end = got.find("\r\n\r\n");
    const auto len_at = got.find("content-length: ");
    if (head_end != std::string::npos && len_at != std::string::npos && len_at < head_end &&
        got.size() >= head_end + 4 + std::stoul(got.substr(len_at + 16)))
      break;
  }
  close(fd);
  return got;
}

std::string status_line(const std::string& answer) { return answer.substr(0, answer.find("\r\n")); }

// A sample line of the text format: `name{key="value",...} number` (labels optional); its name.
bool sample_line(const std::string& line, std::string* name) {
  std::size_t i = 0;
  while (i < line.size() && (std::islower(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
  if (i == 0) return false;
  *name = line.substr(0, i);
  if (i < line.size() && line[i] == '{') {
    ++i;
    for (;;) {
      const std::size_t key = i;
      while (i < line.size() && (std::islower(static_cast<unsigned char>(line[i])) || line[i] == '_')) ++i;
      if (i == key || line.compare(i, 2, "=\"") != 0) return false;
      const std::size_t close = line.find('"', i + 2);
      if (close == std::string::npos) return false;
      i = close + 1;
      if (i < line.size() && line[i] == ',') {
        ++i;
        continue;
      }
      if (i >= line.size() || line[i] != '}') return false;
      ++i;
      break;
    }
  }
  if (i >= line.size() || line[i] != ' ') return false;
  const std::string value = line.substr(i + 1);
  if (value == "+Inf" || value == "NaN") return true;
  if (value.empty() || value.find_first_not_of("0123456789.e+-") != std::string::npos) return false;
  char* end = nullptr;
  std::strtod(value.c_str(), &end);
  return end == value.c_str() + value.size();
}

std::unique_ptr<OpsHttp> start_ops(OpsHttpConfig cfg = {}) {
  cfg.bind = "127.0.0.1";
  std::string error;
  auto ops = OpsHttp::start(
      cfg,
      [](std::string_view path, const OpsHttpStats&) -> OpsReply {
        if (path == "/healthz") return {200, "text/plain", "ok\n"};
        if (path == "/big") return {200, "text/plain", std::string(8 << 20, 'x')};  // more than a socket holds
        return {404, "", ""};
      },
      &error);
  REQUIRE_MESSAGE(ops != nullptr, error);
  return ops;
}

}  // namespace

TEST_SUITE("app/ops") {
  TEST_CASE("the ops port answers GET, refuses other methods with 405 and Allow, unknown paths with 404, garbage with 400") {
    auto ops = start_ops();
    const std::string ok = exchange(ops->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n");
    CHECK(status_line(ok) == "HTTP/1.1 200 OK");
    CHECK(ok.find("\r\n\r\nok\n") != std::string::npos);
    CHECK(status_line(exchange(ops->port(), "GET /healthz?verbose=1 HTTP/1.1\r\nHost: x\r\n\r\n")) == "HTTP/1.1 200 OK");
    for (const char* method : {"POST", "PUT", "DELETE"}) {
      CAPTURE(method);
      const std::string r = exchange(ops->port(), std::string(method) + " /healthz HTTP/1.1\r\nHost: x\r\nContent-Length: 3\r\n\r\nabc");
      CHECK(status_line(r) == "HTTP/1.1 405 Method Not Allowed");
      CHECK(r.find("allow: GET") != std::string::npos);
    }
    CHECK(status_line(exchange(ops->port(), "GET /other HTTP/1.1\r\nHost: x\r\n\r\n")) == "HTTP/1.1 404 Not Found");
    const std::string bad = exchange(ops->port(), "\x01\x02 nonsense \xff\r\n\r\n", 3000);
    CAPTURE(bad);
    CHECK((bad.empty() || (bad.rfind("HTTP/1.", 0) == 0 && bad.size() > 9 && bad[9] == '4')));  // refused or closed, never served
    const std::string huge_header = "GET /healthz HTTP/1.1\r\nX-Pad: " + std::string(16 * 1024, 'a') + "\r\n\r\n";
    CHECK(exchange(ops->port(), huge_header, 3000).find("\r\n\r\nok\n") == std::string::npos);
    const OpsHttpStats st = ops->stats();
    CHECK(st.answered == 2);
    CHECK(st.not_allowed == 3);
    CHECK(st.not_found == 1);
    // Still serving after all of it.
    CHECK(status_line(exchange(ops->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) == "HTTP/1.1 200 OK");
  }

  TEST_CASE("a client that never reads, and connections that never send, are cut at the deadline and keep no one else waiting") {
    OpsHttpConfig cfg;
    cfg.deadline_seconds = 1;
    cfg.max_connections = 8;
    auto ops = start_ops(cfg);
    // A scraper that asks for 8 MiB and reads none of it, and six connections that say nothing.
    const int stuck = connect_to(ops->port());
    const std::string ask = "GET /big HTTP/1.1\r\nHost: x\r\n\r\n";
    REQUIRE(send(stuck, ask.data(), ask.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(ask.size()));
    std::vector<int> silent;
    for (int i = 0; i < 6; ++i) silent.push_back(connect_to(ops->port()));
    // Others are answered meanwhile.
    for (int i = 0; i < 20; ++i)
      CHECK(status_line(exchange(ops->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n")) == "HTTP/1.1 200 OK");
    // The silent ones are closed by the server (EOF), within a few deadlines.
    for (const int fd : silent) {
      pollfd p{fd, POLLIN, 0};
      CHECK(poll(&p, 1, 10'000) == 1);
      char c;
      CHECK(recv(fd, &c, 1, 0) <= 0);
      close(fd);
    }
    // The one that never read: the server gave up on it; what it can still read is not the whole answer.
    std::this_thread::sleep_for(std::chrono::milliseconds(2500));
    std::size_t read = 0;
    for (;;) {
      pollfd p{stuck, POLLIN, 0};
      if (poll(&p, 1, 3000) != 1) break;
      char buf[65536];
      const ssize_t n = recv(stuck, buf, sizeof buf, 0);
      if (n <= 0) break;
      read += static_cast<std::size_t>(n);
    }
    CHECK(read < (8u << 20));
    close(stuck);
  }

  TEST_CASE("a flood of connections past the bound waits, and the port answers once it is gone") {
    OpsHttpConfig cfg;
    cfg.deadline_seconds = 1;
    cfg.max_connections = 8;
    auto ops = start_ops(cfg);
    std::vector<int> flood;
    for (int i = 0; i < 64; ++i) flood.push_back(connect_to(ops->port()));  // the kernel's backlog takes them
    for (const int fd : flood) close(fd);
    // A flood of requests, one after another: each answered.
    for (int i = 0; i < 200; ++i)
      REQUIRE(status_line(exchange(ops->port(), "GET /healthz HTTP/1.1\r\nHost: x\r\n\r\n", 10'000)) == "HTTP/1.1 200 OK");
    CHECK(ops->stats().answered == 200);
  }

  TEST_CASE("/metrics: every family has its help and type, series are labelled by slot, and the figures are the session's") {
    ServerConfig cfg;
    cfg.players = 2;
    cfg.last_tick = 300;
    cfg.world = arena_world(3, 20, cfg.players);
    Session s(cfg);
    ServerMetrics metrics("abc123", "arena", false);
    CHECK(metrics.answer("/healthz", 0, {}).status == 503);  // nothing published yet
    CHECK(metrics.answer("/readyz", 0, {}).status == 503);
    metrics.observe(*s.server, s.now(), 0, false, false, true);
    CHECK(metrics.answer("/readyz", s.now(), {}).status == 200);  // the lobby has seats
    s.add_client(client_named("a"), 1);
    s.add_client(client_named("b"), 2);
    REQUIRE(s.until([&] { return s.server->executed_tick() >= 200; }, 20 * kSeconds));
    metrics.observe(*s.server, s.now(), 300'000, true, false, true);
    const std::int64_t now = s.now();
    CHECK(metrics.answer("/healthz", now, {}).status == 200);
    const OpsReply ready = metrics.answer("/readyz", now, {});
    CHECK(ready.status == 503);
    CHECK(ready.body.find("running") != std::string::npos);
    CHECK(metrics.answer("/healthz", now + 6 * kSeconds, {}).status == 503);  // the loop stopped publishing
    CHECK(metrics.answer("/nope", now, {}).status == 404);

    const OpsReply m = metrics.answer("/metrics", now, {3, 1, 0});
    CHECK(m.status == 200);
    CHECK(m.content_type.rfind("text/plain; version=0.0.4", 0) == 0);
    const std::string& text = m.body;
    std::istringstream lines(text);
    std::string line;
    std::set<std::string> helped, typed, sampled;
    while (std::getline(lines, line)) {
      if (line.rfind("# HELP ", 0) == 0) helped.insert(line.substr(7, line.find(' ', 7) - 7));
      else if (line.rfind("# TYPE ", 0) == 0) typed.insert(line.substr(7, line.find(' ', 7) - 7));
      else if (!line.empty()) {
        CAPTURE(line);
        std::string name;
        REQUIRE(sample_line(line, &name));
        for (const char* suffix : {"_bucket", "_sum", "_count"})
          if (typed.count(name) == 0 && name.size() > std::strlen(suffix) &&
              name.compare(name.size() - std::strlen(suffix), std::string::npos, suffix) == 0)
            name.resize(name.size() - std::strlen(suffix));
        sampled.insert(name);
      }
    }
    for (const std::string& name : sampled) {
      CAPTURE(name);
      CHECK(helped.count(name) == 1);
      CHECK(typed.count(name) == 1);
    }
    auto has = [&](const std::string& what) {
      CAPTURE(what);
      CHECK(text.find(what) != std::string::npos);
    };
    has("lockstep_info{session=\"abc123\",version=");
    has("lockstep_ticks_executed_total " + std::to_string(s.server->stats().ticks) + "\n");
    has("lockstep_tick " + std::to_string(s.server->executed_tick()) + "\n");
    has("lockstep_tick_lateness_seconds_count " + std::to_string(s.server->stats().lateness.count()) + "\n");
    has("lockstep_tick_duration_seconds_count 1\n");
    has("lockstep_tick_duration_seconds_bucket{le=\"0.0005\"} 1\n");  // the one update of 300 us
    has("lockstep_seat_round_trip_seconds{slot=\"0\"} ");
    has("lockstep_seat_round_trip_seconds{slot=\"1\"} ");
    has("lockstep_seat_fills_total{cause=\"late\",slot=\"1\"} ");
    has("lockstep_players 2\n");
    has("lockstep_sessions{phase=\"running\"} 1\n");
    has("lockstep_joins_total{kind=\"join\"} 2\n");
    has("lockstep_join_latency_seconds_count 2\n");
    has("lockstep_refusals_total{reason=\"Draining\"} 0\n");
    has("lockstep_drops_total{kind=\"message_malformed\"} 0\n");
    has("lockstep_relay_ticks_total{verdict=\"settled\"} 0\n");
    has("lockstep_ops_requests_total{outcome=\"answered\"} 3\n");
    has("lockstep_datagrams_total{direction=\"in\"} ");
    CHECK(text.find("name=") == std::string::npos);  // no player names in labels
  }

  TEST_CASE("several sessions on one ops port: each family once, every session's samples labelled with it, the port's counters once") {
    const std::string a =
        "# HELP lockstep_info the session\n# TYPE lockstep_info gauge\nlockstep_info{session=\"h-0\",mode=\"relay\"} 1\n"
        "# HELP lockstep_ops_requests_total requests\n# TYPE lockstep_ops_requests_total counter\n"
        "lockstep_ops_requests_total{outcome=\"answered\"} 4\n"
        "# HELP lockstep_tick the newest tick\n# TYPE lockstep_tick gauge\nlockstep_tick 120\n"
        "# HELP lockstep_lat lateness\n# TYPE lockstep_lat histogram\nlockstep_lat_count 3\nlockstep_lat_bucket{le=\"+Inf\"} 3\n";
    const std::string b =
        "# HELP lockstep_info the session\n# TYPE lockstep_info gauge\nlockstep_info{session=\"h-1\",mode=\"relay\"} 1\n"
        "# HELP lockstep_ops_requests_total requests\n# TYPE lockstep_ops_requests_total counter\n"
        "lockstep_ops_requests_total{outcome=\"answered\"} 4\n"
        "# HELP lockstep_tick the newest tick\n# TYPE lockstep_tick gauge\nlockstep_tick 80\n"
        "# HELP lockstep_seat seats\n# TYPE lockstep_seat gauge\nlockstep_seat{slot=\"0\"} 0.5\n";
    const std::string merged = lockstep::ServerMetrics::merge({"h-0", "h-1"}, {a, b});
    CHECK(merged ==
          "# HELP lockstep_info the session\n# TYPE lockstep_info gauge\n"
          "lockstep_info{session=\"h-0\",mode=\"relay\"} 1\nlockstep_info{session=\"h-1\",mode=\"relay\"} 1\n"
          "# HELP lockstep_ops_requests_total requests\n# TYPE lockstep_ops_requests_total counter\n"
          "lockstep_ops_requests_total{outcome=\"answered\"} 4\n"
          "# HELP lockstep_tick the newest tick\n# TYPE lockstep_tick gauge\n"
          "lockstep_tick{session=\"h-0\"} 120\nlockstep_tick{session=\"h-1\"} 80\n"
          "# HELP lockstep_lat lateness\n# TYPE lockstep_lat histogram\n"
          "lockstep_lat_count{session=\"h-0\"} 3\nlockstep_lat_bucket{session=\"h-0\",le=\"+Inf\"} 3\n"
          "# HELP lockstep_seat seats\n# TYPE lockstep_seat gauge\nlockstep_seat{session=\"h-1\",slot=\"0\"} 0.5\n");
    // Real expositions of two sessions that have published nothing yet: every HELP once.
    lockstep::ServerMetrics m0("host-0", "arena", false), m1("host-1", "arena", false);
    const lockstep::OpsReply r = lockstep::ServerMetrics::answer_all({&m0, &m1}, "/metrics", 0, {});
    CHECK(r.status == 200);
    std::set<std::string> helps;
    std::istringstream lines(r.body);
    for (std::string line; std::getline(lines, line);)
      if (line.rfind("# HELP ", 0) == 0) CHECK(helps.insert(line.substr(7, line.find(' ', 7) - 7)).second);
    CHECK(r.body.find("lockstep_info{session=\"host-0\"") != std::string::npos);
    CHECK(r.body.find("lockstep_info{session=\"host-1\"") != std::string::npos);
    const lockstep::OpsReply health = lockstep::ServerMetrics::answer_all({&m0, &m1}, "/healthz", 0, {});
    CHECK(health.status == 503);  // nothing published: starting
    CHECK(health.body.find("host-1: starting") != std::string::npos);
  }
}
