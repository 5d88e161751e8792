// One part's records of the session's peers, by the peer's index: a small number the session
// gives each connection and reuses once it has gone (ServerSession's erase_peer() has every part
// forget it first), so a record is found by indexing, not by a search, on every message and
// tick. A record is made on first use and reads as a fresh one for an index never used.
#pragma once

#include <cstdint>
#include <memory>
#include <vector>

namespace lockstep {

template <class Record>
class PeerRecords {
 public:
  /// The record at `index`, made on first use. References stay valid as records are added.
  Record& operator[](std::uint32_t index) {
    if (index < records_.size()) [[likely]]
      return *records_[index];
    return grow(index);
  }
  /// The record at `index`, or a fresh one for an index never used.
  [[nodiscard]] const Record& get(std::uint32_t index) const {
    if (index < records_.size()) [[likely]]
      return *records_[index];
    return fresh();
  }
  /// The peer at `index` has gone: its record is fresh again for the next peer given the index.
  void forget(std::uint32_t index) {
    if (index < records_.size()) *records_[index] = Record{};
  }

 private:
  Record& grow(std::uint32_t index) {
    while (records_.size() <= index) records_.push_back(std::make_unique<Record>());
    return *records_[index];
  }
  static const Record& fresh() {
    static const Record kFresh{};
    return kFresh;
  }
  // By index. Each record on its own, so adding records moves none (a part may hold a reference
  // to one while the session admits a peer), and indexing is one load.
  std::vector<std::unique_ptr<Record>> records_;
};

}  // namespace lockstep
