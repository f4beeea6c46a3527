# Dependencies: UCX (public CMake package + internal headers of the exact installed version),
# libibverbs (rdma-core), optional CUDA toolkit headers.
if(GDR_UCX_PREFIX)
  list(PREPEND CMAKE_PREFIX_PATH ${GDR_UCX_PREFIX})
endif()
set(GDR_UCX_CONFIG_H "" CACHE FILEPATH
    "A UCX installed without headers and ucx_info: the defines it was built with (ucx_info -b)")
set(_ui ${CMAKE_BINARY_DIR}/ucx-internal)
macro(gdr_ucx_internal)  # build-aux/ucx-internal.sh: the exact source, config.h, version
  execute_process(COMMAND ${CMAKE_SOURCE_DIR}/build-aux/ucx-internal.sh ${_ui} "${GDR_UCX_PREFIX}"
                          "${GDR_UCX_SRC}" "${GDR_UCX_CONFIG_H}" RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "UCX internal headers unavailable (see the line above)")
  endif()
  file(READ ${_ui}/ucx-src GDR_UCX_SRC_DIR)
  string(STRIP "${GDR_UCX_SRC_DIR}" GDR_UCX_SRC_DIR)
  file(READ ${_ui}/ucx-version GDR_UCX_VERSION)
  string(STRIP "${GDR_UCX_VERSION}" GDR_UCX_VERSION)
endmacro()

if(GDR_UCX_PREFIX)
  # that UCX only: a distro's UCX elsewhere on the system is another version
  find_package(ucx CONFIG QUIET PATHS ${GDR_UCX_PREFIX} NO_DEFAULT_PATH)
else()
  find_package(ucx CONFIG QUIET)
endif()
if(NOT ucx_FOUND AND GDR_UCX_SRC AND GDR_UCX_CONFIG_H)
  # Only the libraries are installed (Ubuntu's libucx0 without libucx-dev): the public headers
  # come from the exact source tree, the version headers are made for the library's version
  gdr_ucx_internal()
  file(READ ${_ui}/libdir _libdir)
  string(STRIP "${_libdir}" _libdir)
  foreach(_lib ucs uct ucp)
    add_library(ucx::${_lib} SHARED IMPORTED)
    set_target_properties(ucx::${_lib} PROPERTIES IMPORTED_LOCATION ${_libdir}/lib${_lib}.so.0
                          INTERFACE_INCLUDE_DIRECTORIES "${_ui}/include;${GDR_UCX_SRC_DIR}/src")
  endforeach()
  set(ucx_VERSION ${GDR_UCX_VERSION})
  set(ucx_DIR ${_libdir}/cmake/ucx)
  set(GDR_UCX_HEADERLESS ON)
elseif(NOT ucx_FOUND)
  message(FATAL_ERROR "UCX not found: apt-get install libucx-dev ucx-utils (or ./configure --with-ucx=DIR; "
                      "a UCX without headers: --with-ucx-src=SRC --with-ucx-config=CONFIG_H)")
endif()
# Some packages install a ucx-targets.cmake that computes its prefix wrongly on multiarch
# (Debian 13's: CMAKE_CURRENT_LIST_DIR/../../.. is /usr/lib, so ucx::ucs points at
# /usr/lib/lib/x86_64-linux-gnu/libucs.so and /usr/lib/include).  Repair such targets from the
# files that are really there, next to the config file.
get_filename_component(_ucx_libdir "${ucx_DIR}/../.." ABSOLUTE)
foreach(_lib ucs uct ucp)
  if(GDR_UCX_HEADERLESS)
    break()  # our own targets (above)
  endif()
  get_target_property(_loc ucx::${_lib} IMPORTED_LOCATION)
  get_target_property(_inc ucx::${_lib} INTERFACE_INCLUDE_DIRECTORIES)
  if(NOT EXISTS "${_loc}" OR NOT EXISTS "${_inc}/uct/api/uct.h")
    find_library(GDR_UCX_${_lib}_LIBRARY ${_lib} HINTS ${GDR_UCX_PREFIX} ${_ucx_libdir}
                 PATH_SUFFIXES lib lib64 NO_DEFAULT_PATH)
    find_path(GDR_UCX_API_INCLUDE_DIR uct/api/uct.h HINTS ${GDR_UCX_PREFIX} ${_ucx_libdir}/..
              ${_ucx_libdir}/../.. PATH_SUFFIXES include)
    if(NOT GDR_UCX_${_lib}_LIBRARY OR NOT GDR_UCX_API_INCLUDE_DIR)
      message(FATAL_ERROR "ucx::${_lib} from ${ucx_DIR} names ${_loc} and ${_inc}, which do not "
                          "exist, and no lib${_lib} + uct/api/uct.h was found near it")
    endif()
    message(STATUS "ucx::${_lib}: ${ucx_DIR} names a missing ${_loc}; using "
                   "${GDR_UCX_${_lib}_LIBRARY} and ${GDR_UCX_API_INCLUDE_DIR}")
    set_target_properties(ucx::${_lib} PROPERTIES IMPORTED_LOCATION ${GDR_UCX_${_lib}_LIBRARY}
                          INTERFACE_INCLUDE_DIRECTORIES ${GDR_UCX_API_INCLUDE_DIR})
  endif()
