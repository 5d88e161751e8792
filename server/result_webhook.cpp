// The result webhook (result_webhook.hpp).
#include "result_webhook.hpp"

#include <curl/curl.h>
#include <sodium.h>

#include <chrono>

#include "lockstep/log.hpp"

namespace lockstep {

ResultWebhook::~ResultWebhook() { finish(); }

std::string ResultWebhook::idempotency_key(const std::string& json) {
  unsigned char digest[16];
  crypto_generichash(digest, sizeof digest, reinterpret_cast<const unsigned char*>(json.data()), json.size(), nullptr, 0);
  static constexpr char kHex[] = "0123456789abcdef";
  std::string key;
  for (const unsigned char b : digest) {
    key += kHex[b >> 4];
    key += kHex[b & 15];
  }
  return key;
}

void ResultWebhook::post(std::string json) {
  if (thread_.joinable()) return;
  thread_ = std::thread([this, body = std::move(json)]() mutable { run(std::move(body)); });
}

bool ResultWebhook::finish() {
  if (thread_.joinable()) thread_.join();
  return delivered_;
}

void ResultWebhook::run(std::string json) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  if (!initialized) {
    LOCKSTEP_LOG_ERROR("result webhook: libcurl did not start; the result is not posted");
    return;
  }
  long pause_ms = config_.first_pause_ms;
  const std::string key = idempotency_key(json);
  for (int attempt = 1; attempt <= config_.tries; ++attempt) {
    CURL* curl = curl_easy_init();
    if (!curl) break;
    curl_slist* headers = curl_slist_append(nullptr, "Content-Type: application/json");
    headers = curl_slist_append(headers, ("Idempotency-Key: " + key).c_str());
    curl_easy_setopt(curl, CURLOPT_URL, config_.url.c_str());
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, json.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(json.size()));
    curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, config_.timeout_ms);
    curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
    curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http,https");
    curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, +[](char*, std::size_t size, std::size_t n, void*) { return size * n; });
    const CURLcode rc = curl_easy_perform(curl);
    long status = 0;
    if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
    curl_slist_free_all(headers);
    curl_easy_cleanup(curl);
    if (rc == CURLE_OK && status >= 200 && status < 300) {
      LOCKSTEP_LOG_INFO("result webhook: posted the session's result to %s (HTTP %ld, try %d)", config_.url.c_str(), status,
                        attempt);
      delivered_ = true;
      return;
    }
    LOCKSTEP_LOG_WARN("result webhook: try %d of %d to %s failed: %s", attempt, config_.tries, config_.url.c_str(),
                      rc != CURLE_OK ? curl_easy_strerror(rc) : ("HTTP " + std::to_string(status)).c_str());
    if (attempt < config_.tries) {
      std::this_thread::sleep_for(std::chrono::milliseconds(pause_ms));
      pause_ms *= 2;
    }
  }
  LOCKSTEP_LOG_ERROR("result webhook: the session's result was not delivered to %s", config_.url.c_str());
}

}  // namespace lockstep
