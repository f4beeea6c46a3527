/**
 * @file coll/launch/pmix.hpp
 * @brief launch::pmix: the job's PMIx store (srun --mpi=pmix, Open MPI's mpirun/prterun).
 *
 * Only the six calls the bootstrap needs, through a declaration of their ABI made here: an
 * application needs no pmix.h to build, and libpmix.so.2 is loaded at run time.  The layouts
 * below are the PMIx Standard's (v3 and v4 agree); tests/ucp_cpp/pmix_abi_check.cpp compiles
 * them against pmix.h where libpmix-dev is installed.  The fence collects the data (every
 * process gets the whole table from its local server, one collective, no per-peer requests).
 */
#pragma once

#include <ucp_cpp/coll/launch/kvs.hpp>

#include <cstdint>
#include <cstdlib>
#include <cstring>
#include <memory>
#include <string>
#include <vector>

namespace ucp_cpp::coll::launch {

namespace pmix_abi {

constexpr int success               = 0;  // PMIX_SUCCESS
constexpr uint16_t type_bool        = 1;  // PMIX_BOOL
constexpr uint16_t type_uint32      = 14;  // PMIX_UINT32
constexpr uint16_t type_byte_object = 27;  // PMIX_BYTE_OBJECT
constexpr uint8_t scope_global      = 3;  // PMIX_GLOBAL
constexpr uint32_t rank_wildcard    = UINT32_MAX - 1;  // PMIX_RANK_WILDCARD
constexpr size_t max_nslen          = 255;  // PMIX_MAX_NSLEN
constexpr size_t max_keylen         = 511;  // PMIX_MAX_KEYLEN

struct proc {  // pmix_proc_t
    char nspace[max_nslen + 1];
    uint32_t rank;
};
struct byte_object {  // pmix_byte_object_t
    char *bytes;
    size_t size;
};
struct value {  // pmix_value_t
    uint16_t type;
    union {
        bool flag;
        uint32_t uint32;
        byte_object bo;
        unsigned char size_of_the_union[24];
    } data;
};
struct info {  // pmix_info_t
    char key[max_keylen + 1];
    uint32_t flags;
    struct value value;
};

using init_fn     = int (*)(proc *, info *, size_t);
using finalize_fn = int (*)(const info *, size_t);
using put_fn      = int (*)(uint8_t scope, const char *key, value *);
using commit_fn   = int (*)();
using fence_fn    = int (*)(const proc *, size_t, const info *, size_t);
using get_fn      = int (*)(const proc *, const char *key, const info *, size_t, value **);
using destruct_fn = void (*)(value *);
using error_fn    = const char *(*)(int);

}  // namespace pmix_abi

/// The job's PMIx store.  Construct it only where a PMIx server runs (PMIX_RANK is set).
class pmix final : public kvs {
public:
    /// @brief Loads libpmix and initializes this process as a PMIx client.
    /// @throws ucx_error(UCS_ERR_UNSUPPORTED) when libpmix cannot be loaded or PMIx_Init fails
    ///         (the message says which and why).
    pmix()
    {
        std::string why;
        if (!lib_.open({"libpmix.so.2", "libpmix.so"}, &why)) {
            throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::launch::pmix: cannot load libpmix (" + why +
                                                     "; Debian: apt-get install libpmix2)");
        }
        init_     = lib_.symbol<pmix_abi::init_fn>("PMIx_Init");
        finalize_ = lib_.symbol<pmix_abi::finalize_fn>("PMIx_Finalize");
        put_      = lib_.symbol<pmix_abi::put_fn>("PMIx_Put");
        commit_   = lib_.symbol<pmix_abi::commit_fn>("PMIx_Commit");
        fence_    = lib_.symbol<pmix_abi::fence_fn>("PMIx_Fence");
        get_      = lib_.symbol<pmix_abi::get_fn>("PMIx_Get");
        destruct_ = lib_.symbol<pmix_abi::destruct_fn>("PMIx_Value_destruct");
        error_    = lib_.symbol<pmix_abi::error_fn>("PMIx_Error_string");
        check(init_(&self_, nullptr, 0), "PMIx_Init");

        pmix_abi::proc job    = self_;
        job.rank              = pmix_abi::rank_wildcard;
        pmix_abi::value *size = nullptr;
        check(get_(&job, "pmix.job.size", nullptr, 0, &size), "PMIx_Get(pmix.job.size)");
        const bool is_uint32 = size->type == pmix_abi::type_uint32;
        size_                = is_uint32 ? int(size->data.uint32) : -1;
        release(size);
        if (!is_uint32) {
            finalize_(nullptr, 0);
            throw ucx_error(UCS_ERR_UNSUPPORTED, "coll::launch::pmix: pmix.job.size is no uint32");
        }
    }
    ~pmix() override { finalize_(nullptr, 0); }
    pmix(const pmix &)            = delete;
    pmix &operator=(const pmix &) = delete;

