/**
 * gdr_iface_mpool.c - the iface's memory pools: bounce buffers (registered, for bcopy, AM
 * headers and atomic results), ops without a buffer, and receive buffers (registered, laid out
 * for UCP's headroom and the iface params' AM alignment, bounded by UCX_GDR_RX_MAX_BUFS).
 */
#include "gdr_iface_mpool.h"

#include <ucs/debug/log.h>
#include <ucs/sys/sys.h>

#include <string.h>

typedef struct gdr_mpool_chunk {
    struct ibv_mr *mr;
} UCS_V_ALIGNED(UCS_SYS_CACHE_LINE_SIZE) gdr_mpool_chunk_t;

static gdr_iface_t *gdr_iface_of_mpool(ucs_mpool_t *mp)
{
    return *(gdr_iface_t **)ucs_mpool_priv(mp);
}

static ucs_status_t
gdr_mpool_chunk_alloc(ucs_mpool_t *mp, size_t *size_p, void **chunk_p)
{
    gdr_iface_t *iface = gdr_iface_of_mpool(mp);
    size_t size        = ucs_align_up(*size_p + sizeof(gdr_mpool_chunk_t),
                                      ucs_get_page_size());
    gdr_mpool_chunk_t *chunk;

    if (posix_memalign((void **)&chunk, ucs_get_page_size(), size) != 0) {
        return UCS_ERR_NO_MEMORY;
    }
    chunk->mr = ibv_reg_mr(iface->dev->pd, chunk, size, IBV_ACCESS_LOCAL_WRITE);
    if (chunk->mr == NULL) {
        ucs_error("gdr_rc: ibv_reg_mr(%s, %zu bytes) for bounce buffers "
                  "failed: %m",
                  iface->dev->name, size);
        free(chunk);
        return UCS_ERR_IO_ERROR;
    }
    *size_p  = size - sizeof(*chunk);
    *chunk_p = chunk + 1;
    return UCS_OK;
}

static void gdr_mpool_chunk_release(ucs_mpool_t *mp, void *ptr)
{
    gdr_mpool_chunk_t *chunk = (gdr_mpool_chunk_t *)ptr - 1;

    ibv_dereg_mr(chunk->mr);
    free(chunk);
}

static void gdr_tx_desc_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    ((gdr_tx_op_t *)obj)->lkey = ((gdr_mpool_chunk_t *)chunk - 1)->mr->lkey;
}

static void gdr_rx_desc_init(ucs_mpool_t *mp, void *obj, void *chunk)
{
    gdr_iface_t *iface  = gdr_iface_of_mpool(mp);
    gdr_rx_desc_t *desc = obj;

    desc->lkey    = ((gdr_mpool_chunk_t *)chunk - 1)->mr->lkey;
    desc->release = &iface->rx.release_desc;
}

static ucs_mpool_ops_t gdr_tx_desc_mpool_ops = {
        .chunk_alloc   = gdr_mpool_chunk_alloc,
        .chunk_release = gdr_mpool_chunk_release,
        .obj_init      = gdr_tx_desc_init,
        .obj_cleanup   = NULL,
        .obj_str       = NULL};

static ucs_mpool_ops_t gdr_rx_desc_mpool_ops = {
        .chunk_alloc   = gdr_mpool_chunk_alloc,
        .chunk_release = gdr_mpool_chunk_release,
        .obj_init      = gdr_rx_desc_init,
        .obj_cleanup   = NULL,
        .obj_str       = NULL};

static ucs_mpool_ops_t gdr_op_mpool_ops = {
        .chunk_alloc   = ucs_mpool_chunk_malloc,
        .chunk_release = ucs_mpool_chunk_free,
        .obj_init      = NULL,
        .obj_cleanup   = NULL,
        .obj_str       = NULL};

static ucs_status_t gdr_iface_mpool_init(gdr_iface_t *iface, ucs_mpool_t *mp,
                                         size_t elem_size, size_t align_offset,
                                         size_t alignment, unsigned max_elems,
                                         ucs_mpool_ops_t *ops, const char *name)
{
    ucs_status_t status;

    status = gdr_compat_mpool_init(mp, sizeof(gdr_iface_t *), elem_size,
                                   align_offset, alignment,
                                   ucs_min(128, max_elems), max_elems, ops,
                                   name);
    if (status == UCS_OK) {
        *(gdr_iface_t **)ucs_mpool_priv(mp) = iface;
    }
    return status;
}

/* uct_iface_release_desc() of a receive buffer the user kept: back to the pool, from
 * which the SRQ is refilled */
static void gdr_iface_release_desc(uct_recv_desc_t *self, void *desc)
{
    ucs_mpool_put_inline((gdr_rx_desc_t *)desc - 1);
}

