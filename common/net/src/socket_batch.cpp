// A UDP socket read and written in batches (recvmmsg, sendmmsg) with kernel receive stamps
// (socket_batch.hpp).
#include "lockstep/socket_batch.hpp"

#include <cerrno>
#include <cstring>

#include "lockstep/clock.hpp"

namespace lockstep {

SocketBatch::SocketBatch(int fd)
    : fd_(fd),
      in_bytes_(kReadBatch * kMaxDatagram),
      in_from_(kReadBatch),
      in_length_(kReadBatch),
      in_arrived_(kReadBatch),
      in_iov_(kReadBatch),
      in_control_(kReadBatch),
      in_msgs_(kReadBatch),
      out_bytes_(kWriteBatch * kMaxDatagram),
      out_to_(kWriteBatch),
      out_iov_(kWriteBatch),
      out_msgs_(kWriteBatch) {
  const int on = 1;
  setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);  // without it, datagrams come unstamped
  setsockopt(fd_, SOL_SOCKET, SO_RXQ_OVFL, &on, sizeof on);     // the kernel's drops, told with each datagram
  for (std::size_t i = 0; i < kReadBatch; ++i) {
    in_iov_[i] = {in_bytes_.data() + i * kMaxDatagram, kMaxDatagram};
    msghdr& h = in_msgs_[i].msg_hdr;
    h.msg_name = &in_from_[i];
    h.msg_iov = &in_iov_[i];
    h.msg_iovlen = 1;
    h.msg_control = in_control_[i].bytes;
  }
  for (std::size_t i = 0; i < kWriteBatch; ++i) {
    out_iov_[i].iov_base = out_bytes_.data() + i * kMaxDatagram;
    msghdr& h = out_msgs_[i].msg_hdr;
    h.msg_name = &out_to_[i];
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_iov = &out_iov_[i];
    h.msg_iovlen = 1;
  }
}

bool SocketBatch::read() {
  // The kernel writes the lengths of the headers it fills in; only those are made ready again.
  for (std::size_t i = 0; i < last_read_; ++i) {
    msghdr& h = in_msgs_[i].msg_hdr;
    h.msg_namelen = sizeof(sockaddr_in);
    h.msg_controllen = sizeof(Control);
    h.msg_flags = 0;
  }
  const int n = recvmmsg(fd_, in_msgs_.data(), kReadBatch, MSG_DONTWAIT, nullptr);
  ++counts_.reads;
  count_ = taken_ = 0;
  if (n < 0) {
    last_read_ = 0;
    drained_ = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    return drained_;
  }
  last_read_ = static_cast<std::size_t>(n);
  // Socket stamps are on the realtime clock; they are carried over to the monotonic clock.
  const std::int64_t realtime_ahead = n > 0 ? realtime_ahead_ns() : 0;
  for (std::size_t i = 0; i < last_read_; ++i) {
    msghdr& h = in_msgs_[i].msg_hdr;
    const std::uint32_t length = in_msgs_[i].msg_len;
    std::int64_t arrived = 0;
    for (cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(&h, c))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        arrived = to_ns(ts) - realtime_ahead;
      } else if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SO_RXQ_OVFL) {
        std::uint32_t dropped;
        std::memcpy(&dropped, CMSG_DATA(c), sizeof dropped);
        counts_.overflowed_in = dropped;  // the socket's count since it was opened (wraps at 2^32)
      }
    if ((h.msg_flags & MSG_TRUNC) != 0) {
      ++counts_.oversized_in;  // larger than any datagram ENet sends
      drop_sources_.note(in_from_[i].sin_addr.s_addr);
      continue;
    }
    if (length == 0 || h.msg_namelen != sizeof(sockaddr_in) || in_from_[i].sin_family != AF_INET) {
      ++counts_.empty_in;  // nothing a peer sends: ENet would stop reading at an empty one
      drop_sources_.note(in_from_[i].sin_addr.s_addr);
      continue;
    }
    // Kept in order, without gaps: slot count_ holds the next datagram taken.
    if (count_ != i) {
      std::memcpy(in_bytes_.data() + count_ * kMaxDatagram, in_bytes_.data() + i * kMaxDatagram, length);
      in_from_[count_] = in_from_[i];
    }
    in_length_[count_] = length;
    in_arrived_[count_] = arrived;
    ++count_;
  }
  counts_.datagrams_read += last_read_;
  // Fewer than asked for: the socket was empty when read.
  drained_ = last_read_ < kReadBatch;
  return true;
}

int SocketBatch::next(Datagram* out) {
  while (!pending()) {
    if (drained_) return 0;
    if (reads_in_round_ == kReadsPerRound) {
      drained_ = true;  // not empty, perhaps: the rest waits for the next round
      spent_ = true;
      return 0;
    }
    ++reads_in_round_;
    if (!read()) return -1;
  }
  const std::size_t i = taken_++;
  out->bytes = {in_bytes_.data() + i * kMaxDatagram, in_length_[i]};
  out->from = in_from_[i];
  out->arrived_ns = in_arrived_[i];
  return 1;
}

bool SocketBatch::queue(const sockaddr_in& to, std::span<const iovec> parts) {
  std::size_t length = 0;
  for (const iovec& p : parts) length += p.iov_len;
  if (length > kMaxDatagram) return false;
  if (out_count_ == kWriteBatch) write();
  const std::size_t i = out_count_++;
  auto* at = static_cast<std::uint8_t*>(out_iov_[i].iov_base);
  for (const iovec& p : parts) {
    std::memcpy(at, p.iov_base, p.iov_len);
    at += p.iov_len;
  }
  out_iov_[i].iov_len = length;
  out_to_[i] = to;
  return true;
}

void SocketBatch::write() {
  // sendmmsg stops at the first datagram the kernel refuses; that one is dropped, as a lost
  // datagram would be (ENet resends what must arrive), and the rest go on.
  std::size_t from = 0;
  while (from < out_count_) {
    const int n = sendmmsg(fd_, out_msgs_.data() + from, static_cast<unsigned>(out_count_ - from), MSG_NOSIGNAL);
    ++counts_.writes;
    if (n < 0 && errno == EINTR) continue;
    if (n > 0) {
      counts_.datagrams_written += static_cast<std::uint64_t>(n);
      from += static_cast<std::size_t>(n);
      continue;
    }
    ++counts_.dropped_out;
    ++from;
  }
  out_count_ = 0;
}

}  // namespace lockstep
