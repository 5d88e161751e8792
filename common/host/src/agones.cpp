#include "lockstep/agones.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "lockstep/clock.hpp"
#include "lockstep/log.hpp"

namespace lockstep {

std::uint16_t AgonesSdk::port_from_env() {
  const char* v = std::getenv("AGONES_SDK_HTTP_PORT");
  const long p = v ? std::strtol(v, nullptr, 10) : 0;
  return p > 0 && p < 65536 ? static_cast<std::uint16_t>(p) : std::uint16_t{9358};
}

bool AgonesSdk::post(const char* path) {
  const std::int64_t deadline = monotonic_ns() + 300'000'000;
  const int fd = socket(AF_INET, SOCK_STREAM | SOCK_NONBLOCK, 0);
  if (fd < 0) return false;
  sockaddr_in addr{};
  addr.sin_family = AF_INET;
  addr.sin_port = htons(port_);
  addr.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  auto wait_for = [&](short events) {
    const std::int64_t left = deadline - monotonic_ns();
    if (left <= 0) return false;
    pollfd p{fd, events, 0};
    return ::poll(&p, 1, static_cast<int>(left / 1'000'000) + 1) > 0 && (p.revents & events);
  };
  bool ok = false;
  if (connect(fd, reinterpret_cast<sockaddr*>(&addr), sizeof addr) == 0 || (errno == EINPROGRESS && wait_for(POLLOUT))) {
    const std::string req = std::string("POST ") + path +
                            " HTTP/1.1\r\nHost: localhost\r\nContent-Type: application/json\r\nContent-Length: 2\r\n"
                            "Connection: close\r\n\r\n{}";
    if (send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size()) && wait_for(POLLIN)) {
      char buf[64] = {};
      const ssize_t n = recv(fd, buf, sizeof buf - 1, 0);
      ok = n >= 12 && std::strncmp(buf, "HTTP/1.", 7) == 0 && buf[9] == '2';
    }
  }
  close(fd);
  if (!ok) LOCKSTEP_LOG_WARN("agones: POST %s to 127.0.0.1:%u failed", path, port_);
  return ok;
}

}  // namespace lockstep
