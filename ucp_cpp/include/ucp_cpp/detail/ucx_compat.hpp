/**
 * @file detail/ucx_compat.hpp
 * @brief The one place where ucp_cpp knows UCX release numbers.
 *
 * Every behaviour of UCX that changed between the releases ucp_cpp runs on (1.13 and later) is
 * a function here, named for the behaviour; the rest of ucp_cpp asks these functions and never
 * compares versions itself.  Each entry cites the UCX source that decides it (paths relative to
 * the UCX source tree, function names; "1.13.1 vs 1.16.0" etc. are the release tags).
 *
 * Compile time or run time: UCX supports running a program on a libucp whose minor version is
 * the same as or higher than the headers it was built with (src/ucp/core/ucp_context.c:
 * ucp_version_check(), called by ucp_init_version(), warns "UCP API version is incompatible"
 * otherwise).  So when the headers (UCP_API_VERSION) are already at or past the release that
 * changed a behaviour, the new behaviour is decided at compile time and the old code path is
 * compiled out.  When the headers are older, the library loaded at run time may still be newer
 * (a binary built on Debian 12's 1.13 run with a UCX 1.16+ in LD_LIBRARY_PATH), so the answer
 * comes from ucp_get_version() (read once per process).
 *
 * Checked and found NOT to depend on the release (nothing to switch, kept here so nobody looks
 * again): see mm_transports_handle_peer_failure_by_default below.
 */
#pragma once

#include <ucp/api/ucp.h>
#include <ucp/api/ucp_version.h>

// ucp_cpp uses the *_nbx API, ucp_request_param_t::recv_info and UCP_OP_ATTR_FIELD_MEMORY_TYPE /
// MEMH, all present in 1.13 (src/ucp/api/ucp.h).
#if UCP_API_VERSION < UCP_VERSION(1, 13)
#error "ucp_cpp needs UCX >= 1.13"
#endif

