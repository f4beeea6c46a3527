// Registration and remote keys of the gdr mds, through the real UCT API:
//  - the packed rkey is one 32-bit key behind a magic byte, and uct_rkey_unpack allocates nothing,
//    ever (uct_rkey_bundle_t.handle stays NULL): the key itself is the uct_rkey_t; an unpacked key
//    reaches the memory it was packed for (a put and a get with it must land);
//  - one md per verbs device: in a VM with two rxe devices (RXE_DEVICES=2 tests/rxe-vm/run) the
//    component lists an md "gdr_<device>" for each, an md's transport devices are its own device's
//    ports, a registration on one md makes an MR on its device only (counted by the kernel:
//    `rdma resource show`), and RDMA works through each device with its own md's key.
// gdr_rc only: the packed layout is the gdr mds'.
#include "pair_fixture.h"

#include <infiniband/verbs.h>

#include <cstdio>
#include <cstring>
#include <map>
#include <sstream>

namespace uctest {
namespace {

constexpr uint8_t kRkeyMagic = 0xd8;  // GDR_RKEY_MAGIC (gdr_md.h)
constexpr size_t kPackedSize = 5;  // the magic, then the key

/// A packed rkey of a gdr md with the given key.
Bytes packed_rkey(uint32_t key, uint8_t magic = kRkeyMagic)
{
    Bytes out(kPackedSize);
    out[0] = magic;
    std::memcpy(out.data() + 1, &key, sizeof(key));
    return out;
}

uint32_t key_of(const Bytes &packed)
{
    uint32_t key = 0;
    std::memcpy(&key, packed.data() + 1, sizeof(key));
    return key;
}

/// uct_rkey_unpack with the bundle in view (RemoteKey hides the handle).
struct UnpackedKey {
    uct_component_h component;
    uct_rkey_bundle_t bundle{};
    ucs_status_t status;

