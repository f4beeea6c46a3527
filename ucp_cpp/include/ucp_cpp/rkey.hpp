/**
 * @file rkey.hpp
 * @brief ucp_cpp::remote_key: a peer's remote key, unpacked on one endpoint.  The RMA and atomic
 *        operations that use it are endpoint's (endpoint::put, get, atomic_post, atomic_fetch,
 *        compare_swap).
 *
 * Lifetime: move-only; keeps its endpoint (and so the worker) alive, because UCP rkeys are
 * per-endpoint and must be destroyed before the endpoint.  Valid while the peer keeps the
 * registration (its memory_handle) alive.
 * Threading: as for the endpoint.
 *
 * Layer: above endpoint.hpp and memory.hpp.
 */
#pragma once

#include <ucp_cpp/endpoint.hpp>
#include <ucp_cpp/error.hpp>
#include <ucp_cpp/memory.hpp>

#include <ucp/api/ucp.h>

#include <memory>
#include <utility>

namespace ucp_cpp {

/**
 * @brief A peer's remote key unpacked on one endpoint (ucp_rkey_h): what RMA and atomics on
 *        that endpoint need.  Usually made by endpoint::unpack_rkey().
 */
class remote_key {
public:
    /**
     * @brief Unpacks @p packed on @p ep (ucp_ep_rkey_unpack).
     * @param ep     the endpoint to the peer that packed the key; kept alive by the key.
     * @param packed the peer's memory_handle::pack_rkey().
     * @throws ucx_error(UCS_ERR_INVALID_PARAM) for an empty key; ucx_error if UCP cannot
     *         unpack it.
     */
    remote_key(std::shared_ptr<endpoint> ep, const packed_rkey &packed) : endpoint_(std::move(ep))
    {
        if (packed.bytes.empty()) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "remote_key: empty packed key");
        }
        check_status(ucp_ep_rkey_unpack(endpoint_->handle(), packed.bytes.data(), &handle_),
                     "ucp_ep_rkey_unpack");
    }

    /**
     * @brief Takes the key over; @p other is left empty.
     * @param other the key to take.
     */
    remote_key(remote_key &&other) noexcept
        : endpoint_(std::move(other.endpoint_)), handle_(std::exchange(other.handle_, nullptr))
    {}

    /**
     * @brief Destroys this key, then takes @p other's.
     * @param other the key to take.
     * @return *this.
     */
    remote_key &operator=(remote_key &&other) noexcept
    {
        if (this != &other) {
            reset();
            endpoint_ = std::move(other.endpoint_);
            handle_   = std::exchange(other.handle_, nullptr);
        }
        return *this;
    }
    remote_key(const remote_key &)            = delete;
    remote_key &operator=(const remote_key &) = delete;

    /// @brief ucp_rkey_destroy(), before the endpoint reference goes.
    ~remote_key() { reset(); }

    /**
     * @brief The UCP handle, for UCP calls the wrapper does not cover.
     * @return the ucp_rkey_h, or nullptr if moved from.
     */
    ucp_rkey_h handle() const noexcept { return handle_; }

    /**
     * @brief The endpoint the key was unpacked on (the only one it may be used with).
     * @return that endpoint, or an empty pointer if moved from.
     */
    const std::shared_ptr<endpoint> &owner() const noexcept { return endpoint_; }

private:
    void reset() noexcept
    {
        if (handle_ != nullptr) {
            ucp_rkey_destroy(std::exchange(handle_, nullptr));
        }
        endpoint_.reset();
    }

    std::shared_ptr<endpoint> endpoint_;
    ucp_rkey_h handle_ = nullptr;
};

}  // namespace ucp_cpp
