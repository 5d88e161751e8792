// One part's records of the session's peers, by peer id: made on first use, read as a fresh one
// for a peer the part has not seen, forgotten when the peer goes (ServerSession's erase_peer()).
// Ordered, so a walk over them is the same on every machine.
#pragma once

#include <cstdint>
#include <map>

namespace lockstep {

template <class Record>
class PeerRecords {
 public:
  /// Peer `peer`'s record, made on first use.
  Record& operator[](std::uint32_t peer) { return records_[peer]; }
  /// Peer `peer`'s record, or a fresh one for a peer never seen.
  [[nodiscard]] const Record& get(std::uint32_t peer) const {
    static const Record kFresh{};
    const auto it = records_.find(peer);
    return it == records_.end() ? kFresh : it->second;
  }
  void forget(std::uint32_t peer) { records_.erase(peer); }

 private:
  std::map<std::uint32_t, Record> records_;
};

}  // namespace lockstep