endforeach()
get_target_property(GDR_UCX_INCLUDE_DIR ucx::ucs INTERFACE_INCLUDE_DIRECTORIES)
list(GET GDR_UCX_INCLUDE_DIR 0 GDR_UCX_INCLUDE_DIR)

find_path(GDR_VERBS_INCLUDE_DIR infiniband/verbs.h HINTS ${GDR_VERBS_PREFIX} PATH_SUFFIXES include)
find_library(GDR_VERBS_LIBRARY ibverbs HINTS ${GDR_VERBS_PREFIX} PATH_SUFFIXES lib lib64)
if(NOT GDR_VERBS_INCLUDE_DIR OR NOT GDR_VERBS_LIBRARY)
  message(FATAL_ERROR "libibverbs not found: apt-get install libibverbs-dev (or ./configure --with-verbs=DIR)")
endif()
add_library(gdr::ibverbs INTERFACE IMPORTED)
set_target_properties(gdr::ibverbs PROPERTIES INTERFACE_INCLUDE_DIRECTORIES ${GDR_VERBS_INCLUDE_DIR}
                                              INTERFACE_LINK_LIBRARIES ${GDR_VERBS_LIBRARY})
include(CheckSymbolExists)
set(CMAKE_REQUIRED_INCLUDES ${GDR_VERBS_INCLUDE_DIR})
set(CMAKE_REQUIRED_LIBRARIES ${GDR_VERBS_LIBRARY})
check_symbol_exists(ibv_reg_dmabuf_mr infiniband/verbs.h GDR_HAVE_IBV_REG_DMABUF_MR)
unset(CMAKE_REQUIRED_INCLUDES)
unset(CMAKE_REQUIRED_LIBRARIES)

# UCT internals of exactly the installed UCX (see build-aux/ucx-internal.sh)
if(GDR_BUILD_PLUGIN)
  if(NOT GDR_UCX_HEADERLESS)
    gdr_ucx_internal()
  endif()
  # order matters: generated config.h, then the installed public headers (they carry the
  # generated version.h), then the source tree for the internal ones.
  set(GDR_UCX_INTERNAL_INCLUDES ${_ui}/include ${GDR_UCX_INCLUDE_DIR} ${GDR_UCX_SRC_DIR}/src)
endif()

# CUDA: never linked. libcuda is dlopen'ed at run time; the toolkit's cuda.h, when present,
# is only used to check our own driver-API declarations at compile time.
set(GDR_CUDA_INCLUDE_DIR "")
if(GDR_WITH_CUDA)
  find_path(GDR_CUDA_H_DIR cuda.h HINTS ${GDR_CUDA_ROOT} /usr/local/cuda ENV CUDA_HOME PATH_SUFFIXES include)
  if(GDR_CUDA_H_DIR)
    set(GDR_CUDA_INCLUDE_DIR "${GDR_CUDA_H_DIR}")
  endif()
endif()
find_package(MPI QUIET COMPONENTS C CXX)
find_package(Threads REQUIRED)
