// A session's result and its MAC (session_result.hpp).
#include "lockstep/session_result.hpp"

#include <sodium.h>

#include <cstdlib>

#include "lockstep/bytes.hpp"
#include "lockstep/state_hash.hpp"

namespace lockstep {

namespace {
constexpr const char* kFormat = "lockstep-result/4";

void put_u64(std::vector<std::uint8_t>& out, std::uint64_t v) {
  for (int i = 0; i < 8; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_u32(std::vector<std::uint8_t>& out, std::uint32_t v) {
  for (int i = 0; i < 4; ++i) out.push_back(static_cast<std::uint8_t>(v >> (8 * i)));
}
void put_bytes(std::vector<std::uint8_t>& out, std::string_view b) {
  put_u32(out, static_cast<std::uint32_t>(b.size()));
  out.insert(out.end(), b.begin(), b.end());
}

bool hex64(const Json& j, std::uint64_t* out) {
  if (!j.is_string()) return false;
  const std::string s = j.get<std::string>();
  if (s.size() != 16 || s.find_first_not_of("0123456789abcdef") != std::string::npos) return false;
  *out = std::strtoull(s.c_str(), nullptr, 16);
  return true;
}
}  // namespace

SecretKey result_key_from(const SecretKey& token_key) {
  SecretKey out{};
  if (sodium_init() < 0) return out;
  crypto_kdf_derive_from_key(out.data(), out.size(), 1, "lkresult", token_key.data());
  return out;
}

std::vector<std::uint8_t> result_signed_bytes(const SessionResult& r) {
  std::vector<std::uint8_t> out;
  put_bytes(out, kFormat);
  put_u64(out, r.protocol_id);
  put_u32(out, r.ticks);
  put_u32(out, r.settled_tick);
  put_u64(out, r.final_hash);
  put_u64(out, r.issued_at);
  out.push_back(static_cast<std::uint8_t>((r.disputed ? 1 : 0) | (r.relay ? 2 : 0) | (r.incomplete ? 4 : 0)));
  put_u32(out, static_cast<std::uint32_t>(r.seats.size()));
  for (const auto& s : r.seats) {
    put_u32(out, s.slot);
    put_bytes(out, s.name);
    put_u64(out, s.client_id);
    out.push_back(static_cast<std::uint8_t>((s.reported ? 1 : 0) | (s.agreed ? 2 : 0) | (s.present ? 4 : 0) |
                                            (s.collusion_suspected ? 8 : 0)));
    put_u32(out, s.outvoted);
    put_bytes(out, std::string_view(reinterpret_cast<const char*>(s.claim.data()), s.claim.size()));
  }
  put_bytes(out, std::string_view(reinterpret_cast<const char*>(r.result.data()), r.result.size()));
  return out;
}

void sign_result(SessionResult& r, const SecretKey& key) {
  if (sodium_init() < 0) return;
  const auto bytes = result_signed_bytes(r);
  std::array<std::uint8_t, 32> mac{};
  crypto_auth_hmacsha256(mac.data(), bytes.data(), bytes.size(), key.data());
  r.mac = mac;
}

bool verify_result(const SessionResult& r, const SecretKey& key) {
  if (!r.mac || sodium_init() < 0) return false;
  const auto bytes = result_signed_bytes(r);
  return crypto_auth_hmacsha256_verify(r.mac->data(), bytes.data(), bytes.size(), key.data()) == 0;
}

Json result_json(const SessionResult& r) {
  Json seats = Json::array();
  for (const auto& s : r.seats)
    seats.push_back(Json{{"slot", s.slot}, {"name", s.name}, {"client_id", s.client_id}, {"reported", s.reported},
                         {"agreed", s.agreed}, {"present", s.present}, {"claim", bytes_hex(s.claim)},
                         {"outvoted", s.outvoted}, {"collusion_suspected", s.collusion_suspected}});
  return Json{{"format", kFormat},
              {"protocol_id", r.protocol_id},
              {"ticks", r.ticks},
              {"settled_tick", r.settled_tick},
              {"final_hash", hash_hex(r.final_hash)},
              {"issued_at", r.issued_at},
              {"relay", r.relay},
              {"incomplete", r.incomplete},
              {"seats", seats},
              {"result", bytes_hex(r.result)},
              {"disputed", r.disputed},
              {"mac", r.mac ? Json(bytes_hex(*r.mac)) : Json(nullptr)}};
}

bool parse_result(std::string_view text, SessionResult* out, std::string* error) {
  auto fail = [&](const std::string& why) {
    *error = why;
    return false;
  };
  if (text.size() > 64 * 1024) return fail("the result is over 64 KiB");
  const Json j = json_parse(std::string(text));
  if (!j.is_object()) return fail("not a JSON object");
  if (!j.contains("format") || j["format"] != kFormat) return fail(std::string("\"format\" must be \"") + kFormat + "\"");
  SessionResult r;
  auto u64 = [&](const char* key, std::uint64_t* v) {
    if (!j.contains(key) || !j[key].is_number_unsigned()) return false;
    *v = j[key].get<std::uint64_t>();
    return true;
  };
  std::uint64_t ticks = 0, settled = 0;
  if (!u64("protocol_id", &r.protocol_id) || !u64("ticks", &ticks) || !u64("settled_tick", &settled) ||
      !u64("issued_at", &r.issued_at) || ticks > UINT32_MAX || settled > UINT32_MAX)
    return fail("\"protocol_id\", \"ticks\", \"settled_tick\" and \"issued_at\" must be whole numbers");
  r.ticks = static_cast<std::uint32_t>(ticks);
  r.settled_tick = static_cast<std::uint32_t>(settled);
  if (!j.contains("final_hash") || !hex64(j["final_hash"], &r.final_hash)) return fail("\"final_hash\" must be 16 hex digits");
  if (!j.contains("disputed") || !j["disputed"].is_boolean() || !j.contains("relay") || !j["relay"].is_boolean())
    return fail("\"disputed\" and \"relay\" must be true or false");
  r.disputed = j["disputed"].get<bool>();
  r.relay = j["relay"].get<bool>();
  if (!j.contains("incomplete") || !j["incomplete"].is_boolean()) return fail("\"incomplete\" must be true or false");
  r.incomplete = j["incomplete"].get<bool>();
  if (!j.contains("result") || !j["result"].is_string() || !parse_bytes_hex(j["result"].get<std::string>(), &r.result) ||
      r.result.size() > kMaxResultBytes)
    return fail("\"result\" must be at most " + std::to_string(kMaxResultBytes) + " bytes in hex");
  if (!j.contains("seats") || !j["seats"].is_array() || j["seats"].size() > 64) return fail("\"seats\" must be a list");
  for (const Json& s : j["seats"]) {
    SessionResult::Seat seat;
    if (!s.is_object() || !s.contains("slot") || !s["slot"].is_number_unsigned() || s["slot"].get<std::uint64_t>() > 64 ||
        !s.contains("name") || !s["name"].is_string() || !s.contains("client_id") || !s["client_id"].is_number_unsigned() ||
        !s.contains("reported") || !s["reported"].is_boolean() || !s.contains("agreed") || !s["agreed"].is_boolean() ||
        !s.contains("present") || !s["present"].is_boolean() || !s.contains("claim") || !s["claim"].is_string() ||
        !s.contains("outvoted") || !s["outvoted"].is_number_unsigned() || s["outvoted"].get<std::uint64_t>() > UINT32_MAX ||
        !s.contains("collusion_suspected") || !s["collusion_suspected"].is_boolean())
      return fail("each seat needs \"slot\", \"name\", \"client_id\", \"reported\", \"agreed\", \"present\", \"claim\", "
                  "\"outvoted\" and \"collusion_suspected\"");
    seat.outvoted = s["outvoted"].get<std::uint32_t>();
    seat.collusion_suspected = s["collusion_suspected"].get<bool>();
    if (!parse_bytes_hex(s["claim"].get<std::string>(), &seat.claim) || seat.claim.size() > kMaxResultBytes)
      return fail("a seat's \"claim\" must be at most " + std::to_string(kMaxResultBytes) + " bytes in hex");
    seat.present = s["present"].get<bool>();
    seat.slot = s["slot"].get<std::uint32_t>();
    seat.name = s["name"].get<std::string>();
    seat.client_id = s["client_id"].get<std::uint64_t>();
    seat.reported = s["reported"].get<bool>();
    seat.agreed = s["agreed"].get<bool>();
    if (seat.name.size() > 32) return fail("a seat's \"name\" is over 32 bytes");
    r.seats.push_back(std::move(seat));
  }
  if (j.contains("mac") && !j["mac"].is_null()) {
    std::vector<std::uint8_t> mac;
    if (!j["mac"].is_string() || !parse_bytes_hex(j["mac"].get<std::string>(), &mac) || mac.size() != 32)
      return fail("\"mac\" must be 64 hex digits, or null");
    r.mac.emplace();
    std::copy(mac.begin(), mac.end(), r.mac->begin());
  }
  *out = std::move(r);
  return true;
}

}  // namespace lockstep
