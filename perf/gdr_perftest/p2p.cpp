// gdr_perftest: point-to-point tests between ranks 0 and 1 (tag, RMA, active messages).
//
// Every test counts the bytes that actually arrived at the receiving side: tag receive
// completions' lengths, active-message lengths, the lengths of RMA operations completed
// remotely (put: after the flush; get: at the initiator, which is the receiver), and checks
// their content against a pattern (every message with -c 1; otherwise the last message, or the
// RMA target/destination region once per size).  Ranks >= 2 only take part in the bookkeeping.
#include "perftest.hpp"

#include <signal.h>

#include <algorithm>
#include <cstdio>
#include <cstring>
#include <deque>

namespace gdr_perftest {

namespace {

using clock_type = std::chrono::steady_clock;

constexpr ucp_tag_t tag_ping = 0x67707400, tag_pong = 0x67707401, tag_data = 0x67707402,
                    tag_go = 0x67707403, tag_done = 0x67707404;
constexpr ucp_tag_t full_mask = ~ucp_tag_t(0);
constexpr uint16_t am_ping = 0x6701, am_pong = 0x6702, am_data = 0x6703;

/// What one rank measured and counted for one size.
struct local_result {
    std::vector<double> samples_us;  // lat tests, rank 0
    double elapsed_s  = 0;  // bw tests, the measuring rank
    uint64_t counted  = 0;  // bytes that arrived here (timed iterations)
    uint64_t expected = 0;  // bytes that should have arrived here
    bool data_ok      = true;

    /// A timed ping-pong iteration: half the round trip, and the bytes that came back of @p size.
    void record_round_trip(clock_type::time_point t0, clock_type::time_point t1, uint64_t arrived,
                           size_t size)
    {
        samples_us.push_back(std::chrono::duration<double, std::micro>(t1 - t0).count() / 2);
        counted += arrived;
        expected += size;
    }
};

void die_now(const session &s)
{
    std::fprintf(stderr, "gdr_perftest: rank %d: --inject kill: killing myself (SIGKILL)\n",
                 s.rank);
    std::fflush(nullptr);
    ::raise(SIGKILL);
}

/// The link between ranks 0 and 1: an endpoint and bounded waits that fail fast when the peer died.
class link {
public:
    link(session &s, std::shared_ptr<ucp_cpp::endpoint> ep) : s_(s), ep_(std::move(ep)) {}

    ucp_cpp::endpoint &ep() { return *ep_; }
    session &sess() { return s_; }

    template <class Done> void wait_until(Done &&done, const char *what)
    {
        const auto deadline = clock_type::now() + s_.timeout;
        unsigned spins      = 0;
        while (!done()) {
            s_.worker->progress();
            if ((++spins & 1023u) == 0) {
                if (ep_->failed()) {
                    throw ucp_cpp::ucx_error(ep_->error_status(),
                                             std::string(what) + ": connection to rank " +
                                                 std::to_string(1 - s_.rank) + " failed");
                }
                if (clock_type::now() >= deadline) {
                    throw ucp_cpp::ucx_error(UCS_ERR_TIMED_OUT,
                                             std::string(what) + ": no completion within " +
                                                 std::to_string(s_.opt.timeout_s) +
                                                 " s (--timeout)");
                }
            }
        }
    }

    void wait(ucp_cpp::request &req, const char *what)
    {
        wait_until([&] { return req.done(); }, what);
        ucp_cpp::check_status(req.status(), what);
    }

