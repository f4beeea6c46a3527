/**
 * @file coll/algorithms.hpp
 * @brief The collective algorithms: their schedules, for any communicator size, and the table
 *        that names them and says which collectives each implements.
 *
 * The algorithm table (detail::algorithm_table, at the end) is the one place that knows an
 * algorithm: a row {id, name, implementations}, each implementation a collective and the
 * builder of its schedule.  Adding an algorithm is its id (coll::algorithm) and its row; the
 * configuration variables, their error messages and the communicator take it from there.  The
 * collective table (detail::collective_table) names the collectives and holds their automatic
 * choice, whose cut-overs are coll::thresholds.
 *
 * Every builder appends rounds to a detail::schedule for the calling rank.  Conventions:
 * p = communicator size, r = own rank, "relative rank" vr = (r - root) mod p for rooted
 * collectives, so binomial trees work for any root and any p (non powers of two included).
 * Blocks: n elements split into p blocks, the first n mod p one element larger (block_layout);
 * the v-variants' blocks sit where the caller's counts and displacements say (uneven_layout).
 * The helpers that move blocks take either (a `Layout` template parameter).
 * Steps (the tag field that pairs a send with its receive) are chosen so that a pair of ranks
 * never has two messages with the same step in one collective.
 *
 * Local work (the prologue, a round's `then`) never touches buffers directly: it goes through
 * `c.actions()` (a local_actions value, captured by copy), whose copy() and reduce() run on the
 * host or queue a copy / reduction kernel on the collective's GPU stream when the buffers are
 * CUDA memory (coll/gpu.hpp).  Scratch comes from c.plan.allocate(), which allocates in the
 * collective's memory.  Example:
 *   rd.then = [x = c.actions(), &op, incoming, buf, count] { x.reduce(op, incoming, buf, count); };
 * (reduction::apply() is host-only: do not call it from a schedule.)
 */
#pragma once

#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <algorithm>
#include <optional>
#include <string>
#include <string_view>
#include <vector>

namespace ucp_cpp::coll::detail {

/// n elements of `elem` bytes in p blocks; offsets and sizes in bytes.
struct block_layout {
    size_t count;
    int parts;
    size_t elem;
    size_t first(int i) const  // first element of block i (i == parts gives count)
    {
        size_t base = count / size_t(parts), extra = count % size_t(parts);
        return size_t(i) * base + std::min(size_t(i), extra);
    }
    size_t offset(int i) const { return first(i) * elem; }
    size_t bytes(int i) const { return (first(i + 1) - first(i)) * elem; }
    size_t elements(int i) const { return first(i + 1) - first(i); }
    size_t max_bytes() const { return bytes(0); }
    /// Bytes from the start to the end of the last block.
    size_t extent() const { return count * elem; }
    /// Bytes of blocks [from, to).
    size_t span(int from, int to) const { return offset(to) - offset(from); }
};

/// p blocks where a v-variant's caller put them: block i is counts[i] elements from element
/// displs[i] (gaps and any order allowed).  Offsets and sizes in bytes, as block_layout's.  Views
/// the arrays of a detail::v_arguments, which outlive the building of the schedule (the
/// schedule keeps the offsets it computed, not the layout).
struct uneven_layout {
    const size_t *counts;
    const size_t *displs;
    int parts;
    size_t elem;
    size_t offset(int i) const { return displs[i] * elem; }
    size_t bytes(int i) const { return counts[i] * elem; }
    size_t elements(int i) const { return counts[i]; }
    size_t max_bytes() const
    {
        size_t most = 0;
        for (int i = 0; i < parts; ++i)
            most = std::max(most, bytes(i));
        return most;
    }
    size_t extent() const
    {
        size_t end = 0;
        for (int i = 0; i < parts; ++i)
            end = std::max(end, counts[i] == 0 ? 0 : offset(i) + bytes(i));
        return end;
    }
};

/// A layout of p equal blocks of `block` elements (allgather, gather, alltoall...).
inline block_layout equal_blocks(size_t block, int parts, size_t elem)
{
    return block_layout{block * size_t(parts), parts, elem};
}

inline int mod(int a, int p)
{
    return ((a % p) + p) % p;
}
inline uint32_t log2_of(unsigned v)
{
    uint32_t k = 0;
    while ((1u << k) < v)
        ++k;
    return k;
}
/// Lowest set bit of vr; for the root (vr 0) a power of two >= p (it owns the whole tree).
inline int subtree_span(int vr, int p)
{
    if (vr != 0)
        return vr & -vr;
    int span = 1;
    while (span < p)
        span <<= 1;
    return span;
}

struct context {
    schedule &plan;
    int rank;
    int size;
    datatype type;
    size_t elem;

    /// Copies and reductions for prologues and `then` actions (host or device, see above).
    local_actions actions() const { return local_actions{plan.device.get(), type}; }

    void send(round &rd, int peer, const void *buf, size_t bytes, uint32_t step)
    {
        rd.transfers.push_back(transfer{true, peer, const_cast<void *>(buf), bytes, step});
    }
    /// @p block: the block (rank) whose count sized the receive, when the peer forwards it
    /// (rings); named when the length disagrees.
    void recv(round &rd, int peer, void *buf, size_t bytes, uint32_t step, int block = -1)
    {
        rd.transfers.push_back(transfer{false, peer, buf, bytes, step, false, block});
    }
};

// ---------------------------------------------------------------- barrier

/// Dissemination: ceil(log2 p) rounds, round k signals r+2^k and waits for r-2^k.
inline void barrier_dissemination(context &c)
{
    static char token;
    for (uint32_t k = 0; (1 << k) < c.size; ++k) {
        round &rd = c.plan.add_round();
        c.send(rd, mod(c.rank + (1 << k), c.size), &token, 0, k);
        c.recv(rd, mod(c.rank - (1 << k), c.size), &token, 0, k);
    }
}

// ---------------------------------------------------------------- ring building blocks

/// Ring reduce-scatter over `layout` on `buf` (full input, reduced in place): afterwards block
/// `index` holds the reduction of everyone's block.  Steps [step_base, step_base + p - 1).
template <class Layout>
void ring_reduce_scatter(context &c, std::byte *buf, const Layout &layout, int index,
                         const reduction &op, uint32_t step_base)
{
    const int p = c.size, right = mod(c.rank + 1, p), left = mod(c.rank - 1, p);
    std::byte *incoming = c.plan.allocate(layout.max_bytes());
    for (int s = 0; s < p - 1; ++s) {
        const int send_block = mod(index - s - 1, p), recv_block = mod(index - s - 2, p);
        round &rd = c.plan.add_round();
        c.send(rd, right, buf + layout.offset(send_block), layout.bytes(send_block),
               step_base + uint32_t(s));
        c.recv(rd, left, incoming, layout.bytes(recv_block), step_base + uint32_t(s), recv_block);
        rd.then = [x = c.actions(), &op, incoming, target = buf + layout.offset(recv_block),
                   n = layout.elements(recv_block)] { x.reduce(op, incoming, target, n); };
    }
}

/// Ring allgather over `layout` on `buf`, where this rank already holds block `index`.
/// Steps [step_base, step_base + p - 1).
template <class Layout>
void ring_allgather(context &c, std::byte *buf, const Layout &layout, int index, uint32_t step_base)
{
    const int p = c.size, right = mod(c.rank + 1, p), left = mod(c.rank - 1, p);
    for (int s = 0; s < p - 1; ++s) {
        const int send_block = mod(index - s, p), recv_block = mod(index - s - 1, p);
        round &rd = c.plan.add_round();
        c.send(rd, right, buf + layout.offset(send_block), layout.bytes(send_block),
               step_base + uint32_t(s));
        c.recv(rd, left, buf + layout.offset(recv_block), layout.bytes(recv_block),
               step_base + uint32_t(s), recv_block);
    }
}

// ---------------------------------------------------------------- non-powers of two

/// MPICH's fold of p ranks onto pof2 = 2^floor(log2 p) (Thakur, Rabenseifner, Gropp 2005), for
/// the algorithms whose exchange needs a power of two.  Of the 2 rem lowest ranks (rem =
/// p - pof2), each even one hands its whole vector to the odd one above it and sits the exchange
/// out; the odd ones are virtual ranks 0..rem-1, the ranks from 2 rem up are r - rem.  After the
/// exchange every odd one of a pair hands the result back to its even neighbour (the unfold).
struct power_of_two_fold {
    static constexpr uint32_t fold_step = 0;  ///< the exchange's steps come after it

