/**
 * @file context.hpp
 * @brief ucp_cpp::context: RAII owner of a ucp_context_h, and context_params.
 *
 * Lifetime: always held by std::shared_ptr (context::create()); every worker and memory handle
 * keeps its context alive, so the context is cleaned up (ucp_cleanup) only after the last of
 * them is gone, whatever order the application drops its references in.
 * Threading: a context is immutable after creation; all members are safe from any thread.
 *
 * Layer: above error.hpp and detail/; below everything that needs a context.
 */
#pragma once

#include <ucp_cpp/detail/globals.hpp>
#include <ucp_cpp/detail/ucx_compat.hpp>
#include <ucp_cpp/error.hpp>

#include <ucp/api/ucp.h>

#include <cstdint>
#include <cstdio>
#include <cstdlib>
#include <cstring>
#include <map>
#include <memory>
#include <string>
#include <utility>

namespace ucp_cpp {

/**
 * @brief What the application asks of UCP when it creates a context.
 *
 * Only requested features get transports selected.  A plain value: copy and change freely.
 */
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
    /// Listeners of this context bind with SO_REUSEADDR (UCX_CM_REUSEADDR=y), so a server
    /// restarted right after a run can listen on its fixed port again although connections of
    /// the earlier run still wait in TIME_WAIT (without it ucp_listener_create fails with
    /// "Device is busy" for about a minute).  Two listeners on one port are still refused.  Left
    /// alone where the environment (UCX_CM_REUSEADDR, UCX_TCP_CM_REUSEADDR,
    /// UCX_RDMA_CM_REUSEADDR) or config sets it.
    bool reuse_listener_address = true;
};

/**
 * @brief A UCP application context (ucp_init): the features, the configuration and the
 *        transports every worker and memory registration of it shares.
 *
 * Non-copyable, non-movable: created by create() and shared by std::shared_ptr.  Workers and
 * memory handles hold a reference, so ucp_cleanup() runs only after the last of them is gone.
 * Threading: immutable after creation; every member may be called from any thread.
 */
class context {
    struct private_tag {};

public:
    /**
     * @brief Creates a context (ucp_config_read, ucp_config_modify per override, ucp_init).
     * @param params features, UCX configuration overrides, hints.
     * @return the context, shared.
     * @throws ucx_error if an override names an unknown variable or a bad value (the message
     *         names it), or ucp_init fails.
     */
    static std::shared_ptr<context> create(const context_params &params = {})
    {
        return std::make_shared<context>(private_tag{}, params);
    }

    /**
     * @brief Use create(); public only so that std::make_shared can call it (private_tag keeps
     *        every other caller out).
     * @param params as for create().
     */
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
        const char *reuse_setting = reuse_address_setting(params);
        if (reuse_setting == nullptr && params.reuse_listener_address) {
            // Applied by UCX to its connection managers (tcp sockcm, rdmacm); a UCX without the
            // variable keeps its default.
            reuses_listener_address_ = ucp_config_modify(config, "CM_REUSEADDR", "y") == UCS_OK;
        } else if (reuse_setting != nullptr) {
            const std::string value  = reuse_setting;
            reuses_listener_address_ = value == "y" || value == "yes" || value == "1" ||
                                       value == "on";
        }
        const std::string printed      = printed_config(config);
        const std::string proto_enable = printed_value(printed, "PROTO_ENABLE");
        legacy_protocols_ = proto_enable.empty() ? detail::ucx_compat::legacy_protocols_by_default()
                                                 : (proto_enable == "n" || proto_enable == "no" ||
                                                    proto_enable == "0" || proto_enable == "off");
        tls_              = printed_value(printed, "TLS");
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

    /// @brief ucp_cleanup().  Runs when the last worker, memory handle and user reference is gone.
    ~context()
    {
        ucp_cleanup(handle_);
        --detail::live_contexts();
    }

