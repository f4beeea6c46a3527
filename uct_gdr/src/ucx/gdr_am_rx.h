/**
 * gdr_am_rx.h - what gdr_rc's receive side makes of a receive completion, whose contents a
 * peer chose: the active-message id travels as SEND_WITH_IMM's immediate data and the payload
 * length is the completion's byte_len.  A pure function, apart from the iface, so that
 * tests/fuzz/fuzz_am_rx.c can feed it any completion; gdr_iface_progress_rx() inlines it, so
 * the receive path does the same tests as before it was split out.
 */
#ifndef GDR_AM_RX_H_
#define GDR_AM_RX_H_

#include <uct/api/uct_def.h>
#include <ucs/sys/compiler_def.h>

#include <infiniband/verbs.h>
#include <arpa/inet.h>
#include <stdint.h>

/** What the receive side does with one receive completion */
typedef enum {
    /** An active message: the handler of *am_id_p gets wc->byte_len bytes of the buffer */
    GDR_AM_RX_DELIVER,
    /** The receive failed: flushed by a QP going to error, or a message longer than the posted
     *  buffer (the HCA completes that with IBV_WC_LOC_LEN_ERR, so byte_len of a successful
     *  receive never exceeds the segment size: the length needs no test of ours) */
    GDR_AM_RX_FAILED,
    /** No immediate data (not an AM of gdr_rc), or an id of UCT_AM_ID_MAX or more, which
     *  would index past the iface's handler table */
    GDR_AM_RX_BAD_ID
} gdr_am_rx_verdict_t;

/**
 * The verdict on @a wc, a completion of the receive queue; *am_id_p is set to the immediate
 * data in host order unless the receive failed (for the log of a bad id, too).
 */
static UCS_F_ALWAYS_INLINE gdr_am_rx_verdict_t
gdr_am_rx_parse(const struct ibv_wc *wc, uint32_t *am_id_p)
{
    if (ucs_unlikely(wc->status != IBV_WC_SUCCESS)) {
        return GDR_AM_RX_FAILED;
    }
    *am_id_p = ntohl(wc->imm_data);
    if (ucs_unlikely(!(wc->wc_flags & IBV_WC_WITH_IMM) ||
                     (*am_id_p >= UCT_AM_ID_MAX))) {
        return GDR_AM_RX_BAD_ID;
    }
    return GDR_AM_RX_DELIVER;
}

#endif
