// Fuzz target rkey: the gdr component's rkey_unpack, through UCX's own uct_rkey_unpack(), over
// what a peer sent as its packed remote key.
//
// UCP carries each md's packed rkey behind a one-byte length and hands the component no length
// (ucp_rkey.c), so the input fills a heap block of UINT8_MAX bytes (truncated or zero-padded):
// the unpacker may read that far, no further (ASan sees it under libFuzzer when the plugin is
// built with it; the replay driver checks the verdict).  The wire format (gdr_md.h): magic 0xd8,
// then the one 32-bit rkey of the packing md's MR; a key is accepted exactly when the magic is
// right, and unpacks to that key with nothing allocated (no handle); anything else (0xd7, the
// layout of one md over several devices, among them) is refused.
#include "fuzz_check.h"

#include <uct/api/uct.h>

#include <dlfcn.h>

#include <algorithm>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <vector>

namespace {

/// The gdr component, its plugin loaded first (GDR_PLUGIN, else the build's).
uct_component_h gdr_component()
{
    static uct_component_h found = [] {
        // every refused input logs an error line: millions of them say nothing
        setenv("UCX_LOG_LEVEL", "fatal", 0);
        const char *plugin = std::getenv("GDR_PLUGIN");
#ifdef GDR_FUZZ_DEFAULT_PLUGIN
        if (plugin == nullptr)
            plugin = GDR_FUZZ_DEFAULT_PLUGIN;
#endif
        if (plugin == nullptr || dlopen(plugin, RTLD_NOW | RTLD_LOCAL) == nullptr) {
            std::fprintf(stderr, "fuzz_rkey: cannot load the plugin (GDR_PLUGIN=%s): %s\n",
                         plugin ? plugin : "unset", dlerror());
            std::abort();
        }
        uct_component_h *components = nullptr;
        unsigned count              = 0;
        FUZZ_CHECK(uct_query_components(&components, &count) == UCS_OK);
        uct_component_h gdr = nullptr;
        for (unsigned i = 0; i < count && gdr == nullptr; ++i) {
            uct_component_attr_t attr{};
            attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
            if (uct_component_query(components[i], &attr) == UCS_OK &&
                std::strcmp(attr.name, "gdr") == 0) {
                gdr = components[i];
            }
        }
        uct_release_component_list(components);
        FUZZ_CHECK(gdr != nullptr);
        return gdr;
    }();
    return found;
}

constexpr size_t kUcpMaxRkeySize = UINT8_MAX;
constexpr uint8_t kMagic         = 0xd8;

}  // namespace

extern "C" int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    uct_component_h component = gdr_component();
    std::vector<uint8_t> buffer(kUcpMaxRkeySize, 0);
    std::memcpy(buffer.data(), data, std::min(size, buffer.size()));
    const bool valid = buffer[0] == kMagic;
    uint32_t key     = 0;
    std::memcpy(&key, buffer.data() + 1, sizeof(key));

    uct_rkey_bundle_t bundle{};
    const ucs_status_t status = uct_rkey_unpack(component, buffer.data(), &bundle);
    if (valid) {
        FUZZ_CHECK(status == UCS_OK);
        FUZZ_CHECK(bundle.rkey != UCT_INVALID_RKEY && bundle.rkey != 0);
        FUZZ_CHECK(static_cast<uint32_t>(bundle.rkey) == key);
        FUZZ_CHECK(bundle.handle == nullptr);
        FUZZ_CHECK(uct_rkey_release(component, &bundle) == UCS_OK);
    } else {
        FUZZ_CHECK(status == UCS_ERR_INVALID_PARAM);
    }
    return 0;
}
