/* mem_reg takes uct_md_mem_reg_params_t instead of flags (not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
GDR_PROBE_TYPE(((uct_md_ops_t *)0)->mem_reg,
               ucs_status_t (*)(uct_md_h, void *, size_t,
                                const uct_md_mem_reg_params_t *, uct_mem_h *));
