// A ranged read of a replay file through its index (replay_records.hpp): the header, the end record
// with its index, and the records the range needs (the keyframe it starts from, the frames record
// holding that keyframe's tick, the frames records of the range), read by offset and each checked
// as a whole read checks it. An hour's seek reads a few records, not the 10 MB file.
#include <fcntl.h>
#include <sys/stat.h>
#include <unistd.h>

#include <algorithm>

#include "lockstep/bytes.hpp"
#include "replay_records.hpp"

namespace lockstep::replay_io {

namespace {

// A file read by offset, counting what it reads.
class File {
 public:
  explicit File(const std::string& path) : fd_(::open(path.c_str(), O_RDONLY | O_CLOEXEC)) {
    struct stat st {};
    if (fd_ >= 0 && ::fstat(fd_, &st) == 0 && st.st_size > 0) size_ = static_cast<std::uint64_t>(st.st_size);
  }
  ~File() {
    if (fd_ >= 0) ::close(fd_);
  }
  File(const File&) = delete;
  File& operator=(const File&) = delete;
  [[nodiscard]] bool ok() const { return fd_ >= 0 && size_ > 0; }
  [[nodiscard]] std::uint64_t size() const { return size_; }
  [[nodiscard]] std::uint64_t bytes_read() const { return read_; }
  // n bytes at `at` into out; false when the file holds fewer or a read fails.
  bool read(std::uint64_t at, std::uint64_t n, std::vector<std::uint8_t>* out) {
    if (at > size_ || n > size_ - at) return false;
    out->resize(static_cast<std::size_t>(n));
    std::size_t got = 0;
    while (got < n) {
      const ssize_t r = ::pread(fd_, out->data() + got, static_cast<std::size_t>(n) - got, static_cast<off_t>(at + got));
      if (r <= 0) return false;
      got += static_cast<std::size_t>(r);
    }
    read_ += n;
    return true;
  }

