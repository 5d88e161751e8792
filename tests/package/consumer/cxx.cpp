// The C++ API from an installed package, public headers only: a built-in module's world stepped
// on bot frames, then a Host and a Client of that module in one process over loopback, with the
// game's own loop and clock, until the session's last tick. Prints one line; exits 0 when the
// client's state equals the host's at the end. Built twice: against the static and the shared
// library (whose symbols are hidden but for the API).
#include <lockstep/client.hpp>
#include <lockstep/games.hpp>
#include <lockstep/host.hpp>
#include <lockstep/module.hpp>

#include <chrono>
#include <cstdio>
#include <thread>

namespace {
std::int64_t now_ns() {
  return std::chrono::duration_cast<std::chrono::nanoseconds>(std::chrono::steady_clock::now().time_since_epoch()).count();
}
}  // namespace

int main() {
  using namespace lockstep;
  const Module& m = default_module();
  WorldParams world;
  world.players = 2;
  auto sim = m.create(world);
  InputFrame f;
  for (Tick t = 1; t <= 100; ++t) {
    f.reset(t, 2, m.input_size);
    f.present = 3;
    for (std::uint32_t p = 0; p < 2; ++p) {
      PlayerTick pt = blank_tick(m);
      m.bot(p + 1, t, &pt);
      std::copy(pt.input.begin(), pt.input.end(), f.input(p).begin());
      f.add_commands(p, pt.commands);
    }
    sim->step(f);
  }
  // A session of that module: the game's loop drives a Host and a Client with its own clock.
  ServerConfig host_cfg;
  host_cfg.port = 0;
  host_cfg.players = 1;
  host_cfg.last_tick = 100;
  host_cfg.factory = m.create;
  Error err;
  auto host = Host::create(host_cfg, &err);
  if (!host) return std::fprintf(stderr, "host: %s\n", err.detail.c_str()), 1;
  ClientOptions opts;
  opts.session.port = host->port();
  opts.session.name = "consumer";
  opts.session.factory = m.create;
  opts.input_size = m.input_size;
  auto client = Client::create(opts, &err);
  if (!client) return std::fprintf(stderr, "client: %s\n", err.detail.c_str()), 1;
  const std::int64_t give_up = now_ns() + 20'000'000'000;
  while (!(host->finished() && client->finished()) && now_ns() < give_up) {
    host->update(now_ns());
    client->update(now_ns());
    std::this_thread::sleep_for(std::chrono::milliseconds(1));
  }
  std::size_t events = host->take_events().size();
  const bool ok = sim->tick() == 100 && host->exit_code() == 0 && client->exit_code() == 0 && client->current() &&
                  client->current()->hash() == host->simulation()->hash() && events >= 2;
  std::printf("%.*s tick %u hash %016llx; a hosted session of %u ticks %s (%zu host events)\n",
              static_cast<int>(m.name.size()), m.name.data(), sim->tick(), static_cast<unsigned long long>(sim->hash()),
              host->session().executed_tick(), ok ? "ends hash-equal" : "does NOT end hash-equal", events);
  return ok ? 0 : 1;
}
