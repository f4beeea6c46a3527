// gdr_reg_bench: what a registration through the gdr md costs, with the
// registration cache (UCX_GDR_RCACHE=yes) and without it, in the same run.
//
//   gdr_reg_bench [-n ITERATIONS] [-p PLUGIN] [-m host|cuda]
//
// Each iteration registers and deregisters the same buffer, as UCP's
// rendezvous protocol does for a user buffer that is sent repeatedly. Prints
// one line per size: uncached and cached cost per registration and the ratio.
// Needs a verbs device (run it in the Soft-RoCE VM: tests/rxe-vm/run).
#include <uct/api/uct.h>

#include <chrono>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <dlfcn.h>
#include <string>
#include <unistd.h>
#include <vector>

namespace {

#ifndef GDR_PLUGIN_DEFAULT
#define GDR_PLUGIN_DEFAULT "libuct_gdr.so"
#endif

[[noreturn]] void die(const std::string &what, ucs_status_t status = UCS_OK)
{
    std::fprintf(stderr, "gdr_reg_bench: %s%s%s\n", what.c_str(), status != UCS_OK ? ": " : "",
                 status != UCS_OK ? ucs_status_string(status) : "");
    std::exit(1);
}

uct_component_h find_gdr_component()
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
        if (uct_component_query(components[i], &attr) == UCS_OK &&
            std::strcmp(attr.name, "gdr") == 0) {
            found = components[i];
        }
    }
    uct_release_component_list(components);
    if (found == nullptr) {
        die("component 'gdr' is not registered (is the plugin loaded into this UCX?)");
    }
    return found;
}

uct_md_h open_md(uct_component_h component, const char *rcache)
{
    uct_md_config_t *config;
    ucs_status_t status = uct_md_config_read(component, nullptr, nullptr, &config);
    if (status != UCS_OK) {
        die("uct_md_config_read", status);
    }
    uct_config_modify(config, "RCACHE", rcache);
    uct_md_h md;
    status = uct_md_open(component, "gdr", config, &md);
    uct_config_release(config);
    if (status != UCS_OK) {
        die(std::string("uct_md_open(gdr, RCACHE=") + rcache + ")", status);
    }
    uct_md_attr_t attr;
    uct_md_query(md, &attr);
    if (!(attr.cap.flags & UCT_MD_FLAG_REG)) {
        die("md gdr cannot register memory here (no verbs device)");
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

}  // namespace

int main(int argc, char **argv)
{
    int iterations     = 200;
    std::string plugin = std::getenv("GDR_PLUGIN") ? std::getenv("GDR_PLUGIN") : GDR_PLUGIN_DEFAULT;
    int opt;
    while ((opt = getopt(argc, argv, "n:p:h")) != -1) {
        switch (opt) {
        case 'n':
            iterations = std::atoi(optarg);
            break;
        case 'p':
            plugin = optarg;
            break;
        default:
            std::fprintf(stderr, "usage: %s [-n ITERATIONS] [-p PLUGIN]\n", argv[0]);
            return opt == 'h' ? 0 : 2;
        }
    }
    if (iterations <= 0) {
        die("-n must be positive");
    }
    if (!plugin.empty() && dlopen(plugin.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        die(std::string("cannot load plugin: ") + dlerror());
    }

    uct_component_h component = find_gdr_component();
    uct_md_h uncached         = open_md(component, "n");
    uct_md_h cached           = open_md(component, "y");

    std::printf(
        "# gdr md registration cost, register+deregister of the same buffer, %d iterations\n",
        iterations);
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