namespace ucp_cpp::detail::ucx_compat {

/// major.minor of the libucp loaded in this process, encoded as UCP_VERSION() does.
inline unsigned runtime_version() noexcept
{
    static const unsigned version = [] {
        unsigned major = 0, minor = 0, release = 0;
        ucp_get_version(&major, &minor, &release);
        return unsigned(UCP_VERSION(major, minor));
    }();
    return version;
}

/// Whether the UCX in use is @p major.@p minor or later: a compile-time true when the headers
/// are (see the file comment), otherwise asked of the loaded library.
inline bool at_least(unsigned major, unsigned minor) noexcept
{
    const unsigned wanted = UCP_VERSION(major, minor);
    return unsigned(UCP_API_VERSION) >= wanted || runtime_version() >= wanted;
}

/**
 * ucp_tag_recv_nbx / ucp_tag_msg_recv_nbx write param->recv_info.tag_info (length, sender tag)
 * when the receive completes immediately (an unexpected eager message was already there).
 *
 * False before 1.16: 1.13.1 (and 1.14.1, 1.15.0) src/ucp/tag/tag_recv.c:
 * ucp_tag_recv_common() ends its eager-only fast path with ucp_request_imm_cmpl_param()
 * (src/ucp/core/ucp_request.inl), which returns UCS_OK without touching recv_info, although
 * ucp.h documents that it does.  The request path reports it (callback /
 * ucp_tag_recv_request_test), so the workaround is UCP_OP_ATTR_FLAG_NO_IMM_CMPL: always get a
 * request.  True from 1.16.0: commit df0798c005 "UCP/TAG: Populate tag_info on immediate
 * completion" (NEWS 1.16.0: "Fixed tag_recv return value on immediate completion"); 1.16.0
 * ucp_tag_recv_common() copies req->recv.tag.info to *param->recv_info.tag_info when status is
 * UCS_OK; 1.18.1 and 1.22.0 do the same at its out_completed label (which also covers the
 * multi-fragment and rendezvous matches that complete inside the call).
 */
inline bool fills_recv_info_on_immediate_completion() noexcept
{
    return at_least(1, 16);
}

/**
 * UCP runs its legacy protocols (UCX_PROTO_ENABLE=n) unless configured otherwise.
 *
 * True before 1.16: src/ucp/core/ucp_context.c ucp_context_config_table {"PROTO_ENABLE", "n",
 * "Experimental: enable new protocol selection logic"} in 1.13.1, 1.14.1, 1.15.0.  False from
 * 1.16.0: {"PROTO_ENABLE", "y", ...} in 1.16.0, 1.18.1, 1.22.0 (NEWS 1.16.0: "Enabled new
 * protocols infrastructure by default").  context reads the effective value from the
 * configuration; this is only its answer when the configuration cannot be printed.
 */
inline bool legacy_protocols_by_default() noexcept
{
    return !at_least(1, 16);
}

/**
 * Under the legacy protocols, ucp_put_nbx / ucp_get_nbx run UCP's v1 RMA path, which moves the
 * local buffer with the CPU whatever its memory type: a CUDA buffer segfaults inside UCP (seen on
 * an H200 with cuda_copy/cuda_ipc).  ucp_cpp then refuses RMA of CUDA buffers (rkey.hpp).
 *
 * True before 1.22: src/ucp/rma/rma_basic.c ucp_rma_basic_progress_put() passes the buffer to
 * uct_ep_put_short() or packs it with memcpy for uct_ep_put_bcopy(), and
 * ucp_rma_basic_progress_get() unpacks get_bcopy with memcpy, in 1.13.1, 1.16.0 and 1.18.1
 * (1.16.0/1.18.1 rma_send.c ucp_rma_request_init() record the memory type, but rma_basic.c still
 * copies with the CPU).
 * False from 1.22.0: commit eaf13be4af "UCP/RMA: removed proto-v1 RMA path" deleted
 * rma_basic.c; 1.22.0 src/ucp/rma/rma_send.c ucp_put_nbx() / ucp_get_nbx() return
 * UCS_ERR_UNSUPPORTED when !context->config.ext.proto_enable, so UCP refuses (any buffer) itself.
 */
inline bool legacy_rma_copies_with_cpu() noexcept
{
    return !at_least(1, 22);
}

/**
 * UCX itself loads out-of-tree UCT components (lib<framework>_<name>.so, no '_' in the name)
 * from the directories of UCX_PLUGIN_PATH and from its module directory.
 *
 * False before 1.22: 1.13.1 (and 1.16.0, 1.18.1, 1.21.0) src/ucs/sys/module.c
 * ucs_load_modules() dlopen()s only the names in the configure-time list <framework>_MODULES;
 * a plugin has to be loaded before ucp_init() by the application (ucp_cpp::load_plugin(),
 * LD_PRELOAD or linking).  True from 1.22.0: src/ucs/sys/module.c ucs_load_modules() also calls
 * ucs_module_load_from_dir() for every UCX_PLUGIN_PATH entry (src/ucs/config/global_opts.c
 * "PLUGIN_PATH") and the module directory (commit 49a0d4c1af; it was reverted on the 1.21
 * branch by df3934b3ea, so 1.21.0 does not have it).  load_plugin() stays right there: dlopen()
 * of the same file returns the same object, so the component registers once.
 */
inline bool loads_plugins_from_directories() noexcept
{
    return at_least(1, 22);
}

/**
 * Not release-dependent (1.13.1, 1.16.0, 1.18.1, 1.22.0 alike): the mm shared-memory transports
 * (posix, sysv, xpmem) advertise UCT_IFACE_FLAG_ERRHANDLE_PEER_FAILURE only with
 * UCX_MM_ERROR_HANDLING=y, default "n" (src/uct/sm/mm/base/mm_iface.c: uct_mm_iface_config_table
 * "ERROR_HANDLING", uct_mm_iface_t constructor's extra_cap_flags, uct_mm_iface_query()), and
 * UCP makes that flag mandatory for every lane of an endpoint with UCP_ERR_HANDLING_MODE_PEER
 * (src/ucp/wireup/select.c: ucp_wireup_fill_peer_err_criteria()).  So those transports are
 * unreachable under PEER mode in every release; cma (src/uct/sm/scopy/cma/cma_iface.c) has the
 * flag.  Hence endpoint_params / communicator_params::peer_error_handling = false for them.
 */
inline constexpr bool mm_transports_handle_peer_failure_by_default = false;

}  // namespace ucp_cpp::detail::ucx_compat
