// The WebSocket door's datagram path (webrtc_door.hpp): what it reads from a page's offer, what it
// answers (its certificate's fingerprint, the passive DTLS role, a candidate where it listens or
// the address it is told to name) and what it refuses, with the reason the page is given. The
// channel itself (ICE, DTLS and SCTP with a real browser) is e2e/browser's.
#include <doctest/doctest.h>

#include <chrono>
#include <condition_variable>
#include <memory>
#include <mutex>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/seen_loss.hpp"
#include "webrtc_door.hpp"

using namespace lockstep::rtc;

namespace {

// An offer as a browser makes it for one negotiated data channel (the lines the door reads, among
// those it does not).
const char* kOffer =
    "v=0\r\no=- 4611731400430051336 2 IN IP4 127.0.0.1\r\ns=-\r\nt=0 0\r\na=group:BUNDLE 0\r\n"
    "a=extmap-allow-mixed\r\na=msid-semantic: WMS\r\n"
    "m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\nc=IN IP4 0.0.0.0\r\n"
    "a=ice-ufrag:Xb3k\r\na=ice-pwd:q9Zs0A1rT7mWvYp2Lk4NcHdE\r\na=ice-options:trickle\r\n"
    "a=fingerprint:sha-256 "
    "1a:2B:3c:4D:5e:6F:70:81:92:A3:B4:C5:D6:E7:F8:09:1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09\r\n"
    "a=setup:actpass\r\na=mid:0\r\na=sctp-port:5001\r\na=max-message-size:262144\r\n";

std::string without(std::string text, const std::string& line_start) {
  const auto at = text.find(line_start);
  REQUIRE(at != std::string::npos);
  text.erase(at, text.find("\r\n", at) + 2 - at);
  return text;
}

struct Sink final : RtcSink {
  std::mutex m;
  std::condition_variable cv;
  std::vector<std::pair<std::string, std::string>> answers;  // answer, why
  void on_answer(RtcKey, std::string answer, std::string why) override {
    std::lock_guard lock(m);
    answers.emplace_back(std::move(answer), std::move(why));
    cv.notify_all();
  }
  void on_message(RtcKey, std::span<const std::uint8_t>, std::int64_t) override {}
  void on_loss(RtcKey, std::uint32_t) override {}
  std::vector<std::string> closes;
  void on_closed(RtcKey, const std::string& why) override {
    std::lock_guard lock(m);
    closes.push_back(why);
    cv.notify_all();
  }
  std::string next_close() {
    std::unique_lock lock(m);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return !closes.empty(); }));
    return closes.front();
  }
  std::pair<std::string, std::string> next(std::size_t n) {
    std::unique_lock lock(m);
    REQUIRE(cv.wait_for(lock, std::chrono::seconds(10), [&] { return answers.size() >= n; }));
    return answers[n - 1];
  }
};

// A door on loopback, its channels closed if not open within `open_within_ns`.
std::unique_ptr<RtcDoor> loopback_door(Sink& sink, std::int64_t open_within_ns = 10'000'000'000,
                                       const std::string& advertise = "") {
  RtcConfig config;
  config.bind = "127.0.0.1";
  config.advertise = advertise;
  config.open_within_ns = open_within_ns;
  lockstep::Error error;
  auto door = RtcDoor::start(config, &sink, &error);
  REQUIRE_MESSAGE(door, error.detail);
  return door;
}

}  // namespace