    int pof2 = 1;  ///< ranks in the exchange: 2^floor(log2 p)
    int rem  = 0;  ///< pairs folded: p - pof2

    explicit power_of_two_fold(int p)
    {
        while (pof2 * 2 <= p)
            pof2 *= 2;
        rem = p - pof2;
    }

    /// Rank r is one of a pair: a whole vector crosses at the fold and at the unfold.
    bool in_a_pair(int r) const { return r < 2 * rem; }

    /// The real rank that stands for virtual rank v.
    int real_rank(int v) const { return v < rem ? v * 2 + 1 : v + rem; }

    /// The fold round: an even rank of a pair sends its vector, the odd one reduces it into
    /// its own (through @p incoming, `count` elements).  Returns this rank's virtual rank, or
    /// -1 for the even rank of a pair, which takes no part in the exchange.
    int fold(context &c, std::byte *buf, size_t count, const reduction &op,
             std::byte *incoming) const
    {
        const int r = c.rank;
        if (!in_a_pair(r))
            return r - rem;
        const size_t bytes = count * c.elem;
        round &rd          = c.plan.add_round();
        if (r % 2 == 0) {
            c.send(rd, r + 1, buf, bytes, fold_step);
            return -1;
        }
        c.recv(rd, r - 1, incoming, bytes, fold_step);
        rd.then = [x = c.actions(), &op, incoming, buf, count] {
            x.reduce(op, incoming, buf, count);
        };
        return r / 2;
    }

    /// The unfold round, at @p unfold_step (after the exchange's steps): the odd rank of a pair
    /// sends the result to the even one.
    void unfold(context &c, std::byte *buf, size_t bytes, uint32_t unfold_step) const
    {
        const int r = c.rank;
        if (!in_a_pair(r))
            return;
        round &rd = c.plan.add_round();
        if (r % 2 == 1)
            c.send(rd, r - 1, buf, bytes, unfold_step);
        else
            c.recv(rd, r + 1, buf, bytes, unfold_step);
    }
};

// ---------------------------------------------------------------- allreduce

/// Recursive doubling over the power_of_two_fold of the ranks (MPICH's scheme), so any p works:
/// round k exchanges and reduces the whole vector with virtual rank v xor 2^(k-1).
/// Steps: fold 0, round k = 1..L, unfold L+1 (L = log2 pof2).
inline void allreduce_recursive_doubling(context &c, std::byte *buf, size_t count,
                                         const reduction &op)
{
    const power_of_two_fold ranks(c.size);
    const size_t bytes         = count * c.elem;
    std::byte *incoming        = c.plan.allocate(bytes);
    const uint32_t unfold_step = 1 + log2_of(unsigned(ranks.pof2));

    const int vrank = ranks.fold(c, buf, count, op, incoming);
    if (vrank >= 0) {
        uint32_t k = 1;
        for (int mask = 1; mask < ranks.pof2; mask <<= 1, ++k) {
            const int peer = ranks.real_rank(vrank ^ mask);
            round &rd      = c.plan.add_round();
            c.send(rd, peer, buf, bytes, k);
            c.recv(rd, peer, incoming, bytes, k);
            rd.then = [x = c.actions(), &op, incoming, buf, count] {
                x.reduce(op, incoming, buf, count);
            };
        }
    }
    ranks.unfold(c, buf, bytes, unfold_step);
}

/// Ring: reduce-scatter then allgather, 2(p-1) rounds of n/p elements (bandwidth-optimal).
inline void allreduce_ring(context &c, std::byte *buf, size_t count, const reduction &op)
{
    block_layout layout{count, c.size, c.elem};
    ring_reduce_scatter(c, buf, layout, c.rank, op, 0);
    ring_allgather(c, buf, layout, c.rank, uint32_t(c.size));
}

/// Mixed-radix shape of the k-nomial exchange for p ranks: `core` = k^j * d ranks (the largest
/// such number <= p, d < k) exchange in j rounds of radix k and, if d > 1, one round of radix d;
/// the p - core < k^j <= core others are folded into ranks [0, p - core) first.
struct knomial_shape {
    int core = 1;
    std::vector<int> radices;
};
inline knomial_shape knomial_shape_of(int p, int radix)
{
    knomial_shape s;
    const int k = std::max(2, std::min(radix, p));
    while (s.core <= p / k) {
        s.core *= k;
        s.radices.push_back(k);
    }
    const int d = p / s.core;
    if (d > 1) {
        s.core *= d;
        s.radices.push_back(d);
    }
    return s;
}

/// K-nomial (recursive k-ing, as UCC's knomial allreduce): log_k p rounds; in each, a rank
/// exchanges its whole vector with the other k-1 members of its group (ranks that differ only
/// in that round's digit) and reduces.  Any p: the last round may use a smaller radix (see
/// knomial_shape), and the p - core extra ranks r >= core hand their vector to rank r - core
/// first and get the result back at the end.  A group reduces its k vectors in digit order
/// (v0 op v1 op ... op v(k-1)), so every rank computes bit-identical floating-point results.
/// Steps: fold 0, round i 1 + i, unfold 1 + rounds (two ranks meet in at most one round).
inline void allreduce_knomial(context &c, std::byte *buf, size_t count, const reduction &op,
                              int radix)
{
    const int p = c.size, r = c.rank;
    const size_t bytes        = count * c.elem;
    const knomial_shape shape = knomial_shape_of(p, radix);
    const int extra           = p - shape.core;
    const uint32_t fold_step = 0, unfold_step = 1 + uint32_t(shape.radices.size());
    if (r >= shape.core) {
        round &fold = c.plan.add_round();
        c.send(fold, r - shape.core, buf, bytes, fold_step);
        round &unfold = c.plan.add_round();
        c.recv(unfold, r - shape.core, buf, bytes, unfold_step);
        return;
    }
    const int widest    = shape.radices.empty()
                              ? 1
                              : *std::max_element(shape.radices.begin(), shape.radices.end());
    std::byte *incoming = c.plan.allocate(bytes * size_t(widest - 1));
    if (r < extra) {
        round &fold = c.plan.add_round();
        c.recv(fold, r + shape.core, incoming, bytes, fold_step);
        fold.then = [x = c.actions(), &op, incoming, buf, count] {
            x.reduce(op, incoming, buf, count);
        };
    }
    int stride = 1;
    for (size_t i = 0; i < shape.radices.size(); ++i) {
        const int k = shape.radices[i], digit = (r / stride) % k, base = r - digit * stride;
        round &rd = c.plan.add_round();
        std::vector<std::byte *> member(size_t(k), nullptr);  // group member t's vector
        for (int t = 0, slot = 0; t < k; ++t) {
            if (t == digit) {
                member[size_t(t)] = buf;
                continue;
            }
            member[size_t(t)] = incoming + size_t(slot++) * bytes;
            c.send(rd, base + t * stride, buf, bytes, 1 + uint32_t(i));
            c.recv(rd, base + t * stride, member[size_t(t)], bytes, 1 + uint32_t(i));
        }
        rd.then = [x = c.actions(), &op, member = std::move(member), buf, count, bytes] {
            std::byte *acc = member[0];  // buf itself when this rank is member 0
            for (size_t t = 1; t < member.size(); ++t)
                x.reduce(op, member[t], acc, count);
            x.copy(buf, acc, bytes);
        };
        stride *= k;
    }
    if (r < extra) {
        round &unfold = c.plan.add_round();
        c.send(unfold, r + shape.core, buf, bytes, unfold_step);
    }
}

/// Rabenseifner: recursive-halving reduce-scatter then recursive-doubling allgather over
/// pof2 = 2^floor(log2 p) ranks, blocks of a block_layout over pof2 parts; 2 log2 pof2 rounds
/// moving 2 (pof2-1)/pof2 n in total.  Non-powers of two: the power_of_two_fold, as recursive
/// doubling's.
/// The halving starts with the farthest partner (distance pof2/2), so virtual rank v ends with
/// block v, and the allgather runs the distances back up.  Every block is reduced by one rank
/// only, so all ranks get bit-identical results.
/// Steps: fold 0, halving 1..L, doubling L+1..2L, unfold 2L+1 (L = log2 pof2).
inline void allreduce_rabenseifner(context &c, std::byte *buf, size_t count, const reduction &op)
{
    const power_of_two_fold ranks(c.size);
    const int pof2        = ranks.pof2;
    const size_t bytes    = count * c.elem;
    const uint32_t levels = log2_of(unsigned(pof2)), unfold_step = 1 + 2 * levels;
    const block_layout layout{count, pof2, c.elem};
    // The fold receives a whole vector; the halving at most the first pof2/2 blocks.
    std::byte *incoming = c.plan.allocate(ranks.in_a_pair(c.rank) ? bytes
                                                                  : layout.span(0, pof2 / 2));

    const int vrank = ranks.fold(c, buf, count, op, incoming);
    if (vrank >= 0) {
        uint32_t step = 1;
        int low       = 0;  // first block of the window this rank still reduces
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1, ++step) {
            const int peer = ranks.real_rank(vrank ^ mask);
            const int keep = (vrank & mask) ? low + mask : low,
                      give = (vrank & mask) ? low : low + mask;
            round &rd      = c.plan.add_round();
            c.send(rd, peer, buf + layout.offset(give), layout.span(give, give + mask), step);
            c.recv(rd, peer, incoming, layout.span(keep, keep + mask), step);
            rd.then = [x = c.actions(), &op, incoming, target = buf + layout.offset(keep),
                       n = layout.first(keep + mask) - layout.first(keep)] {
                x.reduce(op, incoming, target, n);
            };
            low = keep;
        }
        for (int mask = 1; mask < pof2; mask <<= 1, ++step) {
            const int vpeer = vrank ^ mask, peer = ranks.real_rank(vpeer);
            const int mine = vrank & ~(mask - 1), theirs = vpeer & ~(mask - 1);
            round &rd = c.plan.add_round();
            c.send(rd, peer, buf + layout.offset(mine), layout.span(mine, mine + mask), step);
            c.recv(rd, peer, buf + layout.offset(theirs), layout.span(theirs, theirs + mask), step);
        }
    }
    ranks.unfold(c, buf, bytes, unfold_step);
}

