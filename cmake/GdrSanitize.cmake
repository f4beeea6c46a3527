# ./configure --sanitize (GDR_SANITIZE=ON): every C and C++ target of the tree -- the plugin and
# its glue libraries, ucp_cpp and the collectives with their tests and examples, perf/'s tools --
# is built with AddressSanitizer and UndefinedBehaviorSanitizer. Undefined behaviour aborts
# (-fno-sanitize-recover): a report is a failed test, not a line lost in a log.
#
# Every executable links tests/sanitize/defaults.c.in, which carries the run-time options and the
# leak suppressions (tests/sanitize/lsan.supp) into the binary itself: a test started by ctest, a
# peer process a test re-executes, a tool started by hand all run under the same rules with no
# ASAN_OPTIONS/LSAN_OPTIONS to forget. Variables that are set still win (the sanitizers read the
# environment after these defaults).
#
# Processes that are not ours (ucx_info, ucx_perftest, mpirun's ranks) load the sanitized plugin
# only with the sanitizer runtimes preloaded first: tests/sanitize/preload prints that list.
option(GDR_SANITIZE "Build with AddressSanitizer and UndefinedBehaviorSanitizer" OFF)

function(gdr_sanitize_executables dir)
endfunction()
# What a test puts before the plugin in an LD_PRELOAD list: nothing, or in a sanitized build the
# ASan and UBSan runtimes, which must come first in the process (tests/sanitize/preload says why)
set(GDR_SANITIZE_PRELOAD "")
if(NOT GDR_SANITIZE)
  return()
endif()
if(NOT CMAKE_C_COMPILER_ID MATCHES "GNU|Clang" OR NOT CMAKE_CXX_COMPILER_ID MATCHES "GNU|Clang")
  message(FATAL_ERROR "GDR_SANITIZE needs GCC or Clang (have ${CMAKE_C_COMPILER_ID})")
endif()

add_compile_options(-fsanitize=address,undefined -fno-sanitize-recover=undefined
                    -fno-omit-frame-pointer)
# Optimisation and debug info of the sanitized build, after (so instead of) the build type's
# -O2 -g. -O0: every load and store stays in the code, so ASan checks each one (an optimiser
# drops some), and the header-only collectives' translation units compile 2.7x faster than at
# -O2 (test_types.cpp with ASan + UBSan: 45 s of CPU at -O2 -g, 29 s at -O1 -g1, 16.5 s at
# -O0 -g1; docs/testing.md#sanitizers-and-memcheck-testssanitize). -g1: line tables, so every report's stack has file:line; no
# variable info (a debugger session wants the default build).
set(GDR_SANITIZE_OPT "-O0 -g1" CACHE STRING "Optimisation/debug flags of the sanitized build")
separate_arguments(_gdr_sanitize_opt UNIX_COMMAND "${GDR_SANITIZE_OPT}")
add_compile_options(${_gdr_sanitize_opt})
add_link_options(-fsanitize=address,undefined)
foreach(_rt asan ubsan)
  execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=lib${_rt}.so
                  OUTPUT_VARIABLE _rt_path OUTPUT_STRIP_TRAILING_WHITESPACE)
  get_filename_component(_rt_path "${_rt_path}" REALPATH)
  string(APPEND GDR_SANITIZE_PRELOAD "${_rt_path}:")
endforeach()

# The suppressions go into the binary as one C string, a line each
set(_supp ${PROJECT_SOURCE_DIR}/tests/sanitize/lsan.supp)
set_property(DIRECTORY ${PROJECT_SOURCE_DIR} APPEND PROPERTY CMAKE_CONFIGURE_DEPENDS ${_supp})
file(STRINGS ${_supp} _lines)
set(GDR_LSAN_SUPPRESSIONS "")
foreach(_l IN LISTS _lines)
  if(_l MATCHES "^[a-z_]+:")
    string(APPEND GDR_LSAN_SUPPRESSIONS "\"${_l}\\n\"\n    ")
  endif()
