// The data-moving UCT operations behind one interface, so tests can iterate "every op".
#pragma once

#include "uct_harness.h"

#include <cstring>
#include <deque>
#include <ostream>

namespace uctest {

enum class Op {
    PutShort,
    PutBcopy,
    PutZcopy,
    GetShort,
    GetBcopy,
    GetZcopy,
    AmShort,
    AmShortIov,
    AmBcopy,
    AmZcopy
};

struct OpInfo {
    Op op;
    const char *name;  ///< "put_zcopy"
    uint64_t cap_flag;  ///< UCT_IFACE_FLAG_* advertising it
};
const std::vector<OpInfo> &all_ops();
const OpInfo &op_info(Op op);
bool is_am(Op op);
/// gtest prints parameters with it ("put_zcopy" instead of raw bytes).
inline void PrintTo(Op op, std::ostream *os);
bool is_get(Op op);

inline void PrintTo(Op op, std::ostream *os)
{
    *os << op_info(op).name;
}

/// Largest payload of one call (for am_short: without our 8-byte header).
size_t op_max_length(const uct_iface_attr_t &attr, Op op);
/// Smallest payload of one call (get_zcopy may have a minimum, e.g. 65 B on rc_verbs).
size_t op_min_length(const uct_iface_attr_t &attr, Op op);
/// Whether an AM op of this kind carries our 8-byte sequence header in front of the payload.
bool am_carries_header(const uct_iface_attr_t &attr, Op op);

constexpr uint8_t kAmId = 5;

/// Receives active messages on one iface and keeps copies of them.
class AmSink {
public:
    AmSink(Entity &receiver, uint8_t id = kAmId);
    ~AmSink();
    AmSink(const AmSink &)            = delete;
    AmSink &operator=(const AmSink &) = delete;
    std::vector<Bytes> messages;
    size_t bytes() const { return bytes_; }
    /// Optional hook run inside the handler (e.g. to look at memory when the AM arrives).
    std::function<void(const uint8_t *, size_t)> on_message;

private:
    static ucs_status_t handler(void *arg, void *data, size_t length, unsigned flags);
    Entity &receiver_;
    uint8_t id_;
    size_t bytes_ = 0;
};

/// Posts operations of one kind and keeps what outlives the call (bcopy unpack contexts).
class Transfer {
public:
    Transfer(Entity &self, uct_ep_h ep) : self_(self), ep_(ep) {}
    /// Posts one `op` of `length` bytes between local.data()+offset and remote_addr (AM ops: to
    /// the peer's AmSink, with header `seq` where the op carries one). Does not retry.
    ucs_status_t post(Op op, RegisteredBuffer &local, size_t offset, size_t length,
                      uint64_t remote_addr, uct_rkey_t rkey, uint64_t seq);
    /// post() retried while the transport answers NO_RESOURCE (progressing `entities`).
    ucs_status_t post_retry(Op op, RegisteredBuffer &local, size_t offset, size_t length,
                            uint64_t remote_addr, uct_rkey_t rkey, uint64_t seq,
                            std::initializer_list<Entity *> entities);
    Completion &completion() { return comp_; }

private:
    struct CopyArgs {
        uint8_t *dst;
        const uint8_t *src;
        size_t length;
    };
    static size_t pack(void *dest, void *arg);
    static void unpack(void *arg, const void *data, size_t length);

    Entity &self_;
    uct_ep_h ep_;
    Completion comp_;
    std::deque<CopyArgs> get_args_;  // stable addresses until get_bcopy completes
};

}  // namespace uctest
