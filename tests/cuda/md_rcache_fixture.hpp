// What the md rcache tests share: a ucs_rcache of md gdr's region type (gdr_rcache_region_t) whose
// registration the test provides, so that gdr_rcache_get_usable() -- the md's own lookup -- runs
// without an HCA, and a fixture that counts the registrations and checks that each was undone.
#pragma once

extern "C" {
#include "gdr_md.h"
}

#include <gtest/gtest.h>

#include <climits>
#include <cstdint>

namespace gdr_test {

/// A ucs_rcache of gdr_rcache_region_t over @a ops with @a context, page-aligned, unbounded, no
/// UCM events (no test frees under it behind its back: CUDA frees raise none without UCM's CUDA
/// hooks anyway) and no PFN check (device VAs have no host PFNs).
inline ucs_status_t create_md_rcache(const ucs_rcache_ops_t *ops, void *context, const char *name,
                                     size_t page, ucs_rcache_t **rcache_p)
{
    ucs_rcache_params_t params{};
    params.region_struct_size = sizeof(gdr_rcache_region_t);
    gdr_compat_rcache_params_align(&params, page, page);
    params.ucm_events     = 0;
    params.ops            = ops;
    params.context        = context;
    params.flags          = UCS_RCACHE_FLAG_NO_PFN_CHECK;
    params.max_regions    = ULONG_MAX;
    params.max_size       = SIZE_MAX;
    params.max_unreleased = SIZE_MAX;
    return ucs_rcache_create(&params, name, nullptr, rcache_p);
}

/// What the fixture counts: the registrations that succeeded and those undone.
struct registration_counts {
    int registered   = 0;
    int deregistered = 0;
};

/**
 * A test of the md's lookup over create_md_rcache() with the test's own registration.  Registrar
 * is a registration_counts with
 *   ucs_status_t register_region(gdr_rcache_region_t *region, void *arg): fills the region in
 *     (arg: the lookup's gdr_rcache_reg_arg_t; null from a raw ucs_rcache_get()),
 *   void describe(const gdr_rcache_region_t *region, char *buf, size_t max): ucs's region dump;
 * the fixture does the counting.  The derived SetUp calls create_rcache() once what a
 * registration needs exists; TearDown destroys the cache first and expects every registration
 * undone.
 */
template <class Registrar> class MdRcacheFixture : public ::testing::Test {
protected:
    ucs_status_t create_rcache(const char *name, size_t page)
    {
        return create_md_rcache(&kOps, &registrar_, name, page, &rcache_);
    }

    void TearDown() override
    {
        if (rcache_ != nullptr) {
            ucs_rcache_destroy(rcache_);
            EXPECT_EQ(registrar_.registered, registrar_.deregistered);
        }
    }

    ucs_rcache_t *rcache_ = nullptr;
    Registrar registrar_;

private:
    static ucs_status_t register_region(void *context, ucs_rcache_t *, void *arg,
                                        ucs_rcache_region_t *region, uint16_t)
    {
        auto *registrar     = static_cast<Registrar *>(context);
        ucs_status_t status = registrar->register_region(ucs_derived_of(region,
                                                                        gdr_rcache_region_t),
                                                         arg);
        if (status == UCS_OK) {
            ++registrar->registered;
        }
        return status;
    }

    static void deregister_region(void *context, ucs_rcache_t *, ucs_rcache_region_t *)
    {
        ++static_cast<Registrar *>(context)->deregistered;
    }

    static void dump_region(void *context, ucs_rcache_t *, ucs_rcache_region_t *region, char *buf,
                            size_t max)
    {
        static_cast<Registrar *>(context)->describe(ucs_derived_of(region, gdr_rcache_region_t),
                                                    buf, max);
    }

    static void merge_region(void *, ucs_rcache_t *, void *, ucs_rcache_region_t *) {}

    static inline const ucs_rcache_ops_t kOps = [] {
        ucs_rcache_ops_t ops{};
        ops.mem_reg     = register_region;
        ops.mem_dereg   = deregister_region;
        ops.dump_region = dump_region;
        gdr_compat_rcache_ops_merge(&ops, merge_region);  // where UCX calls one
        return ops;
    }();
};

}  // namespace gdr_test