// ---------------------------------------------------------------- broadcast

/// Binomial tree from the root.
inline void bcast_binomial(context &c, std::byte *buf, size_t bytes, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    if (vr != 0) {
        round &rd = c.plan.add_round();
        c.recv(rd, mod(vr - span + root, p), buf, bytes, log2_of(unsigned(span)));
    }
    round &rd = c.plan.add_round();
    for (int m = span >> 1; m > 0; m >>= 1) {
        if (vr + m < p)
            c.send(rd, mod(vr + m + root, p), buf, bytes, log2_of(unsigned(m)));
    }
}

/// Van de Geijn: binomial scatter of p blocks (in relative-rank order), then ring allgather.
inline void bcast_scatter_allgather(context &c, std::byte *buf, size_t count, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    block_layout layout{count, p, c.elem};
    if (vr != 0) {
        round &rd     = c.plan.add_round();
        const int end = std::min(vr + span, p);
        c.recv(rd, mod(vr - span + root, p), buf + layout.offset(vr), layout.span(vr, end),
               log2_of(unsigned(span)));
    }
    round &rd = c.plan.add_round();
    for (int m = span >> 1; m > 0; m >>= 1) {
        if (vr + m < p) {
            const int end = std::min(vr + 2 * m, p);
            c.send(rd, mod(vr + m + root, p), buf + layout.offset(vr + m), layout.span(vr + m, end),
                   log2_of(unsigned(m)));
        }
    }
    ring_allgather(c, buf, layout, vr, 32);
}

// ---------------------------------------------------------------- reduce

/// Binomial tree towards the root; `acc` holds this rank's contribution and is reduced in place.
inline void reduce_binomial(context &c, std::byte *acc, size_t count, const reduction &op, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p);
    const size_t bytes  = count * c.elem;
    std::byte *incoming = nullptr;  // only where a child sends
    for (int mask = 1; mask < p; mask <<= 1) {
        round &rd = c.plan.add_round();
        if (vr & mask) {
            c.send(rd, mod(vr - mask + root, p), acc, bytes, log2_of(unsigned(mask)));
            break;
        }
        if (vr + mask < p) {
            if (incoming == nullptr)
                incoming = c.plan.allocate(bytes);
            c.recv(rd, mod(vr + mask + root, p), incoming, bytes, log2_of(unsigned(mask)));
            rd.then = [x = c.actions(), &op, incoming, acc, count] {
                x.reduce(op, incoming, acc, count);
            };
        }
    }
}

/// Ring reduce-scatter, then every rank sends its reduced block to the root (large messages).
inline void reduce_scatter_gather(context &c, std::byte *acc, size_t count, const reduction &op,
                                  int root)
{
    block_layout layout{count, c.size, c.elem};
    ring_reduce_scatter(c, acc, layout, c.rank, op, 0);
    round &rd           = c.plan.add_round();
    const uint32_t step = uint32_t(c.size);
    if (c.rank != root) {
        c.send(rd, root, acc + layout.offset(c.rank), layout.bytes(c.rank), step);
    } else {
        for (int i = 0; i < c.size; ++i) {
            if (i != root)
                c.recv(rd, i, acc + layout.offset(i), layout.bytes(i), step);
        }
    }
}

// ---------------------------------------------------------------- allgather

/// Recursive doubling (p a power of two): round k exchanges 2^k blocks with rank r xor 2^k.
inline void allgather_recursive_doubling(context &c, std::byte *buf, const block_layout &layout)
{
    uint32_t k = 0;
    for (int mask = 1; mask < c.size; mask <<= 1, ++k) {
        const int peer = c.rank ^ mask;
        const int mine = c.rank & ~(mask - 1), theirs = peer & ~(mask - 1);
        round &rd = c.plan.add_round();
        c.send(rd, peer, buf + layout.offset(mine), layout.span(mine, mine + mask), k);
        c.recv(rd, peer, buf + layout.offset(theirs), layout.span(theirs, theirs + mask), k);
    }
}

