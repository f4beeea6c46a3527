// Registration and remote keys of md "gdr" (issue 14, requirement 4), through the real UCT API:
//  - rkey unpack allocates nothing (uct_rkey_bundle_t.handle stays NULL) while the keys of the
//    packing md fit in uct_rkey_t (one or two devices), and the form that does allocate (more
//    devices) still reaches the right key: every form is checked by an RDMA that must land;
//  - one registration serves every device of the md: in a VM with two rxe devices
//    (RXE_VM_DEVICES=2 tests/rxe-vm/run), the same kind of registration is written and read
//    through each device, the second one using the second key of the packed rkey.
// gdr_rc only: the packed layout (magic, count, one 32-bit rkey per device) is md gdr's.
#include "pair_fixture.h"

#include <infiniband/verbs.h>

#include <cstring>

namespace uctest {
namespace {

constexpr uint8_t kRkeyMagic = 0xd7;  // GDR_RKEY_MAGIC (gdr_md.h)

/// A packed rkey of md gdr with the given per-device keys.
Bytes packed_rkey(const std::vector<uint32_t> &keys, uint8_t magic = kRkeyMagic)
{
    Bytes out(2 + keys.size() * sizeof(uint32_t));
    out[0] = magic;
    out[1] = static_cast<uint8_t>(keys.size());
    if (!keys.empty()) {  // memcpy from keys.data() == NULL is undefined even for 0 bytes
        std::memcpy(out.data() + 2, keys.data(), keys.size() * sizeof(uint32_t));
    }
    return out;
}

std::vector<uint32_t> keys_of(const Bytes &packed)
{
    std::vector<uint32_t> keys(packed.at(1));
    std::memcpy(keys.data(), packed.data() + 2, keys.size() * sizeof(uint32_t));
    return keys;
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

/// "name:1" of every verbs device, in the order libibverbs lists them (the md's order).
std::vector<std::string> verbs_device_ports()
{
    int count         = 0;
    ibv_device **list = ibv_get_device_list(&count);
    std::vector<std::string> out;
    for (int i = 0; list != nullptr && i < count; ++i) {
        out.push_back(std::string(ibv_get_device_name(list[i])) + ":1");
    }
    if (list != nullptr) {
        ibv_free_device_list(list);
    }
    return out;
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
            GTEST_SKIP() << "md gdr's rkey layout; GDR_TEST_TL=" << target().tl;
        }
        PairTest::SetUp();
    }
};

TEST_F(Registration, UnpackAllocatesNothingForOneOrTwoDevices)
{
    const uct_component_h component = a_->md().component();
    for (const auto &keys : std::vector<std::vector<uint32_t>>{{0x1234},
                                                               {0},
                                                               {0xffffffff},
                                                               {0x1234, 0x5678},
                                                               {0xffffffff, (1u << 29) - 1}}) {
        SCOPED_TRACE(::testing::PrintToString(keys));
        UnpackedKey key(component, packed_rkey(keys));
        ASSERT_EQ(UCS_OK, key.status);
        EXPECT_EQ(nullptr, key.bundle.handle);
        // never a value the data path reads as "no key"
        EXPECT_NE(0u, key.bundle.rkey);
        EXPECT_NE(UCT_INVALID_RKEY, key.bundle.rkey);
    }
    // what 64 bits cannot hold: the one allocating form, freed by uct_rkey_release
    for (const auto &keys : std::vector<std::vector<uint32_t>>{{1, 2, 3},
                                                               {1, 1u << 29},
                                                               std::vector<uint32_t>(32, 7)}) {
        SCOPED_TRACE(::testing::PrintToString(keys));
        UnpackedKey key(component, packed_rkey(keys));
        ASSERT_EQ(UCS_OK, key.status);
        EXPECT_NE(nullptr, key.bundle.handle);
    }
}

TEST_F(Registration, UnpackRejectsForeignOrEmptyBuffers)
{
    const uct_component_h component = a_->md().component();
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, UnpackedKey(component, packed_rkey({1}, 0x00)).status);
    EXPECT_EQ(UCS_ERR_INVALID_PARAM, UnpackedKey(component, packed_rkey({})).status);
}

// Every encoding reaches the key of the device the QP talks to: the real key of b's md is put in
// the packed forms that unpack inline and indirect, and an RDMA with each must land.
TEST_F(Registration, EveryRkeyFormReachesTheRightKey)
{
    RegisteredBuffer remote(b_->md(), 64 << 10, 4096);
    const Bytes real                 = remote.registration().packed_rkey();
    const std::vector<uint32_t> keys = keys_of(real);
    ASSERT_FALSE(keys.empty());

    std::vector<uint32_t> more = keys;  // keys of devices b's md does not have: unused
    more.insert(more.end(), {0xdead0001, 0xdead0002});
    std::vector<std::pair<const char *, Bytes>> forms = {{"as packed", real},
                                                         {"indirect (3 or more keys)",
                                                          packed_rkey(more)}};
    if (keys.size() == 1) {
        forms.push_back({"indirect (second key >= 2^29)", packed_rkey({keys[0], 0xffffffff})});
    }
    uint32_t seed = 11;
    for (const auto &[name, packed] : forms) {
        SCOPED_TRACE(name);
        UnpackedKey key(a_->md().component(), packed);
        ASSERT_EQ(UCS_OK, key.status);
        put_and_get(*a_, *b_, pair_.ab, remote, key.bundle.rkey, seed++);
    }
}

// One md over two rxe devices: a registration makes an MR on each, the packed rkey carries both
// keys (inline after unpack), and RDMA works through each device with its own key.
TEST(RegistrationMultiDevice, OneRegistrationServesEveryDevice)
{
    if (target().tl != "gdr_rc") {
        GTEST_SKIP() << "md gdr's rkey layout; GDR_TEST_TL=" << target().tl;
    }
    const std::vector<std::string> ports = verbs_device_ports();
    if (ports.size() < 2) {
        GTEST_SKIP() << ports.size()
                     << " verbs device(s): run with RXE_VM_DEVICES=2 tests/rxe-vm/run";
    }
    uint32_t seed = 101;
    for (size_t d = 0; d < ports.size(); ++d) {
        SCOPED_TRACE(ports[d]);
        std::string why;
        std::optional<TlResource> res = find_tl("gdr_rc", ports[d], &why);
        ASSERT_TRUE(res) << why;
        Entity a(*res), b(*res);
        EpPair pair = connect_pair(a, b);

        RegisteredBuffer remote(b.md(), 256 << 10, 4096);
        const Bytes packed = remote.registration().packed_rkey();
        ASSERT_EQ(ports.size(), packed.at(1)) << "one key per device of the md";
        const std::vector<uint32_t> keys = keys_of(packed);
        UnpackedKey key(b.md().component(), packed);
        ASSERT_EQ(UCS_OK, key.status);
        if (ports.size() == 2 && keys[1] < (1u << 29)) {
            EXPECT_EQ(nullptr, key.bundle.handle) << "two devices: the keys fit in uct_rkey_t";
        }
        put_and_get(a, b, pair.ab, remote, key.bundle.rkey, seed++);
        if (HasFatalFailure()) {
            return;
        }
    }
}

}  // namespace
}  // namespace uctest
