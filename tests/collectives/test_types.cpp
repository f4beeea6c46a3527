// float16 / bfloat16 on the host: conversions (round to nearest even, subnormals, overflow, NaN),
// host reductions of the new types, and a host allreduce of each over in-process ranks.
// Runs without a GPU (label host).
#include "coll_harness.hpp"

#include <cmath>
#include <cstring>
#include <limits>
#include <random>

namespace coll_test {
namespace {

using coll::bfloat16_t;
using coll::half_t;

float bits_to_float(uint32_t x)
{
    float f;
    std::memcpy(&f, &x, 4);
    return f;
}

/// Independent reference: the nearest of the two representable neighbours (computed in double),
/// ties to the even encoding.  `decode` maps a 16-bit encoding to its value.
template <class Decode> uint16_t nearest_encoding(float f, Decode decode, uint16_t max_finite)
{
    const uint16_t sign = std::signbit(f) ? 0x8000 : 0;
    const double a      = std::fabs(double(f));
    // Binary search the largest magnitude encoding <= a (encodings of one sign are monotonic).
    uint32_t lo = 0, hi = max_finite;
    if (a >= double(decode(max_finite))) {
        lo = max_finite;
    } else {
        while (lo < hi) {
            const uint32_t mid = (lo + hi + 1) / 2;
            if (double(decode(uint16_t(mid))) <= a)
                lo = mid;
            else
                hi = mid - 1;
        }
    }
    const uint32_t up  = lo + 1;  // max_finite + 1 is infinity for both formats
    const double below = double(decode(uint16_t(lo)));
    double above;
    if (lo == max_finite) {
        // Rounding boundary past the largest finite value: one more ulp (then ties to even = inf).
        above = below + (below - double(decode(uint16_t(lo - 1))));
    } else {
        above = double(decode(uint16_t(up)));
    }
    if (a - below < above - a)
        return uint16_t(sign | lo);
    if (a - below > above - a)
        return uint16_t(sign | up);
    return uint16_t(sign | ((lo & 1) ? up : lo));
}

TEST(CollTypes, Names)
{
    EXPECT_STREQ(coll::name_of(coll::datatype::float16), "float16");
    EXPECT_STREQ(coll::name_of(coll::datatype::bfloat16), "bfloat16");
    EXPECT_EQ(coll::size_of(coll::datatype::float16), 2u);
    EXPECT_EQ(coll::size_of(coll::datatype::bfloat16), 2u);
    EXPECT_EQ(coll::datatype_of<half_t>(), coll::datatype::float16);
    EXPECT_EQ(coll::datatype_of<const bfloat16_t>(), coll::datatype::bfloat16);
    EXPECT_EQ(sizeof(half_t), 2u);
    EXPECT_EQ(sizeof(bfloat16_t), 2u);
}

TEST(CollTypes, HalfKnownValues)
{
    EXPECT_EQ(half_t(1.0f).bits, 0x3c00);
    EXPECT_EQ(half_t(-2.0f).bits, 0xc000);
    EXPECT_EQ(half_t(65504.0f).bits, 0x7bff);
    EXPECT_EQ(half_t(65519.99f).bits, 0x7bff);
    EXPECT_EQ(half_t(65520.0f).bits, 0x7c00);  // tie to even: infinity
    EXPECT_EQ(half_t(1e9f).bits, 0x7c00);
    EXPECT_EQ(half_t(-std::numeric_limits<float>::infinity()).bits, 0xfc00);
    EXPECT_EQ(half_t(std::ldexp(1.0f, -24)).bits, 0x0001);  // smallest subnormal
    EXPECT_EQ(half_t(std::ldexp(1.0f, -25)).bits, 0x0000);  // tie to even: zero
    EXPECT_EQ(half_t(std::ldexp(1.5f, -25)).bits, 0x0001);
    EXPECT_EQ(half_t(std::ldexp(1.0f, -14)).bits, 0x0400);  // smallest normal
    EXPECT_EQ(half_t(1.0f + std::ldexp(1.0f, -11)).bits, 0x3c00);  // tie: even (down)
    EXPECT_EQ(half_t(1.0f + 3 * std::ldexp(1.0f, -11)).bits, 0x3c02);  // tie: even (up)
    EXPECT_EQ(half_t(-0.0f).bits, 0x8000);
    EXPECT_TRUE(std::isnan(float(half_t(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_EQ(float(half_t::from_bits(0x3555)), 0.333251953125f);
}

TEST(CollTypes, HalfEveryEncodingRoundTrips)
{
    for (uint32_t b = 0; b < 0x10000; ++b) {
        const half_t h = half_t::from_bits(uint16_t(b));
        const float f  = h;
        if ((b & 0x7c00) == 0x7c00 && (b & 0x3ff) != 0) {
            ASSERT_TRUE(std::isnan(f)) << std::hex << b;
            continue;
        }
        ASSERT_EQ(half_t(f).bits, uint16_t(b)) << "encoding 0x" << std::hex << b << " -> " << f;
    }
}

TEST(CollTypes, HalfRoundsToNearestEven)
{
    auto decode = [](uint16_t b) { return half_t::to_float(b); };
    std::mt19937 rng(7);
    std::uniform_int_distribution<uint32_t> any;
    for (int i = 0; i < 200000; ++i) {
        // Floats spread over the half range: random bits in exponents 2^-26 .. 2^16.
        uint32_t x    = any(rng);
        x             = (x & 0x807fffffu) | ((101u + (x >> 23) % 42u) << 23);
        const float f = bits_to_float(x);
        ASSERT_EQ(half_t(f).bits, nearest_encoding(f, decode, 0x7bff)) << "float " << f;
#if defined(__FLT16_MAX__)
        _Float16 compiler = static_cast<_Float16>(f);
        uint16_t cb;
        std::memcpy(&cb, &compiler, 2);
        ASSERT_EQ(half_t(f).bits, cb) << "float " << f << " (vs the compiler's _Float16)";
#endif
    }
}

TEST(CollTypes, Bfloat16RoundsToNearestEven)
{
    EXPECT_EQ(bfloat16_t(1.0f).bits, 0x3f80);
    EXPECT_EQ(bfloat16_t(-3.0f).bits, 0xc040);
    EXPECT_EQ(bfloat16_t(bits_to_float(0x3f808000)).bits, 0x3f80);  // tie: even (down)
    EXPECT_EQ(bfloat16_t(bits_to_float(0x3f818000)).bits, 0x3f82);  // tie: even (up)
    EXPECT_EQ(bfloat16_t(bits_to_float(0x3f808001)).bits, 0x3f81);
    EXPECT_EQ(bfloat16_t(bits_to_float(0x7f7fffff)).bits, 0x7f80);  // rounds up to infinity
    EXPECT_TRUE(std::isnan(float(bfloat16_t(std::numeric_limits<float>::quiet_NaN()))));
    EXPECT_TRUE(
        std::isnan(float(bfloat16_t(bits_to_float(0x7f800001)))));  // signalling NaN stays NaN
    auto decode = [](uint16_t b) { return bfloat16_t::to_float(b); };
    std::mt19937 rng(11);
    std::uniform_int_distribution<uint32_t> any;
    for (int i = 0; i < 200000; ++i) {
        const uint32_t x = any(rng);
        if ((x & 0x7f800000u) == 0x7f800000u)
            continue;  // inf / NaN
        const float f = bits_to_float(x);
        ASSERT_EQ(bfloat16_t(f).bits, nearest_encoding(f, decode, 0x7f7f)) << "float " << f;
    }
    for (uint32_t b = 0; b < 0x10000; ++b) {
        if ((b & 0x7f80) == 0x7f80 && (b & 0x7f) != 0)
            continue;
        ASSERT_EQ(bfloat16_t(float(bfloat16_t::from_bits(uint16_t(b)))).bits, b);
    }
}

template <class H> void check_host_reduction(coll::op_kind op)
{
    const size_t n = 1000;
    std::vector<H> acc(n), in(n);
    std::vector<float> a(n), b(n);
    for (size_t i = 0; i < n; ++i) {
        acc[i] = H(float(int(i % 37) - 18) * 0.37f);
        in[i]  = H(float(int(i % 23) - 11) * 1.3f);
        a[i]   = acc[i];
        b[i]   = in[i];
    }
    op_object(op).apply(coll::datatype_of<H>(), in.data(), acc.data(), n);
    for (size_t i = 0; i < n; ++i) {
        float expect = 0;
        switch (op) {
        case coll::op_kind::sum:
            expect = a[i] + b[i];
            break;
        case coll::op_kind::prod:
            expect = a[i] * b[i];
            break;
        case coll::op_kind::min:
            expect = std::min(a[i], b[i]);
            break;
        case coll::op_kind::max:
            expect = std::max(a[i], b[i]);
            break;
        default:
            break;
        }
        ASSERT_EQ(acc[i].bits, H(expect).bits)
            << coll::name_of(coll::datatype_of<H>()) << " " << op_name(op) << " element " << i
            << ": " << float(acc[i]) << " vs " << expect;
    }
}

TEST(CollTypes, HostReductions)
{
    for (coll::op_kind op :
         {coll::op_kind::sum, coll::op_kind::prod, coll::op_kind::min, coll::op_kind::max}) {
        check_host_reduction<half_t>(op);
        check_host_reduction<bfloat16_t>(op);
    }
    // A custom reduction on half_t (computed in float by the user's function).
    auto absmax = coll::reduction::custom<half_t>([](half_t x, half_t y) {
        return half_t(std::max(std::fabs(float(x)), std::fabs(float(y))));
    });
    std::vector<half_t> acc{half_t(1.0f), half_t(-5.0f)}, in{half_t(-3.0f), half_t(2.0f)};
    absmax.apply(coll::datatype::float16, in.data(), acc.data(), 2);
    EXPECT_EQ(float(acc[0]), 3.0f);
    EXPECT_EQ(float(acc[1]), 5.0f);
    EXPECT_THROW(absmax.check(coll::datatype::bfloat16), ucp_cpp::ucx_error);
}

/// Exactly representable inputs (small multiples of 1/2): sums of up to 4 ranks stay exact in
/// both formats, so every rank's result must equal the reference bit for bit.
template <class H> void check_host_allreduce(int p, coll::op_kind op, size_t count)
{
    local_world world(p);
    std::vector<std::vector<H>> data(static_cast<size_t>(p), std::vector<H>(count));
    std::vector<H> expected(count);
    for (size_t i = 0; i < count; ++i) {
        float acc = 0;
        for (int r = 0; r < p; ++r) {
            const float v      = float(input<float>(r, i, op));
            data[size_t(r)][i] = H(v);
            if (r == 0) {
                acc = v;
                continue;
            }
            acc = fold(op, acc, v);
        }
        expected[i] = H(acc);
    }
    world.run([&](int r) {
        H *buf = data[size_t(r)].data();
        return world.comm(r).iallreduce(buf, buf, count, op_object(op));
    });
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i) {
            ASSERT_EQ(data[size_t(r)][i].bits, expected[i].bits)
                << coll::name_of(coll::datatype_of<H>()) << " " << op_name(op) << " p=" << p
                << " count=" << count << " rank " << r << " element " << i << ": "
                << float(data[size_t(r)][i]) << " vs " << float(expected[i]);
        }
    }
}

TEST(CollTypes, HostAllreduceHalfAndBfloat16)
{
    for (int p : {1, 3, 4}) {
        for (coll::op_kind op : {coll::op_kind::sum, coll::op_kind::max, coll::op_kind::prod}) {
            for (size_t count : {size_t(1), size_t(77), size_t(70001)}) {
                check_host_allreduce<half_t>(p, op, count);
                check_host_allreduce<bfloat16_t>(p, op, count);
            }
        }
    }
}

}  // namespace
}  // namespace coll_test