/// Bruck: ceil(log2 p) rounds for any p, in a rotated scratch buffer (block j = rank r+j).
inline void allgather_bruck(context &c, std::byte *buf, size_t block_bytes)
{
    const int p = c.size, r = c.rank;
    std::byte *rotated = c.plan.allocate(block_bytes * size_t(p));
    // The own block is copied in when the schedule starts (it may be written by the caller
    // up to that point): chain it before the existing prologue.
    c.plan.prologue = [prev = c.plan.prologue, x = c.actions(), rotated,
                       own = buf + size_t(r) * block_bytes, block_bytes] {
        if (prev)
            prev();
        x.copy(rotated, own, block_bytes);
    };
    uint32_t k = 0;
    for (int d = 1; d < p; d <<= 1, ++k) {
        const size_t blocks = size_t(std::min(d, p - d));
        round &rd           = c.plan.add_round();
        c.send(rd, mod(r - d, p), rotated, blocks * block_bytes, k);
        c.recv(rd, mod(r + d, p), rotated + size_t(d) * block_bytes, blocks * block_bytes, k);
    }
    if (p == 1)
        return;  // the prologue already placed the only block
    c.plan.rounds.back().then = [x = c.actions(), rotated, buf, block_bytes, p, r] {
        for (int j = 0; j < p; ++j) {
            x.copy(buf + size_t(mod(r + j, p)) * block_bytes, rotated + size_t(j) * block_bytes,
                   block_bytes);
        }
    };
}

// ---------------------------------------------------------------- gather / scatter

/// Binomial gather; `staging` holds blocks [vr, vr + subtree) in relative order, own block first.
/// At the root the staging buffer is rotated into `recv` (block i = rank i).
inline void gather_binomial(context &c, const std::byte *own, std::byte *recv, size_t block_bytes,
                            int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    const int end      = std::min(vr + span, p);
    std::byte *staging = c.plan.allocate(block_bytes * size_t(end - vr));
    c.plan.prologue    = [x = c.actions(), staging, own, block_bytes] {
        x.copy(staging, own, block_bytes);
    };
    round &children = c.plan.add_round();
    for (int m = 1; m < span && vr + m < p; m <<= 1) {
        const int child_end = std::min(vr + 2 * m, p);
        c.recv(children, mod(vr + m + root, p), staging + size_t(m) * block_bytes,
               size_t(child_end - vr - m) * block_bytes, log2_of(unsigned(m)));
    }
    if (vr != 0) {
        round &up = c.plan.add_round();
        c.send(up, mod(vr - span + root, p), staging, size_t(end - vr) * block_bytes,
               log2_of(unsigned(span)));
    } else {
        children.then = [x = c.actions(), staging, recv, block_bytes, p, root] {
            for (int j = 0; j < p; ++j) {
                x.copy(recv + size_t(mod(j + root, p)) * block_bytes,
                       staging + size_t(j) * block_bytes, block_bytes);
            }
        };
    }
}

/// Binomial scatter (mirror of gather_binomial).
inline void scatter_binomial(context &c, const std::byte *send, std::byte *recv, size_t block_bytes,
                             int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    const int end      = std::min(vr + span, p);
    std::byte *staging = c.plan.allocate(block_bytes * size_t(end - vr));
    auto deliver_own   = [x = c.actions(), staging, recv, block_bytes] {
        x.copy(recv, staging, block_bytes);
    };
    if (vr == 0) {
        c.plan.prologue = [x = c.actions(), staging, send, block_bytes, p, root] {
            for (int j = 0; j < p; ++j) {
                x.copy(staging + size_t(j) * block_bytes,
                       send + size_t(mod(j + root, p)) * block_bytes, block_bytes);
            }
        };
    } else {
        round &down = c.plan.add_round();
        c.recv(down, mod(vr - span + root, p), staging, size_t(end - vr) * block_bytes,
               log2_of(unsigned(span)));
    }
    round &children = c.plan.add_round();
    for (int m = span >> 1; m > 0; m >>= 1) {
        if (vr + m < p) {
            const int child_end = std::min(vr + 2 * m, p);
            c.send(children, mod(vr + m + root, p), staging + size_t(m) * block_bytes,
                   size_t(child_end - vr - m) * block_bytes, log2_of(unsigned(m)));
        }
    }
    children.then = deliver_own;
}

// ---------------------------------------------------------------- alltoall

/// The alltoall prologue: the own block goes straight to recv, or, in place (send == recv, the
/// blocks where @p to says), the input to a snapshot the sends read, laid out as recv.  Returns
/// where the sends read from (with @p from's offsets; in place @p from is @p to).
template <class From, class To>
const std::byte *alltoall_source(context &c, const std::byte *send, const From &from,
                                 std::byte *recv, const To &to)
{
    const int r             = c.rank;
    const std::byte *source = send;
    if (send == recv) {  // in place: send from a snapshot
        std::byte *snapshot = c.plan.allocate(to.extent());
        c.plan.prologue     = [x = c.actions(), snapshot, recv, bytes = to.extent()] {
            x.copy(snapshot, recv, bytes);
        };
        source = snapshot;
    } else {
        c.plan.prologue = [x = c.actions(), mine = recv + to.offset(r), own = send + from.offset(r),
                           bytes = to.bytes(r)] { x.copy(mine, own, bytes); };
    }
    return source;
}

/// Pairwise exchange: round i sends to r+i and receives from r-i (p-1 rounds).  Block j of
/// the input (@p from) goes to rank j, block j of the output (@p to) comes from rank j.
template <class From, class To>
void alltoall_pairwise(context &c, const std::byte *send, const From &from, std::byte *recv,
                       const To &to)
{
    const int p = c.size, r = c.rank;
    const std::byte *source = alltoall_source(c, send, from, recv, to);
    for (int i = 1; i < p; ++i) {
        const int dst = mod(r + i, p), src = mod(r - i, p);
        round &rd = c.plan.add_round();
        c.send(rd, dst, source + from.offset(dst), from.bytes(dst), uint32_t(i));
        c.recv(rd, src, recv + to.offset(src), to.bytes(src), uint32_t(i));
    }
}

/// Linear alltoall: one round, every send and receive posted at once (sends from r+1 on, so
/// that the ranks do not all start with rank 0).  Steps 0: one message per pair.
template <class From, class To>
void alltoall_linear(context &c, const std::byte *send, const From &from, std::byte *recv,
                     const To &to)
{
    const int p = c.size, r = c.rank;
    const std::byte *source = alltoall_source(c, send, from, recv, to);
    round &rd               = c.plan.add_round();
    for (int i = 1; i < p; ++i) {
        const int src = mod(r - i, p);
        c.recv(rd, src, recv + to.offset(src), to.bytes(src), 0);
    }
    for (int i = 1; i < p; ++i) {
        const int dst = mod(r + i, p);
        c.send(rd, dst, source + from.offset(dst), from.bytes(dst), 0);
    }
}

/// Linear gather: one round, the root receives every block straight into its place in recv
/// (@p blocks; no staging, no forwarding: each block crosses once, and a rendezvous transport
/// moves it zero-copy); the others send their @p own_bytes from their own buffer.
template <class Layout>
void gather_linear(context &c, const std::byte *own, size_t own_bytes, std::byte *recv,
                   const Layout &blocks, int root)
{
    round &rd = c.plan.add_round();
    if (c.rank != root) {
        c.send(rd, root, own, own_bytes, 0);
        return;
    }
    std::byte *mine = recv + blocks.offset(root);
    if (own != mine) {
        c.plan.prologue = [x = c.actions(), mine, own, bytes = blocks.bytes(root)] {
            x.copy(mine, own, bytes);
        };
    }
    for (int i = 1; i < c.size; ++i) {
        const int from = mod(root + i, c.size);
        c.recv(rd, from, recv + blocks.offset(from), blocks.bytes(from), 0);
    }
}

