#include "lockstep/socket_batch.hpp"

#include <sys/socket.h>

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
      out_bytes_(kWriteBatch * kMaxDatagram) {
  const int on = 1;
  setsockopt(fd_, SOL_SOCKET, SO_TIMESTAMPNS, &on, sizeof on);  // without it, datagrams come unstamped
  out_.reserve(kWriteBatch);
}

bool SocketBatch::read() {
  mmsghdr msgs[kReadBatch];
  iovec iov[kReadBatch];
  alignas(cmsghdr) unsigned char control[kReadBatch][CMSG_SPACE(sizeof(timespec))];
  std::memset(msgs, 0, sizeof msgs);
  for (std::size_t i = 0; i < kReadBatch; ++i) {
    iov[i] = {in_bytes_.data() + i * kMaxDatagram, kMaxDatagram};
    msgs[i].msg_hdr.msg_name = &in_from_[i];
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
    msgs[i].msg_hdr.msg_control = control[i];
    msgs[i].msg_hdr.msg_controllen = sizeof control[i];
  }
  const int n = recvmmsg(fd_, msgs, kReadBatch, MSG_DONTWAIT, nullptr);
  ++counts_.reads;
  count_ = taken_ = 0;
  if (n < 0) {
    drained_ = errno == EAGAIN || errno == EWOULDBLOCK || errno == EINTR;
    return drained_;
  }
  // Socket stamps are on the realtime clock; they are carried over to the monotonic clock.
  const std::int64_t realtime_ahead = clock_ns(CLOCK_REALTIME) - monotonic_ns();
  for (int i = 0; i < n; ++i) {
    const msghdr& h = msgs[i].msg_hdr;
    const std::uint32_t length = msgs[i].msg_len;
    if (length == 0 || (h.msg_flags & MSG_TRUNC) != 0 || h.msg_namelen != sizeof(sockaddr_in) ||
        in_from_[static_cast<std::size_t>(i)].sin_family != AF_INET) {
      ++counts_.dropped_in;  // nothing a peer sends: ENet would stop reading at an empty one
      continue;
    }
    std::int64_t arrived = 0;
    for (const cmsghdr* c = CMSG_FIRSTHDR(&h); c; c = CMSG_NXTHDR(const_cast<msghdr*>(&h), const_cast<cmsghdr*>(c)))
      if (c->cmsg_level == SOL_SOCKET && c->cmsg_type == SCM_TIMESTAMPNS) {
        timespec ts;
        std::memcpy(&ts, CMSG_DATA(c), sizeof ts);
        arrived = to_ns(ts) - realtime_ahead;
      }
    // Kept in place, in order: slot i holds datagram i.
    if (count_ != static_cast<std::size_t>(i)) {
      std::memcpy(in_bytes_.data() + count_ * kMaxDatagram, in_bytes_.data() + static_cast<std::size_t>(i) * kMaxDatagram, length);
      in_from_[count_] = in_from_[static_cast<std::size_t>(i)];
    }
    in_length_[count_] = length;
    in_arrived_[count_] = arrived;
    ++count_;
  }
  counts_.datagrams_read += static_cast<std::uint64_t>(n);
  // Fewer than asked for: the socket was empty when read.
  drained_ = static_cast<std::size_t>(n) < kReadBatch;
  return true;
}

int SocketBatch::next(Datagram* out) {
  while (!pending()) {
    if (drained_) return 0;
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
  if (out_.size() == kWriteBatch) write();
  std::uint8_t* at = out_bytes_.data() + out_.size() * kMaxDatagram;
  for (const iovec& p : parts) {
    std::memcpy(at, p.iov_base, p.iov_len);
    at += p.iov_len;
  }
  out_.push_back({to, length});
  return true;
}

void SocketBatch::write() {
  if (out_.empty()) return;
  mmsghdr msgs[kWriteBatch];
  iovec iov[kWriteBatch];
  std::memset(msgs, 0, sizeof msgs);
  for (std::size_t i = 0; i < out_.size(); ++i) {
    iov[i] = {out_bytes_.data() + i * kMaxDatagram, out_[i].length};
    msgs[i].msg_hdr.msg_name = &out_[i].to;
    msgs[i].msg_hdr.msg_namelen = sizeof(sockaddr_in);
    msgs[i].msg_hdr.msg_iov = &iov[i];
    msgs[i].msg_hdr.msg_iovlen = 1;
  }
  // sendmmsg stops at the first datagram the kernel refuses; that one is dropped, as a lost
  // datagram would be (ENet resends what must arrive), and the rest go on.
  std::size_t from = 0;
  while (from < out_.size()) {
    const int n = sendmmsg(fd_, msgs + from, static_cast<unsigned>(out_.size() - from), MSG_NOSIGNAL);
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
  out_.clear();
}

}  // namespace lockstep