endforeach()
configure_file(${PROJECT_SOURCE_DIR}/tests/sanitize/defaults.c.in
               ${PROJECT_BINARY_DIR}/gdr_sanitize_defaults.c @ONLY)
add_library(gdr_sanitize_defaults OBJECT ${PROJECT_BINARY_DIR}/gdr_sanitize_defaults.c)

# Called once, at the end of the top-level CMakeLists.txt: links the defaults into every
# executable and shared library of `dir` and below (a library for the uninstrumented programs
# that preload the plugin: the sanitizers find the first definition in the process). The property, not target_link_libraries(): the targets use both
# of its signatures, which CMake does not let one target mix.
function(gdr_sanitize_executables dir)
  get_property(_targets DIRECTORY ${dir} PROPERTY BUILDSYSTEM_TARGETS)
  foreach(_t IN LISTS _targets)
    get_target_property(_type ${_t} TYPE)
    if(_type MATCHES "^(EXECUTABLE|SHARED_LIBRARY|MODULE_LIBRARY)$")
      set_property(TARGET ${_t} APPEND PROPERTY LINK_LIBRARIES gdr_sanitize_defaults)
    endif()
  endforeach()
  # GCC 12's null checks make a comparison of a function pointer with nullptr non-constant,
  # which breaks ucp_cpp::coll's constexpr algorithm table (a static_assert).  The wrapper's target
  # carries the flags: the collectives' users (through ucp_cpp::coll, which links it) and the
  # wrapper's own are built without the three null-pointer checks, everything else with them.
  if(dir STREQUAL PROJECT_SOURCE_DIR AND TARGET ucp_cpp AND CMAKE_CXX_COMPILER_ID STREQUAL "GNU")
    set(_no_null -fno-sanitize=null,nonnull-attribute,returns-nonnull-attribute)
    target_compile_options(ucp_cpp INTERFACE $<$<COMPILE_LANGUAGE:CXX>:${_no_null}>)
  endif()
  # UCX's ucs_mpool keeps its element header (a pointer) right before each object, and the
  # receive pool places objects where the iface params' am_alignment/am_align_offset put the
  # payload: the header can be misaligned (UBSan, in UCX's inline ucs_mpool_get_inline, as UCX's
  # own ib receive pool would be). Only the two files that inline the receive pool's get/put
  # (gdr_iface_mpool.c also refills the SRQ from it) skip the alignment check.
  # Targets of several C++ files that all include ucp_cpp (and gtest): one translation unit
  # each (CMake's unity build), so that the headers are parsed and their inline functions
  # instrumented and emitted once per target, not once per file (docs/results/2026-12-testing.md has the times).
  # Sanitized builds only: the default build keeps one object per file.
  if(dir STREQUAL PROJECT_SOURCE_DIR)
    foreach(_t coll_host coll_processes ucp_cpp_host gdr_perftest gdr-doctor)
      if(TARGET ${_t})
        set_target_properties(${_t} PROPERTIES UNITY_BUILD ON UNITY_BUILD_BATCH_SIZE 0)
      endif()
    endforeach()
  endif()
  if(dir STREQUAL PROJECT_SOURCE_DIR AND TARGET uct_gdr_impl)
    set_source_files_properties(${PROJECT_SOURCE_DIR}/uct_gdr/src/ucx/gdr_iface_progress.c
                                ${PROJECT_SOURCE_DIR}/uct_gdr/src/ucx/gdr_iface_mpool.c
                                DIRECTORY ${PROJECT_SOURCE_DIR}/uct_gdr
                                PROPERTIES COMPILE_OPTIONS -fno-sanitize=alignment)
  endif()
  get_property(_subdirs DIRECTORY ${dir} PROPERTY SUBDIRECTORIES)
  foreach(_d IN LISTS _subdirs)
    gdr_sanitize_executables(${_d})
  endforeach()
endfunction()
