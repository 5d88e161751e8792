# lockstep_add_synctest(NAME <test> MODULE <target> [WORLD <settings>] [TICKS <n>] [ROLLBACK <k>]
#                       [SEED <s>] [PLAYERS <n>] [NO_LINT] [LINT_ALLOW <kind>...]
#                       [LINT_ALLOW_SYMBOL <symbol>...] [LINT_ALLOW_FUNCTION <function>...])
# Adds a ctest case that runs lockstep-synctest's desync checks on a module target of this
# project (a MODULE or SHARED library built against lockstep::module): replay equality across
# processes, the same with the heap filled with other bytes (memory), rollback, serialization
# round trip, clone, assign, hash, localization, fingerprint; over the module's default and golden
# worlds and 1, 2 and the most players it builds unless WORLD or PLAYERS pin them. Unless NO_LINT,
# a second case <test>/lint runs lockstep-lint on the module's library (libm transcendentals, FMA,
# unordered containers, random, clocks, in the module and the libraries it needs); LINT_ALLOW names
# kinds the module may use, LINT_ALLOW_SYMBOL and LINT_ALLOW_FUNCTION single symbols and functions
# (each allowed finding is reported as such).
# It fails naming the check, tick, entity and field; its JSON report and JUnit file are written to
# <build>/synctest/<test>.json and .xml (characters other than
# [A-Za-z0-9_.-] in the name become _) for the CI system to collect, the lint's beside them as
# <test>.lint.json and .lint.xml.
function(lockstep_add_synctest)
  cmake_parse_arguments(S "NO_LINT" "NAME;MODULE;WORLD;TICKS;ROLLBACK;SEED;PLAYERS"
                        "LINT_ALLOW;LINT_ALLOW_SYMBOL;LINT_ALLOW_FUNCTION" ${ARGN})
  if(NOT TARGET lockstep::lockstep-synctest)
    message(WARNING "lockstep_add_synctest: this lockstep install has no lockstep-synctest (a core-only build)")
    return()
  endif()
  if(NOT S_NAME OR NOT S_MODULE)
    message(FATAL_ERROR "lockstep_add_synctest: NAME and MODULE are required")
  endif()
  set(args --sim-lib $<TARGET_FILE:${S_MODULE}>)
  foreach(opt WORLD TICKS ROLLBACK SEED PLAYERS)
    if(DEFINED S_${opt})
      string(TOLOWER ${opt} flag)
      list(APPEND args --${flag} ${S_${opt}})
    endif()
  endforeach()
  file(MAKE_DIRECTORY ${CMAKE_BINARY_DIR}/synctest)
  string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" file ${S_NAME})
  set(out ${CMAKE_BINARY_DIR}/synctest/${file})
  add_test(NAME ${S_NAME} COMMAND lockstep::lockstep-synctest ${args} --junit ${out}.xml --report ${out}.json
           --bundle-dir ${CMAKE_BINARY_DIR}/synctest)
  if(NOT S_NO_LINT)
    set(lint)
    if(TARGET lockstep::lockstep-lint)
      set(lint lockstep::lockstep-lint)
    elseif(TARGET lockstep-lint)
      set(lint lockstep-lint)
    endif()
    if(lint)
      set(allow)
      foreach(k IN LISTS S_LINT_ALLOW)
        list(APPEND allow --allow ${k})
      endforeach()
      foreach(k IN LISTS S_LINT_ALLOW_SYMBOL)
        list(APPEND allow --allow-symbol ${k})
      endforeach()
      foreach(k IN LISTS S_LINT_ALLOW_FUNCTION)
        list(APPEND allow --allow-function ${k})
      endforeach()
      add_test(NAME ${S_NAME}/lint COMMAND ${lint} ${allow} --json ${out}.lint.json --junit ${out}.lint.xml
                                           $<TARGET_FILE:${S_MODULE}>)
      # An allowance scoped to a library (LIB:NAME) must name the module or a library it links:
      # checked at configure time, once the module's directory has linked it.
      set(scoped "")
      foreach(k IN LISTS S_LINT_ALLOW_SYMBOL S_LINT_ALLOW_FUNCTION)
        if(k MATCHES "^([^:]+):([^:]|$)")
          list(APPEND scoped "${k}")
        endif()
      endforeach()
      if(scoped AND TARGET ${S_MODULE})
        get_target_property(dir ${S_MODULE} SOURCE_DIR)
        cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${dir}]] CALL _lockstep_check_lint_scopes [[${S_NAME}]] [[${S_MODULE}]] [[${scoped}]])")
      endif()
    endif()
  endif()
endfunction()

# A scoped lint allowance whose library is neither the module nor one it links would allow nothing
# ("box2d:sinf" for libbox2d.so.2): an error at configure time, naming what the module links.
function(_lockstep_check_lint_scopes test module scoped)
  _lockstep_linked_sonames(${module} names known)
  if(NOT known)
    return()
  endif()
  _lockstep_target_soname(${module} own)
  list(APPEND names "${own}")
  foreach(k IN LISTS scoped)
    string(REGEX MATCH "^[^:]+" lib "${k}")
    _lockstep_names_library("${names}" "${lib}" matched)
    if(NOT matched)
      list(JOIN names ", " linked)
      message(FATAL_ERROR "lockstep_add_synctest(${test}): the lint allowance \"${k}\" names the library \"${lib}\", "
                          "which is neither ${module} nor a library it links (${linked}); name the soname or its start, "
                          "as \"libbox2d\" for libbox2d.so.2")
    endif()
  endforeach()
