// The hash log, a "<tick> <hash>" line per executed tick: its writer and line format (hash_log.hpp).
#include "lockstep/hash_log.hpp"

#include <unistd.h>

#include <algorithm>
#include <cinttypes>

#include "lockstep/state_hash.hpp"

namespace lockstep {

HashLogWriter::~HashLogWriter() { close(); }

bool HashLogWriter::open(const std::string& path, bool append) {
  close();
  if (append) {  // the lines already there, so that a tick written again replaces its line
    if (std::FILE* in = std::fopen(path.c_str(), "r")) {
      char line[64];
      long at = 0;
      while (std::fgets(line, sizeof line, in)) {
        const std::string text(line);
        const long next = at + static_cast<long>(text.size());
        if (const auto th = parse_hash_line(text.substr(0, text.find('\n')))) {
          recent_.emplace_back(th->tick, at);
          if (recent_.size() > kRecent) recent_.pop_front();
        }
        at = next;
      }
      std::fclose(in);
      end_ = at;
    }
  }
  file_ = std::fopen(path.c_str(), append ? "a" : "w");  // "a": every write goes to the end, wherever that is
  return file_ != nullptr;
}

void HashLogWriter::write(Tick tick, std::uint64_t hash) {
  if (!file_) return;
  if (!recent_.empty() && tick <= recent_.back().first) {
    // Written again: this line and every one after it go; the file ends where its line began.
    const auto it = std::lower_bound(recent_.begin(), recent_.end(), tick,
                                     [](const std::pair<Tick, long>& r, Tick t) { return r.first < t; });
    if (it == recent_.end() || (it == recent_.begin() && it->first != tick)) {
      ++unreplaced_;  // older than every line kept: appended after them
    } else {
      const long at = it->second;
      std::fflush(file_);
      if (ftruncate(fileno(file_), at) == 0 && std::fseek(file_, at, SEEK_SET) == 0) {
        end_ = at;
        recent_.erase(it, recent_.end());
      } else {
        ++unreplaced_;
      }
    }
  }
  char line[48];
  const int n = std::snprintf(line, sizeof line, "%" PRIu32 " %016" PRIx64 "\n", tick, hash);
  std::fwrite(line, 1, static_cast<std::size_t>(n), file_);
  recent_.emplace_back(tick, end_);
  if (recent_.size() > kRecent) recent_.pop_front();
  end_ += n;
  if (tick % kTickRate == 0) std::fflush(file_);
}

void HashLogWriter::close() {
  if (file_) std::fclose(file_);
  file_ = nullptr;
  recent_.clear();
  end_ = 0;
  unreplaced_ = 0;
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
