// The terminal view: the arena drawn with ANSI escapes at interpolated positions, a heads-up
// line, and arrow keys or WASD to steer. The terminal is restored on exit, on Ctrl-C and on a
// crash signal.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <cstdio>
#include <cstring>
#include <string>

#include "lockstep/state_hash.hpp"
#include "render.hpp"

namespace lockstep::render {

Viewport Viewport::fit(float world_w, float world_h, double w, double h) {
  Viewport v;
  v.scale = std::min(w / world_w, h / world_h);
  v.off_x = (w - world_w * v.scale) / 2;
  v.off_y = (h - world_h * v.scale) / 2;
  return v;
}

namespace {

termios g_saved;
volatile sig_atomic_t g_active = 0;
constexpr char kRestore[] = "\x1b[0m\x1b[?25h\x1b[?1049l";

void restore_terminal() {
  if (!g_active) return;
  g_active = 0;
  (void)!write(STDOUT_FILENO, kRestore, sizeof kRestore - 1);
  tcsetattr(STDIN_FILENO, TCSANOW, &g_saved);
}

extern "C" void on_crash(int sig) {
  restore_terminal();  // async-signal-safe: write and tcsetattr only
  signal(sig, SIG_DFL);
  raise(sig);
}

class TtyRenderer final : public Renderer {
 public:
  ~TtyRenderer() override { end(); }

  bool begin(std::string* error) override {
    if (!isatty(STDIN_FILENO) || !isatty(STDOUT_FILENO)) {
      *error = "--render tty needs a terminal on stdin and stdout";
      return false;
    }
    tcgetattr(STDIN_FILENO, &g_saved);
    termios raw = g_saved;
    raw.c_lflag &= static_cast<tcflag_t>(~(ICANON | ECHO));  // keep ISIG: Ctrl-C stays a clean stop
    raw.c_cc[VMIN] = 0;
    raw.c_cc[VTIME] = 0;
    tcsetattr(STDIN_FILENO, TCSANOW, &raw);
    g_active = 1;
    for (int sig : {SIGSEGV, SIGABRT, SIGBUS, SIGFPE, SIGILL}) signal(sig, on_crash);
    std::atexit(restore_terminal);
    std::fputs("\x1b[?1049h\x1b[?25l\x1b[2J", stdout);
    std::fflush(stdout);
    return true;
  }

  void draw(const std::vector<DrawDisc>& discs, float width, float height, const Hud& hud) override {
    winsize ws{};
    if (ioctl(STDOUT_FILENO, TIOCGWINSZ, &ws) != 0 || ws.ws_col < 20 || ws.ws_row < 6) {
      ws.ws_col = 80;
      ws.ws_row = 24;
    }
    const int cols = ws.ws_col, rows = ws.ws_row - 1;  // one line for the heads-up
    const int inner_w = cols - 2, inner_h = rows - 2;
    // Terminal cells are about twice as tall as wide: a world unit spans two columns per row.
    const Viewport v = Viewport::fit(width, height * 0.5f, inner_w, inner_h);
    grid_.assign(static_cast<std::size_t>(rows), std::string(static_cast<std::size_t>(cols), ' '));
    for (int c = 0; c < cols; ++c) grid_[0][c] = grid_[rows - 1][c] = '-';
    for (int r = 0; r < rows; ++r) grid_[r][0] = grid_[r][cols - 1] = '|';
    grid_[0][0] = grid_[0][cols - 1] = grid_[rows - 1][0] = grid_[rows - 1][cols - 1] = '+';
    auto put = [&](const DrawDisc& d, char ch) {
      const int cx = 1 + static_cast<int>(v.x(d.x));
      const int cy = 1 + static_cast<int>(v.y(d.y * 0.5f));
      if (cx >= 1 && cx < cols - 1 && cy >= 1 && cy < rows - 1) grid_[cy][cx] = ch;
    };
    for (const DrawDisc& d : discs)
      if (d.player < 0) put(d, 'o');
    for (const DrawDisc& d : discs)  // players on top
      if (d.player >= 0) put(d, d.player == hud.slot ? '@' : static_cast<char>('0' + d.player % 10));
    char line[256];
    std::snprintf(line, sizeof line, " tick %u  fps %.0f  alpha %.2f  rtt %u ms  buffer %zu  hash %s  %s  %s",
                  hud.tick, hud.fps, hud.alpha, hud.rtt_ms, hud.buffered, hash_hex(hud.hash).c_str(),
                  hud.desynced ? "DESYNC" : "in sync", hud.slot >= 0 ? "[arrows/WASD steer, q quits]" : "[spectating, q quits]");
    std::string out = "\x1b[H";
    out.reserve(static_cast<std::size_t>((cols + 1) * (rows + 1)) + 64);
    std::string hud_line(line);
    hud_line.resize(static_cast<std::size_t>(cols), ' ');
    out += hud_line;
    for (const std::string& r : grid_) {
      out += "\r\n";
      out += r;
    }
    std::fwrite(out.data(), 1, out.size(), stdout);
    std::fflush(stdout);
  }

  Keys poll_keys(std::int64_t now) override {
    Keys k;
    unsigned char buf[64];
    const ssize_t n = read(STDIN_FILENO, buf, sizeof buf);
    // A terminal reports presses, not releases: a press holds its axis for a short while,
    // and the terminal's key repeat keeps it held.
    constexpr std::int64_t kHold = 250'000'000;
    for (ssize_t i = 0; i < n; ++i) {
      const unsigned char c = buf[i];
      if (c == 27 && i + 2 < n && buf[i + 1] == '[') {
        const unsigned char a = buf[i + 2];
        i += 2;
        if (a == 'A') thrust_until_ = now + kHold, thrust_ = 127;
        if (a == 'B') thrust_until_ = now + kHold, thrust_ = -127;
        if (a == 'D') turn_until_ = now + kHold, turn_ = -127;
        if (a == 'C') turn_until_ = now + kHold, turn_ = 127;
        continue;
      }
      switch (c) {
        case 'w': case 'W': thrust_until_ = now + kHold; thrust_ = 127; break;
        case 's': case 'S': thrust_until_ = now + kHold; thrust_ = -127; break;
        case 'a': case 'A': turn_until_ = now + kHold; turn_ = -127; break;
        case 'd': case 'D': turn_until_ = now + kHold; turn_ = 127; break;
        case 'q': case 'Q': case 27: k.quit = true; break;
        default: break;
      }
    }
    k.input.thrust = now < thrust_until_ ? thrust_ : std::int8_t{0};
    k.input.turn = now < turn_until_ ? turn_ : std::int8_t{0};
    return k;
  }

  void end() override { restore_terminal(); }

 private:
  std::vector<std::string> grid_;
  std::int64_t thrust_until_ = 0, turn_until_ = 0;
  std::int8_t thrust_ = 0, turn_ = 0;
};

}  // namespace

std::unique_ptr<Renderer> make_tty_renderer() { return std::make_unique<TtyRenderer>(); }

}  // namespace lockstep::render