/// Linear scatter (mirror of gather_linear): the root sends block i of send (@p blocks) to
/// rank i, which receives @p own_bytes.
template <class Layout>
void scatter_linear(context &c, const std::byte *send, const Layout &blocks, std::byte *recv,
                    size_t own_bytes, int root)
{
    round &rd = c.plan.add_round();
    if (c.rank != root) {
        c.recv(rd, root, recv, own_bytes, 0);
        return;
    }
    const std::byte *mine = send + blocks.offset(root);
    if (mine != recv) {
        c.plan.prologue = [x = c.actions(), recv, mine, bytes = blocks.bytes(root)] {
            x.copy(recv, mine, bytes);
        };
    }
    for (int i = 1; i < c.size; ++i) {
        const int to = mod(root + i, c.size);
        c.send(rd, to, send + blocks.offset(to), blocks.bytes(to), 0);
    }
}

/// Linear allgather (allgatherv for small messages): one round, every rank sends its @p own
/// block to every other and receives every other block straight into its place (@p blocks).
template <class Layout>
void allgather_linear(context &c, const std::byte *own, std::byte *recv, const Layout &blocks)
{
    const int p = c.size, r = c.rank;
    round &rd = c.plan.add_round();
    for (int i = 1; i < p; ++i) {
        const int from = mod(r - i, p);
        c.recv(rd, from, recv + blocks.offset(from), blocks.bytes(from), 0);
    }
    for (int i = 1; i < p; ++i)
        c.send(rd, mod(r + i, p), own, blocks.bytes(r), 0);
}

/// Runs @p deliver after the last round's local action (in the prologue when there is none).
template <class F> void at_end(context &c, F deliver)
{
    if (c.plan.rounds.empty()) {
        c.plan.prologue = [prologue = c.plan.prologue, deliver] {
            if (prologue)
                prologue();
            deliver();
        };
    } else {
        c.plan.rounds.back().then = [then = c.plan.rounds.back().then, deliver] {
            if (then)
                then();
            deliver();
        };
    }
}

// ---------------------------------------------------------------- the algorithm table

/// The counts and displacements of a v-variant call, in elements, one per rank, copied when
/// the call is issued (communicator fills them in; displacements given empty are packed).
/// Where the collective has one count on a side (allgatherv's and gatherv's send, scatterv's
/// receive, reduce_scatter's own block) it is arguments::count and that side's arrays are empty;
/// so are the root's arrays at the other ranks of gatherv and scatterv.
struct v_arguments {
    std::vector<size_t> send_counts, send_displs;
    std::vector<size_t> recv_counts, recv_displs;
    /// Elements that decide the automatic choice: the same on every rank (allgatherv and
    /// reduce_scatter: all ranks' blocks together; 0 where no rank knows them all).
    size_t total = 0;

    uneven_layout send_blocks(const context &c) const
    {
        return uneven_layout{send_counts.data(), send_displs.data(), c.size, c.elem};
    }
    uneven_layout recv_blocks(const context &c) const
    {
        return uneven_layout{recv_counts.data(), recv_displs.data(), c.size, c.elem};
    }
};

/// What a collective call hands to the builder of its algorithm (communicator fills it in).
struct arguments {
    const std::byte *send = nullptr;  ///< the caller's input (null where there is none)
    std::byte *recv       = nullptr;  ///< the caller's output; bcast: the buffer
    size_t count          = 0;  ///< elements, as the collective's signature counts them
    const reduction *op   = nullptr;  ///< reductions: the schedule's own copy
    int root              = 0;  ///< rooted collectives
    int knomial_radix     = 0;  ///< the communicator's config::knomial_radix()
    const v_arguments *v  = nullptr;  ///< the v-variants' counts and displacements
};

/// Compiles the schedule of one collective with one algorithm into c.plan.
using builder = void (*)(context &c, const arguments &call);

/// The builders of the table: the collective's own preparation (the copies that put the input
/// where the algorithm works on it), then the algorithm above.
namespace build {

inline void barrier_dissemination(context &c, const arguments &)
{
    detail::barrier_dissemination(c);
}

inline void bcast_binomial(context &c, const arguments &a)
{
    detail::bcast_binomial(c, a.recv, a.count * c.elem, a.root);
}

inline void bcast_scatter_allgather(context &c, const arguments &a)
{
    detail::bcast_scatter_allgather(c, a.recv, a.count, a.root);
}

/// reduce works in an accumulator that starts as a copy of send: recv at the root, scratch
/// elsewhere (recv is not theirs to write).
inline std::byte *reduce_accumulator(context &c, const arguments &a)
{
    const size_t bytes = a.count * c.elem;
    std::byte *acc     = c.rank == a.root ? a.recv : c.plan.allocate(bytes);
    c.plan.prologue    = [x = c.actions(), acc, send = a.send, bytes] { x.copy(acc, send, bytes); };
    return acc;
}

inline void reduce_binomial(context &c, const arguments &a)
{
    const int vr = mod(c.rank - a.root, c.size);
    if (vr != 0 && ((vr & 1) != 0 || vr + 1 >= c.size)) {
        // A leaf only sends its input: no accumulator, no copy.
        detail::reduce_binomial(c, const_cast<std::byte *>(a.send), a.count, *a.op, a.root);
        return;
    }
    detail::reduce_binomial(c, reduce_accumulator(c, a), a.count, *a.op, a.root);
}

inline void reduce_scatter_gather(context &c, const arguments &a)
{
    detail::reduce_scatter_gather(c, reduce_accumulator(c, a), a.count, *a.op, a.root);
}

/// allreduce works in recv, which starts as a copy of send.
inline std::byte *allreduce_buffer(context &c, const arguments &a)
{
    c.plan.prologue = [x = c.actions(), buf = a.recv, send = a.send, bytes = a.count * c.elem] {
        x.copy(buf, send, bytes);
    };
    return a.recv;
}

inline void allreduce_recursive_doubling(context &c, const arguments &a)
{
    detail::allreduce_recursive_doubling(c, allreduce_buffer(c, a), a.count, *a.op);
}

inline void allreduce_ring(context &c, const arguments &a)
{
    detail::allreduce_ring(c, allreduce_buffer(c, a), a.count, *a.op);
}

inline void allreduce_knomial(context &c, const arguments &a)
{
    detail::allreduce_knomial(c, allreduce_buffer(c, a), a.count, *a.op, a.knomial_radix);
}

inline void allreduce_rabenseifner(context &c, const arguments &a)
{
    detail::allreduce_rabenseifner(c, allreduce_buffer(c, a), a.count, *a.op);
}

/// allgather(v): the own block goes to its place in recv (@p blocks) first (nothing to copy in
/// place); returns @p blocks.
template <class Layout>
Layout allgather_in_place(context &c, const arguments &a, const Layout &blocks)
{
    c.plan.prologue = [x = c.actions(), own = a.recv + blocks.offset(c.rank), send = a.send,
                       bytes = blocks.bytes(c.rank)] { x.copy(own, send, bytes); };
    return blocks;
}

inline block_layout allgather_in_place(context &c, const arguments &a)
{
    return allgather_in_place(c, a, equal_blocks(a.count, c.size, c.elem));
}

inline void allgather_ring(context &c, const arguments &a)
{
    ring_allgather(c, a.recv, allgather_in_place(c, a), c.rank, 0);
}

inline void allgather_recursive_doubling(context &c, const arguments &a)
{
    const block_layout layout = allgather_in_place(c, a);
    if ((c.size & (c.size - 1)) != 0) {
        throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::allgather: recursive_doubling needs a "
                                             "power-of-two communicator size (use bruck)");
    }
    detail::allgather_recursive_doubling(c, a.recv, layout);
}

