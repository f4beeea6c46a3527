// Every data-moving op x the sizes at every boundary (0, 1, 8, inline limit +-1, segment size +-1,
// 64 KiB, 1 MiB, 16 MiB), data checked byte for byte, guard bytes checked for overruns.
//
// One test per op (each ctest test is its own process and opening ifaces is slow in the emulated
// VM); every size is a SCOPED_TRACE'd step. A size above the op's per-call limit is moved in
// limit-sized fragments, back to back, as UCP would; a size below the op's minimum is reported
// as not applicable.
#include "pair_fixture.h"

#include <cinttypes>
#include <cstring>

namespace uctest {
namespace {

/// A size of the list, resolved against the iface limits of the op's family.
struct SizeCase {
    const char *name;
    enum Base {
        Fixed,
        Inline,
        Segment
    } base;
    long value;  ///< bytes for Fixed, delta for the others
};

const SizeCase kSizes[] = {
    {"0", SizeCase::Fixed, 0},
    {"1", SizeCase::Fixed, 1},
    {"8", SizeCase::Fixed, 8},
    {"inline-1", SizeCase::Inline, -1},
    {"inline", SizeCase::Inline, 0},
    {"inline+1", SizeCase::Inline, +1},
    {"segment-1", SizeCase::Segment, -1},
    {"segment", SizeCase::Segment, 0},
    {"segment+1", SizeCase::Segment, +1},
    {"64KiB", SizeCase::Fixed, 64L << 10},
    {"1MiB", SizeCase::Fixed, 1L << 20},
    {"16MiB", SizeCase::Fixed, 16L << 20},
};

/// Fragment budget per size: beyond it (e.g. 16 MiB in 80-byte put_short) the case is not run;
/// the same bytes are covered by the bcopy/zcopy ops.
constexpr size_t kMaxFragments = 4096;

/// Inline limit / segment size of the family an op belongs to (0: the family has none).
size_t family_limit(const uct_iface_attr_t &attr, Op op, SizeCase::Base base)
{
    const auto &c = attr.cap;
    bool put      = op == Op::PutShort || op == Op::PutBcopy || op == Op::PutZcopy;
    bool get      = is_get(op);
    if (base == SizeCase::Inline) {
        return put ? c.put.max_short : get ? c.get.max_short : op_max_length(attr, Op::AmShort);
    }
    return put ? c.put.max_bcopy : get ? c.get.max_bcopy : c.am.max_bcopy;
}

class Transfers : public PairTest, public ::testing::WithParamInterface<Op> {
protected:
    /// Whether `size` applies to `op` (else prints why it is N/A).
    bool applicable(Op op, const SizeCase &sc, size_t size) const;
    /// Moves `size` bytes with `op` from a to b (get: b to a) and verifies them.
    void run_case(Op op, size_t size);
};

bool Transfers::applicable(Op op, const SizeCase &sc, size_t size) const
{
    const size_t max_len = op_max_length(a_->attr(), op);
    const size_t min_len = op_min_length(a_->attr(), op);
    if (size < min_len) {
        std::printf("[   N/A    ] %s %s (%zu B): below the op's minimum of %zu B\n",
                    op_info(op).name, sc.name, size, min_len);
        return false;
    }
    const size_t fragments = size == 0 ? 1 : (size + max_len - 1) / max_len;
    if (fragments > kMaxFragments) {
        std::printf("[   N/A    ] %s %s (%zu B): %zu fragments of %zu B exceed the budget of %zu\n",
                    op_info(op).name, sc.name, size, fragments, max_len, kMaxFragments);
        return false;
    }
    return true;
}

void Transfers::run_case(Op op, size_t size)
{
    const size_t max_len    = op_max_length(a_->attr(), op);
    const size_t fragments  = size == 0 ? 1 : (size + max_len - 1) / max_len;
    const uint32_t seed     = static_cast<uint32_t>(size * 31 + static_cast<size_t>(op));
    const uint8_t untouched = 0x3C;
    // source: a for put/am, b for get
    RegisteredBuffer local(a_->md(), size, 4096), remote(b_->md(), size, 4096);
    RegisteredBuffer &source = is_get(op) ? remote : local;
    RegisteredBuffer &dest   = is_get(op) ? local : remote;
    source.fill_pattern(seed);
    dest.fill(untouched);
    RemoteKey rkey(a_->md().component(), remote.registration().packed_rkey());
    std::unique_ptr<AmSink> sink;
    if (is_am(op)) {
        sink = std::make_unique<AmSink>(*b_);
    }

    Transfer transfer(*a_, pair_.ab);
    for (size_t i = 0, offset = 0; i < fragments; ++i) {
        size_t len      = std::min(max_len, size - offset);
        ucs_status_t st = transfer.post_retry(op, local, offset, len, remote.address() + offset,
                                              rkey.rkey(), i, {a_.get(), b_.get()});
        ASSERT_TRUE(st == UCS_OK || st == UCS_INPROGRESS)
            << "fragment " << i << " at offset " << offset << " (" << len
            << " B): " << status_name(st);
        offset += len;
    }
    ASSERT_TRUE(wait([&] { return transfer.completion().done(); }, "op completions"));
    ASSERT_EQ(UCS_OK, transfer.completion().status());
    ASSERT_EQ(UCS_OK, flush(pair_.ab));
    if (!is_am(op)) {
        EXPECT_TRUE(dest.check_pattern(seed, size, untouched));
        return;
    }
    ASSERT_TRUE(
        wait([&] { return sink->messages.size() == fragments; }, "active messages to arrive"));
    // reassemble in arrival order: RC delivers in order, and the pattern is position-dependent
    const bool header = am_carries_header(a_->attr(), op);
    size_t offset     = 0;
    for (size_t i = 0; i < sink->messages.size(); ++i) {
        const Bytes &m = sink->messages[i];
        size_t hdr     = header ? sizeof(uint64_t) : 0;
        ASSERT_GE(m.size(), hdr) << "message " << i;
        if (header) {
            uint64_t seq;
            std::memcpy(&seq, m.data(), sizeof(seq));
            ASSERT_EQ(i, seq) << "message " << i << " arrived out of order";
        }
        ASSERT_LE(offset + m.size() - hdr, size) << "more AM payload than sent";
        if (m.size() > hdr) {  // an empty message has no data() to copy from (memcpy UB)
            std::memcpy(remote.data() + offset, m.data() + hdr, m.size() - hdr);
        }
        offset += m.size() - hdr;
    }
    ASSERT_EQ(size, offset) << "AM payload bytes received";
    EXPECT_TRUE(remote.check_pattern(seed, size, untouched));
}

TEST_P(Transfers, AllSizesByteExact)
{
    const Op op        = GetParam();
    const OpInfo &info = op_info(op);
    if (!a_->has_flag(info.cap_flag)) {
        GTEST_SKIP() << res_.tl_name << " does not advertise the flag of " << info.name;
    }
    for (const SizeCase &sc : kSizes) {
        size_t size = static_cast<size_t>(sc.value);
        if (sc.base != SizeCase::Fixed) {
            size_t limit = family_limit(a_->attr(), op, sc.base);
            if (limit == 0 || static_cast<long>(limit) + sc.value < 0) {
                std::printf("[   N/A    ] %s %s: the family has no such limit\n", info.name,
                            sc.name);
                continue;
            }
            size = static_cast<size_t>(static_cast<long>(limit) + sc.value);
        }
        SCOPED_TRACE(std::string(info.name) + " size " + sc.name + " = " + std::to_string(size) +
                     " B");
        const auto start = std::chrono::steady_clock::now();
        if (!applicable(op, sc, size)) {
            continue;
        }
        run_case(op, size);
        if (HasFatalFailure()) {
            return;
        }
        std::printf("[   SIZE   ] %s %-10s %9zu B ok (%.2f s)\n", info.name, sc.name, size,
                    Seconds(std::chrono::steady_clock::now() - start).count());
    }
}

std::string op_param_name(const ::testing::TestParamInfo<Op> &info)
{
    return op_info(info.param).name;
}

INSTANTIATE_TEST_SUITE_P(Ops, Transfers,
                         ::testing::Values(Op::PutShort, Op::PutBcopy, Op::PutZcopy, Op::GetShort,
                                           Op::GetBcopy, Op::GetZcopy, Op::AmShort, Op::AmShortIov,
                                           Op::AmBcopy, Op::AmZcopy),
                         op_param_name);

}  // namespace
}  // namespace uctest
