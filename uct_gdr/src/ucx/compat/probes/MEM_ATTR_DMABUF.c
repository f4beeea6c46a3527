/* memory queries can ask for a dma-buf fd (UCT_MD_MEM_ATTR_FIELD_DMABUF_FD; not in 1.13.1; in 1.16.0 and later) */
#include "probe.h"
static const int probe = UCT_MD_MEM_ATTR_FIELD_DMABUF_FD;
