// One part's records of the session's peers, by the peer's index: a small number the session
// gives each connection and reuses once it has gone (ServerSession's erase_peer() has every part
// forget it first), so a record is found by indexing, not by a search, on every message and
// tick. A record is made on first use and reads as a fresh one for an index never used.
#pragma once

#include <cstdint>
#include <deque>

namespace lockstep {

template <class Record>
class PeerRecords {
 public:
  /// The record at `index`, made on first use. References stay valid as records are added.
  Record& operator[](std::uint32_t index) {
    while (records_.size() <= index) records_.emplace_back();
    return records_[index];
  }
  /// The record at `index`, or a fresh one for an index never used.
  [[nodiscard]] const Record& get(std::uint32_t index) const {
    static const Record kFresh{};
    return index < records_.size() ? records_[index] : kFresh;
  }
  /// The peer at `index` has gone: its record is fresh again for the next peer given the index.
  void forget(std::uint32_t index) {
    if (index < records_.size()) records_[index] = Record{};
  }

 private:
  std::deque<Record> records_;  // by index; a deque, so growing moves no record
};

}  // namespace lockstep
