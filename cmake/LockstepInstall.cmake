# cmake --install: headers, the core and net libraries (static and shared, SONAME versioned), the
# executables, the CMake package (find_package(lockstep CONFIG) with lockstep:: targets and a
# version file), pkg-config files, and the Debian package CPack builds from all of it.
include(CMakePackageConfigHelpers)
set(LOCKSTEP_CMAKE_DIR ${CMAKE_INSTALL_LIBDIR}/cmake/lockstep)

# The public face is the include/ folders, whole: what a team calls (the C API, the module ABI,
# the C++ module, simulation and session interfaces, the built-in games). Nothing in them includes
# a header of an internal/ or src/ folder, nor the generated wire code: those stay in the tree.
# e2e/installed checks that what is installed is exactly what these folders hold, and compiles
# every installed header on its own.
set(LOCKSTEP_PUBLIC_DIRS common/core/include common/net/include common/session/include common/api/include
    games/include games/arena/include games/skirmish/include)
foreach(dir IN LISTS LOCKSTEP_PUBLIC_DIRS)
  install(DIRECTORY ${PROJECT_SOURCE_DIR}/${dir}/lockstep DESTINATION ${CMAKE_INSTALL_INCLUDEDIR} COMPONENT dev)
endforeach()
install(FILES ${PROJECT_SOURCE_DIR}/schemas/messages.fbs ${PROJECT_SOURCE_DIR}/schemas/replay.fbs
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/schemas COMPONENT dev)

set_target_properties(lockstep_core PROPERTIES EXPORT_NAME core_static)
set_target_properties(lockstep_xxhash PROPERTIES EXPORT_NAME xxhash_internal)
set(targets lockstep_determinism lockstep_module lockstep_schemas lockstep_xxhash lockstep_core)
if(NOT LOCKSTEP_CORE_ONLY)
  set_target_properties(lockstep_core_shared PROPERTIES EXPORT_NAME core)
  set_target_properties(lockstep PROPERTIES EXPORT_NAME net_static)
  set_target_properties(lockstep_shared PROPERTIES EXPORT_NAME net)
  set_target_properties(lockstep_enet_batching PROPERTIES EXPORT_NAME enet_batching)
  list(APPEND targets lockstep_core_shared lockstep lockstep_shared lockstep_enet_batching
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
# The bindings, as a studio loads them: the Python package (import lockstep) where a prefix's
# Python finds it (PREFIX/LIBDIR/python3/dist-packages; it finds the libraries three folders up),
# and the C# binding as the one source file a Unity or Godot project takes in.
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/python/lockstep DESTINATION ${CMAKE_INSTALL_LIBDIR}/python3/dist-packages
        FILES_MATCHING PATTERN "*.py")
install(FILES ${PROJECT_SOURCE_DIR}/bindings/csharp/Lockstep.cs DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/csharp)
# ... and as a pip-installable project (pyproject.toml), whose lockstep/_libdir.py names the library
# folder of the prefix it is installed into (written at install time: cmake --install --prefix X).
install(FILES ${PROJECT_SOURCE_DIR}/bindings/python/pyproject.toml ${PROJECT_SOURCE_DIR}/bindings/python/README.md
        DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/python)
install(DIRECTORY ${PROJECT_SOURCE_DIR}/bindings/python/lockstep DESTINATION ${CMAKE_INSTALL_DATADIR}/lockstep/python
        FILES_MATCHING PATTERN "*.py")
install(CODE "file(WRITE \"\$ENV{DESTDIR}\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_DATADIR}/lockstep/python/lockstep/_libdir.py\"
  \"# Written by lockstep's install: the library folder of the prefix this package came from.\\nLIBDIR = \\\"\${CMAKE_INSTALL_PREFIX}/${CMAKE_INSTALL_LIBDIR}\\\"\\n\")")
# The determinism lint of a module's compiled code (binutils at run time).
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/lockstep-lint DESTINATION ${CMAKE_INSTALL_BINDIR})
# The determinism gate of a team's module (lockstep-gate, lockstep_add_determinism_gate()): each leg
# rebuilds lockstep's core with its own compiler, flags and architecture, so the package carries
# what a core-only build of lockstep needs (about 2 MB of sources) and the matrix that drives it.
set(LOCKSTEP_GATE_SOURCE ${CMAKE_INSTALL_DATADIR}/lockstep/source)
install(FILES ${PROJECT_SOURCE_DIR}/CMakeLists.txt ${PROJECT_SOURCE_DIR}/LICENSE DESTINATION ${LOCKSTEP_GATE_SOURCE})
install(DIRECTORY ${PROJECT_SOURCE_DIR}/cmake ${PROJECT_SOURCE_DIR}/schemas ${PROJECT_SOURCE_DIR}/common
                  ${PROJECT_SOURCE_DIR}/games ${PROJECT_SOURCE_DIR}/replay ${PROJECT_SOURCE_DIR}/bindings
                  ${PROJECT_SOURCE_DIR}/web
        DESTINATION ${LOCKSTEP_GATE_SOURCE} PATTERN "__pycache__" EXCLUDE)
# ... and what the browser client compiles besides (lockstep_add_web_client(): a team's game in the page).
install(FILES ${PROJECT_SOURCE_DIR}/client/front.cpp ${PROJECT_SOURCE_DIR}/client/front.hpp
              ${PROJECT_SOURCE_DIR}/client/render.cpp ${PROJECT_SOURCE_DIR}/client/render.hpp
        DESTINATION ${LOCKSTEP_GATE_SOURCE}/client)
install(FILES ${PROJECT_SOURCE_DIR}/bench/step_timing.hpp DESTINATION ${LOCKSTEP_GATE_SOURCE}/bench)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/determinism-matrix.sh ${PROJECT_SOURCE_DIR}/tools/determinism-lint.sh
                 ${PROJECT_SOURCE_DIR}/tools/lockstep-lint ${PROJECT_SOURCE_DIR}/tools/lockstep-gate
                 ${PROJECT_SOURCE_DIR}/tools/build-web.sh
        DESTINATION ${LOCKSTEP_GATE_SOURCE}/tools)
install(PROGRAMS ${PROJECT_SOURCE_DIR}/tools/lockstep-gate DESTINATION ${CMAKE_INSTALL_BINDIR})

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
set(CPACK_DEBIAN_PACKAGE_RECOMMENDS "libflatbuffers-dev, nlohmann-json3-dev, libxxhash-dev, libenet-dev, libsodium-dev, zlib1g-dev, libwebsockets-dev, libnice-dev, libusrsctp-dev, libssl-dev, pkg-config")
set(CPACK_DEBIAN_PACKAGE_DESCRIPTION "lockstep steps an identical fixed-dt simulation on a server and its clients,
 hashes the whole state every tick to catch divergence, and ships the desync checks a team runs
 on its own simulation module in CI (lockstep-synctest).")
include(CPack)
