// The checks of the v-variants (allgatherv, alltoallv, gatherv, scatterv, reduce_scatter with
// counts): uneven counts with zeros, blocks in reverse rank order with gaps between them, every
// rank's result against a reference computed here, and every element outside the blocks (the
// gaps and past the end) left as it was.  Shared by test_vvariants.cpp and the algorithm-table
// test of test_config.cpp.
#pragma once

#include "coll_checks.hpp"

#include <string>
#include <vector>

namespace coll_test {

/// What the gaps and the end of every output hold before the call, and must hold after it.
template <class T> constexpr T untouched = T(99);

/// The counts of a v-variant test: block b of rank a has count(a, b) elements, an uneven
/// pattern with zeros (value in {0, 1, 2, 3} x scale) that depends on seed.  symmetric:
/// count(a, b) == count(b, a), as alltoallv in place needs.
struct v_shape {
    unsigned seed  = 0;
    size_t scale   = 1;
    size_t gap     = 0;  ///< 0: packed (displacements passed empty); else gaps, reverse order
    bool symmetric = false;

    size_t count(int a, int b) const
    {
        const unsigned k = symmetric ? unsigned(a + b) * 3 : unsigned(a) * 3 + unsigned(b) * 5;
        return size_t((k + seed) % 4) * scale;
    }
    /// count(a, b) of every rank a.
    std::vector<size_t> column(int p, int b) const
    {
        std::vector<size_t> counts;
        for (int a = 0; a < p; ++a)
            counts.push_back(count(a, b));
        return counts;
    }
    /// count(a, b) for every rank b.
    std::vector<size_t> row(int p, int a) const
    {
        std::vector<size_t> counts;
        for (int b = 0; b < p; ++b)
            counts.push_back(count(a, b));
        return counts;
    }
    std::string name() const
    {
        return "seed=" + std::to_string(seed) + " scale=" + std::to_string(scale) +
               " gap=" + std::to_string(gap);
    }
};

/// Where blocks of @p counts go: packed (displacements empty), or in reverse rank order with
/// @p gap elements before each and after the last.
struct v_blocks {
    std::vector<size_t> counts, displs;  ///< displs empty: packed
    std::vector<size_t> at;  ///< the displacement of every block, either way
    size_t extent = 0;  ///< elements of the buffer

    v_blocks(std::vector<size_t> c, size_t gap) : counts(std::move(c)), at(counts.size())
    {
        if (gap == 0) {
            for (size_t i = 0; i < counts.size(); ++i) {
                at[i] = extent;
                extent += counts[i];
            }
            return;
        }
        for (size_t i = counts.size(); i-- > 0;) {
            at[i]  = extent + gap;
            extent = at[i] + counts[i];
        }
        extent += gap;
        displs = at;
    }
};

/// A buffer of @p blocks filled with untouched, and block i set to value(i, k).
template <class T, class F> std::vector<T> spread(const v_blocks &blocks, F value)
{
    std::vector<T> out(blocks.extent + 1, untouched<T>);
    for (size_t i = 0; i < blocks.counts.size(); ++i) {
        for (size_t k = 0; k < blocks.counts[i]; ++k)
            out[blocks.at[i] + k] = value(int(i), k);
    }
    return out;
}

template <class T>
::testing::AssertionResult same_buffer(const std::vector<T> &got, const std::vector<T> &expected,
                                       const std::string &what)
{
    if (got.size() != expected.size())
        return ::testing::AssertionFailure() << what << ": size " << got.size();
    return equal_elements(got.data(), expected.data(), got.size(), what);
}

template <class T> std::string v_what(const char *which, const v_shape &s, coll::algorithm a)
{
    return std::string(which) + " " + coll::name_of(coll::datatype_of<T>()) + " " + s.name() +
           " algo=" + coll::name_of(a);
}

template <class T>
void check_allgatherv(local_world &world, const v_shape &s, coll::algorithm algo, bool in_place)
{
    const int p                      = world.size();
    const std::vector<size_t> counts = s.column(p, 0);
    const v_blocks blocks(counts, s.gap);
    const std::vector<T> expected = spread<T>(blocks,
                                              [](int i, size_t k) { return payload<T>(i, k); });
    std::vector<std::vector<T>> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
        for (size_t k = 0; k < counts[size_t(r)]; ++k)
            send[size_t(r)].push_back(payload<T>(r, k));
        recv[size_t(r)] = spread<T>(blocks, [&](int i, size_t k) {
            return in_place && i == r ? payload<T>(r, k) : untouched<T>;
        });
    }
    world.run([&](int r) {
        T *out        = recv[size_t(r)].data();
        const T *mine = in_place ? out + blocks.at[size_t(r)] : send[size_t(r)].data();
        return world.comm(r).iallgatherv(mine, counts[size_t(r)], out, counts, blocks.displs,
                                         with(algo));
    });
    for (int r = 0; r < p; ++r) {
        ASSERT_TRUE(
            same_buffer(recv[size_t(r)], expected,
                        v_what<T>(in_place ? "allgatherv(in place)" : "allgatherv", s, algo) +
                            " rank " + std::to_string(r)));
    }
}