    /// A tiny tag message, for the start/stop handshakes of the bw tests.
    void signal(ucp_tag_t tag)
    {
        uint64_t token = tag;
        auto req       = ep_->tag_send(&token, sizeof(token), tag);
        wait(req, "handshake send");
    }
    void await(ucp_tag_t tag)
    {
        uint64_t token = 0;
        auto req       = s_.worker->tag_recv(&token, sizeof(token), tag, full_mask);
        wait(req, "handshake receive");
    }

private:
    session &s_;
    std::shared_ptr<ucp_cpp::endpoint> ep_;
};

ucp_cpp::op_options mem_options(const buffer &b)
{
    ucp_cpp::op_options o;
    o.memory_type = b.ucs_type();
    return o;
}

double seconds_since(clock_type::time_point t0)
{
    return std::chrono::duration<double>(clock_type::now() - t0).count();
}

/// --bw-timing sender: the sender's time from @p t0 until its endpoint is flushed (every send
/// completed remotely), as ucx_perftest ends the timing of its bandwidth tests.
double flushed_since(link &l, clock_type::time_point t0, const char *what)
{
    auto flush = l.ep().flush();
    l.wait(flush, what);
    return seconds_since(t0);
}

/// The sender's data: the pattern in each of @p slots slots of @p size bytes.
void fill_slots(buffer &b, size_t size, size_t slots)
{
    const auto p = pattern(size);
    for (size_t j = 0; j < slots; ++j)
        b.write(j * size, p.data(), size);
}

/// --inject corrupt: flips the first byte of every slot of the source data.
void corrupt(buffer &b, size_t size, size_t slots)
{
    for (size_t j = 0; j < slots; ++j) {
        std::byte x{};
        b.read(j * size, &x, 1);
        x ^= std::byte{0xff};
        b.write(j * size, &x, 1);
    }
}

/// The buffer of a bandwidth test: `window` slots of `size` bytes in this rank's memory type; on
/// the data source they hold the pattern (corrupted under --inject corrupt).
struct window_buffer {
    window_buffer(session &s, size_t size, size_t window, bool source)
        : buf(s.opt.memory_of(s.rank), size * window), mo(mem_options(buf))
    {
        if (source) {
            fill_slots(buf, size, window);
            if (s.opt.inject == injection::corrupt)
                corrupt(buf, size, window);
        }
    }
    buffer buf;
    ucp_cpp::op_options mo;
};

struct size_plan {
    size_t size, iters, warmup, index;
    bool timed(size_t i) const { return i >= warmup; }
    size_t total() const { return warmup + iters; }
    bool last(size_t i) const { return i + 1 == total(); }
    bool kill_point(const session &s, size_t i) const
    {
        return s.opt.inject == injection::kill && s.opt.inject_rank == s.rank && index == 0 &&
               i == warmup + iters / 2;
    }
};

// ------------------------------------------------------------------ ping-pong (tag_lat, am_lat)

/// The two buffers of a latency test in this rank's memory type: the message (the pattern,
/// corrupted on rank 0 under --inject corrupt) and where the peer's message lands.
struct ping_pong_buffers {
    ping_pong_buffers(session &s, size_t size)
        : send(s.opt.memory_of(s.rank), size), recv(s.opt.memory_of(s.rank), size)
    {
        fill_slots(send, size, 1);
        if (s.opt.inject == injection::corrupt && s.rank == 0)
            corrupt(send, size, 1);
    }
    buffer send, recv;
};

/// The loop of tag_lat and am_lat: rank 0 sends and then waits for the answer, rank 1 waits and
/// then answers; a timed iteration records half the round trip and the bytes that arrived, and
/// checks them against the pattern (every one with -c 1, else the last).  @p exchange(initiator,
/// send_length) moves one message each way in this rank's order and returns the length that
/// arrived here; --inject short shortens rank 0's last message by a byte.
template <class Exchange>
local_result ping_pong(link &l, const size_plan &sp, buffer &rbuf, Exchange &&exchange)
{
    session &s = l.sess();
    local_result out;
    const size_t size    = sp.size;
    const bool initiator = s.rank == 0;
    out.samples_us.reserve(sp.iters);
    for (size_t i = 0; i < sp.total(); ++i) {
        if (sp.kill_point(s, i))
            die_now(s);
        const bool verify = sp.timed(i) && (s.opt.check || sp.last(i));
        if (verify)
            rbuf.clear(0, size);
        const bool shortened = s.opt.inject == injection::short_message && initiator && sp.last(i);
        const size_t send_length = shortened ? size - 1 : size;
        const auto t0            = clock_type::now();
        const size_t got         = exchange(initiator, send_length);
        const auto t1            = clock_type::now();
        if (!sp.timed(i))
            continue;
        out.record_round_trip(t0, t1, got, size);
        if (verify && pattern_matches(rbuf, 0, size) != size)
            out.data_ok = false;
    }
    return out;
}

// ------------------------------------------------------------------ tag

local_result tag_lat(link &l, const size_plan &sp)
{
    session &s = l.sess();
    ping_pong_buffers b(s, sp.size);
    const auto so = mem_options(b.send), ro = mem_options(b.recv);
    return ping_pong(l, sp, b.recv, [&](bool initiator, size_t send_length) {
        if (initiator) {
            auto recv = s.worker->tag_recv(b.recv.data(), sp.size, tag_pong, full_mask, ro);
            auto send = l.ep().tag_send(b.send.data(), send_length, tag_ping, so);
            l.wait(send, "tag_lat send");
            l.wait(recv, "tag_lat receive");
            return recv.length();
        }
        auto recv = s.worker->tag_recv(b.recv.data(), sp.size, tag_ping, full_mask, ro);
        l.wait(recv, "tag_lat receive");
        const size_t got = recv.length();
        auto send        = l.ep().tag_send(b.send.data(), send_length, tag_pong, so);
        l.wait(send, "tag_lat send");
        return got;
    });
}

local_result tag_bw(link &l, const size_plan &sp)
{
    session &s = l.sess();
    local_result out;
    const size_t size = sp.size, window = s.opt.window;
    const bool sender = s.rank == 0;
    window_buffer slots_buffer(s, size, window, sender);
    buffer &buf   = slots_buffer.buf;
    const auto mo = slots_buffer.mo;
    // One round: `count` messages; the receiver keeps `window` receives posted (they match in
    // posting order: one sender, one tag), the sender keeps `window` sends outstanding.
    auto round = [&](size_t count, bool timed) {
        std::vector<ucp_cpp::request> slots(window);
        std::vector<size_t> slot_message(window, SIZE_MAX);
        if (sender) {
            l.await(tag_go);
            const auto t0 = clock_type::now();
            for (size_t i = 0; i < count; ++i) {
                const size_t j = i % window;
                if (i >= window)
                    l.wait(slots[j], "tag_bw send");
                if (timed && sp.kill_point(s, sp.warmup + i))
                    die_now(s);
                const size_t length = (timed && s.opt.inject == injection::short_message &&
                                       i + 1 == count)
                                          ? size - 1
                                          : size;
                slots[j]            = l.ep().tag_send(buf.bytes() + j * size, length, tag_data, mo);
            }
            for (size_t i = count > window ? count - window : 0; i < count; ++i)
                l.wait(slots[i % window], "tag_bw send");
            if (timed && s.opt.bw_at_sender)
                out.elapsed_s = flushed_since(l, t0, "tag_bw flush");
            return;
        }
        if (timed)
            buf.clear(0, size * window);
        const size_t first = std::min(count, window);
        for (size_t i = 0; i < first; ++i)
            slots[i] = s.worker->tag_recv(buf.bytes() + i * size, size, tag_data, full_mask, mo);
        l.signal(tag_go);
        const auto t0 = clock_type::now();
        for (size_t i = 0; i < count; ++i) {
            const size_t j = i % window;
            l.wait(slots[j], "tag_bw receive");
            if (timed) {
                if (sp.kill_point(s, sp.warmup + i))
                    die_now(s);
                const size_t got = slots[j].length();
                out.counted += got;
                out.expected += size;
                if ((s.opt.check || i + 1 == count) && pattern_matches(buf, j * size, size) != size)
                    out.data_ok = false;
                if (s.opt.check)
                    buf.clear(j * size, size);
            }
            if (i + window < count)
                slots[j] = s.worker->tag_recv(buf.bytes() + j * size, size, tag_data, full_mask,
                                              mo);
        }
        if (timed && !s.opt.bw_at_sender)
            out.elapsed_s = seconds_since(t0);
    };
    if (sp.warmup > 0)
        round(sp.warmup, false);
    round(sp.iters, true);
    return out;
}

// ------------------------------------------------------------------ RMA

/// Registers @p region and swaps packed keys: returns the peer's key unpacked on the link's endpoint
/// and the peer's region address.  Collective (all ranks).
std::pair<std::optional<ucp_cpp::remote_key>, uint64_t> swap_keys(
    link *l, session &s, const buffer *region, std::shared_ptr<ucp_cpp::memory_handle> &memh)
{
    std::vector<uint8_t> mine;
    if (region != nullptr) {
        memh             = ucp_cpp::memory_handle::map(s.ctx, region->data(), region->length(),
                                                       region->ucs_type());
        auto packed      = memh->pack_rkey();
        uint64_t address = memh->remote_address();
        mine.resize(sizeof(address));
        std::memcpy(mine.data(), &address, sizeof(address));
        mine.insert(mine.end(), packed.bytes.begin(), packed.bytes.end());
    }
    auto all = s.exchange(mine);
    if (l == nullptr)
        return {std::nullopt, 0};
    const auto &theirs = all.at(size_t(1 - s.rank));
    if (theirs.size() <= sizeof(uint64_t))
        return {std::nullopt, 0};
    uint64_t address = 0;
    std::memcpy(&address, theirs.data(), sizeof(address));
    ucp_cpp::packed_rkey packed{
        std::vector<uint8_t>(theirs.begin() + sizeof(address), theirs.end())};
    return {l->ep().unpack_rkey(packed), address};
}

local_result put_lat(link &l, const size_plan &sp)
{
    session &s = l.sess();
    local_result out;
    const size_t size = sp.size;
    // The receive buffer is polled by the CPU: host memory on both sides.
    buffer sbuf(mem_kind::host, size), rbuf(mem_kind::host, size);
    fill_slots(sbuf, size, 1);
    if (s.opt.inject == injection::corrupt && s.rank == 0)
        corrupt(sbuf, size, 1);
    std::shared_ptr<ucp_cpp::memory_handle> memh;
    auto [rkey, remote]    = swap_keys(&l, s, &rbuf, memh);
    const bool initiator   = s.rank == 0;
    volatile uint8_t *flag = reinterpret_cast<volatile uint8_t *>(rbuf.bytes() + size - 1);
    auto seq               = [](size_t i) { return uint8_t(i % 251 + 1); };
    auto arrive = [&](size_t i) { l.wait_until([&] { return *flag == seq(i); }, "put_lat poll"); };
    auto send   = [&](size_t i) {
        sbuf.bytes()[size - 1] = std::byte(seq(i));
        auto req               = l.ep().put(sbuf.data(), size, remote, *rkey);
        l.wait(req, "put_lat put");
    };
    const auto pat = pattern(size);
    for (size_t i = 0; i < sp.total(); ++i) {
        if (sp.kill_point(s, i))
            die_now(s);
        const auto t0 = clock_type::now();
        if (initiator) {
            send(i);
            arrive(i);
        } else {
            arrive(i);
            send(i);
        }
        const auto t1 = clock_type::now();
        if (!sp.timed(i))
            continue;
        out.record_round_trip(t0, t1, size,
                              size);  // the put's last byte arrived (the rest is checked below)
        if (s.opt.check || sp.last(i)) {
            if (std::memcmp(rbuf.bytes(), pat.data(), size - 1) != 0)
                out.data_ok = false;
        }
    }
    // Both sides have seen the other's last put: flush before the key goes away.
    auto flush = l.ep().flush();
    l.wait(flush, "put_lat flush");
    return out;
}

/// put_bw (rank 0 writes into rank 1) and get_bw (rank 0 reads from rank 1).
local_result rma_bw(link &l, const size_plan &sp, bool is_put)
{
    session &s = l.sess();
    local_result out;
    const size_t size = sp.size, window = s.opt.window;
    const bool initiator = s.rank == 0;
    const bool source    = is_put ? initiator : !initiator;
    window_buffer slots_buffer(s, size, window, source);
    buffer &buf   = slots_buffer.buf;
    const auto mo = slots_buffer.mo;
    std::shared_ptr<ucp_cpp::memory_handle> memh;
    auto [rkey, remote]  = swap_keys(&l, s, initiator ? nullptr : &buf, memh);
    const size_t touched = std::min(sp.iters, window);
    auto verify_region   = [&] {
        for (size_t j = 0; j < touched; ++j) {
            if (pattern_matches(buf, j * size, size) != size)
                out.data_ok = false;
        }
    };
    auto round = [&](size_t count, bool timed) {
        if (!initiator) {
            if (timed && is_put)
                buf.clear(0, size * window);
            l.signal(tag_go);
            if (timed && sp.kill_point(s, sp.warmup + sp.iters / 2))
                die_now(s);  // passive side
            l.await(tag_done);
            if (timed && is_put)
                verify_region();
            return;
        }
        if (timed && !is_put)
            buf.clear(0, size * window);
        l.await(tag_go);
        std::vector<ucp_cpp::request> slots(window);
        const auto t0   = clock_type::now();
        uint64_t issued = 0;
        for (size_t i = 0; i < count; ++i) {
            const size_t j = i % window;
            if (i >= window) {
                l.wait(slots[j], is_put ? "put_bw put" : "get_bw get");
                if (timed)
                    out.counted += slots[j].length();
            }
            if (timed && sp.kill_point(s, sp.warmup + i))
                die_now(s);
            const size_t length = (timed && s.opt.inject == injection::short_message &&
                                   i + 1 == count)
                                      ? size - 1
                                      : size;
            slots[j] = is_put ? l.ep().put(buf.bytes() + j * size, length, remote + j * size, *rkey,
                                           mo)
                              : l.ep().get(buf.bytes() + j * size, length, remote + j * size, *rkey,
                                           mo);
            issued += size;
        }
        for (size_t i = count > window ? count - window : 0; i < count; ++i) {
            l.wait(slots[i % window], is_put ? "put_bw put" : "get_bw get");
            if (timed)
                out.counted += slots[i % window].length();
        }
        if (is_put) {
            auto flush = l.ep().flush();  // remote completion: the data is in rank 1's memory
            l.wait(flush, "put_bw flush");
        }
        if (timed) {
            out.elapsed_s = seconds_since(t0);
            out.expected  = issued;
            if (!is_put)
                verify_region();
        }
        l.signal(tag_done);
    };
    if (sp.warmup > 0)
        round(sp.warmup, false);
    round(sp.iters, true);
    s.sync();  // nobody unmaps before the other side is done
    return out;
}

// ------------------------------------------------------------------ active messages

/// Receives active messages of one id into slots of a buffer; completions are consumed in order.
class am_sink {
public:
    am_sink(session &s, uint16_t id, buffer &buf, size_t size, size_t slots)
        : s_(s), id_(id), buf_(buf), size_(size), slots_(slots)
    {
        s_.worker->set_am_handler(id_, [this](ucp_cpp::am_message &m) {
            const size_t j = arrived_++ % slots_;
            pending_.push_back(
                {m.receive(buf_.bytes() + j * size_, size_, mem_options(buf_)), m.length(), j});
        });
    }
    ~am_sink() { s_.worker->set_am_handler(id_, nullptr); }

