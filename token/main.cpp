// lockstep-token: a matchmaker's tool for connect tokens (docs/PROTOCOL.md §4.6). Makes a token
// key, mints a token for one player and one match's server, and shows what a token says.
#include <CLI/CLI.hpp>

#include <sys/stat.h>

#include <cstdio>
#include <fstream>
#include <iostream>
#include <iterator>
#include <span>
#include <sstream>
#include <string>
#include <vector>

#include "lockstep/bytes.hpp"
#include "lockstep/connect_token.hpp"
#include "lockstep/session_result.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/json.hpp"
#include "lockstep/log.hpp"
#include "lockstep/version.hpp"

using namespace lockstep;

namespace {

// Writes `text` to `path` readable by its owner only ("-": standard output).
bool write_private(const std::string& path, const std::string& text) {
  if (path == "-") {
    std::fwrite(text.data(), 1, text.size(), stdout);
    return std::fflush(stdout) == 0;
  }
  // A new file, readable by its owner only from its first byte (an old one may be readable by others).
  std::remove(path.c_str());
  const mode_t old = umask(077);
  std::ofstream out(path, std::ios::binary | std::ios::trunc);
  out << text;
  out.close();
  umask(old);
  chmod(path.c_str(), 0600);
  if (!out) LOCKSTEP_LOG_ERROR("cannot write %s", path.c_str());
  return static_cast<bool>(out);
}

bool read_file(const std::string& path, std::vector<std::uint8_t>* out) {
  std::ifstream in(path, std::ios::binary);
  if (!in) return false;
  out->assign(std::istreambuf_iterator<char>(in), std::istreambuf_iterator<char>());
  return true;
}

struct Options {
  std::string out = "-", key, slot = "any", user_data, file, format = "binary";
  std::uint64_t protocol_id = kDefaultProtocolId, client_id = 0, lifetime = 30;
  std::vector<std::string> servers;
  bool result_key = false;  // verify-result: --key is the result key itself
};

int keygen(const Options& o) { return write_private(o.out, key_hex(random_key()) + "\n") ? 0 : 1; }

int mint(const Options& o) {
  SecretKey key;
  std::string error;
  if (!load_key(o.key, &key, &error)) {
    LOCKSTEP_LOG_ERROR("--key: %s", error.c_str());
    return 2;
  }
  TokenRequest q;
  q.protocol_id = o.protocol_id;
  q.client_id = o.client_id;
  q.lifetime_seconds = o.lifetime;
  if (o.slot != "any") {
    char* end = nullptr;
    const unsigned long s = std::strtoul(o.slot.c_str(), &end, 10);
    if (o.slot.empty() || *end != '\0' || s > 31) {
      LOCKSTEP_LOG_ERROR("--slot must be 0..31 or any, got '%s'", o.slot.c_str());
      return 2;
    }
    q.slot = static_cast<std::uint32_t>(s);
  }
  for (const std::string& s : o.servers) {
    TokenAddress a;
    if (!parse_token_address(s, &a)) {
      LOCKSTEP_LOG_ERROR("--server wants IP:PORT (a numeric IPv4 address), got '%s'", s.c_str());
      return 2;
    }
    q.servers.push_back(a);
  }
  if (!parse_bytes_hex(o.user_data, &q.user_data)) {
    LOCKSTEP_LOG_ERROR("--user-data wants hexadecimal digits in pairs");
    return 2;
  }
  ConnectToken t;
  if (!mint_connect_token(q, key, &t, &error)) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return 2;
  }
  if (o.format == "base64") return write_private(o.out, connect_token_base64(t) + "\n") ? 0 : 1;
  const std::vector<std::uint8_t> bytes = write_connect_token(t);
  if (o.out == "-" && isatty(fileno(stdout))) {
    LOCKSTEP_LOG_ERROR("a binary token goes to a file (--out FILE) or --format base64");
    return 2;
  }
  return write_private(o.out, std::string(bytes.begin(), bytes.end())) ? 0 : 1;
}

// What the player's copy says, without its keys.
int inspect(const Options& o) {
  std::vector<std::uint8_t> bytes;
  if (!read_file(o.file, &bytes)) {
    LOCKSTEP_LOG_ERROR("cannot read %s", o.file.c_str());
    return 2;
  }
  ConnectToken t;
  std::string error;
  if (!read_connect_token(bytes, &t, &error)) {
    LOCKSTEP_LOG_ERROR("%s: %s", o.file.c_str(), error.c_str());
    return 2;
  }
  Json servers = Json::array();
  for (const TokenAddress& a : t.servers) servers.push_back(a.text());
  const std::uint64_t now = unix_seconds();
  std::printf("%s\n", json_text(Json{{"protocol_id", t.protocol_id},
                                     {"client_id", t.client_id},
                                     {"slot", t.slot == kAnySlot ? Json("any") : Json(t.slot)},
                                     {"servers", servers},
                                     {"create_time", t.create_time},
                                     {"expire_time", t.expire_time},
                                     {"expires_in_s", t.expire_time > now ? static_cast<std::int64_t>(t.expire_time - now) : 0},
                                     {"sealed_bytes", t.sealed.size()},
                                     {"sealed_prefix", bytes_hex(std::span(t.sealed).first(25))}})
                          .c_str());
  return 0;
}

