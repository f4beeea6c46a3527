/**
 * gdr_md.h - the memory domains of component "gdr": one md per usable verbs device, named
 * GDR_MD_NAME_PREFIX + the device's name ("gdr_mlx5_0"), as UCX's ib md has one per device
 * (gdr_md.c), and the md resources (gdr_md_query_resources).
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

/* md names: the prefix, then the verbs device's name.  The prefix keeps them apart from the
 * ib md's names of the same devices in `ucx_info -d` and UCP's logs; a device whose md name
 * would not fit in UCT_MD_NAME_MAX is not offered (gdr_md_query_resources says so). */
#define GDR_MD_NAME_PREFIX GDR_COMPONENT_NAME "_"

typedef struct gdr_md {
    uct_md_t super;
    gdr_device_t dev; /* the one verbs device of this md */
    uint64_t reg_mem_types;
    uint64_t detect_mem_types;
    gdr_cuda_config_t cuda_config;
    unsigned cuda_methods; /* GDR_CUDA_METHOD_BIT()s that work on dev */
    ucs_rcache_t *rcache; /* NULL: every mem_reg registers */
    ucs_linear_func_t reg_cost;
} gdr_md_t;

/** A registration: one MR on the md's device. */
typedef struct gdr_memh {
    void *address;
    size_t length;
    ucs_memory_type_t mem_type;
    int access; /* IBV_ACCESS_* of the MR */
    uint8_t cached; /* lives in a gdr_rcache_region_t */
    uint8_t allocated; /* by mem_alloc: mem_free unmaps it */
    struct ibv_mr *mr;
} gdr_memh_t;

/* A cached registration */
typedef struct gdr_rcache_region {
    ucs_rcache_region_t super;
    uint64_t cuda_buffer_id; /* 0: host memory */
    gdr_memh_t memh;
} gdr_rcache_region_t;

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

/** Packed rkey on the wire: the one rkey of the packing md's MR. */
typedef struct UCS_S_PACKED gdr_packed_rkey {
    uint8_t magic; /* GDR_RKEY_MAGIC: reject foreign buffers */
    uint32_t rkey;
} gdr_packed_rkey_t;

/* 0xd7 was the layout of one md over several devices (a count, then a key per
 * device): a peer still sending it is refused, not misread */
#define GDR_RKEY_MAGIC 0xd8

/*
 * uct_rkey_t of a gdr md: the MR's 32-bit rkey, as rc_verbs puts the rkey
 * itself into uct_rkey_t, so that rkey_unpack allocates nothing, ever.  Bit 32
 * is set so that no key reads as 0 or UCT_INVALID_RKEY, which the data path
 * takes for "no key" (an rkey may be 0 on some devices).
 */
#define GDR_RKEY_VALID UCS_BIT(32)

static UCS_F_ALWAYS_INLINE uct_rkey_t gdr_rkey_make(uint32_t rkey)
{
    return GDR_RKEY_VALID | rkey;
}

static UCS_F_ALWAYS_INLINE uint32_t gdr_rkey_value(uct_rkey_t rkey)
{
    return (uint32_t)rkey;
}

extern ucs_config_field_t gdr_md_config_table[];

/*
 * Version-neutral entry points of md "gdr": the component (gdr_component.c) puts them into
 * uct_md_ops_t and uct_component_t in the shape the UCX built against wants.
 */

/* md_open: @a ops is the md's ops table, the component's */
ucs_status_t gdr_md_open(uct_md_ops_t *ops, uct_component_t *component,
                         const char *md_name, const uct_md_config_t *config,
                         uct_md_h *md_p);
void gdr_md_close(uct_md_h md);
void gdr_md_query_caps(uct_md_h md, gdr_compat_md_caps_t *caps);
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
                             gdr_compat_mem_info_t *info);
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

/* The md name of verbs device @a dev_name, GDR_MD_NAME_PREFIX + @a dev_name, into
 * name[max] (cut to fit, always terminated).  Returns 1 when it fits whole, 0 when it
 * was cut: with max = UCT_MD_NAME_MAX, whether the device can have an md at all. */
int gdr_md_name_of(const char *dev_name, char *name, size_t max);

/* uct_component_t.query_md_resources: one md per verbs device with an active
 * port, named GDR_MD_NAME_PREFIX + the device's name */
ucs_status_t gdr_md_query_resources(uct_component_t *component,
                                    uct_md_resource_desc_t **resources_p,
                                    unsigned *num_resources_p);


#endif
