/**
 * probe.h - common prelude of the UCX feature probes.
 *
 * Each probes/<FEATURE>.c is one translation unit that compiles against a
 * UCX source tree exactly when that tree has FEATURE; the build compiles every
 * probe against the tree it was given and defines GDR_UCX_HAVE_<FEATURE> in
 * gdr_ucx_features.h for those that compile (cmake/GdrUcxFeatures.cmake).
 * Probes test the shape UCX has (a member, a signature), never a version
 * number: vendor stacks backport and patch, and a shape does not lie.
 */
#ifndef GDR_UCX_PROBE_H_
#define GDR_UCX_PROBE_H_

#include "config.h"

#include <uct/base/uct_component.h>
#include <uct/base/uct_iface.h>
#include <uct/base/uct_md.h>
#include <ucs/datastruct/mpool.h>
#include <ucs/memory/rcache.h>

/* _expr (not evaluated) has exactly type _type */
#define GDR_PROBE_TYPE(_expr, _type)                                       \
    _Static_assert(__builtin_types_compatible_p(__typeof__(_expr), _type), \
                   #_expr " is not " #_type)

/* struct _struct has a member _member */
#define GDR_PROBE_MEMBER(_struct, _member) \
    _Static_assert(sizeof(((_struct *)0)->_member) > 0, #_struct "." #_member)

#endif
