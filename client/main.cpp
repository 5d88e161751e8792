// lockstep-client: joins a session. Parses options and wires the parts together.
#include <CLI/CLI.hpp>

#include "lockstep/cli.hpp"

#include <cerrno>
#include <cstdio>
#include <cstring>
#include <fstream>
#include <iterator>

#include "lockstep/clock.hpp"
#include "lockstep/client.hpp"
#include "lockstep/client_session.hpp"
#include "lockstep/event_loop.hpp"
#include "lockstep/log.hpp"
#include "lockstep/games.hpp"
#include "lockstep/module.hpp"
#include "lockstep/state_hash.hpp"
#include "lockstep/transport.hpp"
#include "lockstep/version.hpp"
#include "front.hpp"

using namespace lockstep;

namespace {

// Everything the command line says.
struct Options {
  ClientConfig cfg;
  std::string connect, connect_token, hash_log_path, render = "none", summary_path, rejoin_file;
  std::uint64_t bot_seed = 0;
  bool bot = false;
  double fps = 60;
  bool fps_given = false;
  std::uint32_t predict = 0;
  std::string sim = std::string(default_module().name), sim_lib;
};

void declare_options(CLI::App& app, Options& o) {
  using lockstep::cli::finite;
  using lockstep::cli::unsigned_number;
  ClientConfig& cfg = o.cfg;
  app.add_option("--connect", o.connect, "server to join, HOST:PORT (default: the connect token's servers in turn, or 127.0.0.1:7777)");
  app.add_option("--connect-token", o.connect_token,
                 "join with this connect token (a file from lockstep-token or the game's matchmaker): the join and "
                 "all play are sealed");
  app.add_option("--sim", o.sim, "the simulation module, as the server's (built in by name; 'list' lists them)")
      ->capture_default_str();
  app.add_option("--sim-lib", o.sim_lib, "load the simulation module from this shared library, as the server does");
  app.add_option("--name", cfg.name, "display name (1-32 printable ASCII characters)")->capture_default_str();
  app.add_option("--bot", o.bot_seed, "play with deterministic pseudo-random input from this seed")->check(unsigned_number())
      ->each([&o](const std::string&) { o.bot = true; });
  app.add_option("--ticks", cfg.last_tick, "leave cleanly after this tick (0: stay to the end)")->check(unsigned_number())
      ->capture_default_str();
  app.add_option("--hash-log", o.hash_log_path, "write '<tick> <hash>' per executed tick to this file");
  app.add_option("--desync-dir", cfg.desync_dir, "when the server reports this client diverged, write a desync "
                 "bundle of this client's states here (desync-<tick>-<slot>.client.bundle)");
  app.add_flag("--inject-forged-states", cfg.inject_forged_states,
               "test hook: answer a relay server's state requests with one byte changed");
  app.add_option("--inject-desync-at", cfg.inject_desync_at, "test hook: flip the lowest bit of one stored value after this tick (Simulation::perturb)")
      ->check(unsigned_number());
  app.add_option("--token", cfg.token, "join secret");
  app.add_option("--state-history", cfg.state_history,
                 "ticks of past states kept to answer desync probes, at least (more as the round trip asks, up to "
                 "--state-history-max)")->check(CLI::Range(std::size_t{1}, std::size_t{100000}))->capture_default_str();
  app.add_option("--state-history-max", cfg.state_history_max, "ticks of past states kept at most")
      ->check(CLI::Range(std::size_t{1}, std::size_t{100000}))->capture_default_str();
  app.add_option("--summary", o.summary_path, "write the JSON summary to this file instead of stdout");
  app.add_flag("--spectate", cfg.spectate, "join without a player slot");
  app.add_option("--rejoin", cfg.rejoin_secret, "come back into a running session's slot with its rejoin secret");
  app.add_option("--rejoin-file", o.rejoin_file,
                 "keep the rejoin secret in this file: read it (if present) to rejoin, write it at the welcome");
  app.add_option("--render", o.render,
                 "how to draw: none (headless: frames run on arrival unless --fps is given), tty (terminal), sdl (window)")
      ->check(CLI::IsMember({"none", "tty", "sdl"}))->capture_default_str();
  app.add_option("--predict", o.predict,
                 "draw a predicted world up to N ticks ahead of the verified one, own input at once (0: lockstep "
                 "only); hashes, reports and probes stay on the verified world")
      ->check(unsigned_number())->check(CLI::Range(0u, 200u))->capture_default_str();
  app.add_option("--fps", o.fps, "frame rate cap (0: uncapped)")->check(finite())->check(CLI::Range(0.0, 1000.0))
      ->capture_default_str()->each([&o](const std::string&) { o.fps_given = true; });
}

// The renderer --render asks for (nullptr for none); false when it cannot be had.
bool make_renderer(const Options& o, std::unique_ptr<render::Renderer>* out) {
  if (o.render == "tty") *out = render::make_tty_renderer();
  if (o.render != "sdl") return true;
  if (!render::sdl_available()) {
    LOCKSTEP_LOG_ERROR("--render sdl: this build has no SDL2 (install libsdl2-dev and rebuild)");
    return false;
  }
  *out = render::make_sdl_renderer(o.fps == 0, 900, 900);
  return true;
}

// The session's end, in the log and as the JSON summary.
int report(const Client& client, const ClientFront& front, const std::string& summary_path) {
  const ClientSession& session = client.session();
  const ClientStats& st = session.stats();
  if (st.lead_ns > 0) LOCKSTEP_LOG_INFO("input lead settled at %.1f ms", static_cast<double>(st.lead_ns) / 1e6);
  if (st.input_latency.count() > 0)
    LOCKSTEP_LOG_INFO("input latency (sampled -> executed): p50 %.0f us, p99 %.0f us, max %lld us over %llu ticks",
                      st.input_latency.percentile_us(50), st.input_latency.percentile_us(99),
                      static_cast<long long>(st.input_latency.max_us()),
                      static_cast<unsigned long long>(st.input_latency.count()));
  if (session.exit_code() == 0) LOCKSTEP_LOG_INFO("%s", session.end_message().c_str());
  else LOCKSTEP_LOG_ERROR("%s", session.end_message().c_str());
  if (!redirect_summary(summary_path)) return 1;
  Json summary = client_summary(session, front.figures());
  // The view: how far behind their due time frames were executed, and how many drawn frames
  // rested at alpha 1 (stepped instead of blended).
  const ClientFigures f = client.figures();
  summary["playout_ms"] = round_to(static_cast<double>(f.playout_ns) / 1e6, 2);
  summary["frames_at_alpha_1"] = f.frames_clamped;
  summary["input_to_screen_ms"] = Json{{"p50", round_to(f.input_to_screen_p50_ms, 2)}, {"p99", round_to(f.input_to_screen_p99_ms, 2)}};
  if (f.predict > 0 || f.predicted_ticks > 0)
    summary["prediction"] = Json{{"depth", f.predict},
                                 {"predicted_ticks", f.predicted_ticks},
                                 {"rebuilds", f.rebuilds},
                                 {"verified_predictions", f.verified_predictions},
                                 {"mispredictions", f.mispredictions},
                                 {"cpu_ms", round_to(static_cast<double>(f.predict_ns) / 1e6, 2)}};
  summary["alpha_clamped_share"] =
      f.frames_drawn ? round_to(static_cast<double>(f.frames_clamped) / static_cast<double>(f.frames_drawn), 4) : 0.0;
  std::printf("%s\n", json_text(summary).c_str());
  std::fflush(stdout);
  return session.exit_code();
}

// Joins one session and plays it to its end.
// Joins one session and plays it to its end; `stale` is set when the secret read from
// --rejoin-file was refused as unknown (the file is from an earlier session, or its seat is gone).
int play_once(Options o, const Module* module, bool fresh, bool* stale) {
  ClientConfig& cfg = o.cfg;
  cfg.factory = module->create;
  cfg.module_name = std::string(module->name);
  cfg.libraries.assign(module->libraries.begin(), module->libraries.end());
  cfg.code = module->code;
  cfg.code_fma = module->fma_instructions;
  if (!o.connect_token.empty()) {
    std::ifstream in(o.connect_token, std::ios::binary);
    const std::vector<std::uint8_t> bytes((std::istreambuf_iterator<char>(in)), std::istreambuf_iterator<char>());
    std::string error;
    ConnectToken token;
    if (!in.good() && !in.eof()) error = "cannot read it";
    if (!error.empty() || !read_connect_token(bytes, &token, &error)) {
      LOCKSTEP_LOG_ERROR("--connect-token %s: %s", o.connect_token.c_str(), error.c_str());
      return 2;
    }
    cfg.connect_token = std::move(token);
  }
  if (o.connect.empty() && cfg.connect_token) cfg.host.clear();  // the token's servers, in turn
  else if (o.connect.empty()) o.connect = "127.0.0.1:7777";
  if (!o.connect.empty() && !split_host_port(o.connect, &cfg.host, &cfg.port)) {
    LOCKSTEP_LOG_ERROR("--connect wants HOST:PORT, got '%s'", o.connect.c_str());
    return 2;
  }
  if (cfg.spectate && o.bot) {
    LOCKSTEP_LOG_ERROR("--spectate and --bot exclude each other");
    return 2;
  }
  // The stock client is the embedding API's first user: a Client steps the frames on its playout
  // schedule within its budget, at any frame rate; a renderer (or an explicit --fps) draws at
  // --fps, blending the previous and current state at the client's alpha.
  std::unique_ptr<render::Renderer> renderer;
  if (!make_renderer(o, &renderer)) return 2;
  bool secret_from_file = false;
  if (!o.rejoin_file.empty() && cfg.rejoin_secret.empty() && !fresh) {
    std::ifstream in(o.rejoin_file);
    std::getline(in, cfg.rejoin_secret);
    secret_from_file = !cfg.rejoin_secret.empty();
  }
  HashLogWriter hash_log;
  if (!o.hash_log_path.empty() && !hash_log.open(o.hash_log_path, !cfg.rejoin_secret.empty())) {
    LOCKSTEP_LOG_ERROR("cannot write --hash-log %s: %s", o.hash_log_path.c_str(), std::strerror(errno));
    return 2;
  }
  Error error;
  ClientOptions options;
  options.session = cfg;
  options.input_size = module->input_size;
  options.predict = o.predict;
  auto client = Client::create(options, &error);
  if (!client) {
    LOCKSTEP_LOG_ERROR("%s", option_sentence(error).c_str());
    return exit_code(error.kind);
  }
  ClientSession* session = &client->session();
  if (hash_log.is_open()) session->set_hash_log(&hash_log);
  std::string begin_error;
  if (renderer && !renderer->begin(&begin_error)) {
    LOCKSTEP_LOG_ERROR("%s", begin_error.c_str());
    return 1;
  }
  if (o.render == "tty") log_setup("lockstep-client", LogLevel::Error);  // the screen is the terminal's now
  FrontConfig front_cfg;
  front_cfg.frame_period_ns = o.fps > 0 ? static_cast<std::int64_t>(1e9 / o.fps) : 0;
  front_cfg.drawing = o.render != "none" || o.fps_given;
  front_cfg.status_lines = o.render != "tty";
  front_cfg.rejoin_file = o.rejoin_file;
  front_cfg.module = module;
  ClientFront front(*client, std::move(renderer), front_cfg, monotonic_ns());
  // A bot's input is a function of the tick; a player's is what the front hands the client.
  if (o.bot) client->set_input_source([module, seed = o.bot_seed](Tick t, PlayerTick* out) { module->bot(seed, t, out); });
  install_stop_signals();
  run_event_loop(
      session->fd(), [&](std::int64_t now) { return front.update(now, g_stop_requested); },
      [&] { return session->finished(); });
  if (front.renderer()) front.renderer()->end();
  log_setup("lockstep-client", LogLevel::Info);
  hash_log.close();
  *stale = secret_from_file && session->stats().refusal == "BadRequest" &&
           session->end_message().find("unknown rejoin secret") != std::string::npos;
  if (*stale) return exit_code(ErrorKind::Connection);
  return report(*client, front, o.summary_path);
}

// A stale --rejoin-file does not end the client: it joins afresh once, as a new player (which the
// session allows in its lobby, or running with --allow-late-join), and the file then holds the
// new seat's secret.
int play(Options o) {
  int code = 0;
  const Module* module = module_from_options(o.sim, o.sim_lib, &code);  // once: one library per process
  if (!module) return code;
  bool stale = false;
  code = play_once(o, module, /*fresh=*/false, &stale);
  if (!stale) return code;
  LOCKSTEP_LOG_WARN("--rejoin-file %s holds a secret this session does not know (an earlier session's, or a seat "
                    "given up): joining afresh as a new player", o.rejoin_file.c_str());
  return play_once(o, module, /*fresh=*/true, &stale);
}

}  // namespace

int main(int argc, char** argv) {
  log_setup("lockstep-client");
  CLI::App app{"lockstep-client: joins a lockstep session, sends inputs, steps confirmed input frames and reports\n"
               "per-tick state hashes.\n"
               "Exit codes: 0 finished, 1 runtime failure, 2 bad usage, 3 desync detected, 4 connection failure."};
  app.set_version_flag("--version", std::string("lockstep-client ") + kVersion + " (protocol " +
                                        std::to_string(kProtocolVersion) + ")");
  return lockstep::cli::main_with<Options>(app, argc, argv, declare_options, play);
}
