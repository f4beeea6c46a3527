# Dependencies: UCX (public CMake package + internal headers of the exact installed version),
# libibverbs (rdma-core), optional CUDA toolkit headers.
if(GDR_UCX_PREFIX)
  list(PREPEND CMAKE_PREFIX_PATH ${GDR_UCX_PREFIX})
endif()
find_package(ucx CONFIG QUIET)
if(NOT ucx_FOUND)
  message(FATAL_ERROR "UCX not found: apt-get install libucx-dev ucx-utils (or ./configure --with-ucx=DIR)")
endif()
get_target_property(GDR_UCX_INCLUDE_DIR ucx::ucs INTERFACE_INCLUDE_DIRECTORIES)

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
  set(_ui ${CMAKE_BINARY_DIR}/ucx-internal)
  execute_process(COMMAND ${CMAKE_SOURCE_DIR}/build-aux/ucx-internal.sh ${_ui} "${GDR_UCX_PREFIX}" "${GDR_UCX_SRC}"
                  RESULT_VARIABLE _rc)
  if(NOT _rc EQUAL 0)
    message(FATAL_ERROR "UCX internal headers unavailable (see the line above)")
  endif()
  file(READ ${_ui}/ucx-src GDR_UCX_SRC_DIR)
  string(STRIP "${GDR_UCX_SRC_DIR}" GDR_UCX_SRC_DIR)
  file(READ ${_ui}/ucx-version GDR_UCX_VERSION)
  string(STRIP "${GDR_UCX_VERSION}" GDR_UCX_VERSION)
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
