// UCX_GDR_* settings take effect: each one changes what the iface advertises or does. A config
// table entry that is parsed but never applied (or applied to the wrong field) passes every other
// test with its default, so each case here compares a set value with what the iface then does.
// The names are gdr_rc's own (rc_verbs has other knobs): other transports skip.
#include "uct_ops.h"

#include <unistd.h>

#include <algorithm>
#include <cstdlib>
#include <memory>

namespace uctest {
namespace {

class Config : public ::testing::Test {
protected:
    void SetUp() override
    {
        UCTEST_REQUIRE_TARGET(res_);
        if (res_.tl_name != "gdr_rc") {
            GTEST_SKIP() << "UCX_GDR_* settings are gdr_rc's; " << res_.tl_name << " has others";
        }
    }

    /// The suite's usual overrides plus each of `extra`, which the iface (or md) config must
    /// accept: a name it does not know would silently test the default.
    std::unique_ptr<Entity> open(const std::vector<ConfigOverride> &extra,
                                 const std::vector<ConfigOverride> &md_extra = {})
    {
        auto iface = default_iface_overrides();
        iface.insert(iface.end(), extra.begin(), extra.end());
        auto entity = std::make_unique<Entity>(res_, iface, md_extra);
        expect_applied(entity->applied_overrides(), extra);
        expect_applied(entity->md().applied_overrides(), md_extra);
        return entity;
    }

    static void expect_applied(const std::vector<std::string> &applied,
                               const std::vector<ConfigOverride> &wanted)
    {
        for (const auto &o : wanted) {
            const std::string tail = o.names.front() + "=" + o.value;
            EXPECT_TRUE(std::any_of(applied.begin(), applied.end(),
                                    [&](const std::string &a) {
                                        return a.size() >= tail.size() &&
                                               a.compare(a.size() - tail.size(), tail.size(),
                                                         tail) == 0;
                                    }))
                << "the config did not accept " << tail;
        }
    }