/* Refill the SRQ from the receive pool; batched so that one ibv_post_srq_recv
 * covers many buffers.  Here, beside the pool: a descriptor may sit where
 * am_alignment/am_align_offset put its payload, misaligned for its own header
 * (the sanitized build skips the alignment check in this file for that) */
void gdr_iface_post_recv(gdr_iface_t *iface)
{
    struct ibv_recv_wr wrs[32], *bad_wr;
    struct ibv_sge sges[32];
    gdr_rx_desc_t *desc;
    unsigned count;
    int ret;

    iface->rx.starved = 0;
    while (iface->rx.available > 0) {
        for (count = 0; (count < ucs_static_array_size(wrs)) &&
                        (count < iface->rx.available);
             ++count) {
            desc = ucs_mpool_get_inline(&iface->rx.mp);
            if (desc == NULL) {
                /* every buffer is posted or held by the user (RX_MAX_BUFS):
                 * progress retries until the user releases some */
                iface->rx.starved = 1;
                break;
            }
            sges[count].addr   = (uintptr_t)gdr_rx_desc_payload(iface, desc);
            sges[count].length = iface->seg_size;
            sges[count].lkey   = desc->lkey;
            wrs[count].wr_id   = (uintptr_t)desc;
            wrs[count].sg_list = &sges[count];
            wrs[count].num_sge = 1;
            wrs[count].next    = &wrs[count + 1];
        }
        if (count == 0) {
            return;
        }
        wrs[count - 1].next = NULL;
        ret                 = ibv_post_srq_recv(iface->srq, wrs, &bad_wr);
        if (ret != 0) {
            ucs_error("gdr_rc: ibv_post_srq_recv failed: %s", strerror(ret));
            for (; bad_wr != NULL; bad_wr = bad_wr->next) {
                ucs_mpool_put_inline((void *)bad_wr->wr_id);
                --count;
            }
            iface->rx.available -= count;
            return;
        }
        iface->rx.available -= count;
    }
}

ucs_status_t gdr_iface_mpools_init(gdr_iface_t *iface,
                                   const uct_iface_params_t *params,
                                   const gdr_iface_config_t *config)
{
    size_t rx_align, rx_align_offset;
    ucs_status_t status;

    status = gdr_iface_mpool_init(iface, &iface->tx.desc_mp,
                                  sizeof(gdr_tx_op_t) + iface->seg_size, 0,
                                  UCS_SYS_CACHE_LINE_SIZE, UINT_MAX,
                                  &gdr_tx_desc_mpool_ops, "gdr_tx_desc");
    if (status != UCS_OK) {
        goto err;
    }
    status = gdr_iface_mpool_init(iface, &iface->tx.op_mp, sizeof(gdr_tx_op_t),
                                  0, UCS_SYS_CACHE_LINE_SIZE, UINT_MAX,
                                  &gdr_op_mpool_ops, "gdr_tx_op");
    if (status != UCS_OK) {
        goto err_cleanup_desc_mp;
    }
    /* The payload (after our header and the user's headroom) lands where
     * iface params am_alignment/am_align_offset ask; by default the
     * descriptor starts on a cache line.  Invalid values are refused here
     * (by UCX's helper and ucs_mpool_init) with UCS_ERR_INVALID_PARAM. */
    status = uct_iface_param_am_alignment(params, iface->seg_size, 0,
                                          sizeof(gdr_rx_desc_t) +
                                                  iface->rx.headroom,
                                          &rx_align, &rx_align_offset);
    if (status != UCS_OK) {
        goto err_cleanup_op_mp;
    }
    status = gdr_iface_mpool_init(iface, &iface->rx.mp,
                                  sizeof(gdr_rx_desc_t) + iface->rx.headroom +
                                          iface->seg_size,
                                  rx_align_offset, rx_align,
                                  (config->rx_max_bufs == UCS_ULUNITS_INF) ?
                                          UINT_MAX :
                                          config->rx_max_bufs,
                                  &gdr_rx_desc_mpool_ops, "gdr_rx_desc");
    if (status != UCS_OK) {
        goto err_cleanup_op_mp;
    }
    iface->rx.release_desc.cb = gdr_iface_release_desc;
    return UCS_OK;

err_cleanup_op_mp:
    ucs_mpool_cleanup(&iface->tx.op_mp, 0);
err_cleanup_desc_mp:
    ucs_mpool_cleanup(&iface->tx.desc_mp, 0);
err:
    return status;
}

void gdr_iface_mpools_cleanup(gdr_iface_t *iface, int leak_check)
{
    ucs_mpool_cleanup(&iface->rx.mp, 0);
    ucs_mpool_cleanup(&iface->tx.op_mp, leak_check);
    ucs_mpool_cleanup(&iface->tx.desc_mp, leak_check);
}
