/**
 * gdr_md.h - memory domain "gdr": one md over every usable verbs device (gdr_md.c), and
 * those devices as the transport's devices (gdr_device.c).
 */
#ifndef GDR_MD_H_
#define GDR_MD_H_

#include "gdr_uct.h"
#include "../verbs/gdr_verbs.h"
#include "../cuda/gdr_cuda.h"

#include <ucs/memory/rcache.h>
#include <ucs/sys/math.h>


typedef struct gdr_md_config {
    uct_md_config_t super;
    ucs_ternary_auto_value_t gpu_direct_rdma; /* UCX_GDR_GPU_DIRECT_RDMA */
    ucs_ternary_auto_value_t dmabuf; /* UCX_GDR_DMABUF */
    ucs_ternary_auto_value_t rcache_enable; /* UCX_GDR_RCACHE */
    gdr_compat_rcache_config_t rcache; /* UCX_GDR_RCACHE_* */
} gdr_md_config_t;

typedef struct gdr_md {
    uct_md_t super;
    unsigned num_devices;
    gdr_device_t *devices; /* [num_devices], index = "device index" */
    uint64_t reg_mem_types;
    uint64_t detect_mem_types;
    size_t rkey_packed_size;
    gdr_cuda_config_t cuda_config;
    unsigned *cuda_methods; /* [num_devices]: GDR_CUDA_METHOD_BIT()s that work */
    ucs_rcache_t *rcache; /* NULL: every mem_reg registers */
    ucs_linear_func_t reg_cost;
} gdr_md_t;

/** A registration: one MR per md device, in md device order. */
typedef struct gdr_memh {
    void *address;
    size_t length;
    ucs_memory_type_t mem_type;
    int access; /* IBV_ACCESS_* of every MR */
    uint8_t cached; /* lives in a gdr_rcache_region_t */
    uint8_t allocated; /* by mem_alloc: mem_free unmaps it */
    unsigned num_mrs;
    struct ibv_mr *mrs[];
} gdr_memh_t;

/* A cached registration; memh must be last (flexible array) */
typedef struct gdr_rcache_region {
    ucs_rcache_region_t super;
    uint64_t cuda_buffer_id; /* 0: host memory */
    gdr_memh_t memh;
} gdr_rcache_region_t;

/** Packed rkey on the wire: the rkeys of every device of the packing md. */
/* What a registration through the rcache asks for: ucs_rcache_get()'s `arg`,
 * handed to the md's mem_reg and merge callbacks */
typedef struct gdr_rcache_reg_arg {
    uint64_t flags; /* UCT_MD_MEM_* of the request */
    int access; /* what the new registration must allow */
} gdr_rcache_reg_arg_t;

/* gdr_md_rcache.c: a cached region serves a request that asks for @a access
 * unless it allows less, or its CUDA allocation was freed (and maybe
 * reallocated at the same address) */
int gdr_rcache_region_usable(const gdr_rcache_region_t *region, int access);

/* The region of @a rcache for [address, address+length) that is usable for
 * arg->access, registering (again) where the cached one is not; the caller puts
 * it with ucs_rcache_region_put().  @a arg->access may grow (a replaced region's
 * rights are kept). */
ucs_status_t gdr_rcache_get_usable(ucs_rcache_t *rcache, void *address,
                                   size_t length, gdr_rcache_reg_arg_t *arg,
                                   gdr_rcache_region_t **region_p);

typedef struct UCS_S_PACKED gdr_packed_rkey {
    uint8_t magic; /* GDR_RKEY_MAGIC: reject foreign buffers */
    uint8_t count;
    uint32_t rkeys[];
} gdr_packed_rkey_t;

#define GDR_RKEY_MAGIC 0xd7

/* The most rkeys a packed rkey holds.  UCP carries each md's packed rkey
 * behind a one-byte length (ucp_rkey_pack) and hands rkey_unpack() no length,
 * so a count read from the wire is trusted only up to what fits in UINT8_MAX
 * bytes: beyond that it is garbage, and reading it would run past the buffer. */
#define GDR_RKEY_MAX_COUNT \
    ((UINT8_MAX - sizeof(gdr_packed_rkey_t)) / sizeof(uint32_t))

/** Unpacked rkey of more devices than uct_rkey_t holds (GDR_RKEY_INDIRECT). */
typedef struct gdr_rkey {
    uint32_t count;
    uint32_t rkeys[];
} gdr_rkey_t;

/*
 * uct_rkey_t of md "gdr".  As UCX's rc_verbs puts the rkey itself into
 * uct_rkey_t, rkey_unpack allocates nothing when the rkeys fit in 64 bits:
 *   bit 63 clear (inline): bit 62 set (never 0 nor UCT_INVALID_RKEY), bit 61:
 *     a second device, bits 32..60 its rkey (< 2^29), bits 0..31 device 0's;
 *   bit 63 set: bits 0..62 point to a gdr_rkey_t (more than two devices, or a
 *     second rkey too large), which rkey_release frees.
 * User-space pointers are below 2^63 on every Linux ABI, so bit 63 is free.
 */
