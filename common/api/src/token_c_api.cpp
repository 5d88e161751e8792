// lockstep_token.h over connect_token.hpp (lockstep_result_verify under both names: _v4 answers with
// API version 4's codes, the plain name with versions 2 and 3's).
#define LOCKSTEP_PLAIN_NAMES  // this file defines both names
#include "lockstep/lockstep_token.h"

#include <algorithm>
#include <cstring>
#include <string>

#include "handles.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/session_result.hpp"

using namespace lockstep;
using lockstep::c_api::fail;

static_assert(LOCKSTEP_TOKEN_KEY_BYTES == kKeyBytes && LOCKSTEP_TOKEN_ANY_SLOT == kAnySlot &&
              LOCKSTEP_DEFAULT_PROTOCOL_ID == kDefaultProtocolId && LOCKSTEP_TOKEN_MAX_BYTES >= kMaxTokenFileBytes);

void lockstep_token_keygen(uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES]) try {
  c_api::entered(__func__);
  if (!key) return;
  const SecretKey k = random_key();
  std::memcpy(key, k.data(), k.size());
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
}

void lockstep_token_request_init(lockstep_token_request* request, size_t struct_size) try {
  c_api::entered(__func__);
  lockstep_token_request d{};
  d.protocol_id = LOCKSTEP_DEFAULT_PROTOCOL_ID;
  d.slot = LOCKSTEP_TOKEN_ANY_SLOT;
  d.lifetime_seconds = 30;
  c_api::init_versioned(d, request, struct_size);
} catch (...) {
  c_api::caught(__func__, nullptr, 0);
}

lockstep_status lockstep_token_mint(const lockstep_token_request* given, const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES],
                                    uint8_t* out, size_t cap, size_t* out_len, char* error, size_t error_cap) try {
  c_api::entered(__func__);
  if (!given || !key || !out_len || (cap > 0 && !out))
    return fail(LOCKSTEP_ERROR_ARGUMENT, "request, key and out_len must not be NULL, nor out when cap is not 0", error, error_cap);
  lockstep_token_request defaults;
  lockstep_token_request_defaults(&defaults);
  std::string bad;
  if (!c_api::read_versioned(*given, &defaults, sizeof(lockstep_token_request), "request", &bad))
    return fail(LOCKSTEP_ERROR_ARGUMENT, bad, error, error_cap);
  const lockstep_token_request* request = &defaults;
  if (request->server_count > 0 && !request->servers)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "servers must not be NULL", error, error_cap);
  if (request->user_data_len > 0 && !request->user_data)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "user_data must not be NULL when user_data_len is not 0", error, error_cap);
  TokenRequest q;
  q.protocol_id = request->protocol_id;
  q.client_id = request->client_id;
  q.slot = request->slot;
  q.lifetime_seconds = request->lifetime_seconds;
  if (request->user_data_len > kMaxTokenUserData)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "user_data_len is at most 256", error, error_cap);
  q.user_data.assign(request->user_data, request->user_data + request->user_data_len);
  if (request->server_count < 1 || request->server_count > kMaxTokenServers)
    return fail(LOCKSTEP_ERROR_ARGUMENT, "server_count must be 1..8", error, error_cap);
  for (size_t i = 0; i < request->server_count; ++i) {
    TokenAddress a;
    if (!request->servers[i] || !parse_token_address(request->servers[i], &a))
      return fail(LOCKSTEP_ERROR_ARGUMENT, "servers[" + std::to_string(i) + "] is not a.b.c.d:port", error, error_cap);
    q.servers.push_back(a);
  }
  SecretKey k;
  std::memcpy(k.data(), key, k.size());
  ConnectToken t;
  std::string why;
  if (!mint_connect_token(q, k, &t, &why)) return fail(LOCKSTEP_ERROR_ARGUMENT, why, error, error_cap);
  const std::vector<std::uint8_t> bytes = write_connect_token(t);
  *out_len = bytes.size();  // the length needed, whether or not it fits
  if (bytes.size() > cap)
    return fail(LOCKSTEP_ERROR_BUFFER, "out holds " + std::to_string(cap) + " bytes; the token needs " + std::to_string(bytes.size()),
                error, error_cap);
  std::memcpy(out, bytes.data(), bytes.size());
  return LOCKSTEP_OK;
} catch (...) {
  return c_api::caught(__func__, error, error_cap);
}

lockstep_status lockstep_result_verify_v4(const char* json, size_t len, const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES],
                                          int is_result_key) try {
  c_api::entered(__func__);
  if (!json || !key) return LOCKSTEP_ERROR_ARGUMENT;
  lockstep::SessionResult r;
  std::string error;
  if (!lockstep::parse_result(std::string_view(json, len), &r, &error)) return LOCKSTEP_ERROR_FORMAT;
  lockstep::SecretKey k{};
  std::copy(key, key + k.size(), k.begin());
  return lockstep::verify_result(r, is_result_key ? k : lockstep::result_key_from(k)) ? LOCKSTEP_OK : LOCKSTEP_ERROR_FORGED;
} catch (...) {
  return c_api::caught(__func__, nullptr, 0);
}

// Versions 2 and 3's answers: a document that is not a result was ARGUMENT, a forged one STATE.
lockstep_status lockstep_result_verify(const char* json, size_t len, const uint8_t key[LOCKSTEP_TOKEN_KEY_BYTES],
                                       int is_result_key) try {
  c_api::entered(__func__);
  const lockstep_status r = lockstep_result_verify_v4(json, len, key, is_result_key);
  return r == LOCKSTEP_ERROR_FORMAT ? LOCKSTEP_ERROR_ARGUMENT : c_api::as_v3(r);
} catch (...) {
  return c_api::caught(__func__, nullptr, 0);
}