// verify-result: 0 authentic, 3 not (a changed byte, another key, unsigned), 2 not a result.
int verify_result_file(const Options& o) {
  SecretKey key{};
  std::string error;
  if (!load_key(o.key, &key, &error)) {
    LOCKSTEP_LOG_ERROR("--key: %s", error.c_str());
    return 2;
  }
  std::stringstream text;
  if (o.file == "-") {
    text << std::cin.rdbuf();
  } else {
    std::ifstream in(o.file, std::ios::binary);
    if (!in) {
      LOCKSTEP_LOG_ERROR("cannot read %s", o.file.c_str());
      return 2;
    }
    text << in.rdbuf();
  }
  SessionResult r;
  if (!parse_result(text.str(), &r, &error)) {
    LOCKSTEP_LOG_ERROR("%s: not a session result: %s", o.file.c_str(), error.c_str());
    return 2;
  }
  const SecretKey result_key = o.result_key ? key : result_key_from(key);
  if (!verify_result(r, result_key)) {
    LOCKSTEP_LOG_ERROR("%s: NOT authentic: %s", o.file.c_str(),
                       r.mac ? "its MAC does not match (a changed byte, or another key)" : "it is unsigned");
    return 3;
  }
  std::printf("authentic: %u ticks, final hash %s, %s result of %zu bytes\n", r.ticks, hash_hex(r.final_hash).c_str(),
              r.disputed ? "a disputed" : "a settled", r.result.size());
  return 0;
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-token");
  CLI::App app{"lockstep-token: connect tokens for a matchmaker (docs/PROTOCOL.md §4.6). A backend and its servers\n"
               "share a token key (lockstep-server --token-key); the backend mints a token per player and match.\n"
               "Exit codes: 0 done (verify-result: the result is authentic), 1 cannot write, 2 bad usage or not a\n"
               "token (or not a result), 3 verify-result: the result is not authentic."};
  app.set_version_flag("--version", std::string("lockstep-token ") + kVersion + " (protocol " + std::to_string(kProtocolVersion) + ")");
  app.require_subcommand(1);
  Options o;
  auto* k = app.add_subcommand("keygen", "write a new random token key (64 hex digits, mode 600)");
  k->add_option("--out,-o", o.out, "file to write ('-': standard output)")->capture_default_str();
  auto* m = app.add_subcommand("mint", "mint a token for one player and one match's server");
  m->add_option("--key", o.key, "the token key: FILE (mode 600) or env:NAME; never the key itself")->required();
  m->add_option("--client-id", o.client_id, "the backend's id of the player; its seat is bound to it")->required();
  m->add_option("--server", o.servers, "IP:PORT of the match's servers (1..8; lockstep-client tries them in order)")->required();
  m->add_option("--slot", o.slot, "the player slot it takes: 0..31 or any")->capture_default_str();
  m->add_option("--expires-in", o.lifetime, "seconds it is good for joining (1..86400)")->capture_default_str();
  m->add_option("--protocol-id", o.protocol_id, "the game's protocol id (as the server's --protocol-id)")->capture_default_str();
  m->add_option("--user-data", o.user_data, "up to 256 bytes in hex only the server reads");
  m->add_option("--out,-o", o.out, "file to write ('-': standard output)")->capture_default_str();
  m->add_option("--format", o.format, "binary (a token file) or base64 (text for a matchmaker's reply)")
      ->check(CLI::IsMember({"binary", "base64"}))->capture_default_str();
  auto* i = app.add_subcommand("inspect", "print what a token file says as JSON (never its keys)");
  i->add_option("file", o.file, "the token file (binary or base64)")->required();
  auto* v = app.add_subcommand("verify-result",
                                "check a session's result (lockstep-server --result, its summary's \"result\", or its "
                                "webhook's body) against the key the match's tokens were minted with");
  v->add_option("--key", o.key, "the token key (FILE or env:NAME), or with --result-key the server's --result-key")->required();
  v->add_flag("--result-key", o.result_key, "--key is a result key given to the server (--result-key), not the token key");
  v->add_option("file", o.file, "the result JSON ('-': standard input)")->required();
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  if (k->parsed()) return keygen(o);
  if (m->parsed()) return mint(o);
  if (v->parsed()) return verify_result_file(o);
  return inspect(o);
}
