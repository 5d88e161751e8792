// A capture of what the relay carries, as a pcap file of raw IPv4/UDP packets (LINKTYPE_RAW):
// Wireshark and tcpdump read it, and a test can look for what must not be readable in it.
#pragma once

#include <netinet/in.h>

#include <cstdint>
#include <cstdio>
#include <span>
#include <string>

namespace lockstep::netsim {

class PcapWriter {
 public:
  PcapWriter() = default;
  ~PcapWriter();
  PcapWriter(const PcapWriter&) = delete;
  PcapWriter& operator=(const PcapWriter&) = delete;
  /// Creates `path` (mode 600: a capture can hold what a LAN session sends in the clear).
  bool open(const std::string& path);
  /// One UDP datagram from `from` to `to`, stamped with the wall clock.
  void write(const sockaddr_in& from, const sockaddr_in& to, std::span<const std::uint8_t> payload);
  [[nodiscard]] std::uint64_t packets() const { return packets_; }

 private:
  std::FILE* file_ = nullptr;
  std::uint64_t packets_ = 0;
};

}  // namespace lockstep::netsim
