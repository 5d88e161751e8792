#include "lockstep/hash_log.hpp"

#include <cinttypes>

#include "lockstep/state_hash.hpp"

namespace lockstep {

HashLogWriter::~HashLogWriter() { close(); }

bool HashLogWriter::open(const std::string& path, bool append) {
  close();
  file_ = std::fopen(path.c_str(), append ? "a" : "w");
  return file_ != nullptr;
}

void HashLogWriter::write(Tick tick, std::uint64_t hash) {
  if (!file_) return;
  std::fprintf(file_, "%" PRIu32 " %016" PRIx64 "\n", tick, hash);
  if (tick % kTickRate == 0) std::fflush(file_);
}

void HashLogWriter::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
}

std::string format_hash_line(Tick tick, std::uint64_t hash) {
  return std::to_string(tick) + " " + hash_hex(hash);
}

std::optional<TickHash> parse_hash_line(const std::string& line) {
  const auto space = line.find(' ');
  if (space == std::string::npos || space == 0 || space > 10 || line.size() != space + 17) return std::nullopt;
  std::uint64_t tick = 0;
  for (std::size_t i = 0; i < space; ++i) {
    if (line[i] < '0' || line[i] > '9') return std::nullopt;
    tick = tick * 10 + static_cast<std::uint64_t>(line[i] - '0');
  }
  if (tick > UINT32_MAX) return std::nullopt;
  std::uint64_t hash = 0;
  for (std::size_t i = space + 1; i < line.size(); ++i) {
    const char c = line[i];
    int v;
    if (c >= '0' && c <= '9') v = c - '0';
    else if (c >= 'a' && c <= 'f') v = c - 'a' + 10;
    else return std::nullopt;
    hash = (hash << 4) | static_cast<std::uint64_t>(v);
  }
  return TickHash{static_cast<Tick>(tick), hash};
}

}  // namespace lockstep
