/* mem_alloc is told the system device to allocate on (not in 1.18.1; in 1.22.0) */
#include "probe.h"
GDR_PROBE_TYPE(((uct_md_ops_t *)0)->mem_alloc,
               ucs_status_t (*)(uct_md_h, size_t *, void **, ucs_memory_type_t,
                                ucs_sys_device_t, unsigned, const char *,
                                uct_mem_h *));
