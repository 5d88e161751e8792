// Addresses as text: "host:port" for --connect, and a connect token's server addresses. Pure
// text work, shared by the native and the web builds.
#include <cstdio>
#include <string>
#include <string_view>

#include "lockstep/connect_token.hpp"
#include "lockstep/transport.hpp"

namespace lockstep {

std::string TokenAddress::text() const {
  char buf[32];
  std::snprintf(buf, sizeof buf, "%u.%u.%u.%u:%u", ip[0], ip[1], ip[2], ip[3], port);
  return buf;
}

bool parse_token_address(std::string_view text, TokenAddress* out) {
  TokenAddress a;
  unsigned v[5] = {};
  int field = 0;
  bool digit = false;
  for (char c : text) {
    if (c >= '0' && c <= '9') {
      v[field] = v[field] * 10 + static_cast<unsigned>(c - '0');
      if (v[field] > 65535) return false;
      digit = true;
    } else if ((c == '.' && field < 3) || (c == ':' && field == 3)) {
      if (!digit) return false;
      ++field;
      digit = false;
    } else {
      return false;
    }
  }
  if (field != 4 || !digit || v[4] == 0) return false;
  for (int i = 0; i < 4; ++i) {
    if (v[i] > 255) return false;
    a.ip[static_cast<std::size_t>(i)] = static_cast<std::uint8_t>(v[i]);
  }
  a.port = static_cast<std::uint16_t>(v[4]);
  *out = a;
  return true;
}

bool split_host_port(const std::string& text, std::string* host, std::uint16_t* port) {
  const auto colon = text.rfind(':');
  if (colon == std::string::npos || colon == 0 || colon + 1 == text.size()) return false;
  unsigned long p = 0;
  for (std::size_t i = colon + 1; i < text.size(); ++i) {
    if (text[i] < '0' || text[i] > '9') return false;
    p = p * 10 + static_cast<unsigned long>(text[i] - '0');
    if (p > 65535) return false;
  }
  if (p == 0) return false;
  *host = text.substr(0, colon);
  *port = static_cast<std::uint16_t>(p);
  return true;
}

}  // namespace lockstep