template <class T>
void check_alltoallv(local_world &world, const v_shape &s, coll::algorithm algo, bool in_place)
{
    const int p = world.size();
    // Element k of the block rank a sends rank b.
    auto value = [p](int a, int b, size_t k) { return payload<T>(a * p + b, k); };
    std::vector<std::vector<T>> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p)),
        expected(static_cast<size_t>(p));
    std::vector<v_blocks> to, from;  // rank r's send and receive blocks
    for (int r = 0; r < p; ++r) {
        std::vector<size_t> out, in;
        for (int j = 0; j < p; ++j) {
            out.push_back(s.count(r, j));
            in.push_back(s.count(j, r));
        }
        // Different gaps on the two sides: the layouts differ.
        to.emplace_back(out, s.gap == 0 ? 0 : s.gap + 1);
        from.emplace_back(in, s.gap);
        send[size_t(r)]     = spread<T>(to.back(), [&](int j, size_t k) { return value(r, j, k); });
        expected[size_t(r)] = spread<T>(from.back(),
                                        [&](int i, size_t k) { return value(i, r, k); });
        recv[size_t(r)]     = in_place ? spread<T>(from.back(),
                                                   [&](int j, size_t k) { return value(r, j, k); })
                                       : std::vector<T>(from.back().extent + 1, untouched<T>);
    }
    world.run([&](int r) {
        const v_blocks &out = to[size_t(r)], &in = from[size_t(r)];
        T *got = recv[size_t(r)].data();
        if (in_place) {
            return world.comm(r).ialltoallv(got, {}, {}, got, in.counts, in.displs, with(algo));
        }
        return world.comm(r).ialltoallv(send[size_t(r)].data(), out.counts, out.displs, got,
                                        in.counts, in.displs, with(algo));
    });
    for (int r = 0; r < p; ++r) {
        ASSERT_TRUE(same_buffer(recv[size_t(r)], expected[size_t(r)],
                                v_what<T>(in_place ? "alltoallv(in place)" : "alltoallv", s, algo) +
                                    " rank " + std::to_string(r)));
    }
}

template <class T>
void check_gatherv(local_world &world, const v_shape &s, int root, coll::algorithm algo,
                   bool in_place)
{
    const int p                      = world.size();
    const std::vector<size_t> counts = s.column(p, root);
    const v_blocks blocks(counts, s.gap);
    const std::vector<T> expected = spread<T>(blocks,
                                              [](int i, size_t k) { return payload<T>(i, k); });
    std::vector<T> recv           = spread<T>(blocks, [&](int i, size_t k) {
        return in_place && i == root ? payload<T>(root, k) : untouched<T>;
    });
    std::vector<std::vector<T>> send(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
        for (size_t k = 0; k < counts[size_t(r)]; ++k)
            send[size_t(r)].push_back(payload<T>(r, k));
    }
    world.run([&](int r) {
        const T *mine = in_place && r == root ? recv.data() + blocks.at[size_t(r)]
                                              : send[size_t(r)].data();
        if (r != root) {  // the root's arguments are ignored elsewhere: pass none
            return world.comm(r).igatherv(mine, counts[size_t(r)], static_cast<T *>(nullptr), {},
                                          {}, root, with(algo));
        }
        return world.comm(r).igatherv(mine, counts[size_t(r)], recv.data(), counts, blocks.displs,
                                      root, with(algo));
    });
    ASSERT_TRUE(same_buffer(recv, expected,
                            v_what<T>(in_place ? "gatherv(in place)" : "gatherv", s, algo) +
                                " root " + std::to_string(root)));
}