#define GDR_RKEY_INDIRECT   UCS_BIT(63)
#define GDR_RKEY_INLINE     UCS_BIT(62)
#define GDR_RKEY_SECOND     UCS_BIT(61)
#define GDR_RKEY_SECOND_MAX UCS_MASK(29)

/* Number of devices an unpacked rkey has keys for */
static UCS_F_ALWAYS_INLINE unsigned gdr_rkey_count(uct_rkey_t rkey)
{
    if (rkey & GDR_RKEY_INDIRECT) {
        return ((const gdr_rkey_t *)(uintptr_t)(rkey & ~GDR_RKEY_INDIRECT))
                ->count;
    }
    return (rkey & GDR_RKEY_SECOND) ? 2 : 1;
}

/* The rkey of device @a dev_index (< gdr_rkey_count) */
static UCS_F_ALWAYS_INLINE uint32_t gdr_rkey_at(uct_rkey_t rkey,
                                                unsigned dev_index)
{
    if (ucs_likely(!(rkey & GDR_RKEY_INDIRECT))) {
        return (dev_index == 0) ?
                       (uint32_t)rkey :
                       (uint32_t)((rkey >> 32) & GDR_RKEY_SECOND_MAX);
    }
    return ((const gdr_rkey_t *)(uintptr_t)(rkey & ~GDR_RKEY_INDIRECT))
            ->rkeys[dev_index];
}

extern ucs_config_field_t gdr_md_config_table[];

/*
 * Version-neutral entry points of md "gdr" (compat/gdr_compat.c puts them into
 * uct_md_ops_t and uct_component_t in the shape the UCX built against wants).
 */

/* What the md can do, whichever attr struct UCX asks it in */
typedef struct gdr_md_caps {
    uint64_t flags; /* UCT_MD_FLAG_* */
    size_t max_alloc;
    size_t max_reg;
    uint64_t reg_mem_types;
    uint64_t alloc_mem_types;
    uint64_t detect_mem_types;
    uint64_t access_mem_types;
    size_t rkey_packed_size;
    ucs_linear_func_t reg_cost;
} gdr_md_caps_t;

/* What the md knows of a (CUDA) buffer */
typedef struct gdr_md_mem_info {
    ucs_memory_type_t mem_type;
    ucs_sys_device_t sys_dev; /* the GPU; UCS_SYS_DEVICE_ID_UNKNOWN */
    void *base_address; /* of the whole allocation */
    size_t alloc_length;
} gdr_md_mem_info_t;

ucs_status_t gdr_md_open(uct_component_t *component, const char *md_name,
                         const uct_md_config_t *config, uct_md_h *md_p);
void gdr_md_close(uct_md_h md);
void gdr_md_query_caps(uct_md_h md, gdr_md_caps_t *caps);
ucs_status_t gdr_md_mem_alloc(uct_md_h md, size_t *length_p, void **address_p,
                              ucs_memory_type_t mem_type, unsigned flags,
                              const char *alloc_name, uct_mem_h *memh_p);
ucs_status_t gdr_md_mem_free(uct_md_h md, uct_mem_h memh);
ucs_status_t gdr_md_mem_advise(uct_md_h md, uct_mem_h memh, void *addr,
                               size_t length, unsigned advice);
ucs_status_t gdr_md_mem_reg(uct_md_h md, void *address, size_t length,
                            uint64_t flags, uct_mem_h *memh_p);
ucs_status_t
gdr_md_mem_dereg(uct_md_h md, const uct_md_mem_dereg_params_t *params);
ucs_status_t gdr_md_mem_info(uct_md_h md, const void *address, size_t length,
                             gdr_md_mem_info_t *info);
ucs_status_t gdr_md_detect_memory_type(uct_md_h md, const void *address,
                                       size_t length,
                                       ucs_memory_type_t *mem_type_p);
ucs_status_t gdr_md_mkey_pack(uct_md_h md, uct_mem_h memh, void *rkey_buffer);
ucs_status_t gdr_md_rkey_unpack(uct_component_t *component,
                                const void *rkey_buffer, uct_rkey_t *rkey_p,
                                void **handle_p);
ucs_status_t
gdr_md_rkey_release(uct_component_t *component, uct_rkey_t rkey, void *handle);
/* <0, 0, >0 as rkey1 orders before, with, after rkey2 (same keys: 0) */
int gdr_md_rkey_compare(uct_rkey_t rkey1, uct_rkey_t rkey2);


/*
 * The md's devices as the transport's devices (gdr_device.c): every active port of every
 * device is one, named "<device>:<port>" as UCX's ib transports name theirs.
 */

/* uct_tl_t.query_devices of gdr_rc */
ucs_status_t gdr_device_query_tl_devices(uct_md_h md,
                                         uct_tl_device_resource_t **devices_p,
                                         unsigned *num_devices_p);

/* "mlx5_0:1" -> the md's device index and the port number */
ucs_status_t gdr_device_find_port(const gdr_md_t *md, const char *dev_name,
                                  unsigned *dev_index_p, uint8_t *port_num_p);

#endif
