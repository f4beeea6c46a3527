/**
 * @file context.hpp
 * @brief ucp_cpp::context: RAII owner of a ucp_context_h.
 *
 * Lifetime: always held by std::shared_ptr (context::create()); every worker and memory handle
 * keeps its context alive, so the context is cleaned up (ucp_cleanup) only after the last of
 * them is gone, whatever order the application drops its references in.
 * Threading: a context is immutable after creation; all members are safe from any thread.
 */
#pragma once

#include <ucp_cpp/detail/globals.hpp>
#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/error.hpp>

#include <ucp/api/ucp.h>

#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>

namespace ucp_cpp {

/// What the application asks of UCP.  Only requested features get transports selected.
struct context_params {
    /// UCP_FEATURE_* bits, e.g. UCP_FEATURE_TAG | UCP_FEATURE_RMA | UCP_FEATURE_WAKEUP.
    uint64_t features = UCP_FEATURE_TAG;
    /// UCX configuration overrides without the UCX_ prefix, e.g. {"TLS", "tcp,self"};
    /// applied on top of the environment (ucp_config_read + ucp_config_modify).
    std::map<std::string, std::string> config;
    /// Set when several workers of this context are used by different threads.
    bool mt_workers_shared = false;
    /// Hint for UCP's resource sizing (0: leave UCP's default).
    size_t estimated_num_eps = 0;
    /// Name shown in UCX logs.
    std::string name = "ucp_cpp";
};

/// A UCP application context (ucp_init).  Non-copyable, non-movable: share it by shared_ptr.
class context {
    struct private_tag {};

public:
    /// Creates the context; throws ucx_error on a bad configuration or UCP failure.
    static std::shared_ptr<context> create(const context_params &params = {})
    {
        return std::make_shared<context>(private_tag{}, params);
    }

    context(private_tag, const context_params &params) : features_(params.features)
    {
        ucp_config_t *config = nullptr;
        check_status(ucp_config_read(nullptr, nullptr, &config), "ucp_config_read");
        for (const auto &[key, value] : params.config) {
            ucs_status_t status = ucp_config_modify(config, key.c_str(), value.c_str());
            if (status != UCS_OK) {
                ucp_config_release(config);
                throw ucx_error(status, "ucp_config_modify(" + key + "=" + value + ")");
            }
        }
        legacy_protocols_ = reads_legacy_protocols(config);
        ucp_params_t ucp_params{};
        ucp_params.field_mask = UCP_PARAM_FIELD_FEATURES | UCP_PARAM_FIELD_MT_WORKERS_SHARED |
                                UCP_PARAM_FIELD_NAME;
        ucp_params.features          = params.features;
        ucp_params.mt_workers_shared = params.mt_workers_shared ? 1 : 0;
        ucp_params.name              = params.name.c_str();
        if (params.estimated_num_eps != 0) {
            ucp_params.field_mask |= UCP_PARAM_FIELD_ESTIMATED_NUM_EPS;
            ucp_params.estimated_num_eps = params.estimated_num_eps;
        }
        ucs_status_t status = ucp_init(&ucp_params, config, &handle_);
        ucp_config_release(config);
        check_status(status, "ucp_init");
        ++detail::live_contexts();
    }

    context(const context &)            = delete;
    context &operator=(const context &) = delete;

    ~context()
    {
        ucp_cleanup(handle_);
        --detail::live_contexts();
    }

    ucp_context_h handle() const noexcept { return handle_; }
    uint64_t features() const noexcept { return features_; }
    bool has_features(uint64_t wanted) const noexcept { return (features_ & wanted) == wanted; }

    /// Bit set of UCS_MEMORY_TYPE_* (as UCS_BIT(type)) that the loaded transports can access.
    uint64_t memory_types() const
    {
        ucp_context_attr_t attr{};
        attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
        check_status(ucp_context_query(handle_, &attr), "ucp_context_query");
        return attr.memory_types;
    }

    bool supports_memory_type(ucs_memory_type_t type) const
    {
        return (memory_types() & UCS_BIT(type)) != 0;
    }

    /**
     * True when UCP runs its legacy protocols (UCX_PROTO_ENABLE=n; the default of older
     * releases: detail::ucx_compat::legacy_protocols_by_default()).  Where their RMA path moves
     * data with the CPU (memcpy; detail::ucx_compat::legacy_rma_copies_with_cpu()), an RMA
     * operation on a CUDA buffer segfaults inside UCP (seen with cuda_copy/cuda_ipc on an H200),
     * so endpoint::put/get refuse CUDA buffers then.  Tagged, stream and AM transfers of CUDA
     * memory are fine with either.
     */
    bool legacy_protocols() const noexcept { return legacy_protocols_; }

    /// Throws ucx_error(UCS_ERR_INVALID_PARAM) naming the operation if a feature is missing,
    /// instead of letting UCP fail later with a less helpful message.
    void require_features(uint64_t wanted, const char *operation) const
    {
        if (!has_features(wanted)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string(operation) + " needs a context created with feature bits 0x" +
                                to_hex(wanted & ~features_));
        }
    }

private:
    /// The effective UCX_PROTO_ENABLE of @p config (environment + overrides).  Where it cannot
    /// be read (no memory for the printout, a release without the variable), the release's
    /// default.
    static bool reads_legacy_protocols(const ucp_config_t *config)
    {
        char *text  = nullptr;
        size_t size = 0;
        FILE *out   = open_memstream(&text, &size);
        if (out == nullptr) {
            return detail::ucx_compat::legacy_protocols_by_default();
        }
        ucp_config_print(config, out, nullptr, UCS_CONFIG_PRINT_CONFIG);
        std::fclose(out);
        std::string printed = text != nullptr ? std::string("\n") + std::string(text, size) : std::string();
        std::free(text);
        static const std::string key = "\nUCX_PROTO_ENABLE=";
        const size_t at = printed.find(key);
        if (at == std::string::npos) {
            return detail::ucx_compat::legacy_protocols_by_default();
        }
        const size_t begin = at + key.size();
        const std::string value = printed.substr(begin, printed.find('\n', begin) - begin);
        return value == "n" || value == "no" || value == "0" || value == "off";
    }

    static std::string to_hex(uint64_t value)
    {
        static const char digits[] = "0123456789abcdef";
        std::string text;
        do {
            text.insert(text.begin(), digits[value & 0xf]);
            value >>= 4;
        } while (value != 0);
        return text;
    }

    ucp_context_h handle_ = nullptr;
    uint64_t features_;
    bool legacy_protocols_ = false;
};

}  // namespace ucp_cpp