template <class T>
void check_scatterv(local_world &world, const v_shape &s, int root, coll::algorithm algo,
                    bool in_place)
{
    const int p                      = world.size();
    const std::vector<size_t> counts = s.row(p, root);
    const v_blocks blocks(counts, s.gap);
    const std::vector<T> send = spread<T>(blocks, [](int i, size_t k) { return payload<T>(i, k); });
    std::vector<T> root_copy  = send;  // in place: the root's block stays where it is
    std::vector<std::vector<T>> recv(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r)
        recv[size_t(r)].assign(counts[size_t(r)] + 1, untouched<T>);
    world.run([&](int r) {
        T *out = in_place && r == root ? root_copy.data() + blocks.at[size_t(r)]
                                       : recv[size_t(r)].data();
        if (r != root) {
            return world.comm(r).iscatterv(static_cast<const T *>(nullptr), {}, {}, out,
                                           counts[size_t(r)], root, with(algo));
        }
        return world.comm(r).iscatterv(in_place ? root_copy.data() : send.data(), counts,
                                       blocks.displs, out, counts[size_t(r)], root, with(algo));
    });
    const std::string what = v_what<T>(in_place ? "scatterv(in place)" : "scatterv", s, algo) +
                             " root " + std::to_string(root);
    for (int r = 0; r < p; ++r) {
        if (in_place && r == root) {
            ASSERT_TRUE(same_buffer(root_copy, send, what + " (the root's buffer)"));
            continue;
        }
        std::vector<T> expected(counts[size_t(r)] + 1, untouched<T>);
        for (size_t k = 0; k < counts[size_t(r)]; ++k)
            expected[k] = payload<T>(r, k);
        ASSERT_TRUE(same_buffer(recv[size_t(r)], expected, what + " rank " + std::to_string(r)));
    }
}

template <class T>
void check_reduce_scatterv(local_world &world, const v_shape &s, coll::op_kind op,
                           coll::algorithm algo, bool in_place)
{
    const int p                      = world.size();
    const std::vector<size_t> counts = s.column(p, 0);
    const v_blocks blocks(counts, 0);
    std::vector<std::vector<T>> send(static_cast<size_t>(p)), recv(static_cast<size_t>(p));
    for (int r = 0; r < p; ++r) {
        for (size_t i = 0; i < blocks.extent; ++i)
            send[size_t(r)].push_back(input<T>(r, i, op));
        send[size_t(r)].push_back(untouched<T>);
        recv[size_t(r)] = in_place ? send[size_t(r)]
                                   : std::vector<T>(counts[size_t(r)] + 1, untouched<T>);
    }
    world.run([&](int r) {
        T *out = recv[size_t(r)].data();
        return world.comm(r).ireduce_scatter(in_place ? out : send[size_t(r)].data(), out, counts,
                                             op_object(op), with(algo));
    });
    for (int r = 0; r < p; ++r) {
        const size_t n = counts[size_t(r)];
        std::vector<T> expected(n);
        for (size_t k = 0; k < n; ++k)
            expected[k] = reference<T>(p, blocks.at[size_t(r)] + k, op);
        const std::string what = v_what<T>(in_place ? "reduce_scatter(counts, in place)"
                                                    : "reduce_scatter(counts)",
                                           s, algo) +
                                 " " + op_name(op) + " rank " + std::to_string(r);
        ASSERT_TRUE(equal_elements(recv[size_t(r)].data(), expected.data(), n, what));
        if (!in_place)
            ASSERT_EQ(recv[size_t(r)][n], untouched<T>) << what << ": wrote past the end";
    }
}

}  // namespace coll_test
