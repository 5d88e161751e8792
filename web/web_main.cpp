// lockstep-web: the client in the browser. The page (page/index.html) calls these functions: it
// starts a client from the page's address, calls ls_frame() at requestAnimationFrame's rate, and
// draws the shapes each frame leaves. Everything between is the stock client's: the embedding
// API's Client steps the frames on its playout schedule, ClientFront draws at the client's alpha
// (the predicted world with prediction on) and turns the keys into the module's input, and the
// session speaks to the server's WebSocket door (web_transport.cpp).
#include <emscripten/emscripten.h>

#include <algorithm>
#include <memory>
#include <string>
#include <vector>

#include <nlohmann/json.hpp>

#include "front.hpp"
#include "step_timing.hpp"
#include "lockstep/client.hpp"
#include "lockstep/clock.hpp"
#include "lockstep/games.hpp"
#include "lockstep/linked_module.hpp"
#include "lockstep/log.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/token_file.hpp"
#include "web_transport.hpp"

namespace lockstep {
namespace {

// The canvas's side of a renderer: the shapes of the latest frame, flattened for the page, and
// the keys the page reports.
class CanvasRenderer final : public render::Renderer {
 public:
  bool begin(std::string*) override { return true; }
  void draw(const DrawList& shapes, float width, float height, const render::Hud& hud) override {
    // Seven numbers a shape: kind, x, y, a, b, then its colour as 0xRRGGBB and 0.
    flat_.clear();
    for (const DrawShape& s : shapes) {
      if (s.kind == DrawShape::Kind::Text) continue;
      const render::Rgb c = render::colour_of(s, hud.slot);
      flat_.insert(flat_.end(), {static_cast<float>(s.kind), s.x, s.y, s.a, s.b,
                                 static_cast<float>((c.r << 16) | (c.g << 8) | c.b), 0.0f});
    }
    width_ = width;
    height_ = height;
  }
  render::Keys poll_keys(std::int64_t) override { return keys_; }
  void end() override {}

  std::vector<float> flat_;
  float width_ = 0, height_ = 0;
  render::Keys keys_;
};

struct Web {
  const Module* module = nullptr;
  std::unique_ptr<Client> client;
  std::unique_ptr<ClientFront> front;
  CanvasRenderer* canvas = nullptr;
  HashLogWriter hash_log;
  std::string text;  // the last string handed to the page
  Tick first_tick = 0;
  std::int64_t first_tick_at = 0;
  bool over = false;
};
Web g;

// The games this page has, for an error: its own first, then the built-in ones.
std::string page_games() {
  std::string out;
#ifdef LOCKSTEP_LINKED_MODULE
  std::string error;
  if (const Module* linked = linked_module(&error)) out = std::string(linked->name) + " (its own), ";
#endif
  for (const Module* m : builtin_modules()) out += std::string(m->name) + " ";
  if (!out.empty()) out.pop_back();
  return out;
}

// The game `sim` names: a built-in one, or this page's own (a team's module linked into its build,
// LOCKSTEP_LINKED_MODULES), which an empty name also means; without one, empty means the arena.
const Module* page_module(const char* sim) {
  const std::string name = sim ? sim : "";
#ifdef LOCKSTEP_LINKED_MODULE
  std::string error;
  const Module* linked = linked_module(&error);
  if (!linked) {
    LOCKSTEP_LOG_ERROR("%s", error.c_str());
    return nullptr;
  }
  if (name.empty() || name == linked->name) return linked;
#else
  if (name.empty()) return &default_module();
#endif
  const Module* m = find_module(name);
  if (!m) LOCKSTEP_LOG_ERROR("unknown game '%s': this page has %s", name.c_str(), page_games().c_str());
  return m;
}

}  // namespace
}  // namespace lockstep

using namespace lockstep;

