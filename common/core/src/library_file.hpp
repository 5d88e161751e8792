// What a module's library file is and links, for module_lib.cpp: the checks before dlopen maps a
// file, and the libraries whose builds a loaded module's fingerprint covers.
#pragma once

#include <cstdint>
#include <optional>
#include <string>
#include <vector>

#include "libm_route.hpp"
#include "lockstep/simulation.hpp"

namespace lockstep::module_lib {

/// The build a library gets when the module leaves it out of its fingerprint.
inline constexpr const char* kOptedOut = "opted out";

/// The hash of a whole file's bytes; nullopt when it cannot be read or is empty.
std::optional<std::uint64_t> file_hash(const std::string& path);
/// "" when `path` is an ELF shared object of this process's class and machine whose segments and
/// section headers lie inside the file; else why not, as a sentence.
std::string check_library_file(const std::string& path);
/// The libraries the loaded module `lib` (a dlopen handle) links, other than the C and C++
/// runtimes, each with its build ("opted out" for those it leaves out); {} with `error` set when
/// its list of opted-out libraries names one it does not link, or it links too many.
std::vector<LibraryBuild> covered_libraries(void* lib, std::string* note, std::string* error);
/// The loaded module `lib`'s machine code (Module::code): the GNU build id of the copy this process
/// loaded, or "xxh3:" and the hash of the file at `path` when it has none.
std::string module_code(void* lib, const std::string& path);
/// A module's machine code (`code`, module_code's) widened by the libraries it opts out of its
/// fingerprint (`libraries`' "opted out" ones): they run inside its results, and with no
/// fingerprint naming their builds, its code must. Unchanged when it opts none out; else "xxh3:"
/// and the hash of its own code and each such library's name and build (so two players with one
/// module file and two builds of an opted-out engine are other code, which only a gate run
/// admits together). `fma` gains each such library's fused multiply-adds; `note` names them.
void add_opted_out_code(const std::vector<LibraryBuild>& libraries, std::string* code, std::uint32_t* fma,
                        std::string* note);
/// The libraries the loaded module `lib` lists as ROUTED (its `lockstep_routed_libraries`), each
/// with its libm calls rebound to lockstep's math (route_libm), what was done said in `note`; {}
/// with `error` set when the list names a library it does not link or a rebinding fails.
std::vector<RoutedLibrary> route_module_libraries(void* lib, std::string* note, std::string* error);

}  // namespace lockstep::module_lib
