// gdr_reg_bench: what a registration through the gdr md costs, with the
// registration cache (UCX_GDR_RCACHE=yes) and without it, in the same run.
//
//   gdr_reg_bench [-n ITERATIONS] [-m COMPONENT[:MD]] [-p PLUGIN]
//   gdr_reg_bench -c [-k COUNT] [-s SIZE] [-m COMPONENT[:MD]] [-p PLUGIN]
//
// Each iteration registers and deregisters the same buffer, as UCP's
// rendezvous protocol does for a user buffer that is sent repeatedly. Prints
// one line per size: uncached and cached cost per registration and the ratio.
//
// -m: the md, "gdr:gdr_rxe0" (component gdr has an md per verbs device, gdr_<device>), or
// "ib:rxe0" for UCX's own ib md on rxe0; a component alone ("gdr", the default) takes its
// first md.
// -c: the cost phases of the md's registration, each COUNT calls on COUNT
// distinct SIZE-byte buffers, one line each: "phase=NAME calls=COUNT
// size=SIZE devices=N ns_per_call=T".  Phases: reg_uncached, dereg_uncached
// (UCX_GDR_RCACHE=n), reg_miss (a range the cache has not seen), reg_hit (the
// same ranges again), dereg_cached (a put: the region stays cached),
// rkey_unpack (uct_rkey_unpack + uct_rkey_release of a packed rkey).  Under
// valgrind --tool=callgrind --collect-atstart=no, each phase is collected
// alone and dumped as "phase-NAME" (the instructions of its COUNT calls: the
// registration section, perf/compare/gdr_compare/sections/registration.py).
//
// Needs a verbs device (run it in the Soft-RoCE VM: tests/rxe-vm/run).
#include "bench_util.hpp"

#include <uct/api/uct.h>

#if __has_include(<valgrind/callgrind.h>)
#include <valgrind/callgrind.h>
#else  // no valgrind headers: the phases are timed only
#define CALLGRIND_TOGGLE_COLLECT
#define CALLGRIND_ZERO_STATS
#define CALLGRIND_DUMP_STATS_AT(name) ((void)(name))
#endif

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

[[noreturn]] void die(const std::string &what, ucs_status_t status = UCS_OK)
{
    gdr_bench::die("gdr_reg_bench", 1, what, status);
}

uct_component_h find_component(const std::string &name)
{
    uct_component_h *components;
    unsigned count;
    ucs_status_t status = uct_query_components(&components, &count);
    if (status != UCS_OK) {
        die("uct_query_components", status);
    }
    uct_component_h found = nullptr;
    for (unsigned i = 0; i < count; ++i) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME;
        if (uct_component_query(components[i], &attr) == UCS_OK && name == attr.name) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    if (found == nullptr) {
        die("component '" + name + "' is not registered" +
            (name == "gdr" ? " (is the plugin loaded into this UCX?)" : ""));
    }
    return found;
}

/// The first md `component` lists (gdr: the md of the first verbs device).
std::string first_md(uct_component_h component, const std::string &component_name)
{
    uct_component_attr_t attr{};
    attr.field_mask     = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
    ucs_status_t status = uct_component_query(component, &attr);
    if (status != UCS_OK) {
        die("uct_component_query(" + component_name + ")", status);
    }
    if (attr.md_resource_count == 0) {
        die("component " + component_name + " has no md here (no verbs device?)");
    }
    std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
    attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
    attr.md_resources = mds.data();
    status            = uct_component_query(component, &attr);
    if (status != UCS_OK) {
        die("uct_component_query(" + component_name + ")", status);
    }
    return mds[0].md_name;
}

/// Opens md_name of component `gdr` or not (UCX's ib) with its registration cache on ("y") or
/// off ("n"): the gdr mds' RCACHE, the ib md's REG_METHODS (rcache / direct).  `may_fail`:
/// returns nullptr and says why in *why_not.
uct_md_h open_md(uct_component_h component, bool gdr, const std::string &md_name,
                 const char *rcache, bool may_fail = false, std::string *why_not = nullptr)
{
    uct_md_config_t *config;
    ucs_status_t status = uct_md_config_read(component, nullptr, nullptr, &config);
    if (status != UCS_OK) {
        die("uct_md_config_read", status);
    }
    const bool on           = std::strcmp(rcache, "y") == 0;
    const char *key         = gdr ? "RCACHE" : "REG_METHODS";
    const char *value       = gdr ? rcache : (on ? "rcache" : "direct");
    const std::string label = "uct_md_open(" + md_name + ", " + key + "=" + value + ")";
    status                  = uct_config_modify(config, key, value);
    if (status != UCS_OK) {
        die(std::string("uct_config_modify(") + key + "=" + value + ")", status);
    }
    uct_md_h md;
    status = uct_md_open(component, md_name.c_str(), config, &md);
    uct_config_release(config);
    if (status != UCS_OK) {
        if (!may_fail) {
            die(label, status);
        }
        *why_not = label + ": " + ucs_status_string(status);
        return nullptr;
    }
    uct_md_attr_t attr;
    uct_md_query(md, &attr);
    if (!(attr.cap.flags & UCT_MD_FLAG_REG)) {
        die("md " + md_name + " cannot register memory");
    }
    return md;
}

