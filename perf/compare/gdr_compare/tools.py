"""Finding the programs a run needs: the project's own tools (next to the plugin's build, or on
PATH) and UCX's."""

import os
import re
import shutil
import subprocess


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
