# lockstep_add_module(<target> <source>... [NO_BUILD_ID])
# Adds a simulation module: a MODULE library lib<target>.so linked to lockstep::module (module_abi.h
# and the determinism flags), with hidden visibility. Its build id is derived from the module's own
# bytes: LOCKSTEP_BUILD_ID is defined as the first 64 bits of the SHA-256 of its sources (list the
# headers whose contents change results too), its compile definitions and options. Write
# `LOCKSTEP_BUILD_ID` as the table's build_id and any change to the rules changes the module's
# fingerprint, so peers built from other code are refused at join instead of desyncing in play.
# The id does not depend on the compiler or architecture: an x86-64 server and an aarch64 client
# built from the same sources still meet. Editing a listed file re-runs CMake's configure step.
function(lockstep_add_module target)
  cmake_parse_arguments(M "NO_BUILD_ID" "" "" ${ARGN})
  add_library(${target} MODULE ${M_UNPARSED_ARGUMENTS})
  if(TARGET lockstep::module)
    target_link_libraries(${target} PRIVATE lockstep::module)
  elseif(TARGET lockstep_module)
    target_link_libraries(${target} PRIVATE lockstep_module)
  endif()
  set_target_properties(${target} PROPERTIES PREFIX "lib" C_VISIBILITY_PRESET hidden CXX_VISIBILITY_PRESET hidden)
  if(NOT M_NO_BUILD_ID)
    lockstep_derive_build_id(${target})
  endif()
endfunction()

# lockstep_derive_build_id(<target>): defines LOCKSTEP_BUILD_ID for an existing target as above,
# once the directory's CMakeLists.txt has been read (so later compile definitions count too).
function(lockstep_derive_build_id target)
  # A deferred call's arguments are read when it runs: the name goes in as a literal.
  cmake_language(EVAL CODE "cmake_language(DEFER DIRECTORY [[${CMAKE_CURRENT_SOURCE_DIR}]] CALL _lockstep_build_id_now [[${target}]])")
endfunction()

function(_lockstep_build_id_now target)
  get_target_property(sources ${target} SOURCES)
  get_target_property(dir ${target} SOURCE_DIR)
  get_target_property(defs ${target} COMPILE_DEFINITIONS)
  get_target_property(opts ${target} COMPILE_OPTIONS)
  set(text "defs=${defs};opts=${opts}")
  foreach(s IN LISTS sources)
    if(NOT IS_ABSOLUTE ${s})
      set(s ${dir}/${s})
    endif()
    if(EXISTS ${s})
      file(SHA256 ${s} h)
      get_filename_component(n ${s} NAME)
      string(APPEND text ";${n}=${h}")
      set_property(DIRECTORY ${dir} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${s})
    endif()
  endforeach()
  string(SHA256 id "${text}")
  string(SUBSTRING ${id} 0 16 id)
  target_compile_definitions(${target} PRIVATE LOCKSTEP_BUILD_ID=0x${id}ull)
  set_target_properties(${target} PROPERTIES LOCKSTEP_BUILD_ID 0x${id})
endfunction()
