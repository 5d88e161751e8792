// run_event_loops (lockstep/event_loop.hpp): several loops on one thread, as lockstep-server
// --sessions hosts its sessions, over real file descriptors (pipes) and the real clock. The
// checks count runs and order them; none bounds how long anything took. And enter_realtime().
#include <doctest/doctest.h>

#include <fcntl.h>
#include <sched.h>
#include <unistd.h>

#include <cstdint>
#include <string>
#include <thread>
#include <vector>

#include "lockstep/clock.hpp"
#include "lockstep/event_loop.hpp"

using namespace lockstep;

namespace {
struct Pipe {
  int fd[2] = {-1, -1};
  Pipe() { REQUIRE(pipe2(fd, O_NONBLOCK | O_CLOEXEC) == 0); }
  ~Pipe() {
    close(fd[0]);
    close(fd[1]);
  }
  void poke() const { REQUIRE(write(fd[1], "x", 1) == 1); }
  [[nodiscard]] int drain() const {
    char buf[64];
    int n = 0;
    for (ssize_t r; (r = read(fd[0], buf, sizeof buf)) > 0;) n += static_cast<int>(r);
    return n;
  }
};
constexpr std::int64_t kMs = 1'000'000;
}  // namespace

TEST_CASE("run_event_loops runs each loop at its own deadlines and ends when all are done") {
  Pipe a, b;
  const std::int64_t start = monotonic_ns();
  std::vector<std::vector<std::int64_t>> ran(2);
  const std::int64_t period[2] = {2 * kMs, 5 * kMs};
  const std::size_t runs[2] = {12, 4};
  run_event_loops(
      {a.fd[0], b.fd[0]},
      [&](std::size_t i, std::int64_t now) {
        ran[i].push_back(now);
        return Wake{start + period[i] * static_cast<std::int64_t>(ran[i].size()), false};
      },
      [&](std::size_t i) { return ran[i].size() >= runs[i]; });
  // Each ran exactly as often as it asked, never before the time it asked for.
  for (std::size_t i = 0; i < 2; ++i) {
    CHECK(ran[i].size() == runs[i]);
    for (std::size_t k = 1; k < ran[i].size(); ++k) CHECK(ran[i][k] >= start + period[i] * static_cast<std::int64_t>(k));
  }
}

TEST_CASE("run_event_loops wakes a loop for its readable socket only while it asks to be") {
  Pipe watched, unwatched;
  int watched_runs = 0, unwatched_runs = 0, received = 0;
  std::int64_t end = 0;
  bool poked = false;
  run_event_loops(
      {watched.fd[0], unwatched.fd[0]},
      [&](std::size_t i, std::int64_t now) {
        if (end == 0) end = now + 60 * kMs;
        if (i == 0) {
          ++watched_runs;
          received += watched.drain();
          // Far deadline: only readability can run it again.
          return Wake{end, true};
        }
        ++unwatched_runs;
        // Its socket stays readable and unread: a loop that does not ask to be woken by it must
        // not be run over and over (level-triggered, it would spin the thread).
        if (!poked) {
          unwatched.poke();
          watched.poke();
          poked = true;
        }
        return Wake{now + 10 * kMs, false};
      },
      [&](std::size_t i) { return (i == 0 ? received == 1 : monotonic_ns() >= end) && end != 0; });
  CHECK(received == 1);
  CHECK(watched_runs >= 2);  // the first run, then the poke's
  CHECK(watched_runs <= 3);
  // Runs at its 10 ms deadlines within 60 ms: about 7; thousands if its readable pipe woke it.
  CHECK(unwatched_runs <= 10);
  CHECK(unwatched_runs >= 2);
}

TEST_CASE("run_event_loops takes loops that are done from the start, and a loop without a socket") {
  Pipe a;
  int runs = 0;
  run_event_loops(
      {a.fd[0], -1}, [&](std::size_t, std::int64_t now) { return ++runs, Wake{now + kMs, true}; },
      [&](std::size_t i) { return i == 0 || runs >= 3; });
  CHECK(runs == 3);
}

TEST_CASE("run_event_loops counts how late each sleep toward a deadline woke, and not the waits its own work overran") {
  Pipe a;
  Histogram delay;
  int runs = 0;
  run_event_loops(
      {a.fd[0]},
      [&](std::size_t, std::int64_t now) {
        ++runs;
        // The third run's work runs past its own next deadline: the wait after it sleeps not at
        // all, and is not the machine's delay.
        const std::int64_t next = now + 20 * kMs;
        if (runs == 3)
          while (monotonic_ns() < next + kMs) {
          }
        return Wake{next, false};
      },
      [&](std::size_t) { return runs >= 6; }, &delay);
  // Six runs, five waits between them, one of which did not sleep: four counted (fewer only if
  // the thread lost the processor for 20 ms between a run and its wait, which then sleeps not).
  CHECK(delay.count() <= 4);
  CHECK(delay.count() >= 1);
}

TEST_CASE("enter_realtime puts the calling thread alone at SCHED_FIFO, or says why not and changes nothing") {
  std::string why;
  if (enter_realtime(&why)) {
    CHECK((sched_getscheduler(0) & ~SCHED_RESET_ON_FORK) == SCHED_FIFO);
    int started = -1;
    std::thread([&] { started = sched_getscheduler(0); }).join();
    CHECK(started == SCHED_OTHER);  // a thread started after it is ordinary
    leave_realtime();
    CHECK(sched_getscheduler(0) == SCHED_OTHER);
  } else {
    CHECK(why.find("CAP_SYS_NICE") != std::string::npos);
    CHECK(sched_getscheduler(0) == SCHED_OTHER);
  }
}

TEST_CASE("run_event_loops runs the loops due in a wake earliest deadline first, not in their order") {
  Pipe a, b;
  const std::int64_t start = monotonic_ns();
  std::vector<std::size_t> order;
  run_event_loops(
      {a.fd[0], b.fd[0]},
      [&](std::size_t i, std::int64_t) {
        order.push_back(i);
        if (order.size() > 2) return Wake{start + 100 * kMs, false};
        if (i == 0) return Wake{start + 5 * kMs, false};
        // Loop 1's first run overruns both deadlines: the next pass finds both due, and loop 1's,
        // the earlier, has waited longer.
        while (monotonic_ns() < start + 6 * kMs) {
        }
        return Wake{start + 4 * kMs, false};
      },
      [&](std::size_t) { return order.size() >= 3; });
  // Loop 1 ends after its second run, loop 0 after its.
  CHECK(order == std::vector<std::size_t>{0, 1, 1, 0});
}
