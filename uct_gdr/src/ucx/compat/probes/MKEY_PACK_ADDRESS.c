/* mkey_pack is told the address and length to pack (not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
GDR_PROBE_TYPE(((uct_md_ops_t *)0)->mkey_pack,
               ucs_status_t (*)(uct_md_h, uct_mem_h, void *, size_t,
                                const uct_md_mkey_pack_params_t *, void *));
