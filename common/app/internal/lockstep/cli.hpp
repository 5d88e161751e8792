// Option checks every executable shares, beside CLI11's own: CLI11's Range lets NaN through, and
// it reads "-1" into an unsigned option as its largest value.
#pragma once

#include <CLI/CLI.hpp>

#include <cmath>
#include <cstdlib>
#include <string>

namespace lockstep::cli {

/// A finite number (not nan, not inf).
inline CLI::Validator finite() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        char* end = nullptr;
        const double v = std::strtod(s.c_str(), &end);
        if (end == s.c_str() || !std::isfinite(v)) return "must be a finite number, not '" + s + "'";
        return {};
      },
      "FINITE");
}

/// A whole number without a sign: for unsigned options.
inline CLI::Validator unsigned_number() {
  return CLI::Validator(
      [](std::string& s) -> std::string {
        if (s.empty() || s.find_first_not_of(" 0123456789") != std::string::npos)
          return "must be a whole number of 0 or more, not '" + s + "'";
        return {};
      },
      "UNSIGNED");
}

/// The usual command line of a lockstep executable: `describe` declares its options on the app,
/// the command line is parsed, and `run` does the work. --help and --version exit 0, a bad
/// option exits 2 (bad usage) with CLI11's message.
template <class Options, class Describe, class Run>
int main_with(CLI::App& app, int argc, char** argv, Describe describe, Run run) {
  Options o;
  describe(app, o);
  try {
    app.parse(argc, argv);
  } catch (const CLI::ParseError& e) {
    return app.exit(e) == 0 ? 0 : 2;
  }
  return run(std::move(o));
}

}  // namespace lockstep::cli
