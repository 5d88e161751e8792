/* Batched socket calls for ENet, for a program that asks for them.
 *
 * A lockstep server reads and writes its UDP socket in batches (recvmmsg and sendmmsg, with each
 * datagram's kernel arrival stamp) instead of one system call a datagram. ENet has no hook for
 * that: its library calls enet_socket_receive() and enet_socket_send() through its symbol table.
 * A program that defines those two functions itself takes their place for the whole process, as
 * a program's own malloc takes the C library's. liblockstep_net does not define them, so a game
 * that links it keeps ENet's own calls for its own ENet hosts and for lockstep's. A program that
 * wants the batches says so in one of its source files (lockstep-server does):
 *
 *     #include <lockstep/enet_batching.h>
 *     LOCKSTEP_DEFINE_ENET_BATCHING()
 *
 * The definitions batch only the socket of the lockstep transport being served at the moment and
 * do what ENet's own calls do for every other socket (the program's own ENet hosts included),
 * returning for a truncated datagram what the linked ENet returns. Whether they took effect is
 * checked at run time (lockstep-server logs "socket batching: on" or why not): ENet linked
 * statically or with -Bsymbolic-functions binds its calls inside itself and never reaches them,
 * and an ENet other than the one lockstep was built against makes them stand aside. An
 * executable exports its definitions to ENet's library when it links that library directly; a
 * program that reaches ENet only through liblockstep_net links with
 * -Wl,--export-dynamic-symbol=enet_socket_receive,--export-dynamic-symbol=enet_socket_send. */
#ifndef LOCKSTEP_ENET_BATCHING_H
#define LOCKSTEP_ENET_BATCHING_H

#include <enet/enet.h>
#include <stddef.h>

#include "lockstep/export.h"

#ifdef __cplusplus
extern "C" {
#endif

/* The replacements' bodies, exported by liblockstep_net: the same arguments and results as ENet's
 * enet_socket_receive() and enet_socket_send(). */
LOCKSTEP_API int lockstep_enet_socket_receive(ENetSocket socket, ENetAddress* address, ENetBuffer* buffers,
                                              size_t count);
LOCKSTEP_API int lockstep_enet_socket_send(ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers,
                                           size_t count);

#ifdef __cplusplus
}
#define LOCKSTEP_ENET_BATCHING_LINKAGE extern "C"
#else
#define LOCKSTEP_ENET_BATCHING_LINKAGE
#endif

/* Defines ENet's two socket calls as lockstep's batched ones. Write it once in a program, at file
 * scope, outside any namespace. */
#define LOCKSTEP_DEFINE_ENET_BATCHING()                                                                          \
  LOCKSTEP_ENET_BATCHING_LINKAGE LOCKSTEP_API int enet_socket_receive(ENetSocket socket, ENetAddress* address,  \
                                                                      ENetBuffer* buffers, size_t count) {      \
    return lockstep_enet_socket_receive(socket, address, buffers, count);                                        \
  }                                                                                                              \
  LOCKSTEP_ENET_BATCHING_LINKAGE LOCKSTEP_API int enet_socket_send(                                              \
      ENetSocket socket, const ENetAddress* address, const ENetBuffer* buffers, size_t count) {                  \
    return lockstep_enet_socket_send(socket, address, buffers, count);                                           \
  }

#endif /* LOCKSTEP_ENET_BATCHING_H */
