// ENet's two socket calls as a program replaces them when it asks for batches
// (lockstep/enet_batching.h): for the socket of the transport being served they read and write in
// batches (socket_batch.hpp, recvmmsg and sendmmsg), each datagram with its kernel stamp; for
// every other socket they do what ENet's own do (enet_transport.hpp).
#include <sys/socket.h>

#include <cerrno>
#include <cstddef>
#include <cstring>

#include "lockstep/clock.hpp"
#include "enet_transport.hpp"
#include "lockstep/enet_batching.h"

namespace lockstep {

std::atomic<std::uint64_t> g_replaced_socket_calls{0};

int truncated_receive_result() {
  static const int result = enet_linked_version() >= ENET_VERSION_CREATE(1, 3, 18) ? -2 : -1;
  return result;
}

int EnetTransport::socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count) {
  g_replaced_socket_calls.fetch_add(1, std::memory_order_relaxed);
  EnetTransport* self = serving;
  if (!self || self->host_->socket != socket || count != 1 || !address) return plain_receive(socket, address, buffers, count);
  self->stamp_messages();  // of the datagram before: ENet has queued its messages by now
  SocketBatch::Datagram d;
  for (;;) {
    const int r = self->batch_.next(&d);
    if (r <= 0) return r;
    if (d.bytes.size() <= buffers[0].dataLength) break;  // always: ENet's buffer is its largest MTU
  }
  std::memcpy(buffers[0].data, d.bytes.data(), d.bytes.size());
  to_enet(d.from, address);
  self->reading_arrival_ = d.arrived_ns;
  return static_cast<int>(d.bytes.size());
}

int EnetTransport::socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count) {
  EnetTransport* self = serving;
  if (self && self->host_->socket == socket && address) {
    std::size_t total = 0;
    for (std::size_t b = 0; b < count; ++b) total += buffers[b].dataLength;
    if (self->batch_.queue(to_sockaddr(*address), {reinterpret_cast<const iovec*>(buffers), count}))
      return static_cast<int>(total);
  }
  return plain_send(socket, address, buffers, count);
}

int EnetTransport::plain_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, std::size_t count) {
  msghdr h{};
  sockaddr_in from{};
  if (address) {
    h.msg_name = &from;
    h.msg_namelen = sizeof from;
  }
  h.msg_iov = reinterpret_cast<iovec*>(buffers);
  h.msg_iovlen = count;
  const ssize_t n = recvmsg(socket, &h, MSG_NOSIGNAL);
  if (n < 0) return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
  if (h.msg_flags & MSG_TRUNC) return truncated_receive_result();  // as the linked ENet's own
  if (address) to_enet(from, address);
  return static_cast<int>(n);
}

int EnetTransport::plain_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, std::size_t count) {
  msghdr h{};
  sockaddr_in to{};
  if (address) {
    to = to_sockaddr(*address);
    h.msg_name = &to;
    h.msg_namelen = sizeof to;
  }
  h.msg_iov = const_cast<iovec*>(reinterpret_cast<const iovec*>(buffers));
  h.msg_iovlen = count;
  const ssize_t n = sendmsg(socket, &h, MSG_NOSIGNAL);
  if (n < 0) return errno == EWOULDBLOCK || errno == EAGAIN ? 0 : -1;
  return static_cast<int>(n);
}
}  // namespace lockstep

static_assert(sizeof(ENetBuffer) == sizeof(iovec) && offsetof(ENetBuffer, data) == offsetof(iovec, iov_base) &&
              offsetof(ENetBuffer, dataLength) == offsetof(iovec, iov_len));

// ENet is C: an exception must not reach it. Nothing below throws today; a failure is a socket error.
extern "C" int lockstep_enet_socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers, size_t count) try {
  return lockstep::EnetTransport::socket_receive(socket, address, buffers, count);
} catch (...) {
  return -1;
}
extern "C" int lockstep_enet_socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers,
                                         size_t count) try {
  return lockstep::EnetTransport::socket_send(socket, address, buffers, count);
} catch (...) {
  return -1;
}
