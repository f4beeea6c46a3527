# cmake -DUCP_CPP_INCLUDE_DIR=<ucp_cpp/include> -P check_header_layers.cmake
#
# ucp_cpp's headers read top-down: each includes only headers of lower layers, so that no
# include runs back up and no include circle can form (docs/ucp_cpp.md, "Headers").  This checks
# it, and that the umbrella ucp_cpp.hpp includes every other header.  A header missing from the
# table below is an error: a new header gets its layer when it is added.  The collectives
# (<ucp_cpp/coll/...>, the module ../../ucp_cpp_coll) sit above the whole wrapper: no header of
# the wrapper includes one, nor does a coll/ folder live among the wrapper's headers.
cmake_minimum_required(VERSION 3.20)

# Lowest layer first.  A header may include headers of the layers above its own line only.
set(layers
  "detail/globals.hpp detail/ucx_compat.hpp"
  "error.hpp tag.hpp version.hpp"
  "context.hpp plugin.hpp"
  "memory.hpp worker.hpp"
  "listener.hpp progress_thread.hpp request.hpp"
  "am.hpp endpoint.hpp"
  "blocking.hpp rkey.hpp"
  "detail/endpoint.inl detail/worker.inl"
  "ucp_cpp.hpp")
# The collectives' headers: the module above; never included from here.
set(coll_prefix "coll/")

get_filename_component(root ${UCP_CPP_INCLUDE_DIR}/ucp_cpp ABSOLUTE)
set(errors)
set(rank 0)
foreach(layer IN LISTS layers)
  string(REPLACE " " ";" headers "${layer}")
  foreach(header IN LISTS headers)
    set(rank_of_${header} ${rank})
    if(NOT EXISTS ${root}/${header})
      list(APPEND errors "${header} is in the layer table but not in ${root}")
    endif()
  endforeach()
  math(EXPR rank "${rank} + 1")
endforeach()

file(GLOB_RECURSE files RELATIVE ${root} ${root}/*.hpp ${root}/*.inl)
if(EXISTS ${root}/${coll_prefix})
  list(APPEND errors "${root}/${coll_prefix} exists: the collectives are a module of their own \
(ucp_cpp_coll/include/ucp_cpp/coll), not part of the wrapper")
  list(FILTER files EXCLUDE REGEX "^${coll_prefix}")
endif()
file(STRINGS ${root}/ucp_cpp.hpp umbrella_lines REGEX "#include <ucp_cpp/")
foreach(file IN LISTS files)
  if(NOT DEFINED rank_of_${file})
    list(APPEND errors "${file} has no layer: add it to the table in ${CMAKE_CURRENT_LIST_FILE}")
    continue()
  endif()
  if(NOT file STREQUAL "ucp_cpp.hpp" AND NOT umbrella_lines MATCHES "<ucp_cpp/${file}>")
    list(APPEND errors "ucp_cpp.hpp does not include ${file}")
  endif()
  file(STRINGS ${root}/${file} lines REGEX "^[ \t]*#[ \t]*include[ \t]*<ucp_cpp/")
  foreach(line IN LISTS lines)
    string(REGEX REPLACE ".*<ucp_cpp/([^>]+)>.*" "\\1" included "${line}")
    if(included MATCHES "^${coll_prefix}")
      list(APPEND errors "${file} includes ${included}: the wrapper never includes the \
collectives (they are built on it: ucp_cpp::coll depends on ucp_cpp::ucp_cpp, not the reverse)")
    elseif(NOT DEFINED rank_of_${included})
      list(APPEND errors "${file} includes ${included}, which has no layer")
    elseif(NOT rank_of_${included} LESS rank_of_${file})
      list(APPEND errors "${file} (layer ${rank_of_${file}}) includes ${included} \
(layer ${rank_of_${included}}): includes must go down")
    endif()
  endforeach()
endforeach()

if(errors)
  list(JOIN errors "\n  " text)
  message(FATAL_ERROR "ucp_cpp header layering:\n  ${text}")
endif()
list(LENGTH files count)
message(STATUS "ucp_cpp header layering: ${count} headers, every include goes down, none to coll/")
