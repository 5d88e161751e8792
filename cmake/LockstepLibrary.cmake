# lockstep_add_layer(NAME DIR <folder> SOURCES ... [PUBLIC ...] [PRIVATE ...])
# One layer of the engine: an OBJECT library of <folder>/src. Its headers are in three folders:
#   <folder>/include   the public face: installed, and nothing in it includes a header of the others
#   <folder>/internal  what the layers above use of it (wire, transport, the sessions' parts): not installed
#   <folder>/src       its own inside
# A layer sees only its own headers and those of the targets it links (the layers below it), so
# an include across the layering does not compile. Symbols are hidden unless marked LOCKSTEP_API
# (export.h): the shared libraries export the API and nothing else.
function(lockstep_add_layer name)
  cmake_parse_arguments(L "" "DIR" "SOURCES;PUBLIC;PRIVATE" ${ARGN})
  set(dir ${CMAKE_CURRENT_SOURCE_DIR}/${L_DIR})
  list(TRANSFORM L_SOURCES PREPEND ${dir}/src/)
  add_library(${name} OBJECT ${L_SOURCES})
  set_target_properties(${name} PROPERTIES POSITION_INDEPENDENT_CODE ON CXX_VISIBILITY_PRESET hidden
                        VISIBILITY_INLINES_HIDDEN ON)
  target_include_directories(${name} PUBLIC $<BUILD_INTERFACE:${dir}/include> $<BUILD_INTERFACE:${dir}/internal>
                             PRIVATE ${dir}/src)
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
endfunction()

# lockstep_add_library(NAME OUTPUT_NAME LAYERS ... [PUBLIC ...] [PUBLIC_SHARED ...] [PRIVATE ...])
# Makes two libraries of the layers' objects: NAME, static (what the executables and tests
# link), and NAME_shared, versioned with the project's SONAME (what the package installs beside
# it, and what ctypes loads). Their users see every layer's public headers. PUBLIC_SHARED names
# the shared variant's public dependencies where they differ (another shared library).
function(lockstep_add_library name)
  cmake_parse_arguments(L "" "OUTPUT_NAME" "LAYERS;PUBLIC;PUBLIC_SHARED;PRIVATE" ${ARGN})
  if(NOT DEFINED L_PUBLIC_SHARED)
    set(L_PUBLIC_SHARED ${L_PUBLIC})
  endif()
  set(objects)
  set(includes $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  foreach(layer IN LISTS L_LAYERS)
    list(APPEND objects $<TARGET_OBJECTS:${layer}>)
    get_target_property(dirs ${layer} INTERFACE_INCLUDE_DIRECTORIES)
    list(APPEND includes ${dirs})
  endforeach()
  set(variants ${name})
  add_library(${name} STATIC ${objects})
  if(NOT LOCKSTEP_CORE_ONLY)
    add_library(${name}_shared SHARED ${objects})
    # Installed beside each other in any prefix, the libraries find one another there: liblockstep_net
    # needs liblockstep_core, which a game linked with --as-needed against the first alone does
    # not name itself.
    set_target_properties(${name}_shared PROPERTIES OUTPUT_NAME ${L_OUTPUT_NAME} VERSION ${PROJECT_VERSION}
                          SOVERSION ${PROJECT_VERSION_MAJOR} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib
                          INSTALL_RPATH "$ORIGIN")
    target_include_directories(${name}_shared PUBLIC ${includes})
    target_link_libraries(${name}_shared PUBLIC ${L_PUBLIC_SHARED} PRIVATE ${L_PRIVATE})
  endif()
  target_include_directories(${name} PUBLIC ${includes})
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  set_target_properties(${name} PROPERTIES OUTPUT_NAME ${L_OUTPUT_NAME})
endfunction()
