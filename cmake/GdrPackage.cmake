# `make package` (CPack, DEB): ucx-gdr_<version>+ucx<UCX version>_<arch>.deb, the plugin and
# nothing else of the project, for exactly the UCX this build was configured against:
#   /usr/lib/<multiarch>/ucx-gdr/libuct_gdr.so{,.0,.0.0.0}       the loader (LD_PRELOAD, dlopen, link)
#   /usr/lib/<multiarch>/ucx-gdr/ucx-gdr/libuct_gdr-ucxM.m.so    the component it loads
#   /usr/lib/<multiarch>/pkgconfig/ucx-gdr.pc                    pkg-config --variable=plugin ucx-gdr
#   GDR_UCX_MODULE_DIR/libuct_gdr.so.0*, .../ucx-gdr/            if set (UCX 1.22+ loads it by itself)
# Depends: when that UCX is a Debian package (dpkg -S of its libucs, asked where cmake runs: inside
# the Debian 13 root for that leg), `libucx0 (= <installed version>)`; then the packages of
# libibverbs, libstdc++ and libc (>= the installed upstream versions).  A UCX from a private
# prefix: no UCX dependency, and the description names that prefix and version.
# Included from the top CMakeLists.txt after uct_gdr/ (it uses gdr_install_plugin() from there).
# Checked by tests/legs/package-smoke (installs the .deb, loads it, runs the rdma smoke).

set(GDR_DEB_MAINTAINER "ucx-gdr maintainers <ucx-gdr@localhost>" CACHE STRING
    "Maintainer: field of the .deb (make package)")

# Debian's libdir is /usr/lib/<multiarch>.  GNUInstallDirs gives lib/<multiarch> only when the
# build was configured with CMAKE_INSTALL_PREFIX=/usr (./configure's default is /usr/local, where
# it gives lib), so the package has install rules of its own: component plugin_deb, left out of a
# plain `cmake --install`, with this libdir whatever the prefix is.
if(CMAKE_LIBRARY_ARCHITECTURE)
  set(GDR_DEB_LIBDIR lib/${CMAKE_LIBRARY_ARCHITECTURE})
else()
  set(GDR_DEB_LIBDIR lib)
endif()
gdr_install_plugin(plugin_deb ${GDR_DEB_LIBDIR} EXCLUDE_FROM_ALL)

# _gdr_deb_owner(<file> <pkg-var> <version-var>): the installed Debian package that owns <file>
# (by its real path, its given path, or the real path without /usr: merged-/usr systems whose
# dpkg database still lists /lib/...), and that package's installed version; empty if none.
find_program(GDR_DPKG_QUERY dpkg-query)
mark_as_advanced(GDR_DPKG_QUERY)
function(_gdr_deb_owner file pkg_var ver_var)
  set(${pkg_var} "" PARENT_SCOPE)
  set(${ver_var} "" PARENT_SCOPE)
  if(NOT GDR_DPKG_QUERY OR NOT file OR NOT EXISTS "${file}")
    return()
  endif()
  get_filename_component(real "${file}" REALPATH)
  set(candidates "${real}" "${file}")
  if(real MATCHES "^/usr(/.*)$")
    list(APPEND candidates "${CMAKE_MATCH_1}")
  endif()
  foreach(f IN LISTS candidates)
    execute_process(COMMAND ${GDR_DPKG_QUERY} -S "${f}" RESULT_VARIABLE rc
                    OUTPUT_VARIABLE out ERROR_QUIET OUTPUT_STRIP_TRAILING_WHITESPACE)
    # "libucx0:amd64: /usr/lib/x86_64-linux-gnu/libucs.so.0.0.0" (diversions: "a, b: path")
    if(rc EQUAL 0 AND out MATCHES "^([a-z0-9][a-z0-9+.-]+)(:[a-z0-9]+)?[,:] ")
      set(pkg ${CMAKE_MATCH_1})
      execute_process(COMMAND ${GDR_DPKG_QUERY} -W -f=\${Version} "${pkg}${CMAKE_MATCH_2}"
                      RESULT_VARIABLE rc OUTPUT_VARIABLE ver ERROR_QUIET
                      OUTPUT_STRIP_TRAILING_WHITESPACE)
      if(rc EQUAL 0 AND ver)
        set(${pkg_var} ${pkg} PARENT_SCOPE)
        set(${ver_var} ${ver} PARENT_SCOPE)
        return()
      endif()
    endif()
  endforeach()
endfunction()

# UCX: exactly the installed package version (the plugin refuses any other UCX release, and its
# component uses UCT internals of exactly this one)
get_target_property(_gdr_libucs ucx::ucs IMPORTED_LOCATION)
_gdr_deb_owner("${_gdr_libucs}" GDR_DEB_UCX_PACKAGE GDR_DEB_UCX_PACKAGE_VERSION)
set(_gdr_depends "")
set(_gdr_depends_pkgs ${GDR_DEB_UCX_PACKAGE})
if(GDR_DEB_UCX_PACKAGE)
  list(APPEND _gdr_depends "${GDR_DEB_UCX_PACKAGE} (= ${GDR_DEB_UCX_PACKAGE_VERSION})")
  set(_gdr_ucx_what "UCX ${GDR_UCX_VERSION} (${GDR_DEB_UCX_PACKAGE} ${GDR_DEB_UCX_PACKAGE_VERSION})")
