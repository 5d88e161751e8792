// lockstep-server asks for batched socket calls: ENet's enet_socket_receive() and
// enet_socket_send(), defined here, read and write the session's UDP socket with recvmmsg and
// sendmmsg (lockstep/enet_batching.h says how and when it takes effect; the server logs whether
// it did at start).
#include "lockstep/enet_batching.h"

LOCKSTEP_DEFINE_ENET_BATCHING()