// seconds per register+deregister pair
double measure(uct_md_h md, void *buffer, size_t size, int iterations)
{
    auto once = [&] {
        uct_mem_h memh;
        ucs_status_t status = uct_md_mem_reg(md, buffer, size, UCT_MD_MEM_ACCESS_ALL, &memh);
        if (status != UCS_OK) {
            die("uct_md_mem_reg", status);
        }
        status = uct_md_mem_dereg(md, memh);
        if (status != UCS_OK) {
            die("uct_md_mem_dereg", status);
        }
    };
    once();  // warm-up: the first cached registration is a miss
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < iterations; ++i) {
        once();
    }
    auto t1 = std::chrono::steady_clock::now();
    return std::chrono::duration<double>(t1 - t0).count() / iterations;
}

/// One phase of -c: `body(i)` for i < count, collected alone under callgrind, timed outside it.
template <typename Body>
void phase(const char *name, int count, size_t size, unsigned devices, Body &&body)
{
    CALLGRIND_ZERO_STATS;
    CALLGRIND_TOGGLE_COLLECT;
    auto t0 = std::chrono::steady_clock::now();
    for (int i = 0; i < count; ++i) {
        body(i);
    }
    auto t1 = std::chrono::steady_clock::now();
    CALLGRIND_TOGGLE_COLLECT;
    // a named string: the client request reads the name after the statement that passes it
    const std::string dump_name = std::string("phase-") + name;
    CALLGRIND_DUMP_STATS_AT(dump_name.c_str());
    std::printf("phase=%s calls=%d size=%zu devices=%u ns_per_call=%.1f\n", name, count, size,
                devices, std::chrono::duration<double, std::nano>(t1 - t0).count() / count);
    std::fflush(stdout);
}

void check(ucs_status_t status, const char *what)
{
    if (status != UCS_OK) {
        die(what, status);
    }
}

/// -c: the registration cost phases.
void cost_phases(uct_component_h component, bool gdr, const std::string &md_name, int count,
                 size_t size)
{
    uct_md_h uncached = open_md(component, gdr, md_name, "n");
    // No cache under valgrind: UCX's memory hooks, which the cache needs, do not work there
    std::string no_cache;
    uct_md_h cached = open_md(component, gdr, md_name, "y", true, &no_cache);
    uct_md_attr_t attr;
    check(uct_md_query(uncached, &attr), "uct_md_query");
    // an md is one device, the gdr mds as the ib md (the column stays for the section's parser)
    const unsigned devices = 1;

    const size_t stride = (size + 4095) / 4096 * 4096 + 4096;  // a gap: no two ranges merge
    void *arena         = nullptr;
    if (posix_memalign(&arena, 4096, stride * count) != 0) {
        die("out of memory");
    }
    std::memset(arena, 1, stride * count);
    auto buffer = [&](int i) { return static_cast<char *>(arena) + stride * size_t(i); };
    std::vector<uct_mem_h> memh(2 * size_t(count));
    const unsigned access = UCT_MD_MEM_ACCESS_ALL;

    phase("reg_uncached", count, size, devices, [&](int i) {
        check(uct_md_mem_reg(uncached, buffer(i), size, access, &memh[i]), "uct_md_mem_reg");
    });
    phase("dereg_uncached", count, size, devices,
          [&](int i) { check(uct_md_mem_dereg(uncached, memh[i]), "uct_md_mem_dereg"); });
    if (cached != nullptr) {
        phase("reg_miss", count, size, devices, [&](int i) {
            check(uct_md_mem_reg(cached, buffer(i), size, access, &memh[i]), "uct_md_mem_reg");
        });
        phase("reg_hit", count, size, devices, [&](int i) {
            check(uct_md_mem_reg(cached, buffer(i), size, access, &memh[count + i]),
                  "uct_md_mem_reg");
        });
        phase("dereg_cached", count, size, devices, [&](int i) {
            check(uct_md_mem_dereg(cached, memh[i]), "uct_md_mem_dereg");
            check(uct_md_mem_dereg(cached, memh[count + i]), "uct_md_mem_dereg");
        });
    } else {
        for (const char *name : {"reg_miss", "reg_hit", "dereg_cached"}) {
            std::printf("phase=%s unavailable: %s\n", name, no_cache.c_str());
        }
    }

    uct_mem_h key_memh;
    check(uct_md_mem_reg(uncached, buffer(0), size, access, &key_memh), "uct_md_mem_reg");
    std::vector<uint8_t> packed(attr.rkey_packed_size);
    check(uct_md_mkey_pack(uncached, key_memh, packed.data()), "uct_md_mkey_pack");
    phase("rkey_unpack", count, size, devices, [&](int) {
        uct_rkey_bundle_t bundle;
        check(uct_rkey_unpack(component, packed.data(), &bundle), "uct_rkey_unpack");
        check(uct_rkey_release(component, &bundle), "uct_rkey_release");
    });
    check(uct_md_mem_dereg(uncached, key_memh), "uct_md_mem_dereg");
    std::free(arena);
    if (cached != nullptr) {
        uct_md_close(cached);
    }
    uct_md_close(uncached);
}

}  // namespace

