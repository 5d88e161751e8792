// A UDP socket read and written in batches, with the kernel's receive timestamps.
//
// A server's round reads one datagram from each player and writes one to each. Read and written
// one system call at a time (as ENet's own socket layer does), that is two calls a player, and one
// more to ask the kernel when each datagram arrived. Here one recvmmsg reads every datagram waiting,
// each with its receive timestamp, and the datagrams queued during a round go out in one sendmmsg.
// The transport hands ENet the datagrams one at a time from the batch (enet_socket_calls.cpp).
#pragma once

#include <netinet/in.h>
#include <sys/socket.h>
#include <sys/uio.h>

#include <cstddef>
#include <cstdint>
#include <span>
#include <vector>

#include "lockstep/busiest_sources.hpp"

namespace lockstep {

class SocketBatch {
 public:
  /// The largest datagram taken or sent (ENet's largest MTU); longer ones are dropped and counted.
  static constexpr std::size_t kMaxDatagram = 4096;
  static constexpr std::size_t kReadBatch = 32;   // datagrams one recvmmsg takes
  static constexpr std::size_t kWriteBatch = 32;  // datagrams queued before they go out anyway
  /// Reads one round makes at most: a flood that keeps the socket full (even of datagrams that
  /// are all dropped) ends the round, and the next wake starts another.
  static constexpr std::size_t kReadsPerRound = 8;

  struct Datagram {
    std::span<const std::uint8_t> bytes;
    sockaddr_in from{};
    std::int64_t arrived_ns = 0;  // monotonic; 0: the kernel gave no timestamp
  };
  struct Counts {
    std::uint64_t reads = 0, datagrams_read = 0;      // recvmmsg calls, and the datagrams they took
    std::uint64_t writes = 0, datagrams_written = 0;  // sendmmsg calls, and the datagrams they sent
    std::uint64_t empty_in = 0;     // empty (or not IPv4): never handed on (ENet would stop reading at one)
    std::uint64_t oversized_in = 0; // longer than kMaxDatagram: never handed on
    std::uint64_t dropped_out = 0;  // the kernel refused them (a full buffer, an unreachable address)
    /// Datagrams the kernel dropped before they could be read, the socket's buffer full (as
    /// SO_RXQ_OVFL last told: it is told with the datagrams read after the drops).
    std::uint64_t overflowed_in = 0;
  };

  /// Turns on receive timestamps (SO_TIMESTAMPNS) for `fd`, which stays the caller's.
  explicit SocketBatch(int fd);
  SocketBatch(const SocketBatch&) = delete;
  SocketBatch& operator=(const SocketBatch&) = delete;

  /// A new round: the socket is read again when the batch is used up.
  void begin_round() {
    drained_ = false;
    spent_ = false;
    reads_in_round_ = 0;
  }
  /// The round ended with its reads spent, not with the socket found empty: datagrams may still
  /// wait (a flood), and the next round should come at once rather than at the next tick.
  [[nodiscard]] bool spent() const { return spent_; }
  /// The sources of the empty and oversized datagrams dropped since clear_drop_sources().
  [[nodiscard]] const BusiestSources& drop_sources() const { return drop_sources_; }
  void clear_drop_sources() { drop_sources_.clear(); }
  /// The next datagram: 1 and `out` set, 0 when none is waiting for this round (the batch is used
  /// up, and the socket was empty at its last read or the round's reads are spent), -1 on a
  /// socket error. `out.bytes` stays
  /// valid until the next call.
  int next(Datagram* out);
  /// Datagrams read from the socket and not yet taken.
  [[nodiscard]] bool pending() const { return taken_ < count_; }
  /// The round reads no more: the socket was found empty, or its reads are spent (and nothing is
  /// pending).
  [[nodiscard]] bool drained() const { return drained_ && !pending(); }

  /// Queues one datagram, gathered from `parts`, to `to`: false (nothing queued) when it is longer
  /// than kMaxDatagram. A full queue is written first.
  bool queue(const sockaddr_in& to, std::span<const iovec> parts);
  /// Writes every queued datagram.
  void write();
  [[nodiscard]] bool queued() const { return out_count_ > 0; }

  [[nodiscard]] const Counts& counts() const { return counts_; }

 private:
  bool read();

  struct Control {
    alignas(cmsghdr) unsigned char bytes[CMSG_SPACE(sizeof(timespec)) + CMSG_SPACE(sizeof(std::uint32_t))];
  };

  int fd_;
  bool drained_ = false;
  bool spent_ = false;
  BusiestSources drop_sources_;
  std::size_t reads_in_round_ = 0;
  std::size_t count_ = 0, taken_ = 0;
  std::size_t last_read_ = kReadBatch;  // headers the last read filled in, to be made ready again
  // The system calls' headers point into these buffers once and for all (set in the constructor).
  std::vector<std::uint8_t> in_bytes_;  // kReadBatch slots of kMaxDatagram
  std::vector<sockaddr_in> in_from_;
  std::vector<std::uint32_t> in_length_;
  std::vector<std::int64_t> in_arrived_;
  std::vector<iovec> in_iov_;
  std::vector<Control> in_control_;
  std::vector<mmsghdr> in_msgs_;
  std::vector<std::uint8_t> out_bytes_;  // kWriteBatch slots of kMaxDatagram
  std::vector<sockaddr_in> out_to_;
  std::vector<iovec> out_iov_;
  std::vector<mmsghdr> out_msgs_;
  std::size_t out_count_ = 0;
  Counts counts_;
};

}  // namespace lockstep
