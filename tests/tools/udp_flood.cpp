// udp-flood: a UDP flood from many loopback addresses, for the server's flood tests.
//
//   udp-flood PORT SECONDS RATE ADDRESSES KIND [HOST]
//
// Sends RATE datagrams a second for SECONDS to HOST:PORT (127.0.0.1), from ADDRESSES sockets
// bound to 127.0.1.1, 127.0.1.2, ... in turn. KIND: empty, random (1..1400 random bytes), big
// (65 000 bytes), enet (an ENet-like header: a peer id of a low slot, a random check, a command
// with garbage), or mixed (each datagram one of the four at random). Prints a JSON object with
// the datagrams sent of each kind and the send errors (a full socket buffer drops a datagram).
#include <arpa/inet.h>
#include <netinet/in.h>
#include <sys/socket.h>
#include <unistd.h>

#include <chrono>
#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <random>
#include <string>
#include <thread>
#include <vector>

namespace {

enum Kind { kEmpty, kRandom, kBig, kEnet, kKinds };
const char* const kNames[kKinds] = {"empty", "random", "big", "enet"};

std::size_t fill(Kind k, std::mt19937_64& rng, std::uint8_t* buf) {
  switch (k) {
    case kEmpty: return 0;
    case kRandom: {
      const std::size_t n = 1 + rng() % 1400;
      for (std::size_t i = 0; i < n; ++i) buf[i] = static_cast<std::uint8_t>(rng());
      return n;
    }
    case kBig: return 65000;  // the bytes are whatever the buffer holds
    case kEnet: {
      const std::uint16_t peer = static_cast<std::uint16_t>((rng() % 8) | (rng() % 2 ? 0x8000 : 0));  // sent-time flag
      buf[0] = static_cast<std::uint8_t>(peer >> 8);
      buf[1] = static_cast<std::uint8_t>(peer);
      const std::size_t n = 8 + rng() % 48;
      for (std::size_t i = 2; i < n; ++i) buf[i] = static_cast<std::uint8_t>(rng());
      buf[8 % n] = static_cast<std::uint8_t>(0x80 | (rng() % 12));  // an acknowledged command, some kind
      return n;
    }
    default: return 0;
  }
}

}  // namespace

int main(int argc, char** argv) {
  if (argc < 6) {
    std::fprintf(stderr, "usage: udp-flood PORT SECONDS RATE ADDRESSES KIND [HOST]\n");
    return 2;
  }
  const int port = std::atoi(argv[1]);
  const double seconds = std::atof(argv[2]);
  const long rate = std::atol(argv[3]);
  const int addresses = std::max(1, std::atoi(argv[4]));
  const std::string kind = argv[5];
  const char* host = argc > 6 ? argv[6] : "127.0.0.1";
  int only = -1;
  for (int k = 0; k < kKinds; ++k)
    if (kind == kNames[k]) only = k;
  if (only < 0 && kind != "mixed") {
    std::fprintf(stderr, "udp-flood: unknown kind '%s'\n", kind.c_str());
    return 2;
  }
  sockaddr_in to{};
  to.sin_family = AF_INET;
  to.sin_port = htons(static_cast<std::uint16_t>(port));
  inet_pton(AF_INET, host, &to.sin_addr);
  std::vector<int> socks;
  for (int i = 0; i < addresses; ++i) {
    const int fd = socket(AF_INET, SOCK_DGRAM | SOCK_NONBLOCK, 0);
    if (fd < 0) return 1;
    sockaddr_in from{};
    from.sin_family = AF_INET;
    from.sin_addr.s_addr = htonl((127u << 24) | ((1u + static_cast<std::uint32_t>(i / 250)) << 8) | (1u + static_cast<std::uint32_t>(i % 250)));
    bind(fd, reinterpret_cast<sockaddr*>(&from), sizeof from);
    const int big = 4 << 20;
    setsockopt(fd, SOL_SOCKET, SO_SNDBUF, &big, sizeof big);
    socks.push_back(fd);
  }
  std::mt19937_64 rng(12345);
  constexpr int kBatch = 32;
  std::vector<std::vector<std::uint8_t>> bufs(kBatch, std::vector<std::uint8_t>(65000));
  for (auto& b : bufs)
    for (auto& x : b) x = static_cast<std::uint8_t>(rng());
  std::uint64_t sent[kKinds] = {}, errors = 0;
  const auto start = std::chrono::steady_clock::now();
  std::uint64_t total = 0;
  std::size_t next_sock = 0;
  for (;;) {
    const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
    if (elapsed >= seconds) break;
    const auto due = static_cast<std::uint64_t>(elapsed * static_cast<double>(rate));
    if (total >= due) {
      std::this_thread::sleep_for(std::chrono::microseconds(500));
      continue;
    }
    const int n = static_cast<int>(std::min<std::uint64_t>(kBatch, due - total));
    mmsghdr msgs[kBatch]{};
    iovec iov[kBatch]{};
    int kinds[kBatch];
    for (int i = 0; i < n; ++i) {
      kinds[i] = only >= 0 ? only : static_cast<int>(rng() % kKinds);
      iov[i].iov_base = bufs[i].data();
      iov[i].iov_len = fill(static_cast<Kind>(kinds[i]), rng, bufs[i].data());
      msgs[i].msg_hdr.msg_iov = &iov[i];
      msgs[i].msg_hdr.msg_iovlen = 1;
      msgs[i].msg_hdr.msg_name = &to;
      msgs[i].msg_hdr.msg_namelen = sizeof to;
    }
    const int fd = socks[next_sock++ % socks.size()];
    const int done = sendmmsg(fd, msgs, static_cast<unsigned>(n), 0);
    const int ok = done < 0 ? 0 : done;
    for (int i = 0; i < ok; ++i) ++sent[kinds[i]];
    errors += static_cast<std::uint64_t>(n - ok);
    total += static_cast<std::uint64_t>(n);
  }
  const double elapsed = std::chrono::duration<double>(std::chrono::steady_clock::now() - start).count();
  std::uint64_t all = 0;
  for (auto s : sent) all += s;
  std::printf("{\"sent\": %llu, \"per_second\": %.0f, \"empty\": %llu, \"random\": %llu, \"big\": %llu, \"enet\": %llu, "
              "\"send_errors\": %llu}\n",
              static_cast<unsigned long long>(all), static_cast<double>(all) / elapsed,
              static_cast<unsigned long long>(sent[kEmpty]), static_cast<unsigned long long>(sent[kRandom]),
              static_cast<unsigned long long>(sent[kBig]), static_cast<unsigned long long>(sent[kEnet]),
              static_cast<unsigned long long>(errors));
  for (int fd : socks) close(fd);
  return 0;
}
