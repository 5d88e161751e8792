// The one JSON string escaper for the summaries the executables print by hand.
#pragma once

#include <cstdio>
#include <string>
#include <string_view>

namespace lockstep {

/// `s` escaped for use inside a JSON string: quotes, backslashes and control characters.
inline std::string json_escape(std::string_view s) {
  std::string out;
  out.reserve(s.size());
  for (const char c : s) {
    if (c == '"' || c == '\\') {
      out += '\\';
      out += c;
    } else if (static_cast<unsigned char>(c) < 0x20) {
      char buf[8];
      std::snprintf(buf, sizeof buf, "\\u%04x", static_cast<unsigned>(static_cast<unsigned char>(c)));
      out += buf;
    } else {
      out += c;
    }
  }
  return out;
}

}  // namespace lockstep