endfunction()

# lockstep_add_determinism_gate(<module target> REPLAY <file> [NAME <test>] [PACKAGES <package>...]
#                               [SOURCE_PACKAGES <package>[:<cmake option>,...]...] [REFUSED_ON <leg>...] [NOT_ON <leg>...] [ONLY <leg>...] [MONO_CHECK "<exe> <args>"...]
#                               [PYTHON_CHECK "<script> <args>"...])
# Adds a ctest case (label `gate`) that runs lockstep-gate on a module target of this project:
# every leg its players may have (gcc -O0 and -O2, clang -O2 and -O3 -march=native, aarch64 under
# qemu-user, glibc's baseline x86-64 paths, emscripten's wasm under Node) rebuilds lockstep's core
# and this project's module with that leg's compiler, flags and architecture (on the wasm leg the
# module is linked into a replay of its own), and replays REPLAY (the module's golden replay,
# lockstep-replay record-scenario) comparing every tick's hash. A leg that parts fails the case,
# named with its tick, entity and field; a leg that cannot run here is reported skipped, with why.
# PACKAGES are Debian packages the module builds against (installed for the host and arm64 when
# missing, as root); SOURCE_PACKAGES are Debian source packages of CMake libraries the team builds
# itself (Box2D: Debian's arm64 binary has fused multiply-adds), each built on every native leg
# with that leg's compiler and flags and -ffp-contract=off, for this module alone, with the CMake
# options after its name ("box2d:-DBOX2D_BUILD_UNIT_TESTS=OFF,-DBOX2D_BUILD_TESTBED=OFF"); the
# module opts such a library out of its fingerprint (UNCOVERED) and the gate's machine code covers
# it. REFUSED_ON names a leg whose build of a linked library differs from the
# recording's (the replay must be refused there); NOT_ON names a leg the module is not built for
# (a library it links does not exist there: reported skipped, saying so). ONLY, or the cache variable
# LOCKSTEP_GATE_ONLY, runs some legs alone (a quick look; CI runs them all). MONO_CHECK and
# PYTHON_CHECK are a C# or Python implementation's own check (a program that compares it with the
# module or with another implementation's trace and exits 0 when they agree), run under Mono with
# its float32 optimization on and off (legs mono, mono-O=-float32) and under CPython (python3).
# Reports:
# <build>/gate/<test>.json and .xml. The legs take minutes: run them with `ctest -L gate`, and the
# other tests with `ctest -LE gate`.
set(LOCKSTEP_GATE_ONLY "" CACHE STRING "lockstep_add_determinism_gate: run only these legs (a list; empty: every leg)")
function(lockstep_add_determinism_gate target)
  cmake_parse_arguments(G "" "REPLAY;NAME" "PACKAGES;SOURCE_PACKAGES;REFUSED_ON;NOT_ON;ONLY;MONO_CHECK;PYTHON_CHECK" ${ARGN})
  if(NOT G_REPLAY)
    message(FATAL_ERROR "lockstep_add_determinism_gate(${target}): REPLAY <the module's golden replay> is required")
  endif()
  if(NOT G_NAME)
    set(G_NAME ${target}/gate)
  endif()
  if(TARGET lockstep::lockstep-gate)
    set(gate $<TARGET_FILE:lockstep::lockstep-gate>)
  elseif(EXISTS ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../tools/lockstep-gate)
    set(gate ${CMAKE_CURRENT_FUNCTION_LIST_DIR}/../tools/lockstep-gate)
  else()
    message(WARNING "lockstep_add_determinism_gate: this lockstep install has no lockstep-gate")
    return()
  endif()
  get_filename_component(replay ${G_REPLAY} ABSOLUTE BASE_DIR ${CMAKE_CURRENT_SOURCE_DIR})
  string(REGEX REPLACE "[^A-Za-z0-9_.-]" "_" file ${G_NAME})
  set(out ${CMAKE_BINARY_DIR}/gate/${file})
  set(args --root ${out} --module-source ${CMAKE_SOURCE_DIR} --module-target ${target} --module-replay ${replay})
  if(G_PACKAGES)
    string(REPLACE ";" " " packages "${G_PACKAGES}")
    list(APPEND args --module-packages "${packages}")
  endif()
  if(G_SOURCE_PACKAGES)
    string(REPLACE ";" " " sources "${G_SOURCE_PACKAGES}")
    list(APPEND args --module-source-packages "${sources}")
  endif()
  foreach(leg IN LISTS G_REFUSED_ON)
    list(APPEND args --module-refused-on ${leg})
  endforeach()
  foreach(leg IN LISTS G_NOT_ON)
    list(APPEND args --module-not-on ${leg})
  endforeach()
  foreach(check IN LISTS G_MONO_CHECK)
    list(APPEND args --mono-check "${check}")
  endforeach()
  foreach(check IN LISTS G_PYTHON_CHECK)
    list(APPEND args --python-check "${check}")
  endforeach()
  set(only ${G_ONLY})
  if(LOCKSTEP_GATE_ONLY)
    set(only ${LOCKSTEP_GATE_ONLY})
  endif()
  foreach(leg IN LISTS only)
    list(APPEND args --only ${leg})
  endforeach()
  add_test(NAME ${G_NAME} COMMAND ${gate} ${args} --json ${out}.json --junit ${out}.xml)
  set_tests_properties(${G_NAME} PROPERTIES LABELS gate TIMEOUT 3600)
endfunction()