    UnpackedKey(uct_component_h c, const Bytes &packed)
        : component(c), status(uct_rkey_unpack(c, packed.data(), &bundle))
    {}
    ~UnpackedKey()
    {
        if (status == UCS_OK) {
            uct_rkey_release(component, &bundle);
        }
    }
    UnpackedKey(const UnpackedKey &)            = delete;
    UnpackedKey &operator=(const UnpackedKey &) = delete;
};

/// Names of every verbs device, in the order libibverbs lists them.
std::vector<std::string> verbs_devices()
{
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    std::vector<std::string> out;
    for (int i = 0; list != nullptr && i < count; ++i) {
        out.push_back(ibv_get_device_name(list[i]));
    }
    if (list != nullptr) {
        ibv_free_device_list(list);
    }
    return out;
}

/// The md resources component `name` lists.
std::vector<std::string> md_names_of(const std::string &name)
{
    uct_component_h *components = nullptr;
    unsigned num_components     = 0;
    std::vector<std::string> out;
    if (uct_query_components(&components, &num_components) != UCS_OK) {
        return out;
    }
    for (unsigned c = 0; c < num_components; ++c) {
        uct_component_attr_t attr{};
        attr.field_mask = UCT_COMPONENT_ATTR_FIELD_NAME |
                          UCT_COMPONENT_ATTR_FIELD_MD_RESOURCE_COUNT;
        if (uct_component_query(components[c], &attr) != UCS_OK || name != attr.name) {
            continue;
        }
        std::vector<uct_md_resource_desc_t> mds(attr.md_resource_count);
        attr.field_mask   = UCT_COMPONENT_ATTR_FIELD_MD_RESOURCES;
        attr.md_resources = mds.data();
        if (uct_component_query(components[c], &attr) == UCS_OK) {
            for (const auto &md : mds) {
                out.push_back(md.md_name);
            }
        }
    }
    uct_release_component_list(components);
    return out;
}

/// MRs per device as the kernel counts them (`rdma resource show`: "0: rxe0: pd 3 cq 4 ... mr 2
/// ..."); empty when the tool cannot be run.
std::map<std::string, long> kernel_mr_counts()
{
    std::map<std::string, long> counts;
    FILE *out = popen("rdma resource show 2>&1", "r");
    if (out == nullptr) {
        return counts;
    }
    char line[512];
    while (std::fgets(line, sizeof(line), out) != nullptr) {
        std::istringstream words(line);
        std::string index, device, word;
        words >> index >> device;
        if (device.empty() || device.back() != ':') {
            continue;
        }
        device.pop_back();
        while (words >> word) {
            long value = 0;
            if (word == "mr" && (words >> value)) {
                counts[device] = value;
            }
        }
    }
    pclose(out);
    return counts;
}

void transfer_whole(Op op, Entity &a, Entity &b, uct_ep_h ab, RegisteredBuffer &local,
                    RegisteredBuffer &remote, uct_rkey_t rkey)
{
    Transfer transfer(a, ab);
    ucs_status_t st = transfer.post_retry(op, local, 0, local.size(), remote.address(), rkey, 0,
                                          {&a, &b});
    ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS)
        << op_info(op).name << ": " << status_name(st);
    ASSERT_TRUE(
        progress_until([&] { return transfer.completion().done(); }, {&a, &b}, op_info(op).name));
    ASSERT_EQ(UCS_OK, transfer.completion().status());
    ASSERT_EQ(UCS_OK, flush_and_wait(a, ab, {&a, &b}));
}

/// put_zcopy then get_zcopy of `size` bytes over `ab`, with `rkey` for b's buffer `remote`.
void put_and_get(Entity &a, Entity &b, uct_ep_h ab, RegisteredBuffer &remote, uct_rkey_t rkey,
                 uint32_t seed)
{
    const size_t size = remote.size();
    RegisteredBuffer local(a.md(), size, 4096);
    local.fill_pattern(seed);
    remote.fill(0x3C);
    transfer_whole(Op::PutZcopy, a, b, ab, local, remote, rkey);
    EXPECT_TRUE(remote.check_pattern(seed, size, 0x3C)) << "put_zcopy";

    remote.fill_pattern(seed + 1);
    local.fill(0x3C);
    transfer_whole(Op::GetZcopy, a, b, ab, local, remote, rkey);
    EXPECT_TRUE(local.check_pattern(seed + 1, size, 0x3C)) << "get_zcopy";
}

class Registration : public PairTest {
protected:
    void SetUp() override
    {
        if (target().tl != "gdr_rc") {
            GTEST_SKIP() << "the gdr mds' rkey layout; GDR_TEST_TL=" << target().tl;
        }
        PairTest::SetUp();
    }
};

TEST_F(Registration, PackedRkeyIsOneKey)
{
    EXPECT_EQ(kPackedSize, b_->md().attr().rkey_packed_size);
    RegisteredBuffer remote(b_->md(), 4096, 4096);
    const Bytes packed = remote.registration().packed_rkey();
    EXPECT_EQ(kRkeyMagic, packed.at(0));
}

TEST_F(Registration, UnpackAllocatesNothing)
{
    const uct_component_h component = a_->md().component();
    for (uint32_t key : {0x1234u, 0u, 0xffffffffu, 1u << 29}) {
        SCOPED_TRACE(key);
        UnpackedKey unpacked(component, packed_rkey(key));
        ASSERT_EQ(UCS_OK, unpacked.status);
        EXPECT_EQ(nullptr, unpacked.bundle.handle);
        EXPECT_EQ(key, static_cast<uint32_t>(unpacked.bundle.rkey));
        // never a value the data path reads as "no key", not even for key 0
        EXPECT_NE(0u, unpacked.bundle.rkey);
        EXPECT_NE(UCT_INVALID_RKEY, unpacked.bundle.rkey);
    }
}

// A foreign buffer, and what a libuct_gdr of one md over every device packed (magic 0xd7, a
// count, a key per device): refused, not misread as a key
TEST_F(Registration, UnpackRejectsForeignOrOldBuffers)
{
    const uct_component_h component = a_->md().component();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, UnpackedKey(component, packed_rkey(1, 0x00)).status);
    const Bytes one_md_all_devices = {0xd7, 1, 0x34, 0x12, 0, 0};
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, UnpackedKey(component, one_md_all_devices).status);
}

