# cmake --install: headers, the core and net libraries (static and shared, SONAME versioned), the
# executables, the CMake package (find_package(lockstep CONFIG) with lockstep:: targets and a
# version file), pkg-config files, and the Debian package CPack builds from all of it.
include(CMakePackageConfigHelpers)
set(LOCKSTEP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)

# The public face: what a team calls (the C API lockstep.h, the module ABI, the C++ module and
# session interfaces, the built-in games) and every header those include. The rest of each
# layer's include/ is the inside: the executables and tests use it, the package does not ship it.
# e2e/installed compiles every installed header on its own, so a public header that includes a
# private one fails there.
set(LOCKSTEP_PUBLIC_HEADERS
  common/api/include/lockstep/lockstep.h common/api/include/lockstep/lockstep_session.h
  common/api/include/lockstep/lockstep_token.h
  common/api/include/lockstep/client.hpp common/api/include/lockstep/host.hpp
  common/core/include/lockstep/desync.hpp common/core/include/lockstep/error.hpp
  common/core/include/lockstep/hash_log.hpp
  common/core/include/lockstep/histogram.hpp common/core/include/lockstep/input.hpp
  common/core/include/lockstep/json.hpp common/core/include/lockstep/log.hpp
  common/core/include/lockstep/module.hpp common/core/include/lockstep/module_abi.h
  common/core/include/lockstep/replay.hpp common/core/include/lockstep/rng.hpp
  common/core/include/lockstep/scenario.hpp common/core/include/lockstep/settings.hpp
  common/core/include/lockstep/simulation.hpp common/core/include/lockstep/state_hash.hpp
  common/core/include/lockstep/version.hpp
  common/net/include/lockstep/connect_token.hpp common/net/include/lockstep/packet_seal.hpp
  common/net/include/lockstep/protocol.hpp common/net/include/lockstep/transport.hpp
  common/session/include/lockstep/client_session.hpp common/session/include/lockstep/lead.hpp
  common/session/include/lockstep/pacer.hpp common/session/include/lockstep/server_session.hpp
  common/session/include/lockstep/session_event.hpp
  games/include/lockstep/games.hpp games/arena/include/lockstep/arena.hpp games/arena/include/lockstep/bot.hpp
  games/skirmish/include/lockstep/skirmish.hpp)
list(TRANSFORM LOCKSTEP_PUBLIC_HEADERS PREPEND ${PROJECT_SOURCE_DIR}/)
install(FILES ${LOCKSTEP_PUBLIC_HEADERS} DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep COMPONENT dev)
install(FILES ${PROJECT_BINARY_DIR}/schemas/include/lockstep/wire/messages_generated.h
        DESTINATION ${CMAKE_INSTALL_INCLUDEDIR}/lockstep/wire COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/schemas/messages.fbs ${PROJECT_SOURCE_DIR}/schemas/replay.fbs
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/schemas COMPONENT dev)

set_target_properties(lockstep_core PROPERTIES EXPORT_NAME core_static)
set_target_properties(lockstep_xxhash PROPERTIES EXPORT_NAME xxhash_internal)
set(targets lockstep_determinism lockstep_module lockstep_schemas lockstep_xxhash lockstep_core)
if(NOT LOCKSTEP_CORE_ONLY)
  set_target_properties(lockstep_core_shared PROPERTIES EXPORT_NAME core)
  set_target_properties(lockstep PROPERTIES EXPORT_NAME net_static)
  set_target_properties(lockstep_shared PROPERTIES EXPORT_NAME net)
  list(APPEND targets lockstep_core_shared lockstep lockstep_shared
       lockstep-server lockstep-client lockstep-netsim lockstep-synctest lockstep-token)
