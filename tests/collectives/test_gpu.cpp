// Collectives on CUDA buffers (label gpu): every collective x {int32, float, double, float16,
// bfloat16} x {sum, max} (prod/min for float) x counts {0, 1, odd, 1 MiB + odd} x ranks 1..4,
// each algorithm of the collective, against a host reference; the v-variants with uneven counts
// and gaps.  Ranks are workers of this process
// on one GPU (coll_harness.hpp); CUDA is reached through coll/gpu.hpp's dlopen'ed driver, so the
// test links no CUDA library.  Skips (with the reason) without a usable CUDA driver/device.
// With Debian's UCX (no CUDA transports) transfers are staged through pinned host memory.
#include "coll_vchecks.hpp"

#include "../common/loopback_port.hpp"
#include "coll_processes.hpp"
#include "../ucp_cpp/peer_harness.hpp"

#include <ucp_cpp/coll/gpu.hpp>

#include <netinet/in.h>
#include <sys/wait.h>

#include <cmath>
#include <cstdlib>
#include <cstring>

namespace coll_test {
namespace {

namespace gpu = ucp_cpp::coll::gpu;
using coll::bfloat16_t;
using coll::half_t;

/// The primary context of device @p preferred (device 0 if there is no such device), current
/// on this thread for the test's lifetime.
class cuda_session {
public:
    explicit cuda_session(int preferred = 0)
    {
        cu_ = gpu::cuda();
        if (cu_ == nullptr) {
            why_ = gpu::driver_problem();
            return;
        }
        gpu::CUdevice dev = 0;
        if (preferred != 0 && cu_->cuDeviceGet(&dev, preferred) == 0) {
            ordinal_ = preferred;
        }
        if (cu_->cuDeviceGet(&dev, ordinal_) != 0 ||
            cu_->cuDevicePrimaryCtxRetain(&ctx_, dev) != 0 || cu_->cuCtxPushCurrent_v2(ctx_) != 0) {
            why_ = "no CUDA device 0";
            cu_  = nullptr;
        }
    }
    ~cuda_session()
    {
        if (cu_ != nullptr) {
            gpu::CUcontext popped = nullptr;
            cu_->cuCtxPopCurrent_v2(&popped);
        }
    }
    const gpu::driver *cu() const { return cu_; }
    const std::string &why() const { return why_; }
    int ordinal() const { return ordinal_; }

private:
    const gpu::driver *cu_ = nullptr;
    gpu::CUcontext ctx_    = nullptr;
    int ordinal_           = 0;
    std::string why_;
};

/// A device array of T with host upload/download (synchronous, legacy default stream).
template <class T> class device_array {
public:
    device_array(const gpu::driver &cu, size_t n) : cu_(cu), n_(n)
    {
        gpu::check(cu_.cuMemAlloc_v2(&ptr_, std::max<size_t>(n, 1) * sizeof(T)), "cuMemAlloc");
    }
    device_array(const gpu::driver &cu, const std::vector<T> &host) : device_array(cu, host.size())
    {
        upload(host);
    }
    ~device_array() { cu_.cuMemFree_v2(ptr_); }
    device_array(const device_array &) = delete;

    void upload(const std::vector<T> &host)
    {
        if (host.empty())
            return;
        gpu::check(cu_.cuMemcpyHtoDAsync_v2(ptr_, host.data(), host.size() * sizeof(T), nullptr),
                   "cuMemcpyHtoDAsync");
        gpu::check(cu_.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
    }
    std::vector<T> download() const
    {
        std::vector<T> host(n_);
        if (n_ == 0)
            return host;
        gpu::check(cu_.cuMemcpyDtoHAsync_v2(host.data(), ptr_, n_ * sizeof(T), nullptr),
                   "cuMemcpyDtoHAsync");
        gpu::check(cu_.cuStreamSynchronize(nullptr), "cuStreamSynchronize");
        return host;
    }
    T *get() const { return reinterpret_cast<T *>(uintptr_t(ptr_)); }

private:
    const gpu::driver &cu_;
    gpu::CUdeviceptr ptr_ = 0;
    size_t n_;
};

// ---------------------------------------------------------------- values and references

template <class T>
constexpr bool is_float_like = std::is_floating_point_v<T> || std::is_same_v<T, half_t> ||
                               std::is_same_v<T, bfloat16_t>;

template <class T> double as_double(T v)
{
    if constexpr (std::is_same_v<T, half_t> || std::is_same_v<T, bfloat16_t>) {
        return double(float(v));
    } else {
        return double(v);
    }
}

/// Rank r's element i.  Floating types: multiples of 1/64 in [-15.6, 15.6] (sums round in
/// float16/bfloat16); products: 1 or 2 (exact); integers: the harness's inputs.
template <class T> T value(int r, size_t i, coll::op_kind op)
{
    if constexpr (is_float_like<T>) {
        if (op == coll::op_kind::prod)
            return T(float(1 + (size_t(r) + i) % 2));
        const long v = long((size_t(r) * 7919 + i * 104729) % 2001) - 1000;
        return T(float(v) / 64.0f);
    } else {
        return input<T>(r, i, op);
    }
}

/// Relative rounding unit of T (what one reduction step may lose).
template <class T> double unit()
{
    if constexpr (std::is_same_v<T, half_t>)
        return std::ldexp(1.0, -10);
    else if constexpr (std::is_same_v<T, bfloat16_t>)
        return std::ldexp(1.0, -7);
    else if constexpr (std::is_same_v<T, float>)
        return 1e-6;
    else
        return 1e-14;
}

template <class T> struct expectation {
    double value;
    double tolerance;  ///< 0: exact
};

/// Reference of element i over ranks [0, p) where rank r contributes value<T>(r, index(r)).
template <class T, class Index> expectation<T> reference_of(int p, coll::op_kind op, Index index)
{
    double acc = as_double(value<T>(0, index(0), op)), magnitude = std::fabs(acc);
    for (int r = 1; r < p; ++r) {
        const double v = as_double(value<T>(r, index(r), op));
        magnitude += std::fabs(v);
        acc = fold(op, acc, v);
    }
    if constexpr (std::is_integral_v<T>) {
        acc = double(T(std::make_unsigned_t<T>(uint64_t(int64_t(acc)))));  // wraps like the library
    }
    const double tol = (is_float_like<T> && op == coll::op_kind::sum)
                           ? p * unit<T>() * (1.0 + magnitude)
                           : 0.0;
    return {acc, tol};
}

template <class T>::testing::AssertionResult matches(T got, const expectation<T> &want)
{
    const double g = as_double(got);
    if (want.tolerance == 0 ? g == want.value : std::fabs(g - want.value) <= want.tolerance) {
        return ::testing::AssertionSuccess();
    }
    return ::testing::AssertionFailure()
           << "got " << g << ", expected " << want.value << " +- " << want.tolerance;
}

template <class T> T sentinel()
{
    return T(float(-77));
}

template <class T> bool same_bits(T a, T b)
{
    return std::memcmp(&a, &b, sizeof(T)) == 0;
}

/// Runs @p body once with the automatic choice, then once per algorithm of @p names (names
/// the library does not know are skipped).
template <class F> void for_each_algorithm(const std::vector<const char *> &names, F &&body)
{
    body("automatic");
    for (const char *name : names) {
        if (coll::algorithm_named(name))
            body(name);
    }
}

/// The call options that run algorithm @p name (known to the library).
coll::call_options run_with(const char *name)
{
    coll::call_options options;
    options.algo = *coll::algorithm_named(name);
    return options;
}

std::string what(const char *collective, const char *type, coll::op_kind op, size_t count, int p,
                 const char *algo)
{
    return std::string(collective) + " " + type + " " + op_name(op) +
           " count=" + std::to_string(count) + " ranks=" + std::to_string(p) + " algo=" + algo;
}

// ---------------------------------------------------------------- the checks

class CollGpu : public ::testing::TestWithParam<int> {
protected:
    void SetUp() override
    {
        if (session_.cu() == nullptr)
            GTEST_SKIP() << "no usable CUDA driver/device: " << session_.why();
        world_ = std::make_unique<local_world>(GetParam());
    }
    void TearDown() override { world_.reset(); }

    template <class T> static std::vector<size_t> counts()
    {
        return {0, 1, 7, (size_t(1) << 20) / sizeof(T) + 3};
    }

    const gpu::driver &cu() const { return *session_.cu(); }
    int p() const { return GetParam(); }

    template <class T>
    void allreduce(coll::op_kind op, size_t count, const char *algo, bool in_place)
    {
        std::vector<std::unique_ptr<device_array<T>>> send, recv;
        for (int r = 0; r < p(); ++r) {
            std::vector<T> mine(count), out(count + 1, sentinel<T>());
            for (size_t i = 0; i < count; ++i)
                mine[i] = value<T>(r, i, op);
            send.push_back(std::make_unique<device_array<T>>(cu(), mine));
            if (in_place)
                std::copy(mine.begin(), mine.end(), out.begin());
            recv.push_back(std::make_unique<device_array<T>>(cu(), out));
        }
        world_->run([&](int r) {
            T *out = recv[size_t(r)]->get();
            return world_->comm(r).iallreduce(in_place ? out : send[size_t(r)]->get(), out, count,
                                              op_object(op), run_with(algo));
        });
        for (int r = 0; r < p(); ++r) {
            const auto got   = recv[size_t(r)]->download();
            const auto label = what(in_place ? "allreduce(in place)" : "allreduce",
                                    coll::name_of(coll::datatype_of<T>()), op, count, p(), algo) +
                               " rank " + std::to_string(r);
            for (size_t i = 0; i < count; ++i) {
                ASSERT_TRUE(matches(got[i], reference_of<T>(p(), op, [i](int) { return i; })))
                    << label << " element " << i;
            }
            ASSERT_TRUE(same_bits(got[count], sentinel<T>())) << label << ": wrote past the end";
        }
    }

    template <class T> void reduce(coll::op_kind op, size_t count, const char *algo, int root)
    {
        std::vector<std::unique_ptr<device_array<T>>> send;
        for (int r = 0; r < p(); ++r) {
            std::vector<T> mine(count);
            for (size_t i = 0; i < count; ++i)
                mine[i] = value<T>(r, i, op);
            send.push_back(std::make_unique<device_array<T>>(cu(), mine));
        }
        device_array<T> out(cu(), std::vector<T>(count + 1, sentinel<T>()));
        world_->run([&](int r) {
            return world_->comm(r).ireduce(send[size_t(r)]->get(), r == root ? out.get() : nullptr,
                                           count, op_object(op), root, run_with(algo));
        });
        const auto got   = out.download();
        const auto label = what("reduce", coll::name_of(coll::datatype_of<T>()), op, count, p(),
                                algo) +
                           " root " + std::to_string(root);
        for (size_t i = 0; i < count; ++i) {
            ASSERT_TRUE(matches(got[i], reference_of<T>(p(), op, [i](int) { return i; })))
                << label << " element " << i;
        }
        ASSERT_TRUE(same_bits(got[count], sentinel<T>())) << label << ": wrote past the end";
    }

    template <class T>
    void reduce_scatter(coll::op_kind op, size_t count, const char *algo = "automatic")
    {
        std::vector<std::unique_ptr<device_array<T>>> send, recv;
        for (int r = 0; r < p(); ++r) {
            std::vector<T> mine(count * size_t(p()));
            for (size_t i = 0; i < mine.size(); ++i)
                mine[i] = value<T>(r, i, op);
            send.push_back(std::make_unique<device_array<T>>(cu(), mine));
            recv.push_back(
                std::make_unique<device_array<T>>(cu(), std::vector<T>(count + 1, sentinel<T>())));
        }
        world_->run([&](int r) {
            return world_->comm(r).ireduce_scatter(send[size_t(r)]->get(), recv[size_t(r)]->get(),
                                                   count, op_object(op), run_with(algo));
        });
        for (int r = 0; r < p(); ++r) {
            const auto got   = recv[size_t(r)]->download();
            const auto label = what("reduce_scatter", coll::name_of(coll::datatype_of<T>()), op,
                                    count, p(), algo) +
                               " rank " + std::to_string(r);
            for (size_t i = 0; i < count; ++i) {
                const size_t at = size_t(r) * count + i;
                ASSERT_TRUE(matches(got[i], reference_of<T>(p(), op, [at](int) { return at; })))
                    << label << " element " << i;
            }
            ASSERT_TRUE(same_bits(got[count], sentinel<T>())) << label << ": wrote past the end";
        }
    }

    /// Data movement: rank r's element i is value<T>(r, i, sum) (distinct enough per rank).
    template <class T> void bcast(size_t count, const char *algo, int root)
    {
        std::vector<std::unique_ptr<device_array<T>>> buf;
        std::vector<T> theirs(count);
        for (size_t i = 0; i < count; ++i)
            theirs[i] = value<T>(root, i, coll::op_kind::sum);
        for (int r = 0; r < p(); ++r) {
            std::vector<T> mine(count + 1, sentinel<T>());
            if (r == root)
                std::copy(theirs.begin(), theirs.end(), mine.begin());
            buf.push_back(std::make_unique<device_array<T>>(cu(), mine));
        }
        world_->run([&](int r) {
            return world_->comm(r).ibcast(buf[size_t(r)]->get(), count, root, run_with(algo));
        });
        for (int r = 0; r < p(); ++r) {
            const auto got   = buf[size_t(r)]->download();
            const auto label = what("bcast", coll::name_of(coll::datatype_of<T>()),
                                    coll::op_kind::sum, count, p(), algo) +
                               " root " + std::to_string(root) + " rank " + std::to_string(r);
            for (size_t i = 0; i <= count; ++i) {
                ASSERT_TRUE(same_bits(got[i], i < count ? theirs[i] : sentinel<T>()))
                    << label << " element " << i;
            }
        }
    }

    /// allgather / gather / alltoall / scatter: checks every rank's (or the root's) output.
    template <class T>
    void movement(const char *collective, size_t count, const char *algo, int root)
    {
        const std::string kind = collective;
        const size_t total     = count * size_t(p());
        const bool big_send    = kind == "alltoall" || kind == "scatter";
        const bool big_recv    = kind != "scatter";
        auto element = [&](int r, size_t i) { return value<T>(r, i, coll::op_kind::sum); };
        std::vector<std::unique_ptr<device_array<T>>> send, recv;
        for (int r = 0; r < p(); ++r) {
            std::vector<T> mine(big_send ? total : count);
            for (size_t i = 0; i < mine.size(); ++i)
                mine[i] = element(r, i);
            send.push_back(std::make_unique<device_array<T>>(cu(), mine));
            recv.push_back(std::make_unique<device_array<T>>(
                cu(), std::vector<T>((big_recv ? total : count) + 1, sentinel<T>())));
        }
        world_->run([&](int r) {
            T *s = send[size_t(r)]->get(), *o = recv[size_t(r)]->get();
            auto &c                          = world_->comm(r);
            const coll::call_options options = run_with(algo);
            if (kind == "allgather")
                return c.iallgather(s, o, count, options);
            if (kind == "gather")
                return c.igather(s, r == root ? o : nullptr, count, root, options);
            if (kind == "scatter")
                return c.iscatter(r == root ? s : nullptr, o, count, root, options);
            return c.ialltoall(s, o, count, options);
        });
        for (int r = 0; r < p(); ++r) {
            if (kind == "gather" && r != root)
                continue;
            const auto got   = recv[size_t(r)]->download();
            const auto label = what(collective, coll::name_of(coll::datatype_of<T>()),
                                    coll::op_kind::sum, count, p(), algo) +
                               " root " + std::to_string(root) + " rank " + std::to_string(r);
            const size_t n = big_recv ? total : count;
            for (size_t i = 0; i < n; ++i) {
                const int from = big_recv ? int(i / std::max<size_t>(count, 1)) : root;
                const size_t j = i % std::max<size_t>(count, 1);
                T want;
                if (kind == "alltoall")
                    want = element(from, size_t(r) * count + j);
                else if (kind == "scatter")
                    want = element(root, size_t(r) * count + j);
                else
                    want = element(from, j);
                ASSERT_TRUE(same_bits(got[i], want))
                    << label << " element " << i << ": " << as_double(got[i]) << " vs "
                    << as_double(want);
            }
            ASSERT_TRUE(same_bits(got[n], sentinel<T>())) << label << ": wrote past the end";
        }
    }

    template <class T> void every_collective(std::initializer_list<coll::op_kind> ops)
    {
        const int last = p() - 1;
        for (size_t count : counts<T>()) {
            for (coll::op_kind op : ops) {
                for_each_algorithm({"recursive_doubling", "ring", "knomial", "rabenseifner"},
                                   [&](const char *algo) { allreduce<T>(op, count, algo, false); });
                if (HasFatalFailure())
                    return;
                allreduce<T>(op, count, "automatic", true);
                for_each_algorithm({"binomial", "reduce_scatter_gather"}, [&](const char *algo) {
                    reduce<T>(op, count, algo, 0);
                    reduce<T>(op, count, algo, last);
                });
                for_each_algorithm({"ring", "knomial"},
                                   [&](const char *algo) { reduce_scatter<T>(op, count, algo); });
                if (HasFatalFailure())
                    return;
            }
            for_each_algorithm({"binomial", "scatter_allgather"}, [&](const char *algo) {
                bcast<T>(count, algo, last / 2 + (p() > 2));
            });
            const bool pof2 = (p() & (p() - 1)) == 0;
            // (a vector: an initializer_list's array would not outlive this statement)
            const std::vector<const char *> allgather_algos =
                pof2 ? std::vector<const char *>{"ring", "bruck", "recursive_doubling"}
                     : std::vector<const char *>{"ring", "bruck"};
            for_each_algorithm(allgather_algos,
                               [&](const char *algo) { movement<T>("allgather", count, algo, 0); });
            for_each_algorithm({"binomial", "linear"}, [&](const char *algo) {
                movement<T>("gather", count, algo, last);
                movement<T>("scatter", count, algo, last);
            });
            for_each_algorithm({"pairwise", "linear"},
                               [&](const char *algo) { movement<T>("alltoall", count, algo, 0); });
            if (HasFatalFailure())
                return;
        }
    }

    cuda_session session_;
    std::unique_ptr<local_world> world_;
};

TEST_P(CollGpu, Int32)
{
    every_collective<int32_t>({coll::op_kind::sum, coll::op_kind::max});
}
TEST_P(CollGpu, Float32WithProdAndMin)
{
    every_collective<float>(
        {coll::op_kind::sum, coll::op_kind::max, coll::op_kind::prod, coll::op_kind::min});
}
TEST_P(CollGpu, Float64)
{
    every_collective<double>({coll::op_kind::sum, coll::op_kind::max});
}
TEST_P(CollGpu, Float16)
{
    every_collective<half_t>({coll::op_kind::sum, coll::op_kind::max});
}
TEST_P(CollGpu, Bfloat16)
{
    every_collective<bfloat16_t>({coll::op_kind::sum, coll::op_kind::max});
}

TEST_P(CollGpu, Barrier)
{
    world_->run([&](int r) { return world_->comm(r).ibarrier(); });
}

/// A user reduction on CUDA buffers is staged through the host (documented: correct, slow).
TEST_P(CollGpu, CustomReductionIsStagedThroughTheHost)
{
    const auto absmax = coll::reduction::custom<int32_t>(
        [](int32_t a, int32_t b) { return std::max(std::abs(a), std::abs(b)); });
    const size_t count = 100003;
    std::vector<std::unique_ptr<device_array<int32_t>>> buf;
    for (int r = 0; r < p(); ++r) {
        std::vector<int32_t> mine(count);
        for (size_t i = 0; i < count; ++i)
            mine[i] = int32_t((size_t(r) * 31 + i) % 61) - 30;
        buf.push_back(std::make_unique<device_array<int32_t>>(cu(), mine));
    }
    world_->run([&](int r) {
        int32_t *b = buf[size_t(r)]->get();
        return world_->comm(r).iallreduce(b, b, count, absmax);
    });
    for (int r = 0; r < p(); ++r) {
        const auto got = buf[size_t(r)]->download();
        for (size_t i = 0; i < count; ++i) {
            auto v       = [i](int q) { return int32_t((size_t(q) * 31 + i) % 61) - 30; };
            int32_t want = v(0);  // combine(accumulated, incoming) from rank 0's value on
            for (int q = 1; q < p(); ++q)
                want = std::max(std::abs(want), std::abs(v(q)));
            ASSERT_EQ(got[i], want) << "rank " << r << " element " << i;
        }
    }
}

/// Persistent collectives on CUDA buffers: each start issues the bound call anew; started three
/// times on new contents of the same buffers, each result is right.
TEST_P(CollGpu, PersistentCollectivesOnDeviceBuffers)
{
    const size_t count = 100003;
    std::vector<std::unique_ptr<device_array<int32_t>>> buf, blocks, gathered;
    std::vector<coll::persistent> allreduce, allgather;
    for (int r = 0; r < p(); ++r) {
        buf.push_back(std::make_unique<device_array<int32_t>>(cu(), count));
        blocks.push_back(std::make_unique<device_array<int32_t>>(cu(), 5));
        gathered.push_back(std::make_unique<device_array<int32_t>>(cu(), 5 * size_t(p())));
        auto &c = world_->comm(r);
        allreduce.push_back(
            c.allreduce_init(buf.back()->get(), buf.back()->get(), count, coll::sum));
        allgather.push_back(c.allgather_init(blocks.back()->get(), gathered.back()->get(), 5));
        EXPECT_NE(allreduce.back().algorithm(), coll::algorithm::automatic);
    }
    for (int round = 0; round < 3; ++round) {
        for (int r = 0; r < p(); ++r) {
            std::vector<int32_t> mine(count), block(5);
            for (size_t i = 0; i < count; ++i)
                mine[i] = int32_t(i % 1000) + r + round;
            for (size_t i = 0; i < 5; ++i)
                block[i] = int32_t(i) + 10 * r + round;
            buf[size_t(r)]->upload(mine);
            blocks[size_t(r)]->upload(block);
        }
        world_->run([&](int r) { return allreduce[size_t(r)].start(); });
        world_->run([&](int r) { return allgather[size_t(r)].start(); });
        for (int r = 0; r < p(); ++r) {
            const auto got = buf[size_t(r)]->download();
            for (size_t i = 0; i < count; ++i) {
                const int32_t want = p() * (int32_t(i % 1000) + round) + p() * (p() - 1) / 2;
                ASSERT_EQ(got[i], want) << "allreduce round " << round << " rank " << r;
            }
            const auto all = gathered[size_t(r)]->download();
            for (int q = 0; q < p(); ++q) {
                for (size_t i = 0; i < 5; ++i)
                    ASSERT_EQ(all[size_t(q) * 5 + i], int32_t(i) + 10 * q + round);
            }
        }
    }
}

/// The v-variants on CUDA buffers: uneven counts with zeros, blocks in reverse order with gaps
/// (the gaps must stay as they were), small and multi-segment blocks, every algorithm; results
/// against the host reference of coll_vchecks.hpp.
TEST_P(CollGpu, VariantsOnDeviceBuffers)
{
    auto on_device = [&](const auto &host) {
        using T = typename std::decay_t<decltype(host)>::value_type;
        return std::make_unique<device_array<T>>(cu(), host);
    };
    auto each = [&](auto zero) {
        using T       = decltype(zero);
        using buffers = std::vector<std::unique_ptr<device_array<T>>>;
        for (size_t scale : {size_t(1), size_t(70001)}) {
            const v_shape s{1, scale, 3};
            const std::vector<size_t> counts = s.column(p(), 0);
            const v_blocks blocks(counts, s.gap), packed(counts, 0);
            const auto gathered     = spread<T>(blocks,
                                                [](int i, size_t k) { return payload<T>(i, k); });
            const std::string label = std::string(coll::name_of(coll::datatype_of<T>())) + " " +
                                      s.name() + " ranks=" + std::to_string(p());
            std::vector<std::vector<T>> own(static_cast<size_t>(p()));
            for (int r = 0; r < p(); ++r) {
                for (size_t k = 0; k < counts[size_t(r)]; ++k)
                    own[size_t(r)].push_back(payload<T>(r, k));
            }
            const std::vector<T> empty_output(blocks.extent + 1, untouched<T>);
            for_each_algorithm({"ring", "linear"}, [&](const char *algo) {
                buffers send, recv;
                for (int r = 0; r < p(); ++r) {
                    send.push_back(on_device(own[size_t(r)]));
                    recv.push_back(on_device(empty_output));
                }
                world_->run([&](int r) {
                    return world_->comm(r).iallgatherv(send[size_t(r)]->get(), counts[size_t(r)],
                                                       recv[size_t(r)]->get(), counts,
                                                       blocks.displs, run_with(algo));
                });
                for (int r = 0; r < p(); ++r) {
                    ASSERT_TRUE(same_buffer(recv[size_t(r)]->download(), gathered,
                                            "allgatherv " + label + " " + algo));
                }
            });
            for_each_algorithm({"linear", "pairwise"}, [&](const char *algo) {
                // Rank r sends rank j the block j of the gathered layout, as rank j's own:
                // every rank ends with the gathered buffer.
                buffers send, recv;
                std::vector<std::vector<size_t>> out(static_cast<size_t>(p()));
                for (int r = 0; r < p(); ++r) {
                    out[size_t(r)].assign(size_t(p()), counts[size_t(r)]);
                    std::vector<T> mine;
                    for (int j = 0; j < p(); ++j)
                        mine.insert(mine.end(), own[size_t(r)].begin(), own[size_t(r)].end());
                    send.push_back(on_device(mine));
                    recv.push_back(on_device(empty_output));
                }
                world_->run([&](int r) {
                    return world_->comm(r).ialltoallv(send[size_t(r)]->get(), out[size_t(r)], {},
                                                      recv[size_t(r)]->get(), counts, blocks.displs,
                                                      run_with(algo));
                });
                for (int r = 0; r < p(); ++r) {
                    ASSERT_TRUE(same_buffer(recv[size_t(r)]->download(), gathered,
                                            "alltoallv " + label + " " + algo));
                }
            });
            {
                const int root = p() - 1;
                buffers send;
                for (int r = 0; r < p(); ++r)
                    send.push_back(on_device(own[size_t(r)]));
                auto at_root = on_device(empty_output);
                world_->run([&](int r) {
                    return world_->comm(r).igatherv(send[size_t(r)]->get(), counts[size_t(r)],
                                                    at_root->get(), counts, blocks.displs, root);
                });
                ASSERT_TRUE(same_buffer(at_root->download(), gathered, "gatherv " + label));
                auto blocks_at_root = on_device(gathered);
                buffers recv;
                for (int r = 0; r < p(); ++r) {
                    recv.push_back(on_device(std::vector<T>(counts[size_t(r)] + 1, untouched<T>)));
                }
                world_->run([&](int r) {
                    return world_->comm(r).iscatterv(blocks_at_root->get(), counts, blocks.displs,
                                                     recv[size_t(r)]->get(), counts[size_t(r)], 0);
                });
                for (int r = 0; r < p(); ++r) {
                    std::vector<T> want = own[size_t(r)];
                    want.push_back(untouched<T>);
                    ASSERT_TRUE(same_buffer(recv[size_t(r)]->download(), want,
                                            "scatterv " + label + " rank " + std::to_string(r)));
                }
            }
            for_each_algorithm({"ring", "knomial"}, [&](const char *algo) {
                buffers send, recv;
                for (int r = 0; r < p(); ++r) {
                    std::vector<T> all;
                    for (size_t i = 0; i < packed.extent; ++i)
                        all.push_back(input<T>(r, i, coll::op_kind::sum));
                    send.push_back(on_device(all));
                    recv.push_back(on_device(std::vector<T>(counts[size_t(r)] + 1, untouched<T>)));
                }
                world_->run([&](int r) {
                    return world_->comm(r).ireduce_scatter(send[size_t(r)]->get(),
                                                           recv[size_t(r)]->get(), counts,
                                                           coll::sum, run_with(algo));
                });
                for (int r = 0; r < p(); ++r) {
                    std::vector<T> want;
                    for (size_t k = 0; k < counts[size_t(r)]; ++k) {
                        want.push_back(
                            reference<T>(p(), packed.at[size_t(r)] + k, coll::op_kind::sum));
                    }
                    want.push_back(untouched<T>);
                    ASSERT_TRUE(same_buffer(recv[size_t(r)]->download(), want,
                                            "reduce_scatter(counts) " + label + " " + algo));
                }
            });
        }
    };
    each(int32_t{});
    each(float{});
    each(double{});
}

/// Host and CUDA buffers in one call are refused with a clear error on every rank.
TEST_P(CollGpu, MixedHostAndDeviceBuffersAreRefused)
{
    device_array<float> dev(cu(), 16);
    std::vector<float> host(16);
    try {
        (void)world_->comm(0).iallreduce(host.data(), dev.get(), 16, coll::sum);
        FAIL() << "mixing host and CUDA buffers was accepted";
    } catch (const ucp_cpp::ucx_error &e) {
        EXPECT_EQ(e.status(), UCS_ERR_UNSUPPORTED);
        EXPECT_NE(std::string(e.what()).find("host memory"), std::string::npos) << e.what();
    }
}

INSTANTIATE_TEST_SUITE_P(Ranks, CollGpu, ::testing::Values(1, 2, 3, 4),
                         [](const ::testing::TestParamInfo<int> &info) {
                             return std::to_string(info.param) + "ranks";
                         });

/// A lane on device 0 for the kernel tests (a 1-byte buffer tells it the context); cu() is
/// null without a usable device.
class kernel_lane {
public:
    kernel_lane()
    {
        if (session_.cu() == nullptr)
            return;
        probe_ = std::make_unique<device_array<uint8_t>>(*session_.cu(), 1);
        lane_  = std::make_shared<gpu::lane>(gpu::locate(probe_->get()), size_t(1) << 20);
    }
    const gpu::driver *cu() const { return session_.cu(); }
    const std::string &why() const { return session_.why(); }
    std::shared_ptr<gpu::lane> lane() const { return lane_; }

private:
    cuda_session session_;
    std::unique_ptr<device_array<uint8_t>> probe_;
    std::shared_ptr<gpu::lane> lane_;
};

/// The reduction kernels against the host reductions, bit for bit (float16/bfloat16 included:
/// both compute in float and round to nearest even), every type x op, aligned and unaligned.
TEST(CollGpuKernels, MatchHostReductionsBitForBit)
{
    kernel_lane device;
    if (device.cu() == nullptr)
        GTEST_SKIP() << "no usable CUDA driver/device: " << device.why();
    const gpu::driver &cu = *device.cu();
    auto lane             = device.lane();
    const size_t n        = 100000;
    for (int t = 0; t <= int(coll::datatype::bfloat16); ++t) {
        const auto type   = coll::datatype(t);
        const size_t elem = coll::size_of(type);
        for (coll::op_kind op :
             {coll::op_kind::sum, coll::op_kind::prod, coll::op_kind::min, coll::op_kind::max}) {
            for (size_t shift : {size_t(0), size_t(1)}) {  // element offset: 16-byte vectors or not
                std::vector<uint8_t> a((n + 1) * elem), b((n + 1) * elem);
                uint64_t state = 0x9e3779b97f4a7c15ull * uint64_t(t * 8 + int(op) + 1);
                auto next      = [&] {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    return state;
                };
                for (size_t i = 0; i < n + 1; ++i) {
                    // Moderate values (no infinities / NaN): small integers or fractions, by type.
                    const double v = double(int64_t(next() % 2001) - 1000) /
                                     (t >= int(coll::datatype::float32) ? 37.0 : 1.0);
                    const double w = op == coll::op_kind::prod ? double(1 + next() % 3) : v;
                    auto put       = [&](std::vector<uint8_t> &dst, double x) {
                        uint8_t *at = dst.data() + i * elem;
                        switch (type) {
                        case coll::datatype::float16: {
                            const half_t h{float(x)};
                            std::memcpy(at, &h, 2);
                            break;
                        }
                        case coll::datatype::bfloat16: {
                            const bfloat16_t h{float(x)};
                            std::memcpy(at, &h, 2);
                            break;
                        }
                        case coll::datatype::float32: {
                            float f = float(x);
                            std::memcpy(at, &f, 4);
                            break;
                        }
                        case coll::datatype::float64:
                            std::memcpy(at, &x, 8);
                            break;
                        default: {
                            int64_t k = int64_t(x);
                            std::memcpy(at, &k, elem);
                            break;
                        }  // little endian
                        }
                    };
                    put(a, w);
                    put(b, op == coll::op_kind::prod
                               ? double(1 + next() % 3)
                               : double(int64_t(next() % 2001) - 1000) /
                                     (t >= int(coll::datatype::float32) ? 37.0 : 1.0));
                }
                device_array<uint8_t> da(cu, a), db(cu, b);
                const coll::reduction &reduction = op_object(op);
                lane->reduce(reduction, type, db.get() + shift * elem, da.get() + shift * elem, n);
                gpu::check(cu.cuStreamSynchronize(lane->stream()), "cuStreamSynchronize");
                reduction.apply(type, b.data() + shift * elem, a.data() + shift * elem, n);
                const auto got = da.download();
                ASSERT_EQ(std::memcmp(got.data(), a.data(), a.size()), 0)
                    << coll::name_of(type) << " " << op_name(op) << " shift " << shift;
            }
        }
    }
}


// The direct allreduce's kernel: up to 16 outputs from any number of inputs (chained 8 at a
// time), in place too, against the host reduction in the same order, bit for bit (int32 and
// float: the host applies the inputs in the same order).
TEST(CollGpuKernels, ManyInputsIntoManyOutputs)
{
    kernel_lane device;
    if (device.cu() == nullptr)
        GTEST_SKIP() << "no usable CUDA driver/device: " << device.why();
    const gpu::driver &cu = *device.cu();
    auto lane             = device.lane();
    for (size_t k : {size_t(1), size_t(4), size_t(8), size_t(9), size_t(16)}) {
        for (size_t n : {size_t(3), size_t(1001), size_t(1 << 18) + 5}) {
            for (bool in_place : {false, true}) {
                std::vector<std::unique_ptr<device_array<float>>> in, out;
                std::vector<const void *> inputs;
                std::vector<void *> outputs;
                std::vector<float> expected(n);
                for (size_t j = 0; j < k; ++j) {
                    std::vector<float> x(n);
                    for (size_t i = 0; i < n; ++i)
                        x[i] = value<float>(int(j), i, coll::op_kind::sum);
                    for (size_t i = 0; i < n; ++i)
                        expected[i] = j == 0 ? x[i] : expected[i] + x[i];
                    in.push_back(std::make_unique<device_array<float>>(cu, x));
                    inputs.push_back(in.back()->get());
                }
                const size_t m = std::min<size_t>(k, gpu::max_kernel_outputs);
                for (size_t o = 0; o < m; ++o) {
                    if (in_place) {
                        outputs.push_back(in[o]->get());
                    } else {
                        out.push_back(std::make_unique<device_array<float>>(
                            cu, std::vector<float>(n, sentinel<float>())));
                        outputs.push_back(out.back()->get());
                    }
                }
                lane->reduce_many(coll::sum, coll::datatype::float32, inputs.data(), k,
                                  outputs.data(), m, n);
                gpu::check(cu.cuStreamSynchronize(lane->stream()), "cuStreamSynchronize");
                for (size_t o = 0; o < m; ++o) {
                    const auto got = in_place ? in[o]->download() : out[o]->download();
                    ASSERT_EQ(std::memcmp(got.data(), expected.data(), n * sizeof(float)), 0)
                        << "k=" << k << " n=" << n << " output " << o
                        << (in_place ? " in place" : "");
                }
            }
        }
    }
}

// ---------------------------------------------------------------- ranks as processes

using gdr_test::free_loopback_port;

/// One rank of CollGpuProcesses: its own CUDA context (after the fork; GPU rank % 2 where a
/// second GPU exists, else GPU 0), bootstrap over TCP,
/// collectives on device buffers, results checked against the host reference.
void gpu_process_rank(int rank, int size, uint16_t port)
{
    cuda_session session(rank % 2);  // with two GPUs, odd ranks on the second one
    std::fprintf(stderr, "[rank %d] GPU %d\n", rank, session.ordinal());
    PEER_CHECK(session.cu() != nullptr);
    const gpu::driver &cu = *session.cu();
    coll::bootstrap_params params;
    params.rank      = rank;
    params.size      = size;
    params.root_host = "127.0.0.1";
    params.root_port = port;
    params.timeout   = 30s;
    auto world = coll::communicator::bootstrap(ucp_cpp::worker::create(make_context()), params);

    // allreduce (float, sum), 1 MiB + 3 elements: several staged segments per transfer
    const size_t n = (size_t(1) << 18) + 3;
    std::vector<float> mine(n), expected(n, 0.0f);
    for (size_t i = 0; i < n; ++i)
        mine[i] = value<float>(rank, i, coll::op_kind::sum);
    for (int q = 0; q < size; ++q)
        for (size_t i = 0; i < n; ++i)
            expected[i] += value<float>(q, i, coll::op_kind::sum);
    device_array<float> d_in(cu, mine), d_out(cu, n);
    world.allreduce(d_in.get(), d_out.get(), n, coll::sum);
    const auto got = d_out.download();
    for (size_t i = 0; i < n; ++i)
        PEER_CHECK(std::fabs(double(got[i]) - double(expected[i])) <= 1e-3);

    // allgather (bfloat16) and bcast (float16) from the last rank
    const size_t block = 1001;
    std::vector<bfloat16_t> part(block);
    for (size_t i = 0; i < block; ++i)
        part[i] = bfloat16_t(float(rank * 3 + int(i % 5)));
    device_array<bfloat16_t> d_part(cu, part), d_all(cu, block * size_t(size));
    world.allgather(d_part.get(), d_all.get(), block);
    const auto all = d_all.download();
    for (int q = 0; q < size; ++q)
        for (size_t i = 0; i < block; ++i)
            PEER_CHECK(float(all[size_t(q) * block + i]) == float(q * 3 + int(i % 5)));
    std::vector<half_t> root_data(4099);
    for (size_t i = 0; i < root_data.size(); ++i)
        root_data[i] = half_t(rank == size - 1 ? float(i % 97) : -1.0f);
    device_array<half_t> d_b(cu, root_data);
    world.bcast(d_b.get(), root_data.size(), size - 1);
    const auto b = d_b.download();
    for (size_t i = 0; i < b.size(); ++i)
        PEER_CHECK(float(b[i]) == float(i % 97));
    world.barrier();
}

// ---------------------------------------------------------------- the direct allreduce

/// One allreduce of value<T>(rank, i, op) on CUDA buffers of this rank, every element checked
/// against the host reference (integers exact, floating sums within p * unit * sum|x|), the
/// element past the end untouched, and whether the call read the peers' buffers directly as
/// @p direct says.  Out of place it runs twice on the same buffers (the second call reuses the
/// mappings of the first) and checks that the input was left alone.
template <class T>
void checked_allreduce(const coll::communicator &world, const gpu::driver &cu, coll::op_kind op,
                       size_t count, bool in_place, bool direct,
                       const coll::call_options &options = {})
{
    const int rank = world.rank(), size = world.size();
    std::vector<T> mine(count), out(count + 1, sentinel<T>());
    for (size_t i = 0; i < count; ++i)
        mine[i] = value<T>(rank, i, op);
    if (in_place)
        std::copy(mine.begin(), mine.end(), out.begin());
    device_array<T> d_in(cu, mine), d_out(cu, out);
    for (int call = 0; call < (in_place ? 1 : 2); ++call) {
        auto req = world.iallreduce(in_place ? d_out.get() : d_in.get(), d_out.get(), count,
                                    op_object(op), options);
        req.wait(60s);
        if (req.gpu_direct() != direct) {
            throw std::runtime_error(
                what("allreduce", coll::name_of(coll::datatype_of<T>()), op, count, size,
                     in_place ? "in place" : "out of place") +
                (direct ? ": did not read the peers' buffers" : ": read the peers' buffers"));
        }
        const auto got = d_out.download();
        for (size_t i = 0; i < count; ++i) {
            const auto verdict = matches(got[i], reference_of<T>(size, op, [i](int) { return i; }));
            if (!verdict) {
                throw std::runtime_error(what("allreduce", coll::name_of(coll::datatype_of<T>()),
                                              op, count, size,
                                              in_place ? "in place" : "out of place") +
                                         " rank " + std::to_string(rank) + " element " +
                                         std::to_string(i) + ": " + verdict.message());
            }
        }
        PEER_CHECK(same_bits(got[count], sentinel<T>()));
    }
    if (!in_place) {
        const auto input = d_in.download();
        PEER_CHECK(std::memcmp(input.data(), mine.data(), count * sizeof(T)) == 0);
    }
}

/// Counts for 4 ranks: below p (1, 3), odd and not divisible by p, over several vector widths.
const std::vector<size_t> direct_counts = {1, 3, 1001, (size_t(1) << 20) + 3};

/// A rank of CollGpuProcesses.DirectAllreduce: its own process and CUDA context, all on GPU 0.
void direct_allreduce_rank(int rank, int size, uint16_t forced_port, uint16_t auto_port)
{
    cuda_session session(0);
    PEER_CHECK(session.cu() != nullptr);
    const gpu::driver &cu = *session.cu();

    // Forced (config gpu_direct always): a call that cannot read the peers' buffers fails.
    coll::communicator_params forced;
    forced.config = coll::config::from_environment().gpu_direct(coll::gpu::direct::always);
    auto world    = coll::communicator::bootstrap(ucp_cpp::worker::create(make_context()),
                                                  rendezvous(rank, size, forced_port), forced);
    for (size_t count : direct_counts) {
        for (bool in_place : {false, true}) {
            checked_allreduce<int32_t>(world, cu, coll::op_kind::sum, count, in_place, true);
            checked_allreduce<int32_t>(world, cu, coll::op_kind::max, count, in_place, true);
            checked_allreduce<float>(world, cu, coll::op_kind::sum, count, in_place, true);
            checked_allreduce<float>(world, cu, coll::op_kind::min, count, in_place, true);
            checked_allreduce<bfloat16_t>(world, cu, coll::op_kind::sum, count, in_place, true);
            checked_allreduce<half_t>(world, cu, coll::op_kind::sum, count, in_place, true);
            checked_allreduce<double>(world, cu, coll::op_kind::prod, count, in_place, true);
        }
    }

    // Automatic: direct for device memory; managed memory cannot be exported, so every rank
    // falls back to the algorithm (and agrees to); a named algorithm is run as named.
    auto automatic = coll::communicator::bootstrap(ucp_cpp::worker::create(make_context()),
                                                   rendezvous(rank, size, auto_port));
    checked_allreduce<float>(automatic, cu, coll::op_kind::sum, 4099, false, true);
    checked_allreduce<float>(automatic, cu, coll::op_kind::sum, 4099, false, false,
                             run_with("ring"));
    const size_t n           = 4099;
    gpu::CUdeviceptr managed = 0;
    gpu::check(cu.cuMemAllocManaged(&managed, n * sizeof(float), 1 /* CU_MEM_ATTACH_GLOBAL */),
               "cuMemAllocManaged");
    auto *shared = reinterpret_cast<float *>(uintptr_t(managed));
    for (size_t i = 0; i < n; ++i)
        shared[i] = value<float>(rank, i, coll::op_kind::sum);
    auto req = automatic.iallreduce(shared, shared, n, coll::sum);
    req.wait(60s);
    PEER_CHECK(!req.gpu_direct());
    for (size_t i = 0; i < n; ++i) {
        PEER_CHECK(matches(shared[i],
                           reference_of<float>(size, coll::op_kind::sum, [i](int) { return i; })));
    }

    // Next to UCX's own transfers of the same buffer (with CUDA transports, UCX's cuda_ipc maps
    // the peers' allocations in this process too, and the driver maps one only once): allreduce,
    // allgather of its blocks, allreduce again, every element checked.  The second allreduce
    // reads directly or falls back (rank 0 cannot map what UCX holds): correct either way.
    const size_t m = 4099, total = m * size_t(size);
    std::vector<float> x(total);
    for (size_t i = 0; i < total; ++i)
        x[i] = value<float>(rank, i, coll::op_kind::sum);
    device_array<float> buf(cu, x), gathered(cu, total);
    automatic.allreduce(buf.get(), buf.get(), total, coll::sum);
    const auto reduced = buf.download();
    for (size_t i = 0; i < total; ++i) {
        PEER_CHECK(matches(reduced[i],
                           reference_of<float>(size, coll::op_kind::sum, [i](int) { return i; })));
    }
    automatic.allgather(buf.get() + size_t(rank) * m, gathered.get(), m);
    PEER_CHECK(std::memcmp(gathered.download().data(), reduced.data(), total * sizeof(float)) == 0);
    automatic.allreduce(buf.get(), buf.get(), total, coll::sum);
    const auto twice = buf.download();
    for (size_t i = 0; i < total; ++i)  // multiples of 1/64 below 2^8: exact
        PEER_CHECK(twice[i] == reduced[i] * float(size));

    // ... and forced, the same call fails on every rank, naming why.
    try {
        world.allreduce(shared, shared, n, coll::sum);
        PEER_CHECK(!"the forced direct allreduce of managed memory succeeded");
    } catch (const ucp_cpp::ucx_error &e) {
        std::fprintf(stderr, "[rank %d] forced direct on managed memory: %s\n", rank, e.what());
        PEER_CHECK(e.status() == UCS_ERR_UNSUPPORTED);
        PEER_CHECK(std::string(e.what()).find("cannot be exported") != std::string::npos);
    }
    cu.cuMemFree_v2(managed);
}

/// Skips the calling test when no CUDA device can be used (probed in a child: CUDA does not
/// survive fork(), so this process never touches it).
#define SKIP_WITHOUT_CUDA()                                              \
    do {                                                                 \
        ucp_cpp_test::peer_process probe([](ucp_cpp_test::channel &ch) { \
            cuda_session session;                                        \
            ch.send_value(session.cu() != nullptr ? 1 : 0);              \
            if (session.cu() == nullptr)                                 \
                ch.send(session.why().data(), session.why().size());     \
        });                                                              \
        if (probe.control().recv_value() == 0) {                         \
            const auto why = probe.control().recv();                     \
            GTEST_SKIP() << std::string(why.begin(), why.end());         \
        }                                                                \
        ASSERT_EQ(probe.wait_exit(), 0);                                 \
    } while (0)

TEST(CollGpuProcesses, DirectAllreduceReadsThePeersBuffers)
{
    SKIP_WITHOUT_CUDA();
    ::setenv("UCP_CPP_COLL_TIMEOUT", "60", 1);
    const int size             = 4;
    const uint16_t forced_port = free_loopback_port(), auto_port = free_loopback_port();
    std::vector<std::unique_ptr<ucp_cpp_test::peer_process>> ranks;
    for (int r = 0; r < size; ++r) {
        ranks.push_back(std::make_unique<ucp_cpp_test::peer_process>(
            [=](ucp_cpp_test::channel &) {
                direct_allreduce_rank(r, size, forced_port, auto_port);
            },
            240));
    }
    for (int r = 0; r < size; ++r)
        EXPECT_EQ(ranks[size_t(r)]->wait_exit(200s), 0) << "rank " << r;
}

TEST(CollGpuProcesses, FourProcessesBootstrapOverTcp)
{
    // CUDA does not survive fork(): this process never touches it; the probe and every rank
    // run in children.
    SKIP_WITHOUT_CUDA();

    ::setenv("UCP_CPP_COLL_TIMEOUT", "60", 1);
    const int size      = 4;
    const uint16_t port = free_loopback_port();
    std::vector<std::unique_ptr<ucp_cpp_test::peer_process>> ranks;
    for (int r = 0; r < size; ++r) {
        ranks.push_back(std::make_unique<ucp_cpp_test::peer_process>(
            [=](ucp_cpp_test::channel &) { gpu_process_rank(r, size, port); }, 120));
    }
    for (int r = 0; r < size; ++r)
        EXPECT_EQ(ranks[size_t(r)]->wait_exit(100s), 0) << "rank " << r;
}

}  // namespace
}  // namespace coll_test
