// The C++ layers from an installed package: a built-in module's world stepped on bot frames,
// and a JoinRequest through the wire format and back. Prints one line; exits 0 when they hold.
#include <lockstep/games.hpp>
#include <lockstep/module.hpp>
#include <lockstep/protocol.hpp>
#include <lockstep/version.hpp>

#include <cstdio>

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
  // The net layer: a JoinRequest encoded and verified by the decoder.
  const auto bytes = protocol::join_request(kProtocolVersion, sim->fingerprint(), "", "consumer", false);
  protocol::DecodeError error{};
  const auto* msg = protocol::decode(bytes, &error);
  const bool ok = sim->tick() == 100 && msg && msg->body_as_JoinRequest() &&
                  msg->body_as_JoinRequest()->fingerprint() == sim->fingerprint();
  std::printf("%.*s tick %u hash %016llx, a JoinRequest %s\n", static_cast<int>(m.name.size()), m.name.data(),
              sim->tick(), static_cast<unsigned long long>(sim->hash()), ok ? "round-trips" : "does NOT round-trip");
  return ok ? 0 : 1;
}