endif()
list(APPEND targets lockstep-replay)
install(TARGETS ${targets} EXPORT lockstepTargets
        ARCHIVE DESTINATION ${CMAKE_INSTALL_LIBDIR} COMPONENT dev
        LIBRARY DESTINATION ${CMAKE_INSTALL_LIBDIR} NAMELINK_COMPONENT dev
        RUNTIME DESTINATION ${CMAKE_INSTALL_BINDIR}
        INCLUDES DESTINATION ${CMAKE_INSTALL_INCLUDEDIR})
install(EXPORT lockstepTargets NAMESPACE lockstep:: DESTINATION ${LOCKSTEP_CMAKE_DIR} COMPONENT dev)
configure_package_config_file(${PROJECT_SOURCE_DIR}/cmake/lockstepConfig.cmake.in
                              ${PROJECT_BINARY_DIR}/lockstepConfig.cmake INSTALL_DESTINATION ${LOCKSTEP_CMAKE_DIR})
write_basic_package_version_file(${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake COMPATIBILITY SameMinorVersion)
install(FILES ${PROJECT_BINARY_DIR}/lockstepConfig.cmake ${PROJECT_BINARY_DIR}/lockstepConfigVersion.cmake
        ${PROJECT_SOURCE_DIR}/cmake/LockstepChecks.cmake ${PROJECT_SOURCE_DIR}/cmake/LockstepModule.cmake
        DESTINATION ${LOCKSTEP_CMAKE_DIR} COMPONENT dev)
# The licence (MIT): beside the CMake package, and as the Debian package's copyright file.
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${LOCKSTEP_CMAKE_DIR} COMPONENT dev)
install(FILES ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${CMAKE_INSTALL_DATADIR}/doc/lockstep RENAME copyright)
# The determinism lint of a module's compiled code (binutils at run time).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/lockstep-lint DESTINATION ${CMAKE_INSTALL_BINDIR})

# pkg-config: lockstep-core (the deterministic core and the C API), lockstep (with the net layer),
# lockstep-module (what a module needs: the header and the determinism flags).
# Relocatable: the prefix is found from where the .pc file lies.
file(RELATIVE_PATH LOCKSTEP_PC_UP /x/${CMAKE_INSTALL_LIBDIR}/pkgconfig /x)
foreach(pc lockstep-core lockstep lockstep-module)
  configure_file(${PROJECT_SOURCE_DIR}/cmake/${pc}.pc.in ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc @ONLY)
  install(FILES ${PROJECT_BINARY_DIR}/pkgconfig/${pc}.pc DESTINATION ${CMAKE_INSTALL_LIBDIR}/pkgconfig COMPONENT dev)
endforeach()

# cpack -G DEB: lockstep_<version>_<arch>.deb, one package with the executables, the libraries
# and the development files; dpkg-shlibdeps finds the runtime dependencies of what is linked, and
# the headers' dependencies are named.
set(CPACK_PACKAGE_NAME lockstep)
set(CPACK_PACKAGE_VENDOR "lockstep")
set(CPACK_PACKAGE_CONTACT "lockstep developers <lockstep@localhost>")
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY "deterministic lockstep networked simulation: server, client, desync checks")
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_RESOURCE_FILE_LICENSE ${PROJECT_SOURCE_DIR}/LICENSE)
set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_DEBIAN_FILE_NAME DEB-DEFAULT)
set(CPACK_DEBIAN_PACKAGE_SECTION games)
set(CPACK_DEBIAN_PACKAGE_SHLIBDEPS ON)
set(CPACK_DEBIAN_PACKAGE_GENERATE_SHLIBS ON)
# A module needs only the compiler (lockstep::module is module_abi.h and two flags); building
# against the C++ libraries needs the headers' dependencies, which apt installs as recommended.
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libflatbuffers-dev, nlohmann-json3-dev, libxxhash-dev, libenet-dev, libsodium-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "lockstep steps an identical fixed-dt simulation on a server and its clients,
 hashes the whole state every tick to catch divergence, and ships the desync checks a team runs
 on its own simulation module in CI (lockstep-synctest).")
include(CPack)