inline void allgather_bruck(context &c, const arguments &a)
{
    allgather_in_place(c, a);
    detail::allgather_bruck(c, a.recv, a.count * c.elem);
}

/// reduce_scatter (block or with counts): the input, packed blocks (@p blocks), in a scratch
/// copy of send; returns it.  Block rank goes to recv (which may alias send) by reduce_scatter_out
/// after the last round.
template <class Layout>
std::byte *reduce_scatter_work(context &c, const arguments &a, const Layout &blocks)
{
    const size_t total = blocks.offset(c.size - 1) + blocks.bytes(c.size - 1);
    std::byte *work    = c.plan.allocate(total);
    c.plan.prologue = [x = c.actions(), work, send = a.send, total] { x.copy(work, send, total); };
    return work;
}

template <class Layout>
void reduce_scatter_out(context &c, const arguments &a, const Layout &blocks, std::byte *work)
{
    at_end(c, [x = c.actions(), out = a.recv, mine = work + blocks.offset(c.rank),
               bytes = blocks.bytes(c.rank)] { x.copy(out, mine, bytes); });
}

/// reduce_scatter: the ring reduce-scatter over @p blocks in a scratch copy of send.
template <class Layout>
void reduce_scatter_ring(context &c, const arguments &a, const Layout &blocks)
{
    std::byte *work = reduce_scatter_work(c, a, blocks);
    ring_reduce_scatter(c, work, blocks, c.rank, *a.op, 0);
    reduce_scatter_out(c, a, blocks, work);
}

/// reduce_scatter for small messages: the k-nomial allreduce of the whole vector in a scratch
/// copy (log_k p rounds instead of the ring's p - 1), then block rank to recv.
template <class Layout>
void reduce_scatter_knomial(context &c, const arguments &a, const Layout &blocks)
{
    std::byte *work  = reduce_scatter_work(c, a, blocks);
    const size_t all = (blocks.offset(c.size - 1) + blocks.bytes(c.size - 1)) / c.elem;
    detail::allreduce_knomial(c, work, all, *a.op, a.knomial_radix);
    reduce_scatter_out(c, a, blocks, work);
}

/// Block reduce-scatter (MPI_Reduce_scatter_block): send holds p blocks of count.
inline void reduce_scatter_ring(context &c, const arguments &a)
{
    reduce_scatter_ring(c, a, equal_blocks(a.count, c.size, c.elem));
}

inline void reduce_scatter_knomial(context &c, const arguments &a)
{
    reduce_scatter_knomial(c, a, equal_blocks(a.count, c.size, c.elem));
}

/// reduce_scatter with counts (MPI_Reduce_scatter): send holds the blocks packed, block i of
/// recv_counts[i] elements (recv_displs: their prefix sums).
inline void reduce_scatterv_ring(context &c, const arguments &a)
{
    reduce_scatter_ring(c, a, a.v->recv_blocks(c));
}

inline void reduce_scatterv_knomial(context &c, const arguments &a)
{
    reduce_scatter_knomial(c, a, a.v->recv_blocks(c));
}

inline void alltoall_linear(context &c, const arguments &a)
{
    const block_layout blocks = equal_blocks(a.count, c.size, c.elem);
    detail::alltoall_linear(c, a.send, blocks, a.recv, blocks);
}

inline void gather_linear(context &c, const arguments &a)
{
    detail::gather_linear(c, a.send, a.count * c.elem, a.recv,
                          equal_blocks(a.count, c.size, c.elem), a.root);
}

inline void scatter_linear(context &c, const arguments &a)
{
    detail::scatter_linear(c, a.send, equal_blocks(a.count, c.size, c.elem), a.recv,
                           a.count * c.elem, a.root);
}

inline void alltoall_pairwise(context &c, const arguments &a)
{
    const block_layout blocks = equal_blocks(a.count, c.size, c.elem);
    detail::alltoall_pairwise(c, a.send, blocks, a.recv, blocks);
}

// The v-variants: the same schedules over the caller's counts and displacements (in place,
// alltoallv's send arrays are the receive ones: communicator sees to it).

inline void allgatherv_ring(context &c, const arguments &a)
{
    ring_allgather(c, a.recv, allgather_in_place(c, a, a.v->recv_blocks(c)), c.rank, 0);
}

inline void allgatherv_linear(context &c, const arguments &a)
{
    detail::allgather_linear(c, a.send, a.recv, allgather_in_place(c, a, a.v->recv_blocks(c)));
}

inline void alltoallv_linear(context &c, const arguments &a)
{
    detail::alltoall_linear(c, a.send, a.v->send_blocks(c), a.recv, a.v->recv_blocks(c));
}

inline void alltoallv_pairwise(context &c, const arguments &a)
{
    detail::alltoall_pairwise(c, a.send, a.v->send_blocks(c), a.recv, a.v->recv_blocks(c));
}

inline void gatherv_linear(context &c, const arguments &a)
{
    detail::gather_linear(c, a.send, a.count * c.elem, a.recv, a.v->recv_blocks(c), a.root);
}

inline void scatterv_linear(context &c, const arguments &a)
{
    detail::scatter_linear(c, a.send, a.v->send_blocks(c), a.recv, a.count * c.elem, a.root);
}

inline void gather_binomial(context &c, const arguments &a)
{
    detail::gather_binomial(c, a.send, a.recv, a.count * c.elem, a.root);
}

inline void scatter_binomial(context &c, const arguments &a)
{
    detail::scatter_binomial(c, a.send, a.recv, a.count * c.elem, a.root);
}

}  // namespace build

/// One collective an algorithm implements, and the builder of its schedule.
struct implementation {
    collective serves;
    builder build;  ///< null: an unused slot of algorithm_row::implementations
};

/// A row of the algorithm table.
struct algorithm_row {
    algorithm id;
    const char *name;  ///< what UCP_CPP_COLL_<COLLECTIVE>_ALGORITHM and messages call it
    implementation implementations[8];

    /// The builder of @p which, or null when this algorithm does not implement it.
    [[nodiscard]] constexpr builder builder_for(collective which) const
    {
        for (const implementation &i : implementations) {
            if (i.build != nullptr && i.serves == which)
                return i.build;
        }
        return nullptr;
    }
};