    /**
     * @brief The UCP handle, for UCP calls the wrapper does not cover.
     * @return the ucp_context_h; valid while this object lives.
     */
    ucp_context_h handle() const noexcept { return handle_; }

    /**
     * @brief The features the context was created with.
     * @return the UCP_FEATURE_* bits of context_params::features.
     */
    uint64_t features() const noexcept { return features_; }

    /**
     * @brief Whether the context was created with all of some features.
     * @param wanted UCP_FEATURE_* bits.
     * @return true if every bit of @p wanted was requested at creation.
     */
    bool has_features(uint64_t wanted) const noexcept { return (features_ & wanted) == wanted; }

    /**
     * @brief The memory types the loaded transports can access (ucp_context_query).
     * @return a bit set of UCS_MEMORY_TYPE_* values, as UCS_BIT(type).
     * @throws ucx_error if UCP cannot be queried.
     */
    uint64_t memory_types() const
    {
        ucp_context_attr_t attr{};
        attr.field_mask = UCP_ATTR_FIELD_MEMORY_TYPES;
        check_status(ucp_context_query(handle_, &attr), "ucp_context_query");
        return attr.memory_types;
    }

    /**
     * @brief Whether buffers of one memory type can be passed to this context's operations.
     * @param type e.g. UCS_MEMORY_TYPE_CUDA.
     * @return true if memory_types() contains @p type.
     * @throws ucx_error if UCP cannot be queried.
     */
    bool supports_memory_type(ucs_memory_type_t type) const
    {
        return (memory_types() & UCS_BIT(type)) != 0;
    }

    /**
     * @brief Whether UCP runs its legacy protocols (UCX_PROTO_ENABLE=n).
     *
     * They are the default of older releases (detail::ucx_compat::legacy_protocols_by_default()).
     * Where their RMA path moves data with the CPU (memcpy;
     * detail::ucx_compat::legacy_rma_copies_with_cpu()), an RMA operation on a CUDA buffer
     * segfaults inside UCP (seen with cuda_copy/cuda_ipc on an H200), so endpoint::put/get
     * refuse CUDA buffers then.  Tagged, stream and AM transfers of CUDA memory are fine with
     * either.
     * @return the effective UCX_PROTO_ENABLE (environment and overrides) was "n".
     */
    bool legacy_protocols() const noexcept { return legacy_protocols_; }

    /**
     * @brief The transports the context was allowed: the effective UCX_TLS (environment and
     *        context_params::config).
     * @return UCX_TLS as UCX reads it, e.g. "all", "tcp,self" or "^ib"; empty if it cannot be
     *         read.
     */
    const std::string &tls() const noexcept { return tls_; }

    /**
     * @brief Whether UCX_TLS lets UCX use a transport: listed (also as "name:aux"), "all", or
     *        not excluded by a "^..." list.  Aliases other than "all" (sm, shm, ib, ...) do not
     *        count.
     * @param transport a transport name, e.g. "tcp".
     * @return true if the effective UCX_TLS allows @p transport (also when it cannot be read).
     */
    bool tls_includes(const std::string &transport) const
    {
        if (tls_.empty()) {
            return true;
        }
        const bool excluding = tls_[0] == '^';
        bool listed          = false;
        size_t begin         = excluding ? 1 : 0;
        while (begin <= tls_.size()) {
            size_t end = tls_.find(',', begin);
            if (end == std::string::npos) {
                end = tls_.size();
            }
            std::string entry = tls_.substr(begin, end - begin);
            entry             = entry.substr(0, entry.find(':'));
            listed            = listed || entry == transport || entry == "all";
            begin             = end + 1;
        }
        return excluding ? !listed : listed;
    }

