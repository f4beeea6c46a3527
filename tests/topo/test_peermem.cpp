// The peer-memory check (gdr_topo's find_peer_memory_module, used by the transport's registration
// order and by gdr-doctor) on fake sysfs trees built under a temporary root.
#include "gdr_topo.hpp"

#include <gtest/gtest.h>

#include <unistd.h>

#include <filesystem>
#include <fstream>
#include <string>

using namespace gdr::topo;
namespace fs = std::filesystem;

namespace {

/** An empty tree below a fresh temporary directory, removed with the object. */
class FakeSysroot {
public:
    FakeSysroot() : root_(fs::temp_directory_path() / ("gdr-peermem-" + std::to_string(getpid())))
    {
        fs::remove_all(root_);
        fs::create_directories(root_);
    }
    ~FakeSysroot() { fs::remove_all(root_); }

    /** Creates the file <root>/<abs> (and its directories). */
    void add_file(const std::string &abs)
    {
        fs::create_directories((root_ / abs.substr(1)).parent_path());
        std::ofstream(root_ / abs.substr(1)) << "1.0\n";
    }
    void add_directory(const std::string &abs) { fs::create_directories(root_ / abs.substr(1)); }
    void remove(const std::string &abs) { fs::remove_all(root_ / abs.substr(1)); }
    SysRoot sys() const { return SysRoot(root_.string()); }

private:
    fs::path root_;
};

}  // namespace

TEST(PeerMemory, NoneLoaded)
{
    FakeSysroot tree;
    EXPECT_FALSE(find_peer_memory_module(tree.sys()).has_value());
}

TEST(PeerMemory, EachModuleIsFoundByItsVersionFile)
{
    FakeSysroot tree;
    const struct {
        const char *evidence;
        const char *module;
    } cases[] = {{"/sys/module/nvidia_peermem/version", "nvidia_peermem"},
                 {"/sys/module/nv_peer_mem/version", "nv_peer_mem"},
                 {"/sys/kernel/mm/memory_peers/nv_mem/version", "nv_peer_mem"}};
    for (const auto &c : cases) {
        tree.add_file(c.evidence);
        const auto found = find_peer_memory_module(tree.sys());
        ASSERT_TRUE(found.has_value()) << c.evidence;
        EXPECT_EQ(found->module, c.module);
        EXPECT_EQ(found->evidence, c.evidence);
        tree.remove(c.evidence);
    }
}

// gdr-doctor used to accept the module's directory alone while the transport wanted the version
// file, so the two could disagree; a directory without version (an unloaded module's leftover
// parameters) now means "not loaded" for both.
TEST(PeerMemory, ADirectoryWithoutVersionIsNotALoadedModule)
{
    FakeSysroot tree;
    tree.add_directory("/sys/module/nvidia_peermem/parameters");
    tree.add_directory("/sys/module/nv_peer_mem");
    tree.add_directory("/sys/kernel/mm/memory_peers/nv_mem");
    EXPECT_FALSE(find_peer_memory_module(tree.sys()).has_value());
}

TEST(PeerMemory, UcxsOrderDecidesWhenSeveralAreThere)
{
    FakeSysroot tree;
    tree.add_file("/sys/module/nv_peer_mem/version");
    tree.add_file("/sys/module/nvidia_peermem/version");
    EXPECT_EQ(find_peer_memory_module(tree.sys())->evidence, "/sys/module/nvidia_peermem/version");
    tree.add_file("/sys/kernel/mm/memory_peers/nv_mem/version");
    EXPECT_EQ(find_peer_memory_module(tree.sys())->module, "nv_peer_mem");
}
