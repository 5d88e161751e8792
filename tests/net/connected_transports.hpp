// A UDP transport listening on 127.0.0.1 and a client transport connected to it, both sides of
// the handshake settled: where the tests that drive real transports start.
#pragma once

#include <doctest/doctest.h>
#include <unistd.h>

#include <cstdint>
#include <memory>
#include <string>

#include "lockstep/clock.hpp"
#include "lockstep/transport.hpp"

namespace lockstep::testing {

struct ConnectedTransports {
  std::unique_ptr<Transport> server, client;
  NetPeer* to_server = nullptr;

  ConnectedTransports() {
    server = Transport::listen("127.0.0.1", 0, 8, TransportLimits{}, nullptr);
    REQUIRE(server);
    std::string error;
    client = Transport::client(TransportLimits{}, &error);
    REQUIRE(client);
    to_server = client->connect("127.0.0.1", server->port(), &error);
    REQUIRE(to_server);
    bool connected = false;
    for (const std::int64_t until = monotonic_ns() + 3'000'000'000; !connected && monotonic_ns() < until;) {
      while (server->poll().type != NetEvent::Type::None) {
      }
      for (NetEvent ev = client->poll(); ev.type != NetEvent::Type::None; ev = client->poll())
        connected = connected || ev.type == NetEvent::Type::Connect;
      usleep(1000);
    }
    REQUIRE(connected);
    for (int i = 0; i < 20; ++i) {  // the server's side of the handshake settles
      while (server->poll().type != NetEvent::Type::None) {
      }
      usleep(1000);
    }
  }
};

}  // namespace lockstep::testing
