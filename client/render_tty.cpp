// The terminal view: the world's discs drawn with ANSI escapes at interpolated positions, a
// heads-up line, and the keys pressed handed on as the player's controls. The terminal is restored on exit, on Ctrl-C and on a
// crash signal.
#include <fcntl.h>
#include <signal.h>
#include <sys/ioctl.h>
#include <termios.h>
#include <unistd.h>

#include <array>
#include <algorithm>
#include <cmath>
#include <cstdio>
#include <cstring>
#include <string>

#include "lockstep/state_hash.hpp"
#include "render.hpp"

namespace lockstep::render {

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

  void draw(const DrawList& shapes, float width, float height, const Hud& hud) override {
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
    auto put = [&](float wx, float wy, char ch) {
      const int cx = 1 + static_cast<int>(v.x(wx));
      const int cy = 1 + static_cast<int>(v.y(wy * 0.5f));
      if (cx >= 1 && cx < cols - 1 && cy >= 1 && cy < rows - 1) grid_[cy][cx] = ch;
    };
    // One character a cell: a shape's mark is its player's digit ('@' for the local player) or
    // a character of its palette colour.
    static constexpr char kMarks[kPaletteSize] = {'o', '.', '*', '+', '=', '~', '%', ','};
    for (const DrawShape& s : shapes) {
      const char mark = s.player >= 0 ? (s.player == hud.slot ? '@' : static_cast<char>('0' + s.player % 10))
                                      : kMarks[s.palette % kPaletteSize];
      const float cell = static_cast<float>(1.0 / v.scale);  // world units a column
      switch (s.kind) {
        case DrawShape::Kind::Circle: put(s.x, s.y, mark); break;
        case DrawShape::Kind::Rect:
          for (float y = s.y; y < s.y + s.b; y += 2 * cell)
            for (float x = s.x; x < s.x + s.a; x += cell) put(x, y, mark);
          break;
        case DrawShape::Kind::Line: {
          const float len = std::max(std::fabs(s.a - s.x), std::fabs(s.b - s.y));
          const int steps = std::max(1, static_cast<int>(len / cell));
          for (int i = 0; i <= steps; ++i) {
            const float t = static_cast<float>(i) / static_cast<float>(steps);
            put(s.x + (s.a - s.x) * t, s.y + (s.b - s.y) * t, mark);
          }
          break;
        }
        case DrawShape::Kind::Text:
          for (std::size_t i = 0; i < s.text.size(); ++i)
            put(s.x + static_cast<float>(i) * cell, s.y, s.text[i] >= 0x20 && s.text[i] < 0x7f ? s.text[i] : '?');
          break;
      }
    }
    char line[256];
    std::snprintf(line, sizeof line, " tick %u  fps %.0f  alpha %.2f  rtt %u ms  buffer %zu  hash %s  %s  %s",
                  hud.tick, hud.fps, hud.alpha, hud.rtt_ms, hud.buffered, hash_hex(hud.hash).c_str(),
                  hud.desynced ? "DESYNC" : "in sync",
                  hud.slot >= 0 ? ("[" + std::string(hud.controls_help) + ", q quits]").c_str() : "[spectating, q quits]");
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
    // A terminal reports presses, not releases: a press holds its key for a short while, and the
    // terminal's key repeat keeps it held. A press of one arrow releases the opposite one.
    constexpr std::int64_t kHold = 250'000'000;
    auto press = [&](Key key, Key opposite) {
      held_until_[static_cast<std::size_t>(opposite)] = 0;
      held_until_[static_cast<std::size_t>(key)] = now + kHold;
    };
    for (ssize_t i = 0; i < n; ++i) {
      const unsigned char c = buf[i];
      if (c == 27 && i + 2 < n && buf[i + 1] == '[') {
        const unsigned char a = buf[i + 2];
        i += 2;
        if (a == 'A') press(Key::Up, Key::Down);
        if (a == 'B') press(Key::Down, Key::Up);
        if (a == 'D') press(Key::Left, Key::Right);
        if (a == 'C') press(Key::Right, Key::Left);
        continue;
      }
      if (c == 'q' || c == 'Q' || c == 27) k.quit = true;
      else if (c == ' ') press(Key::Space, Key::Space);
      else if (c == '\r' || c == '\n') press(Key::Enter, Key::Enter);
      else if ((c >= 'a' && c <= 'z') || (c >= 'A' && c <= 'Z')) {
        const int letter = (c | 0x20) - 'a';
        const Key key = static_cast<Key>(static_cast<int>(Key::A) + letter);
        // WASD pairs release each other as the arrows do.
        const Key opposite = c == 'w' || c == 'W' ? Key::S : c == 's' || c == 'S' ? Key::W
                           : c == 'a' || c == 'A' ? Key::D : c == 'd' || c == 'D' ? Key::A : key;
        press(key, opposite);
      }
    }
    for (std::size_t i = 0; i < held_until_.size(); ++i)
      if (now < held_until_[i]) k.controls.hold(static_cast<Key>(i));
    return k;
  }

  void end() override { restore_terminal(); }

 private:
  std::vector<std::string> grid_;
  std::array<std::int64_t, static_cast<std::size_t>(Key::Count)> held_until_{};  // by Key: held until then
};

}  // namespace

std::unique_ptr<Renderer> make_tty_renderer() { return std::make_unique<TtyRenderer>(); }

}  // namespace lockstep::render