    /**
     * @brief Checks that the context has the features an operation needs, so that a missing
     *        feature is a clear error here instead of a less helpful one from UCP later.
     * @param wanted    UCP_FEATURE_* bits the operation needs.
     * @param operation the operation, for the message (e.g. "endpoint::stream_send").
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) naming @p operation and the missing features
     *         (e.g. "UCP_FEATURE_STREAM").
     */
    void require_features(uint64_t wanted, const char *operation) const
    {
        if (!has_features(wanted)) {
            throw ucx_error(UCS_ERR_INVALID_PARAM,
                            std::string(operation) + " needs a context created with " +
                                feature_names(wanted & ~features_) + " (context_params::features)");
        }
    }

    /**
     * @brief Whether listeners of this context bind with SO_REUSEADDR
     *        (context_params::reuse_listener_address, or UCX_*CM_REUSEADDR set by the
     *        application).
     * @return true if a restarted server can listen on its port again right away.
     */
    bool reuses_listener_address() const noexcept { return reuses_listener_address_; }

    /**
     * @brief Names UCP_FEATURE_* bits.
     * @param features UCP_FEATURE_* bits.
     * @return e.g. "UCP_FEATURE_TAG | UCP_FEATURE_RMA"; a bit without a name as "0x..."; "none"
     *         for 0.
     */
    static std::string feature_names(uint64_t features)
    {
        static const std::pair<uint64_t, const char *> names[] = {
            {UCP_FEATURE_TAG, "UCP_FEATURE_TAG"},       {UCP_FEATURE_RMA, "UCP_FEATURE_RMA"},
            {UCP_FEATURE_AMO32, "UCP_FEATURE_AMO32"},   {UCP_FEATURE_AMO64, "UCP_FEATURE_AMO64"},
            {UCP_FEATURE_WAKEUP, "UCP_FEATURE_WAKEUP"}, {UCP_FEATURE_STREAM, "UCP_FEATURE_STREAM"},
            {UCP_FEATURE_AM, "UCP_FEATURE_AM"},
        };
        std::string text;
        for (const auto &[bit, name] : names) {
            if ((features & bit) != 0) {
                text += (text.empty() ? "" : " | ") + std::string(name);
                features &= ~bit;
            }
        }
        if (features != 0) {
            text += (text.empty() ? "0x" : " | 0x") + to_hex(features);
        }
        return text.empty() ? "none" : text;
    }

private:
    /// The value of UCX_*CM_REUSEADDR if the application set it (config first, then the
    /// environment), or nullptr.
    static const char *reuse_address_setting(const context_params &params)
    {
        for (const auto &entry : params.config) {
            if (entry.first.find("CM_REUSEADDR") != std::string::npos) {
                return entry.second.c_str();
            }
        }
        for (const char *name :
             {"UCX_CM_REUSEADDR", "UCX_TCP_CM_REUSEADDR", "UCX_RDMA_CM_REUSEADDR"}) {
            if (const char *value = std::getenv(name)) {
                return value;
            }
        }
        return nullptr;
    }

    /// @p config (environment + overrides) as ucp_config_print shows it, one "UCX_NAME=value"
    /// a line, after a newline; empty if there is no memory for the printout.
    static std::string printed_config(const ucp_config_t *config)
    {
        char *text  = nullptr;
        size_t size = 0;
        FILE *out   = open_memstream(&text, &size);
        if (out == nullptr) {
            return {};
        }
        ucp_config_print(config, out, nullptr, UCS_CONFIG_PRINT_CONFIG);
        std::fclose(out);
        std::string printed = text != nullptr ? std::string("\n") + std::string(text, size)
                                              : std::string();
        std::free(text);
        return printed;
    }

    /// The value of UCX_<name> in printed_config()'s text; empty where it is not there (no
    /// printout, a release without the variable).
    static std::string printed_value(const std::string &printed, const std::string &name)
    {
        const std::string key = "\nUCX_" + name + "=";
        const size_t at       = printed.find(key);
        if (at == std::string::npos) {
            return {};
        }
        const size_t begin = at + key.size();
        return printed.substr(begin, printed.find('\n', begin) - begin);
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
    std::string tls_;
    bool reuses_listener_address_ = false;
};

}  // namespace ucp_cpp
