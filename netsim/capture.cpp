#include "capture.hpp"

#include <fcntl.h>
#include <unistd.h>

#include <cstring>
#include <ctime>

namespace lockstep::netsim {
namespace {

void put16(std::uint8_t* p, std::uint16_t v) {  // network order
  p[0] = static_cast<std::uint8_t>(v >> 8);
  p[1] = static_cast<std::uint8_t>(v);
}

}  // namespace

PcapWriter::~PcapWriter() {
  if (file_) std::fclose(file_);
}

bool PcapWriter::open(const std::string& path) {
  const int fd = ::open(path.c_str(), O_WRONLY | O_CREAT | O_TRUNC, 0600);
  if (fd < 0) return false;
  file_ = fdopen(fd, "wb");
  if (!file_) {
    ::close(fd);
    return false;
  }
  // pcap 2.4, microsecond stamps, snap length 65535, link type 101 (raw IP); host byte order,
  // which readers tell from the magic number.
  const std::uint32_t head[6] = {0xa1b2c3d4u, 2u | (4u << 16), 0, 0, 65535, 101};
  return std::fwrite(head, sizeof head, 1, file_) == 1;
}

void PcapWriter::write(const sockaddr_in& from, const sockaddr_in& to, std::span<const std::uint8_t> payload) {
  if (!file_) return;
  timespec ts{};
  clock_gettime(CLOCK_REALTIME, &ts);
  const std::size_t len = 28 + payload.size();
  const std::uint32_t rec[4] = {static_cast<std::uint32_t>(ts.tv_sec), static_cast<std::uint32_t>(ts.tv_nsec / 1000),
                                static_cast<std::uint32_t>(len), static_cast<std::uint32_t>(len)};
  std::uint8_t ip[28] = {0x45, 0};
  put16(ip + 2, static_cast<std::uint16_t>(len));
  put16(ip + 6, 0x4000);  // don't fragment
  ip[8] = 64;             // TTL
  ip[9] = 17;             // UDP
  std::memcpy(ip + 12, &from.sin_addr.s_addr, 4);
  std::memcpy(ip + 16, &to.sin_addr.s_addr, 4);
  std::uint32_t sum = 0;  // the IPv4 header checksum
  for (int i = 0; i < 20; i += 2) sum += static_cast<std::uint32_t>((ip[i] << 8) | ip[i + 1]);
  while (sum >> 16) sum = (sum & 0xffff) + (sum >> 16);
  put16(ip + 10, static_cast<std::uint16_t>(~sum));
  std::memcpy(ip + 20, &from.sin_port, 2);
  std::memcpy(ip + 22, &to.sin_port, 2);
  put16(ip + 24, static_cast<std::uint16_t>(8 + payload.size()));  // UDP checksum 0: none
  std::fwrite(rec, sizeof rec, 1, file_);
  std::fwrite(ip, sizeof ip, 1, file_);
  std::fwrite(payload.data(), 1, payload.size(), file_);
  ++packets_;
}

}  // namespace lockstep::netsim
