// gdr-doctor: is this machine ready for GPUDirect RDMA with ucx-gdr?  Read-only.
// See docs/doctor.md (checks, exit status, JSON schema).
#include "diagnose.hpp"

#include <sys/stat.h>
#include <unistd.h>
#include <climits>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

const char kUsage[] =
    "usage: gdr-doctor [--json] [--root DIR] [--plugin PATH] [--gid-index N]\n"
    "\n"
    "Checks RDMA devices and ports, GID tables, GPUs, the GPU<->NIC<->NUMA topology, ACS,\n"
    "IOMMU, nvidia-peermem, dma-buf, the memlock limit, UCX and the ucx-gdr plugin.\n"
    "Changes nothing; runs without root (and says what it could not read).\n"
    "\n"
    "  --json          machine-readable report on stdout\n"
    "  --root DIR      read sysfs/procfs below DIR (a synthetic tree); skips live probes\n"
    "  --plugin PATH   libuct_gdr.so to load (default: the built or installed one)\n"
    "  --gid-index N   show the GID choice with an explicit index, as gdr_rc would be told\n"
    "\n"
    "exit status: 0 ready, 1 degraded (works, below what the hardware can do),\n"
    "             2 not ready, 3 usage error\n";

int usage_error(const std::string &message)
{
    std::fprintf(stderr, "gdr-doctor: %s\n%s", message.c_str(), kUsage);
    return gdr::doctor::kUsageError;
}

/// Where a built or installed plugin is looked for, in order.
std::vector<std::string> default_plugin_paths()
{
    std::vector<std::string> paths = {GDR_DOCTOR_PLUGIN_BUILD, GDR_DOCTOR_PLUGIN_INSTALL};
    char exe[PATH_MAX];
    ssize_t n = ::readlink("/proc/self/exe", exe, sizeof(exe) - 1);
    if (n > 0) {
        exe[n] = '\0';
        std::string dir(exe);
        dir.erase(dir.rfind('/'));
        paths.push_back(dir + "/../" GDR_DOCTOR_LIBDIR
                              "/ucx-gdr/libuct_gdr.so");  // a relocated prefix
    }
    return paths;
}

}  // namespace

int main(int argc, char **argv)
{
    gdr::doctor::Options options;
    bool json = false;
    for (int i = 1; i < argc; ++i) {
        std::string arg = argv[i];
        auto value      = [&](const char *name) -> const char      *{
            if (i + 1 >= argc) {
                return nullptr;
            }
            (void)name;
            return argv[++i];
        };
        if (arg == "--json") {
            json = true;
        } else if (arg == "--root" || arg == "--plugin" || arg == "--gid-index") {
            const char *v = value(arg.c_str());
            if (v == nullptr) {
                return usage_error(arg + " needs a value");
            }
            if (arg == "--root") {
                options.root = v;
            } else if (arg == "--plugin") {
                options.plugin = v;
            } else {
                char *end = nullptr;
                long n    = std::strtol(v, &end, 10);
                if (*v == '\0' || *end != '\0' || n < 0 || n > 65535) {
                    return usage_error(std::string("--gid-index: not a GID index: '") + v + "'");
                }
                options.gid_index = static_cast<int>(n);
            }
        } else if (arg == "-h" || arg == "--help") {
            std::fputs(kUsage, stdout);
            return 0;
        } else if (arg == "--version") {
            std::puts("gdr-doctor " GDR_DOCTOR_VERSION);
            return 0;
        } else {
            return usage_error("unknown argument '" + arg + "'");
        }
    }
    struct stat st;
    if (::stat(options.root.c_str(), &st) != 0) {
        return usage_error("--root " + options.root + ": " + std::strerror(errno));
    }
    if (!S_ISDIR(st.st_mode)) {
        return usage_error("--root " + options.root + ": not a directory");
    }
    options.plugin_defaults = default_plugin_paths();
    try {
        gdr::doctor::Report report = gdr::doctor::diagnose(options);
        std::fputs(json ? report.json().c_str() : report.human().c_str(), stdout);
        std::fflush(stdout);
        return report.exit_status();
    } catch (const std::exception &e) {
        std::fprintf(stderr, "gdr-doctor: internal error: %s\n", e.what());
        return gdr::doctor::kUsageError;
    }
}
