#include "uct_ops.h"

#include <algorithm>
#include <cstring>
#include <stdexcept>

namespace uctest {

const std::vector<OpInfo> &all_ops()
{
    static const std::vector<OpInfo> ops = {
        {Op::PutShort, "put_short", UCT_IFACE_FLAG_PUT_SHORT},
        {Op::PutBcopy, "put_bcopy", UCT_IFACE_FLAG_PUT_BCOPY},
        {Op::PutZcopy, "put_zcopy", UCT_IFACE_FLAG_PUT_ZCOPY},
        {Op::GetShort, "get_short", UCT_IFACE_FLAG_GET_SHORT},
        {Op::GetBcopy, "get_bcopy", UCT_IFACE_FLAG_GET_BCOPY},
        {Op::GetZcopy, "get_zcopy", UCT_IFACE_FLAG_GET_ZCOPY},
        {Op::AmShort, "am_short", UCT_IFACE_FLAG_AM_SHORT},
        {Op::AmShortIov, "am_short_iov",
         UCT_IFACE_FLAG_AM_SHORT},  // UCP calls it for every AM_SHORT tl
        {Op::AmBcopy, "am_bcopy", UCT_IFACE_FLAG_AM_BCOPY},
        {Op::AmZcopy, "am_zcopy", UCT_IFACE_FLAG_AM_ZCOPY},
    };
    return ops;
}

const OpInfo &op_info(Op op)
{
    for (const auto &info : all_ops()) {
        if (info.op == op) {
            return info;
        }
    }
    throw std::logic_error("unknown op");
}

bool is_am(Op op)
{
    return op == Op::AmShort || op == Op::AmShortIov || op == Op::AmBcopy || op == Op::AmZcopy;
}
bool is_get(Op op)
{
    return op == Op::GetShort || op == Op::GetBcopy || op == Op::GetZcopy;
}

bool am_carries_header(const uct_iface_attr_t &attr, Op op)
{
    return op == Op::AmShort || (op == Op::AmZcopy && attr.cap.am.max_hdr >= sizeof(uint64_t));
}

size_t op_max_length(const uct_iface_attr_t &attr, Op op)
{
    const auto &c = attr.cap;
    switch (op) {
    case Op::PutShort:
        return c.put.max_short;
    case Op::PutBcopy:
        return c.put.max_bcopy;
    case Op::PutZcopy:
        return c.put.max_zcopy;
    case Op::GetShort:
        return c.get.max_short;
    case Op::GetBcopy:
        return c.get.max_bcopy;
    case Op::GetZcopy:
        return c.get.max_zcopy;
    case Op::AmShort:
        return c.am.max_short >= sizeof(uint64_t) ? c.am.max_short - sizeof(uint64_t) : 0;
    case Op::AmShortIov:
        return c.am.max_short;
    case Op::AmBcopy:
        return c.am.max_bcopy;
    case Op::AmZcopy:
        // rc_verbs checks header + payload against its segment; keep room for our header
        return c.am.max_zcopy - (am_carries_header(attr, op) ? sizeof(uint64_t) : 0);
    }
    return 0;
}

size_t op_min_length(const uct_iface_attr_t &attr, Op op)
{
    switch (op) {
    case Op::PutZcopy:
        return attr.cap.put.min_zcopy;
    case Op::GetZcopy:
        return attr.cap.get.min_zcopy;
    case Op::AmZcopy:
        return attr.cap.am.min_zcopy;
    default:
        return 0;
    }
}

// ---------------------------------------------------------------------------------------------

AmSink::AmSink(Entity &receiver, uint8_t id) : receiver_(receiver), id_(id)
{
    ucs_status_t st = uct_iface_set_am_handler(receiver.iface(), id, &AmSink::handler, this, 0);
    if (st != UCS_OK) {
        throw std::runtime_error("uct_iface_set_am_handler: " + status_name(st));
    }
}

AmSink::~AmSink()
{
    uct_iface_set_am_handler(receiver_.iface(), id_, nullptr, nullptr, 0);
}

ucs_status_t AmSink::handler(void *arg, void *data, size_t length, unsigned /*flags*/)
{
    auto *self        = static_cast<AmSink *>(arg);
    const auto *bytes = static_cast<const uint8_t *>(data);
    if (self->on_message) {
        self->on_message(bytes, length);
    }
    self->messages.emplace_back(bytes, bytes + length);
    self->bytes_ += length;
    return UCS_OK;  // copied: the transport may reuse its buffer
}

size_t Transfer::pack(void *dest, void *arg)
{
    auto *a = static_cast<CopyArgs *>(arg);
    std::memcpy(dest, a->src, a->length);
    return a->length;
}

void Transfer::unpack(void *arg, const void *data, size_t length)
{
    auto *a = static_cast<CopyArgs *>(arg);
    std::memcpy(a->dst, data, std::min(length, a->length));
}

ucs_status_t Transfer::post(Op op, RegisteredBuffer &local, size_t offset, size_t length,
                            uint64_t remote_addr, uct_rkey_t rkey, uint64_t seq)
{
    uint8_t *buf = local.data() + offset;
    uct_iov_t iov{buf, length, local.memh(), 0, 1};
    auto from_ssize = [length](ssize_t packed) {
        if (packed < 0) {
            return static_cast<ucs_status_t>(packed);
        }
        return static_cast<size_t>(packed) == length ? UCS_OK : UCS_ERR_MESSAGE_TRUNCATED;
    };
    ucs_status_t st = UCS_ERR_UNSUPPORTED;
    switch (op) {
    case Op::PutShort:
        return uct_ep_put_short(ep_, buf, static_cast<unsigned>(length), remote_addr, rkey);
    case Op::PutBcopy: {
        CopyArgs args{nullptr, buf, length};
        return from_ssize(uct_ep_put_bcopy(ep_, &Transfer::pack, &args, remote_addr, rkey));
    }
    case Op::PutZcopy:
        st = uct_ep_put_zcopy(ep_, &iov, 1, remote_addr, rkey, comp_.arm());
        break;
    case Op::GetShort:
        return uct_ep_get_short(ep_, buf, static_cast<unsigned>(length), remote_addr, rkey);
    case Op::GetBcopy:
        get_args_.push_back({buf, nullptr, length});
        st = uct_ep_get_bcopy(ep_, &Transfer::unpack, &get_args_.back(), length, remote_addr, rkey,
                              comp_.arm());
        break;
    case Op::GetZcopy:
        st = uct_ep_get_zcopy(ep_, &iov, 1, remote_addr, rkey, comp_.arm());
        break;
    case Op::AmShort:
        return uct_ep_am_short(ep_, kAmId, seq, buf, static_cast<unsigned>(length));
    case Op::AmShortIov: {
        // two entries where possible: UCP sends header and payload as separate iovs
        size_t first      = length / 2;
        uct_iov_t iovs[2] = {{buf, first, nullptr, 0, 1},
                             {buf + first, length - first, nullptr, 0, 1}};
        size_t count      = (length >= 2 && self_.attr().cap.am.max_iov >= 2) ? 2 : 1;
        if (count == 1) {
            iovs[0].length = length;
        }
        return uct_ep_am_short_iov(ep_, kAmId, iovs, count);
    }
    case Op::AmBcopy: {
        CopyArgs args{nullptr, buf, length};
        return from_ssize(uct_ep_am_bcopy(ep_, kAmId, &Transfer::pack, &args, 0));
    }
    case Op::AmZcopy: {
        bool with_header = am_carries_header(self_.attr(), op);
        st               = uct_ep_am_zcopy(ep_, kAmId, with_header ? &seq : nullptr,
                             with_header ? sizeof(seq) : 0, &iov, 1, 0, comp_.arm());
        break;
    }
    }
    comp_.posted(st);
    return st;
}

ucs_status_t Transfer::post_retry(Op op, RegisteredBuffer &local, size_t offset, size_t length,
                                  uint64_t remote_addr, uct_rkey_t rkey, uint64_t seq,
                                  std::initializer_list<Entity *> entities)
{
    return post_with_retry([&] { return post(op, local, offset, length, remote_addr, rkey, seq); },
                           entities);
}

}  // namespace uctest
