/**
 * @file coll/launch/kvs.hpp
 * @brief The key-value store a process manager gives a job's processes (PMIx, PMI2), as one
 *        interface the bootstrap exchanges worker addresses through.
 *
 * srun and mpirun already run a wire-up service for every job: each process puts its
 * addresses, a fence makes every put visible everywhere, each process gets what it needs.
 * Using it means no rendezvous address (MASTER_ADDR) and no extra port.  The libraries are
 * loaded with dlopen the first time they are needed, so an application built with ucp_cpp
 * links neither and runs where neither is installed.
 *
 * Threading: a kvs is used by one thread at a time; fence() is collective over the job.
 * Lifetime: the store stays initialized while the object lives (PMIx_Finalize/PMI2_Finalize
 * in the destructor).
 */
#pragma once

#include <ucp_cpp/error.hpp>

#include <dlfcn.h>

#include <cstdint>
#include <string>
#include <utility>
#include <vector>

namespace ucp_cpp::coll::launch {

/// A process manager's key-value store, seen from one process of the job.
class kvs {
public:
    virtual ~kvs() = default;
    /// @brief This process's rank in the job (0-based).
    /// @return the rank the process manager gave this process.
    [[nodiscard]] virtual int rank() const = 0;
    /// @brief The number of processes in the job.
    /// @return the job's size, as the process manager says.
    [[nodiscard]] virtual int size() const = 0;
    /// @brief The interface's name for messages: "pmix" or "pmi2".
    /// @return a static string.
    [[nodiscard]] virtual const char *name() const = 0;
    /// @brief Publishes @p value under @p key for every process of the job (after fence()).
    /// @param key   the name other processes get() it by (with this process's rank).
    /// @param value the bytes (a worker address); stores that hold text get it encoded.
    /// @throws ucx_error when the process manager refuses it.
    virtual void put(const std::string &key, const std::vector<uint8_t> &value) = 0;
    /// @brief Collective: returns when every process has called it; all puts made before it
    ///        are then visible to get().
    /// @throws ucx_error when the fence fails (a process died, the manager went away).
    virtual void fence() = 0;
    /// @brief The value process @p rank put under @p key.
    /// @param rank the process that put it.
    /// @param key  the name it was put under.
    /// @return the bytes put.
    /// @throws ucx_error when it has none or the manager fails.
    [[nodiscard]] virtual std::vector<uint8_t> get(int rank, const std::string &key) = 0;

    /// @brief A key no earlier call on this store returned: every process of the job makes the
    ///        same calls in the same order, so the n-th exchange uses the same key everywhere,
    ///        and a second bootstrap through the store never reads the first one's values.
    /// @param prefix what the key starts with.
    /// @return prefix + "." + the number of earlier calls.
    [[nodiscard]] std::string next_key(const std::string &prefix)
    {
        return prefix + "." + std::to_string(keys_used_++);
    }

private:
    unsigned keys_used_ = 0;
};

namespace detail {

/// A dlopen()ed library and typed lookups of its symbols; closes it on destruction.
class shared_library {
public:
    shared_library() = default;
    /// @brief Opens the first of @p names that loads; returns false and says why otherwise.
    bool open(std::initializer_list<const char *> names, std::string *why)
    {
        for (const char *name : names) {
            handle_ = dlopen(name, RTLD_NOW | RTLD_GLOBAL);
            if (handle_ != nullptr) {
                return true;
            }
            if (why != nullptr) {
                *why += (why->empty() ? "" : "; ") + std::string(dlerror());
            }
        }
        return false;
    }
    /// @brief Looks up @p name as a function of type @p Fn.
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) naming the library's missing symbol.
    template <typename Fn> Fn symbol(const char *name) const
    {
        void *address = dlsym(handle_, name);
        if (address == nullptr) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, std::string("launcher library lacks ") + name);
        }
        return reinterpret_cast<Fn>(address);
    }
    ~shared_library()
    {
        if (handle_ != nullptr) {
            dlclose(handle_);
        }
    }
    shared_library(const shared_library &)            = delete;
    shared_library &operator=(const shared_library &) = delete;

private:
    void *handle_ = nullptr;
};

}  // namespace detail
}  // namespace ucp_cpp::coll::launch
