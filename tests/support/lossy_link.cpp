#include "support/lossy_link.hpp"

#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/epoll.h>
#include <sys/socket.h>
#include <unistd.h>

#include <algorithm>
#include <stdexcept>

namespace lockstep::testing {

namespace {
constexpr std::size_t kMaxDatagram = 65536;

sockaddr_in loopback(std::uint16_t port) {
  sockaddr_in a{};
  a.sin_family = AF_INET;
  a.sin_port = htons(port);
  a.sin_addr.s_addr = htonl(INADDR_LOOPBACK);
  return a;
}
}  // namespace

LossyLink::LossyLink(const FaultConfig& faults, std::uint16_t server_port) : relay_(faults), server_port_(server_port) {
  epoll_ = epoll_create1(0);
  listener_ = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  sockaddr_in any = loopback(0);
  if (epoll_ < 0 || listener_ < 0 || bind(listener_, reinterpret_cast<sockaddr*>(&any), sizeof any) != 0)
    throw std::runtime_error("lossy link: cannot open its socket");
  socklen_t len = sizeof any;
  getsockname(listener_, reinterpret_cast<sockaddr*>(&any), &len);
  port_ = ntohs(any.sin_port);
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = UINT64_MAX;  // the listener
  epoll_ctl(epoll_, EPOLL_CTL_ADD, listener_, &ev);
}

LossyLink::~LossyLink() {
  for (const int fd : upstream_) close(fd);
  if (listener_ >= 0) close(listener_);
  if (epoll_ >= 0) close(epoll_);
}

std::size_t LossyLink::flow_of(std::uint32_t addr, std::uint16_t port) {
  const auto key = std::make_pair(addr, port);
  if (const auto it = by_addr_.find(key); it != by_addr_.end()) return it->second;
  const auto flow = relay_.add_flow();
  if (!flow) throw std::runtime_error("lossy link: too many flows");
  const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
  const sockaddr_in server = loopback(server_port_);
  if (fd < 0 || connect(fd, reinterpret_cast<const sockaddr*>(&server), sizeof server) != 0)
    throw std::runtime_error("lossy link: cannot reach the server");
  epoll_event ev{};
  ev.events = EPOLLIN;
  ev.data.u64 = *flow;
  epoll_ctl(epoll_, EPOLL_CTL_ADD, fd, &ev);
  upstream_.push_back(fd);
  clients_.push_back(key);
  by_addr_.emplace(key, *flow);
  return *flow;
}

void LossyLink::read_all(int fd, bool from_client, std::size_t flow, std::int64_t now) {
  std::vector<std::uint8_t> buf(kMaxDatagram);
  for (;;) {
    sockaddr_in from{};
    socklen_t len = sizeof from;
    const ssize_t n = recvfrom(fd, buf.data(), buf.size(), 0, reinterpret_cast<sockaddr*>(&from), &len);
    if (n < 0) return;
    const std::span<const std::uint8_t> bytes(buf.data(), static_cast<std::size_t>(n));
    if (from_client) relay_.push(FaultRelay::Direction::Up, flow_of(from.sin_addr.s_addr, from.sin_port), bytes, now);
    else relay_.push(FaultRelay::Direction::Down, flow, bytes, now);
  }
}

std::int64_t LossyLink::update(std::int64_t now) {
  epoll_event evs[16];
  const int n = epoll_wait(epoll_, evs, 16, 0);
  for (int i = 0; i < n; ++i) {
    if (evs[i].data.u64 == UINT64_MAX) read_all(listener_, true, 0, now);
    else read_all(upstream_[evs[i].data.u64], false, evs[i].data.u64, now);
  }
  std::int64_t wake = relay_.update(now, [&](const FaultRelay::Datagram& due) {
    if (!damage_ && !hold_) return deliver(due);
    FaultRelay::Datagram d = due;
    if (damage_) damage_(d);
    const std::int64_t extra = hold_ ? hold_(d, now) : 0;
    if (extra > 0) held_.emplace_back(now + extra, std::move(d));
    else deliver(d);
  });
  for (auto it = held_.begin(); it != held_.end();) {
    if (it->first <= now) {
      deliver(it->second);
      it = held_.erase(it);
    } else {
      wake = std::min(wake, it->first);
      ++it;
    }
  }
  return wake;
}

void LossyLink::deliver(const FaultRelay::Datagram& d) {
  if (d.direction == FaultRelay::Direction::Up) {
    send(upstream_[d.flow], d.bytes.data(), d.bytes.size(), 0);
  } else {
    sockaddr_in to{};
    to.sin_family = AF_INET;
    to.sin_addr.s_addr = clients_[d.flow].first;
    to.sin_port = clients_[d.flow].second;
    sendto(listener_, d.bytes.data(), d.bytes.size(), 0, reinterpret_cast<const sockaddr*>(&to), sizeof to);
  }
}

Driven LossyLink::part() {
  return {[this](std::int64_t now) { return update(now); }, [this] { return epoll_; }};
}

}  // namespace lockstep::testing
