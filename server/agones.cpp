// The Agones SDK's REST calls over libcurl (agones.hpp).
#include "agones.hpp"

#include <curl/curl.h>

#include <cstdlib>
#include <cstring>

#include "lockstep/json.hpp"
#include "lockstep/log.hpp"

namespace lockstep {

std::uint16_t AgonesSdk::port_from_env() {
  const char* v = std::getenv("AGONES_SDK_HTTP_PORT");
  const long p = v ? std::strtol(v, nullptr, 10) : 0;
  return p > 0 && p < 65536 ? static_cast<std::uint16_t>(p) : std::uint16_t{9358};
}

bool AgonesSdk::set_annotation(const std::string& key, const std::string& value) {
  return request("PUT", "/metadata/annotation", nullptr, json_text(Json{{"key", key}, {"value", value}}));
}

bool AgonesSdk::request(const char* method, const char* path, std::string* body, const std::string& send_body) {
  static const bool initialized = curl_global_init(CURL_GLOBAL_DEFAULT) == CURLE_OK;
  CURL* curl = initialized ? curl_easy_init() : nullptr;
  if (!curl) {
    LOCKSTEP_LOG_WARN("agones: libcurl did not start; %s %s not sent", method, path);
    return false;
  }
  const std::string url = "http://127.0.0.1:" + std::to_string(port_) + path;
  std::string answer;
  curl_slist* headers = nullptr;
  curl_easy_setopt(curl, CURLOPT_URL, url.c_str());
  curl_easy_setopt(curl, CURLOPT_TIMEOUT_MS, kRequestTimeoutMs);  // the whole request: the tick loop waits on it
  curl_easy_setopt(curl, CURLOPT_NOSIGNAL, 1L);
  curl_easy_setopt(curl, CURLOPT_PROTOCOLS_STR, "http");
  curl_easy_setopt(curl, CURLOPT_NOPROXY, "*");  // the sidecar is on loopback, never behind a proxy
  if (std::strcmp(method, "GET") == 0) {
    curl_easy_setopt(curl, CURLOPT_HTTPGET, 1L);
  } else {
    headers = curl_slist_append(headers, "Content-Type: application/json");
    headers = curl_slist_append(headers, "Expect:");  // no 100-continue round for a larger annotation
    curl_easy_setopt(curl, CURLOPT_HTTPHEADER, headers);
    curl_easy_setopt(curl, CURLOPT_CUSTOMREQUEST, method);
    curl_easy_setopt(curl, CURLOPT_POSTFIELDS, send_body.c_str());
    curl_easy_setopt(curl, CURLOPT_POSTFIELDSIZE, static_cast<long>(send_body.size()));
  }
  // The answer's body, decoded (the sidecar sends bodies over 2 KiB chunked), at most 64 KiB.
  curl_easy_setopt(curl, CURLOPT_WRITEDATA, &answer);
  curl_easy_setopt(curl, CURLOPT_WRITEFUNCTION, +[](char* data, std::size_t size, std::size_t n, void* user) {
    auto* out = static_cast<std::string*>(user);
    if (out->size() + size * n > kMaxAnswerBytes) return std::size_t{0};  // an error: past the bound
    out->append(data, size * n);
    return size * n;
  });
  const CURLcode rc = curl_easy_perform(curl);
  long status = 0;
  if (rc == CURLE_OK) curl_easy_getinfo(curl, CURLINFO_RESPONSE_CODE, &status);
  curl_slist_free_all(headers);
  curl_easy_cleanup(curl);
  const bool ok = rc == CURLE_OK && status >= 200 && status < 300;
  if (!ok)
    LOCKSTEP_LOG_WARN("agones: %s %s to 127.0.0.1:%u failed: %s", method, path, port_,
                      rc != CURLE_OK ? curl_easy_strerror(rc) : ("status " + std::to_string(status)).c_str());
  else if (body)
    *body = std::move(answer);
  return ok;
}

AgonesSdk::Allocation AgonesSdk::allocation(const std::string& annotation_name) {
  Allocation out;
  std::string body;
  if (!request("GET", "/gameserver", &body)) return out;
  const Json doc = json_parse(body);
  if (doc.is_discarded() || !doc.is_object()) return out;
  const Json::json_pointer annotations("/object_meta/annotations"), address("/status/address"), port("/status/ports/0/port");
  if (doc.contains(annotations) && doc[annotations].is_object()) {
    const auto it = doc[annotations].find(annotation_name);
    if (it != doc[annotations].end() && it->is_string()) out.annotation = it->get<std::string>();
  }
  if (doc.contains(address) && doc[address].is_string() && doc.contains(port) && doc[port].is_number_unsigned()) {
    TokenAddress a;
    if (parse_token_address(doc[address].get<std::string>() + ":" + std::to_string(doc[port].get<std::uint64_t>()), &a))
      out.address = a;
  }
  return out;
}

}  // namespace lockstep
