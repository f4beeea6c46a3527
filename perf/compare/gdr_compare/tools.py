"""Finding the programs a run needs: the project's own tools (next to the plugin's build, or on
PATH) and UCX's."""

import functools
import os
import re
import shutil
import subprocess


@functools.lru_cache(maxsize=None)
def ucx_perftest():
    """ucx_perftest's command, standalone: a ucx_perftest built with MPI (Debian 13's) calls
    MPI_Init when its stdin is not a terminal and then takes its peers from MPI ("should be run
    with exactly 2 processes", a singleton's 1); `-P 0` keeps it on its own socket (as
    tests/ucx_tools/common.sh's perftest_standalone_opts).  UCX 1.13's has no MPI and no -P."""
    try:
        usage = subprocess.run(["ucx_perftest", "-h"], stdin=subprocess.DEVNULL,
                               capture_output=True, text=True, timeout=60)
        built_with_mpi = "MPI" in usage.stdout + usage.stderr
    except (OSError, subprocess.SubprocessError):
        built_with_mpi = False   # a missing ucx_perftest is reported where tools are checked
    return ("ucx_perftest",) + (("-P", "0") if built_with_mpi else ())


def build_dir_of(plugin):
    """GDR_PLUGIN=<build>/lib/libuct_gdr.so -> <build>."""
    return os.path.dirname(os.path.dirname(os.path.abspath(plugin)))


def find_tool(given, plugin, relative, flag):
    """A tool of this project: the --flag's path, else next to the plugin's build directory
    (GDR_PLUGIN=<build>/lib/libuct_gdr.so -> <build>/perf/...), else on PATH.  Returns
    (path, None) or (None, why-not)."""
    name = relative[-1]
    if given:
        path = os.path.abspath(given)
        ok = os.path.isfile(path) and os.access(path, os.X_OK)
        return (path, None) if ok else (None, f"{flag} {given}: no such executable")
    if plugin:
        path = os.path.join(build_dir_of(plugin), *relative)
        if os.path.isfile(path) and os.access(path, os.X_OK):
            return path, None
    found = shutil.which(name)
    if found:
        return found, None
    where = f" (looked in {os.path.join(build_dir_of(plugin), *relative[:-1])})" if plugin else ""
    return None, f"{name} not built{where}: build its target or give {flag}"


def missing_ucx_tools():
    missing = [t for t in ("ucx_perftest", "ucx_info") if not shutil.which(t)]
    return f"{' and '.join(missing)} not installed (apt-get install ucx-utils)" if missing else None


def ucx_version():
    try:
        out = subprocess.run(["ucx_info", "-v"], text=True, stdout=subprocess.PIPE,
                             stderr=subprocess.DEVNULL, timeout=30).stdout
        m = re.search(r"version=(\S+)", out) or re.search(r"Version\s+(\S+)", out)
        return m.group(1) if m else None
    except (OSError, subprocess.TimeoutExpired):
        return None