 private:
  int fd_;
  std::uint64_t size_ = 0, read_ = 0;
};

std::uint32_t le32(const std::uint8_t* p) {
  return static_cast<std::uint32_t>(p[0]) | static_cast<std::uint32_t>(p[1]) << 8 | static_cast<std::uint32_t>(p[2]) << 16 |
         static_cast<std::uint32_t>(p[3]) << 24;
}

// A record's payload (its checksum and structure checked) as a Record, aligned in `aligned`;
// nullptr when it does not check.
const replay::Record* checked(std::span<const std::uint8_t> payload, std::uint64_t sum, std::vector<std::uint64_t>& aligned) {
  if (payload.empty() || payload.size() > kMaxKeyframeRecord || hash_bytes(payload) != sum) return nullptr;
  const replay::Record* rec = aligned_record(payload, aligned);
  flatbuffers::Verifier v(reinterpret_cast<const std::uint8_t*>(aligned.data()), payload.size());
  if (!replay::VerifyRecordBuffer(v) || rec->chunk() == nullptr) return nullptr;
  if (rec->chunk_type() != replay::Chunk::Keyframe && payload.size() > kMaxRecord) return nullptr;
  return rec;
}

// The record at `at`, which must end by `limit`.
const replay::Record* read_record(File& f, std::uint64_t at, std::uint64_t limit, std::vector<std::uint8_t>& raw,
                                  std::vector<std::uint64_t>& aligned) {
  if (!f.read(at, kRecordHeader, &raw)) return nullptr;
  ByteReader r(raw);
  const std::uint32_t len = r.u32();
  const std::uint64_t sum = r.u64();
  if (len == 0 || len > kMaxKeyframeRecord || at + kRecordHeader + len > limit) return nullptr;
  if (!f.read(at + kRecordHeader, len, &raw)) return nullptr;
  return checked(raw, sum, aligned);
}

struct EndRecord {
  std::uint64_t at = 0;  // where its length field is
  Tick last_tick = 0;
  std::string reason;
  std::vector<std::uint64_t> offsets;
  std::vector<Tick> ticks;
  std::vector<std::uint8_t> kinds;
};

// The end record: the record that ends where the file does, found from the end (in the last 4 KiB,
// else 64 KiB, which hold an hour's index, else the last MiB, which holds the longest).
std::optional<EndRecord> find_end(File& f) {
  std::vector<std::uint8_t> tail;
  std::vector<std::uint64_t> aligned;
  const std::uint64_t body = f.size() - sizeof kMagic;
  for (const std::uint64_t want : {std::uint64_t{4} << 10, std::uint64_t{64} << 10, std::uint64_t{kMaxRecord} + kRecordHeader}) {
    const std::uint64_t n = std::min(want, body), base = f.size() - n;
    if (n < kRecordHeader || !f.read(base, n, &tail)) return std::nullopt;
    for (std::uint64_t i = n - kRecordHeader + 1; i-- > 0;) {
      const std::uint64_t len = n - i - kRecordHeader;
      if (len == 0 || le32(tail.data() + i) != len) continue;
      ByteReader r(std::span<const std::uint8_t>(tail).subspan(static_cast<std::size_t>(i) + 4, 8));
      const replay::Record* rec = checked(std::span<const std::uint8_t>(tail).subspan(static_cast<std::size_t>(i) + kRecordHeader), r.u64(), aligned);
      if (!rec) continue;
      const replay::ReplayEnd* e = rec->chunk_as_ReplayEnd();
      if (!e || !e->index_offsets() || !e->index_ticks() || !e->index_kinds()) return std::nullopt;  // the end, without an index
      EndRecord out;
      out.at = base + i;
      out.last_tick = e->last_tick();
      out.reason = e->reason() ? e->reason()->str().substr(0, 256) : "";
      out.offsets.assign(e->index_offsets()->begin(), e->index_offsets()->end());
      out.ticks.assign(e->index_ticks()->begin(), e->index_ticks()->end());
      out.kinds.assign(e->index_kinds()->begin(), e->index_kinds()->end());
      return out;
    }
    if (n == body) break;
  }
  return std::nullopt;
}

// Whether the index holds together: records in file order between the header and the end
// record; frames records' ticks following on from the start, keyframes' ascending within them.
bool index_holds(const EndRecord& e, Tick start_tick) {
  const std::size_t n = e.offsets.size();
  if (n == 0 || n > kMaxIndexEntries || e.ticks.size() != n || e.kinds.size() != n) return false;
  Tick next_frames = start_tick + 1, last_keyframe = 0;
  bool any_keyframe = false;
  for (std::size_t i = 0; i < n; ++i) {
    if (e.offsets[i] <= sizeof kMagic || e.offsets[i] >= e.at || (i > 0 && e.offsets[i] <= e.offsets[i - 1])) return false;
    if (e.kinds[i] == kIndexFrames) {
      if (e.ticks[i] < next_frames || e.ticks[i] > e.last_tick) return false;
      next_frames = e.ticks[i] + 1;
    } else if (e.kinds[i] == kIndexKeyframe) {
      if ((any_keyframe && e.ticks[i] <= last_keyframe) || e.ticks[i] < start_tick || e.ticks[i] > e.last_tick) return false;
      any_keyframe = true;
      last_keyframe = e.ticks[i];
    } else {
      return false;
    }
  }
  return true;
}

}  // namespace

std::optional<ReplayError> read_replay_indexed(const std::string& path, Replay* out, std::string* detail, ReplayRange range) {
  File f(path);
  std::vector<std::uint8_t> raw;
  std::vector<std::uint64_t> aligned;
  if (!f.ok() || f.size() < sizeof kMagic + 2 * kRecordHeader || !f.read(0, sizeof kMagic, &raw) ||
      std::memcmp(raw.data(), kMagic, sizeof kMagic) != 0)
    return std::nullopt;
  const std::optional<EndRecord> end = find_end(f);
  if (!end) return std::nullopt;
  *out = Replay{};
  RecordReader reader{out, false, 0, {}, {}};
  const replay::Record* rec = read_record(f, sizeof kMagic, end->at, raw, aligned);
  if (!rec || rec->chunk_type() != replay::Chunk::Header ||
      reader.header(*rec->chunk_as_Header(), " at byte 8") != ReplayError::None || !index_holds(*end, out->header.start_tick))
    return std::nullopt;
  // Where the range starts: the latest keyframe at or before `from`, else the start.
  const std::size_t n = end->offsets.size();
  Tick base = out->header.start_tick;
  std::optional<std::size_t> keyframe;
  for (std::size_t i = 0; i < n; ++i) {
    if (end->kinds[i] != kIndexKeyframe) continue;
    out->keyframe_ticks.push_back(end->ticks[i]);
    if ((range.from != 0 && end->ticks[i] <= range.from) || end->ticks[i] == out->header.start_tick) {
      base = end->ticks[i];
      keyframe = i;
    }
  }
  // The frames records: each one's ticks from the index (up to the next one's first, or the end).
  std::vector<std::size_t> frames;
  for (std::size_t i = 0; i < n; ++i)
    if (end->kinds[i] == kIndexFrames) frames.push_back(i);
  const auto last_of = [&](std::size_t k) { return k + 1 < frames.size() ? end->ticks[frames[k + 1]] - 1 : end->last_tick; };
  out->frames_from = base;
  std::optional<std::uint64_t> recorded_base;  // the hash recorded for the keyframe's tick
  for (std::size_t k = 0; k < frames.size(); ++k) {
    const Tick first = end->ticks[frames[k]], last = last_of(k);
    const bool holds_base = keyframe && base != out->header.start_tick && first <= base && base <= last;
    const bool wanted = range.frames && last > base && (range.to == 0 || first <= range.to);
    if (!holds_base && !wanted) continue;
    rec = read_record(f, end->offsets[frames[k]], end->at, raw, aligned);
    const replay::Frames* fr = rec ? rec->chunk_as_Frames() : nullptr;
    const std::size_t count = fr && fr->present() ? fr->present()->size() : 0;
    if (!fr || fr->first_tick() != first || count == 0 || count != std::size_t{last - first} + 1 || !fr->filled() ||
        fr->filled()->size() != count || !fr->hashes() || fr->hashes()->size() != count)
      return std::nullopt;
    if (holds_base) recorded_base = fr->hashes()->Get(base - first);
    if (wanted && reader.decode_frames(*fr, first, base, range.to, " at byte " + std::to_string(end->offsets[frames[k]])) != ReplayError::None)
      return std::nullopt;
  }
  // The keyframe it starts from, checked against its bytes and the hash recorded for its tick.
  if (keyframe) {
    rec = read_record(f, end->offsets[*keyframe], end->at, raw, aligned);
    const replay::Keyframe* k = rec ? rec->chunk_as_Keyframe() : nullptr;
    const std::span<const std::uint8_t> state = k ? span_of(k->state()) : std::span<const std::uint8_t>();
    if (!k || k->tick() != base || state.empty() || state.size() > kMaxKeyframeBytes || hash_bytes(state) != k->hash() ||
        (base != out->header.start_tick && recorded_base != std::optional<std::uint64_t>(k->hash())))
      return std::nullopt;
    out->keyframes.push_back({base, k->hash(), {state.begin(), state.end()}});
  }
  out->last_tick = end->last_tick;
  out->complete = true;
  out->end_reason = end->reason;
  out->bytes_read = f.bytes_read();
  (void)detail;
  return ReplayError::None;
}

}  // namespace lockstep::replay_io