extern "C" {

/// Starts joining `host`:`port` (the WebSocket door) as `name`. bot: 0 steers with the keys,
/// else the module's bot with that seed. token (token_len bytes, 0: none): a connect token file's
/// bytes, for a server that admits only players with one (through wss://, PROTOCOL.md §17).
/// rejoin: a rejoin secret from an earlier welcome ("" : join afresh), to come back into that seat
/// after a lost connection or a reload; a client already started is ended and replaced (its hash
/// log goes on). Returns 0, or 2 for bad options (logged).
/// Whether the next ls_start offers the server a data channel for play (default 1; ?datagrams=0).
EMSCRIPTEN_KEEPALIVE void ls_set_datagrams(int on) { set_web_datagrams(on != 0); }

EMSCRIPTEN_KEEPALIVE int ls_start(const char* host, int port, int secure, const char* name, const char* sim,
                                  int predict, unsigned bot, unsigned inject_desync_at, const std::uint8_t* token,
                                  int token_len, const char* rejoin) {
  log_setup("lockstep-web");
  const bool again = g.client != nullptr;
  g.front.reset();
  g.canvas = nullptr;
  g.client.reset();
  g.over = false;
  g.first_tick = 0;
  g.first_tick_at = 0;
  g.module = page_module(sim);
  if (!g.module) return 2;
  set_web_secure(secure != 0);
  ClientOptions options;
  ClientConfig& cfg = options.session;
  cfg.host = host;
  cfg.port = static_cast<std::uint16_t>(port);
  cfg.name = name;
  cfg.factory = g.module->create;
  cfg.module_name = std::string(g.module->name);
  cfg.libraries.assign(g.module->libraries.begin(), g.module->libraries.end());
  cfg.inject_desync_at = inject_desync_at;
  cfg.rejoin_secret = rejoin ? rejoin : "";
  if (token_len > 0) {
    // The file's parts are not checked against their BLAKE2b here (no libsodium in a page): a
    // damaged token is refused by the server (BadToken) instead.
    ConnectToken t;
    TokenFileParts parts;
    std::string error;
    if (!parse_connect_token({token, static_cast<std::size_t>(token_len)}, &t, &parts, &error)) {
      LOCKSTEP_LOG_ERROR("the connect token: %s", error.c_str());
      return 2;
    }
    cfg.connect_token = std::move(t);
  }
  options.input_size = g.module->input_size;
  options.predict = static_cast<std::uint32_t>(predict);
  Error error;
  g.client = Client::create(options, &error);
  if (!g.client) {
    LOCKSTEP_LOG_ERROR("%s", error.detail.c_str());
    return 2;
  }
  // The page reads the hash log from the in-memory file system: one line a tick, as native clients write.
  g.hash_log.open("/hashes.log", again);
  g.client->session().set_hash_log(&g.hash_log);
  if (bot) {
    const Module* m = g.module;
    g.client->set_input_source([m, seed = std::uint64_t{bot}](Tick t, PlayerTick* out) { m->bot(seed, t, out); });
  }
  auto canvas = std::make_unique<CanvasRenderer>();
  g.canvas = canvas.get();
  FrontConfig front_cfg;
  front_cfg.module = g.module;
  front_cfg.drawing = true;  // every frame the page asks for, at requestAnimationFrame's rate
  front_cfg.frame_period_ns = 0;
  g.front = std::make_unique<ClientFront>(*g.client, std::move(canvas), front_cfg, monotonic_ns());
  return 0;
}

/// One animation frame: the session, the frames due, and a drawing. Returns -1 while the session
/// runs, then the client's exit code.
EMSCRIPTEN_KEEPALIVE int ls_frame() {
  if (!g.front) return 2;
  if (g.over) return g.client->exit_code();
  const std::int64_t now = monotonic_ns();
  g.front->update(now, false);
  const Tick t = g.client->session().executed_tick();
  if (t > 0 && g.first_tick == 0) {
    g.first_tick = t;
    g.first_tick_at = now;
  }
  if (g.client->finished()) {
    g.over = true;
    g.hash_log.close();
    return g.client->exit_code();
  }
  return -1;
}

/// The page's keys: a lockstep::Key (0 up, 1 down, 2 left, 3 right, 4 space, ...) held or let go.
EMSCRIPTEN_KEEPALIVE void ls_key(int key, int held) {
  if (!g.canvas || key < 0 || key >= static_cast<int>(Key::Count)) return;
  g.canvas->keys_.controls.held.set(static_cast<std::size_t>(key), held != 0);
}

/// The latest frame's shapes (7 floats each), their count, and the world's size.
EMSCRIPTEN_KEEPALIVE const float* ls_shapes() { return g.canvas ? g.canvas->flat_.data() : nullptr; }
EMSCRIPTEN_KEEPALIVE int ls_shape_count() { return g.canvas ? static_cast<int>(g.canvas->flat_.size() / 7) : 0; }
EMSCRIPTEN_KEEPALIVE float ls_world_width() { return g.canvas ? g.canvas->width_ : 0; }
EMSCRIPTEN_KEEPALIVE float ls_world_height() { return g.canvas ? g.canvas->height_ : 0; }

/// The rejoin secret from the welcome ("" before it), which the page keeps in sessionStorage.
EMSCRIPTEN_KEEPALIVE const char* ls_rejoin_secret() {
  g.text = g.client ? g.client->rejoin_secret() : "";
  return g.text.c_str();
}

/// 1 when the session ended because the network went away (no connection, the connection lost,
/// the server silent), which the page retries with its rejoin secret; 0 otherwise.
EMSCRIPTEN_KEEPALIVE int ls_connection_lost() { return g.client && g.client->session().connection_lost() ? 1 : 0; }

/// Leaves the session (the page is closing).
EMSCRIPTEN_KEEPALIVE void ls_leave() {
  if (g.client) g.client->leave("the page closed");
}

/// The client's figures as JSON: the tick, ticks a second, input to screen, the step time, the
/// wire's bytes, the end.
EMSCRIPTEN_KEEPALIVE const char* ls_figures() {
  nlohmann::json j;
  if (g.client) {
    const ClientSession& s = g.client->session();
    const ClientFigures f = g.client->figures();
    const NetTraffic traffic = s.traffic();
    const std::int64_t now = monotonic_ns();
    const double since_first = static_cast<double>(now - g.first_tick_at) / 1e9;
    j["tick"] = s.executed_tick();
    j["slot"] = f.slot;
    j["ticks_per_second"] = g.first_tick_at && since_first > 0 ? (s.executed_tick() - g.first_tick) / since_first : 0.0;
    j["input_to_screen_ms"] = {{"p50", f.input_to_screen_p50_ms}, {"p99", f.input_to_screen_p99_ms}};
    j["predict"] = f.predict;
    // How far the predicted world runs ahead of the verified one now: the round trip's worth of
    // this player's sampled inputs, up to the limit (predict).
    j["predicted_ahead"] = g.client->predicted() && g.client->predicted()->tick() > s.executed_tick()
                               ? g.client->predicted()->tick() - s.executed_tick()
                               : 0;
    j["rtt_ms"] = f.rtt_ms;
    j["play_path"] = web_play_path();
    j["datagrams"] = {{"sent", web_datagrams_sent()}, {"received", web_datagrams_received()}};
    j["loss"] = f.loss;
    j["players"] = s.players();
    j["game"] = std::string(g.module->name);
    j["controls"] = std::string(g.module->controls_help);
    j["mispredictions"] = f.mispredictions;
    j["frames_drawn"] = f.frames_drawn;
    j["frames_at_alpha_1"] = f.frames_clamped;
    j["playout_ms"] = static_cast<double>(f.playout_ns) / 1e6;
    j["lead_ms"] = static_cast<double>(f.lead_ns) / 1e6;
    j["inputs_filled"] = f.inputs_filled;
    j["bytes"] = {{"sent", traffic.bytes_sent}, {"received", traffic.bytes_received}};
    j["messages"] = {{"sent", traffic.packets_sent}, {"received", traffic.packets_received}};
    j["hash"] = hash_hex(s.last_hash());
    j["desynced"] = s.desynced();
    j["finished"] = g.client->finished();
    j["exit_code"] = g.client->finished() ? g.client->exit_code() : -1;
    j["end_message"] = g.client->finished() ? g.client->end_message() : "";
  }
  // The end message is the server's text: bytes that are not UTF-8 are replaced, never thrown on.
  g.text = j.dump(-1, ' ', false, nlohmann::json::error_handler_t::replace);
  return g.text.c_str();
}

/// The step-time workload of bench/step_timing.hpp on the game `sim` (as ls_start names it) for `ticks` ticks:
/// the final hash and the median and 90th percentile step time, as lockstep-bench --only web
/// measures it natively.
EMSCRIPTEN_KEEPALIVE const char* ls_bench_step(const char* sim, int ticks) {
  const Module* m = page_module(sim);
  nlohmann::json j;
  if (m) {
    const bench::StepTiming s = bench::time_steps(*m, ticks);
    j = {{"sim", sim}, {"ticks", s.ticks}, {"hash", hash_hex(s.hash)}, {"step_us_median", s.median_us},
         {"step_us_p90", s.p90_us}};
  }
  g.text = j.dump();
  return g.text.c_str();
}

}  // extern "C"