int main(int argc, char **argv)
{
    int iterations      = 200;
    bool cost           = false;
    int count           = 100;
    std::string md_spec = "gdr";
    size_t cost_size    = 65536;
    std::string plugin = std::getenv("GDR_PLUGIN") ? std::getenv("GDR_PLUGIN") : GDR_PLUGIN_DEFAULT;
    int opt;
    while ((opt = getopt(argc, argv, "n:p:ck:s:m:h")) != -1) {
        switch (opt) {
        case 'c':
            cost = true;
            break;
        case 'm':
            md_spec = optarg;
            break;
        case 'k':
            count = std::atoi(optarg);
            break;
        case 's':
            cost_size = std::strtoull(optarg, nullptr, 0);
            break;
        case 'n':
            iterations = std::atoi(optarg);
            break;
        case 'p':
            plugin = optarg;
            break;
        default:
            std::fprintf(stderr,
                         "usage: %s [-n ITERATIONS] [-m COMPONENT[:MD]] [-p PLUGIN]\n"
                         "       %s -c [-k COUNT] [-s SIZE] [-m COMPONENT[:MD]] [-p PLUGIN]\n",
                         argv[0], argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (iterations <= 0 || count <= 0 || cost_size == 0) {
        die("-n, -k and -s must be positive");
    }
    if (!plugin.empty() && dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        die(std::string("cannot load plugin: ") + dlerror());
    }

    // "gdr", "gdr:gdr_rxe0" or "ib:rxe0" (the same phases on UCX's own ib md, for the comparison)
    const size_t colon               = md_spec.find(':');
    const std::string component_name = md_spec.substr(0, colon);
    const uct_component_h component  = find_component(component_name);
    const std::string md_name = colon == std::string::npos ? first_md(component, component_name)
                                                           : md_spec.substr(colon + 1);
    const bool gdr            = component_name == "gdr";
    if (cost) {
        cost_phases(component, gdr, md_name, count, cost_size);
        return 0;
    }
    uct_md_h uncached = open_md(component, gdr, md_name, "n");
    uct_md_h cached   = open_md(component, gdr, md_name, "y");

    std::printf(
        "# md %s registration cost, register+deregister of the same buffer, %d iterations\n",
        md_name.c_str(), iterations);
    std::printf("# %10s %16s %16s %10s\n", "size", "uncached (us)", "cached (us)", "ratio");
    for (size_t size : {size_t(4096), size_t(65536), size_t(1) << 20, size_t(16) << 20}) {
        void *buffer = nullptr;
        if (posix_memalign(&buffer, 4096, size) != 0) {
            die("out of memory");
        }
        std::memset(buffer, 1, size);  // fault the pages in: measure registration, not paging
        double t_uncached = measure(uncached, buffer, size, iterations);
        double t_cached   = measure(cached, buffer, size, iterations);
        std::printf("  %10zu %16.2f %16.3f %9.1fx\n", size, t_uncached * 1e6, t_cached * 1e6,
                    t_uncached / t_cached);
        std::free(buffer);
    }
    uct_md_close(cached);
    uct_md_close(uncached);
    return 0;
}
