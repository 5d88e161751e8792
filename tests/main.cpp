#define DOCTEST_CONFIG_IMPLEMENT_WITH_MAIN
#include <doctest/doctest.h>

// The tests run the server's sessions over real sockets as lockstep-server does, so they ask for
// batched socket calls as it does (net/test_socket_batch.cpp checks that they took effect).
#include "lockstep/enet_batching.h"
LOCKSTEP_DEFINE_ENET_BATCHING()