/// Every algorithm (algorithm::automatic, no algorithm, has no row).  The order is the order in
/// which messages and documentation list them.
inline constexpr algorithm_row algorithm_table[] = {
    {algorithm::dissemination,
     "dissemination",
     {{collective::barrier, build::barrier_dissemination}}},
    {algorithm::binomial,
     "binomial",
     {{collective::bcast, build::bcast_binomial},
      {collective::reduce, build::reduce_binomial},
      {collective::gather, build::gather_binomial},
      {collective::scatter, build::scatter_binomial}}},
    {algorithm::scatter_allgather,
     "scatter_allgather",
     {{collective::bcast, build::bcast_scatter_allgather}}},
    {algorithm::reduce_scatter_gather,
     "reduce_scatter_gather",
     {{collective::reduce, build::reduce_scatter_gather}}},
    {algorithm::recursive_doubling,
     "recursive_doubling",
     {{collective::allreduce, build::allreduce_recursive_doubling},
      {collective::allgather, build::allgather_recursive_doubling}}},
    {algorithm::ring,
     "ring",
     {{collective::allreduce, build::allreduce_ring},
      {collective::allgather, build::allgather_ring},
      {collective::reduce_scatter, build::reduce_scatter_ring},
      {collective::allgatherv, build::allgatherv_ring},
      {collective::reduce_scatterv, build::reduce_scatterv_ring}}},
    {algorithm::knomial,
     "knomial",
     {{collective::allreduce, build::allreduce_knomial},
      {collective::reduce_scatter, build::reduce_scatter_knomial},
      {collective::reduce_scatterv, build::reduce_scatterv_knomial}}},
    {algorithm::rabenseifner,
     "rabenseifner",
     {{collective::allreduce, build::allreduce_rabenseifner}}},
    {algorithm::bruck, "bruck", {{collective::allgather, build::allgather_bruck}}},
    {algorithm::pairwise,
     "pairwise",
     {{collective::alltoall, build::alltoall_pairwise},
      {collective::alltoallv, build::alltoallv_pairwise}}},
    {algorithm::linear,
     "linear",
     {{collective::alltoall, build::alltoall_linear},
      {collective::gather, build::gather_linear},
      {collective::scatter, build::scatter_linear},
      {collective::allgatherv, build::allgatherv_linear},
      {collective::alltoallv, build::alltoallv_linear},
      {collective::gatherv, build::gatherv_linear},
      {collective::scatterv, build::scatterv_linear}}},
};

/// What can be checked at compile time: ids and names unique, automatic nobody's id, every
/// row implements something and no collective twice.
constexpr bool algorithm_table_is_consistent()
{
    const size_t rows = sizeof(algorithm_table) / sizeof(algorithm_table[0]);
    for (size_t i = 0; i < rows; ++i) {
        const algorithm_row &row = algorithm_table[i];
        if (row.id == algorithm::automatic || row.implementations[0].build == nullptr)
            return false;
        if (std::string_view(row.name) == "automatic")
            return false;
        for (size_t j = i + 1; j < rows; ++j) {
            if (algorithm_table[j].id == row.id)
                return false;
            if (std::string_view(algorithm_table[j].name) == row.name)
                return false;
        }
        const size_t slots = sizeof(row.implementations) / sizeof(row.implementations[0]);
        for (size_t a = 0; a < slots; ++a) {
            for (size_t b = a + 1; b < slots; ++b) {
                const implementation &x = row.implementations[a], &y = row.implementations[b];
                if (x.build != nullptr && y.build != nullptr && x.serves == y.serves)
                    return false;
            }
        }
    }
    return true;
}
static_assert(algorithm_table_is_consistent(),
              "algorithm_table: an id or a name twice, automatic as a row, a row that implements "
              "nothing, or a collective twice in one row");

/// The row of @p id.  Throws ucx_error(UCS_ERR_INVALID_PARAM) for automatic or a value that
/// is no id (a cast integer).
[[nodiscard]] inline const algorithm_row &row_of(algorithm id)
{
    for (const algorithm_row &row : algorithm_table) {
        if (row.id == id)
            return row;
    }
    throw ucx_error(UCS_ERR_INVALID_PARAM, "coll: algorithm id " + std::to_string(int(id)) +
                                               " is no row of the algorithm table");
}

}  // namespace ucp_cpp::coll::detail

namespace ucp_cpp::coll {

/**
 * @brief Cut-overs of the automatic algorithm choice, in bytes (ranks where said).
 *
 * Measured: each value is read off per-algorithm sweeps (perf/coll_bench/host_compare
 * --per-algorithm: every algorithm forced in turn, 2, 4, 8 and 16 ranks, 8 B to 16 MiB in
 * steps of 8x, UCX shared memory, on a quiet 16-core host; docs/collectives.md has the tables)
 * as the size between the last measured size where the smaller-message algorithm was the faster
 * and the first where the other one was.  The allreduce ring cut-over keeps the form of its
 * alpha-beta model, with alpha/beta set to what the sweep showed.  A communicator takes them from
 * its config (config::thresholds()), that is from the environment or from code.
 */
struct thresholds {
    /// allreduce: below this size, or with fewer elements than ranks, latency rules: recursive
    /// doubling for powers of two below allreduce_knomial_ranks, k-nomial otherwise.  From
    /// here: Rabenseifner, or the ring from allreduce_ring(p).
    size_t allreduce_rabenseifner = 16 * 1024;
    /// allreduce: powers of two from this many ranks take k-nomial for small messages (measured:
    /// recursive doubling was the faster at 8 B - 4 KiB on 2, 8 and 16 ranks).
    int allreduce_knomial_ranks = 32;
    /// allreduce: alpha/beta, the message size whose transfer time equals one latency;
    /// allreduce_ring(p) derives from it (measured: the ring from 32 KiB on 8 ranks).
    size_t allreduce_alpha_beta = 512;
    /// bcast: van de Geijn's scatter + allgather from this size (and n >= p, p > 2); measured:
    /// binomial up to 256 KiB, scatter + allgather from 2 MiB on 4 - 16 ranks.
    size_t bcast_scatter_allgather = 1024 * 1024;
    /// reduce: ring reduce-scatter + gather from this size (and n >= p); measured: binomial up
    /// to 256 KiB (but 16 ranks), reduce-scatter + gather from 2 MiB on 2 - 16 ranks.
    size_t reduce_scatter_gather = 1024 * 1024;
    /// allgather: the ring from this many gathered bytes (all ranks' blocks together).
    size_t allgather_ring = 64 * 1024;
    /// reduce_scatter: on 8 ranks or more, the k-nomial allreduce of the whole vector below
    /// this many input bytes per rank (all blocks together); the ring otherwise (measured: the
    /// ring was the faster from 8 B on 2 and 4 ranks, from 512 B blocks on 8 and 16).
    size_t reduce_scatter_ring = 2 * 1024;
    /// alltoall: on more than 4 ranks, linear (one round, all pairs at once) below this block
    /// size, pairwise (p - 1 rounds) from it; pairwise on up to 4 ranks (measured: within 10 %
    /// of each other there, linear up to 1.9x faster on 8 and 16 ranks up to 4 KiB blocks).
    size_t alltoall_pairwise = 16 * 1024;
    /// gather: linear (every block straight into the root's buffer) from this block size;
    /// below, the binomial tree (measured: linear from 4 KiB blocks on 2 - 16 ranks).
    size_t gather_linear = 2 * 1024;
    /// scatter: linear from this many bytes at the root (all blocks together); below, the
    /// binomial tree (measured: linear from 16 KiB on 4 ranks, 256 KiB on 8 and 16).
    size_t scatter_linear = 16 * 1024;

    /**
     * @brief The allreduce size from which the ring replaces Rabenseifner on @p p ranks.
     *
     * Powers of two (both move 2n(p-1)/p; the ring has 2(p-1-log2 p) more latencies, n/p
     * scratch and neighbour-only traffic): once those latencies are <= 1/16 of its transfer
     * time, 16 (p-1-log2 p) alpha/beta: p 4: 256 KiB, 8: 1 MiB, 16: 2.75 MiB.  Other sizes
     * (Rabenseifner's fold adds ~2 whole-vector transfers, the ring 2(p-2-floor(log2 p))
     * latencies): (p-2-floor(log2 p)) alpha/beta: p 3: always, 5: 16 KiB, 6: 32 KiB, 12: 112 KiB.
     * @param p the communicator size (>= 1)
     * @return bytes
     */
    [[nodiscard]] constexpr size_t allreduce_ring(int p) const
    {
        int log2p = 0;
        while ((2 << log2p) <= p)
            ++log2p;
        if ((p & (p - 1)) == 0)
            return 16 * size_t(p - 1 - log2p) * allreduce_alpha_beta;
        return size_t(p - 2 - log2p) * allreduce_alpha_beta;
    }
};

}  // namespace ucp_cpp::coll