    [[nodiscard]] int rank() const override { return int(self_.rank); }
    [[nodiscard]] int size() const override { return size_; }
    [[nodiscard]] const char *name() const override { return "pmix"; }

    void put(const std::string &key, const std::vector<uint8_t> &bytes) override
    {
        pmix_abi::value v{};
        v.type          = pmix_abi::type_byte_object;
        v.data.bo.bytes = reinterpret_cast<char *>(const_cast<uint8_t *>(bytes.data()));
        v.data.bo.size  = bytes.size();
        check(put_(pmix_abi::scope_global, key.c_str(), &v), "PMIx_Put(" + key + ")");
    }

    void fence() override
    {
        check(commit_(), "PMIx_Commit");
        pmix_abi::info collect{};
        std::strncpy(collect.key, "pmix.collect", sizeof(collect.key) - 1);
        collect.value.type      = pmix_abi::type_bool;
        collect.value.data.flag = true;
        check(fence_(nullptr, 0, &collect, 1), "PMIx_Fence");
    }

    [[nodiscard]] std::vector<uint8_t> get(int rank, const std::string &key) override
    {
        pmix_abi::proc peer = self_;
        peer.rank           = uint32_t(rank);
        pmix_abi::value *v  = nullptr;
        check(get_(&peer, key.c_str(), nullptr, 0, &v),
              "PMIx_Get(rank " + std::to_string(rank) + ", " + key + ")");
        std::vector<uint8_t> bytes;
        const bool is_bytes = v->type == pmix_abi::type_byte_object;
        if (is_bytes) {
            const auto *data = reinterpret_cast<const uint8_t *>(v->data.bo.bytes);
            bytes.assign(data, data + v->data.bo.size);
        }
        release(v);
        if (!is_bytes) {
            throw ucx_error(UCS_ERR_INVALID_PARAM, "coll::launch::pmix: rank " +
                                                       std::to_string(rank) + " put " + key +
                                                       " with another type");
        }
        return bytes;
    }

private:
    void check(int rc, const std::string &what) const
    {
        if (rc != pmix_abi::success) {
            throw ucx_error(UCS_ERR_IO_ERROR,
                            "coll::launch::pmix: " + what + " failed: " + error_(rc));
        }
    }
    void release(pmix_abi::value *v) const
    {
        destruct_(v);  // PMIX_VALUE_RELEASE: the contents, then the value PMIx allocated
        std::free(v);
    }

    detail::shared_library lib_;
    pmix_abi::init_fn init_         = nullptr;
    pmix_abi::finalize_fn finalize_ = nullptr;
    pmix_abi::put_fn put_           = nullptr;
    pmix_abi::commit_fn commit_     = nullptr;
    pmix_abi::fence_fn fence_       = nullptr;
    pmix_abi::get_fn get_           = nullptr;
    pmix_abi::destruct_fn destruct_ = nullptr;
    pmix_abi::error_fn error_       = nullptr;
    pmix_abi::proc self_{};
    int size_ = 0;
};

}  // namespace ucp_cpp::coll::launch
