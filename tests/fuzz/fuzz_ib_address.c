/*
 * Fuzz target ib_address: gdr_rc's device address parser (gdr_ib_address.c),
 * which reads what a peer packed into its worker address, or what rdmacm built
 * in client-server wireup.
 *
 * The UCT API hands iface_is_reachable()/ep_connect_to_ep() a device address
 * without its length (UCP checked that dev_addr_len bytes are there), so the
 * parser's promise is: it reads at most GDR_IB_ADDRESS_MAX_LEN bytes, says in
 * info.size how many, and its verdict depends on no byte past those.  The input
 * (truncated or zero-padded) fills a heap block of exactly that size, so that
 * ASan, under libFuzzer, sees a read past it; then the bytes after info.size
 * are rewritten to check that nothing there mattered.
 */
#include "fuzz_check.h"

#include "gdr_ib_address.h"

#include <string.h>

static void exercise(const gdr_ib_address_info_t *info, const uint8_t *data, size_t size)
{
    gdr_ib_address_port_t port;
    union ibv_gid gid;

    /* our port, also from the input: the predicates must answer, not crash */
    memset(&port, 0, sizeof(port));
    port.link_layer   = (size > 0 && (data[0] & 1)) ? IBV_LINK_LAYER_ETHERNET
                                                    : IBV_LINK_LAYER_INFINIBAND;
    port.grh_required = (size > 0) && (data[0] & 2);
    memcpy(&gid, &info->gid, sizeof(gid));
    port.gid = gid;
    port.lid = info->lid;
    (void)gdr_ib_address_reachable(&port, info);
    (void)gdr_ib_address_names_port(info, port.lid, &gid);
    (void)gdr_ib_address_names_port(info, port.lid, NULL);
    (void)gdr_ib_gid_is_v4_mapped(&info->gid);
}

int LLVMFuzzerTestOneInput(const uint8_t *data, size_t size)
{
    const size_t len = GDR_IB_ADDRESS_MAX_LEN;
    uint8_t *buf     = malloc(len);
    gdr_ib_address_info_t info, again;
    int rc;

    FUZZ_CHECK(buf != NULL);
    memset(buf, 0, len);
    memcpy(buf, data, (size < len) ? size : len);
    rc = gdr_ib_address_unpack(buf, &info);
    if (rc == 0) {
        FUZZ_CHECK(info.size >= 1 && info.size <= len);
        FUZZ_CHECK(info.has_pkey || info.pkey == 0xffff); /* UCX's default */
        exercise(&info, data, size);
        /* nothing past info.size may change the verdict or a field */
        memset(buf + info.size, 0xa5, len - info.size);
        FUZZ_CHECK(gdr_ib_address_unpack(buf, &again) == 0);
        FUZZ_CHECK(memcmp(&info, &again, sizeof(info)) == 0);
    } else {
        FUZZ_CHECK(rc == -1);
    }
    FUZZ_CHECK(gdr_ib_address_unpack(NULL, &info) == -1);
    free(buf);
    return 0;
}
