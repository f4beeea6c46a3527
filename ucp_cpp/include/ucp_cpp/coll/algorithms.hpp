/**
 * @file coll/algorithms.hpp
 * @brief Schedules of the collective algorithms (host memory), for any communicator size.
 *
 * Every builder appends rounds to a detail::schedule for the calling rank.  Conventions:
 * p = communicator size, r = own rank, "relative rank" vr = (r - root) mod p for rooted
 * collectives, so binomial trees work for any root and any p (non powers of two included).
 * Blocks: n elements split into p blocks, the first n mod p one element larger.
 * Steps (the tag field that pairs a send with its receive) are chosen so that a pair of ranks
 * never has two messages with the same step in one collective.
 *
 * Local work (the prologue, a round's `then`) never touches buffers directly: it goes through
 * `c.actions()` (a local_actions value, captured by copy), whose copy() and reduce() run on the
 * host or queue a copy / reduction kernel on the collective's GPU stream when the buffers are
 * CUDA memory (coll/gpu.hpp).  Scratch comes from c.plan.allocate(), which allocates in the
 * collective's memory.  Example:
 *   rd.then = [x = c.actions(), &op, incoming, buf, count] { x.reduce(op, incoming, buf, count); };
 * (copy_bytes() and reduction::apply() are host-only: do not call them from a schedule.)
 */
#pragma once

#include <ucp_cpp/coll/engine.hpp>
#include <ucp_cpp/coll/types.hpp>

#include <algorithm>
#include <cstring>
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
    /// Bytes of blocks [from, to).
    size_t span(int from, int to) const { return offset(to) - offset(from); }
};

/// A layout of p equal blocks of `block` elements (allgather, gather, alltoall...).
inline block_layout equal_blocks(size_t block, int parts, size_t elem)
{
    return block_layout{block * size_t(parts), parts, elem};
}

inline int mod(int a, int p) { return ((a % p) + p) % p; }
inline uint32_t log2_of(unsigned v)
{
    uint32_t k = 0;
    while ((1u << k) < v) ++k;
    return k;
}
/// Lowest set bit of vr; for the root (vr 0) a power of two >= p (it owns the whole tree).
inline int subtree_span(int vr, int p)
{
    if (vr != 0) return vr & -vr;
    int span = 1;
    while (span < p) span <<= 1;
    return span;
}

