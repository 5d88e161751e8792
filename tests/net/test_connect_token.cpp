// Connect tokens and sealed messages: the formats of docs/PROTOCOL.md §4.6 and §4.7 and every
// way a token or a message can be refused.
#include <doctest/doctest.h>

#include <cstdlib>
#include <cstring>
#include <fstream>

#include "lockstep/connect_token.hpp"
#include "lockstep/packet_seal.hpp"

using namespace lockstep;

namespace {

constexpr std::uint64_t kNow = 1'800'000'000;

TokenRequest request() {
  TokenRequest q;
  q.client_id = 42;
  q.slot = 3;
  TokenAddress a;
  REQUIRE(parse_token_address("10.0.0.7:7777", &a));
  q.servers = {a};
  q.user_data = {1, 2, 3};
  q.lifetime_seconds = 30;
  q.now = kNow;
  return q;
}

ConnectToken minted(const SecretKey& key, TokenRequest q = request()) {
  ConnectToken t;
  std::string error;
  REQUIRE(mint_connect_token(q, key, &t, &error));
  return t;
}

}  // namespace

TEST_SUITE("net") {
  TEST_CASE("a minted token opens with its key and says what was asked, the player's file reads back") {
    const SecretKey key = random_key();
    const ConnectToken t = minted(key);
    CHECK(t.expire_time == kNow + 30);
    CHECK(t.client_to_server != t.server_to_client);
    OpenedToken o;
    REQUIRE(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow + 1, &o) == TokenError::None);
    CHECK(o.client_id == 42);
    CHECK(o.slot == 3);
    CHECK(o.servers == t.servers);
    CHECK(o.servers[0].text() == "10.0.0.7:7777");
    CHECK(o.client_to_server == t.client_to_server);
    CHECK(o.server_to_client == t.server_to_client);
    CHECK(o.user_data == std::vector<std::uint8_t>{1, 2, 3});
    // The player's copy, binary and base64.
    for (const auto& bytes : {write_connect_token(t), [&] {
                                const std::string b64 = connect_token_base64(t);
                                return std::vector<std::uint8_t>(b64.begin(), b64.end());
                              }()}) {
      ConnectToken back;
      std::string error;
      REQUIRE(read_connect_token(bytes, &back, &error));
      CHECK(back.client_id == 42);
      CHECK(back.servers == t.servers);
      CHECK(back.client_to_server == t.client_to_server);
      CHECK(back.sealed == t.sealed);
    }
    // Two tokens never share keys or nonces.
    const ConnectToken u = minted(key);
    CHECK(u.client_to_server != t.client_to_server);
    CHECK(u.sealed != t.sealed);
  }

  TEST_CASE("forged, altered, expired, foreign, truncated and overlong tokens are refused with their reason") {
    const SecretKey key = random_key();
    const ConnectToken t = minted(key);
    OpenedToken o;
    // Another backend's key.
    CHECK(open_connect_token(minted(random_key()).sealed, key, kDefaultProtocolId, kNow, &o) == TokenError::Forged);
    // Any one byte altered: the header is authenticated data, the rest is the sealed box.
    for (std::size_t i = 0; i < t.sealed.size(); ++i) {
      auto altered = t.sealed;
      altered[i] ^= 0x20;
      const TokenError e = open_connect_token(altered, key, kDefaultProtocolId, kNow, &o);
      CAPTURE(i);
      if (i == 0) CHECK(e == TokenError::WrongVersion);
      else if (i < 9) CHECK(e == TokenError::WrongProtocol);
      else CHECK(e == TokenError::Forged);
    }
    // Expired at its expiry second, and still filled in (a seated client may come back with it).
    CHECK(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow + 29, &o) == TokenError::None);
    CHECK(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow + 30, &o) == TokenError::Expired);
    CHECK(o.client_id == 42);
    // Created ahead of the server's clock: good within the clocks' skew, not yet beyond it (or the
    // lifetime cap would not bound how long a token stays good).
    CHECK(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow - kMaxClockSkewSeconds, &o) == TokenError::None);
    CHECK(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow - kMaxClockSkewSeconds - 1, &o) == TokenError::NotYetValid);
    CHECK(open_connect_token(t.sealed, key, kDefaultProtocolId, kNow - 3600, &o) == TokenError::NotYetValid);
    // Another game's protocol id.
    CHECK(open_connect_token(t.sealed, key, 7, kNow, &o) == TokenError::WrongProtocol);
    // Every truncation, and one byte more.
    for (std::size_t n = 0; n < t.sealed.size(); ++n) {
      CAPTURE(n);
      const TokenError e = open_connect_token({t.sealed.data(), n}, key, kDefaultProtocolId, kNow, &o);
      CHECK((e == TokenError::Malformed || e == TokenError::Forged || e == TokenError::WrongVersion ||
             e == TokenError::WrongProtocol));
    }
    auto longer = t.sealed;
    longer.push_back(0);
    CHECK(open_connect_token(longer, key, kDefaultProtocolId, kNow, &o) == TokenError::Forged);
    CHECK(open_connect_token(std::vector<std::uint8_t>(kMaxSealedTokenBytes + 1, 1), key, kDefaultProtocolId, kNow, &o) ==
          TokenError::Malformed);
    // The player's file: truncated anywhere, or not a token at all.
    const auto file = write_connect_token(t);
    for (std::size_t n = 0; n < file.size(); ++n) {
      ConnectToken back;
      std::string error;
      CHECK_FALSE(read_connect_token({file.data(), n}, &back, &error));
    }
    ConnectToken back;
    std::string error;
    CHECK_FALSE(read_connect_token(std::vector<std::uint8_t>(100, 'A'), &back, &error));
  }

  TEST_CASE("a token file with any one byte damaged is refused at once, naming the part, and format 1 files still read") {
    const SecretKey key = random_key();
    const ConnectToken t = minted(key);
    const auto file = write_connect_token(t);
    const std::size_t keys_at = 44 + 6 * t.servers.size(), sealed_at = keys_at + 64, checks_at = sealed_at + t.sealed.size();
    REQUIRE(file.size() == checks_at + 24);
    CHECK(file[4] == kTokenFileVersion);
    for (std::size_t i = 8; i < file.size(); ++i) {  // past the magic, version and lengths, which the form checks
      CAPTURE(i);
      auto damaged = file;
      damaged[i] ^= 0x01;
      ConnectToken back;
      std::string error;
      REQUIRE_FALSE(read_connect_token(damaged, &back, &error));
      if (i >= checks_at) continue;  // a damaged check: whichever part it names, the file is refused
      const char* part = i < keys_at ? "header or server list" : i < sealed_at ? "its keys" : "its sealed part";
      CHECK_MESSAGE(error.find(part) != std::string::npos, error);
      CHECK(error.find("damaged") != std::string::npos);
    }
    // Format 1: the same layout without the checks, as minted before them.
    std::vector<std::uint8_t> v1(file.begin(), file.begin() + static_cast<std::ptrdiff_t>(checks_at));
    v1[4] = 1;
    ConnectToken back;
    std::string error;
    REQUIRE_MESSAGE(read_connect_token(v1, &back, &error), error);
    CHECK(back.sealed == t.sealed);
    CHECK(back.client_to_server == t.client_to_server);
  }

  TEST_CASE("minting refuses requests out of range") {
    const SecretKey key = random_key();
    ConnectToken t;
    std::string error;
    TokenRequest q = request();
    q.servers.clear();
    CHECK_FALSE(mint_connect_token(q, key, &t, &error));
    q = request();
    q.servers.assign(kMaxTokenServers + 1, q.servers[0]);
    CHECK_FALSE(mint_connect_token(q, key, &t, &error));
    q = request();
    q.user_data.assign(kMaxTokenUserData + 1, 0);
    CHECK_FALSE(mint_connect_token(q, key, &t, &error));
    q = request();
    q.lifetime_seconds = 0;
    CHECK_FALSE(mint_connect_token(q, key, &t, &error));
    q = request();
    q.slot = 32;
    CHECK_FALSE(mint_connect_token(q, key, &t, &error));
    q = request();
    q.servers.assign(kMaxTokenServers, q.servers[0]);
    q.user_data.assign(kMaxTokenUserData, 9);
    REQUIRE(mint_connect_token(q, key, &t, &error));
    CHECK(t.sealed.size() == kMaxSealedTokenBytes);  // the largest token is what the limit says
    CHECK(write_connect_token(t).size() == kMaxTokenFileBytes);
  }

  TEST_CASE("keys load from a private file or the environment, never from a world-readable file") {
    const SecretKey key = random_key();
    const std::string path = "/tmp/lockstep-test-token.key";
    {
      std::ofstream out(path);
      out << "  " << key_hex(key) << "\n";
    }
    SecretKey back{};
    std::string error;
    REQUIRE(std::system(("chmod 644 " + path).c_str()) == 0);
    CHECK_FALSE(load_key(path, &back, &error));
    CHECK(error.find("chmod 600") != std::string::npos);
    REQUIRE(std::system(("chmod 600 " + path).c_str()) == 0);
    REQUIRE(load_key(path, &back, &error));
    CHECK(back == key);
    ::setenv("LOCKSTEP_TEST_KEY", key_hex(key).c_str(), 1);
    back = {};
    REQUIRE(load_key("env:LOCKSTEP_TEST_KEY", &back, &error));
    CHECK(back == key);
    ::setenv("LOCKSTEP_TEST_KEY", "not hex", 1);
    CHECK_FALSE(load_key("env:LOCKSTEP_TEST_KEY", &back, &error));
    CHECK_FALSE(load_key("env:LOCKSTEP_NO_SUCH_KEY", &back, &error));
    std::remove(path.c_str());
    // Exactly 32 bytes: a key a byte short is refused, whatever line end pads it to 64 characters.
    const std::string text = key_hex(key);
    back = {};
    REQUIRE(parse_key_hex(text, &back));
    CHECK(back == key);
    CHECK(parse_key_hex(text + "\n", &back));
    CHECK_FALSE(parse_key_hex(text.substr(0, 62) + "\r\n", &back));
    CHECK_FALSE(parse_key_hex(text.substr(0, 62), &back));
    CHECK_FALSE(parse_key_hex(text + "00", &back));
  }

  TEST_CASE("sealed messages open on the other side only, once, and never after a change") {
    const SecretKey c2s = random_key(), s2c = random_key();
    std::array<std::uint8_t, kServerNonceBytes> nonce{};
    random_bytes(nonce);
    PacketSeal client(derive_connection_keys(c2s, s2c, nonce, false));
    PacketSeal server(derive_connection_keys(c2s, s2c, nonce, true));
    const std::vector<std::uint8_t> hello = {'h', 'e', 'l', 'l', 'o'};
    std::vector<std::uint8_t> sealed, plain;
    for (Channel ch : {Channel::Control, Channel::Play}) {
      client.seal(ch, hello, sealed);
      CHECK(sealed.size() == hello.size() + PacketSeal::overhead(ch));
      CHECK(std::search(sealed.begin(), sealed.end(), hello.begin(), hello.end()) == sealed.end());  // not readable
      auto tampered = sealed;
      tampered.back() ^= 1;
      CHECK(server.open(ch, tampered, plain) == OpenError::Forged);
      CHECK(client.open(ch, sealed, plain) == OpenError::Forged);  // its own direction's key does not open it
      REQUIRE(server.open(ch, sealed, plain) == OpenError::None);
      CHECK(plain == hello);
      // Replayed: the play window refuses it; a control message is counted, so it does not open again.
      CHECK(server.open(ch, sealed, plain) == (ch == Channel::Play ? OpenError::Replayed : OpenError::Forged));
      CHECK(server.open(ch, {sealed.data(), 3}, plain) == OpenError::Short);
    }
    // Another connection of the same token (a new challenge nonce) has other keys.
    std::array<std::uint8_t, kServerNonceBytes> other = nonce;
    other[0] ^= 1;
    PacketSeal stranger(derive_connection_keys(c2s, s2c, other, true));
    client.seal(Channel::Play, hello, sealed);
    CHECK(stranger.open(Channel::Play, sealed, plain) == OpenError::Forged);
  }

  TEST_CASE("play messages open out of order within the window, across the 16-bit wrap, and not once older") {
    const SecretKey c2s = random_key(), s2c = random_key();
    std::array<std::uint8_t, kServerNonceBytes> nonce{};
    PacketSeal client(derive_connection_keys(c2s, s2c, nonce, false));
    PacketSeal server(derive_connection_keys(c2s, s2c, nonce, true));
    const std::vector<std::uint8_t> m = {7};
    std::vector<std::uint8_t> plain;
    std::vector<std::vector<std::uint8_t>> sent(70'000);
    for (auto& s : sent) client.seal(Channel::Play, m, s);
    // Every third arrives, past the 16-bit wrap; then some that were held back, in reverse order.
    for (std::size_t i = 0; i < sent.size(); i += 3) REQUIRE(server.open(Channel::Play, sent[i], plain) == OpenError::None);
    const std::size_t newest = (sent.size() - 1) / 3 * 3;
    for (std::size_t i = newest - 1; i > newest - kReplayWindow; --i)
      if (i % 3 != 0) CHECK(server.open(Channel::Play, sent[i], plain) == OpenError::None);
    CHECK(server.open(Channel::Play, sent[newest - kReplayWindow - 1], plain) == OpenError::Replayed);  // too old
    CHECK(server.open(Channel::Play, sent[newest - 3], plain) == OpenError::Replayed);                 // seen
  }

  TEST_CASE("a status proof opens with the status key, within two minutes of its time") {
    const SecretKey key = random_key();
    std::array<std::uint8_t, 24> nonce{};
    const auto proof = status_key_proof(key, kNow);
    CHECK(check_status_proof(proof, key, kNow + 100, &nonce));
    CHECK(std::memcmp(nonce.data(), proof.data(), 24) == 0);
    CHECK_FALSE(check_status_proof(proof, key, kNow + kStatusProofSeconds + 1, &nonce));
    CHECK_FALSE(check_status_proof(proof, random_key(), kNow, &nonce));
    auto altered = proof;
    altered[30] ^= 1;
    CHECK_FALSE(check_status_proof(altered, key, kNow, &nonce));
    std::vector<std::uint8_t> plain;
    const std::vector<std::uint8_t> reply = {1, 2, 3};
    const auto sealed = seal_with_key(key, reply, "ad");
    REQUIRE(open_with_key(key, sealed, "ad", plain));
    CHECK(plain == reply);
    CHECK_FALSE(open_with_key(key, sealed, "other ad", plain));
  }

  TEST_CASE("token addresses parse as numeric IPv4 with a port") {
    TokenAddress a;
    CHECK(parse_token_address("1.2.3.4:5", &a));
    CHECK(a.text() == "1.2.3.4:5");
    for (const char* bad : {"", "1.2.3.4", "1.2.3:5", "1.2.3.4:0", "1.2.3.256:5", "1.2.3.4:65536", "a.b.c.d:1",
                            "1.2.3.4:5x", "1..3.4:5", "localhost:7777"})
      CHECK_FALSE(parse_token_address(bad, &a));
  }
}