else()
  get_filename_component(_gdr_ucx_libdir "${_gdr_libucs}" DIRECTORY)
  set(_gdr_ucx_where "${GDR_UCX_PREFIX}")
  if(NOT _gdr_ucx_where)
    set(_gdr_ucx_where "${_gdr_ucx_libdir}")
  endif()
  set(_gdr_ucx_what "UCX ${GDR_UCX_VERSION} installed in
${_gdr_ucx_where}
(not a Debian package: that UCX must be installed there)")
endif()
# what the component and loader link besides UCX: >= the installed upstream version
execute_process(COMMAND ${CMAKE_CXX_COMPILER} -print-file-name=libstdc++.so.6
                OUTPUT_VARIABLE _gdr_libstdcxx OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
execute_process(COMMAND ${CMAKE_C_COMPILER} -print-file-name=libc.so.6
                OUTPUT_VARIABLE _gdr_libc OUTPUT_STRIP_TRAILING_WHITESPACE ERROR_QUIET)
foreach(_gdr_lib "${GDR_VERBS_LIBRARY}" "${_gdr_libstdcxx}" "${_gdr_libc}")
  _gdr_deb_owner("${_gdr_lib}" _gdr_pkg _gdr_ver)
  if(_gdr_pkg AND NOT _gdr_pkg IN_LIST _gdr_depends_pkgs)
    list(APPEND _gdr_depends_pkgs ${_gdr_pkg})
    string(REGEX REPLACE "-[^-]*$" "" _gdr_ver "${_gdr_ver}")  # the Debian revision
    list(APPEND _gdr_depends "${_gdr_pkg} (>= ${_gdr_ver})")
  endif()
endforeach()
list(JOIN _gdr_depends ", " GDR_DEB_DEPENDS)

set(_gdr_plugin /usr/${GDR_DEB_LIBDIR}/ucx-gdr/libuct_gdr.so)
set(_gdr_load "Load it before ucp_init() in every process that talks over it, e.g.
 LD_PRELOAD=${_gdr_plugin} ucx_info -d
or link it into the program (pkg-config --libs ucx-gdr) or dlopen() it.")
if(GDR_UCX_MODULE_DIR)
  set(_gdr_load "This UCX loads it by itself from its module directory (installed there too):
 ${GDR_UCX_MODULE_DIR}
no environment is needed.  Other programs can still preload
 ${_gdr_plugin}")
endif()

set(CPACK_GENERATOR DEB)
set(CPACK_PACKAGE_NAME ucx-gdr)
set(CPACK_PACKAGE_VENDOR ucx-gdr)
set(CPACK_PACKAGE_VERSION ${PROJECT_VERSION})
set(CPACK_PACKAGE_DESCRIPTION_SUMMARY
    "GPUDirect RDMA UCT plugin (md gdr, transport gdr_rc) for UCX ${GDR_UCX_VERSION}")
set(CPACK_PACKAGE_CONTACT "${GDR_DEB_MAINTAINER}")
# only the plugin, as one package
set(CPACK_DEB_COMPONENT_INSTALL ON)
set(CPACK_COMPONENTS_ALL plugin_deb)
set(CPACK_DEBIAN_PLUGIN_DEB_PACKAGE_NAME ucx-gdr)
set(CPACK_DEBIAN_PACKAGE_VERSION "${PROJECT_VERSION}+ucx${GDR_UCX_VERSION}")
set(CPACK_DEBIAN_PLUGIN_DEB_FILE_NAME DEB-DEFAULT)   # ucx-gdr_0.1.0+ucx1.13.1_amd64.deb
set(CPACK_DEBIAN_PACKAGE_MAINTAINER "${GDR_DEB_MAINTAINER}")
set(CPACK_DEBIAN_PACKAGE_SECTION libs)
set(CPACK_DEBIAN_PACKAGE_PRIORITY optional)
set(CPACK_DEBIAN_PACKAGE_DEPENDS "${GDR_DEB_DEPENDS}")
set(CPACK_DEBIAN_PLUGIN_DEB_DESCRIPTION "\
libuct_gdr adds the UCT component gdr (memory domain gdr, transport gdr_rc:
RDMA over RC queue pairs through libibverbs, host and CUDA memory) to an
existing, unmodified UCX.

Built for exactly ${_gdr_ucx_what}.
In any other UCX release it refuses, with one line on stderr, to register.

${_gdr_load}
")  # (the final newline keeps the last line's indentation: CPack strips a last line)
# the package's files land under /usr; UCX's module directory is absolute: DESTDIR staging
# keeps it at its own path inside the package
set(CPACK_PACKAGING_INSTALL_PREFIX /usr)
set(CPACK_INSTALL_PREFIX /usr)
set(CPACK_SET_DESTDIR ON)
set(CPACK_STRIP_FILES ON)
set(CPACK_SOURCE_GENERATOR "")
include(CPack)

message(STATUS "make package: ${CPACK_PACKAGE_NAME} ${CPACK_DEBIAN_PACKAGE_VERSION}, "
               "/usr/${GDR_DEB_LIBDIR}/ucx-gdr, Depends: ${GDR_DEB_DEPENDS}")