// The key as packed, and the same key packed by hand from the wire layout, reach b's memory
TEST_F(Registration, UnpackedKeyReachesTheMemory)
{
    RegisteredBuffer remote(b_->md(), 64 << 10, 4096);
    const Bytes real = remote.registration().packed_rkey();
    uint32_t seed    = 11;
    for (const auto &[name, packed] :
         std::vector<std::pair<const char *, Bytes>>{{"as packed", real},
                                                     {"by hand", packed_rkey(key_of(real))}}) {
        SCOPED_TRACE(name);
        UnpackedKey key(a_->md().component(), packed);
        ASSERT_EQ(UCS_OK, key.status);
        put_and_get(*a_, *b_, pair_.ab, remote, key.bundle.rkey, seed++);
    }
}

// One md per device: component gdr lists gdr_<device> for each verbs device; each md offers its
// own device's ports only; a registration on it makes one MR, on its device; RDMA through each
// device with its own md's key lands.
TEST(RegistrationMultiDevice, EachMdRegistersOnItsOwnDevice)
{
    if (target().tl != "gdr_rc") {
        GTEST_SKIP() << "the gdr mds' rkey layout; GDR_TEST_TL=" << target().tl;
    }
    const std::vector<std::string> devices = verbs_devices();
    if (devices.size() < 2) {
        GTEST_SKIP() << devices.size()
                     << " verbs device(s): run with RXE_DEVICES=2 tests/rxe-vm/run";
    }
    std::vector<std::string> expected_mds;
    for (const auto &device : devices) {
        expected_mds.push_back("gdr_" + device);
    }
    ASSERT_EQ(expected_mds, md_names_of("gdr")) << "one md per verbs device, in libibverbs' order";

    uint32_t seed = 101;
    for (const auto &device : devices) {
        SCOPED_TRACE(device);
        std::string why;
        std::optional<TlResource> res = find_tl("gdr_rc", device + ":1", &why);
        ASSERT_TRUE(res) << why;
        EXPECT_EQ("gdr_" + device, res->md_name);
        Entity a(*res), b(*res);
        EpPair pair = connect_pair(a, b);

        uct_tl_resource_desc_t *tls = nullptr;
        unsigned num_tls            = 0;
        ASSERT_EQ(UCS_OK, uct_md_query_tl_resources(b.md().md(), &tls, &num_tls));
        for (unsigned t = 0; t < num_tls; ++t) {
            EXPECT_EQ(0, std::strncmp(tls[t].dev_name, (device + ":").c_str(), device.size() + 1))
                << "md " << res->md_name << " offers " << tls[t].dev_name;
        }
        uct_release_tl_resource_list(tls);

        // the interfaces registered their buffers already: from here on only this registration
        const std::map<std::string, long> before = kernel_mr_counts();
        ASSERT_EQ(devices.size(), before.size()) << "`rdma resource show` lists every device";
        RegisteredBuffer remote(b.md(), 256 << 10, 4096);
        std::map<std::string, long> after = kernel_mr_counts();
        for (const auto &other : devices) {
            EXPECT_EQ(before.at(other) + (other == device ? 1 : 0), after[other])
                << "MRs on " << other << " after one registration on md " << res->md_name;
        }

        const Bytes packed = remote.registration().packed_rkey();
        UnpackedKey key(b.md().component(), packed);
        ASSERT_EQ(UCS_OK, key.status);
        EXPECT_EQ(nullptr, key.bundle.handle);
        put_and_get(a, b, pair.ab, remote, key.bundle.rkey, seed++);
        if (HasFatalFailure()) {
            return;
        }
    }
}

}  // namespace
}  // namespace uctest