    struct item {
        ucp_cpp::request req;
        size_t length, slot;
    };
    /// The next message (in arrival order) once its data is in place.
    item next(link &l, const char *what)
    {
        l.wait_until([&] { return !pending_.empty() && pending_.front().req.done(); }, what);
        item it = std::move(pending_.front());
        pending_.pop_front();
        ucp_cpp::check_status(it.req.status(), what);
        return it;
    }

private:
    session &s_;
    uint16_t id_;
    buffer &buf_;
    size_t size_, slots_;
    size_t arrived_ = 0;
    std::deque<item> pending_;
};

local_result am_lat(link &l, const size_plan &sp)
{
    session &s = l.sess();
    ping_pong_buffers b(s, sp.size);
    am_sink sink(s, s.rank == 0 ? am_pong : am_ping, b.recv, sp.size, 1);
    s.sync();  // both handlers are registered
    const auto so    = mem_options(b.send);
    local_result out = ping_pong(l, sp, b.recv, [&](bool initiator, size_t send_length) {
        if (initiator) {
            auto send = l.ep().am_send(am_ping, nullptr, 0, b.send.data(), send_length, so);
            l.wait(send, "am_lat send");
            return sink.next(l, "am_lat receive").length;
        }
        const size_t got = sink.next(l, "am_lat receive").length;
        auto send        = l.ep().am_send(am_pong, nullptr, 0, b.send.data(), send_length, so);
        l.wait(send, "am_lat send");
        return got;
    });
    s.sync();  // no message in flight when the handlers go
    return out;
}

local_result am_bw(link &l, const size_plan &sp)
{
    session &s = l.sess();
    local_result out;
    const size_t size = sp.size, window = s.opt.window;
    const bool sender = s.rank == 0;
    window_buffer slots_buffer(s, size, window, sender);
    buffer &buf   = slots_buffer.buf;
    const auto mo = slots_buffer.mo;
    std::optional<am_sink> sink;
    if (!sender)
        sink.emplace(s, am_data, buf, size, window);
    s.sync();
    auto round = [&](size_t count, bool timed) {
        if (sender) {
            std::vector<ucp_cpp::request> slots(window);
            l.await(tag_go);
            const auto t0 = clock_type::now();
            for (size_t i = 0; i < count; ++i) {
                const size_t j = i % window;
                if (i >= window)
                    l.wait(slots[j], "am_bw send");
                if (timed && sp.kill_point(s, sp.warmup + i))
                    die_now(s);
                const size_t length = (timed && s.opt.inject == injection::short_message &&
                                       i + 1 == count)
                                          ? size - 1
                                          : size;
                slots[j] = l.ep().am_send(am_data, nullptr, 0, buf.bytes() + j * size, length, mo);
            }
            for (size_t i = count > window ? count - window : 0; i < count; ++i)
                l.wait(slots[i % window], "am_bw send");
            if (timed && s.opt.bw_at_sender)
                out.elapsed_s = flushed_since(l, t0, "am_bw flush");
            l.await(tag_done);
            return;
        }
        if (timed)
            buf.clear(0, size * window);
        l.signal(tag_go);
        const auto t0 = clock_type::now();
        for (size_t i = 0; i < count; ++i) {
            auto it = sink->next(l, "am_bw receive");
            if (!timed)
                continue;
            if (sp.kill_point(s, sp.warmup + i))
                die_now(s);
            out.counted += it.length;
            out.expected += size;
            if ((s.opt.check || i + 1 == count) &&
                pattern_matches(buf, it.slot * size, size) != size)
                out.data_ok = false;
            if (s.opt.check)
                buf.clear(it.slot * size, size);
        }
        if (timed && !s.opt.bw_at_sender)
            out.elapsed_s = seconds_since(t0);
        l.signal(tag_done);
    };
    if (sp.warmup > 0)
        round(sp.warmup, false);
    round(sp.iters, true);
    s.sync();
    return out;
}

}  // namespace

std::vector<result_row> run_p2p(session &s, const test_info &test, const std::vector<size_t> &sizes,
                                size_t iters, size_t warmup, table_printer *table)
{
    const std::string name = test.name;
    if (s.size < 2)
        throw usage_error(name + " needs 2 ranks (got " + std::to_string(s.size) + ")");
    if (name == "put_lat" &&
        (s.opt.memory_of(0) != mem_kind::host || s.opt.memory_of(1) != mem_kind::host)) {
        throw usage_error(
            "put_lat polls its receive buffer with the CPU: host memory only (-m host)");
    }
    if (name == "put_lat" && s.opt.inject == injection::short_message) {
        throw usage_error("--inject short: not for put_lat (the last byte is the arrival flag)");
    }
    // Endpoints between ranks 0 and 1, from worker addresses exchanged through the communicator.
    const bool active = s.rank < 2;
    auto addresses    = s.exchange(active ? s.worker->address().bytes : std::vector<uint8_t>{});
    std::optional<link> l;
    if (active) {
        ucp_cpp::endpoint_params ep_params;
        ep_params.peer_error_handling = s.opt.err_mode != "none";
        ep_params.name                = "gdr_perftest";
        ucp_cpp::worker_address peer{addresses.at(size_t(1 - s.rank))};
        l.emplace(s, ucp_cpp::endpoint::connect(s.worker, peer, ep_params));
    }
    if (table != nullptr)
        table->begin(test, iters, warmup);
    std::vector<result_row> rows;
    for (size_t index = 0; index < sizes.size(); ++index) {
        const size_plan sp{sizes[index], iters, warmup, index};
        s.progress_line(name, sp.size, index, sizes.size());
        local_result mine;
        if (active) {
            if (name == "tag_lat")
                mine = tag_lat(*l, sp);
            else if (name == "tag_bw")
                mine = tag_bw(*l, sp);
            else if (name == "put_lat")
                mine = put_lat(*l, sp);
            else if (name == "put_bw")
                mine = rma_bw(*l, sp, true);
            else if (name == "get_bw")
                mine = rma_bw(*l, sp, false);
            else if (name == "am_lat")
                mine = am_lat(*l, sp);
            else if (name == "am_bw")
                mine = am_bw(*l, sp);
        } else {
            if (s.opt.inject == injection::kill && s.opt.inject_rank == s.rank && index == 0)
                die_now(s);
            // The tests' own collective steps, then wait for ranks 0 and 1.
            if (name == "put_lat") {
                std::shared_ptr<ucp_cpp::memory_handle> none;
                swap_keys(nullptr, s, nullptr, none);
            } else if (name == "put_bw" || name == "get_bw") {
                std::shared_ptr<ucp_cpp::memory_handle> none;
                swap_keys(nullptr, s, nullptr, none);
                s.sync();
            } else if (name == "am_lat" || name == "am_bw") {
                s.sync();
                s.sync();
            }
        }
        result_row r;
        r.test   = name;
        r.size   = sp.size;
        r.iters  = iters;
        r.warmup = warmup;
        r.ranks  = s.size;
        r.memory = std::string(name_of(s.opt.memory_of(0))) + "/" + name_of(s.opt.memory_of(1));
        if (name == "put_lat")
            r.memory = "host/host";
        r.bytes_verified     = s.sum_over_ranks(mine.counted);
        r.bytes_expected     = s.sum_over_ranks(mine.expected);
        r.data_ok            = s.all(mine.data_ok);
        const double elapsed = s.max_over_ranks(mine.elapsed_s);
        if (test.family == test_family::p2p_lat) {
            if (s.rank == 0) {
                auto sorted = mine.samples_us;
                std::sort(sorted.begin(), sorted.end());
                double sum = 0;
                for (double v : sorted)
                    sum += v;
                r.avg_us = sorted.empty() ? 0 : sum / double(sorted.size());
                r.p50_us = percentile(sorted, 50);
                r.p90_us = percentile(sorted, 90);
                r.p99_us = percentile(sorted, 99);
            }
        } else if (elapsed > 0) {
            // Delivered bytes of the receiving side (rank 1 for tag/am/put, rank 0 for get).
            r.avg_us   = elapsed * 1e6 / double(iters);
            r.bw_GBps  = double(r.bytes_verified) / elapsed / 1e9;
            r.msg_rate = double(iters) / elapsed;
        }
        s.progress_done();
        if (table != nullptr)
            table->row(test, r);
        rows.push_back(std::move(r));
    }
    return rows;
}

}  // namespace gdr_perftest