TEST_SUITE("net/webrtc_door") {
  TEST_CASE("an offer's credentials, fingerprint, mid and SCTP port are read, its fingerprint in upper case") {
    Offer o;
    std::string why;
    REQUIRE(parse_offer(kOffer, &o, &why));
    CHECK(o.ice_ufrag == "Xb3k");
    CHECK(o.ice_pwd == "q9Zs0A1rT7mWvYp2Lk4NcHdE");
    CHECK(o.fingerprint == "1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09:1A:2B:3C:4D:5E:6F:70:81:92:A3:B4:C5:D6:E7:F8:09");
    CHECK(o.mid == "0");
    CHECK(o.sctp_port == 5001);
  }

  TEST_CASE("an offer without a data channel, credentials or a sha-256 fingerprint, or with odd characters, is refused with why") {
    Offer o;
    std::string why;
    CHECK_FALSE(parse_offer(without(kOffer, "m=application"), &o, &why));
    CHECK(why.find("no data channel") != std::string::npos);
    CHECK_FALSE(parse_offer(without(kOffer, "a=ice-pwd:"), &o, &why));
    CHECK(why.find("ICE credentials") != std::string::npos);
    CHECK_FALSE(parse_offer(without(kOffer, "a=fingerprint:"), &o, &why));
    CHECK(why.find("fingerprint") != std::string::npos);
    std::string sha1 = kOffer;
    sha1.replace(sha1.find("sha-256"), 7, "sha-1");
    CHECK_FALSE(parse_offer(sha1, &o, &why));
    std::string injected = kOffer;  // a credential that would break the answer's lines
    injected.replace(injected.find("a=ice-ufrag:Xb3k"), 16, "a=ice-ufrag:X b");
    CHECK_FALSE(parse_offer(injected, &o, &why));
    std::string mid = kOffer;
    mid.replace(mid.find("a=mid:0"), 7, "a=mid:0\ra=x");
    CHECK_FALSE(parse_offer(mid, &o, &why));
    CHECK_FALSE(parse_offer("", &o, &why));
  }

  TEST_CASE("the door answers an offer: its certificate's fingerprint, the passive DTLS role, the offer's mid, the named address") {
    Sink sink;
    auto door = loopback_door(sink, 10'000'000'000, "203.0.113.7:40000");
    int link = 0;
    door->offer({&link, 1}, kOffer);
    const auto [answer, why] = sink.next(1);
    REQUIRE_MESSAGE(!answer.empty(), why);
    CHECK(answer.find("m=application 9 UDP/DTLS/SCTP webrtc-datachannel\r\n") != std::string::npos);
    CHECK(answer.find("a=setup:passive\r\n") != std::string::npos);
    CHECK(answer.find("a=mid:0\r\n") != std::string::npos);
    CHECK(answer.find("a=candidate:1 1 udp 2130706431 203.0.113.7 40000 typ host\r\n") != std::string::npos);
    const auto fp = answer.find("a=fingerprint:sha-256 ");
    REQUIRE(fp != std::string::npos);
    CHECK(answer.find("\r\n", fp) - fp == 22 + 95);
    CHECK(answer.find("a=ice-ufrag:") != std::string::npos);
    // Refusals come back with their reason, and are counted.
    door->offer({&link, 2}, without(kOffer, "a=fingerprint:"));
    const auto [none, reason] = sink.next(2);
    CHECK(none.empty());
    CHECK(reason.find("fingerprint") != std::string::npos);
    door->offer({&link, 3}, std::string(20000, 'x'));
    CHECK(sink.next(3).second.find("over 16 KB") != std::string::npos);
    const RtcStats s = door->stats();
    CHECK(s.offers == 3);
    CHECK(s.answered == 1);
    CHECK(s.refused == 2);
    // Nothing is open: a play message has no channel to go over.
    const std::uint8_t byte = 1;
    CHECK_FALSE(door->send({&link, 1}, {&byte, 1}));
  }

  TEST_CASE("without an address to name, the answer names the port the channel listens on") {
    Sink sink;
    auto door = loopback_door(sink);
    int link = 0;
    door->offer({&link, 1}, kOffer);
    const std::string answer = sink.next(1).first;
    const auto at = answer.find("a=candidate:1 1 udp ");
    REQUIRE(at != std::string::npos);
    CHECK(answer.find(" 127.0.0.1 ", at) < answer.find("\r\n", at));
  }

  TEST_CASE("a channel offered and never opened (no ICE, no DTLS) is closed at its deadline, with why, and counted") {
    Sink sink;
    auto door = loopback_door(sink, 300'000'000);
    int link = 0;
    const auto start = std::chrono::steady_clock::now();
    door->offer({&link, 1}, kOffer);
    REQUIRE_FALSE(sink.next(1).first.empty());
    const std::string why = sink.next_close();
    CHECK(why.find("did not open") != std::string::npos);
    CHECK(std::chrono::steady_clock::now() - start >= std::chrono::milliseconds(300));
    CHECK(door->stats().failed == 1);
    const std::uint8_t byte = 1;
    CHECK_FALSE(door->send({&link, 1}, {&byte, 1}));
  }

  TEST_CASE("a channel closed by the door's side is closed without a report") {
    Sink sink;
    auto door = loopback_door(sink, 1'000'000'000);
    int link = 0;
    door->offer({&link, 1}, kOffer);
    REQUIRE_FALSE(sink.next(1).first.empty());
    door->close({&link, 1});
    std::this_thread::sleep_for(std::chrono::milliseconds(1500));  // past the deadline it would have met
    std::lock_guard lock(sink.m);
    CHECK(sink.closes.empty());
    CHECK(door->stats().failed == 0);
  }

  TEST_CASE("a page's datagrams lost on the way are counted from the gaps in its DTLS records' numbers") {
    // SeenLoss (lockstep/seen_loss.hpp) over 48-bit record numbers, as the door feeds it.
    const std::uint64_t base = std::uint64_t{1} << 40;  // record numbers run past 32 bits
    lockstep::SeenLoss none;
    for (std::uint64_t i = 1; i <= 1000; ++i) none.saw(base + i);
    CHECK(none.lost() == 0);
    lockstep::SeenLoss some;  // every 50th lost (2 %), neighbours swapped (reordered), every 13th twice
    for (std::uint64_t i = 1; i <= 5000; i += 2) {
      for (const std::uint64_t n : {i + 1, i}) {
        if (n % 50 == 0) continue;
        some.saw(base + n);
        if (n % 13 == 0) some.saw(base + n);
      }
    }
    some.saw(base + 5000 + 64);  // the last 63 judged: none was lost
    CHECK(some.lost() == 100);
    // Received: 4900 sent, less number 1 (it came after number 2, the first seen), and 5064.
    CHECK(some.received() == 4900);
    CHECK(some.loss() == doctest::Approx(0.02));
    lockstep::SeenLoss jump;
    jump.saw(base + 10);
    jump.saw(base + 10 + 1000);
    CHECK(jump.lost() == 1000 - 64);  // past the window at once; the window's own are judged later
    jump.saw(base + 10 + 1000 + 64);
    CHECK(jump.lost() == 999);  // 11 to 1009; 1011 to 1073 are still in the window
  }
}
