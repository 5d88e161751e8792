// Asking a running server how its session is doing, over the protocol (health checks).
#pragma once

#include <cstdint>
#include <optional>
#include <string>

#include "lockstep/protocol.hpp"

namespace lockstep {

/// Connects to host:port, asks for the status and waits up to `timeout_ns` for the answer.
/// nullopt with `error` set when there is no answer. With `status_key` the request proves it holds
/// the server's status key and the reply's sealed names and figures are opened (§11); without,
/// a server that has keys answers only its public part (Status::full false).
std::optional<protocol::Status> query_status(const std::string& host, std::uint16_t port, std::int64_t timeout_ns,
                                             std::string* error, const SecretKey* status_key = nullptr);

}  // namespace lockstep
