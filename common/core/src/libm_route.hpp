// A linked engine's libm calls sent to lockstep's math, for module_lib.cpp: the libraries a module
// lists as ROUTED (lockstep_add_module) have their imports of libm's transcendentals rebound to
// lockstep/detmath.h's functions when the module is loaded.
#pragma once

#include <string>
#include <vector>

namespace lockstep::module_lib {

struct RoutedLibrary {
  std::string name;                 ///< its soname
  std::vector<std::string> routed;  ///< the libm functions it imports that now call lockstep's (sinf, cosf, ...)
  std::vector<std::string> left;    ///< libm transcendentals it imports that lockstep has none of (sinhf, ...)
};

/// Rebinds the loaded library `soname`'s imports of sin, cos, sincos, tan, asin, acos, atan, atan2,
/// exp, exp2, log, log2, pow and hypot (float and double) to lockstep's functions, in its own GOT
/// slots only. false with `error` set when the library is not loaded or a slot cannot be written.
bool route_libm(const std::string& soname, RoutedLibrary* out, std::string* error);

}  // namespace lockstep::module_lib
