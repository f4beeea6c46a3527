# make install: an Environment Modules / Lmod modulefile, so that `module load ucx-gdr` sets what
# docs' launch lines need for the UCX this build is for (docs/install.md, "Environment Modules /
# Lmod"):
#   <prefix>/<GDR_MODULEFILE_DIR>/ucx-gdr/<version>      (default share/modulefiles/ucx-gdr/0.1.0)
# One Tcl modulefile: Lmod reads Tcl and Lua, Environment Modules only Tcl.  It sets PATH (the
# tools), PKG_CONFIG_PATH (ucx-gdr.pc, ucp_cpp.pc, ucp_cpp_coll.pc), CMAKE_PREFIX_PATH
# (find_package(ucp_cpp)) and how this UCX gets the plugin: LD_PRELOAD of the loader up to UCX
# 1.21 (only compiled-in modules load there, the plugin registers from its ELF constructor);
# nothing from 1.22 on when the plugin is installed into UCX's module directory
# (GDR_UCX_MODULE_DIR), else UCX_PLUGIN_PATH.
# No MANPATH (the project installs no man pages) and no OMPI_MCA_* (Open MPI's policy, not the
# plugin's: docs/install.md says why).
#
# The template's values known now (versions, relative directories, the load lines) are filled in
# here by configure_file; the prefix only at install time, because `cmake --install --prefix DIR`
# can name another prefix than the configured one: the installed file holds absolute paths, so it
# can be copied or linked into a site's module tree.  Component `modulefile`; tests/modulefile
# checks it with Lmod (and loads the plugin through it in the Soft-RoCE VM).
# Included from the top CMakeLists.txt after uct_gdr/ and perf/ (it reads uct_gdr's UCX facts).

option(GDR_INSTALL_MODULEFILE "make install: also an Environment Modules/Lmod modulefile" ON)
set(GDR_MODULEFILE_DIR "${CMAKE_INSTALL_DATADIR}/modulefiles" CACHE STRING
    "Where make install puts the modulefile tree (ucx-gdr/<version>); relative: under the prefix")
if(NOT GDR_INSTALL_MODULEFILE)
  return()
endif()

# _gdr_modulefile_path(<var> <dir>): <dir> as the modulefile names it -- under $prefix (a Tcl
# variable, set at install time) if relative, else as is
function(_gdr_modulefile_path var dir)
  if(IS_ABSOLUTE "${dir}")
    set(${var} "${dir}" PARENT_SCOPE)
  else()
    set(${var} "\$prefix/${dir}" PARENT_SCOPE)
  endif()
endfunction()
_gdr_modulefile_path(GDR_MODULEFILE_BINDIR "${CMAKE_INSTALL_BINDIR}")
_gdr_modulefile_path(GDR_MODULEFILE_LIBDIR "${CMAKE_INSTALL_LIBDIR}")

# How this UCX gets the plugin (uct_gdr/CMakeLists.txt installs it; these are its facts)
set(_loads_dirs OFF)
if(GDR_BUILD_PLUGIN)
  get_directory_property(_loads_dirs DIRECTORY uct_gdr DEFINITION GDR_UCX_LOADS_PLUGIN_DIRS)
endif()
if(NOT GDR_BUILD_PLUGIN)
  set(GDR_MODULEFILE_LOAD "# (built without the plugin: -DGDR_BUILD_PLUGIN=OFF)")
  set(GDR_MODULEFILE_HELP_LOAD "This build has no plugin (GDR_BUILD_PLUGIN=OFF).")
  set(GDR_MODULEFILE_HELP_MPIRUN "")
elseif(_loads_dirs AND GDR_UCX_MODULE_DIR)
  set(GDR_MODULEFILE_LOAD "# UCX ${GDR_UCX_VERSION} loads the plugin from its module directory by itself, where make install
# put it too (${GDR_UCX_MODULE_DIR}): no LD_PRELOAD, nothing to set")
  set(GDR_MODULEFILE_HELP_LOAD "UCX loads it by itself from ${GDR_UCX_MODULE_DIR}: no preload.")
  set(GDR_MODULEFILE_HELP_MPIRUN "")
elseif(_loads_dirs)
  set(GDR_MODULEFILE_LOAD "# UCX ${GDR_UCX_VERSION} scans UCX_PLUGIN_PATH for lib<framework>_<name>.so.0 (the loader)
prepend-path UCX_PLUGIN_PATH   \"${GDR_MODULEFILE_LIBDIR}/ucx-gdr\"")
  set(GDR_MODULEFILE_HELP_LOAD "This module sets UCX_PLUGIN_PATH, where UCX finds it by itself.")
  set(GDR_MODULEFILE_HELP_MPIRUN "-x UCX_PLUGIN_PATH ")
else()
  set(GDR_MODULEFILE_LOAD "# UCX ${GDR_UCX_VERSION} loads only the modules compiled into it: the plugin registers from its ELF
# constructor, so it must be in every process before ucp_init -- here, in every process started
# from this shell (docs/install.md, \"Loading the plugin\")
prepend-path LD_PRELOAD        \"${GDR_MODULEFILE_LIBDIR}/ucx-gdr/libuct_gdr.so.0\"")
  set(GDR_MODULEFILE_HELP_LOAD "This module preloads it (LD_PRELOAD) into every process of this shell.")
  set(GDR_MODULEFILE_HELP_MPIRUN "-x LD_PRELOAD ")
endif()

# Stage 1, now: everything but the prefix (configure_file gives @GDR_MODULEFILE_PREFIX@ back)
set(GDR_MODULEFILE_PREFIX "@GDR_MODULEFILE_PREFIX@")
set(_gdr_mf_stage ${CMAKE_BINARY_DIR}/modulefile/ucx-gdr.modulefile.in)
configure_file(${CMAKE_CURRENT_LIST_DIR}/ucx-gdr.modulefile.in ${_gdr_mf_stage} @ONLY)

# Stage 2, at install time: the prefix being installed to, written straight to its place (under
# DESTDIR when staging: the file still names the final prefix) and recorded in the manifest like
# any installed file; no shared file in the build tree, so installs to several prefixes at once
# (the tests do) cannot meet
if(IS_ABSOLUTE "${GDR_MODULEFILE_DIR}")
  set(_gdr_mf_dir "${GDR_MODULEFILE_DIR}")
else()
  set(_gdr_mf_dir "\${CMAKE_INSTALL_PREFIX}/${GDR_MODULEFILE_DIR}")
endif()
install(CODE "
  set(GDR_MODULEFILE_PREFIX \"\${CMAKE_INSTALL_PREFIX}\")
  set(_mf \"\$ENV{DESTDIR}${_gdr_mf_dir}/ucx-gdr/${PROJECT_VERSION}\")
  message(STATUS \"Installing: \${_mf}\")
  configure_file(\"${_gdr_mf_stage}\" \"\${_mf}\" @ONLY)
  list(APPEND CMAKE_INSTALL_MANIFEST_FILES \"\${_mf}\")
" COMPONENT modulefile)
