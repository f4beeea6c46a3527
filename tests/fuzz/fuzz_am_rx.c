/*
 * Fuzz target am_rx: gdr_rc's receive side of an active message (gdr_am_rx.h), which
 * takes the AM id from the immediate data and the length from byte_len of a
 * completion whose contents a peer chose.
 *
 * The input is a completion and the message: status (1 byte, any value, not only
 * the enum's), wc_flags (1), imm_data (4, as on the wire), then the payload.  The
 * HCA is modelled as verbs specifies it: the payload lands in a posted buffer of
 * kSegSize bytes and byte_len is its length, and a payload longer than the buffer
 * completes with IBV_WC_LOC_LEN_ERR instead.  Then the verdict must be exactly the
 * specified one, and a delivered message goes to a handler table of exactly
 * UCT_AM_ID_MAX entries that reads all byte_len bytes of a buffer of exactly
 * kSegSize: under libFuzzer's ASan an id or a length past either is a report.
 */
#include "fuzz_check.h"

#include "gdr_am_rx.h"

#include <string.h>

enum {
    kSegSize = 256,
    kHeader  = 6
};

static uint32_t sum_handler(const uint8_t *payload, uint32_t length)
{
    uint32_t sum = 0, i;

    for (i = 0; i < length; ++i) {
        sum = sum * 31 + payload[i];
    }
    return sum;
}

typedef uint32_t (*am_handler_t)(const uint8_t *, uint32_t);

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    am_handler_t *handlers = malloc(UCT_AM_ID_MAX * sizeof(*handlers));
    uint8_t *buffer        = malloc(kSegSize);
    const size_t length    = (size > kHeader) ? size - kHeader : 0;
    gdr_am_rx_verdict_t verdict;
    struct ibv_wc wc;
    uint32_t imm, am_id = UINT32_MAX, i;

    FUZZ_CHECK(handlers != NULL && buffer != NULL);
    for (i = 0; i < UCT_AM_ID_MAX; ++i) {
        handlers[i] = sum_handler;
    }
    memset(&wc, 0, sizeof(wc));
    if (size >= kHeader) {
        wc.status   = (enum ibv_wc_status)data[0];
        wc.wc_flags = data[1];
        memcpy(&wc.imm_data, data + 2, sizeof(wc.imm_data));
    }
    /* the HCA: a payload that does not fit the posted buffer is not placed */
    if ((wc.status == IBV_WC_SUCCESS) && (length > kSegSize)) {
        wc.status = IBV_WC_LOC_LEN_ERR;
    }
    if (wc.status == IBV_WC_SUCCESS) {
        wc.byte_len = (uint32_t)length;
        memcpy(buffer, data + kHeader, length);
    }

    verdict = gdr_am_rx_parse(&wc, &am_id);
    imm     = ntohl(wc.imm_data);
    if (wc.status != IBV_WC_SUCCESS) {
        FUZZ_CHECK(verdict == GDR_AM_RX_FAILED);
    } else if (!(wc.wc_flags & IBV_WC_WITH_IMM) || (imm >= UCT_AM_ID_MAX)) {
        FUZZ_CHECK(verdict == GDR_AM_RX_BAD_ID);
        FUZZ_CHECK(am_id == imm); /* what the drop's log prints */
    } else {
        FUZZ_CHECK(verdict == GDR_AM_RX_DELIVER);
        FUZZ_CHECK(am_id == imm);
        FUZZ_CHECK(wc.byte_len <= kSegSize);
        FUZZ_CHECK(handlers[am_id](buffer, wc.byte_len) ==
                   sum_handler(data + kHeader, (uint32_t)length));
    }
    free(buffer);
    free(handlers);
    return 0;
}
