// The checks of each collective, shared by the host test files: run it on every rank of a
// local_world (coll_harness.hpp) with a given algorithm, compare every rank's result with a
// reference computed here (integers exact, floats 1e-5 relative) and look past the end.
#pragma once

#include "coll_harness.hpp"

#include <functional>
#include <string>
#include <thread>
#include <vector>

namespace coll_test {

/// Call options that ask for algorithm @p a.
inline coll::call_options with(coll::algorithm a)
{
    coll::call_options options;
    options.algo = a;
    return options;
}

inline std::string describe(const char *what, const char *type, coll::op_kind op, size_t count,
                            coll::algorithm a, int extra = -1)
{
    std::string text = std::string(what) + " " + type + " " + op_name(op) +
                       " count=" + std::to_string(count) + " algo=" + coll::name_of(a);
    if (extra >= 0)
        text += " root=" + std::to_string(extra);
    return text;
}

// ---------------------------------------------------------------- reductions

template <class T>
void check_allreduce(local_world &world, size_t count, coll::op_kind op, coll::algorithm algo,
                     bool in_place)
{
    const int p = world.size();
    std::vector<std::vector<T>> send(static_cast<size_t>(p)),
        recv(static_cast<size_t>(p), std::vector<T>(count + 1, T(99)));
    std::vector<T> expected(count);
    for (size_t i = 0; i < count; ++i)
        expected[i] = reference<T>(p, i, op);
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i)
            send[size_t(r)].push_back(input<T>(r, i, op));
        if (in_place) {
            std::copy(send[size_t(r)].begin(), send[size_t(r)].end(), recv[size_t(r)].begin());
        }
    }
    world.run([&](int r) {
        T *out = recv[size_t(r)].data();
        return world.comm(r).iallreduce(in_place ? out : send[size_t(r)].data(), out, count,
                                        op_object(op), with(algo));
    });
    for (int r = 0; r < p; ++r) {
        const auto what = describe(in_place ? "allreduce(in place)" : "allreduce",
                                   coll::name_of(coll::datatype_of<T>()), op, count, algo) +
                          " rank " + std::to_string(r);
        ASSERT_TRUE(equal_elements(recv[size_t(r)].data(), expected.data(), count, what));
        ASSERT_EQ(recv[size_t(r)][count], T(99)) << what << ": wrote past the end";
    }
}

template <class T>
void check_reduce(local_world &world, size_t count, coll::op_kind op, coll::algorithm algo,
                  int root)
{
    const int p = world.size();
    std::vector<std::vector<T>> send(static_cast<size_t>(p));
    std::vector<T> recv(count + 1, T(99)), expected(count);
    for (size_t i = 0; i < count; ++i)
        expected[i] = reference<T>(p, i, op);
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i)
            send[size_t(r)].push_back(input<T>(r, i, op));
    }
    world.run([&](int r) {
        return world.comm(r).ireduce(send[size_t(r)].data(), r == root ? recv.data() : nullptr,
                                     count, op_object(op), root, with(algo));
    });
    const auto what = describe("reduce", coll::name_of(coll::datatype_of<T>()), op, count, algo,
                               root);
    ASSERT_TRUE(equal_elements(recv.data(), expected.data(), count, what));
    ASSERT_EQ(recv[count], T(99)) << what;
}

template <class T>
void check_reduce_scatter(local_world &world, size_t count, coll::op_kind op, bool in_place,
                          coll::algorithm algo = coll::algorithm::automatic)
{
    const int p        = world.size();
    const size_t total = count * size_t(p);
    std::vector<std::vector<T>> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < total; ++i)
            send[size_t(r)].push_back(input<T>(r, i, op));
        recv[size_t(r)] = in_place ? send[size_t(r)] : std::vector<T>(count + 1, T(99));
    }
    world.run([&](int r) {
        T *out = recv[size_t(r)].data();
        return world.comm(r).ireduce_scatter(in_place ? out : send[size_t(r)].data(), out, count,
                                             op_object(op), with(algo));
    });
    for (int r = 0; r < p; ++r) {
        std::vector<T> expected(count);
        for (size_t i = 0; i < count; ++i)
            expected[i] = reference<T>(p, size_t(r) * count + i, op);
        ASSERT_TRUE(equal_elements(recv[size_t(r)].data(), expected.data(), count,
                                   describe("reduce_scatter", coll::name_of(coll::datatype_of<T>()),
                                            op, count, algo) +
                                       (in_place ? " in place" : "") + " rank " +
                                       std::to_string(r)));
    }
}

template <class T>
void check_bcast(local_world &world, size_t count, int root, coll::algorithm algo)
{
    const int p = world.size();
    std::vector<std::vector<T>> buf(static_cast<size_t>(p), std::vector<T>(count + 1, T(99)));
    for (size_t i = 0; i < count; ++i)
        buf[size_t(root)][i] = payload<T>(root, i);
    world.run([&](int r) {
        return world.comm(r).ibcast(buf[size_t(r)].data(), count, root, with(algo));
    });
    for (int r = 0; r < p; ++r) {
        ASSERT_EQ(buf[size_t(r)], buf[size_t(root)])
            << "bcast " << coll::name_of(algo) << " count=" << count << " root=" << root << " rank "
            << r;
    }
}

