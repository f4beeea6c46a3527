// gtest main of the UCT suites: loads the plugin before UCX sees its first call, and doubles as the
// peer process of the two-process tests (re-executed with --uctest-peer <read-fd> <write-fd>).
#include "peer_process.h"
#include "uct_harness.h"

#include <dlfcn.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <string>

namespace {

/// The plugin registers its component from an ELF constructor, which must run before
/// uct_query_components() is first called (see docs/install.md). RTLD_LOCAL suffices: the
/// constructor appends to UCX's own lists. Never unloaded: UCX keeps pointers into it.
bool load_plugin()
{
    std::string path;
    if (const char *env = std::getenv("GDR_PLUGIN")) {
        path = env;  // set but empty: explicitly no plugin
    } else {
#ifdef UCTEST_DEFAULT_PLUGIN
        // the build's own libuct_gdr.so, when testing one of its transports
        if (uctest::target().tl.rfind("gdr", 0) == 0) {
            path = UCTEST_DEFAULT_PLUGIN;
        }
#endif
    }
    if (path.empty()) {
        return true;
    }
    if (dlopen(path.c_str(), RTLD_NOW | RTLD_LOCAL) == nullptr) {
        std::fprintf(stderr, "uctest: cannot load plugin %s: %s\n", path.c_str(), dlerror());
        return false;
    }
    return true;
}

/// Prints which transport/device the run is about, so every log names what it tested.
class AnnounceTarget : public ::testing::Environment {
public:
    void SetUp() override
    {
        const auto &t = uctest::target();
        std::printf("uctest: transport %s, device %s\n", t.tl.c_str(),
                    t.dev.empty() ? "<none>" : t.dev.c_str());
    }
};

}  // namespace

int main(int argc, char **argv)
{
    if (!load_plugin()) {
        return 1;
    }
    if (argc == 4 && std::strcmp(argv[1], uctest::kPeerFlag) == 0) {
        return uctest::run_peer(std::atoi(argv[2]), std::atoi(argv[3]));
    }
    ::testing::InitGoogleTest(&argc, argv);
    ::testing::AddGlobalTestEnvironment(new AnnounceTarget);  // not printed by --gtest_list_tests
    return RUN_ALL_TESTS();
}