    TlResource res_;
};

TEST_F(Config, SegmentSizeBoundsEveryBcopy)
{
    auto plain = open({});
    auto set   = open({{{"SEG_SIZE"}, "2048"}});
    ASSERT_NE(2048u, plain->attr().cap.am.max_bcopy) << "the default must differ for this test";
    EXPECT_EQ(2048u, set->attr().cap.am.max_bcopy);
    EXPECT_EQ(2048u, set->attr().cap.put.max_bcopy);
    EXPECT_EQ(2048u, set->attr().cap.get.max_bcopy);
    EXPECT_EQ(2048u, set->attr().cap.am.max_zcopy);
}

TEST_F(Config, InlineSizeBoundsShortOpsAndZeroRemovesThem)
{
    auto small = open({{{"MAX_INLINE"}, "32"}});
    EXPECT_EQ(32u, small->attr().cap.put.max_short);
    EXPECT_EQ(32u, small->attr().cap.am.max_short);
    EXPECT_TRUE(small->has_flag(UCT_IFACE_FLAG_PUT_SHORT));

    auto none = open({{{"MAX_INLINE"}, "0"}});
    EXPECT_FALSE(none->has_flag(UCT_IFACE_FLAG_PUT_SHORT)) << "put_short without inline data";
    EXPECT_FALSE(none->has_flag(UCT_IFACE_FLAG_AM_SHORT)) << "am_short without inline data";
    EXPECT_EQ(0u, none->attr().cap.put.max_short);
}

TEST_F(Config, MtuCapsThePathMtu)
{
    auto set = open({{{"MTU"}, "512"}});
    EXPECT_EQ(512u, set->attr().cap.put.align_mtu);
    EXPECT_EQ(512u, set->attr().cap.am.align_mtu);
}

TEST_F(Config, GidIndexIsUsedAndAMissingOneRefused)
{
    // The VM tells which index holds the IPv4 RoCE v2 GID (RXE_GID_INDEX); elsewhere, the index
    // the automatic rule chose is as good: forcing it must give the same address.
    auto plain = open({});
    std::string index;
    if (const char *env = std::getenv("RXE_GID_INDEX"); env != nullptr && *env != '\0') {
        index = env;
    } else {
        GTEST_SKIP() << "RXE_GID_INDEX not set (the Soft-RoCE VM sets it)";
    }
    auto forced = open({{{"GID_INDEX"}, index}});
    EXPECT_EQ(plain->address().device, forced->address().device)
        << "GID_INDEX=" << index << " (the index the automatic rule takes on rxe) changed "
        << "the device address";

    // an index past every GID table: iface open fails with an error, it does not fall back
    auto iface = default_iface_overrides();
    iface.push_back({{"GID_INDEX"}, "250"});
    EXPECT_THROW(std::make_unique<Entity>(res_, iface), std::runtime_error)
        << "GID_INDEX=250 was not refused: the setting is ignored";
}

TEST_F(Config, TxQueueLengthBoundsOutstandingSends)
{
    // put_short without progress until the transport says NO_RESOURCE: the count of accepted
    // sends is bounded by TX_QUEUE_LEN (the default, 256, accepts more than 16).
    auto count_until_full = [this](const std::vector<ConfigOverride> &extra) {
        auto a    = open(extra);
        auto b    = open(extra);
        auto pair = connect_pair(*a, *b);
        RegisteredBuffer target(b->md(), 4096);
        RemoteKey rkey(b->md().component(), target.registration().packed_rkey());
        uint64_t word   = 42;
        size_t accepted = 0;
        for (; accepted < 1024; ++accepted) {
            ucs_status_t st = uct_ep_put_short(pair.ab, &word, sizeof(word), target.address(),
                                               rkey.rkey());
            if (st == UCS_ERR_NO_RESOURCE) {
                break;
            }
            EXPECT_EQ(UCS_OK, st) << "put_short #" << accepted;
            if (st != UCS_OK) {
                break;
            }
        }
        EXPECT_EQ(UCS_OK, flush_and_wait(*a, pair.ab, {a.get(), b.get()}));
        return accepted;
    };
    const size_t bounded = count_until_full({{{"TX_QUEUE_LEN"}, "16"}});
    EXPECT_GT(bounded, 0u);
    EXPECT_LE(bounded, 16u) << "TX_QUEUE_LEN=16 accepted more sends than that";
    EXPECT_GT(count_until_full({}), 16u) << "the default queue must be longer than 16";
}

TEST_F(Config, RcacheNoRegistersEveryTimeYesReuses)
{
    // With the registration cache, registering a range twice returns the one cached region;
    // without it, two registrations of their own.
    auto registrations_share = [this](const char *rcache) {
        auto e = open({}, {{{"RCACHE"}, rcache}});
        RegisteredBuffer buffer(e->md(), 1u << 16);
        Registration again(e->md(), buffer.data(), buffer.size());
        return buffer.memh() == again.memh();
    };
    EXPECT_TRUE(registrations_share("yes")) << "RCACHE=yes: the second registration was not cached";
    EXPECT_FALSE(registrations_share("no")) << "RCACHE=no: a registration came from a cache";
}

// UCX_GDR_DEVICE_ATOMICS: 'no' advertises no atomic, 'yes' every one where the device has
// atomics, 'auto' (the default) the same as 'yes' except on Soft-RoCE over a network device that
// carries packets off the host (docs/atomics.md). The Soft-RoCE VM's rxe0 (RXE_DEV, on RXE_IF) is
// on its dummy device rxenet0 or on lo: 'auto' advertises them there; on a NIC (a guest of
// tests/fabric) it does not.
TEST_F(Config, DeviceAtomicsAreAdvertisedAsAsked)
{
    auto none = open({{{"DEVICE_ATOMICS"}, "no"}});
    EXPECT_FALSE(none->has_flag(UCT_IFACE_FLAG_ATOMIC_DEVICE));
    const auto &c = none->attr().cap;
    EXPECT_EQ(0u, c.atomic32.op_flags | c.atomic32.fop_flags | c.atomic64.op_flags |
                      c.atomic64.fop_flags)
        << "DEVICE_ATOMICS=no still advertises atomics";

    auto dflt = open({{{"DEVICE_ATOMICS"}, "auto"}});  // as the default, whatever the environment
    const char *rxe_dev = std::getenv("RXE_DEV"), *rxe_if = std::getenv("RXE_IF");
    if (rxe_dev != nullptr && rxe_if != nullptr &&
        target().dev.rfind(std::string(rxe_dev) + ":", 0) == 0) {
        const std::string netdev = rxe_if;
        if (netdev == "lo" || netdev == "rxenet0") {
            EXPECT_TRUE(dflt->has_flag(UCT_IFACE_FLAG_ATOMIC_DEVICE))
                << "Soft-RoCE on " << netdev << ", which reaches nothing off the host: auto "
                << "must advertise its atomics";
        } else if (access(("/sys/class/net/" + netdev + "/device").c_str(), F_OK) == 0) {
            EXPECT_FALSE(dflt->has_flag(UCT_IFACE_FLAG_ATOMIC_DEVICE))
                << "Soft-RoCE on the NIC " << netdev << ": auto must leave its atomics off";
        }
    }
    if (!dflt->has_flag(UCT_IFACE_FLAG_ATOMIC_DEVICE)) {
        GTEST_SKIP() << "the device has no atomics here, or auto left them off: 'yes' untested";
    }
    auto yes = open({{{"DEVICE_ATOMICS"}, "yes"}});
    EXPECT_EQ(dflt->attr().cap.flags, yes->attr().cap.flags);
    EXPECT_EQ(dflt->attr().cap.atomic32.fop_flags, yes->attr().cap.atomic32.fop_flags);
    EXPECT_EQ(dflt->attr().cap.atomic64.fop_flags, yes->attr().cap.atomic64.fop_flags);
}

// UCX_GDR_FENCE takes its three values; what each does is tested where it matters
// (Semantics.Fence*, PeerDeath.Fence*, Retransmitted.*, and uct.fence_weak.Fences).
TEST_F(Config, FenceModesAreAccepted)
{
    for (const char *mode : {"auto", "weak", "strong"}) {
        SCOPED_TRACE(mode);
        auto a    = open({{{"FENCE"}, mode}});
        auto b    = open({{{"FENCE"}, mode}});
        auto pair = connect_pair(*a, *b);
        EXPECT_EQ(UCS_OK, uct_ep_fence(pair.ab, 0));
        EXPECT_EQ(UCS_OK, uct_iface_fence(a->iface(), 0));
        EXPECT_EQ(UCS_OK, flush_and_wait(*a, pair.ab, {a.get(), b.get()}));
    }
}

}  // namespace
}  // namespace uctest