template <class T>
void check_allgather(local_world &world, size_t count, coll::algorithm algo, bool in_place)
{
    const int p = world.size();
    std::vector<T> expected;
    for (int q = 0; q < p; ++q) {
        for (size_t i = 0; i < count; ++i)
            expected.push_back(payload<T>(q, i));
    }
    std::vector<std::vector<T>> send(static_cast<size_t>(p)),
        recv(static_cast<size_t>(p), std::vector<T>(count * size_t(p), T(99)));
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < count; ++i)
            send[size_t(r)].push_back(payload<T>(r, i));
        if (in_place) {
            std::copy(send[size_t(r)].begin(), send[size_t(r)].end(),
                      recv[size_t(r)].begin() + long(count) * r);
        }
    }
    world.run([&](int r) {
        T *out = recv[size_t(r)].data();
        return world.comm(r).iallgather(in_place ? out + count * size_t(r) : send[size_t(r)].data(),
                                        out, count, with(algo));
    });
    for (int r = 0; r < p; ++r) {
        ASSERT_EQ(recv[size_t(r)], expected)
            << "allgather " << coll::name_of(algo) << " count=" << count
            << (in_place ? " in place" : "") << " rank " << r;
    }
}

template <class T>
void check_alltoall(local_world &world, size_t count, bool in_place,
                    coll::algorithm algo = coll::algorithm::automatic)
{
    const int p  = world.size();
    auto element = [count](int from, int to, size_t i) {
        return payload<T>(from * 16 + to, i + count);
    };
    std::vector<std::vector<T>> send(static_cast<size_t>(p)),
        recv(static_cast<size_t>(p), std::vector<T>(count * size_t(p), T(99)));
    for (int r = 0; r < p; ++r) {
        for (int to = 0; to < p; ++to) {
            for (size_t i = 0; i < count; ++i)
                send[size_t(r)].push_back(element(r, to, i));
        }
        if (in_place)
            recv[size_t(r)] = send[size_t(r)];
    }
    world.run([&](int r) {
        T *out = recv[size_t(r)].data();
        return world.comm(r).ialltoall(in_place ? out : send[size_t(r)].data(), out, count,
                                       with(algo));
    });
    for (int r = 0; r < p; ++r) {
        for (int from = 0; from < p; ++from) {
            for (size_t i = 0; i < count; ++i) {
                ASSERT_EQ(recv[size_t(r)][size_t(from) * count + i], element(from, r, i))
                    << "alltoall count=" << count << (in_place ? " in place" : "") << " rank " << r
                    << " from " << from;
            }
        }
    }
}

/// Every rank's block of a gather / scatter: rank q's block is `count` payloads of q.
template <class T> std::vector<T> blocks_of_every_rank(int p, size_t count)
{
    std::vector<T> all;
    for (int q = 0; q < p; ++q) {
        for (size_t i = 0; i < count; ++i)
            all.push_back(payload<T>(q, i));
    }
    return all;
}

template <class T>
void check_gather(local_world &world, size_t count, int root, bool in_place,
                  coll::algorithm algo = coll::algorithm::automatic)
{
    const int p              = world.size();
    const std::vector<T> all = blocks_of_every_rank<T>(p, count);
    auto block               = [&](int r) { return all.data() + count * size_t(r); };
    std::vector<T> gathered(count * size_t(p), T(99));
    if (in_place)
        std::copy(block(root), block(root + 1), gathered.begin() + long(count) * root);
    world.run([&](int r) {
        const T *send = (in_place && r == root) ? gathered.data() + count * size_t(root) : block(r);
        return world.comm(r).igather(send, r == root ? gathered.data() : nullptr, count, root,
                                     with(algo));
    });
    ASSERT_EQ(gathered, all) << "gather count=" << count << " root=" << root
                             << (in_place ? " in place" : "") << " algo=" << coll::name_of(algo);
}

template <class T>
void check_scatter(local_world &world, size_t count, int root, bool in_place,
                   coll::algorithm algo = coll::algorithm::automatic)
{
    const int p              = world.size();
    const std::vector<T> all = blocks_of_every_rank<T>(p, count);
    std::vector<std::vector<T>> parts(static_cast<size_t>(p), std::vector<T>(count + 1, T(99)));
    std::vector<T> source = all;
    auto own              = [&](int r) {
        return (in_place && r == root) ? source.data() + count * size_t(root)
                                                    : parts[size_t(r)].data();
    };
    world.run([&](int r) {
        return world.comm(r).iscatter(r == root ? source.data() : nullptr, own(r), count, root,
                                      with(algo));
    });
    for (int r = 0; r < p; ++r) {
        ASSERT_TRUE(equal_elements(own(r), all.data() + count * size_t(r), count,
                                   "scatter count=" + std::to_string(count) + " root=" +
                                       std::to_string(root) + " algo=" + coll::name_of(algo) +
                                       " rank " + std::to_string(r)));
        if (!(in_place && r == root)) {
            ASSERT_EQ(parts[size_t(r)][count], T(99)) << "scatter wrote past the end";
        }
    }
}

/// A barrier on every rank completes (BarrierWaitsForEveryRank checks that it waits).
inline void check_barrier(local_world &world, coll::algorithm algo)
{
    world.run([&](int r) { return world.comm(r).ibarrier(with(algo)); });
}

/// Runs @p body(rank) on one thread per rank (for the blocking calls: split, dup).
inline void on_rank_threads(int size, const std::function<void(int)> &body)
{
    std::vector<std::thread> threads;
    std::vector<std::string> errors(static_cast<size_t>(size));
    for (int r = 0; r < size; ++r) {
        threads.emplace_back([&, r] {
            try {
                body(r);
            } catch (const std::exception &e) {
                errors[size_t(r)] = e.what();
            }
        });
    }
    for (auto &t : threads)
        t.join();
    for (int r = 0; r < size; ++r)
        EXPECT_EQ(errors[size_t(r)], "") << "rank " << r;
}

}  // namespace coll_test
