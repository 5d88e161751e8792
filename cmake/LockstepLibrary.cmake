# lockstep_add_library(NAME OUTPUT_NAME SOURCES ... [PUBLIC ...] [PUBLIC_SHARED ...] [PRIVATE ...])
# Compiles the sources once, position-independent, and makes two libraries of the objects:
# NAME, static (what the executables and tests link), and NAME_shared, versioned with the
# project's SONAME (what the package installs beside it, and what ctypes loads). PUBLIC_SHARED
# names the shared variant's public dependencies where they differ (another shared library).
function(lockstep_add_library name)
  cmake_parse_arguments(L "" "OUTPUT_NAME" "SOURCES;PUBLIC;PUBLIC_SHARED;PRIVATE" ${ARGN})
  if(NOT DEFINED L_PUBLIC_SHARED)
    set(L_PUBLIC_SHARED ${L_PUBLIC})
  endif()
  set(includes $<BUILD_INTERFACE:${CMAKE_CURRENT_SOURCE_DIR}/include> $<INSTALL_INTERFACE:${CMAKE_INSTALL_INCLUDEDIR}>)
  add_library(${name}_objects OBJECT ${L_SOURCES})
  set_target_properties(${name}_objects PROPERTIES POSITION_INDEPENDENT_CODE ON)
  target_include_directories(${name}_objects PUBLIC ${includes} PRIVATE src)
  target_link_libraries(${name}_objects PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  add_library(${name} STATIC $<TARGET_OBJECTS:${name}_objects>)
  target_include_directories(${name} PUBLIC ${includes})
  target_link_libraries(${name} PUBLIC ${L_PUBLIC} PRIVATE ${L_PRIVATE})
  set_target_properties(${name} PROPERTIES OUTPUT_NAME ${L_OUTPUT_NAME})
  if(NOT LOCKSTEP_CORE_ONLY)
    add_library(${name}_shared SHARED $<TARGET_OBJECTS:${name}_objects>)
    target_include_directories(${name}_shared PUBLIC ${includes})
    target_link_libraries(${name}_shared PUBLIC ${L_PUBLIC_SHARED} PRIVATE ${L_PRIVATE})
    set_target_properties(${name}_shared PROPERTIES OUTPUT_NAME ${L_OUTPUT_NAME} VERSION ${PROJECT_VERSION}
                          SOVERSION ${PROJECT_VERSION_MAJOR} LIBRARY_OUTPUT_DIRECTORY ${CMAKE_BINARY_DIR}/lib)
  endif()
endfunction()
