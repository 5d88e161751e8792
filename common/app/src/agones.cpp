#include "lockstep/agones.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <poll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <cstdlib>
#include <cstring>

#include "lockstep/clock.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"

namespace lockstep {

std::uint16_t AgonesSdk::port_from_env() {
  const char* v = std::getenv("AGONES_SDK_HTTP_PORT");
  const long p = v ? std::strtol(v, nullptr, 10) : 0;
  return p > 0 && p < 65536 ? static_cast<std::uint16_t>(p) : std::uint16_t{9358};
}

bool AgonesSdk::set_annotation(const std::string& key, const std::string& value) {
  return request("PUT", "/metadata/annotation", nullptr, json_text(Json{{"key", key}, {"value", value}}));
}

bool AgonesSdk::request(const char* method, const char* path, std::string* body, const std::string& send_body) {
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
    const bool with_body = std::strcmp(method, "GET") != 0;
    const std::string req = std::string(method) + " " + path + " HTTP/1.1\r\nHost: localhost\r\n" +
                            (with_body ? "Content-Type: application/json\r\nContent-Length: " +
                                             std::to_string(send_body.size()) + "\r\n"
                                       : std::string()) +
                            "Connection: close\r\n\r\n" + (with_body ? send_body : std::string());
    if (::send(fd, req.data(), req.size(), MSG_NOSIGNAL) == static_cast<ssize_t>(req.size())) {
      // The answer up to its end (the sidecar closes), at most 64 KiB; a POST needs its status line only.
      std::string answer;
      char buf[4096];
      while (answer.size() < 64 * 1024 && wait_for(POLLIN)) {
        const ssize_t n = recv(fd, buf, sizeof buf, 0);
        if (n <= 0) break;
        answer.append(buf, static_cast<std::size_t>(n));
        if (!body && answer.size() >= 12) break;
      }
      ok = answer.size() >= 12 && answer.compare(0, 7, "HTTP/1.") == 0 && answer[9] == '2';
      if (ok && body) {
        const auto at = answer.find("\r\n\r\n");
        *body = at == std::string::npos ? "" : answer.substr(at + 4);
      }
    }
  }
  close(fd);
  if (!ok) LOCKSTEP_LOG_WARN("agones: %s %s to 127.0.0.1:%u failed", method, path, port_);
  return ok;
}

AgonesSdk::Allocation AgonesSdk::allocation(const std::string& annotation_name) {
  Allocation out;
  std::string body;
  if (!request("GET", "/gameserver", &body)) return out;
  const Json doc = json_parse(body);
  if (doc.is_discarded() || !doc.is_object()) return out;
  const Json::json_pointer annotations("/object_meta/annotations"), address("/status/address"), port("/status/ports/0/port");
  if (doc.contains(annotations) && doc[annotations].is_object()) {
    const auto it = doc[annotations].find(annotation_name);
    if (it != doc[annotations].end() && it->is_string()) out.annotation = it->get<std::string>();
  }
  if (doc.contains(address) && doc[address].is_string() && doc.contains(port) && doc[port].is_number_unsigned()) {
    TokenAddress a;
    if (parse_token_address(doc[address].get<std::string>() + ":" + std::to_string(doc[port].get<std::uint64_t>()), &a))
      out.address = a;
  }
  return out;
}

}  // namespace lockstep