/// Host memmove (host-only: schedules use context::actions().copy instead).
inline void copy_bytes(void *dst, const void *src, size_t bytes)
{
    if (dst != src && bytes != 0) std::memmove(dst, src, bytes);
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
    void recv(round &rd, int peer, void *buf, size_t bytes, uint32_t step)
    {
        rd.transfers.push_back(transfer{false, peer, buf, bytes, step});
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
inline void ring_reduce_scatter(context &c, std::byte *buf, const block_layout &layout, int index,
                                const reduction &op, uint32_t step_base)
{
    const int p = c.size, right = mod(c.rank + 1, p), left = mod(c.rank - 1, p);
    std::byte *incoming = c.plan.allocate(layout.max_bytes());
    for (int s = 0; s < p - 1; ++s) {
        const int send_block = mod(index - s - 1, p), recv_block = mod(index - s - 2, p);
        round &rd = c.plan.add_round();
        c.send(rd, right, buf + layout.offset(send_block), layout.bytes(send_block), step_base + uint32_t(s));
        c.recv(rd, left, incoming, layout.bytes(recv_block), step_base + uint32_t(s));
        rd.then = [x = c.actions(), &op, incoming, target = buf + layout.offset(recv_block),
                   n = layout.elements(recv_block)] { x.reduce(op, incoming, target, n); };
    }
}

/// Ring allgather over `layout` on `buf`, where this rank already holds block `index`.
/// Steps [step_base, step_base + p - 1).
inline void ring_allgather(context &c, std::byte *buf, const block_layout &layout, int index, uint32_t step_base)
{
    const int p = c.size, right = mod(c.rank + 1, p), left = mod(c.rank - 1, p);
    for (int s = 0; s < p - 1; ++s) {
        const int send_block = mod(index - s, p), recv_block = mod(index - s - 1, p);
        round &rd = c.plan.add_round();
        c.send(rd, right, buf + layout.offset(send_block), layout.bytes(send_block), step_base + uint32_t(s));
        c.recv(rd, left, buf + layout.offset(recv_block), layout.bytes(recv_block), step_base + uint32_t(s));
    }
}

// ---------------------------------------------------------------- allreduce

/// Recursive doubling; the 2*(p - 2^floor(log2 p)) lowest ranks first fold pairwise (even into
/// odd) and get the result back at the end (MPICH's scheme), so any p works.
inline void allreduce_recursive_doubling(context &c, std::byte *buf, size_t count, const reduction &op)
{
    const int p = c.size, r = c.rank;
    const size_t bytes = count * c.elem;
    int pof2 = 1;
    while (pof2 * 2 <= p) pof2 *= 2;
    const int rem = p - pof2;
    std::byte *incoming = c.plan.allocate(bytes);
    auto reduce_incoming = [x = c.actions(), &op, incoming, buf, count] { x.reduce(op, incoming, buf, count); };
    const uint32_t fold_step = 0, unfold_step = 1 + log2_of(unsigned(pof2));

    int vrank;
    if (r < 2 * rem) {
        round &rd = c.plan.add_round();
        if (r % 2 == 0) {
            c.send(rd, r + 1, buf, bytes, fold_step);
            vrank = -1;
        } else {
            c.recv(rd, r - 1, incoming, bytes, fold_step);
            rd.then = reduce_incoming;
            vrank = r / 2;
        }
    } else {
        vrank = r - rem;
    }
    if (vrank >= 0) {
        uint32_t k = 1;
        for (int mask = 1; mask < pof2; mask <<= 1, ++k) {
            const int vpeer = vrank ^ mask;
            const int peer  = vpeer < rem ? vpeer * 2 + 1 : vpeer + rem;
            round &rd = c.plan.add_round();
            c.send(rd, peer, buf, bytes, k);
            c.recv(rd, peer, incoming, bytes, k);
            rd.then = reduce_incoming;
        }
    }
    if (r < 2 * rem) {
        round &rd = c.plan.add_round();
        if (r % 2 == 1) {
            c.send(rd, r - 1, buf, bytes, unfold_step);
        } else {
            c.recv(rd, r + 1, buf, bytes, unfold_step);
        }
    }
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
inline void allreduce_knomial(context &c, std::byte *buf, size_t count, const reduction &op, int radix)
{
    const int p = c.size, r = c.rank;
    const size_t bytes = count * c.elem;
    const knomial_shape shape = knomial_shape_of(p, radix);
    const int extra = p - shape.core;
    const uint32_t fold_step = 0, unfold_step = 1 + uint32_t(shape.radices.size());
    if (r >= shape.core) {
        round &fold = c.plan.add_round();
        c.send(fold, r - shape.core, buf, bytes, fold_step);
        round &unfold = c.plan.add_round();
        c.recv(unfold, r - shape.core, buf, bytes, unfold_step);
        return;
    }
    const int widest = shape.radices.empty() ? 1 : *std::max_element(shape.radices.begin(), shape.radices.end());
    std::byte *incoming = c.plan.allocate(bytes * size_t(widest - 1));
    if (r < extra) {
        round &fold = c.plan.add_round();
        c.recv(fold, r + shape.core, incoming, bytes, fold_step);
        fold.then = [x = c.actions(), &op, incoming, buf, count] { x.reduce(op, incoming, buf, count); };
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
            for (size_t t = 1; t < member.size(); ++t) x.reduce(op, member[t], acc, count);
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
/// moving 2 (pof2-1)/pof2 n in total.  Non-powers of two: the standard fold (Thakur,
/// Rabenseifner, Gropp 2005; as recursive doubling above): of the 2 (p - pof2) lowest ranks,
/// each even one gives its vector to the odd one above it and gets the result back last.
/// The halving starts with the farthest partner (distance pof2/2), so virtual rank v ends with
/// block v, and the allgather runs the distances back up.  Every block is reduced by one rank
/// only, so all ranks get bit-identical results.
/// Steps: fold 0, halving 1..L, doubling L+1..2L, unfold 2L+1 (L = log2 pof2).
inline void allreduce_rabenseifner(context &c, std::byte *buf, size_t count, const reduction &op)
{
    const int p = c.size, r = c.rank;
    const size_t bytes = count * c.elem;
    int pof2 = 1;
    while (pof2 * 2 <= p) pof2 *= 2;
    const int rem = p - pof2;
    const uint32_t levels = log2_of(unsigned(pof2));
    const uint32_t fold_step = 0, unfold_step = 1 + 2 * levels;
    const block_layout layout{count, pof2, c.elem};
    // The fold receives a whole vector; the halving at most the first pof2/2 blocks.
    std::byte *incoming = c.plan.allocate(r < 2 * rem ? bytes : layout.span(0, pof2 / 2));

    int vrank;
    if (r < 2 * rem) {
        round &rd = c.plan.add_round();
        if (r % 2 == 0) {
            c.send(rd, r + 1, buf, bytes, fold_step);
            vrank = -1;
        } else {
            c.recv(rd, r - 1, incoming, bytes, fold_step);
            rd.then = [x = c.actions(), &op, incoming, buf, count] { x.reduce(op, incoming, buf, count); };
            vrank = r / 2;
        }
    } else {
        vrank = r - rem;
    }
    if (vrank >= 0) {
        auto real = [rem](int v) { return v < rem ? v * 2 + 1 : v + rem; };
        uint32_t step = 1;
        int low = 0;  // first block of the window this rank still reduces
        for (int mask = pof2 >> 1; mask > 0; mask >>= 1, ++step) {
            const int peer = real(vrank ^ mask);
            const int keep = (vrank & mask) ? low + mask : low, give = (vrank & mask) ? low : low + mask;
            round &rd = c.plan.add_round();
            c.send(rd, peer, buf + layout.offset(give), layout.span(give, give + mask), step);
            c.recv(rd, peer, incoming, layout.span(keep, keep + mask), step);
            rd.then = [x = c.actions(), &op, incoming, target = buf + layout.offset(keep),
                       n = layout.first(keep + mask) - layout.first(keep)] { x.reduce(op, incoming, target, n); };
            low = keep;
        }
        for (int mask = 1; mask < pof2; mask <<= 1, ++step) {
            const int vpeer = vrank ^ mask;
            const int mine = vrank & ~(mask - 1), theirs = vpeer & ~(mask - 1);
            round &rd = c.plan.add_round();
            c.send(rd, real(vpeer), buf + layout.offset(mine), layout.span(mine, mine + mask), step);
            c.recv(rd, real(vpeer), buf + layout.offset(theirs), layout.span(theirs, theirs + mask), step);
        }
    }
    if (r < 2 * rem) {
        round &rd = c.plan.add_round();
        if (r % 2 == 1) {
            c.send(rd, r - 1, buf, bytes, unfold_step);
        } else {
            c.recv(rd, r + 1, buf, bytes, unfold_step);
        }
    }
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
        if (vr + m < p) c.send(rd, mod(vr + m + root, p), buf, bytes, log2_of(unsigned(m)));
    }
}

/// Van de Geijn: binomial scatter of p blocks (in relative-rank order), then ring allgather.
inline void bcast_scatter_allgather(context &c, std::byte *buf, size_t count, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    block_layout layout{count, p, c.elem};
    if (vr != 0) {
        round &rd = c.plan.add_round();
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
    const size_t bytes = count * c.elem;
    std::byte *incoming = c.plan.allocate(bytes);
    for (int mask = 1; mask < p; mask <<= 1) {
        round &rd = c.plan.add_round();
        if (vr & mask) {
            c.send(rd, mod(vr - mask + root, p), acc, bytes, log2_of(unsigned(mask)));
            break;
        }
        if (vr + mask < p) {
            c.recv(rd, mod(vr + mask + root, p), incoming, bytes, log2_of(unsigned(mask)));
            rd.then = [x = c.actions(), &op, incoming, acc, count] { x.reduce(op, incoming, acc, count); };
        }
    }
}

/// Ring reduce-scatter, then every rank sends its reduced block to the root (large messages).
inline void reduce_scatter_gather(context &c, std::byte *acc, size_t count, const reduction &op, int root)
{
    block_layout layout{count, c.size, c.elem};
    ring_reduce_scatter(c, acc, layout, c.rank, op, 0);
    round &rd = c.plan.add_round();
    const uint32_t step = uint32_t(c.size);
    if (c.rank != root) {
        c.send(rd, root, acc + layout.offset(c.rank), layout.bytes(c.rank), step);
    } else {
        for (int i = 0; i < c.size; ++i) {
            if (i != root) c.recv(rd, i, acc + layout.offset(i), layout.bytes(i), step);
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
    c.plan.prologue = [prev = c.plan.prologue, x = c.actions(), rotated, own = buf + size_t(r) * block_bytes,
                       block_bytes] {
        if (prev) prev();
        x.copy(rotated, own, block_bytes);
    };
    uint32_t k = 0;
    for (int d = 1; d < p; d <<= 1, ++k) {
        const size_t blocks = size_t(std::min(d, p - d));
        round &rd = c.plan.add_round();
        c.send(rd, mod(r - d, p), rotated, blocks * block_bytes, k);
        c.recv(rd, mod(r + d, p), rotated + size_t(d) * block_bytes, blocks * block_bytes, k);
    }
    if (p == 1) return;  // the prologue already placed the only block
    c.plan.rounds.back().then = [x = c.actions(), rotated, buf, block_bytes, p, r] {
        for (int j = 0; j < p; ++j) {
            x.copy(buf + size_t(mod(r + j, p)) * block_bytes, rotated + size_t(j) * block_bytes, block_bytes);
        }
    };
}

// ---------------------------------------------------------------- gather / scatter

/// Binomial gather; `staging` holds blocks [vr, vr + subtree) in relative order, own block first.
/// At the root the staging buffer is rotated into `recv` (block i = rank i).
inline void gather_binomial(context &c, const std::byte *own, std::byte *recv, size_t block_bytes, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    const int end = std::min(vr + span, p);
    std::byte *staging = c.plan.allocate(block_bytes * size_t(end - vr));
    c.plan.prologue = [x = c.actions(), staging, own, block_bytes] { x.copy(staging, own, block_bytes); };
    round &children = c.plan.add_round();
    for (int m = 1; m < span && vr + m < p; m <<= 1) {
        const int child_end = std::min(vr + 2 * m, p);
        c.recv(children, mod(vr + m + root, p), staging + size_t(m) * block_bytes,
               size_t(child_end - vr - m) * block_bytes, log2_of(unsigned(m)));
    }
    if (vr != 0) {
        round &up = c.plan.add_round();
        c.send(up, mod(vr - span + root, p), staging, size_t(end - vr) * block_bytes, log2_of(unsigned(span)));
    } else {
        children.then = [x = c.actions(), staging, recv, block_bytes, p, root] {
            for (int j = 0; j < p; ++j) {
                x.copy(recv + size_t(mod(j + root, p)) * block_bytes, staging + size_t(j) * block_bytes,
                       block_bytes);
            }
        };
    }
}

/// Binomial scatter (mirror of gather_binomial).
inline void scatter_binomial(context &c, const std::byte *send, std::byte *recv, size_t block_bytes, int root)
{
    const int p = c.size, vr = mod(c.rank - root, p), span = subtree_span(vr, p);
    const int end = std::min(vr + span, p);
    std::byte *staging = c.plan.allocate(block_bytes * size_t(end - vr));
    auto deliver_own = [x = c.actions(), staging, recv, block_bytes] { x.copy(recv, staging, block_bytes); };
    if (vr == 0) {
        c.plan.prologue = [x = c.actions(), staging, send, block_bytes, p, root] {
            for (int j = 0; j < p; ++j) {
                x.copy(staging + size_t(j) * block_bytes, send + size_t(mod(j + root, p)) * block_bytes,
                       block_bytes);
            }
        };
    } else {
        round &down = c.plan.add_round();
        c.recv(down, mod(vr - span + root, p), staging, size_t(end - vr) * block_bytes, log2_of(unsigned(span)));
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

/// Pairwise exchange: round i sends to r+i and receives from r-i (p-1 rounds).
inline void alltoall_pairwise(context &c, const std::byte *send, std::byte *recv, size_t block_bytes)
{
    const int p = c.size, r = c.rank;
    const std::byte *source = send;
    if (send == recv) {  // in place: send from a snapshot
        std::byte *snapshot = c.plan.allocate(block_bytes * size_t(p));
        c.plan.prologue = [x = c.actions(), snapshot, recv, bytes = block_bytes * size_t(p)] {
            x.copy(snapshot, recv, bytes);
        };
        source = snapshot;
    } else {
        c.plan.prologue = [x = c.actions(), send, recv, block_bytes, r] {
            x.copy(recv + size_t(r) * block_bytes, send + size_t(r) * block_bytes, block_bytes);
        };
    }
    for (int i = 1; i < p; ++i) {
        const int to = mod(r + i, p), from = mod(r - i, p);
        round &rd = c.plan.add_round();
        c.send(rd, to, source + size_t(to) * block_bytes, block_bytes, uint32_t(i));
        c.recv(rd, from, recv + size_t(from) * block_bytes, block_bytes, uint32_t(i));
    }
}

}  // namespace ucp_cpp::coll::detail
