/**
 * @file plugin.hpp
 * @brief ucp_cpp::load_plugin(): load a UCT component (e.g. the gdr plugin) before UCP starts.
 *
 * An out-of-tree UCT component such as libuct_gdr.so registers itself from an ELF constructor.
 * UCX releases that only load the modules compiled into them need that constructor to run
 * before ucp_init() (context creation), so this helper dlopen()s the library and refuses to do so
 * once a ucp_cpp::context exists in the process (UCP would silently ignore the new component).
 * Releases that also load plugins from UCX_PLUGIN_PATH directories
 * (detail::ucx_compat::loads_plugins_from_directories()) find a plugin installed there
 * themselves; load_plugin() still works with them (the same file registers once) and is what
 * loads a plugin from anywhere else.
 * The wrapper itself never needs the plugin: it works over any UCX transport.
 *
 * Thread safety: safe to call from any thread; call it before creating the first context.
 *
 * Layer: above error.hpp and detail/ (needs no context: it runs before any).
 */
#pragma once

#include <ucp_cpp/detail/globals.hpp>
#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/error.hpp>

#include <dlfcn.h>

#include <string>

namespace ucp_cpp {

/// Default file name of the project's UCT plugin (resolved through the dynamic linker's path).
inline constexpr const char *default_plugin = "libuct_gdr.so";

/**
 * @brief Loads a UCT plugin library so that its component is registered before UCP initialises.
 *
 * @param path  file name (searched like any shared library) or path of the plugin.
 * @return true if this call loaded it, false if it was already loaded (LD_PRELOAD, a link
 *         dependency or an earlier call): calling it twice is harmless.
 * @throws ucx_error(UCS_ERR_NO_ELEM) if the library cannot be loaded (absent file, missing
 *         dependency: dlerror()'s text is in the message);
 *         ucx_error(UCS_ERR_INVALID_PARAM) if it is not loaded yet but a context already exists.
 */
inline bool load_plugin(const std::string &path = default_plugin)
{
    // The handle is deliberately never dlclose()d: the component lives in UCX's global lists.
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_NOLOAD) != nullptr) {
        return false;
    }
    if (detail::live_contexts().load() != 0) {
        throw ucx_error(UCS_ERR_INVALID_PARAM,
                        "load_plugin(" + path +
                            "): a UCP context already exists; plugins must "
                            "be loaded before the first context is created" +
                            std::string(detail::ucx_compat::loads_plugins_from_directories()
                                            ? " (or put it in a directory of UCX_PLUGIN_PATH)"
                                            : ""));
    }
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        const char *why = dlerror();
        throw ucx_error(UCS_ERR_NO_ELEM,
                        "load_plugin(" + path + "): " + (why != nullptr ? why : "dlopen failed"));
    }
    return true;
}

}  // namespace ucp_cpp