namespace ucp_cpp::coll::detail {

// ---------------------------------------------------------------- the collective table

/// The automatic choice of one collective for @p count elements of @p elem bytes on @p p ranks.
using chooser = algorithm (*)(const thresholds &cut, size_t count, size_t elem, int p);

/// The collectives with one algorithm.
template <algorithm only> algorithm always(const thresholds &, size_t, size_t, int)
{
    return only;
}

inline algorithm choose_bcast(const thresholds &cut, size_t count, size_t elem, int p)
{
    const bool large = count * elem >= cut.bcast_scatter_allgather && count >= size_t(p) && p > 2;
    return large ? algorithm::scatter_allgather : algorithm::binomial;
}

inline algorithm choose_reduce(const thresholds &cut, size_t count, size_t elem, int p)
{
    const bool large = count * elem >= cut.reduce_scatter_gather && count >= size_t(p);
    return large ? algorithm::reduce_scatter_gather : algorithm::binomial;
}

inline algorithm choose_allreduce(const thresholds &cut, size_t count, size_t elem, int p)
{
    const size_t bytes = count * elem;
    if (bytes < cut.allreduce_rabenseifner || count < size_t(p)) {
        const bool pof2 = (p & (p - 1)) == 0;
        return pof2 && p < cut.allreduce_knomial_ranks ? algorithm::recursive_doubling
                                                       : algorithm::knomial;
    }
    return bytes >= cut.allreduce_ring(p) ? algorithm::ring : algorithm::rabenseifner;
}

inline algorithm choose_allgather(const thresholds &cut, size_t count, size_t elem, int p)
{
    if (count * elem * size_t(p) >= cut.allgather_ring)
        return algorithm::ring;
    return (p & (p - 1)) == 0 ? algorithm::recursive_doubling : algorithm::bruck;
}

/// reduce_scatter with counts: @p total elements of input (all blocks), known on every rank.
inline algorithm choose_reduce_scatterv(const thresholds &cut, size_t total, size_t elem, int p)
{
    const bool small = p >= 8 && total * elem < cut.reduce_scatter_ring;
    return small ? algorithm::knomial : algorithm::ring;
}

inline algorithm choose_reduce_scatter(const thresholds &cut, size_t count, size_t elem, int p)
{
    return choose_reduce_scatterv(cut, count * size_t(p), elem, p);
}

/// allgatherv: @p total elements gathered (all blocks), known on every rank.
inline algorithm choose_allgatherv(const thresholds &cut, size_t total, size_t elem, int)
{
    return total * elem >= cut.allgather_ring ? algorithm::ring : algorithm::linear;
}

inline algorithm choose_alltoall(const thresholds &cut, size_t count, size_t elem, int p)
{
    const bool small = p > 4 && count * elem < cut.alltoall_pairwise;
    return small ? algorithm::linear : algorithm::pairwise;
}

inline algorithm choose_gather(const thresholds &cut, size_t count, size_t elem, int)
{
    return count * elem >= cut.gather_linear ? algorithm::linear : algorithm::binomial;
}

inline algorithm choose_scatter(const thresholds &cut, size_t count, size_t elem, int p)
{
    return count * elem * size_t(p) >= cut.scatter_linear ? algorithm::linear : algorithm::binomial;
}

/// A row of the collective table.
struct collective_row {
    collective id;
    const char *name;  ///< as UCP_CPP_COLL_<NAME>_ALGORITHM spells it, in lower case
    chooser automatic;
};

/// Every collective, in the order of their ids.
inline constexpr collective_row collective_table[] = {
    {collective::barrier, "barrier", always<algorithm::dissemination>},
    {collective::bcast, "bcast", choose_bcast},
    {collective::reduce, "reduce", choose_reduce},
    {collective::allreduce, "allreduce", choose_allreduce},
    {collective::allgather, "allgather", choose_allgather},
    {collective::reduce_scatter, "reduce_scatter", choose_reduce_scatter},
    {collective::alltoall, "alltoall", choose_alltoall},
    {collective::gather, "gather", choose_gather},
    {collective::scatter, "scatter", choose_scatter},
    {collective::allgatherv, "allgatherv", choose_allgatherv},
    // Only the counts of its own blocks are known to a rank (alltoallv), or to the root
    // (gatherv, scatterv): the choice cannot depend on them, every rank must choose alike.
    {collective::alltoallv, "alltoallv", always<algorithm::linear>},
    {collective::gatherv, "gatherv", always<algorithm::linear>},
    {collective::scatterv, "scatterv", always<algorithm::linear>},
    {collective::reduce_scatterv, "reduce_scatterv", choose_reduce_scatterv},
};

/// How many collectives there are.
inline constexpr size_t collective_count = sizeof(collective_table) / sizeof(collective_table[0]);

/// Row i is collective i, so ids index the table (and per-collective arrays of this size).
constexpr bool collective_table_is_indexed_by_id()
{
    for (size_t i = 0; i < collective_count; ++i) {
        if (size_t(collective_table[i].id) != i)
            return false;
    }
    return true;
}
static_assert(collective_table_is_indexed_by_id(), "collective_table: row i must be collective i");

/// The row of @p which.
[[nodiscard]] inline const collective_row &row_of(collective which)
{
    return collective_table[size_t(which)];
}

}  // namespace ucp_cpp::coll::detail

namespace ucp_cpp::coll {

/**
 * @brief The name of a collective.
 * @param which a collective
 * @return "barrier", "bcast", ... as UCP_CPP_COLL_<NAME>_ALGORITHM spells it in lower case
 */
[[nodiscard]] inline const char *name_of(collective which)
{
    return detail::row_of(which).name;
}

/**
 * @brief The name of an algorithm.
 * @param id an algorithm
 * @return its name in the algorithm table ("ring", ...), or "automatic"
 * @throws ucx_error UCS_ERR_INVALID_PARAM: @p id is no algorithm (a cast integer)
 */
[[nodiscard]] inline const char *name_of(algorithm id)
{
    return id == algorithm::automatic ? "automatic" : detail::row_of(id).name;
}

/**
 * @brief The algorithm of a name, as the environment and command lines give them.
 * @param name an algorithm name ("ring", ...) or "automatic"
 * @return its id, or nullopt when no algorithm has that name
 */
[[nodiscard]] inline std::optional<algorithm> algorithm_named(std::string_view name)
{
    if (name == "automatic")
        return algorithm::automatic;
    for (const detail::algorithm_row &row : detail::algorithm_table) {
        if (name == row.name)
            return row.id;
    }
    return std::nullopt;
}

/**
 * @brief Whether an algorithm implements a collective.
 * @param id an algorithm (automatic implements every collective)
 * @param which a collective
 * @return true when @p which can run with @p id
 * @throws ucx_error UCS_ERR_INVALID_PARAM: @p id is no algorithm (a cast integer)
 */
[[nodiscard]] inline bool implements(algorithm id, collective which)
{
    return id == algorithm::automatic || detail::row_of(id).builder_for(which) != nullptr;
}

/**
 * @brief The algorithms that implement a collective.
 * @param which a collective
 * @return their ids in table order (without automatic)
 */
[[nodiscard]] inline std::vector<algorithm> algorithms_of(collective which)
{
    std::vector<algorithm> found;
    for (const detail::algorithm_row &row : detail::algorithm_table) {
        if (row.builder_for(which) != nullptr)
            found.push_back(row.id);
    }
    return found;
}

}  // namespace ucp_cpp::coll
